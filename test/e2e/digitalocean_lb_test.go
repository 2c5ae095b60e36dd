//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/polyccm/polyccm/drivers/digitalocean"
	fakedo "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
	"github.com/polyccm/polyccm/test/harness"
)

const lbFinalizer = "service.kubernetes.io/load-balancer-cleanup"

// withServices turns the service controller on for a test's polyccm.
func withServices(s *harness.Settings) {
	s.Controllers = "nodes: true\nnodeLifecycle: true\nservices: true"
}

// lbNodes starts polyccm with services on and n initialized nodes.
func lbNodes(t *testing.T, n int, tweak func(*harness.Settings)) (*doEnv, []fakedo.Droplet) {
	t.Helper()
	e := newDOEnv(t, nil, func(s *harness.Settings) {
		withServices(s)
		if tweak != nil {
			tweak(s)
		}
	})
	e.fake.SetLoadBalancerActivationDelay(500 * time.Millisecond)
	var ds []fakedo.Droplet
	var names []string
	for i := range n {
		d := e.fake.AddDroplet(fakedo.Droplet{Name: e.nodeName(i), Status: fakedo.StatusActive, SizeSlug: "s-2vcpu-4gb", Region: "fra1"})
		ds = append(ds, d)
		names = append(names, d.Name)
		e.register(d.Name, "")
	}
	e.waitInitialized(names, 30*time.Second)
	return e, ds
}

func tcp(port int32) v1.ServicePort {
	return v1.ServicePort{Name: "tcp-" + strconv.Itoa(int(port)), Protocol: v1.ProtocolTCP, Port: port, TargetPort: intstr.FromInt32(8080)}
}

func udp(port int32) v1.ServicePort {
	return v1.ServicePort{Name: "udp-" + strconv.Itoa(int(port)), Protocol: v1.ProtocolUDP, Port: port, TargetPort: intstr.FromInt32(5353)}
}

func getSvc(t *testing.T, name string) *v1.Service {
	t.Helper()
	svc, err := cp.Admin.CoreV1().Services("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func patchSvc(t *testing.T, name string, patch any) {
	t.Helper()
	b, _ := json.Marshal(patch)
	if _, err := cp.Admin.CoreV1().Services("default").Patch(context.Background(), name, types.MergePatchType, b, metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching Service %s: %v", name, err)
	}
}

// waitIngress waits until the Service publishes its LB's address.
func (e *doEnv) waitIngress(name string, timeout time.Duration) (*v1.Service, fakedo.LoadBalancer) {
	e.t.Helper()
	var svc *v1.Service
	var lb fakedo.LoadBalancer
	eventually(e.t, timeout, "Service "+name+" ingress", func() (bool, string) {
		svc = getSvc(e.t, name)
		id := svc.Annotations[digitalocean.AnnLoadBalancerID]
		if id == "" {
			return false, "no load-balancer-id annotation yet"
		}
		var ok bool
		if lb, ok = e.fake.LoadBalancer(id); !ok {
			return false, "annotated LB " + id + " does not exist"
		}
		ing := svc.Status.LoadBalancer.Ingress
		return len(ing) > 0 && ing[0].IP == lb.IP && lb.IP != "", fmt.Sprintf("ingress %v, LB %s status %s ip %q", ing, id, lb.Status, lb.IP)
	})
	return svc, lb
}

func (e *doEnv) lbOf(name string) fakedo.LoadBalancer {
	e.t.Helper()
	id := getSvc(e.t, name).Annotations[digitalocean.AnnLoadBalancerID]
	lb, ok := e.fake.LoadBalancer(id)
	if !ok {
		e.t.Fatalf("Service %s's load balancer %q does not exist", name, id)
	}
	return lb
}

func ruleFor(lb fakedo.LoadBalancer, entryPort int) (fakedo.ForwardingRule, bool) {
	for _, r := range lb.ForwardingRules {
		if r.EntryPort == entryPort {
			return r, true
		}
	}
	return fakedo.ForwardingRule{}, false
}

// A Service of type LoadBalancer gets a DigitalOcean LB that follows its
// ports, annotations, traffic policy and the node set, and goes away with
// it.
func TestDigitalOceanLoadBalancerLifecycle(t *testing.T) {
	e, ds := lbNodes(t, 3, nil)
	cert := e.fake.AddCertificate("web-cert")

	createService(t, "web", nil, tcp(80), udp(53))
	svc, lb := e.waitIngress("web", 60*time.Second)

	if want := "a" + strings.ReplaceAll(string(svc.UID), "-", ""); lb.Name != want[:32] {
		t.Errorf("LB name %q, want %q (from the Service UID)", lb.Name, want[:32])
	}
	if !slices.Contains(svc.Finalizers, lbFinalizer) {
		t.Errorf("Service finalizers %v lack %s", svc.Finalizers, lbFinalizer)
	}
	if lb.Region != "fra1" {
		t.Errorf("LB region %q, want the nodes' fra1", lb.Region)
	}
	wantIDs := []int{ds[0].ID, ds[1].ID, ds[2].ID}
	if !slices.Equal(sorted(lb.DropletIDs), wantIDs) {
		t.Errorf("LB droplets %v, want %v", lb.DropletIDs, wantIDs)
	}
	for _, p := range svc.Spec.Ports {
		r, ok := ruleFor(lb, int(p.Port))
		proto := strings.ToLower(string(p.Protocol))
		if !ok || r.EntryProtocol != proto || r.TargetProtocol != proto || r.TargetPort != int(p.NodePort) {
			t.Errorf("port %d: rule %+v (found %v), want %s -> node port %d", p.Port, r, ok, proto, p.NodePort)
		}
	}
	if hc := lb.HealthCheck; hc == nil || hc.Protocol != "http" || hc.Port != 10256 || hc.Path != "/healthz" {
		t.Errorf("health check %+v, want http :10256/healthz (kube-proxy, externalTrafficPolicy Cluster)", lb.HealthCheck)
	}

	// Ports and annotations change: HTTPS on 443 with a certificate named
	// like the DigitalOcean CCM's annotation does.
	svc = getSvc(t, "web")
	svc.Spec.Ports = append(svc.Spec.Ports, tcp(443))
	svc.Annotations[digitalocean.AnnCertificateName] = "web-cert"
	svc.Annotations[digitalocean.AnnTLSPorts] = "443"
	if _, err := cp.Admin.CoreV1().Services("default").Update(context.Background(), svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "an HTTPS rule on 443", func() (bool, string) {
		lb := e.lbOf("web")
		r, ok := ruleFor(lb, 443)
		return ok && r.EntryProtocol == "https" && r.TargetProtocol == "http" && r.CertificateID == cert.ID, fmt.Sprintf("rules %+v", lb.ForwardingRules)
	})

	// externalTrafficPolicy Local: health-check the Service's own node port.
	patchSvc(t, "web", map[string]any{"spec": map[string]any{"externalTrafficPolicy": "Local"}})
	eventually(t, 30*time.Second, "health check on healthCheckNodePort", func() (bool, string) {
		svc := getSvc(t, "web")
		hc := e.lbOf("web").HealthCheck
		return svc.Spec.HealthCheckNodePort != 0 && hc != nil && hc.Port == int(svc.Spec.HealthCheckNodePort) && hc.Path == "/healthz",
			fmt.Sprintf("health check %+v, healthCheckNodePort %d", hc, svc.Spec.HealthCheckNodePort)
	})

	// The node set changes: one node excluded, one new node joins.
	node, err := e.node(ds[2].Name)
	if err != nil {
		t.Fatal(err)
	}
	node.Labels[v1.LabelNodeExcludeBalancers] = "true"
	if _, err := cp.Admin.CoreV1().Nodes().Update(context.Background(), node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	d4 := e.fake.AddDroplet(fakedo.Droplet{Name: e.nodeName(3), Status: fakedo.StatusActive, SizeSlug: "s-2vcpu-4gb", Region: "fra1"})
	e.register(d4.Name, "")
	want := []int{ds[0].ID, ds[1].ID, d4.ID}
	eventually(t, 60*time.Second, "LB droplets follow the nodes", func() (bool, string) {
		got := sorted(e.lbOf("web").DropletIDs)
		return slices.Equal(got, want), fmt.Sprintf("droplets %v, want %v", got, want)
	})

	deleteServiceAndWait(t, "web", 60*time.Second)
	if lbs := e.fake.LoadBalancers(); len(lbs) != 0 {
		t.Errorf("load balancers left after the Service was deleted: %+v", lbs)
	}
	if st := e.fake.LoadBalancerStats(); st.Created != 1 {
		t.Errorf("%d load balancers created for one Service", st.Created)
	}
}

// A droplet deleted while its Node still exists must not block the load
// balancer: DigitalOcean refuses (422) any request naming it, so until the
// Node is deleted no Service could take in a new Node. The instance cache
// is kept for an hour, so only the fresh look after the 422 can tell the
// droplet is gone; the node lifecycle controller is off, so the Node stays.
func TestDigitalOceanLoadBalancerLeavesOutDeletedDroplets(t *testing.T) {
	e, ds := lbNodes(t, 3, func(s *harness.Settings) {
		s.Controllers = "nodes: true\nnodeLifecycle: false\nservices: true"
		s.CacheTTL = time.Hour
	})
	createService(t, "web", nil, tcp(80))
	e.waitIngress("web", 60*time.Second)
	// Warnings while the LB was being created ("is being created; checking
	// again") are expected; none may follow.
	before := map[string]bool{}
	for _, ev := range warnings(t, "web") {
		before[ev.Name] = true
	}

	if !e.fake.RemoveDroplet(ds[2].ID) {
		t.Fatal("removing the droplet from the fake failed")
	}
	d4 := e.fake.AddDroplet(fakedo.Droplet{Name: e.nodeName(3), Status: fakedo.StatusActive, SizeSlug: "s-2vcpu-4gb", Region: "fra1"})
	e.register(d4.Name, "")
	want := []int{ds[0].ID, ds[1].ID, d4.ID}
	eventually(t, 30*time.Second, "the LB takes in the new droplet and leaves out the deleted one", func() (bool, string) {
		got := sorted(e.lbOf("web").DropletIDs)
		return slices.Equal(got, want), fmt.Sprintf("droplets %v, want %v", got, want)
	})
	if !e.exists(ds[2].Name) {
		t.Fatalf("Node %s was deleted; the test needs it to outlive its droplet", ds[2].Name)
	}
	if !strings.Contains(e.ccm.Log(), "Leaving Nodes out of the load balancer") {
		t.Error("polyccm did not log which Nodes it left out")
	}
	for _, ev := range warnings(t, "web") {
		if !before[ev.Name] {
			t.Errorf("Warning event on the Service: %s: %s", ev.Reason, ev.Message)
		}
	}
}

func sorted(ids []int) []int {
	s := slices.Clone(ids)
	slices.Sort(s)
	return s
}

// warnings returns the Warning events on a Service.
func warnings(t *testing.T, svc string) []v1.Event {
	t.Helper()
	evs, err := cp.Admin.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Service,involvedObject.name=" + svc + ",type=Warning",
	})
	if err != nil {
		t.Fatal(err)
	}
	return evs.Items
}

// An annotation the driver does not know (a misspelling, a key of a newer
// DigitalOcean CCM) is a Warning event with a "did you mean", and is
// otherwise ignored, as the DigitalOcean CCM ignores it: the Service gets
// its load balancer from the rest of its annotations, and the load balancer
// follows node changes as any other.
func TestDigitalOceanUnknownAnnotationDoesNotFreeze(t *testing.T) {
	e, _ := lbNodes(t, 2, nil)
	misspelt := "service.beta.kubernetes.io/do-loadbalancer-sticky-sesions-type"
	createService(t, "lenient", map[string]string{digitalocean.AnnProtocol: "http", misspelt: "cookies"}, tcp(80))
	_, lb := e.waitIngress("lenient", 90*time.Second)
	if r, _ := ruleFor(lb, 80); r.EntryProtocol != "http" {
		t.Errorf("rule %+v, want the known protocol annotation applied", r)
	}
	eventually(t, 30*time.Second, "a warning about the unknown annotation", func() (bool, string) {
		var all []string
		for _, ev := range warnings(t, "lenient") {
			all = append(all, ev.Reason+": "+ev.Message)
		}
		want := "UnknownLoadBalancerAnnotation: " + misspelt + ": unknown annotation, ignored; did you mean service.beta.kubernetes.io/do-loadbalancer-sticky-sessions-type?"
		return slices.Contains(all, want), strings.Join(all, "\n")
	})
	d := e.fake.AddDroplet(fakedo.Droplet{Name: e.nodeName(2), Status: fakedo.StatusActive, SizeSlug: "s-2vcpu-4gb", Region: "fra1"})
	e.register(d.Name, "")
	eventually(t, 60*time.Second, "the new node in the load balancer", func() (bool, string) {
		lb, _ := e.fake.LoadBalancer(lb.ID)
		return slices.Contains(lb.DropletIDs, d.ID), fmt.Sprintf("droplets %v", lb.DropletIDs)
	})
	deleteServiceAndWait(t, "lenient", 60*time.Second)
}

// Invalid annotations are reported as Warning events naming the
// annotation and what is valid, and nothing is created in the cloud.
func TestDigitalOceanLoadBalancerInvalidAnnotations(t *testing.T) {
	e, _ := lbNodes(t, 1, nil)
	createService(t, "bad", map[string]string{
		digitalocean.AnnProtocol: "htp",
		"service.beta.kubernetes.io/do-loadbalancer-sticky-sesions-type": "cookies",
		digitalocean.AnnSizeUnit: "500",
	}, tcp(80))

	want := []string{
		`service.beta.kubernetes.io/do-loadbalancer-protocol: "htp" is not valid: want tcp, http, https or http2`,
		`service.beta.kubernetes.io/do-loadbalancer-sticky-sesions-type: unknown annotation, ignored; did you mean service.beta.kubernetes.io/do-loadbalancer-sticky-sessions-type?`,
		`service.beta.kubernetes.io/do-loadbalancer-size-unit: "500" is not valid: want an integer from 1 to 200`,
	}
	eventually(t, 30*time.Second, "Warning events for each bad annotation", func() (bool, string) {
		var msgs []string
		for _, ev := range warnings(t, "bad") {
			msgs = append(msgs, ev.Reason+": "+ev.Message)
		}
		all := strings.Join(msgs, "\n")
		for _, w := range want {
			if !strings.Contains(all, w) {
				return false, "missing " + w + " in:\n" + all
			}
		}
		return true, ""
	})
	// Give the controller time to do damage, then check it did none.
	time.Sleep(3 * time.Second)
	if n := e.fake.Faults().CallCount("POST /v2/load_balancers"); n != 0 {
		t.Errorf("%d load balancer creations for a Service with invalid annotations", n)
	}
	if lbs := e.fake.LoadBalancers(); len(lbs) != 0 {
		t.Errorf("load balancers exist: %+v", lbs)
	}

	// Fixing the annotations heals it.
	patchSvc(t, "bad", map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		digitalocean.AnnProtocol: "http",
		"service.beta.kubernetes.io/do-loadbalancer-sticky-sesions-type": nil,
		digitalocean.AnnSizeUnit: "2",
	}}})
	_, lb := e.waitIngress("bad", 90*time.Second)
	if r, _ := ruleFor(lb, 80); r.EntryProtocol != "http" || lb.SizeUnit != 2 {
		t.Errorf("after the fix: rule %+v size unit %d, want http and 2", r, lb.SizeUnit)
	}
	deleteServiceAndWait(t, "bad", 60*time.Second)
}

// polyccm finds a Service's LB again after a restart with the ID annotation
// lost, and renames it in place, never creating a second one.
func TestDigitalOceanLoadBalancerFoundAgainAfterRestart(t *testing.T) {
	e, _ := lbNodes(t, 2, nil)
	createService(t, "keep", nil, tcp(80))
	_, lb := e.waitIngress("keep", 60*time.Second)

	if _, err := e.ccm.Stop(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	_ = cp.Admin.CoordinationV1().Leases("kube-system").Delete(context.Background(), "cloud-controller-manager", metav1.DeleteOptions{})
	patchSvc(t, "keep", map[string]any{"metadata": map[string]any{"annotations": map[string]any{digitalocean.AnnLoadBalancerID: nil}}})

	e.restart()
	patchSvc(t, "keep", map[string]any{"spec": map[string]any{"ports": []any{
		map[string]any{"name": "tcp-80", "protocol": "TCP", "port": 80, "targetPort": 8080},
		map[string]any{"name": "tcp-8443", "protocol": "TCP", "port": 8443, "targetPort": 8443},
	}}})
	eventually(t, 60*time.Second, "the same LB updated with port 8443 and its ID recorded again", func() (bool, string) {
		svc := getSvc(t, "keep")
		cur, ok := e.fake.LoadBalancer(lb.ID)
		_, has := ruleFor(cur, 8443)
		return ok && has && svc.Annotations[digitalocean.AnnLoadBalancerID] == lb.ID, fmt.Sprintf("annotation %q, rules %+v", svc.Annotations[digitalocean.AnnLoadBalancerID], cur.ForwardingRules)
	})

	// Renaming through the name annotation renames the LB, found by ID.
	patchSvc(t, "keep", map[string]any{"metadata": map[string]any{"annotations": map[string]any{digitalocean.AnnName: "keep.example.com"}}})
	eventually(t, 30*time.Second, "the LB renamed", func() (bool, string) {
		cur, _ := e.fake.LoadBalancer(lb.ID)
		return cur.Name == "keep.example.com", "name " + cur.Name
	})
	if st := e.fake.LoadBalancerStats(); st.Created != 1 {
		t.Errorf("%d load balancers created; restarts and renames must reuse the one", st.Created)
	}
	deleteServiceAndWait(t, "keep", 60*time.Second)
	if st := e.fake.LoadBalancerStats(); st.Live != 0 {
		t.Errorf("%d load balancers left", st.Live)
	}
}

// A dual-stack Service gets a dual-stack LB and publishes both addresses.
func TestDigitalOceanLoadBalancerDualStack(t *testing.T) {
	e, _ := lbNodes(t, 1, nil)
	policy := v1.IPFamilyPolicyRequireDualStack
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "dual", Namespace: "default"},
		Spec: v1.ServiceSpec{
			Type: v1.ServiceTypeLoadBalancer, IPFamilyPolicy: &policy,
			IPFamilies: []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol},
			Selector:   map[string]string{"app": "dual"}, Ports: []v1.ServicePort{tcp(80)},
		},
	}
	if _, err := cp.Admin.CoreV1().Services("default").Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "IPv4 and IPv6 ingress", func() (bool, string) {
		svc := getSvc(t, "dual")
		id := svc.Annotations[digitalocean.AnnLoadBalancerID]
		lb, ok := e.fake.LoadBalancer(id)
		ing := svc.Status.LoadBalancer.Ingress
		return ok && lb.NetworkStack == "DUALSTACK" && lb.IPv6 != "" && len(ing) == 2 && ing[0].IP == lb.IP && ing[1].IP == lb.IPv6,
			fmt.Sprintf("ingress %v, LB %+v", ing, lb)
	})
	deleteServiceAndWait(t, "dual", 60*time.Second)
}

// With 30% of load balancer calls failing — throttled, server errors, and
// server errors after the change was made — 20 Services converge to
// exactly 20 LBs, and deleting them leaves none.
func TestDigitalOceanLoadBalancersConvergeUnderFaults(t *testing.T) {
	e, _ := lbNodes(t, 2, nil)
	f := e.fake.Faults()
	for _, m := range []string{"GET", "POST", "PUT", "DELETE"} {
		// 10% each: rules apply in order, so later ones see what is left.
		match := m + " /v2/load_balancers*"
		f.AddRule(faults.Rule{Match: match, Probability: 0.10, Status: 429})
		f.AddRule(faults.Rule{Match: match, Probability: 0.10 / 0.9, Status: 503})
		f.AddRule(faults.Rule{Match: match, Probability: 0.10 / 0.8, Status: 500, AfterCommit: true})
	}

	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { createService(t, fmt.Sprintf("storm-%02d", i), nil, tcp(80)) })
	}
	wg.Wait()
	for i := range n {
		e.waitIngress(fmt.Sprintf("storm-%02d", i), 4*time.Minute)
	}
	st := e.fake.LoadBalancerStats()
	if st.Peak != n || st.Created != n {
		t.Errorf("%d load balancers created, %d at peak, for %d Services; want exactly %d", st.Created, st.Peak, n, n)
	}
	if f.Injected() < 10 {
		t.Errorf("only %d faults injected; the test proved little", f.Injected())
	}
	for i := range n {
		if err := cp.Admin.CoreV1().Services("default").Delete(context.Background(), fmt.Sprintf("storm-%02d", i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	deleteServicesAndWait(t, serviceNames("storm", n), 4*time.Minute)
	if st := e.fake.LoadBalancerStats(); st.Live != 0 {
		t.Errorf("%d load balancers leaked: %+v", st.Live, e.fake.LoadBalancers())
	}
	t.Logf("faults injected: %d; calls: %v", f.Injected(), f.Calls())
}

// While DigitalOcean cannot confirm a deletion, the Service keeps its
// finalizer and the load balancer stays; once it can, both go.
func TestDigitalOceanLoadBalancerDeletionWaitsOutErrors(t *testing.T) {
	e, _ := lbNodes(t, 1, nil)
	createService(t, "sticky", nil, tcp(80))
	_, lb := e.waitIngress("sticky", 60*time.Second)

	f := e.fake.Faults()
	r := f.AddRule(faults.Rule{Match: "DELETE /v2/load_balancers/{id}", Status: 503})
	if err := cp.Admin.CoreV1().Services("default").Delete(context.Background(), "sticky", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	never(t, 8*time.Second, "the Service went away while its load balancer could not be deleted", func() (bool, string) {
		svc, err := cp.Admin.CoreV1().Services("default").Get(context.Background(), "sticky", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "Service deleted"
		}
		if err == nil && !slices.Contains(svc.Finalizers, lbFinalizer) {
			return true, "finalizer released"
		}
		return false, ""
	})
	if _, ok := e.fake.LoadBalancer(lb.ID); !ok {
		t.Fatal("the load balancer is gone although every DELETE failed")
	}
	if n := f.Responses("DELETE /v2/load_balancers/{id}")[503]; n < 2 {
		t.Fatalf("only %d failed deletions; polyccm did not retry", n)
	}
	f.RemoveRule(r)
	deleteServiceAndWait(t, "sticky", 60*time.Second)
	if _, ok := e.fake.LoadBalancer(lb.ID); ok {
		t.Error("the load balancer outlived its Service")
	}
}
