//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/polyccm/polyccm/drivers/aws"
	"github.com/polyccm/polyccm/drivers/openstack"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
	fakeos "github.com/polyccm/polyccm/test/fakecloud/openstack"
	"github.com/polyccm/polyccm/test/harness"
)

// checkOSNode checks the Node openstack-cloud-controller-manager would
// leave for the server: providerID openstack:///<id>, the flavor's name as
// instance type, the availability zone (made a label value) as zone and
// drivers.openstack.region as region, each under its stable and its
// legacy label, and the addresses in upstream's order.
func checkOSNode(t *testing.T, e *osEnv, b osBuilt, zone string) {
	t.Helper()
	node, err := e.node(b.name)
	if err != nil {
		t.Fatal(err)
	}
	if w := osProviderID(b.id); node.Spec.ProviderID != w {
		t.Errorf("%s: providerID %q, want %q", b.name, node.Spec.ProviderID, w)
	}
	for k, w := range map[string]string{
		v1.LabelInstanceTypeStable: b.flavor, v1.LabelInstanceType: b.flavor,
		v1.LabelTopologyZone: zone, v1.LabelFailureDomainBetaZone: zone,
		v1.LabelTopologyRegion: osRegion, v1.LabelFailureDomainBetaRegion: osRegion,
	} {
		if got := node.Labels[k]; got != w {
			t.Errorf("%s: label %s=%q, want %q", b.name, k, got, w)
		}
	}
	if harness.HasTaint(node, harness.UninitializedTaint.Key) {
		t.Errorf("%s: still tainted uninitialized", b.name)
	}
	want := b.wantAddresses()
	// The status patch can land a moment after the taint is gone.
	eventually(t, 15*time.Second, b.name+" addresses", func() (bool, string) {
		n, err := e.node(b.name)
		if err != nil {
			return false, err.Error()
		}
		return slices.Equal(n.Status.Addresses, want), fmt.Sprintf("%v, want %v", n.Status.Addresses, want)
	})
}

// Servers of every shape the address order depends on (a second NIC,
// accessIPv4, hostname metadata), of three flavors and in an availability
// zone that is no label value as it stands, get their Nodes as upstream
// initializes them, found by providerID or by name.
func TestOpenStackNodesAreInitialized(t *testing.T) {
	e := newOSEnv(t, osOptions{})
	flavors := []string{"m1.small", "m1.medium", "m1.large"}
	// Upstream's SanitizeLabel: each run of other characters becomes
	// '-', then '-', '_' and '.' are trimmed from the ends.
	zones := [][2]string{{"nova", "nova"}, {"AZ 2 (ssd)", "AZ-2-ssd"}}
	var built []osBuilt
	var names []string
	for i := range 12 {
		s := osServer{name: e.nodeName(i), flavor: flavors[i%3], zone: zones[i%2][0], storage: i%3 == 1}
		if i%4 == 2 {
			s.accessIPv4, s.hostname = fmt.Sprintf("203.0.113.%d", 10+i), s.name+".example.org"
		}
		b := e.addServer(i, s)
		pid := ""
		if i%2 == 0 {
			pid = osProviderID(b.id)
		}
		e.register(b.name, pid)
		built = append(built, b)
		names = append(names, b.name)
	}
	e.waitInitialized(names, 60*time.Second)
	for i, b := range built {
		checkOSNode(t, e, b, zones[i%2][1])
	}
}

// 200 Nodes joining at once (a third found by name, the rest by
// providerID) are initialized from a few server listings and a port query
// per 50 servers, not from a GET per Node; each flavor's name is read
// once.
func TestOpenStackJoinStorm(t *testing.T) {
	const n = 200
	e := newOSEnv(t, osOptions{tweak: func(s *harness.Settings) {
		// The product's cache TTL: what one listing tells lasts while
		// the node controllers work through 200 Nodes.
		s.CacheTTL = 30 * time.Second
	}})
	flavors := []string{"m1.small", "m1.medium", "m1.large"}
	var built []osBuilt
	for i := range n {
		built = append(built, e.addServer(i, osServer{name: e.nodeName(i), flavor: flavors[i%3], zone: "nova", storage: i%10 == 0}))
	}
	before := e.fake.Faults().Calls()
	var wg sync.WaitGroup
	var names []string
	for i, b := range built {
		names = append(names, b.name)
		pid := ""
		if i%3 != 2 {
			pid = osProviderID(b.id)
		}
		wg.Go(func() { e.register(b.name, pid) })
	}
	wg.Wait()
	e.waitInitialized(names, 2*time.Minute)
	calls := osCalls(e.fake, before)
	for _, b := range built {
		checkOSNode(t, e, b, "nova")
		if t.Failed() {
			break // one Node's story is enough
		}
	}
	lists, gets := calls[fakeos.ServersList], calls[fakeos.ServersGet]
	ports, flavorGets := calls[fakeos.PortsList], calls[fakeos.FlavorsGet]
	t.Logf("%d Nodes initialized with %d server listings, %d server GETs, %d port queries, %d flavor GETs, %d tokens (all calls: %v)",
		n, lists, gets, ports, flavorGets, calls[fakeos.TokensCreate], calls)
	if lists == 0 {
		t.Errorf("no server listing: the Nodes were not looked up in batches")
	}
	// A listing costs 1 page (1000 a page) and 4 port queries (50 servers
	// each); Nodes keep arriving while the first ones are looked up, so a
	// few listings, never one call a Node.
	if lists > 8 {
		t.Errorf("%d server listings for %d Nodes; want at most 8", lists, n)
	}
	if gets > 5 {
		t.Errorf("%d single-server GETs while every server was in the listing; want at most 5", gets)
	}
	if ports > 4*lists+5 {
		t.Errorf("%d port queries for %d listings; want at most %d (one per 50 servers)", ports, lists, 4*lists+5)
	}
	if flavorGets > len(flavors) {
		t.Errorf("%d flavor GETs for %d flavors: flavor names are not cached", flavorGets, len(flavors))
	}
	if tokens := calls[fakeos.TokensCreate]; tokens > 1 {
		t.Errorf("%d Keystone tokens issued: the session is not kept", tokens)
	}
}

// A SHUTOFF server puts the shutdown taint on its NotReady Node; a deleted
// server takes its Node with it once Nova answers 404 for it; but not
// while the listings lack the server and the GET that would confirm it
// fails, and while every compute call fails (503, or no answer), which
// says nothing about the servers, no Node is deleted.
func TestOpenStackShutdownAndDeletedServers(t *testing.T) {
	e := newOSEnv(t, osOptions{})
	svs := e.nodeServers(4)

	if err := e.fake.StopServer(svs[0].id); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "shutdown taint on "+svs[0].name, func() (bool, string) {
		node, err := e.node(svs[0].name)
		if err != nil {
			return false, err.Error()
		}
		return harness.HasTaint(node, harness.ShutdownTaint), fmt.Sprintf("taints %v", node.Spec.Taints)
	})
	for _, sv := range svs[1:] {
		if node, err := e.node(sv.name); err != nil || harness.HasTaint(node, harness.ShutdownTaint) {
			t.Errorf("%s: shutdown taint on a running server's Node (err %v)", sv.name, err)
		}
	}

	// A server goes away, but the GET that would confirm what the
	// listings say answers 503: no word from Nova that it is gone.
	f := e.fake.Faults()
	getFails := f.AddRule(faults.Rule{Match: fakeos.ServersGet, Status: 503})
	if err := e.fake.DeleteServer(svs[2].id); err != nil {
		t.Fatal(err)
	}
	noneDeleted := func() (bool, string) {
		for _, sv := range svs {
			if !e.exists(sv.name) {
				return true, sv.name + " deleted"
			}
		}
		return false, ""
	}
	never(t, 8*time.Second, "a Node was deleted while its server's GET failed", noneDeleted)
	if got := f.Responses(fakeos.ServersGet)[503]; got < 3 {
		t.Fatalf("only %d server GETs answered 503; the listing's gap was not confirmed by GET", got)
	}
	// Then Nova fails every call: some hang until polyccm gives up, the
	// rest are 503s. 15 s: fifteen lifecycle periods, and longer than a
	// hung call holds a lookup (cloudAPI.timeout, 10 s).
	hang := f.AddRule(faults.Rule{Match: "compute.*", Probability: 0.15, Timeout: true})
	allFail := f.AddRule(faults.Rule{Match: "compute.*", Status: 503})
	before := f.Injected()
	never(t, 15*time.Second, "a Node was deleted while Nova failed", noneDeleted)
	if got := f.Injected() - before; got < 3 {
		t.Fatalf("only %d injected failures reached polyccm; the test proved nothing", got)
	}
	t.Logf("%d injected failures: lists %v, gets %v", f.Injected()-before, f.Responses(fakeos.ServersList), f.Responses(fakeos.ServersGet))
	f.RemoveRule(hang)
	f.RemoveRule(allFail)
	notFound := f.Responses(fakeos.ServersGet)[404]
	f.RemoveRule(getFails)
	eventually(t, 30*time.Second, svs[2].name+" deleted after its server was", func() (bool, string) {
		return !e.exists(svs[2].name), "still there"
	})
	// Gone is Nova's word for it: a GET of the server answered 404.
	if got := f.Responses(fakeos.ServersGet)[404] - notFound; got == 0 {
		t.Errorf("%s deleted without Nova answering 404 for its server (GET responses %v)", svs[2].name, f.Responses(fakeos.ServersGet))
	}
	for _, sv := range []osBuilt{svs[0], svs[1], svs[3]} {
		if !e.exists(sv.name) {
			t.Errorf("%s was deleted but its server exists", sv.name)
		}
	}
}

// Pod CIDRs become routes in the cluster's router, each to its Node's
// InternalIP, and allowed address pairs on the Node's port, as upstream's
// route controller makes them; a route outside the cluster CIDR (the
// user's, to a VPN gateway) is left alone, a stale one inside it (to an
// address no Node has) is removed, and a deleted Node's route goes. With
// extraroute-atomic routes are added and removed one by one; without it
// the router's whole list is rewritten, which must keep the user's route.
func TestOpenStackRoutes(t *testing.T) {
	t.Run("extraroute-atomic", func(t *testing.T) { testOSRoutes(t, false) })
	t.Run("extraroute", func(t *testing.T) { testOSRoutes(t, true) })
}

func testOSRoutes(t *testing.T, noAtomic bool) {
	e := newOSEnv(t, osOptions{hold: true, tweak: func(s *harness.Settings) {
		s.Controllers = "nodes: true\nnodeLifecycle: true\nroutes: true"
		s.Extra = "routes:\n  clusterCIDR: 10.244.0.0/16\n  reconcilePeriod: 1s"
		// The next hop is a Node's first InternalIP, as upstream picks
		// it; with a second NIC that may be the storage network's, which
		// Neutron refuses (not on the router): the sort order puts the
		// router's network first, as an operator of such Nodes must.
		s.DriverBlock += "\nnetworking:\n  addressSortOrder: 10.0.0.0/16"
	}})
	if noAtomic {
		exts := slices.DeleteFunc(e.fake.NetworkExtensions(), func(a string) bool { return a == "extraroute-atomic" })
		e.fake.SetNetworkExtensions(exts...)
	}
	e.run(e.settings, nil)
	vpn := fakeos.Route{Destination: "192.168.100.0/24", NextHop: "10.0.200.1"}
	stale := fakeos.Route{Destination: "10.244.99.0/24", NextHop: "10.0.200.2"}
	if err := e.fake.SetRouterRoutes(e.router, []fakeos.Route{vpn, stale}); err != nil {
		t.Fatal(err)
	}
	var svs []osBuilt
	var names []string
	for i := range 3 {
		b := e.addServer(i, osServer{name: e.nodeName(i), flavor: "m1.small", zone: "nova", storage: i == 1})
		n := harness.UninitializedNode(b.name, "")
		if i == 0 {
			n.Spec.ProviderID = osProviderID(b.id)
		}
		n.Spec.PodCIDR = fmt.Sprintf("10.244.%d.0/24", i)
		n.Spec.PodCIDRs = []string{n.Spec.PodCIDR}
		e.registerNode(n)
		svs = append(svs, b)
		names = append(names, b.name)
	}
	e.waitInitialized(names, 30*time.Second)
	routes := func() map[string]string {
		r, ok := e.fake.Router(e.router)
		if !ok {
			t.Fatal("the router is gone")
		}
		got := map[string]string{}
		for _, rt := range r.Routes {
			got[rt.Destination] = rt.NextHop
		}
		return got
	}
	want := map[string]string{vpn.Destination: vpn.NextHop}
	for i, sv := range svs {
		// Its "k8s" NIC's address, first by addressSortOrder.
		want[fmt.Sprintf("10.244.%d.0/24", i)] = sv.fixed[0]
	}
	eventually(t, 60*time.Second, "a route per Node to its InternalIP, the stale one gone", func() (bool, string) {
		got := routes()
		return maps.Equal(got, want), fmt.Sprintf("routes %v, want %v", got, want)
	})
	// Port security would drop the pods' packets: each pod CIDR is an
	// allowed address pair of the port holding the next hop.
	for i, sv := range svs {
		var pairs []string
		for _, p := range e.fake.ServerPorts(sv.id) {
			if p.FixedIPs[0].IP == sv.fixed[0] {
				for _, ap := range p.AllowedAddressPairs {
					pairs = append(pairs, ap.IPAddress)
				}
			}
		}
		if cidr := fmt.Sprintf("10.244.%d.0/24", i); !slices.Equal(pairs, []string{cidr}) {
			t.Errorf("%s: allowed address pairs %v on its k8s port, want [%s]", sv.name, pairs, cidr)
		}
	}
	if err := cp.Admin.CoreV1().Nodes().Delete(context.Background(), names[1], metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	delete(want, "10.244.1.0/24")
	eventually(t, 60*time.Second, "the deleted Node's route removed, the others kept", func() (bool, string) {
		got := routes()
		return maps.Equal(got, want), fmt.Sprintf("routes %v, want %v", got, want)
	})
	never(t, 3*time.Second, "routes changed once converged", func() (bool, string) {
		got := routes()
		return !maps.Equal(got, want), fmt.Sprintf("routes %v, want %v", got, want)
	})
	calls := e.fake.Faults().Calls()
	atomic := calls[fakeos.RoutersAddExtraRoutes] + calls[fakeos.RoutersRemoveExtraRoutes]
	if noAtomic != (atomic == 0) || noAtomic == (calls[fakeos.RoutersUpdate] == 0) {
		t.Errorf("extraroute-atomic offered %v, but %d atomic route calls and %d router updates", !noAtomic, atomic, calls[fakeos.RoutersUpdate])
	}
}

// PVs of the Cinder CSI driver (volumeHandle: the volume's ID) and in-tree
// Cinder PVs get their volume's availability zone, made a label value as a
// Node's, and drivers.openstack.region; a volume that is gone gets a
// DiskNotFound warning and no labels.
func TestVolumeLabelsOpenStack(t *testing.T) {
	e := newOSEnv(t, osOptions{tweak: volumeLabelsOnly})
	vol := func(zone string) string { return e.fake.AddVolume(fakeos.VolumeSpec{AvailabilityZone: zone}) }
	inTree, viaCSI, right, odd, gone := vol("nova"), vol("az-2"), vol("nova"), vol("AZ 3 (ssd)"), vol("nova")
	if err := e.fake.DeleteVolume(gone); err != nil {
		t.Fatal(err)
	}
	cinder := func(id string) v1.PersistentVolumeSource {
		return v1.PersistentVolumeSource{Cinder: &v1.CinderPersistentVolumeSource{VolumeID: id}}
	}
	checkVolumeLabels(t, e.env, []pvCase{
		{name: "right", source: csi(openstack.CSIDriver, right), labels: topo("nova", osRegion), want: topo("nova", osRegion)},
		{name: "in-tree", source: cinder(inTree), want: topo("nova", osRegion)},
		// A stale zone is corrected; other labels stay.
		{name: "csi", source: csi(openstack.CSIDriver, viaCSI), labels: map[string]string{"team": "db", v1.LabelTopologyZone: "nova"},
			want: topo("az-2", osRegion)},
		{name: "odd-zone", source: csi(openstack.CSIDriver, odd), want: topo("AZ-3-ssd", osRegion)},
		{name: "missing", source: csi(openstack.CSIDriver, gone)},
		{name: "foreign", source: csi(aws.CSIDriverEBS, "vol-0123456789abcdef0")},
	}, "missing")
}
