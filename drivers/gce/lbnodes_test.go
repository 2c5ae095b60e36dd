package gce_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/polyccm/polyccm/core/loadbalancers"
	"github.com/polyccm/polyccm/drivers/gce"
	fakegce "github.com/polyccm/polyccm/test/fakecloud/gce"
)

// Endpoints the node-only sync uses, or must not.
const (
	epTPGet        = "GET /compute/v1/projects/{project}/regions/{region}/targetPools/{targetPool}"
	epBSGet        = "GET /compute/v1/projects/{project}/regions/{region}/backendServices/{backendService}"
	epBSUpdate     = "PUT /compute/v1/projects/{project}/regions/{region}/backendServices/{backendService}"
	epFWGet        = "GET /compute/v1/projects/{project}/global/firewalls/{firewall}"
	epFWUpdate     = "PUT /compute/v1/projects/{project}/global/firewalls/{firewall}"
	epIGList       = "POST /compute/v1/projects/{project}/zones/{zone}/instanceGroups/{instanceGroup}/listInstances"
	epIGAdd        = "POST /compute/v1/projects/{project}/zones/{zone}/instanceGroups/{instanceGroup}/addInstances"
	epIGRemove     = "POST /compute/v1/projects/{project}/zones/{zone}/instanceGroups/{instanceGroup}/removeInstances"
	epRegionOpWait = "POST /compute/v1/projects/{project}/regions/{region}/operations/{operation}/wait"
)

// counter counts the fake's calls from the moment it is taken.
type counter struct {
	e      *env
	before map[string]int
}

func (e *env) count() counter { return counter{e: e, before: e.fake.Faults().Calls()} }

// of is the calls on endpoint since; all of them for "".
func (c counter) of(endpoint string) int {
	n := 0
	for ep, v := range c.e.fake.Faults().Calls() {
		if endpoint == "" || ep == endpoint {
			n += v - c.before[ep]
		}
	}
	return n
}

func (c counter) String() string {
	var out []string
	for ep, v := range c.e.fake.Faults().Calls() {
		if d := v - c.before[ep]; d > 0 {
			out = append(out, fmt.Sprintf("%d %s", d, ep))
		}
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// serviceN is a LoadBalancer Service with its own UID (and so its own
// load balancer name).
func serviceN(i int, ann map[string]string) *v1.Service {
	s := service(ann)
	s.Name = fmt.Sprintf("svc-%d", i)
	s.UID = types.UID(fmt.Sprintf("%x0000000-1d2c-4e5f-8a9b-7c6d5e4f3a2b", i+1))
	return s
}

func (e *env) update(svc *v1.Service, nodes []*v1.Node) {
	e.t.Helper()
	if err := e.lb.UpdateLoadBalancer(ctx(e.t), "kubernetes", svc, nodes); err != nil {
		e.t.Fatalf("UpdateLoadBalancer: %v", err)
	}
}

// TestNodeOnlySyncExternal: a node change on an external load balancer
// reads the target pool once and adds and removes only the difference,
// each operation awaited with one operations.wait; the full sync it
// replaces read the rule, address, health check, pool and both firewall
// rules first (10 calls for the same change).
func TestNodeOnlySyncExternal(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withPolling()) // operations RUNNING: each is awaited
	all := e.nodes("n", 8, testZone)
	svc := service(nil)
	e.mustEnsure(svc, all[:4])

	// A driver with no full sync of the Service runs the full sync: the
	// cost before the node-only sync.
	restarted := newEnv(t, withFake(e.fake))
	c := e.count()
	restarted.update(svc, all[1:5])
	full := c.of("")
	restarted.checkExternal(svc, all[1:5])
	if full < 9 || c.of(epFRGet) != 1 {
		t.Errorf("the full sync took %d calls (%d rule reads), want the whole observe step: %s", full, c.of(epFRGet), c)
	}

	// Two leave, two join: one read, one addInstance and one
	// removeInstance, each with one wait.
	c = e.count()
	restarted.update(svc, all[3:7])
	restarted.checkExternal(svc, all[3:7])
	if n := c.of(""); n > 5 || c.of(epTPGet) != 1 || c.of(epTPAdd) != 1 || c.of(epTPRemove) != 1 || c.of(epRegionOpWait) != 2 {
		t.Errorf("node-only sync took %d calls, want 5 (full sync: %d): %s", n, full, c)
	}
	if c.of(epFRGet)+c.of(epFWGet) != 0 {
		t.Errorf("node-only sync read the rule or firewalls: %s", c)
	}
	t.Logf("external node change: %d calls with the full sync, %d node-only", full, c.of(""))

	// Only joins: 3 calls. Unchanged nodes: the one read.
	c = e.count()
	restarted.update(svc, all[3:8])
	if n := c.of(""); n != 3 || c.of(epTPAdd) != 1 {
		t.Errorf("a join took %d calls, want 3: %s", n, c)
	}
	c = e.count()
	restarted.update(svc, all[3:8])
	if n := c.of(""); n != 1 {
		t.Errorf("an unchanged node set took %d calls, want 1: %s", n, c)
	}
	restarted.checkExternal(svc, all[3:8])

	// The full sync finds nothing to change.
	before := e.mutations()
	restarted.mustEnsure(svc, all[3:8])
	if d := e.mutations() - before; d != 0 {
		t.Errorf("the full sync after node-only syncs made %d changes: %v", d, e.fake.Faults().Calls())
	}
}

// TestNodeOnlySyncFallsBack: whatever the node-only sync cannot decide
// from its one read runs the full sync, whose result it would have been.
func TestNodeOnlySyncFallsBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	all := e.nodes("n", 6, testZone)
	svc := service(nil)
	e.mustEnsure(svc, all[:2])
	base := e.lbName(svc)

	// The Service changed: the full sync applies that with the nodes.
	svc.Spec.LoadBalancerSourceRanges = []string{"198.51.100.0/24"}
	c := e.count()
	e.update(svc, all[:3])
	if c.of(epFRGet) != 1 || c.of(epFWUpdate) != 1 {
		t.Errorf("a changed Service did not run the full sync: %s", c)
	}
	if fw := e.firewall("k8s-fw-" + base); !slices.Equal(fw.SourceRanges, []string{"198.51.100.0/24"}) {
		t.Errorf("firewall sources %v", fw.SourceRanges)
	}
	e.checkExternal(svc, all[:3])

	// Drift the pool read shows: its health check detached by hand.
	cx := ctx(t)
	pools, err := compute.NewTargetPoolsRESTClient(cx, e.userClient()...)
	if err != nil {
		t.Fatal(err)
	}
	defer pools.Close()
	hc := "projects/" + testProject + "/global/httpHealthChecks/" + testNodesHC
	op, err := pools.RemoveHealthCheck(cx, &computepb.RemoveHealthCheckTargetPoolRequest{Project: testProject, Region: testRegion, TargetPool: base,
		TargetPoolsRemoveHealthCheckRequestResource: &computepb.TargetPoolsRemoveHealthCheckRequest{HealthChecks: []*computepb.HealthCheckReference{{HealthCheck: &hc}}}})
	if err == nil {
		err = op.Wait(cx)
	}
	if err != nil {
		t.Fatal(err)
	}
	c = e.count()
	e.update(svc, all[:4])
	if c.of(epFRGet) != 1 {
		t.Errorf("drift did not run the full sync: %s", c)
	}
	e.checkExternal(svc, all[:4]) // the health check is back

	// Deleted behind polyccm's back: the pool read finds nothing, and
	// the full sync makes nothing under a node sync.
	fr := e.forwardingRule(base)
	rules, err := compute.NewForwardingRulesRESTClient(cx, e.userClient()...)
	if err != nil {
		t.Fatal(err)
	}
	defer rules.Close()
	if op, err = rules.Delete(cx, &computepb.DeleteForwardingRuleRequest{Project: testProject, Region: testRegion, ForwardingRule: fr.Name}); err == nil {
		err = op.Wait(cx)
	}
	if err == nil {
		if op, err = pools.Delete(cx, &computepb.DeleteTargetPoolRequest{Project: testProject, Region: testRegion, TargetPool: base}); err == nil {
			err = op.Wait(cx)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	stats := e.fake.Stats()
	e.update(svc, all[:5])
	for _, kind := range []string{"targetPools", "forwardingRules"} {
		if got := e.fake.Stats()[kind]; got.Created != stats[kind].Created || got.Live != 0 {
			t.Errorf("%s %+v: a node sync made it again", kind, got)
		}
	}

	// Deleted by the Service's own deletion: nothing is made either.
	e.mustEnsure(svc, all[:2])
	e.mustDelete(svc)
	e.update(svc, all[:5])
	if live := e.live(); len(live) != 0 {
		t.Errorf("a node sync after the deletion made %v", live)
	}
}

// TestNodeOnlySyncNewTagFallsBack: without drivers.gce.nodeTags, a node
// whose network tag is new changes the firewall rules' targets, which is
// the full sync's to do.
func TestNodeOnlySyncNewTagFallsBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(func(c *gce.Config) { c.NodeTags = nil }))
	var nodes []*v1.Node
	for _, n := range []struct{ name, tag string }{{"pool-a-0", "pool-a"}, {"pool-a-1", "pool-a"}, {"pool-b-0", "pool-b"}} {
		in := e.fake.AddInstance(fakegce.Instance{Name: n.name, Zone: testZone, MachineType: "e2-standard-4", Tags: []string{n.tag}})
		nodes = append(nodes, node(in.Name, providerID(in)))
	}
	svc := service(nil)
	e.mustEnsure(svc, nodes[:1])
	c := e.count()
	e.update(svc, nodes[:2]) // same tag: node-only
	if c.of(epFRGet) != 0 {
		t.Errorf("a node of a known tag ran the full sync: %s", c)
	}
	c = e.count()
	e.update(svc, nodes)
	if c.of(epFRGet) != 1 {
		t.Errorf("a node of a new tag did not run the full sync: %s", c)
	}
	if fw := e.firewall("k8s-fw-" + e.lbName(svc)); !slices.Equal(sorted(fw.TargetTags), []string{"pool-a", "pool-b"}) {
		t.Errorf("firewall targets %v", fw.TargetTags)
	}
	e.checkExternal(svc, nodes)
}

// TestNodeOnlySyncDryRun: a dry run (polyccm plan) stops before the
// node-only sync's change, and its EnsureLoadBalancer neither leaves nor
// drops a base.
func TestNodeOnlySyncDryRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	all := e.nodes("n", 3, testZone)
	svc := service(nil)
	e.mustEnsure(svc, all[:2])

	dctx, dry := loadbalancers.WithDryRun(ctx(t))
	before := e.mutations()
	if err := e.lb.UpdateLoadBalancer(dctx, "kubernetes", svc, all); !errors.Is(err, loadbalancers.ErrPlanned) {
		t.Fatalf("UpdateLoadBalancer under a dry run: %v, want ErrPlanned", err)
	}
	if d := e.mutations() - before; d != 0 {
		t.Errorf("a dry run made %d changes", d)
	}
	if ch := dry.Changes(); len(ch) != 1 || ch[0].Kind != "target pool" || ch[0].Action != loadbalancers.Update {
		t.Errorf("dry run recorded %v, want the pool's update", ch)
	}
	e.checkExternal(svc, all[:2])

	// EnsureLoadBalancer, all polyccm plan calls, plans its full sync.
	dctx, dry = loadbalancers.WithDryRun(ctx(t))
	if _, err := e.lb.EnsureLoadBalancer(dctx, "kubernetes", svc, all); !errors.Is(err, loadbalancers.ErrPlanned) || len(dry.Changes()) != 1 {
		t.Fatalf("EnsureLoadBalancer under a dry run: %v, %v", err, dry.Changes())
	}
	if d := e.mutations() - before; d != 0 {
		t.Errorf("a dry run made %d changes", d)
	}
	// ...and the base is still there.
	c := e.count()
	e.update(svc, all)
	if c.of(epFRGet) != 0 {
		t.Errorf("a dry run dropped the base: %s", c)
	}
	e.checkExternal(svc, all)

	// A dry run's full sync that finds nothing to change leaves no base.
	restarted := newEnv(t, withFake(e.fake))
	dctx, _ = loadbalancers.WithDryRun(ctx(t))
	if _, err := restarted.lb.EnsureLoadBalancer(dctx, "kubernetes", svc, all); err != nil {
		t.Fatalf("EnsureLoadBalancer under a dry run with nothing to change: %v", err)
	}
	c = e.count()
	restarted.update(svc, all[1:])
	if c.of(epFRGet) != 1 {
		t.Errorf("a dry run's sync served as a base: %s", c)
	}
	e.checkExternal(svc, all[1:])
}

// TestNodeOnlySyncInternal: internal load balancers share the cluster's
// instance groups, so after a node change the first Service's node-only
// sync brings the groups to the new nodes (one listing per zone, one
// change each way) and the others find them so without a call; each
// Service reads only its backend service.
func TestNodeOnlySyncInternal(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withPolling())
	a := e.nodes("a", 4, testZone)
	b := e.nodes("b", 4, testZone2)
	var svcs []*v1.Service
	for i := range 3 {
		svcs = append(svcs, serviceN(i, internalLB))
	}
	first := append(slices.Clone(a[:2]), b[:2]...)
	for _, s := range svcs {
		e.mustEnsure(s, first)
	}

	// A driver with no full sync of the Services runs full syncs, each
	// reading the groups again: the cost before the node-only sync.
	restarted := newEnv(t, withFake(e.fake))
	mid := append(slices.Clone(a[:3]), b[:3]...)
	c := e.count()
	for _, s := range svcs {
		restarted.update(s, mid)
	}
	full := c.of("")
	if c.of(epIGList) != 6 || c.of(epFRGet) != 3 {
		t.Errorf("full syncs: %s; want every Service to read the rule and the groups", c)
	}

	// In each zone one leaves and one joins.
	e = restarted
	next := append(slices.Clone(a[1:]), b[1:]...)
	c = e.count()
	for _, s := range svcs {
		e.update(s, next)
	}
	if c.of(epBSGet) != 3 || c.of(epIGList) != 2 || c.of(epIGAdd) != 2 || c.of(epIGRemove) != 2 || c.of(epFRGet) != 0 {
		t.Errorf("node change: %s; want 3 backend service reads, the groups read and changed once per zone", c)
	}
	if n := c.of(""); n > 3+2*5 {
		t.Errorf("%d calls for 3 internal load balancers over 2 zones, want at most 13: %s", n, c)
	}
	t.Logf("internal node change, 3 Services over 2 zones: %d calls with full syncs, %d node-only", full, c.of(""))
	for _, s := range svcs {
		e.checkInternal(s, next)
	}
	before := e.mutations()
	for _, s := range svcs {
		e.mustEnsure(s, next)
	}
	if d := e.mutations() - before; d != 0 {
		t.Errorf("full syncs after the node-only ones made %d changes: %v", d, e.fake.Faults().Calls())
	}

	// A zone losing its last node changes the backend services: the
	// full sync's.
	c = e.count()
	for _, s := range svcs {
		e.update(s, a)
	}
	if c.of(epBSUpdate) != 3 {
		t.Errorf("a zone gone: %s; want each backend service updated", c)
	}
	for _, s := range svcs {
		e.checkInternal(s, a)
	}
}

// TestNodeOnlySyncInternalAfterStaleFullSync: a full sync that changes
// the groups (here one with an older node list) makes the node-only syncs
// read them again instead of trusting what they made before.
func TestNodeOnlySyncInternalAfterStaleFullSync(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := e.nodes("n", 4, testZone)
	one, two := serviceN(0, internalLB), serviceN(1, internalLB)
	older, newer := nodes[:2], nodes[1:]
	e.mustEnsure(one, older)
	e.mustEnsure(two, older)
	e.update(one, newer)
	e.update(two, newer)
	e.checkInternal(two, newer)

	e.mustEnsure(two, older) // the groups go back to the older nodes
	e.checkInternal(two, older)
	c := e.count()
	e.update(one, newer)
	if c.of(epIGList) != 1 {
		t.Errorf("the node-only sync trusted groups a full sync changed: %s", c)
	}
	e.checkInternal(one, newer)

	// Under a dry run the groups are read, not changed, and not taken as
	// made.
	e.mustEnsure(two, older)
	dctx, _ := loadbalancers.WithDryRun(context.Background())
	if err := e.lb.UpdateLoadBalancer(dctx, "kubernetes", one, newer); !errors.Is(err, loadbalancers.ErrPlanned) {
		t.Fatalf("UpdateLoadBalancer under a dry run: %v", err)
	}
	e.checkInternal(one, older)
	e.update(two, newer)
	e.checkInternal(one, newer)
}

// TestNodeOnlySyncInternalConcurrent: the service controller syncs
// Services in parallel; the groups are still read and changed once, and
// end up exact.
func TestNodeOnlySyncInternalConcurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withPolling())
	a := e.nodes("a", 5, testZone)
	b := e.nodes("b", 5, testZone2)
	var svcs []*v1.Service
	for i := range 8 {
		svcs = append(svcs, serviceN(i, internalLB))
	}
	first := append(slices.Clone(a[:3]), b[:3]...)
	for _, s := range svcs {
		e.mustEnsure(s, first)
	}
	next := append(slices.Clone(a[2:]), b[2:]...)
	c := e.count()
	var wg sync.WaitGroup
	errs := make([]error, len(svcs))
	for i, s := range svcs {
		wg.Go(func() { errs[i] = e.lb.UpdateLoadBalancer(ctx(t), "kubernetes", s, next) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if c.of(epIGList) != 2 || c.of(epIGAdd) != 2 || c.of(epIGRemove) != 2 || c.of(epBSGet) != len(svcs) {
		t.Errorf("parallel node syncs: %s; want the groups read and changed once per zone", c)
	}
	for _, s := range svcs {
		e.checkInternal(s, next)
	}
}
