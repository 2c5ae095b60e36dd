package gce_test

import (
	"crypto/sha256"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/polyccm/polyccm/test/fakecloud/faults"
	fakegce "github.com/polyccm/polyccm/test/fakecloud/gce"
)

// routeNodes adds instances and their Nodes, which the driver's node
// lister must see before routes can name them.
func (e *env) routeNodes(prefix string, n int) []*v1.Node {
	e.t.Helper()
	nodes := e.nodes(prefix, n, testZone)
	e.addNodes(nodes...)
	return nodes
}

func route(node, cidr string) *cloudprovider.Route {
	return &cloudprovider.Route{TargetNode: types.NodeName(node), DestinationCIDR: cidr}
}

// nodeUID is a stand-in for the Node's UID, which the route controller
// passes as the name hint.
func nodeUID(node string) string {
	h := sha256.Sum256([]byte(node))
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

func (e *env) createRoute(r *cloudprovider.Route) error {
	return e.routes.CreateRoute(ctx(e.t), testCluster, nodeUID(string(r.TargetNode)), r)
}

func (e *env) listRoutes() []*cloudprovider.Route {
	e.t.Helper()
	rs, err := e.routes.ListRoutes(ctx(e.t), testCluster)
	if err != nil {
		e.t.Fatalf("ListRoutes: %v", err)
	}
	slices.SortFunc(rs, func(a, b *cloudprovider.Route) int { return strings.Compare(a.DestinationCIDR, b.DestinationCIDR) })
	return rs
}

// describe renders routes as node=cidr (+ blackhole).
func describe(rs []*cloudprovider.Route) []string {
	var out []string
	for _, r := range rs {
		s := string(r.TargetNode) + "=" + r.DestinationCIDR
		if r.Blackhole {
			s += " blackhole"
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

func (e *env) fakeRoutes() map[string]fakegce.Route {
	out := map[string]fakegce.Route{}
	for _, r := range e.fake.Routes() {
		out[r.Name] = r
	}
	return out
}

func TestRoutesLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withPolling())
	nodes := e.routeNodes("n", 2)
	if rs := e.listRoutes(); len(rs) != 0 {
		t.Fatalf("routes before any: %v", describe(rs))
	}
	for i, cidr := range []string{"10.4.0.0/24", "10.4.1.0/24"} {
		if err := e.createRoute(route(nodes[i].Name, cidr)); err != nil {
			t.Fatalf("CreateRoute: %v", err)
		}
	}
	in := e.fakeRoutes()
	if len(in) != 2 {
		t.Fatalf("fake has routes %v", in)
	}
	// cloud-provider-gcp's names and description (gce_routes.go
	// CreateRoute): the cluster name, "-", the Node's UID.
	for i := range 2 {
		r, ok := in[testCluster+"-"+nodeUID(nodes[i].Name)]
		if !ok {
			t.Fatalf("no route %s-%s among %v", testCluster, nodeUID(nodes[i].Name), slices.Collect(maps.Keys(in)))
		}
		if lastSeg(r.Network) != "default" || r.Priority != 1000 || r.Description != "k8s-node-route" {
			t.Errorf("route %+v", r)
		}
	}
	rs := e.listRoutes()
	if got, want := describe(rs), []string{"n-0=10.4.0.0/24", "n-1=10.4.1.0/24"}; !slices.Equal(got, want) {
		t.Fatalf("ListRoutes = %v, want %v", got, want)
	}
	for i, r := range rs {
		f, ok := in[r.Name]
		if !ok {
			t.Fatalf("ListRoutes names %s, which the fake does not have", r.Name)
		}
		if shortURL(f.NextHopInstance) != instancePaths(nodes[i : i+1])[0] || f.DestRange != r.DestinationCIDR {
			t.Errorf("route %s goes to %s for %s", r.Name, f.NextHopInstance, f.DestRange)
		}
	}

	// Creating a route that exists is done, not an error.
	if err := e.createRoute(route("n-0", "10.4.0.0/24")); err != nil {
		t.Errorf("CreateRoute again: %v", err)
	}
	if st := e.fake.Stats()["routes"]; st.Created != 2 || st.Live != 2 {
		t.Errorf("routes %+v, want 2", st)
	}

	// Delete what ListRoutes reported; again is a no-op.
	for range 2 {
		if err := e.routes.DeleteRoute(ctx(t), testCluster, rs[0]); err != nil {
			t.Fatalf("DeleteRoute: %v", err)
		}
	}
	if got, want := describe(e.listRoutes()), []string{"n-1=10.4.1.0/24"}; !slices.Equal(got, want) {
		t.Errorf("ListRoutes after delete = %v, want %v", got, want)
	}
	if _, ok := e.fakeRoutes()[rs[0].Name]; ok {
		t.Error("deleted route is still in the fake")
	}
}

// TestRoutesOfOthersAreLeftAlone: another cluster's routes (even one whose
// name starts with this cluster's), upstream-looking routes with another
// description, and the user's own are neither listed nor deleted.
func TestRoutesOfOthersAreLeftAlone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := newEnv(t, withFake(e.fake), withCluster(testCluster+"-2"))
	mine := e.routeNodes("n", 1)
	theirs := other.routeNodes("o", 1)
	// Both clusters also know a shared node name for the same CIDR.
	shared := e.instance("shared", testZone)
	e.addNodes(node("shared", providerID(shared)))
	other.addNodes(node("shared", providerID(shared)))
	if err := e.createRoute(route(mine[0].Name, "10.4.0.0/24")); err != nil {
		t.Fatal(err)
	}
	if err := e.createRoute(route("shared", "10.4.9.0/24")); err != nil {
		t.Fatal(err)
	}
	if err := other.createRoute(route(theirs[0].Name, "10.8.0.0/24")); err != nil {
		t.Fatal(err)
	}
	if err := other.createRoute(route("shared", "10.4.9.0/24")); err != nil {
		t.Fatal(err)
	}
	// A route the user made.
	rc, err := compute.NewRoutesRESTClient(ctx(t), e.userClient()...)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	user := "user-route"
	op, err := rc.Insert(ctx(t), &computepb.InsertRouteRequest{Project: testProject, RouteResource: &computepb.Route{
		Name: &user, Network: ptr("global/networks/default"), DestRange: ptr("192.168.0.0/16"),
		NextHopInstance: ptr(instancePath(testZone, mine[0].Name))}})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Wait(ctx(t)); err != nil {
		t.Fatal(err)
	}

	if got, want := describe(e.listRoutes()), []string{"n-0=10.4.0.0/24", "shared=10.4.9.0/24"}; !slices.Equal(got, want) {
		t.Errorf("this cluster lists %v, want %v", got, want)
	}
	theirRoutes := other.listRoutes()
	if got, want := describe(theirRoutes), []string{"o-0=10.8.0.0/24", "shared=10.4.9.0/24"}; !slices.Equal(got, want) {
		t.Errorf("the other cluster lists %v, want %v", got, want)
	}
	// Asked to delete routes that are not its own, the driver refuses.
	for _, r := range append(theirRoutes, &cloudprovider.Route{Name: user, TargetNode: "n-0", DestinationCIDR: "192.168.0.0/16"}) {
		err := e.routes.DeleteRoute(ctx(t), testCluster, r)
		if err == nil || !strings.Contains(err.Error(), "not this cluster's") {
			t.Errorf("DeleteRoute(%s) = %v, want a refusal", r.Name, err)
		}
	}
	if n := len(e.fake.Routes()); n != 5 {
		t.Errorf("%d routes left, want all 5", n)
	}
	// Deleting all of this cluster's routes leaves the others'.
	for _, r := range e.listRoutes() {
		if err := e.routes.DeleteRoute(ctx(t), testCluster, r); err != nil {
			t.Fatal(err)
		}
	}
	left := e.fakeRoutes()
	if _, ok := left[user]; !ok || len(left) != 3 {
		t.Errorf("routes left: %v, want the user's and the other cluster's", left)
	}
	if got := describe(other.listRoutes()); len(got) != 2 {
		t.Errorf("the other cluster lists %v", got)
	}
}

// TestStaleRoutes: a route whose instance is gone is a blackhole, and one
// whose Node is gone names no Node; the route controller deletes both.
func TestStaleRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := e.routeNodes("n", 3)
	for i, cidr := range []string{"10.4.0.0/24", "10.4.1.0/24", "10.4.2.0/24"} {
		if err := e.createRoute(route(nodes[i].Name, cidr)); err != nil {
			t.Fatal(err)
		}
	}
	e.fake.RemoveInstance(testZone, "n-0")
	e.deleteNode("n-1")
	rs := e.listRoutes()
	if len(rs) != 3 {
		t.Fatalf("ListRoutes = %v", describe(rs))
	}
	if !rs[0].Blackhole || rs[1].Blackhole || rs[2].Blackhole {
		t.Errorf("blackholes %v, want only the route to the deleted instance", describe(rs))
	}
	if string(rs[1].TargetNode) == "n-1" || !strings.HasSuffix(string(rs[1].TargetNode), "/instances/n-1") {
		t.Errorf("route of a deleted Node targets %q, want its instance", rs[1].TargetNode)
	}
	if rs[2].TargetNode != "n-2" {
		t.Errorf("route of n-2 targets %q", rs[2].TargetNode)
	}
	for _, r := range rs[:2] {
		if err := e.routes.DeleteRoute(ctx(t), testCluster, r); err != nil {
			t.Errorf("DeleteRoute(%s): %v", r.Name, err)
		}
	}
	if got, want := describe(e.listRoutes()), []string{"n-2=10.4.2.0/24"}; !slices.Equal(got, want) {
		t.Errorf("ListRoutes = %v, want %v", got, want)
	}
}

func TestCreateRouteWithoutInstance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.routeNodes("n", 1)
	e.addNodes(node("uninitialized", ""))
	for _, name := range []string{"uninitialized", "unknown"} {
		err := e.createRoute(route(name, "10.4.0.0/24"))
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("CreateRoute(%s) = %v, want an error naming the node", name, err)
		}
	}
	if n := len(e.fake.Routes()); n != 0 {
		t.Errorf("%d routes created", n)
	}
}

func TestRouteFailures(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := e.routeNodes("n", 1)

	e.fake.FailOperations(1, fakegce.OperationFailure{Match: "routes.insert", Code: "QUOTA_EXCEEDED", Message: "Quota 'ROUTES' exceeded."})
	if err := e.createRoute(route(nodes[0].Name, "10.4.0.0/24")); err == nil || !strings.Contains(err.Error(), "QUOTA_EXCEEDED") {
		t.Errorf("CreateRoute with a failed operation = %v", err)
	}
	if n := len(e.fake.Routes()); n != 0 {
		t.Fatalf("%d routes after a failed insert", n)
	}
	if err := e.createRoute(route(nodes[0].Name, "10.4.0.0/24")); err != nil {
		t.Fatal(err)
	}
	rs := e.listRoutes()

	id := e.fake.Faults().AddRule(faults.Rule{Match: epRouteDelete, Status: 500})
	if err := e.routes.DeleteRoute(ctx(t), testCluster, rs[0]); err == nil {
		t.Error("DeleteRoute reported success through 500s")
	}
	e.fake.Faults().RemoveRule(id)
	e.fake.FailOperations(1, fakegce.OperationFailure{Match: "routes.delete", Code: "RESOURCE_NOT_READY"})
	if err := e.routes.DeleteRoute(ctx(t), testCluster, rs[0]); err == nil {
		t.Error("DeleteRoute reported success for a failed operation")
	}
	if n := len(e.fake.Routes()); n != 1 {
		t.Errorf("%d routes, want the one that could not be deleted", n)
	}

	e.fake.Faults().AddRule(faults.Rule{Match: epRoutesList, Status: 503})
	if _, err := e.routes.ListRoutes(ctx(t), testCluster); err == nil {
		t.Error("ListRoutes succeeded through 503s")
	}
}

func ptr[T any](v T) *T { return &v }

// TestUpstreamRoutesAreKept: routes cloud-provider-gcp made (its name,
// description and fields, gce_routes.go CreateRoute) are this cluster's
// on a switch: listed, never made twice. Ones only named alike are not.
func TestUpstreamRoutesAreKept(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := e.routeNodes("n", 1)
	rc, err := compute.NewRoutesRESTClient(ctx(t), e.userClient()...)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	insert := func(name, desc, cidr string) {
		t.Helper()
		op, err := rc.Insert(ctx(t), &computepb.InsertRouteRequest{Project: testProject, RouteResource: &computepb.Route{
			Name: &name, Network: ptr("global/networks/default"), DestRange: &cidr, Priority: ptr(uint32(1000)),
			NextHopInstance: ptr(instancePath(testZone, nodes[0].Name)), Description: &desc}})
		if err != nil {
			t.Fatal(err)
		}
		if err := op.Wait(ctx(t)); err != nil {
			t.Fatal(err)
		}
	}
	upstream := testCluster + "-" + nodeUID(nodes[0].Name)
	insert(upstream, "k8s-node-route", "10.4.0.0/24")
	insert(testCluster+"-"+nodeUID("someone"), "a route of the user's", "10.9.0.0/24")
	insert(testCluster+"-static", "k8s-node-route", "10.9.1.0/24")

	rs := e.listRoutes()
	if got, want := describe(rs), []string{"n-0=10.4.0.0/24"}; !slices.Equal(got, want) || rs[0].Name != upstream {
		t.Fatalf("ListRoutes = %v (%v), want upstream's route %s only", got, rs, upstream)
	}
	before := e.fake.Stats()["routes"].Created
	if err := e.createRoute(route(nodes[0].Name, "10.4.0.0/24")); err != nil {
		t.Fatal(err)
	}
	if n := e.fake.Stats()["routes"].Created - before; n != 0 {
		t.Errorf("%d routes created beside upstream's", n)
	}
}
