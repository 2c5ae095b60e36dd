//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/polyccm/polyccm/core/planning"
	"github.com/polyccm/polyccm/drivers/hetzner"
	fakehz "github.com/polyccm/polyccm/test/fakecloud/hetzner"
	"github.com/polyccm/polyccm/test/harness"
)

// The Hetzner Cloud migration test: the fake project holds what
// hetznercloud/hcloud-cloud-controller-manager (hcloud CCM) leaves for
// four Services and three Nodes, then polyccm plans the switch and takes
// over. It must create no load balancer, change no address, delete
// nothing, carry Node churn to every load balancer, and leave no load
// balancer once the Services are deleted.
//
// Everything below is written from upstream's code, never polyccm's, at
// commit 6485324f (after v1.35.0) unless a version is named:
// internal/hcops/load_balancer.go (Create, ReconcileHCLB,
// ReconcileHCLBServices, ReconcileHCLBTargets, hclbServiceOptsBuilder),
// hcloud/load_balancers.go (EnsureLoadBalancer, GetLoadBalancerName,
// buildLoadBalancerStatusIngress), hcloud/instances.go (hcloudServer
// Metadata, hcloudNodeAddresses), internal/legacydatacenter and
// internal/config (the defaults of the HCLOUD_* variables).
//
// hcloud CCM ran with HCLOUD_NETWORK=k8s, HCLOUD_LOAD_BALANCERS_LOCATION=
// fsn1 and HCLOUD_LOAD_BALANCERS_USE_PRIVATE_IP=true, everything else
// unset; polyccm's config carries exactly those over.

const (
	upHZLabelServiceUID = "hcloud-ccm/service-uid" // hcops.LabelServiceUID
	upHZAnn             = "load-balancer.hetzner.cloud/"
	upHZProvidedBy      = "instance.hetzner.cloud/provided-by" // hcloud.ProvidedBy
)

// upstreamHZNode is a Node as hcloud CCM's cloud-node controller leaves
// it for a Cloud server: Metadata's providerID "hcloud://<id>", the
// server type, region the location, zone its legacy datacenter (the zone
// label is on by default), provided-by=cloud; hcloudNodeAddresses with
// the ipv4 address family: Hostname, ExternalIP, the InternalIP in
// HCLOUD_NETWORK. (The upstream cloud-node controller writes the stable
// and beta labels.) The kubelet reports it Ready.
func upstreamHZNode(sv fakehz.CloudServer, network int64) (*v1.Node, []v1.NodeAddress) {
	zone := map[string]string{"fsn1": "fsn1-dc14", "nbg1": "nbg1-dc3", "hel1": "hel1-dc2"}[sv.Location]
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: sv.Name, Labels: map[string]string{
			v1.LabelHostname:           sv.Name,
			v1.LabelInstanceTypeStable: sv.Type, v1.LabelInstanceType: sv.Type,
			v1.LabelTopologyRegion: sv.Location, v1.LabelFailureDomainBetaRegion: sv.Location,
			v1.LabelTopologyZone: zone, v1.LabelFailureDomainBetaZone: zone,
			upHZProvidedBy: "cloud",
		}},
		Spec: v1.NodeSpec{ProviderID: hzProviderID(sv.ID)},
	}
	addrs := []v1.NodeAddress{{Type: v1.NodeHostName, Address: sv.Name}, {Type: v1.NodeExternalIP, Address: sv.PublicIPv4}}
	for _, pn := range sv.PrivateNets {
		if pn.Network == network {
			addrs = append(addrs, v1.NodeAddress{Type: v1.NodeInternalIP, Address: pn.IP})
		}
	}
	return n, addrs
}

// upHZBuild is one load balancer as hcloud CCM made it for a Service.
type upHZBuild struct {
	svc *v1.Service
	// name is GetLoadBalancerName: the name annotation, else
	// cloudprovider.DefaultLoadBalancerName.
	name string
	// labelled: Create labels it hcloud-ccm/service-uid=<UID> since
	// v1.9.0 (commit 430d0cfd); v1.8.1 and older made it without.
	labelled bool
	// typ and algorithm: the type and algorithm-type annotations, else
	// lb11 and the API's round_robin (the variables are unset).
	typ, algorithm string
	// privateTargets: ReconcileHCLBTargets adds every server with
	// use_private_ip from getPrivateIPEnabled (the annotation, else
	// HCLOUD_LOAD_BALANCERS_USE_PRIVATE_IP).
	privateTargets bool
	// hc is the health check of a port: hclbServiceOptsBuilder's, nil
	// for the default (tcp on the node port, with the API's 15s, 10s, 3).
	hc func(p v1.ServicePort) fakehz.HealthCheck
	// certs make every port an https service with these certificates:
	// hclbServiceOptsBuilder resolves http-certificates to IDs
	// (resolveCertsByNameOrID) and sends them alone, so the other http
	// settings are the API's (cookie HCLBSTICKY for 300 s, idle timeout
	// 60 s, no redirect, no sticky sessions).
	certs []int64
}

// upstreamHZLB is what Create and the Reconcile* calls of one
// EnsureLoadBalancer leave: the load balancer in fsn1 (the annotation or
// HCLOUD_LOAD_BALANCERS_LOCATION), public interface on (neither
// disable-public-network nor its variable set), attached to HCLOUD_NETWORK
// at the next free address (no private-ipv4, no subnet), one tcp service
// per TCP port listening on the port and forwarding to the node port
// (proxyprotocol not sent: the API's false), and the servers as targets.
func upstreamHZLB(b upHZBuild, network int64, servers []fakehz.CloudServer) fakehz.LoadBalancer {
	lb := fakehz.LoadBalancer{
		Name: b.name, Type: b.typ, Location: "fsn1", Algorithm: b.algorithm,
		Labels:          map[string]string{},
		PublicInterface: true,
		Network:         network,
		Created:         time.Now().Add(-30 * 24 * time.Hour),
	}
	if b.labelled {
		lb.Labels[upHZLabelServiceUID] = string(b.svc.UID)
	}
	for _, p := range b.svc.Spec.Ports {
		s := tcpService(p)
		if b.hc != nil {
			s.HealthCheck = b.hc(p)
		}
		if b.certs != nil {
			s.Protocol = fakehz.ProtocolHTTPS
			s.HTTP = &fakehz.ServiceHTTP{CookieName: "HCLBSTICKY", CookieLifetime: 300, Certificates: slices.Clone(b.certs), TimeoutIdle: 60}
		}
		lb.Services = append(lb.Services, s)
	}
	for _, sv := range servers {
		lb.Targets = append(lb.Targets, fakehz.Target{Type: fakehz.TargetServer, ServerID: sv.ID, UsePrivateIP: b.privateTargets})
	}
	return lb
}

// upstreamHZStatus is buildLoadBalancerStatusIngress: the public IPv4,
// the IPv6 (IPv6Enabled: HCLOUD_LOAD_BALANCERS_DISABLE_IPV6 unset), the
// private IP unless disable-private-ingress, each with ipMode VIP (no
// PROXY protocol). v1.8.1 published IPv4 and the private IP only, with
// no ipMode (its IPv6 line is commented out).
func upstreamHZStatus(lb fakehz.LoadBalancer, privateIngress, v181 bool) []v1.LoadBalancerIngress {
	vip := v1.LoadBalancerIPModeVIP
	var out []v1.LoadBalancerIngress
	add := func(ip string) {
		in := v1.LoadBalancerIngress{IP: ip}
		if !v181 {
			in.IPMode = &vip
		}
		out = append(out, in)
	}
	add(lb.IPv4)
	if !v181 {
		add(lb.IPv6)
	}
	if privateIngress {
		add(lb.PrivateIP)
	}
	return out
}

// hzLBState is everything about a load balancer a switch must keep.
func hzLBState(lb fakehz.LoadBalancer) string {
	return fmt.Sprintf("%s (%d) %s %s %s labels %v public %v %s/%s ptr %s/%s network %d at %s protected %v services %q targets %v",
		lb.Name, lb.ID, lb.Type, lb.Location, lb.Algorithm, lb.Labels, lb.PublicInterface, lb.IPv4, lb.IPv6,
		lb.IPv4DNSPtr, lb.IPv6DNSPtr, lb.Network, lb.PrivateIP, lb.DeleteProtection, lbServices(lb), serverTargets(lb))
}

func TestHetznerMigrationFromHcloudCCM(t *testing.T) {
	ctx := context.Background()
	e, _ := newHZEnv(t, hzOptions{hold: true, tweak: func(s *harness.Settings) {
		// HCLOUD_NETWORK is in the block already (network: k8s).
		if !strings.Contains(s.DriverBlock, "\nloadBalancer:\n  location: fsn1") {
			hzLBSetting(s, "location: fsn1")
		}
		hzLBSetting(s, "usePrivateIP: true")
		s.Controllers = "nodes: true\nnodeLifecycle: true\nservices: true"
	}})

	// The cluster as hcloud CCM leaves it: three initialized Nodes.
	var servers []fakehz.CloudServer
	var nodeNames []string
	for i := range 3 {
		sv := e.addServer(fakehz.ServerSpec{Name: e.nodeName(i), Type: "cx22", Location: "fsn1"})
		n, addrs := upstreamHZNode(sv, e.network)
		got, err := cp.Admin.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		now := metav1.Now()
		got.Status.Addresses = addrs
		got.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady",
			LastHeartbeatTime: now, LastTransitionTime: now}}
		if _, err := cp.Admin.CoreV1().Nodes().UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		servers = append(servers, sv)
		nodeNames = append(nodeNames, sv.Name)
	}

	// The Services, with the finalizer upstream's service controller puts
	// on them, and the annotations their users set.
	withFinalizer := func(s *v1.Service) { s.Finalizers = []string{lbFinalizer} }
	// web: a recent hcloud CCM's, found by its label, with a type, an
	// algorithm and a customized health check.
	web := nsService(t, "default", "hzmig-web", map[string]string{
		upHZAnn + "type":                   "lb21",
		upHZAnn + "algorithm-type":         "least_connections",
		upHZAnn + "health-check-protocol":  "http",
		upHZAnn + "health-check-interval":  "5s",
		upHZAnn + "health-check-http-path": "/healthz",
	}, withFinalizer, tcp(80), tcp(443))
	// legacy: made by hcloud CCM v1.8.1, the last without the label, in
	// which location and private targets were per-Service annotations; it
	// is found by its name only.
	legacy := nsService(t, "default", "hzmig-legacy", map[string]string{
		upHZAnn + "location":       "fsn1",
		upHZAnn + "use-private-ip": "true",
	}, withFinalizer, tcp(5432))
	// named: its load balancer is named by the name annotation; public
	// targets and no private IP in the status.
	named := nsService(t, "default", "hzmig-named", map[string]string{
		upHZAnn + "name":                    "shop-lb",
		upHZAnn + "use-private-ip":          "false",
		upHZAnn + "disable-private-ingress": "true",
	}, withFinalizer, tcp(8080))
	// tls: https with a certificate its user uploaded, named in
	// http-certificates; hcloud CCM checks no label on it, and neither
	// does polyccm by default (certificateNamespaceLabel empty).
	tlsCert := e.fake.AddUploadedCertificate("shop-tls", "shop.example.com")
	tls := nsService(t, "default", "hzmig-tls", map[string]string{
		upHZAnn + "protocol":          "https",
		upHZAnn + "http-certificates": "shop-tls",
	}, withFinalizer, tcp(443))
	svcs := []*v1.Service{web, legacy, named, tls}
	t.Cleanup(func() {
		for _, s := range svcs {
			_, err := cp.Admin.CoreV1().Services(s.Namespace).Patch(context.Background(), s.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Logf("removing the finalizer of %s: %v", s.Name, err)
			}
		}
	})
	// The health check hclbServiceOptsBuilder sends for web's annotations
	// (addHealthCheck): http on the node port every 5 s, with the path;
	// timeout, retries and the other http fields are not sent, so the
	// API's defaults (10 s, 3, status codes 2?? and 3??) stand.
	webHC := func(p v1.ServicePort) fakehz.HealthCheck {
		return fakehz.HealthCheck{Protocol: fakehz.ProtocolHTTP, Port: int(p.NodePort), Interval: 5, Timeout: 10, Retries: 3,
			HTTP: &fakehz.HealthCheckHTTP{Path: "/healthz", StatusCodes: []string{"2??", "3??"}}}
	}
	builds := []upHZBuild{
		{svc: web, name: cloudprovider.DefaultLoadBalancerName(web), labelled: true, typ: "lb21", algorithm: fakehz.AlgorithmLeastConnections, privateTargets: true, hc: webHC},
		{svc: legacy, name: cloudprovider.DefaultLoadBalancerName(legacy), labelled: false, typ: "lb11", algorithm: fakehz.AlgorithmRoundRobin, privateTargets: true},
		{svc: named, name: "shop-lb", labelled: true, typ: "lb11", algorithm: fakehz.AlgorithmRoundRobin, privateTargets: false},
		{svc: tls, name: cloudprovider.DefaultLoadBalancerName(tls), labelled: true, typ: "lb11", algorithm: fakehz.AlgorithmRoundRobin, privateTargets: true, certs: []int64{tlsCert}},
	}
	lbIDs := map[string]int64{}
	statusBefore := map[string][]v1.LoadBalancerIngress{}
	for _, b := range builds {
		id, err := e.fake.CreateLoadBalancerDirect(upstreamHZLB(b, e.network, servers))
		if err != nil {
			t.Fatalf("hcloud CCM's load balancer for %s: %v", b.svc.Name, err)
		}
		lb, _ := e.fake.LoadBalancer(id)
		lbIDs[b.svc.Name] = id
		cur := nsSvc(t, b.svc.Namespace, b.svc.Name)
		cur.Status.LoadBalancer.Ingress = upstreamHZStatus(lb, b.svc != named, b.svc == legacy)
		if _, err := cp.Admin.CoreV1().Services(cur.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		statusBefore[b.svc.Name] = cur.Status.LoadBalancer.Ingress
	}
	lbState := func() map[string]string {
		out := map[string]string{}
		for name, id := range lbIDs {
			lb, ok := e.fake.LoadBalancer(id)
			if !ok {
				out[name] = "gone"
				continue
			}
			out[name] = hzLBState(lb)
		}
		return out
	}
	stateBefore := lbState()
	for k, v := range stateBefore {
		t.Logf("hcloud CCM's load balancer for %s: %s", k, v)
	}
	nodeVersions := func() map[string]string {
		out := map[string]string{}
		for _, n := range nodeNames {
			if node, err := e.node(n); err == nil {
				out[n] = node.ResourceVersion
			}
		}
		return out
	}
	nodesBefore := nodeVersions()

	// polyccm plan first: web's and named's load balancers are adopted as
	// they are; legacy's would get the label, which upstream puts on any
	// load balancer it finds by name (changeHCLBInfo, since v1.9.0). The
	// plan writes to neither the cloud nor the cluster.
	s := e.settings
	s.Kubeconfig = cp.PolyccmKubeconfig
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	s.Port = port
	planState, planCalls := clusterState(t), e.fake.Faults().Calls()
	r := e.plan(t, "plan", s.Config())
	checkPlanReadOnly(t, planState, planCalls, e.fake.Faults().Calls(), func(ep string) bool { return !strings.HasPrefix(ep, "GET ") })
	checkAdopted(t, r, []*v1.Service{web, named, tls})
	legacyName := cloudprovider.DefaultLoadBalancerName(legacy)
	if i := slices.IndexFunc(r.report.Services, func(p planning.ServicePlan) bool { return p.Service == "default/hzmig-legacy" }); i < 0 {
		t.Errorf("the plan says nothing of default/hzmig-legacy: %+v", r.report.Services)
	} else {
		p := r.report.Services[i]
		want := []planning.PlanChange{{Action: "update", Kind: "load balancer", Name: legacyName,
			Fields: []planning.PlanField{{Name: "labels." + upHZLabelServiceUID, From: "none", To: string(legacy.UID)}}}}
		if p.Action != planning.Update || fmt.Sprint(p.Changes) != fmt.Sprint(want) {
			t.Errorf("the plan for %s: %s %+v (%s), want update %+v: the label, as upstream puts it", p.Service, p.Action, p.Changes, p.Message, want)
		}
		for _, ev := range p.Events {
			if ev.Type == v1.EventTypeWarning {
				t.Errorf("the plan for %s: a Warning %s: %s", p.Service, ev.Reason, ev.Message)
			}
		}
		t.Logf("the plan for %s: %s %+v, addresses %v, Kubernetes writes %q", p.Service, p.Action, p.Changes, p.Addresses, p.Writes)
	}
	if len(r.report.Services) != len(svcs) {
		t.Errorf("the plan has %d Services, want %d: %+v", len(r.report.Services), len(svcs), r.report.Services)
	}

	// The switch: hcloud CCM is gone, polyccm starts.
	callsBefore := e.fake.Faults().Calls()
	e.run(e.settings, nil)
	for _, s := range svcs {
		waitEnsured(t, s.Namespace, s.Name, 0, 2*time.Minute)
	}
	// The status the service controller writes after the sync.
	wantStatus := map[string][]string{
		web.Name:    ingressOf(&v1.Service{Status: v1.ServiceStatus{LoadBalancer: v1.LoadBalancerStatus{Ingress: statusBefore[web.Name]}}}),
		named.Name:  ingressOf(&v1.Service{Status: v1.ServiceStatus{LoadBalancer: v1.LoadBalancerStatus{Ingress: statusBefore[named.Name]}}}),
		tls.Name:    ingressOf(&v1.Service{Status: v1.ServiceStatus{LoadBalancer: v1.LoadBalancerStatus{Ingress: statusBefore[tls.Name]}}}),
		legacy.Name: nil,
	}
	legacyLB, _ := e.fake.LoadBalancer(lbIDs[legacy.Name])
	// legacy's status gains the IPv6 address and ipMode VIP, which v1.8.1
	// left out: upstream too publishes them on its first sync since v1.9.0
	// (IPv6, commit 1aea7dda; on unless HCLOUD_LOAD_BALANCERS_DISABLE_IPV6)
	// and v1.21.0 (ipMode, commit c9cfdafa). Its IPv4 and private IP stay.
	wantStatus[legacy.Name] = []string{legacyLB.IPv4, legacyLB.IPv6, legacyLB.PrivateIP}
	eventually(t, 30*time.Second, "every Service publishes what upstream would", func() (bool, string) {
		var bad []string
		for _, s := range svcs {
			now := nsSvc(t, s.Namespace, s.Name)
			if got := ingressOf(now); !slices.Equal(got, wantStatus[s.Name]) {
				bad = append(bad, fmt.Sprintf("%s publishes %v, want %v", s.Name, got, wantStatus[s.Name]))
			}
			for _, in := range now.Status.LoadBalancer.Ingress {
				if in.IPMode == nil || *in.IPMode != v1.LoadBalancerIPModeVIP {
					bad = append(bad, fmt.Sprintf("%s: %s has ipMode %v, want VIP", s.Name, in.IP, in.IPMode))
				}
			}
		}
		return len(bad) == 0, strings.Join(bad, "; ")
	})

	check := func(when string, wantTargetsOf func(b upHZBuild) []string) {
		t.Helper()
		if n := e.fake.Faults().CallCount("POST /v1/load_balancers") - callsBefore["POST /v1/load_balancers"]; n != 0 {
			t.Errorf("%s: %d load balancers created", when, n)
		}
		if n := len(e.fake.LoadBalancers()); n != len(builds) {
			t.Errorf("%s: %d load balancers, want upstream's %d", when, n, len(builds))
		}
		got := lbState()
		for _, b := range builds {
			lb, ok := e.fake.LoadBalancer(lbIDs[b.svc.Name])
			if !ok {
				t.Errorf("%s: %s's load balancer is gone", when, b.svc.Name)
				continue
			}
			// Targets are checked on their own: they follow the Nodes.
			want := upstreamHZLB(b, e.network, nil)
			want.ID, want.IPv4, want.IPv6, want.IPv4DNSPtr, want.IPv6DNSPtr, want.PrivateIP = lb.ID, lb.IPv4, lb.IPv6, lb.IPv4DNSPtr, lb.IPv6DNSPtr, lb.PrivateIP
			// Upstream labels the load balancer it found by name
			// (changeHCLBInfo); so does polyccm.
			want.Labels[upHZLabelServiceUID] = string(b.svc.UID)
			lb.Targets, want.Targets = nil, nil
			if hzLBState(lb) != hzLBState(want) {
				t.Errorf("%s: %s's load balancer is\n %s\nwant\n %s", when, b.svc.Name, hzLBState(lb), hzLBState(want))
			}
			full, _ := e.fake.LoadBalancer(lbIDs[b.svc.Name])
			if got, want := serverTargets(full), wantTargetsOf(b); !slices.Equal(got, want) {
				t.Errorf("%s: %s's load balancer targets %v, want %v", when, b.svc.Name, got, want)
			}
			if b.svc != legacy && got[b.svc.Name] != stateBefore[b.svc.Name] && when == "after polyccm's first sync" {
				t.Errorf("%s: %s's load balancer changed:\n %s\nwas\n %s", when, b.svc.Name, got[b.svc.Name], stateBefore[b.svc.Name])
			}
			for _, ev := range serviceEvents(t, b.svc.Namespace, b.svc.Name) {
				if strings.HasPrefix(ev, "Warning") {
					t.Errorf("%s: %s: %s", when, b.svc.Name, ev)
				}
			}
		}
	}
	check("after polyccm's first sync", func(b upHZBuild) []string { return wantTargets(b.privateTargets, servers...) })
	// The one write: legacy's label. Nothing created, deleted or changed
	// besides, and the Nodes as they were.
	writes := hzWrites(e.fake.Faults().Calls())
	for ep, n := range hzWrites(callsBefore) {
		writes[ep] -= n
	}
	maps.DeleteFunc(writes, func(_ string, n int) bool { return n == 0 })
	if want := map[string]int{"PUT /v1/load_balancers/{id}": 1}; !maps.Equal(writes, want) {
		t.Errorf("polyccm's writes on taking over: %v, want only %v (legacy's label)", writes, want)
	}
	if got := nodeVersions(); !maps.Equal(got, nodesBefore) {
		t.Errorf("polyccm changed the Nodes hcloud CCM initialized: resourceVersions %v, were %v", got, nodesBefore)
	}
	for _, s := range []*v1.Service{web, named, tls} {
		if now := nsSvc(t, s.Namespace, s.Name); !reflect.DeepEqual(now.Status.LoadBalancer.Ingress, statusBefore[s.Name]) {
			t.Errorf("%s's status changed: %+v, was %+v", s.Name, now.Status.LoadBalancer.Ingress, statusBefore[s.Name])
		}
	}
	// Taken over, the certificate in use is named once, as polyccm names
	// every one it serves (hcloud CCM says nothing of them).
	tlsLB, _ := e.fake.LoadBalancer(lbIDs[tls.Name])
	waitEvent(t, tls.Namespace, tls.Name, v1.EventTypeNormal, hetzner.ReasonCertificatesInUse,
		fmt.Sprintf("load balancer %s (%d) serves certificate shop-tls (%d) on port 443", tlsLB.Name, tlsLB.ID, tlsCert))

	// Node churn reaches every load balancer: one joins (kubelet
	// registers it; polyccm initializes it), one is deleted.
	joined := e.joinNode(3, "fsn1")
	e.waitInitialized([]string{joined.Name}, 30*time.Second)
	if err := cp.Admin.CoreV1().Nodes().Delete(ctx, servers[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	now := []fakehz.CloudServer{servers[1], servers[2], joined}
	eventually(t, 90*time.Second, "every load balancer follows the Nodes", func() (bool, string) {
		for _, b := range builds {
			lb, _ := e.fake.LoadBalancer(lbIDs[b.svc.Name])
			if got, want := serverTargets(lb), wantTargets(b.privateTargets, now...); !slices.Equal(got, want) {
				return false, fmt.Sprintf("%s targets %v, want %v", b.svc.Name, got, want)
			}
		}
		return true, ""
	})
	check("after Node churn", func(b upHZBuild) []string { return wantTargets(b.privateTargets, now...) })
	if n := e.fake.Faults().CallCount("DELETE /v1/load_balancers/{id}"); n != 0 {
		t.Errorf("%d load balancer deletions before any Service was deleted", n)
	}

	// Deleting the Services deletes their load balancers, legacy's too
	// (found by the label it now has, as upstream's
	// EnsureLoadBalancerDeleted finds it).
	for _, s := range svcs {
		if err := cp.Admin.CoreV1().Services(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range svcs {
		deleteNSServiceAndWait(t, s.Namespace, s.Name, 2*time.Minute)
	}
	if left := e.fake.LoadBalancers(); len(left) != 0 {
		t.Errorf("load balancers left: %+v", left)
	}
}
