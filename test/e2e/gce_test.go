//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/polyccm/polyccm/drivers/gce"
	fakegce "github.com/polyccm/polyccm/test/fakecloud/gce"
	"github.com/polyccm/polyccm/test/harness"
)

// 200 Nodes registering at once are initialized from a few list calls,
// never one get per node.
func TestGCENodesAreInitializedInBatches(t *testing.T) {
	e := newGCEEnv(t, nil)
	const n = 200
	zones := []string{"us-central1-a", "us-central1-b", "us-central1-c"}
	var ins []fakegce.Instance
	for i := range n {
		ins = append(ins, e.instance(i, zones[i%len(zones)]))
	}
	var names []string
	var wg sync.WaitGroup
	for i, in := range ins {
		names = append(names, in.Name)
		pid := ""
		if i%2 == 0 {
			pid = e.providerID(in)
		}
		wg.Go(func() { e.register(in.Name, pid) })
	}
	wg.Wait()
	e.waitInitialized(names, 2*time.Minute)
	lists := e.calls("/aggregated/instances") + e.calls("/zones/{zone}/instances")
	gets := e.fake.Faults().CallCount("GET /compute/v1/projects/{project}/zones/{zone}/instances/{instance}")

	for i, in := range ins {
		node, err := e.node(in.Name)
		if err != nil {
			t.Fatal(err)
		}
		if node.Spec.ProviderID != e.providerID(in) {
			t.Errorf("%s: providerID %q, want %q", in.Name, node.Spec.ProviderID, e.providerID(in))
		}
		if node.Labels[v1.LabelInstanceTypeStable] != "e2-standard-4" || node.Labels[v1.LabelTopologyZone] != in.Zone || node.Labels[v1.LabelTopologyRegion] != gceRegion {
			t.Errorf("%s: labels %v", in.Name, node.Labels)
		}
		if i == 0 {
			eventually(t, 10*time.Second, in.Name+" addresses", func() (bool, string) {
				node, _ := e.node(in.Name)
				want := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: in.NetworkIP}, {Type: v1.NodeExternalIP, Address: in.NatIP}, {Type: v1.NodeHostName, Address: in.Name}}
				return node != nil && slices.Equal(node.Status.Addresses, want), fmt.Sprintf("%v, want %v", node.Status.Addresses, want)
			})
		}
	}
	if lists > n/5 || gets > 0 {
		t.Errorf("initializing %d nodes took %d list calls and %d gets; want at most %d lists and no gets: lookups are not batched (%v)", n, lists, gets, n/5, e.fake.Faults().Calls())
	}
	t.Logf("%d nodes initialized with %d list calls", n, lists)
}

// A stopped instance taints its Node; a deleted one takes the Node, but a
// storm of throttling and server errors deletes nothing.
func TestGCEShutdownAndDeletion(t *testing.T) {
	e := newGCEEnv(t, nil)
	var ins []fakegce.Instance
	var names []string
	for i := range 3 {
		in := e.instance(i, "us-central1-b")
		ins = append(ins, in)
		names = append(names, in.Name)
		e.register(in.Name, "")
	}
	e.waitInitialized(names, 30*time.Second)
	if err := e.fake.SetInstanceStatus(ins[1].Zone, ins[1].Name, fakegce.StatusTerminated); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "shutdown taint on "+names[1], func() (bool, string) {
		node, err := e.node(names[1])
		return err == nil && harness.HasTaint(node, harness.ShutdownTaint), "no taint"
	})

	f := e.fake.Faults()
	r1 := f.AddRule(faultRule("GET /compute/v1/projects/*", 0.5, 429))
	r2 := f.AddRule(faultRule("GET /compute/v1/projects/*", 0, 503))
	before := f.Injected()
	e.fake.RemoveInstance(ins[0].Zone, ins[0].Name)
	never(t, 8*time.Second, "a node was deleted during an error storm", func() (bool, string) {
		for _, n := range names {
			if !e.exists(n) {
				return true, n + " deleted"
			}
		}
		return false, ""
	})
	if f.Injected()-before < 3 {
		t.Fatalf("only %d injected errors reached polyccm", f.Injected()-before)
	}
	f.RemoveRule(r1)
	f.RemoveRule(r2)
	eventually(t, 30*time.Second, names[0]+" deleted", func() (bool, string) { return !e.exists(names[0]), "still there" })
	for _, n := range names[1:] {
		if !e.exists(n) {
			t.Errorf("%s deleted but its instance exists", n)
		}
	}
}

// gceLB starts polyccm with services on and n nodes in two zones.
func gceLB(t *testing.T, n int, tweak func(*harness.Settings)) (*gceEnv, []fakegce.Instance) {
	t.Helper()
	e := newGCEEnv(t, func(s *harness.Settings) {
		withServices(s)
		if tweak != nil {
			tweak(s)
		}
	})
	var ins []fakegce.Instance
	var names []string
	for i := range n {
		in := e.instance(i, []string{"us-central1-a", "us-central1-b"}[i%2])
		ins = append(ins, in)
		names = append(names, in.Name)
		e.register(in.Name, "")
	}
	e.waitInitialized(names, 30*time.Second)
	return e, ins
}

func (e *gceEnv) waitIngress(name string, timeout time.Duration) *v1.Service {
	e.t.Helper()
	var svc *v1.Service
	eventually(e.t, timeout, "Service "+name+" ingress", func() (bool, string) {
		svc = getSvc(e.t, name)
		ing := svc.Status.LoadBalancer.Ingress
		return len(ing) == 1 && ing[0].IP != "", fmt.Sprintf("ingress %v", ing)
	})
	return svc
}

// live counts live resources of the kinds a load balancer uses.
func (e *gceEnv) live() map[string]int {
	out := map[string]int{}
	for k, st := range e.fake.Stats() {
		if k != "instances" && k != "disks" && st.Live > 0 {
			out[k] = st.Live
		}
	}
	return out
}

// An external Service gets a forwarding rule to a target pool of its nodes
// with kube-proxy's health check and firewall rules; changes follow; delete
// removes everything.
func TestGCEExternalLoadBalancer(t *testing.T) {
	e, ins := gceLB(t, 3, nil)
	svc := createService(t, "ext", nil, tcp(80), tcp(443))
	svc = e.waitIngress("ext", 90*time.Second)
	base := cloudprovider.DefaultLoadBalancerName(svc)

	fr, ok := e.fake.ForwardingRule(gceRegion, base)
	// A target pool rule takes one port range, lowest to highest port.
	if !ok || fr.IPAddress != svc.Status.LoadBalancer.Ingress[0].IP || fr.IPProtocol != "TCP" || fr.PortRange != "80-443" {
		t.Errorf("forwarding rule %+v (found %v)", fr, ok)
	}
	pool, ok := e.fake.TargetPool(gceRegion, base)
	if !ok || len(pool.Instances) != 3 || len(pool.HealthChecks) != 1 {
		t.Fatalf("target pool %+v (found %v)", pool, ok)
	}
	var hc fakegce.HTTPHealthCheck
	for _, h := range e.fake.HTTPHealthChecks() {
		if h.Name == e.nodesHC(t) {
			hc = h
		}
	}
	if hc.Port != 10256 || hc.RequestPath != "/healthz" {
		t.Errorf("health check %+v, want :10256/healthz", hc)
	}
	if fw, ok := e.fake.Firewall("k8s-fw-" + base); !ok || !slices.Equal(fw.TargetTags, []string{gceNodeTag}) || !slices.Equal(fw.SourceRanges, []string{"0.0.0.0/0"}) {
		t.Errorf("firewall %+v (found %v)", fw, ok)
	}
	if _, ok := e.fake.Firewall(e.nodesHC(t) + "-http-hc"); !ok {
		t.Error("no health-check firewall rule")
	}

	// Source ranges and the node set change.
	patchSvc(t, "ext", map[string]any{"spec": map[string]any{"loadBalancerSourceRanges": []string{"203.0.113.0/24"}}})
	eventually(t, 30*time.Second, "firewall source ranges", func() (bool, string) {
		fw, _ := e.fake.Firewall("k8s-fw-" + base)
		return slices.Equal(fw.SourceRanges, []string{"203.0.113.0/24"}), fmt.Sprintf("%v", fw.SourceRanges)
	})
	node, _ := e.node(ins[2].Name)
	node.Labels[v1.LabelNodeExcludeBalancers] = "true"
	if _, err := cp.Admin.CoreV1().Nodes().Update(context.Background(), node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "target pool without the excluded node", func() (bool, string) {
		pool, _ := e.fake.TargetPool(gceRegion, base)
		return len(pool.Instances) == 2, fmt.Sprintf("%d instances", len(pool.Instances))
	})

	deleteServiceAndWait(t, "ext", 90*time.Second)
	if live := e.live(); len(live) != 0 {
		t.Errorf("resources left after the Service was deleted: %v", live)
	}
	if st := e.fake.Stats()["forwardingRules"]; st.Created != 1 {
		t.Errorf("%d forwarding rules created for one Service (%+v); calls %v", st.Created, st, e.fake.Faults().Calls())
	}
}

// An internal Service gets a backend service over per-zone instance groups
// and an internal forwarding rule in the subnetwork; delete removes it all,
// the shared instance groups too.
func TestGCEInternalLoadBalancer(t *testing.T) {
	e, _ := gceLB(t, 4, nil)
	createService(t, "int", map[string]string{
		gce.AnnLoadBalancerType:  "Internal",
		gce.AnnAllowGlobalAccess: "true",
	}, tcp(8080))
	svc := e.waitIngress("int", 90*time.Second)
	base := cloudprovider.DefaultLoadBalancerName(svc)
	fr, ok := e.fake.ForwardingRule(gceRegion, base)
	if !ok || fr.LoadBalancingScheme != "INTERNAL" || fr.BackendService == "" || !fr.AllowGlobalAccess || !strings.HasSuffix(fr.Subnetwork, "/subnetworks/default") {
		t.Errorf("internal forwarding rule %+v (found %v)", fr, ok)
	}
	groups := e.fake.InstanceGroups()
	if len(groups) != 2 {
		t.Errorf("%d instance groups, want one per zone (2)", len(groups))
	}
	members := 0
	for _, g := range groups {
		members += len(g.Members)
	}
	if members != 4 {
		t.Errorf("%d instances in the groups, want 4", members)
	}
	deleteServiceAndWait(t, "int", 90*time.Second)
	if live := e.live(); len(live) != 0 {
		t.Errorf("resources left after the Service was deleted: %v", live)
	}
}

// A Service switched External -> Internal -> External gets the new
// load balancer's address each time, and the old one's own resources go:
// exactly the new load balancer is left.
func TestGCELoadBalancerSchemeSwitch(t *testing.T) {
	e, _ := gceLB(t, 2, nil)
	createService(t, "switch", nil, tcp(80))
	svc := e.waitIngress("switch", 90*time.Second)
	base := cloudprovider.DefaultLoadBalancerName(svc)
	external := map[string]int{"forwardingRules": 1, "targetPools": 1, "httpHealthChecks": 1, "firewalls": 2}
	// Two nodes in two zones: one instance group each.
	internal := map[string]int{"forwardingRules": 1, "backendServices": 1, "healthChecks": 1, "instanceGroups": 2, "firewalls": 2}
	ip := e.checkScheme(base, svc.Status.LoadBalancer.Ingress[0].IP, "EXTERNAL", external)

	for _, to := range []struct {
		ann    any // nil removes the annotation: External by default
		scheme string
		live   map[string]int
	}{{"Internal", "INTERNAL", internal}, {nil, "EXTERNAL", external}} {
		patchSvc(t, "switch", map[string]any{"metadata": map[string]any{"annotations": map[string]any{gce.AnnLoadBalancerType: to.ann}}})
		var now string
		eventually(t, 90*time.Second, "Service switch ingress for "+to.scheme, func() (bool, string) {
			ing := getSvc(t, "switch").Status.LoadBalancer.Ingress
			if len(ing) != 1 {
				return false, fmt.Sprintf("ingress %v", ing)
			}
			now = ing[0].IP
			return now != ip, "still " + ip
		})
		// The status is written once EnsureLoadBalancer is done: the old
		// load balancer must be gone by then.
		ip = e.checkScheme(base, now, to.scheme, to.live)
	}

	deleteServiceAndWait(t, "switch", 90*time.Second)
	if live := e.live(); len(live) != 0 {
		t.Errorf("resources left after the Service was deleted: %v", live)
	}
}

// checkScheme asserts the Service's forwarding rule is of scheme with the
// address ip, and that the live load balancer resources are exactly live.
func (e *gceEnv) checkScheme(base, ip, scheme string, live map[string]int) string {
	e.t.Helper()
	if fr, ok := e.fake.ForwardingRule(gceRegion, base); !ok || fr.LoadBalancingScheme != scheme || fr.IPAddress != ip {
		e.t.Errorf("forwarding rule %+v (found %v), want %s at %s", fr, ok, scheme, ip)
	}
	if got := e.live(); !maps.Equal(got, live) {
		e.t.Errorf("%s load balancer: live resources %v, want %v", scheme, got, live)
	}
	return ip
}

// Invalid annotations: a Warning event and nothing made.
func TestGCEInvalidAnnotations(t *testing.T) {
	e, _ := gceLB(t, 1, nil)
	createService(t, "bad", map[string]string{gce.AnnNetworkTier: "Gold", "networking.gke.io/load-balancer-typ": "Internal"}, tcp(80))
	eventually(t, 30*time.Second, "warning events", func() (bool, string) {
		var all []string
		for _, ev := range warnings(t, "bad") {
			all = append(all, ev.Message)
		}
		s := strings.Join(all, "\n")
		return strings.Contains(s, `cloud.google.com/network-tier: "Gold" is not valid: want Premium or Standard`) &&
			strings.Contains(s, "did you mean networking.gke.io/load-balancer-type?"), s
	})
	time.Sleep(2 * time.Second)
	if live := e.live(); len(live) != 0 {
		t.Errorf("resources made for a Service with invalid annotations: %v", live)
	}
	deleteServiceAndWait(t, "bad", 60*time.Second)
}

// Pod CIDR routes point at the nodes' instances and go with the nodes.
func TestGCERoutes(t *testing.T) {
	e := newGCEEnv(t, func(s *harness.Settings) {
		s.Controllers = "nodes: true\nnodeLifecycle: true\nroutes: true"
		s.Extra = "routes:\n  clusterCIDR: 10.244.0.0/16\n  reconcilePeriod: 1s"
	})
	var names []string
	for i := range 3 {
		in := e.instance(i, "us-central1-c")
		n := harness.UninitializedNode(in.Name, "")
		n.Spec.PodCIDR = fmt.Sprintf("10.244.%d.0/24", i)
		n.Spec.PodCIDRs = []string{n.Spec.PodCIDR}
		e.registerNode(n)
		names = append(names, in.Name)
	}
	e.waitInitialized(names, 30*time.Second)
	eventually(t, 60*time.Second, "a route per node", func() (bool, string) {
		rs := e.fake.Routes()
		got := map[string]string{}
		for _, r := range rs {
			// cloud-provider-gcp's names: <clusterName>-<node UID>.
			if strings.HasPrefix(r.Name, "e2e-") && r.Description == "k8s-node-route" {
				got[r.DestRange] = r.NextHopInstance[strings.LastIndexByte(r.NextHopInstance, '/')+1:]
			}
		}
		for i, n := range names {
			if got[fmt.Sprintf("10.244.%d.0/24", i)] != n {
				return false, fmt.Sprintf("routes %v", got)
			}
		}
		return len(got) == 3, fmt.Sprintf("routes %v", got)
	})
	if err := cp.Admin.CoreV1().Nodes().Delete(context.Background(), names[1], metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the deleted node's route removed", func() (bool, string) {
		for _, r := range e.fake.Routes() {
			if r.DestRange == "10.244.1.0/24" {
				return false, "still routed"
			}
		}
		return true, ""
	})
}

// A failed Operation is surfaced as a Warning event with GCE's code and
// message, and the load balancer is made once GCE stops failing.
func TestGCEOperationErrorIsAnEvent(t *testing.T) {
	e, _ := gceLB(t, 1, nil)
	e.fake.FailOperations(2, fakegce.OperationFailure{Match: "forwardingRules.insert", Code: "QUOTA_EXCEEDED", Message: "Quota 'FORWARDING_RULES' exceeded. Limit: 15.0 in region us-central1."})
	createService(t, "quota", nil, tcp(80))
	eventually(t, 30*time.Second, "a GCEOperationFailed event", func() (bool, string) {
		var all []string
		for _, ev := range warnings(t, "quota") {
			all = append(all, ev.Reason+": "+ev.Message)
		}
		s := strings.Join(all, "\n")
		return strings.Contains(s, "GCEOperationFailed") && strings.Contains(s, "QUOTA_EXCEEDED") && strings.Contains(s, "Quota 'FORWARDING_RULES' exceeded"), s
	})
	e.waitIngress("quota", 2*time.Minute)
	deleteServiceAndWait(t, "quota", 90*time.Second)
	if live := e.live(); len(live) != 0 {
		t.Errorf("resources left: %v", live)
	}
}

// With 30% of Compute calls throttled or failing, 10 Services converge to
// exactly 10 load balancers and deleting them leaves nothing.
func TestGCELoadBalancersConvergeUnderFaults(t *testing.T) {
	e, _ := gceLB(t, 2, nil)
	f := e.fake.Faults()
	for _, m := range []string{"GET", "POST", "DELETE", "PUT", "PATCH"} {
		match := m + " /compute/v1/projects/*"
		f.AddRule(faultRule(match, 0.15, 429))
		f.AddRule(faultRule(match, 0.15/0.85, 503))
	}
	const n = 10
	for i := range n {
		createService(t, fmt.Sprintf("gstorm-%02d", i), nil, tcp(80))
	}
	for i := range n {
		e.waitIngress(fmt.Sprintf("gstorm-%02d", i), 4*time.Minute)
	}
	if st := e.fake.Stats()["forwardingRules"]; st.Created != n || st.Peak != n {
		t.Errorf("forwarding rules: %+v; want exactly %d created", st, n)
	}
	deleteServicesAndWait(t, serviceNames("gstorm", n), 4*time.Minute)
	if live := e.live(); len(live) != 0 {
		t.Errorf("resources leaked: %v", live)
	}
	t.Logf("faults injected: %d", f.Injected())
}
