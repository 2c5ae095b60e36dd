package aws_test

import (
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/polyccm/polyccm/core/cloudapi"
	awsccm "github.com/polyccm/polyccm/drivers/aws"
	fakeaws "github.com/polyccm/polyccm/test/fakecloud/aws"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

// routeEnv is a driver with two Nodes (instances in zones a and b) and,
// besides the cluster's tagged route table, the VPC's untagged main table
// and another cluster's table routing a pod CIDR to an instance.
type routeEnv struct {
	*env
	a, b   fakeaws.Instance
	na, nb *v1.Node
	other  fakeaws.RouteTable
	// foreign is the instance the other cluster routes 10.244.1.0/24 to.
	foreign fakeaws.Instance
}

func newRouteEnv(t *testing.T, opts ...worldOpt) *routeEnv {
	t.Helper()
	r := &routeEnv{env: newEnv(t, opts...)}
	r.a, r.b = r.instance(zoneA), r.instance(zoneB)
	r.na, r.nb = node(r.a, nil), node(r.b, nil)
	r.addNode(r.na)
	r.addNode(r.nb)
	r.foreign = r.instance(zoneA)
	r.other = r.fake.AddRouteTable(fakeaws.RouteTable{
		VPCID:  r.vpc.ID,
		Tags:   map[string]string{awsccm.TagClusterPrefix + "other": awsccm.TagOwned},
		Routes: []fakeaws.Route{{DestinationCIDRBlock: "10.244.1.0/24", InstanceID: r.foreign.ID}},
	})
	return r
}

func (r *routeEnv) table(id string) fakeaws.RouteTable {
	r.t.Helper()
	rt, ok := r.fake.RouteTable(id)
	if !ok {
		r.t.Fatalf("no route table %s", id)
	}
	return rt
}

// instanceRoutes maps destination -> instance of the table's routes to
// instances, with "(blackhole)" appended to blackholes.
func instanceRoutes(rt fakeaws.RouteTable) map[string]string {
	out := map[string]string{}
	for _, r := range rt.Routes {
		if r.InstanceID == "" {
			continue
		}
		v := r.InstanceID
		if r.State == "blackhole" {
			v += " (blackhole)"
		}
		out[r.DestinationCIDRBlock+r.DestinationIPv6CIDRBlock] = v
	}
	return out
}

// untouched snapshots every table but the cluster's, to compare later.
func (r *routeEnv) untouched() map[string]fakeaws.RouteTable {
	out := map[string]fakeaws.RouteTable{}
	for _, rt := range r.fake.RouteTables() {
		if rt.ID != r.world.table.ID {
			out[rt.ID] = rt
		}
	}
	return out
}

func (r *routeEnv) create(n *v1.Node, cidr string) {
	r.t.Helper()
	err := r.routes.CreateRoute(ctx(r.t), cluster, "hint", &cloudprovider.Route{TargetNode: types.NodeName(n.Name), DestinationCIDR: cidr})
	if err != nil {
		r.t.Fatalf("CreateRoute %s -> %s: %v", cidr, n.Name, err)
	}
}

func (r *routeEnv) list() map[string]cloudprovider.Route {
	r.t.Helper()
	rs, err := r.routes.ListRoutes(ctx(r.t), cluster)
	if err != nil {
		r.t.Fatalf("ListRoutes: %v", err)
	}
	out := map[string]cloudprovider.Route{}
	for _, x := range rs {
		if _, dup := out[x.DestinationCIDR]; dup {
			r.t.Errorf("ListRoutes reports %s twice", x.DestinationCIDR)
		}
		out[x.DestinationCIDR] = *x
	}
	return out
}

// Pod CIDRs, IPv4 and IPv6, go into the cluster's table only, pointing at
// the Nodes' instances, whose source/destination check goes off.
func TestCreateRoutes(t *testing.T) {
	r := newRouteEnv(t)
	before := r.untouched()
	r.create(r.na, "10.244.1.0/24")
	r.create(r.na, "fd00:10:244:1::/64")
	r.create(r.nb, "10.244.2.0/24")

	want := map[string]string{"10.244.1.0/24": r.a.ID, "fd00:10:244:1::/64": r.a.ID, "10.244.2.0/24": r.b.ID}
	if got := instanceRoutes(r.table(r.world.table.ID)); !reflect.DeepEqual(got, want) {
		t.Errorf("cluster table routes %v, want %v", got, want)
	}
	for _, rt := range r.table(r.world.table.ID).Routes {
		if rt.DestinationIPv6CIDRBlock == "fd00:10:244:1::/64" && rt.DestinationCIDRBlock != "" {
			t.Errorf("IPv6 route with an IPv4 destination: %+v", rt)
		}
	}
	if after := r.untouched(); !reflect.DeepEqual(after, before) {
		t.Errorf("other tables changed:\nbefore %+v\nafter  %+v", before, after)
	}
	for _, in := range []fakeaws.Instance{r.a, r.b} {
		got, _ := r.fake.Instance(in.ID)
		if got.SourceDestCheck {
			t.Errorf("%s: source/destination check still on", in.ID)
		}
	}

	routes := r.list()
	wantList := map[string]types.NodeName{"10.244.1.0/24": types.NodeName(r.na.Name), "fd00:10:244:1::/64": types.NodeName(r.na.Name), "10.244.2.0/24": types.NodeName(r.nb.Name)}
	if len(routes) != len(wantList) {
		t.Errorf("ListRoutes = %v, want %v (not the other cluster's)", routes, wantList)
	}
	for cidr, n := range wantList {
		if got := routes[cidr]; got.TargetNode != n || got.Blackhole {
			t.Errorf("route %s = %+v, want to %s", cidr, got, n)
		}
	}

	// Creating again changes nothing.
	mut := r.calls("ec2 CreateRoute") + r.calls("ec2 ReplaceRoute")
	r.create(r.na, "10.244.1.0/24")
	r.create(r.na, "fd00:10:244:1::/64")
	if n := r.calls("ec2 CreateRoute") + r.calls("ec2 ReplaceRoute"); n != mut {
		t.Errorf("creating existing routes made %d more route calls", n-mut)
	}

	// Deleting what ListRoutes reported takes it from the cluster's table
	// only.
	for _, cidr := range []string{"10.244.1.0/24", "fd00:10:244:1::/64"} {
		rt := routes[cidr]
		if err := r.routes.DeleteRoute(ctx(t), cluster, &rt); err != nil {
			t.Fatalf("DeleteRoute %s: %v", cidr, err)
		}
	}
	if got := instanceRoutes(r.table(r.world.table.ID)); !reflect.DeepEqual(got, map[string]string{"10.244.2.0/24": r.b.ID}) {
		t.Errorf("after deletion: %v", got)
	}
	if after := r.untouched(); !reflect.DeepEqual(after, before) {
		t.Errorf("deleting changed other tables:\nbefore %+v\nafter  %+v", before, after)
	}
}

// staleEnv has the cluster's table made with routes already in it: a
// Node's pod CIDR to its instance (a), one to Node b's instance, which is
// then terminated (a blackhole), one to an instance no Node has, one to a
// terminated and vanished instance, and one to an internet gateway.
func newStaleEnv(t *testing.T) (*routeEnv, fakeaws.Instance) {
	t.Helper()
	r := newRouteEnv(t, withoutRouteTable)
	stale := r.instance(zoneA)
	gone := r.instance(zoneB)
	r.world.table = r.fake.AddRouteTable(fakeaws.RouteTable{
		VPCID: r.vpc.ID,
		Tags:  map[string]string{clusterTag: awsccm.TagOwned},
		Routes: []fakeaws.Route{
			{DestinationCIDRBlock: "10.244.3.0/24", InstanceID: r.a.ID},
			{DestinationIPv6CIDRBlock: "fd00:10:244:4::/64", InstanceID: r.b.ID},
			{DestinationCIDRBlock: "10.244.7.0/24", InstanceID: stale.ID},
			{DestinationCIDRBlock: "10.244.8.0/24", InstanceID: gone.ID},
			{DestinationCIDRBlock: "10.244.9.0/24", GatewayID: "igw-0123456789abcdef0"},
		},
	})
	if err := r.fake.SetInstanceState(r.b.ID, fakeaws.InstanceStateTerminated); err != nil {
		t.Fatal(err)
	}
	if err := r.fake.SetInstanceState(gone.ID, fakeaws.InstanceStateTerminated); err != nil {
		t.Fatal(err)
	}
	r.fake.RemoveInstance(gone.ID)
	return r, stale
}

// Routes to instances no Node has, and blackholes, are reported so the
// route controller deletes them, and deleting them works; routes to
// gateways are neither reported nor touched, nor are other tables.
func TestStaleRoutes(t *testing.T) {
	r, stale := newStaleEnv(t)
	before := r.untouched()
	routes := r.list()
	want := map[string]cloudprovider.Route{
		"10.244.3.0/24":      {Name: r.a.ID + "/10.244.3.0/24", TargetNode: types.NodeName(r.na.Name), DestinationCIDR: "10.244.3.0/24"},
		"fd00:10:244:4::/64": {Name: r.b.ID + "/fd00:10:244:4::/64", TargetNode: types.NodeName(r.nb.Name), DestinationCIDR: "fd00:10:244:4::/64", Blackhole: true},
		"10.244.7.0/24":      {Name: stale.ID + "/10.244.7.0/24", TargetNode: types.NodeName(stale.ID), DestinationCIDR: "10.244.7.0/24"},
	}
	gone := routes["10.244.8.0/24"]
	if !gone.Blackhole || !strings.HasPrefix(string(gone.TargetNode), "i-") {
		t.Errorf("route to the vanished instance = %+v, want a blackhole to its instance", gone)
	}
	delete(routes, "10.244.8.0/24")
	if !reflect.DeepEqual(routes, want) {
		t.Errorf("ListRoutes\n got %+v\nwant %+v", routes, want)
	}

	for _, cidr := range []string{"fd00:10:244:4::/64", "10.244.7.0/24"} {
		rt := want[cidr]
		if err := r.routes.DeleteRoute(ctx(t), cluster, &rt); err != nil {
			t.Fatalf("DeleteRoute %s: %v", cidr, err)
		}
	}
	if err := r.routes.DeleteRoute(ctx(t), cluster, &gone); err != nil {
		t.Fatalf("DeleteRoute %s: %v", gone.DestinationCIDR, err)
	}
	// Deleting again is fine.
	if err := r.routes.DeleteRoute(ctx(t), cluster, &gone); err != nil {
		t.Fatalf("DeleteRoute %s again: %v", gone.DestinationCIDR, err)
	}
	left := map[string]string{}
	for _, rt := range r.table(r.world.table.ID).Routes {
		if rt.GatewayID != "local" {
			left[rt.DestinationCIDRBlock+rt.DestinationIPv6CIDRBlock] = rt.InstanceID + rt.GatewayID
		}
	}
	if wantLeft := map[string]string{"10.244.3.0/24": r.a.ID, "10.244.9.0/24": "igw-0123456789abcdef0"}; !reflect.DeepEqual(left, wantLeft) {
		t.Errorf("left in the cluster's table: %v, want %v", left, wantLeft)
	}
	if after := r.untouched(); !reflect.DeepEqual(after, before) {
		t.Errorf("other tables changed:\nbefore %+v\nafter  %+v", before, after)
	}
}

// A pod CIDR that moved to another Node is repointed; deleting it as
// listed before the move leaves the new route alone.
func TestRouteRepointed(t *testing.T) {
	r, _ := newStaleEnv(t)
	old := r.list()["10.244.3.0/24"]
	// Node b's instance is terminated in this world: use a fresh Node.
	in := r.instance(zoneB)
	n := node(in, nil)
	r.addNode(n)
	r.create(n, "10.244.3.0/24")
	if got := instanceRoutes(r.table(r.world.table.ID))["10.244.3.0/24"]; got != in.ID {
		t.Fatalf("route now to %q, want %s", got, in.ID)
	}
	if r.calls("ec2 ReplaceRoute") != 1 {
		t.Errorf("ReplaceRoute calls: %d, want 1", r.calls("ec2 ReplaceRoute"))
	}
	if err := r.routes.DeleteRoute(ctx(t), cluster, &old); err != nil {
		t.Fatal(err)
	}
	if got := instanceRoutes(r.table(r.world.table.ID))["10.244.3.0/24"]; got != in.ID {
		t.Errorf("deleting the route as listed before the move took the new one: now %q", got)
	}
	// A blackhole is repointed too.
	r.create(n, "fd00:10:244:4::/64")
	if got := instanceRoutes(r.table(r.world.table.ID))["fd00:10:244:4::/64"]; got != in.ID {
		t.Errorf("blackhole now to %q, want %s", got, in.ID)
	}
}

// A route the cluster did not make (to a gateway) for a Node's pod CIDR is
// an error, and stays.
func TestRouteToNonInstanceIsLeftAlone(t *testing.T) {
	r, _ := newStaleEnv(t)
	err := r.routes.CreateRoute(ctx(t), cluster, "hint", &cloudprovider.Route{TargetNode: types.NodeName(r.na.Name), DestinationCIDR: "10.244.9.0/24"})
	if err == nil || !strings.Contains(err.Error(), "not an instance") {
		t.Fatalf("err = %v, want one about a route that is not to an instance", err)
	}
	for _, rt := range r.table(r.world.table.ID).Routes {
		if rt.DestinationCIDRBlock == "10.244.9.0/24" && rt.GatewayID != "igw-0123456789abcdef0" {
			t.Errorf("gateway route changed: %+v", rt)
		}
	}
}

// With two tagged tables, a route missing from one is not reported (so
// the controller creates it), and creating fills the gap.
func TestRoutesInEveryTaggedTable(t *testing.T) {
	r := newRouteEnv(t)
	second := r.fake.AddRouteTable(fakeaws.RouteTable{
		VPCID:  r.vpc.ID,
		Tags:   map[string]string{clusterTag: awsccm.TagShared},
		Routes: []fakeaws.Route{{DestinationCIDRBlock: "10.244.5.0/24", InstanceID: r.a.ID}},
	})
	if _, ok := r.list()["10.244.5.0/24"]; ok {
		t.Error("a route missing from one tagged table is reported")
	}
	r.create(r.na, "10.244.5.0/24")
	r.create(r.nb, "10.244.6.0/24")
	want := map[string]string{"10.244.5.0/24": r.a.ID, "10.244.6.0/24": r.b.ID}
	for _, id := range []string{r.world.table.ID, second.ID} {
		if got := instanceRoutes(r.table(id)); !reflect.DeepEqual(got, want) {
			t.Errorf("table %s: %v, want %v", id, got, want)
		}
	}
	if got := r.list(); len(got) != 2 || got["10.244.5.0/24"].TargetNode != types.NodeName(r.na.Name) {
		t.Errorf("ListRoutes = %v", got)
	}
}

// A Node without a provider ID gets no route yet.
func TestRouteForNodeWithoutProviderID(t *testing.T) {
	r := newRouteEnv(t)
	r.addNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "bare"}})
	err := r.routes.CreateRoute(ctx(t), cluster, "hint", &cloudprovider.Route{TargetNode: "bare", DestinationCIDR: "10.244.1.0/24"})
	if err == nil || !strings.Contains(err.Error(), "providerID") {
		t.Fatalf("err = %v, want one about the providerID", err)
	}
	if n := r.mutating(); n != 0 {
		t.Errorf("%d changing calls: %v", n, r.fake.Faults().Calls())
	}
}

// Failing calls are errors, never an empty or partial success.
func TestRouteErrors(t *testing.T) {
	r := newRouteEnv(t)
	r.create(r.na, "10.244.1.0/24")
	f := r.fake.Faults()

	id := f.AddRule(faults.Rule{Match: "ec2 DescribeRouteTables", Status: 503})
	if rs, err := r.routes.ListRoutes(ctx(t), cluster); err == nil || cloudapi.KindOf(err) != cloudapi.KindUnavailable {
		t.Errorf("ListRoutes with DescribeRouteTables failing = %v, %v; want an unavailable error", rs, err)
	}
	f.RemoveRule(id)

	id = f.AddRule(faults.Rule{Match: "ec2 DeleteRoute", Status: 429})
	rt := r.list()["10.244.1.0/24"]
	if err := r.routes.DeleteRoute(ctx(t), cluster, &rt); cloudapi.KindOf(err) != cloudapi.KindThrottled {
		t.Errorf("DeleteRoute throttled: %v, want a throttled error", err)
	}
	if _, ok := instanceRoutes(r.table(r.world.table.ID))["10.244.1.0/24"]; !ok {
		t.Error("the route is gone though its deletion failed")
	}
	f.RemoveRule(id)

	id = f.AddRule(faults.Rule{Match: "ec2 CreateRoute", Status: 500})
	if err := r.routes.CreateRoute(ctx(t), cluster, "hint", &cloudprovider.Route{TargetNode: types.NodeName(r.nb.Name), DestinationCIDR: "10.244.2.0/24"}); err == nil {
		t.Error("CreateRoute succeeded though CreateRoute failed")
	}
	f.RemoveRule(id)
	// A create that happened but whose answer was lost is found on retry.
	f.AddRule(faults.Rule{Match: "ec2 CreateRoute", Status: 500, AfterCommit: true, Remaining: 1})
	r.create(r.nb, "10.244.2.0/24")
	if got := instanceRoutes(r.table(r.world.table.ID))["10.244.2.0/24"]; got != r.b.ID {
		t.Errorf("route after a lost answer: %q, want %s", got, r.b.ID)
	}
}

// The other cluster's routes stay whatever this one does.
func TestRoutesOfOtherTablesUntouched(t *testing.T) {
	r := newRouteEnv(t)
	// The other cluster routes the same CIDR this cluster's Node gets.
	r.create(r.nb, "10.244.1.0/24")
	if got := instanceRoutes(r.table(r.other.ID))["10.244.1.0/24"]; got != r.foreign.ID {
		t.Errorf("other cluster's route now %q, want %q", got, r.foreign.ID)
	}
	rt := cloudprovider.Route{Name: r.b.ID + "/10.244.1.0/24", TargetNode: types.NodeName(r.nb.Name), DestinationCIDR: "10.244.1.0/24"}
	if err := r.routes.DeleteRoute(ctx(t), cluster, &rt); err != nil {
		t.Fatal(err)
	}
	if got := instanceRoutes(r.table(r.other.ID))["10.244.1.0/24"]; got != r.foreign.ID {
		t.Errorf("other cluster's route now %q after deletion, want %q", got, r.foreign.ID)
	}
	if _, ok := instanceRoutes(r.table(r.world.table.ID))["10.244.1.0/24"]; ok {
		t.Error("the route is still in the cluster's table")
	}
}

// Without a table tagged for the cluster, routes fail with an error naming
// the tag, and nothing is changed.
func TestNoTaggedRouteTable(t *testing.T) {
	r := newRouteEnv(t, withoutRouteTable)
	check := func(what string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "no route table") || !strings.Contains(err.Error(), clusterTag) {
			t.Errorf("%s: err = %v, want one saying no route table is tagged %s", what, err, clusterTag)
		}
	}
	_, err := r.routes.ListRoutes(ctx(t), cluster)
	check("ListRoutes", err)
	check("CreateRoute", r.routes.CreateRoute(ctx(t), cluster, "hint", &cloudprovider.Route{TargetNode: types.NodeName(r.na.Name), DestinationCIDR: "10.244.1.0/24"}))
	check("DeleteRoute", r.routes.DeleteRoute(ctx(t), cluster, &cloudprovider.Route{Name: r.a.ID + "/10.244.1.0/24", TargetNode: types.NodeName(r.na.Name), DestinationCIDR: "10.244.1.0/24"}))
	if n := r.mutating(); n != 0 {
		t.Errorf("%d changing calls: %v", n, r.fake.Faults().Calls())
	}
	if in, _ := r.fake.Instance(r.a.ID); !in.SourceDestCheck {
		t.Error("the source/destination check went off though no route can be made")
	}
}
