package hetzner

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
)

func netRoute(dst, gw string) hcloud.NetworkRoute {
	_, d, err := net.ParseCIDR(dst)
	if err != nil {
		panic(err)
	}
	return hcloud.NetworkRoute{Destination: d, Gateway: net.ParseIP(gw)}
}

func TestRoutes(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	s.SetActionDelay(20 * time.Millisecond)
	id, _ := cluster(s, 2)
	nw := &hcloud.Network{ID: id}

	a, _, err := c.Network.AddRoute(ctx, nw, hcloud.NetworkAddRouteOpts{Route: netRoute("10.244.0.0/24", "10.0.0.2")})
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != hcloud.ActionStatusRunning || a.Command != "add_route" || a.Resources[0].ID != id {
		t.Errorf("action = %+v", a)
	}
	// The network is busy while the action runs; the route is not there yet.
	_, _, err = c.Network.AddRoute(ctx, nw, hcloud.NetworkAddRouteOpts{Route: netRoute("10.244.1.0/24", "10.0.0.3")})
	apiErr(t, err, hcloud.ErrorCodeConflict, http.StatusConflict)
	if got := s.Routes(id); len(got) != 0 {
		t.Errorf("routes before the action ended: %v", got)
	}
	if err := c.Action.WaitFor(ctx, a); err != nil {
		t.Fatal(err)
	}
	n, _, _ := c.Network.GetByID(ctx, id)
	if len(n.Routes) != 1 || n.Routes[0].Destination.String() != "10.244.0.0/24" || n.Routes[0].Gateway.String() != "10.0.0.2" {
		t.Errorf("routes = %v", n.Routes)
	}

	bad := []struct {
		r    hcloud.NetworkRoute
		want string
	}{
		{netRoute("10.244.0.0/24", "10.0.0.3"), "network route destination overlaps with another subnetwork or network route"},
		{netRoute("10.244.0.0/16", "10.0.0.3"), "network route destination overlaps with another subnetwork or network route"},
		{netRoute("10.0.5.0/24", "10.0.0.3"), "network route destination overlaps with another subnetwork or network route"},
		{netRoute("8.8.8.0/24", "10.0.0.3"), "network route destination must be a private network (RFC 1918) or 0.0.0.0/0"},
		{netRoute("10.245.0.0/24", "10.1.0.3"), "invalid gateway"},
		{netRoute("10.245.0.0/24", "10.0.0.1"), "invalid gateway"},
	}
	for _, tc := range bad {
		_, _, err := c.Network.AddRoute(ctx, nw, hcloud.NetworkAddRouteOpts{Route: tc.r})
		if e := apiErr(t, err, hcloud.ErrorCodeInvalidInput, http.StatusBadRequest); e.Message != tc.want {
			t.Errorf("%v via %v: %q, want %q", tc.r.Destination, tc.r.Gateway, e.Message, tc.want)
		}
	}
	// A gateway nothing answers on is the cloud's business, not an error.
	a, _, err = c.Network.AddRoute(ctx, nw, hcloud.NetworkAddRouteOpts{Route: netRoute("0.0.0.0/0", "10.0.9.9")})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Action.WaitFor(ctx, a); err != nil {
		t.Fatal(err)
	}

	_, _, err = c.Network.DeleteRoute(ctx, nw, hcloud.NetworkDeleteRouteOpts{Route: netRoute("10.244.0.0/24", "10.0.0.9")})
	apiErr(t, err, hcloud.ErrorCodeNotFound, http.StatusNotFound)
	a, _, err = c.Network.DeleteRoute(ctx, nw, hcloud.NetworkDeleteRouteOpts{Route: netRoute("10.244.0.0/24", "10.0.0.2")})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Action.WaitFor(ctx, a); err != nil {
		t.Fatal(err)
	}
	if got := s.Routes(id); len(got) != 1 || got[0].Destination != "0.0.0.0/0" {
		t.Errorf("routes = %v", got)
	}
	_, _, err = c.Network.AddRoute(ctx, &hcloud.Network{ID: 1}, hcloud.NetworkAddRouteOpts{Route: netRoute("10.244.0.0/24", "10.0.0.2")})
	apiErr(t, err, hcloud.ErrorCodeNotFound, http.StatusNotFound)
}

func TestNetworks(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	id, servers := cluster(s, 2)
	other := s.AddNetwork("other", "192.168.0.0/16", Subnet{IPRange: "192.168.1.0/24", NetworkZone: "us-east"},
		Subnet{Type: "vswitch", IPRange: "192.168.2.0/24", VSwitchID: 1234})
	n, _, err := c.Network.GetByName(ctx, "k8s")
	if err != nil || n == nil || n.ID != id || n.IPRange.String() != "10.0.0.0/8" || len(n.Servers) != 2 ||
		n.Subnets[0].Gateway.String() != "10.0.0.1" || n.Subnets[0].Type != hcloud.NetworkSubnetTypeCloud {
		t.Fatalf("network = %+v %v", n, err)
	}
	o, _, _ := c.Network.GetByID(ctx, other)
	if o.Subnets[1].Type != hcloud.NetworkSubnetTypeVSwitch || o.Subnets[1].VSwitchID != 1234 || o.Subnets[0].NetworkZone != "us-east" {
		t.Errorf("other = %+v", o.Subnets)
	}
	if err := s.AttachServer(servers[0], other, ""); err == nil {
		t.Error("an fsn1 server joined a us-east subnet")
	}
	ash := s.AddServer(ServerSpec{Location: "ash"})
	if err := s.AttachServer(ash, other, ""); err != nil {
		t.Fatal(err)
	}
	if sv, _ := s.Server(ash); sv.PrivateNets[0].IP != "192.168.1.1" {
		t.Errorf("ash server = %+v", sv.PrivateNets)
	}
	if s.NetworkID("other") != other || s.NetworkID("none") != 0 {
		t.Error("NetworkID")
	}
}
