package loadbalancers_test

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/polyccm/polyccm/core/loadbalancers"
)

// metaInstances also answers with each instance's addresses.
type metaInstances struct {
	instances
	addrs map[string][]v1.NodeAddress
}

func (m *metaInstances) InstanceMetadata(_ context.Context, n *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	return &cloudprovider.InstanceMetadata{ProviderID: n.Spec.ProviderID, NodeAddresses: m.addrs[n.Spec.ProviderID]}, nil
}

// addrLB records the addresses of the Nodes it is given.
type addrLB struct {
	lb
	seen map[string][]v1.NodeAddress
}

func (l *addrLB) UpdateLoadBalancer(_ context.Context, _ string, _ *v1.Service, nodes []*v1.Node) error {
	l.seen = map[string][]v1.NodeAddress{}
	for _, n := range nodes {
		l.seen[n.Name] = n.Status.Addresses
	}
	return nil
}

// A Node the node controller has given a providerID but not yet its
// addresses reaches the driver with the cloud's addresses: the service
// controller would not call again when they arrive.
func TestNodesWithoutAddressesGetTheCloudsAddresses(t *testing.T) {
	public := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.2"}, {Type: v1.NodeExternalIP, Address: "198.51.100.2"}}
	in := &metaInstances{addrs: map[string][]v1.NodeAddress{
		"fake://a": public,
		"fake://b": {{Type: v1.NodeInternalIP, Address: "10.0.0.3"}}, // private only
		"fake://c": {{Type: v1.NodeExternalIP, Address: "198.51.100.4"}},
	}}
	known := []v1.NodeAddress{{Type: v1.NodeExternalIP, Address: "203.0.113.9"}}
	ns := []*v1.Node{node("a", "fake://a", nil), node("b", "fake://b", nil), node("c", "fake://c", nil)}
	ns[2].Status.Addresses = known
	l := &addrLB{}
	w := loadbalancers.Rules(l, loadbalancers.RuleOptions{Instances: in})
	if err := w.UpdateLoadBalancer(context.Background(), "k", svc, ns); err != nil {
		t.Fatal(err)
	}
	if got := l.seen["a"]; len(got) != 2 || got[1] != public[1] {
		t.Errorf("a reached the driver with %v, want the cloud's %v", got, public)
	}
	if got := l.seen["b"]; len(got) != 0 {
		t.Errorf("b reached the driver with %v; a cloud with no external address adds nothing", got)
	}
	if got := l.seen["c"]; len(got) != 1 || got[0] != known[0] {
		t.Errorf("c reached the driver with %v; a Node's own external address is kept", got)
	}
	if len(ns[0].Status.Addresses) != 0 {
		t.Errorf("the caller's Node was changed: %v", ns[0].Status.Addresses)
	}
}
