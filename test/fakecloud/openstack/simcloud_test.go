package openstack_test

import (
	"context"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	gos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"

	fakeos "github.com/polyccm/polyccm/test/fakecloud/openstack"
	"github.com/polyccm/polyccm/test/simcloud"
)

// The simulated cloud over this fake, as the e2e tests, demo and bench
// use it (an external test: simcloud imports this package), read with
// gophercloud authenticated as the config block says.
func TestSimulatedCloud(t *testing.T) {
	if !slices.Contains(simcloud.Names(), "openstack") {
		t.Fatalf("names = %v", simcloud.Names())
	}
	cl, err := simcloud.New("openstack", simcloud.Options{ClusterName: "sim", Profile: &simcloud.Fast})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if cl.Title() != "OpenStack" || cl.ThrottleError() != "429 overLimit" || cl.Env("") != nil {
		t.Errorf("%s %s", cl.Title(), cl.ThrottleError())
	}
	// No load balancers yet: the demo and the bench leave them out.
	if simcloud.HasLoadBalancers("openstack") || cl.LBPorts() != nil || cl.LBLeftovers() != nil || !simcloud.HasLoadBalancers("hetzner") {
		t.Errorf("load balancers: %v %v", cl.LBPorts(), cl.LBLeftovers())
	}

	block, err := cl.ConfigBlock(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`^authURL: (http://127\.0\.0\.1:\d+/identity/v3)\nregion: RegionOne\napplicationCredentialID: ([0-9a-f]{32})\n` +
		`applicationCredentialSecret: \{file: (\S+)\}\nrouterID: ([0-9a-f-]{36})$`).FindStringSubmatch(block)
	if m == nil {
		t.Fatalf("block = %q", block)
	}
	secret, err := os.ReadFile(m[3])
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p, err := gos.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: m[1],
		ApplicationCredentialID: m[2], ApplicationCredentialSecret: strings.TrimSpace(string(secret))})
	if err != nil {
		t.Fatal(err)
	}
	eo := gophercloud.EndpointOpts{Region: "RegionOne"}
	compute, err := gos.NewComputeV2(p, eo)
	if err != nil {
		t.Fatal(err)
	}
	network, err := gos.NewNetworkV2(p, eo)
	if err != nil {
		t.Fatal(err)
	}

	nodes := cl.AddInstances(6)
	nodes = append(nodes, cl.AddInstances(3)...)
	empty := 0
	for i, n := range nodes {
		if n.Name != "node-0"+string(rune('0'+i)) {
			t.Errorf("node %d = %s", i, n.Name)
		}
		if n.ProviderID == "" {
			empty++
		} else if !regexp.MustCompile(`^openstack:///[0-9a-f-]{36}$`).MatchString(n.ProviderID) {
			t.Errorf("providerID = %s", n.ProviderID)
		}
	}
	if empty != 3 {
		t.Errorf("%d Nodes without providerID, want 3", empty)
	}
	pages, err := servers.List(compute, servers.ListOpts{}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all, err := servers.ExtractServers(pages)
	if err != nil || len(all) != 9 {
		t.Fatal(all, err)
	}
	byName := map[string]servers.Server{}
	for _, s := range all {
		byName[s.Name] = s
	}
	sv := byName["node-08"]
	addrs, _ := sv.Addresses[simcloud.OpenStackNetwork].([]any)
	var kinds []string
	for _, a := range addrs {
		a, _ := a.(map[string]any)
		kinds = append(kinds, a["OS-EXT-IPS:type"].(string)+" "+a["addr"].(string))
	}
	if sv.AvailabilityZone != "nova" || len(kinds) != 2 || !strings.HasPrefix(kinds[0], "fixed 10.0.") || kinds[1] != "floating 198.18.1.8" {
		t.Errorf("server %s: zone %q, addresses %v", sv.Name, sv.AvailabilityZone, kinds)
	}
	portPages, err := ports.List(network, ports.ListOpts{DeviceID: sv.ID}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ps, _ := ports.ExtractPorts(portPages); len(ps) != 1 || ps[0].Status != "ACTIVE" {
		t.Errorf("ports of %s: %+v", sv.Name, ps)
	}
	r, err := routers.Get(ctx, network, m[4]).Extract()
	if err != nil || r.Name != simcloud.OpenStackRouter || r.GatewayInfo.NetworkID == "" {
		t.Errorf("router %+v: %v", r, err)
	}

	if err := cl.PowerOff(1); err != nil {
		t.Fatal(err)
	}
	if err := cl.Remove(2); err != nil {
		t.Fatal(err)
	}
	if off, err := servers.Get(ctx, compute, byName["node-01"].ID).Extract(); err != nil || off.Status != "SHUTOFF" {
		t.Errorf("powered off: %+v %v", off, err)
	}
	if _, err := servers.Get(ctx, compute, byName["node-02"].ID).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("removed server: %v", err)
	}
	if cl.Calls() == 0 || cl.Faults() == nil {
		t.Error("no calls counted")
	}

	// The realistic profile throttles each service with its bucket.
	rp, err := simcloud.StartOpenStack(simcloud.Options{ClusterName: "sim"})
	if err != nil {
		t.Fatal(err)
	}
	defer rp.Fake.Close()
	throttled := false
	for range fakeos.DefaultRateLimit + 20 {
		resp, err := http.Get(rp.Fake.URL() + "/compute/v2.1/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			throttled = true
			break
		}
	}
	if !throttled {
		t.Errorf("realistic: %d quick calls to Nova, none throttled", fakeos.DefaultRateLimit+20)
	}
}
