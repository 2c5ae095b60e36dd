package digitalocean_test

import (
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/drivers/digitalocean"
	fake "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
)

// productDefault sets the default type back to the product's, which
// newLBEnv overrides for the REGIONAL tests.
func productDefault(c *digitalocean.Config) { c.LoadBalancer.DefaultType = "" }

func TestDefaultTypeIsRegionalNetwork(t *testing.T) {
	e := newLBEnv(t, productDefault)
	svc := e.service(nil, lbTCP(80, 30080), v1.ServicePort{Name: "dns", Protocol: v1.ProtocolUDP, Port: 53, NodePort: 30053})
	lb, svc := e.created(svc)
	if lb.Type != fake.LBTypeRegionalNetwork || lb.NetworkStack != fake.LBNetworkStackIPv4 {
		t.Errorf("type %s, stack %s; want REGIONAL_NETWORK IPV4 (the nodes have no IPv6)", lb.Type, lb.NetworkStack)
	}
	// Packets go straight to the droplets, to the Service's own ports.
	want := []fake.ForwardingRule{
		{EntryProtocol: "udp", EntryPort: 53, TargetProtocol: "udp", TargetPort: 53},
		{EntryProtocol: "tcp", EntryPort: 80, TargetProtocol: "tcp", TargetPort: 80},
	}
	if !reflect.DeepEqual(lb.ForwardingRules, want) {
		t.Errorf("rules %+v, want %+v", lb.ForwardingRules, want)
	}
	if got := svc.Annotations[digitalocean.AnnType]; got != "REGIONAL_NETWORK" {
		t.Errorf("type annotation %q, want REGIONAL_NETWORK written back", got)
	}
	e.active(svc)
	if n := e.calls(lbPut); n != 0 {
		t.Errorf("%d updates of an unchanged load balancer", n)
	}
}

func TestRegionalNetworkDualStackNodes(t *testing.T) {
	e := newLBEnv(t, productDefault)
	for i, n := range e.nodes {
		n.Status.Addresses = append(n.Status.Addresses, v1.NodeAddress{Type: v1.NodeExternalIP, Address: "2001:db8:1::" + string(rune('a'+i))})
	}
	lb, _ := e.created(e.service(nil))
	if lb.NetworkStack != fake.LBNetworkStackDualstack {
		t.Errorf("stack %s, want DUALSTACK: every node has IPv6", lb.NetworkStack)
	}
}

// Private-only nodes (no ExternalIP) can serve a REGIONAL load balancer
// but not a REGIONAL_NETWORK EXTERNAL one, as in the DigitalOcean CCM.
func TestTargetsNeedAPublicAddress(t *testing.T) {
	private := func(e *lbEnv) {
		var kept []v1.NodeAddress
		for _, a := range e.nodes[1].Status.Addresses {
			if a.Type != v1.NodeExternalIP {
				kept = append(kept, a)
			}
		}
		e.nodes[1].Status.Addresses = kept
	}
	t.Run("REGIONAL_NETWORK leaves it out", func(t *testing.T) {
		e := newLBEnv(t, productDefault)
		private(e)
		lb, _ := e.created(e.service(nil))
		if len(lb.DropletIDs) != 1 {
			t.Errorf("droplets %v, want only the node with a public address", lb.DropletIDs)
		}
	})
	t.Run("REGIONAL takes it", func(t *testing.T) {
		e := newLBEnv(t)
		private(e)
		lb, _ := e.created(e.service(nil))
		if len(lb.DropletIDs) != 2 {
			t.Errorf("droplets %v, want both", lb.DropletIDs)
		}
	})
	t.Run("REGIONAL_NETWORK with no public node at all", func(t *testing.T) {
		e := newLBEnv(t, productDefault)
		for range e.nodes {
			private(e)
			e.nodes[0], e.nodes[1] = e.nodes[1], e.nodes[0]
		}
		_, err := e.ensure(e.service(nil))
		if err == nil || !strings.Contains(err.Error(), "public IPv4") || e.writes() != 0 {
			t.Errorf("Ensure = %v with %d writes; want a problem naming the fix and nothing made", err, e.writes())
		}
	})
	t.Run("IPv6-only nodes are left out", func(t *testing.T) {
		e := newLBEnv(t)
		e.nodes[1].Status.Addresses = []v1.NodeAddress{{Type: v1.NodeExternalIP, Address: "2001:db8:1::1"}}
		lb, _ := e.created(e.service(nil))
		if len(lb.DropletIDs) != 1 {
			t.Errorf("droplets %v, want the IPv6-only node left out", lb.DropletIDs)
		}
	})
}

// A load balancer made as REGIONAL (by an older release, or before the
// default changed) stays REGIONAL: its Service, naming no type, is not
// frozen by a type change polyccm cannot make.
func TestExistingTypeIsKept(t *testing.T) {
	e := newLBEnv(t, productDefault)
	svc := e.service(nil)
	old := e.fake.AddLoadBalancer(fake.LoadBalancer{
		Name: lbDefaultName, Region: lbRegion, Type: fake.LBTypeRegional, NetworkStack: fake.LBNetworkStackIPv4, Status: fake.StatusActive,
		ForwardingRules: []fake.ForwardingRule{{EntryProtocol: "tcp", EntryPort: 80, TargetProtocol: "tcp", TargetPort: 30080}},
	})
	e.active(svc)
	got, _ := e.fake.LoadBalancer(old.ID)
	if got.Type != fake.LBTypeRegional || got.ForwardingRules[0].TargetPort != 30080 || len(got.DropletIDs) != 2 {
		t.Errorf("load balancer %s, rules %+v, droplets %v; want REGIONAL to node port 30080 with both droplets", got.Type, got.ForwardingRules, got.DropletIDs)
	}
	if a := e.reload(svc).Annotations[digitalocean.AnnType]; a != "REGIONAL" {
		t.Errorf("type annotation %q, want REGIONAL written back", a)
	}
	if n := e.calls(lbPost); n != 0 {
		t.Errorf("%d creates", n)
	}
	for _, ev := range lbEvents(e.rec) {
		if strings.HasPrefix(ev, "Warning") {
			t.Errorf("event %q", ev)
		}
	}
}
