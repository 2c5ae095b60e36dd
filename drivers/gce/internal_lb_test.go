package gce_test

import (
	"slices"
	"strings"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"golang.org/x/oauth2"
	computev1 "google.golang.org/api/compute/v1"
	"google.golang.org/api/option"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/drivers/gce"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
	fakegce "github.com/polyccm/polyccm/test/fakecloud/gce"
)

// checkInternal asserts the fake holds the internal load balancer for svc,
// with the cluster's instance groups holding members, and returns its
// forwarding rule.
func (e *env) checkInternal(svc *v1.Service, members []*v1.Node) fakegce.ForwardingRule {
	e.t.Helper()
	base := e.lbName(svc)
	regional := "projects/" + testProject + "/regions/" + testRegion
	hcName := e.hcNameOf(svc)
	hc := e.healthCheck(hcName)
	if hc.Type != "HTTP" || hc.HTTPHealthCheck == nil || hc.HTTPHealthCheck.Port != healthPort(svc) || hc.HTTPHealthCheck.RequestPath != "/healthz" || hc.Region != "" {
		e.t.Errorf("health check %+v, want a global HTTP %d /healthz", hc, healthPort(svc))
	}
	// One group per zone with members, named for the cluster.
	wantZones := map[string][]*v1.Node{}
	for _, n := range members {
		zone := strings.Split(strings.TrimPrefix(n.Spec.ProviderID, "gce://"), "/")[1]
		wantZones[zone] = append(wantZones[zone], n)
	}
	groups := e.instanceGroups()
	var wantGroups []string
	for zone, ns := range wantZones {
		g, ok := groups[zone]
		if !ok {
			e.t.Errorf("no instance group in %s", zone)
			continue
		}
		if g.Name != e.group() {
			e.t.Errorf("instance group %s is not named for the cluster", g.Name)
		}
		if got, want := shortURLs(g.Members), instancePaths(ns); !slices.Equal(got, want) {
			e.t.Errorf("group in %s holds %v, want %v", zone, got, want)
		}
		wantGroups = append(wantGroups, shortURL(g.SelfLink))
	}
	slices.Sort(wantGroups)
	bs := e.backendService(base)
	var gotGroups []string
	for _, b := range bs.Backends {
		gotGroups = append(gotGroups, shortURL(b.Group))
	}
	slices.Sort(gotGroups)
	if bs.LoadBalancingScheme != "INTERNAL" || !slices.Equal(gotGroups, wantGroups) {
		e.t.Errorf("backend service %s with groups %v, want INTERNAL with %v", bs.LoadBalancingScheme, gotGroups, wantGroups)
	}
	if got := shortURLs(bs.HealthChecks); !slices.Equal(got, []string{"projects/" + testProject + "/global/healthChecks/" + hcName}) {
		e.t.Errorf("backend service health checks %v", got)
	}
	fr := e.forwardingRule(base)
	if fr.LoadBalancingScheme != "INTERNAL" || shortURL(fr.BackendService) != regional+"/backendServices/"+base ||
		shortURL(fr.Subnetwork) != regional+"/subnetworks/default" || lastSeg(fr.Network) != "default" {
		e.t.Errorf("forwarding rule %+v, want INTERNAL to the backend service in the default subnetwork", fr)
	}
	e.firewall("k8s-fw-" + base)
	if hcName == base {
		e.firewall(base + "-hc")
	} else {
		e.firewall(hcName + "-hc")
	}
	return fr
}

var internalLB = map[string]string{gce.AnnLoadBalancerType: "Internal"}

func TestInternalLoadBalancerLifecycle(t *testing.T) {
	t.Parallel()
	// Operations answer RUNNING: zonal ones (instance groups) are polled too.
	e := newEnv(t, withPolling())
	nodes := append(e.nodes("a", 2, testZone), e.nodes("b", 1, testZone2)...)
	svc := service(internalLB)
	st := e.mustEnsure(svc, nodes)
	fr := e.checkInternal(svc, nodes)
	if st.Ingress[0].IP != fr.IPAddress || !strings.HasPrefix(fr.IPAddress, "10.128.") {
		t.Errorf("status %s, forwarding rule %s: want one address of the subnetwork", st.Ingress[0].IP, fr.IPAddress)
	}
	if got, exists := e.get(svc); !exists || got.Ingress[0].IP != fr.IPAddress {
		t.Errorf("GetLoadBalancer = %+v, %v", got, exists)
	}
	if len(e.fake.TargetPools()) != 0 || len(e.fake.HTTPHealthChecks()) != 0 {
		t.Error("an internal load balancer made external resources")
	}

	e.mustDelete(svc)
	if live := e.live(); len(live) != 0 {
		t.Errorf("left after EnsureLoadBalancerDeleted: %v", live)
	}
	if _, exists := e.get(svc); exists {
		t.Error("GetLoadBalancer still finds it")
	}
	e.mustDelete(svc)
}

func TestInternalMembershipChanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.nodes("a", 3, testZone)
	b := e.nodes("b", 1, testZone2)
	c := e.nodes("c", 2, "us-central1-c")
	svc := service(internalLB)
	e.mustEnsure(svc, append(slices.Clone(a[:2]), b...))
	e.checkInternal(svc, append(slices.Clone(a[:2]), b...))

	// Zone b loses its only node, zone c joins, a-0 leaves and a-2 joins.
	next := append([]*v1.Node{a[1], a[2]}, c...)
	if err := e.lb.UpdateLoadBalancer(ctx(t), "kubernetes", svc, next); err != nil {
		t.Fatalf("UpdateLoadBalancer: %v", err)
	}
	bs := e.backendService(e.lbName(svc))
	var zones []string
	for _, be := range bs.Backends {
		zones = append(zones, strings.Split(shortURL(be.Group), "/")[3])
	}
	slices.Sort(zones)
	if !slices.Equal(zones, []string{"us-central1-a", "us-central1-c"}) {
		t.Errorf("backends in %v, want zones a and c", zones)
	}
	groups := e.instanceGroups()
	for zone, want := range map[string][]*v1.Node{"us-central1-a": {a[1], a[2]}, "us-central1-c": c} {
		if got := shortURLs(groups[zone].Members); !slices.Equal(got, instancePaths(want)) {
			t.Errorf("group in %s holds %v, want %v", zone, got, instancePaths(want))
		}
	}
	// Steady state.
	before := e.mutations()
	if err := e.lb.UpdateLoadBalancer(ctx(t), "kubernetes", svc, next); err != nil {
		t.Fatal(err)
	}
	if d := e.mutations() - before; d != 0 {
		t.Errorf("%d changing calls for unchanged nodes: %v", d, e.fake.Faults().Calls())
	}
	e.mustDelete(svc)
	if live := e.live(); len(live) != 0 {
		t.Errorf("left: %v", live)
	}
}

// TestInternalLoadBalancersShareGroups: an instance can be in only one
// load-balanced group, so every internal load balancer of the cluster uses
// the same group per zone, which goes with the last of them.
func TestInternalLoadBalancersShareGroups(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := append(e.nodes("a", 2, testZone), e.nodes("b", 2, testZone2)...)
	one := service(internalLB)
	two := service(internalLB)
	two.Name, two.UID = "api", types.UID("11111111-2222-4333-8444-555555555555")
	ext := service(nil)
	ext.Name, ext.UID = "public", types.UID("66666666-2222-4333-8444-555555555555")
	e.mustEnsure(one, nodes)
	e.mustEnsure(two, nodes)
	e.mustEnsure(ext, nodes)
	if n := len(e.fake.InstanceGroups()); n != 2 {
		t.Fatalf("%d instance groups, want one per zone", n)
	}
	e.checkInternal(one, nodes)
	e.checkInternal(two, nodes)

	e.mustDelete(one)
	e.checkInternal(two, nodes)
	e.mustDelete(ext)
	e.checkInternal(two, nodes)
	e.mustDelete(two)
	if live := e.live(); len(live) != 0 {
		t.Errorf("left: %v", live)
	}
}

// onlyKinds asserts the fake holds load balancer resources of exactly the
// given kinds, one each (instance groups: one per zone, so at least one),
// and no addresses.
func (e *env) onlyKinds(kinds ...string) {
	e.t.Helper()
	live := e.live()
	for kind, names := range live {
		switch {
		case !slices.Contains(kinds, kind):
			e.t.Errorf("%s left: %v", kind, names)
		case kind == "firewalls" && len(names) != 2, kind != "firewalls" && kind != "instanceGroups" && len(names) != 1:
			e.t.Errorf("%s: %v", kind, names)
		}
	}
	for _, kind := range kinds {
		if len(live[kind]) == 0 {
			e.t.Errorf("no %s", kind)
		}
	}
}

const epFRGet = "GET /compute/v1/projects/{project}/regions/{region}/forwardingRules/{forwardingRule}"

var (
	externalKinds = []string{"forwardingRules", "targetPools", "httpHealthChecks", "firewalls"}
	internalKinds = []string{"forwardingRules", "backendServices", "healthChecks", "instanceGroups", "firewalls"}
)

// TestSchemeSwitch: a Service switched between External and Internal gets
// the new load balancer, and the old one's own resources go; the firewall
// rules, the same for both, are updated in place.
func TestSchemeSwitch(t *testing.T) {
	t.Parallel()
	// Operations answer RUNNING: the rule must be gone, not just going,
	// before its target pool or backend service is deleted.
	e := newEnv(t, withPolling())
	nodes := append(e.nodes("a", 2, testZone), e.nodes("b", 1, testZone2)...)
	svc := service(nil)
	ip := e.mustEnsure(svc, nodes).Ingress[0].IP
	e.checkExternal(svc, nodes)

	svc.Annotations = internalLB
	st := e.mustEnsure(svc, nodes)
	fr := e.checkInternal(svc, nodes)
	if st.Ingress[0].IP != fr.IPAddress || st.Ingress[0].IP == ip {
		t.Errorf("status %s, internal rule %s, external was %s", st.Ingress[0].IP, fr.IPAddress, ip)
	}
	e.onlyKinds(internalKinds...)

	// Steady state: one read of the rule, no deletion tried.
	gets, before := e.calls(epFRGet), e.mutations()
	e.mustEnsure(svc, nodes)
	if g, m := e.calls(epFRGet)-gets, e.mutations()-before; g != 1 || m != 0 {
		t.Errorf("an unchanged internal Service took %d rule reads and %d changes, want 1 and 0: %v", g, m, e.fake.Faults().Calls())
	}

	svc.Annotations = nil
	st = e.mustEnsure(svc, nodes)
	fr = e.checkExternal(svc, nodes)
	if st.Ingress[0].IP != fr.IPAddress {
		t.Errorf("status %s, external rule %s", st.Ingress[0].IP, fr.IPAddress)
	}
	e.onlyKinds(externalKinds...)
	// The traffic rule is kept across the switches; the health checks'
	// rules are the schemes' own (k8s-<id>-node-http-hc, -node-hc).
	if st := e.fake.Stats()["firewalls"]; st.Created != 4 || st.Deleted != 2 {
		t.Errorf("firewalls %+v: want the traffic rule kept, the health-check rules replaced", st)
	}
	if st := e.fake.Stats()["forwardingRules"]; st.Created != 3 || st.Peak != 1 {
		t.Errorf("forwarding rules %+v, want one at a time", st)
	}
	gets, before = e.calls(epFRGet), e.mutations()
	e.mustEnsure(svc, nodes)
	if g, m := e.calls(epFRGet)-gets, e.mutations()-before; g != 1 || m != 0 {
		t.Errorf("an unchanged external Service took %d rule reads and %d changes, want 1 and 0: %v", g, m, e.fake.Faults().Calls())
	}
	for _, op := range e.fake.Operations() {
		if op.Error != nil {
			t.Errorf("operation %s %s failed: %+v", op.OperationType, op.TargetLink, op.Error)
		}
	}
	e.mustDelete(svc)
	if live := e.live(); len(live) != 0 {
		t.Errorf("left: %v", live)
	}
}

// TestSchemeSwitchResumes: a switch that failed after the old rule went
// finishes the cleanup on the next pass, though no rule is left to show
// the old scheme; until the cleanup succeeds nothing new is made.
func TestSchemeSwitchResumes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := e.nodes("n", 2, testZone)
	svc := service(nil)
	e.mustEnsure(svc, nodes)
	base := e.lbName(svc)

	svc.Annotations = internalLB
	id := e.fake.Faults().AddRule(faults.Rule{Match: "DELETE /compute/v1/projects/{project}/regions/{region}/targetPools/{targetPool}", Status: 503})
	if _, err := e.ensure(svc, nodes); kind(err) != cloudapi.KindUnavailable {
		t.Fatalf("Ensure with the pool undeletable: %v, want unavailable", err)
	}
	if _, ok := e.fake.ForwardingRule(testRegion, base); ok {
		t.Error("the external rule, deleted first, is still there")
	}
	e.targetPool(base)
	if n := len(e.fake.BackendServices()) + len(e.fake.HealthChecks()) + len(e.fake.InstanceGroups()); n != 0 {
		t.Errorf("%d internal resources made before the old ones were gone", n)
	}

	e.fake.Faults().RemoveRule(id)
	e.mustEnsure(svc, nodes)
	e.checkInternal(svc, nodes)
	e.onlyKinds(internalKinds...)

	// The same the other way, where the shared groups go last.
	svc.Annotations = nil
	id = e.fake.Faults().AddRule(faults.Rule{Match: "DELETE /compute/v1/projects/{project}/zones/{zone}/instanceGroups/{instanceGroup}", Status: 503})
	if _, err := e.ensure(svc, nodes); err == nil {
		t.Fatal("Ensure succeeded though the instance groups could not be deleted")
	}
	if len(e.fake.InstanceGroups()) == 0 || len(e.fake.ForwardingRules()) != 0 || len(e.fake.BackendServices()) != 0 {
		t.Errorf("after the failed switch: %v, want only the groups of the internal load balancer", e.live())
	}
	e.fake.Faults().RemoveRule(id)
	e.mustEnsure(svc, nodes)
	e.checkExternal(svc, nodes)
	// No rule shows the old scheme any more, so the groups stay until
	// the Service goes (as upstream leaves them); nothing uses them.
	e.onlyKinds(append(slices.Clone(externalKinds), "instanceGroups")...)
	e.mustDelete(svc)
	if live := e.live(); len(live) != 0 {
		t.Errorf("left: %v", live)
	}
}

// TestSchemeSwitchKeepsSharedGroups: the cluster's instance groups stay
// while another internal load balancer uses them.
func TestSchemeSwitchKeepsSharedGroups(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := append(e.nodes("a", 1, testZone), e.nodes("b", 1, testZone2)...)
	one := service(internalLB)
	two := service(internalLB)
	two.Name, two.UID = "api", types.UID("11111111-2222-4333-8444-555555555555")
	e.mustEnsure(one, nodes)
	e.mustEnsure(two, nodes)

	one.Annotations = nil
	e.mustEnsure(one, nodes)
	e.checkExternal(one, nodes)
	e.checkInternal(two, nodes)
	if n := len(e.fake.BackendServices()); n != 1 {
		t.Errorf("%d backend services, want the other Service's only", n)
	}
	e.mustDelete(two)
	e.mustDelete(one)
	if live := e.live(); len(live) != 0 {
		t.Errorf("left: %v", live)
	}
}

// TestUpdateLeavesASchemeSwitchToEnsure: the node update of a Service
// whose type changed changes nothing, even when the new type's backends
// are there (left by a switch before leftovers were deleted): replacing
// the rule would delete it without making the new one.
func TestUpdateLeavesASchemeSwitchToEnsure(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := e.nodes("n", 2, testZone)
	svc := service(internalLB)
	e.mustEnsure(svc, nodes)
	base := e.lbName(svc)
	c := ctx(t)
	desc := `{"kubernetes.io/service-name":"shop/web"}`
	// The fake answers operations DONE here: no waiting needed.
	legacy, err := computev1.NewService(c, option.WithEndpoint(e.fake.URL()+"/compute/v1/"),
		option.WithTokenSource(oauth2.StaticTokenSource(&oauth2.Token{AccessToken: testToken})))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := legacy.HttpHealthChecks.Insert(testProject, &computev1.HttpHealthCheck{Name: testNodesHC, Description: desc, Port: 10256}).Context(c).Do(); err != nil {
		t.Fatal(err)
	}
	pools, err := compute.NewTargetPoolsRESTClient(c, e.userClient()...)
	if err != nil {
		t.Fatal(err)
	}
	defer pools.Close()
	hcURL := "projects/" + testProject + "/global/httpHealthChecks/" + testNodesHC
	op, err := pools.Insert(c, &computepb.InsertTargetPoolRequest{Project: testProject, Region: testRegion, TargetPoolResource: &computepb.TargetPool{Name: &base, Description: &desc, HealthChecks: []string{hcURL}}})
	if err == nil {
		err = op.Wait(c)
	}
	if err != nil {
		t.Fatal(err)
	}

	svc.Annotations = nil
	before := e.mutations()
	if err := e.lb.UpdateLoadBalancer(ctx(t), "kubernetes", svc, nodes); err != nil {
		t.Fatalf("UpdateLoadBalancer: %v", err)
	}
	if d := e.mutations() - before; d != 0 {
		t.Errorf("%d changing calls: %v", d, e.fake.Faults().Calls())
	}
	if fr := e.forwardingRule(base); fr.LoadBalancingScheme != "INTERNAL" {
		t.Errorf("rule %+v, want the internal one kept", fr)
	}

	// The switch itself reuses the pool and drops the internal parts.
	e.mustEnsure(svc, nodes)
	e.checkExternal(svc, nodes)
	e.onlyKinds(externalKinds...)
}
