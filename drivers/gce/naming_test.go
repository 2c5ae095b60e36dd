package gce

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// The names and descriptions are cloud-provider-gcp's, spelled out here
// from its gce_loadbalancer_naming.go and gce_loadbalancer_external.go
// (kubernetes/cloud-provider-gcp at 4e24531), not derived from polyccm's
// code: a switch finds its resources only if every character matches.
func TestUpstreamNames(t *testing.T) {
	const cid, lb = "2a7f1c9e0b3d4f61", "a0c6b1f0e1d2c4e5f8a9b7c6d5e4f3a2"
	for _, c := range []struct{ got, want string }{
		{nodesHealthCheckName(cid), "k8s-2a7f1c9e0b3d4f61-node"},
		{firewallName(lb), "k8s-fw-a0c6b1f0e1d2c4e5f8a9b7c6d5e4f3a2"},
		{externalHCFirewallName(cid, nodesHealthCheckName(cid), true), "k8s-2a7f1c9e0b3d4f61-node-http-hc"},
		{externalHCFirewallName(cid, lb, false), "k8s-a0c6b1f0e1d2c4e5f8a9b7c6d5e4f3a2-http-hc"},
		{internalHCFirewallName(lb, cid, true), "k8s-2a7f1c9e0b3d4f61-node-hc"},
		{internalHCFirewallName(lb, cid, false), "a0c6b1f0e1d2c4e5f8a9b7c6d5e4f3a2-hc"},
		{instanceGroupName(cid), "k8s-ig--2a7f1c9e0b3d4f61"},
		{instanceGroupName(""), "k8s-ig"},
		// sha1("None") and sha1("ClientIP"), their first 16 hex digits.
		{sharedBackendServiceName(cid, "TCP", v1.ServiceAffinityNone), "k8s-2a7f1c9e0b3d4f61-internal-tcp-nmv1-6eef6648406c333a"},
		{sharedBackendServiceName(cid, "UDP", v1.ServiceAffinityClientIP), "k8s-2a7f1c9e0b3d4f61-internal-udp-nmv1-1668fd70f588116e"},
		{serviceDescription("shop/web"), `{"kubernetes.io/service-name":"shop/web"}`},
		{firewallDescription("shop/web", "203.0.113.7"), `{"kubernetes.io/service-name":"shop/web", "kubernetes.io/service-ip":"203.0.113.7"}`},
		{nodesFirewallDescription(cid), `{"kubernetes.io/cluster-id":"2a7f1c9e0b3d4f61"}`},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want upstream's %s", c.got, c.want)
		}
	}
}
