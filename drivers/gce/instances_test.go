package gce_test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/instances"
	"github.com/polyccm/polyccm/drivers/gce"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
	fakegce "github.com/polyccm/polyccm/test/fakecloud/gce"
)

func addrs(as []v1.NodeAddress) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = string(a.Type) + "=" + a.Address
	}
	return out
}

func TestInstanceMetadata(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	full := e.fake.AddInstance(fakegce.Instance{Name: "full", Zone: "us-east1-c", MachineType: "n2-standard-8",
		InternalIPv6: "fd20:0:0:1::5", IPv6: "2600:1900:4000:1::5", Hostname: "full.example.internal"})
	bare := e.fake.AddInstance(fakegce.Instance{Name: "bare", Zone: testZone, MachineType: "e2-small", NatIP: fakegce.NoIP})
	v6 := e.fake.AddInstance(fakegce.Instance{Name: "v6", Zone: testZone, MachineType: "e2-small", IPv6: "2600:1900:4000:1::6"})
	iv2 := e.instancesV2(instances.Options{})

	cases := []struct {
		name  string
		node  *v1.Node
		in    fakegce.Instance
		addrs []string
	}{
		// cloud-provider-gcp's nodeAddressesFromInstance: the interface's
		// IPv4, its external IPv4, then one IPv6 as an InternalIP (the
		// internal one when there is one).
		{"by provider ID", node("full", providerID(full)), full, []string{
			"InternalIP=" + full.NetworkIP, "ExternalIP=" + full.NatIP, "InternalIP=fd20:0:0:1::5",
			"Hostname=full.example.internal"}},
		{"by node name", node("full", ""), full, []string{
			"InternalIP=" + full.NetworkIP, "ExternalIP=" + full.NatIP, "InternalIP=fd20:0:0:1::5",
			"Hostname=full.example.internal"}},
		{"external IPv6 only", node("v6", providerID(v6)), v6, []string{
			"InternalIP=" + v6.NetworkIP, "ExternalIP=" + v6.NatIP, "InternalIP=2600:1900:4000:1::6", "Hostname=v6"}},
		{"without external address or hostname", node("bare", providerID(bare)), bare, []string{
			"InternalIP=" + bare.NetworkIP, "Hostname=bare"}},
		{"by name without external address", node("bare", ""), bare, []string{
			"InternalIP=" + bare.NetworkIP, "Hostname=bare"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			md, err := iv2.InstanceMetadata(ctx(t), c.node)
			if err != nil {
				t.Fatalf("InstanceMetadata: %v", err)
			}
			wantRegion := c.in.Zone[:strings.LastIndexByte(c.in.Zone, '-')]
			if md.ProviderID != "gce://"+testProject+"/"+c.in.Zone+"/"+c.in.Name || md.InstanceType != c.in.MachineType ||
				md.Zone != c.in.Zone || md.Region != wantRegion {
				t.Errorf("metadata %+v, want gce://%s/%s/%s, %s in %s/%s", md, testProject, c.in.Zone, c.in.Name, c.in.MachineType, wantRegion, c.in.Zone)
			}
			if got := addrs(md.NodeAddresses); !slices.Equal(got, c.addrs) {
				t.Errorf("addresses %v, want %v", got, c.addrs)
			}
			if ok, err := iv2.InstanceExists(ctx(t), c.node); err != nil || !ok {
				t.Errorf("InstanceExists = %v, %v", ok, err)
			}
			if down, err := iv2.InstanceShutdown(ctx(t), c.node); err != nil || down {
				t.Errorf("InstanceShutdown = %v, %v; want running", down, err)
			}
		})
	}
}

func TestInstanceShutdown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	iv2 := e.instancesV2(instances.Options{})
	for _, c := range []struct {
		status string
		down   bool
	}{
		{fakegce.StatusRunning, false},
		{fakegce.StatusProvisioning, false},
		{fakegce.StatusStaging, false},
		{fakegce.StatusRepairing, false},
		{fakegce.StatusStopping, true},
		{fakegce.StatusStopped, true},
		{fakegce.StatusTerminated, true},
		{fakegce.StatusSuspending, true},
		{fakegce.StatusSuspended, true},
	} {
		t.Run(c.status, func(t *testing.T) {
			in := e.fake.AddInstance(fakegce.Instance{Name: "vm-" + strings.ToLower(c.status), Zone: testZone2, Status: c.status})
			for _, n := range []*v1.Node{node(in.Name, providerID(in)), node(in.Name, "")} {
				down, err := iv2.InstanceShutdown(ctx(t), n)
				if err != nil || down != c.down {
					t.Errorf("InstanceShutdown(%q) = %v, %v; want %v", n.Spec.ProviderID, down, err, c.down)
				}
				// A stopped instance still exists: its Node stays.
				if ok, err := iv2.InstanceExists(ctx(t), n); err != nil || !ok {
					t.Errorf("InstanceExists(%q) = %v, %v", n.Spec.ProviderID, ok, err)
				}
			}
		})
	}
	// A status change shows at the next lookup.
	if err := e.fake.SetInstanceStatus(testZone2, "vm-running", fakegce.StatusTerminated); err != nil {
		t.Fatal(err)
	}
	n := node("vm-running", gce.ProviderID(testProject, testZone2, "vm-running"))
	if down, err := iv2.InstanceShutdown(ctx(t), n); err != nil || !down {
		t.Errorf("InstanceShutdown after a stop = %v, %v", down, err)
	}
}

func TestInstanceNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.instance("other", testZone)
	gone := e.instance("gone", testZone)
	iv2 := e.instancesV2(instances.Options{})
	byID := node("gone", providerID(gone))
	if ok, err := iv2.InstanceExists(ctx(t), byID); err != nil || !ok {
		t.Fatalf("InstanceExists before the delete = %v, %v", ok, err)
	}
	e.fake.RemoveInstance(testZone, "gone")

	for _, n := range []*v1.Node{
		byID,
		node("gone", ""),
		node("never", gce.ProviderID(testProject, testZone2, "never")),
		node("never", ""),
	} {
		t.Run(n.Name+" "+n.Spec.ProviderID, func(t *testing.T) {
			if ok, err := iv2.InstanceExists(ctx(t), n); err != nil || ok {
				t.Errorf("InstanceExists = %v, %v; want definitively absent", ok, err)
			}
			if _, err := iv2.InstanceShutdown(ctx(t), n); !errors.Is(err, cloudprovider.InstanceNotFound) {
				t.Errorf("InstanceShutdown error %v, want InstanceNotFound", err)
			}
			if md, err := iv2.InstanceMetadata(ctx(t), n); !errors.Is(err, cloudprovider.InstanceNotFound) {
				t.Errorf("InstanceMetadata = %+v, %v; want InstanceNotFound", md, err)
			}
		})
	}
	// An instance missing from a listing is confirmed with a get before
	// it is reported gone.
	if e.calls(epGetInstance) == 0 {
		t.Error("absence by provider ID was not confirmed with a get")
	}
}

// TestErrorsAreNeverNotFound: throttling, server errors and refusals
// leave existence unknown; the node lifecycle controller must get an
// error, never "does not exist" (it deletes the Node on that).
func TestErrorsAreNeverNotFound(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		byName bool // look up by node name rather than provider ID
		absent bool // the instance is not in the listing (a get confirms)
		rule   faults.Rule
		kind   cloudapi.Kind
	}{
		{"list 500", false, false, faults.Rule{Match: epListInstances, Status: 500}, cloudapi.KindUnavailable},
		{"list 503", false, false, faults.Rule{Match: epListInstances, Status: 503}, cloudapi.KindUnavailable},
		{"list 429", false, false, faults.Rule{Match: epListInstances, Status: 429}, cloudapi.KindThrottled},
		{"list 403", false, false, faults.Rule{Match: epListInstances, Status: 403}, cloudapi.KindUnauthorized},
		{"list 404", false, false, faults.Rule{Match: epListInstances, Status: 404}, cloudapi.KindUnknown},
		{"confirming get 500", false, true, faults.Rule{Match: epGetInstance, Status: 500}, cloudapi.KindUnavailable},
		{"confirming get 429", false, true, faults.Rule{Match: epGetInstance, Status: 429}, cloudapi.KindThrottled},
		{"confirming get 502", false, true, faults.Rule{Match: epGetInstance, Status: 502}, cloudapi.KindUnavailable},
		{"aggregated list 500", true, false, faults.Rule{Match: epAggInstances, Status: 500}, cloudapi.KindUnavailable},
		{"aggregated list 429", true, false, faults.Rule{Match: epAggInstances, Status: 429}, cloudapi.KindThrottled},
		{"aggregated list 404", true, true, faults.Rule{Match: epAggInstances, Status: 404}, cloudapi.KindUnknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			in := e.instance("n-0", testZone)
			if c.absent {
				e.fake.RemoveInstance(testZone, "n-0")
			}
			n := node(in.Name, providerID(in))
			if c.byName {
				n.Spec.ProviderID = ""
			}
			e.fake.Faults().AddRule(c.rule)
			iv2 := e.instancesV2(instances.Options{})
			ok, err := iv2.InstanceExists(ctx(t), n)
			if err == nil {
				t.Fatalf("InstanceExists = %v without an error", ok)
			}
			if instances.IsNotFound(err) || errors.Is(err, cloudprovider.InstanceNotFound) {
				t.Errorf("error %v reads as not found", err)
			}
			if c.kind != cloudapi.KindUnknown && kind(err) != c.kind {
				t.Errorf("kind %v (%v), want %v", kind(err), err, c.kind)
			}
			if _, err := iv2.InstanceShutdown(ctx(t), n); err == nil || errors.Is(err, cloudprovider.InstanceNotFound) {
				t.Errorf("InstanceShutdown error %v, want one that is not InstanceNotFound", err)
			}
			if _, err := iv2.InstanceMetadata(ctx(t), n); err == nil || errors.Is(err, cloudprovider.InstanceNotFound) {
				t.Errorf("InstanceMetadata error %v, want one that is not InstanceNotFound", err)
			}
			// Retried a few times, never endlessly.
			if n := e.fake.Faults().Injected(); n < 3 || n > 3*8 {
				t.Errorf("%d failed attempts for three lookups", n)
			}
		})
	}
}

func TestTransientErrorsAreRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	in := e.instance("n-0", testZone)
	e.fake.Faults().FailNext(epListInstances, 1, 503)
	e.fake.Faults().FailNext(epAggInstances, 2, 429)
	iv2 := e.instancesV2(instances.Options{})
	for _, n := range []*v1.Node{node(in.Name, providerID(in)), node(in.Name, "")} {
		if ok, err := iv2.InstanceExists(ctx(t), n); err != nil || !ok {
			t.Errorf("InstanceExists(%q) = %v, %v", n.Spec.ProviderID, ok, err)
		}
	}
}

func TestSameNameInTwoZones(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.instance("twin", testZone)
	e.instance("twin", "us-east1-b")
	iv2 := e.instancesV2(instances.Options{})
	_, err := iv2.InstanceExists(ctx(t), node("twin", ""))
	if err == nil || instances.IsNotFound(err) || !strings.Contains(err.Error(), "2 zones") || !strings.Contains(err.Error(), "providerID") {
		t.Errorf("InstanceExists by an ambiguous name = %v, want an error asking for a providerID", err)
	}
	// The provider ID settles it.
	if md, err := iv2.InstanceMetadata(ctx(t), node("twin", providerID(a))); err != nil || md.Zone != testZone {
		t.Errorf("InstanceMetadata by provider ID = %+v, %v", md, err)
	}
}

// TestBadKeysFailAlone: a key the driver cannot resolve fails on its own;
// the other keys of the batch are answered.
func TestBadKeysFailAlone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	in := e.instance("n-0", testZone)
	keys := []instances.Key{
		{ProviderID: providerID(in), NodeName: "n-0"},
		{ProviderID: "aws:///us-east-1a/i-0123456789abcdef0", NodeName: "aws-node"},
		{ProviderID: "gce://" + testProject + "/" + testZone, NodeName: "short"},
		{ProviderID: gce.ProviderID(testProject, "mars-north1-a", "n-0"), NodeName: "unknown-zone"},
		{ProviderID: gce.ProviderID("someone-elses", testZone, "n-0"), NodeName: "other-project"},
		{NodeName: "n-0"},
	}
	ans, err := e.cloud.Instances().LookupInstances(ctx(t), keys)
	if err != nil {
		t.Fatalf("LookupInstances: %v", err)
	}
	if len(ans.Results) != len(keys) {
		t.Fatalf("%d results for %d keys", len(ans.Results), len(keys))
	}
	for _, i := range []int{0, 5} {
		if r := ans.Results[i]; r.Err != nil || r.Instance == nil || r.Instance.ProviderID != providerID(in) {
			t.Errorf("%v: %+v, %v; want the instance", keys[i], r.Instance, r.Err)
		}
	}
	for _, i := range []int{1, 2, 3, 4} {
		r := ans.Results[i]
		if r.Err == nil || r.Instance != nil {
			t.Errorf("%v: %+v, %v; want an error", keys[i], r.Instance, r.Err)
		}
		if instances.IsNotFound(r.Err) {
			t.Errorf("%v: %v reads as not found", keys[i], r.Err)
		}
	}
	if !strings.Contains(ans.Results[1].Err.Error(), "not a GCE one") {
		t.Errorf("error for a foreign provider ID: %v", ans.Results[1].Err)
	}
}

// TestConcurrentLookupsAreBatched: many nodes asking at once cost one
// aggregated list (the nodes known by name only make it a listing of the
// whole project, which answers for the zones it shows), never a call per
// node or a second listing of a zone.
func TestConcurrentLookupsAreBatched(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var nodes []*v1.Node
	nodes = append(nodes, e.nodes("a", 40, testZone)...)
	nodes = append(nodes, e.nodes("b", 30, testZone2)...)
	for _, n := range e.nodes("c", 20, "us-east1-b") {
		n.Spec.ProviderID = "" // not initialized yet: found by name
		nodes = append(nodes, n)
	}
	// The batch closes when every node has asked, however long that
	// takes; the window only bounds the wait for stragglers.
	iv2 := e.instancesV2(instances.Options{BatchWindow: time.Minute, BatchSize: len(nodes)})
	var wg sync.WaitGroup
	errs := make([]error, len(nodes))
	mds := make([]*cloudprovider.InstanceMetadata, len(nodes))
	for i, n := range nodes {
		wg.Go(func() { mds[i], errs[i] = iv2.InstanceMetadata(ctx(t), n) })
	}
	wg.Wait()
	for i, n := range nodes {
		if errs[i] != nil {
			t.Fatalf("%s: %v", n.Name, errs[i])
		}
		if !strings.HasSuffix(mds[i].ProviderID, "/"+n.Name) {
			t.Errorf("%s: provider ID %s", n.Name, mds[i].ProviderID)
		}
	}
	if l, a, g := e.calls(epListInstances), e.calls(epAggInstances), e.calls(epGetInstance); l != 0 || a != 1 || g != 0 {
		t.Errorf("%d zone lists, %d aggregated lists and %d gets for %d nodes; want 0, 1, 0", l, a, g, len(nodes))
	}
}

// TestLookupsInLargeZones: a zone is listed page by page; once its size
// is known, a few names are looked up with filtered lists instead of
// listing every page again.
func TestLookupsInLargeZones(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := e.nodes("n", 1150, testZone)
	src := e.cloud.Instances()
	keys := make([]instances.Key, len(nodes))
	for i, n := range nodes {
		keys[i] = instances.Key{ProviderID: n.Spec.ProviderID, NodeName: n.Name}
	}
	ans, err := src.LookupInstances(ctx(t), keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range ans.Results {
		if r.Err != nil || r.Instance == nil || r.Instance.ProviderID != keys[i].ProviderID {
			t.Fatalf("%s: %+v, %v", keys[i].ProviderID, r.Instance, r.Err)
		}
	}
	if n := e.calls(epListInstances); n != 3 {
		t.Errorf("%d list calls for 1150 instances, want 3 pages", n)
	}
	if len(ans.Seen) != len(nodes) {
		t.Errorf("%d instances seen, want %d for the cache", len(ans.Seen), len(nodes))
	}

	// 150 names: two filtered lists of 100 names beat three pages.
	before := e.calls(epListInstances)
	ans, err = src.LookupInstances(ctx(t), keys[:150])
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range ans.Results {
		if r.Err != nil || r.Instance == nil || r.Instance.ProviderID != keys[i].ProviderID {
			t.Fatalf("%s: %+v, %v", keys[i].ProviderID, r.Instance, r.Err)
		}
	}
	if n := e.calls(epListInstances) - before; n != 2 {
		t.Errorf("%d list calls for 150 of 1150 instances, want 2 filtered ones", n)
	}
	if g := e.calls(epGetInstance); g != 0 {
		t.Errorf("%d gets", g)
	}
}

func TestEmptyBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ans, err := e.cloud.Instances().LookupInstances(ctx(t), nil)
	if err != nil || len(ans.Results) != 0 {
		t.Errorf("LookupInstances(nil) = %+v, %v", ans, err)
	}
	if n := e.fake.Faults().Total(); n != 0 {
		t.Errorf("%d calls for no keys", n)
	}
}

// In an IPv6 single-stack cluster (stackType IPV6) the IPv6 address comes
// first, as upstream's orderAddresses puts it.
func TestIPv6ClusterListsIPv6First(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(func(c *gce.Config) { c.StackType = gce.StackIPv6 }))
	in := e.fake.AddInstance(fakegce.Instance{Name: "v6first", Zone: testZone, InternalIPv6: "fd20:0:0:1::7", NatIP: fakegce.NoIP})
	md, err := e.instancesV2(instances.Options{}).InstanceMetadata(ctx(t), node("v6first", providerID(in)))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := addrs(md.NodeAddresses), []string{"InternalIP=fd20:0:0:1::7", "InternalIP=" + in.NetworkIP, "Hostname=v6first"}; !slices.Equal(got, want) {
		t.Errorf("addresses %v, want %v", got, want)
	}
}
