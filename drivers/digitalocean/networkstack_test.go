package digitalocean_test

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/drivers/digitalocean"
	fake "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
)

// A load balancer keeps the network stack it was made with. The
// DigitalOcean CCM makes REGIONAL ones DUALSTACK for IPv4 Services (since
// v0.1.63): after a switch such a Service must keep following its Nodes
// and its ports, not freeze over a stack polyccm would have chosen
// otherwise. Only a Service that asks for another stack hears about it,
// in a Warning event, and the rest of it is still applied.
func TestNetworkStackIsKept(t *testing.T) {
	for _, c := range []struct {
		name      string
		made      string            // the stack the load balancer was made with
		ann       map[string]string // on the Service
		families  []v1.IPFamily
		wantEvent bool
	}{
		{name: "upstream's DUALSTACK for an IPv4 Service", made: fake.LBNetworkStackDualstack, families: []v1.IPFamily{v1.IPv4Protocol}},
		{name: "network-stack asks for another", made: fake.LBNetworkStackDualstack,
			ann: map[string]string{digitalocean.AnnNetworkStack: "IPV4"}, wantEvent: true},
		{name: "an older release's IPV4 REGIONAL one", made: fake.LBNetworkStackIPv4},
		{name: "network-stack asks for DUALSTACK on an IPV4 one", made: fake.LBNetworkStackIPv4,
			ann: map[string]string{digitalocean.AnnNetworkStack: "DUALSTACK"}, wantEvent: true},
		{name: "ipFamilies do not count, as upstream", made: fake.LBNetworkStackIPv4,
			families: []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newLBEnv(t)
			ann := map[string]string{}
			for k, v := range c.ann {
				ann[k] = v
			}
			svc := e.service(ann)
			if c.families != nil {
				svc.Spec.IPFamilies = c.families
				svc = e.update(svc)
			}
			old := e.fake.AddLoadBalancer(fake.LoadBalancer{
				Name: lbDefaultName, Region: lbRegion, NetworkStack: c.made, Status: fake.StatusActive,
				ForwardingRules: []fake.ForwardingRule{{EntryProtocol: "tcp", EntryPort: 80, TargetProtocol: "tcp", TargetPort: 30080}},
			})
			lbEvents(e.rec)
			// A port change and two Nodes to add: both must reach it.
			svc.Spec.Ports[0].NodePort = 30081
			svc = e.update(svc)
			e.active(svc)
			got, _ := e.fake.LoadBalancer(old.ID)
			if got.NetworkStack != c.made || len(got.DropletIDs) != len(e.nodes) || got.ForwardingRules[0].TargetPort != 30081 {
				t.Errorf("load balancer: stack %s, %d droplets, rules %+v; want %s, %d droplets, target port 30081",
					got.NetworkStack, len(got.DropletIDs), got.ForwardingRules, c.made, len(e.nodes))
			}
			if n := e.calls(lbPost); n != 0 {
				t.Errorf("%d creates, want 0", n)
			}
			var warned []string
			for _, ev := range lbEvents(e.rec) {
				if strings.HasPrefix(ev, "Warning LoadBalancerNetworkStackKept ") {
					warned = append(warned, ev)
				} else if strings.HasPrefix(ev, "Warning") {
					t.Errorf("event %q", ev)
				}
			}
			if c.wantEvent != (len(warned) == 1) || (c.wantEvent && !strings.Contains(warned[0], "keeps "+c.made)) {
				t.Errorf("events %q; want a warning: %v", warned, c.wantEvent)
			}
		})
	}
}
