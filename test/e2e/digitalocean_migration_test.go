//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/digitalocean/godo"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	cloudprovider "k8s.io/cloud-provider"

	fakedo "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
	"github.com/polyccm/polyccm/test/harness"
)

// The DigitalOcean migration test (issue 17): the fake account holds what
// digitalocean-cloud-controller-manager v0.1.68 (cloud-controller-manager/
// do/, at commit 70d527e3) builds for four Services, made through the API
// calls it makes, then polyccm takes over. It must create no load
// balancer, change no address, freeze no Service, carry node churn to
// every load balancer, follow a Let's Encrypt renewal, and leave nothing
// of its own once the Services are deleted.
//
// Everything below is written from upstream's code, never polyccm's: each
// value names the upstream function it comes from.

const (
	upDOClusterID   = "5d9f1c2e-0b8a-4a62-9f5e-3c1d2b7e8a40" // DO_CLUSTER_ID
	upDOFirewall    = "k8s-public-access-e2e"                // PUBLIC_ACCESS_FIREWALL_NAME
	upDOWorkerTag   = "k8s:" + upDOClusterID + ":worker"     // PUBLIC_ACCESS_FIREWALL_TAGS
	upDOAnnPrefix   = "service.beta.kubernetes.io/do-loadbalancer-"
	upDOAnnID       = "kubernetes.digitalocean.com/load-balancer-id" // lb_annotations.go annDOLoadBalancerID
	upDOAnnType     = upDOAnnPrefix + "type"                         // annDOType
	upDOKubeProxyHC = 10256                                          // loadbalancers.go kubeProxyHealthPort
)

// upstreamDORequest is loadbalancers.go buildLoadBalancerRequest for a
// Service on nodes with IPv4 only: the rules, kube-proxy's health check,
// no sticky sessions, round robin, an empty LB firewall, the cluster tag.
func upstreamDORequest(svc *v1.Service, typ, stack string, droplets []int, certID string) *godo.LoadBalancerRequest {
	no := false
	req := &godo.LoadBalancerRequest{
		Name:   cloudprovider.DefaultLoadBalancerName(svc), // getLoadBalancerLegacyName
		Region: "fra1",
		HealthCheck: &godo.HealthCheck{ // buildHealthCheck, no override
			Protocol: "http", Port: upDOKubeProxyHC, Path: "/healthz",
			CheckIntervalSeconds: 3, ResponseTimeoutSeconds: 5, UnhealthyThreshold: 3, HealthyThreshold: 5,
			ProxyProtocol: &no,
		},
		StickySessions:               &godo.StickySessions{Type: "none"},
		Algorithm:                    "round_robin",
		DisableLetsEncryptDNSRecords: &no,
		Firewall:                     &godo.LBFirewall{},
		Type:                         typ,
		Network:                      "EXTERNAL",
		NetworkStack:                 stack,
		DropletIDs:                   droplets,
		Tags:                         []string{"k8s:" + upDOClusterID}, // buildK8sTag
	}
	for _, p := range svc.Spec.Ports {
		proto := strings.ToLower(string(p.Protocol))
		r := godo.ForwardingRule{EntryProtocol: proto, EntryPort: int(p.Port), TargetProtocol: proto, TargetPort: int(p.NodePort)}
		switch {
		case typ == "REGIONAL_NETWORK": // buildRegionalNetworkForwardingRule
			r.TargetPort = int(p.Port)
		case p.Port == 443 && certID != "": // buildTLSForwardingRule
			r.EntryProtocol, r.TargetProtocol, r.CertificateID = "https", "http", certID
		}
		req.ForwardingRules = append(req.ForwardingRules, r)
	}
	return req
}

// upstreamDOFirewall is firewall_controller.go createReconciledFirewallRequest:
// NodePort Services' node ports, and for REGIONAL_NETWORK EXTERNAL load
// balancers the kube-proxy health check port from the load balancer and
// each Service port from anywhere; allow-all outbound.
func upstreamDOFirewall(nodePorts []int32, lbID string, lbPorts []v1.ServicePort) *godo.FirewallRequest {
	world := &godo.Sources{Addresses: []string{"0.0.0.0/0", "::/0"}}
	var in []godo.InboundRule
	for _, np := range nodePorts {
		in = append(in, godo.InboundRule{Protocol: "tcp", PortRange: strconv.Itoa(int(np)), Sources: world})
	}
	in = append(in, godo.InboundRule{Protocol: "tcp", PortRange: strconv.Itoa(upDOKubeProxyHC), Sources: &godo.Sources{LoadBalancerUIDs: []string{lbID}}})
	for _, p := range lbPorts {
		in = append(in, godo.InboundRule{Protocol: strings.ToLower(string(p.Protocol)), PortRange: strconv.Itoa(int(p.Port)), Sources: world})
	}
	slices.SortStableFunc(in, func(a, b godo.InboundRule) int {
		if a.Protocol != b.Protocol {
			return strings.Compare(a.Protocol, b.Protocol)
		}
		return strings.Compare(a.PortRange, b.PortRange)
	})
	all := &godo.Destinations{Addresses: []string{"0.0.0.0/0", "::/0"}}
	return &godo.FirewallRequest{
		Name:         upDOFirewall,
		InboundRules: in,
		OutboundRules: []godo.OutboundRule{
			{Protocol: "tcp", PortRange: "all", Destinations: all},
			{Protocol: "udp", PortRange: "all", Destinations: all},
			{Protocol: "icmp", Destinations: all},
		},
		Tags: []string{upDOWorkerTag},
	}
}

func TestDigitalOceanMigrationFromTheDigitalOceanCCM(t *testing.T) {
	// polyccm first runs the nodes' controllers only: the DigitalOcean
	// CCM still serves the Services. Its config carries the CCM's
	// settings over, and the product's default type.
	e := newDOEnv(t, nil, func(s *harness.Settings) {
		s.DriverBlock = strings.Replace(s.DriverBlock, "\nloadBalancer:\n  defaultType: REGIONAL", "", 1)
		s.DriverBlock += "\nclusterID: " + upDOClusterID + "\nfirewall:\n  name: " + upDOFirewall + "\n  tags: [\"" + upDOWorkerTag + "\"]"
		s.Controllers = "nodes: true\nnodeLifecycle: true\nservices: false"
	})
	e.fake.SetLoadBalancerActivationDelay(300 * time.Millisecond)
	ctx := context.Background()
	do := godo.NewFromToken(e.token)
	do.BaseURL, _ = url.Parse(e.fake.URL() + "/")

	var droplets []int
	addNode := func(i int) {
		t.Helper()
		d := e.fake.AddDroplet(fakedo.Droplet{Name: e.nodeName(i), Status: fakedo.StatusActive, SizeSlug: "s-2vcpu-4gb", Region: "fra1", Tags: []string{upDOWorkerTag}})
		droplets = append(droplets, d.ID)
		e.register(d.Name, "")
		e.waitInitialized([]string{d.Name}, 30*time.Second)
	}
	addNode(0)
	addNode(1)

	withFinalizer := func(s *v1.Service) { s.Finalizers = []string{lbFinalizer} }
	le := e.fake.AddLetsEncryptCertificate("shop-le", "shop.example.com")
	web := nsService(t, "default", "mig-web", map[string]string{
		upDOAnnType: "REGIONAL",
		// Without override-health-check upstream ignores it.
		upDOAnnPrefix + "healthcheck-path": "/ready",
	}, withFinalizer, tcp(80))
	dns := nsService(t, "default", "mig-dns", nil, withFinalizer, udp(53), tcp(5432))
	shop := nsService(t, "default", "mig-shop", map[string]string{
		upDOAnnType: "REGIONAL", upDOAnnPrefix + "certificate-id": le.ID, upDOAnnPrefix + "tls-ports": "443",
	}, withFinalizer, tcp(443))
	np := nsService(t, "default", "mig-nodeport", nil, func(s *v1.Service) { s.Spec.Type = v1.ServiceTypeNodePort },
		v1.ServicePort{Name: "http", Protocol: v1.ProtocolTCP, Port: 8080, TargetPort: intstr.FromInt32(8080)})
	svcs := []*v1.Service{web, dns, shop}
	t.Cleanup(func() {
		for _, s := range svcs {
			_, err := cp.Admin.CoreV1().Services(s.Namespace).Patch(context.Background(), s.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Logf("removing the finalizer of %s: %v", s.Name, err)
			}
		}
	})

	// What upstream built: EnsureLoadBalancer's create, then the ID and
	// type annotations (updateServiceAnnotation) and the status (IP, and
	// IPv6 when there is one).
	type built struct {
		svc      *v1.Service
		id       string
		ip, ipv6 string
	}
	var lbs []built
	for _, c := range []struct {
		svc         *v1.Service
		typ, stack  string
		certificate string
	}{
		{web, "REGIONAL", "DUALSTACK", ""},     // getNetworkStack: REGIONAL defaults to DUALSTACK
		{dns, "REGIONAL_NETWORK", "IPV4", ""},  // the default type; IPv4-only nodes
		{shop, "REGIONAL", "DUALSTACK", le.ID}, // an HTTPS rule with a Let's Encrypt certificate
	} {
		lb, _, err := do.LoadBalancers.Create(ctx, upstreamDORequest(c.svc, c.typ, c.stack, droplets, c.certificate))
		if err != nil {
			t.Fatalf("upstream's create for %s: %v", c.svc.Name, err)
		}
		eventually(t, 30*time.Second, "load balancer "+lb.ID+" active", func() (bool, string) {
			lb, _, err = do.LoadBalancers.Get(ctx, lb.ID)
			return err == nil && lb.Status == "active", fmt.Sprintf("status %s, err %v", lb.Status, err)
		})
		cur := nsSvc(t, c.svc.Namespace, c.svc.Name)
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations[upDOAnnID], cur.Annotations[upDOAnnType] = lb.ID, lb.Type
		cur, err = cp.Admin.CoreV1().Services(cur.Namespace).Update(ctx, cur, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: lb.IP}}
		if lb.IPv6 != "" {
			cur.Status.LoadBalancer.Ingress = append(cur.Status.LoadBalancer.Ingress, v1.LoadBalancerIngress{IP: lb.IPv6})
		}
		if _, err := cp.Admin.CoreV1().Services(cur.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		lbs = append(lbs, built{svc: c.svc, id: lb.ID, ip: lb.IP, ipv6: lb.IPv6})
	}
	fwReq := upstreamDOFirewall([]int32{nsSvc(t, np.Namespace, np.Name).Spec.Ports[0].NodePort}, lbs[1].id, dns.Spec.Ports)
	fw, _, err := do.Firewalls.Create(ctx, fwReq)
	if err != nil {
		t.Fatalf("upstream's firewall: %v", err)
	}
	fwRules := func() []string {
		got, ok := e.fake.Firewall(fw.ID)
		if !ok {
			return []string{"the firewall is gone"}
		}
		var out []string
		for _, r := range got.InboundRules {
			out = append(out, fmt.Sprintf("in %s %s %v %v", r.Protocol, r.Ports, r.Targets.Addresses, r.Targets.LoadBalancerUIDs))
		}
		for _, r := range got.OutboundRules {
			out = append(out, fmt.Sprintf("out %s %s %v", r.Protocol, r.Ports, r.Targets.Addresses))
		}
		slices.Sort(out)
		return out
	}
	rulesBefore := fwRules()
	lbState := func() map[string]string {
		out := map[string]string{}
		for _, b := range lbs {
			lb, _ := e.fake.LoadBalancer(b.id)
			hc := *lb.HealthCheck
			pp := "unset"
			if hc.ProxyProtocol != nil {
				pp = strconv.FormatBool(*hc.ProxyProtocol)
			}
			hc.ProxyProtocol = nil
			out[b.svc.Name] = fmt.Sprintf("%s %s %s %s/%s rules %+v health %+v proxy protocol %s", lb.Name, lb.Type, lb.NetworkStack, lb.IP, lb.IPv6, lb.ForwardingRules, hc, pp)
		}
		return out
	}
	stateBefore := lbState()
	statsBefore := e.fake.LoadBalancerStats()
	t.Logf("upstream's state: %d load balancers, firewall %s with %q", len(e.fake.LoadBalancers()), fw.ID, rulesBefore)

	// The switch.
	if _, err := e.ccm.Stop(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	_ = cp.Admin.CoordinationV1().Leases("kube-system").Delete(ctx, "cloud-controller-manager", metav1.DeleteOptions{})
	e.opts.Config = strings.Replace(e.opts.Config, "\n  services: false\n", "\n  services: true\n", 1)
	if !strings.Contains(e.opts.Config, "\n  services: true\n") {
		t.Fatalf("could not turn the service controller on in:\n%s", e.opts.Config)
	}
	// polyccm plan first (issue 20): upstream's load balancers are adopted
	// as they are, and the plan writes to neither the cloud nor the
	// cluster.
	planState, planCalls := clusterState(t), e.fake.Faults().Calls()
	pr := e.plan(t, "plan", e.opts.Config)
	checkAdopted(t, pr, svcs)
	// The public-access firewall is upstream's as it is (issue 33).
	checkFirewallUnchanged(t, pr)
	checkPlanReadOnly(t, planState, planCalls, e.fake.Faults().Calls(), func(ep string) bool { return !strings.HasPrefix(ep, "GET ") })

	callsBefore := e.fake.Faults().Calls()
	e.restart()
	for _, s := range svcs {
		waitEnsured(t, s.Namespace, s.Name, 0, 2*time.Minute)
	}

	check := func(when string, wantDroplets []int) {
		t.Helper()
		if n := e.fake.LoadBalancerStats().Created - statsBefore.Created; n != 0 {
			t.Errorf("%s: %d load balancers created", when, n)
		}
		for _, b := range lbs {
			now := nsSvc(t, b.svc.Namespace, b.svc.Name)
			want := []string{b.ip}
			if b.ipv6 != "" {
				want = append(want, b.ipv6)
			}
			var got []string
			for _, ing := range now.Status.LoadBalancer.Ingress {
				got = append(got, ing.IP)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s: %s publishes %+v, want upstream's %+v", when, b.svc.Name, got, want)
			}
			for _, ev := range serviceEvents(t, b.svc.Namespace, b.svc.Name) {
				if strings.HasPrefix(ev, "Warning") {
					t.Errorf("%s: %s: %s", when, b.svc.Name, ev)
				}
			}
			lb, _ := e.fake.LoadBalancer(b.id)
			if got := slices.Sorted(slices.Values(lb.DropletIDs)); !slices.Equal(got, wantDroplets) {
				t.Errorf("%s: %s's load balancer sends to %v, want %v", when, b.svc.Name, got, wantDroplets)
			}
		}
		if got := lbState(); fmt.Sprint(got) != fmt.Sprint(stateBefore) {
			for k, v := range got {
				if stateBefore[k] != v {
					t.Errorf("%s: %s's load balancer is now\n %s\nwas upstream's\n %s", when, k, v, stateBefore[k])
				}
			}
		}
		if got := fwRules(); !slices.Equal(got, rulesBefore) {
			t.Errorf("%s: the firewall has\n %q\nwant upstream's\n %q", when, got, rulesBefore)
		}
	}
	check("after polyccm's first sync", slices.Sorted(slices.Values(droplets)))
	// Nothing to change: no write reached the cloud. (The cluster tag is
	// put on the recorded load balancers at start, as upstream's tag
	// syncer does: the API does not say which tags a load balancer has.)
	for ep, n := range e.fake.Faults().Calls() {
		if !strings.HasPrefix(ep, "GET ") && !strings.Contains(ep, "/v2/tags") && n != callsBefore[ep] {
			t.Errorf("polyccm called %s %d times on taking over, want 0", ep, n-callsBefore[ep])
		}
	}
	if got := nsSvc(t, "default", "mig-dns").Annotations[upDOAnnType]; got != "REGIONAL_NETWORK" {
		t.Errorf("mig-dns's type annotation is %q", got)
	}
	if evs := serviceEvents(t, "default", "mig-web"); !slices.ContainsFunc(evs, func(s string) bool {
		return strings.HasPrefix(s, "Normal LoadBalancerAnnotationNotApplied") && strings.Contains(s, "healthcheck-path")
	}) {
		t.Errorf("no Normal event says healthcheck-path is not applied: %q", evs)
	}

	// Node churn reaches every load balancer.
	addNode(2)
	eventually(t, 90*time.Second, "every load balancer takes in the new droplet", func() (bool, string) {
		for _, b := range lbs {
			lb, _ := e.fake.LoadBalancer(b.id)
			if !slices.Contains(lb.DropletIDs, droplets[2]) {
				return false, fmt.Sprintf("%s sends to %v", b.svc.Name, lb.DropletIDs)
			}
		}
		return true, ""
	})

	// A Let's Encrypt renewal: DigitalOcean moves the load balancer to the
	// new certificate; polyccm follows and records it on the Service.
	renewed, ok := e.fake.RenewLetsEncryptCertificate(le.ID)
	if !ok {
		t.Fatal("renewing the certificate in the fake failed")
	}
	bump := nsSvc(t, "default", "mig-shop")
	bump.Annotations["example.com/touched"] = "yes" // a sync, as any edit of the Service brings
	if _, err := cp.Admin.CoreV1().Services("default").Update(ctx, bump, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the renewed certificate recorded on the Service", func() (bool, string) {
		got := nsSvc(t, "default", "mig-shop").Annotations[upDOAnnPrefix+"certificate-id"]
		return got == renewed.ID, fmt.Sprintf("certificate-id %s, want %s", got, renewed.ID)
	})
	if lb, _ := e.fake.LoadBalancer(lbs[2].id); lb.ForwardingRules[0].CertificateID != renewed.ID {
		t.Errorf("the load balancer uses %s, want the renewed %s", lb.ForwardingRules[0].CertificateID, renewed.ID)
	}
	stateBefore = lbState()
	check("after node churn and renewal", slices.Sorted(slices.Values(droplets)))

	// Deleting the Services leaves no load balancer and none of the
	// firewall rules that were theirs; the firewall keeps its outbound
	// rules (it is the config's, never deleted).
	for _, s := range append(svcs, np) {
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
	eventually(t, 60*time.Second, "the firewall keeps no inbound rule of the deleted Services", func() (bool, string) {
		got, ok := e.fake.Firewall(fw.ID)
		return ok && len(got.InboundRules) == 0, fmt.Sprintf("firewall %v: %q", ok, fwRules())
	})
}
