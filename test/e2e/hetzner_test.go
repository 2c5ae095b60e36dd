//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/polyccm/polyccm/drivers/aws"
	"github.com/polyccm/polyccm/drivers/hetzner"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
	fakehz "github.com/polyccm/polyccm/test/fakecloud/hetzner"
	"github.com/polyccm/polyccm/test/harness"
)

// hzLegacyZone is hcloud CCM's zone label (internal/legacydatacenter
// NameFromLocation), written out here rather than taken from the driver.
var hzLegacyZone = map[string]string{
	"fsn1": "fsn1-dc14", "nbg1": "nbg1-dc3", "hel1": "hel1-dc2",
	"ash": "ash-dc1", "hil": "hil-dc1", "sin": "sin-dc1",
}

// serverIPv6 is the address hcloud CCM gives a server with the /64 p:
// the network's ::1.
func serverIPv6(t *testing.T, p string) string {
	t.Helper()
	pre, err := netip.ParsePrefix(p)
	if err != nil {
		t.Fatalf("server IPv6 %q: %v", p, err)
	}
	return pre.Addr().Next().String()
}

// checkHZNode checks the Node hcloud CCM would leave for the server.
func checkHZNode(t *testing.T, node *v1.Node, sv fakehz.CloudServer, zone bool, want []v1.NodeAddress) {
	t.Helper()
	if w := hzProviderID(sv.ID); node.Spec.ProviderID != w {
		t.Errorf("%s: providerID %q, want %q", node.Name, node.Spec.ProviderID, w)
	}
	labels := map[string]string{
		v1.LabelInstanceTypeStable: sv.Type,
		v1.LabelInstanceType:       sv.Type,
		v1.LabelTopologyRegion:     sv.Location,
		hetzner.LabelProvidedBy:    "cloud",
	}
	if zone {
		labels[v1.LabelTopologyZone] = hzLegacyZone[sv.Location]
	}
	for k, w := range labels {
		if got := node.Labels[k]; got != w {
			t.Errorf("%s: label %s=%q, want %q", node.Name, k, got, w)
		}
	}
	if z, ok := node.Labels[v1.LabelTopologyZone]; ok && !zone {
		t.Errorf("%s: label %s=%q with the zone label off", node.Name, v1.LabelTopologyZone, z)
	}
	// The status patch can land a moment after the taint is gone.
	eventually(t, 15*time.Second, node.Name+" addresses", func() (bool, string) {
		n, err := cp.Admin.CoreV1().Nodes().Get(context.Background(), node.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return slices.Equal(n.Status.Addresses, want), fmt.Sprintf("%v, want %v", n.Status.Addresses, want)
	})
}

// 200 Nodes registering at once (a third with a providerID, the rest
// found by name) are initialized as hcloud CCM initializes them, from a
// few pages of the server listing: 200 servers are 4 pages of 50, and not
// one server is fetched on its own while all are in the listing.
func TestHetznerNodesAreInitialized(t *testing.T) {
	const n = 200
	e, _ := newHZEnv(t, hzOptions{tweak: func(s *harness.Settings) {
		// The product's cache TTL: what the node controllers learn from
		// one listing lasts while they work through 200 Nodes.
		s.CacheTTL = 30 * time.Second
	}})
	locations := []string{"fsn1", "nbg1", "hel1"}
	types := []string{"cx22", "cpx21", "cax11"}
	var servers []fakehz.CloudServer
	var names []string
	for i := range n {
		servers = append(servers, e.addServer(fakehz.ServerSpec{Name: e.nodeName(i), Type: types[i%3], Location: locations[i/3%3]}))
		names = append(names, e.nodeName(i))
	}
	before := e.fake.Faults().Calls()
	var wg sync.WaitGroup
	for i, sv := range servers {
		pid := ""
		if i%3 == 0 {
			pid = hzProviderID(sv.ID)
		}
		wg.Go(func() { e.register(sv.Name, pid) })
	}
	wg.Wait()
	e.waitInitialized(names, 2*time.Minute)
	after := e.fake.Faults().Calls()
	lists := after["GET /v1/servers"] - before["GET /v1/servers"]
	gets := after["GET /v1/servers/{id}"] - before["GET /v1/servers/{id}"]

	for i, sv := range servers {
		node, err := e.node(names[i])
		if err != nil {
			t.Fatal(err)
		}
		checkHZNode(t, node, sv, true, []v1.NodeAddress{
			{Type: v1.NodeHostName, Address: sv.Name},
			{Type: v1.NodeExternalIP, Address: sv.PublicIPv4},
			{Type: v1.NodeInternalIP, Address: sv.PrivateNets[0].IP},
		})
		if t.Failed() {
			break // one Node's story is enough
		}
	}
	// Batched: 4 pages a listing; a few listings at most as Nodes keep
	// arriving, never one call a Node.
	if lists > 12 {
		t.Errorf("initializing %d Nodes took %d server listing pages; want at most 12 (3 listings of 4 pages): lookups are not batched", n, lists)
	}
	if lists == 0 {
		t.Errorf("no server listing: the Nodes were not looked up")
	}
	if gets != 0 {
		t.Errorf("%d single-server GETs while every server was in the listing", gets)
	}
	t.Logf("%d Nodes initialized with %d listing pages and %d single GETs (all calls: %v)", n, lists, gets, after)
}

// With addressFamily dualstack, a Node gets its server's IPv4 and the ::1
// of its IPv6 /64 (only the latter for an IPv6-only server), then its
// Network IP; with the zone label off (HCLOUD_INSTANCES_ZONE_LABEL_ENABLED
// false) it gets no zone.
func TestHetznerNodeAddressesDualStack(t *testing.T) {
	e, _ := newHZEnv(t, hzOptions{tweak: func(s *harness.Settings) {
		s.DriverBlock += "\ninstances:\n  addressFamily: dualstack\n  zoneLabel: false"
	}})
	both := e.addServer(fakehz.ServerSpec{Name: e.nodeName(0), Type: "cpx21", Location: "nbg1"})
	v6 := e.addServer(fakehz.ServerSpec{Name: e.nodeName(1), Type: "cx22", Location: "hel1", NoIPv4: true})
	e.register(both.Name, "")
	e.register(v6.Name, hzProviderID(v6.ID))
	e.waitInitialized([]string{both.Name, v6.Name}, 30*time.Second)
	for _, c := range []struct {
		sv   fakehz.CloudServer
		want []v1.NodeAddress
	}{
		{both, []v1.NodeAddress{
			{Type: v1.NodeHostName, Address: both.Name},
			{Type: v1.NodeExternalIP, Address: both.PublicIPv4},
			{Type: v1.NodeExternalIP, Address: serverIPv6(t, both.PublicIPv6)},
			{Type: v1.NodeInternalIP, Address: both.PrivateNets[0].IP},
		}},
		{v6, []v1.NodeAddress{
			{Type: v1.NodeHostName, Address: v6.Name},
			{Type: v1.NodeExternalIP, Address: serverIPv6(t, v6.PublicIPv6)},
			{Type: v1.NodeInternalIP, Address: v6.PrivateNets[0].IP},
		}},
	} {
		node, err := e.node(c.sv.Name)
		if err != nil {
			t.Fatal(err)
		}
		checkHZNode(t, node, c.sv, false, c.want)
	}
}

// A server that is off puts the shutdown taint on its Node (and is not
// gone); a deleted server takes its NotReady Node with it; but while the
// servers endpoints answer 500, 429 or nothing, which says nothing about
// the servers, no Node is deleted.
func TestHetznerShutdownAndDeletedServers(t *testing.T) {
	e, _ := newHZEnv(t, hzOptions{})
	svs := e.nodeServers(4, "fsn1")

	if err := e.fake.SetServerStatus(svs[0].ID, fakehz.StatusOff); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "shutdown taint on "+svs[0].Name, func() (bool, string) {
		node, err := e.node(svs[0].Name)
		if err != nil {
			return false, err.Error()
		}
		return harness.HasTaint(node, harness.ShutdownTaint), fmt.Sprintf("taints %v", node.Spec.Taints)
	})
	for _, sv := range svs[1:] {
		if node, err := e.node(sv.Name); err != nil || harness.HasTaint(node, harness.ShutdownTaint) {
			t.Errorf("%s: shutdown taint on a running server's Node (err %v)", sv.Name, err)
		}
	}

	// Every server lookup now fails: some hang until polyccm gives up,
	// some are throttled (429 rate_limit_exceeded), the rest are 500s.
	// Then a server really goes away.
	f := e.fake.Faults()
	var rules []int
	for _, r := range []faults.Rule{
		{Match: "GET /v1/servers*", Probability: 0.15, Timeout: true},
		{Match: "GET /v1/servers*", Probability: 0.3, Status: 429},
		{Match: "GET /v1/servers*", Status: 500},
	} {
		rules = append(rules, f.AddRule(r))
	}
	before := f.Injected()
	if err := e.fake.DeleteServer(svs[2].ID); err != nil {
		t.Fatal(err)
	}
	// A hung call holds a lookup for cloudAPI.timeout (10 s): the window
	// is long enough for failures of every kind to reach polyccm.
	never(t, 15*time.Second, "a Node was deleted while the servers endpoints failed", func() (bool, string) {
		for _, sv := range svs {
			if !e.exists(sv.Name) {
				return true, sv.Name + " deleted"
			}
		}
		return false, ""
	})
	if got := f.Injected() - before; got < 3 {
		t.Fatalf("only %d injected failures reached polyccm; the test proved nothing", got)
	}
	t.Logf("%d injected failures: %v", f.Injected()-before, f.Responses("GET /v1/servers"))
	for _, r := range rules {
		f.RemoveRule(r)
	}
	eventually(t, 30*time.Second, svs[2].Name+" deleted after its server was", func() (bool, string) {
		return !e.exists(svs[2].Name), "still there"
	})
	for _, sv := range []fakehz.CloudServer{svs[0], svs[1], svs[3]} {
		if !e.exists(sv.Name) {
			t.Errorf("%s was deleted but its server exists", sv.Name)
		}
	}
}

// Pod CIDRs are routed in the Network to each Node's server's private IP,
// as hcloud CCM routes them; a deleted Node's route goes, and a route
// outside the cluster CIDR (a NAT gateway's default route) stays.
func TestHetznerRoutes(t *testing.T) {
	e, _ := newHZEnv(t, hzOptions{tweak: func(s *harness.Settings) {
		s.Controllers = "nodes: true\nnodeLifecycle: true\nroutes: true"
		s.Extra = "routes:\n  clusterCIDR: 10.244.0.0/16\n  reconcilePeriod: 1s"
	}})
	ctx := context.Background()
	nat := hcloud.NetworkRoute{Destination: mustCIDR(t, "0.0.0.0/0"), Gateway: net.ParseIP("10.0.200.1")}
	a, _, err := e.user.Network.AddRoute(ctx, &hcloud.Network{ID: e.network}, hcloud.NetworkAddRouteOpts{Route: nat})
	if err == nil {
		err = e.user.Action.WaitFor(ctx, a)
	}
	if err != nil {
		t.Fatalf("the user's NAT route: %v", err)
	}
	var svs []fakehz.CloudServer
	var names []string
	for i := range 3 {
		sv := e.addServer(fakehz.ServerSpec{Name: e.nodeName(i), Location: "fsn1"})
		n := harness.UninitializedNode(sv.Name, "")
		if i == 0 {
			n.Spec.ProviderID = hzProviderID(sv.ID)
		}
		n.Spec.PodCIDR = fmt.Sprintf("10.244.%d.0/24", i)
		n.Spec.PodCIDRs = []string{n.Spec.PodCIDR}
		e.registerNode(n)
		svs = append(svs, sv)
		names = append(names, sv.Name)
	}
	e.waitInitialized(names, 30*time.Second)
	routes := func() map[string]string {
		got := map[string]string{}
		for _, r := range e.fake.Routes(e.network) {
			got[r.Destination] = r.Gateway
		}
		return got
	}
	want := map[string]string{"0.0.0.0/0": "10.0.200.1"}
	for i, sv := range svs {
		want[fmt.Sprintf("10.244.%d.0/24", i)] = sv.PrivateNets[0].IP
	}
	eventually(t, 60*time.Second, "a route per Node to its server's private IP", func() (bool, string) {
		got := routes()
		return maps.Equal(got, want), fmt.Sprintf("routes %v, want %v", got, want)
	})
	if err := cp.Admin.CoreV1().Nodes().Delete(ctx, names[1], metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	delete(want, "10.244.1.0/24")
	eventually(t, 60*time.Second, "the deleted Node's route removed, the others kept", func() (bool, string) {
		got := routes()
		return maps.Equal(got, want), fmt.Sprintf("routes %v, want %v", got, want)
	})
	never(t, 2*time.Second, "routes changed once converged", func() (bool, string) {
		got := routes()
		return !maps.Equal(got, want), fmt.Sprintf("routes %v, want %v", got, want)
	})
}

func mustCIDR(t *testing.T, s string) *net.IPNet {
	t.Helper()
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// PVs of the Hetzner CSI driver get their volume's location as region and
// its legacy datacenter as zone, as the Nodes there get them; a volume
// that is gone gets a DiskNotFound warning and no labels.
func TestVolumeLabelsHetzner(t *testing.T) {
	e, _ := newHZEnv(t, hzOptions{tweak: volumeLabelsOnly})
	id := func(v int64) string { return fmt.Sprint(v) }
	fsn := e.fake.AddVolume("", "fsn1")
	nbg := e.fake.AddVolume("", "nbg1")
	right := e.fake.AddVolume("", "hel1")
	gone := e.fake.AddVolume("", "fsn1")
	e.fake.DeleteVolume(gone)
	checkVolumeLabels(t, e.env, []pvCase{
		{name: "right", source: csi(hetzner.CSIDriver, id(right)), labels: topo("hel1-dc2", "hel1"), want: topo("hel1-dc2", "hel1")},
		{name: "fsn1", source: csi(hetzner.CSIDriver, id(fsn)), want: topo("fsn1-dc14", "fsn1")},
		// A stale zone is corrected; other labels stay.
		{name: "nbg1", source: csi(hetzner.CSIDriver, id(nbg)), labels: map[string]string{"team": "db", v1.LabelTopologyZone: "fsn1-dc14"},
			want: topo("nbg1-dc3", "nbg1")},
		{name: "missing", source: csi(hetzner.CSIDriver, id(gone))},
		{name: "foreign", source: csi(aws.CSIDriverEBS, "vol-0123456789abcdef0")},
	}, "missing")
}
