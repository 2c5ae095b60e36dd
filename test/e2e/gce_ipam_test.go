//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fakegce "github.com/polyccm/polyccm/test/fakecloud/gce"
	"github.com/polyccm/polyccm/test/harness"
)

// VPC-native Nodes get their pod CIDRs from their instances' alias IP
// ranges (and IPv6 ranges, dual-stack) and are marked network-available;
// a Node whose instance has no range gets a CIDRNotAvailable warning.
// Lookups share the node controllers' batched listings: no get per node.
func TestGCENodeIPAM(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stack string // drivers.gce.stackType; "" the default, IPV4
	}{{"ipv4", ""}, {"dual-stack", "IPV4_IPV6"}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newGCEEnv(t, func(s *harness.Settings) {
				s.Controllers = "nodes: true\nnodeLifecycle: false\nservices: false\nnodeIPAM: true"
				if tc.stack != "" {
					s.DriverBlock += "\nstackType: " + tc.stack
				}
			})
			e.fake.AddSubnetwork(fakegce.Subnetwork{Name: "ipam", Region: gceRegion, Network: "default", IPCidrRange: "10.20.0.0/24",
				SecondaryRanges: []fakegce.SecondaryRange{{RangeName: "pods", IPCidrRange: "10.64.0.0/14"}}})
			const n = 6
			want := map[string][]string{}
			var names []string
			for i := range n {
				in := fakegce.Instance{Name: e.nodeName(i), Zone: "us-central1-a", Subnetwork: "ipam", Tags: []string{gceNodeTag},
					AliasIPRanges: []fakegce.AliasIPRange{{IPCidrRange: fmt.Sprintf("10.64.%d.0/24", i), SubnetworkRangeName: "pods"}}}
				cidrs := []string{fmt.Sprintf("10.64.%d.0/24", i)}
				if tc.stack != "" {
					in.InternalIPv6 = fmt.Sprintf("fd20:1:2:3:0:%x::", i+1)
					cidrs = append(cidrs, fmt.Sprintf("fd20:1:2:3:0:%x::/112", i+1))
				}
				in = e.fake.AddInstance(in)
				want[in.Name] = cidrs
				names = append(names, in.Name)
				// Half register with a providerID, half get theirs from
				// the cloud node controller first.
				pid := ""
				if i%2 == 0 {
					pid = e.providerID(in)
				}
				e.register(in.Name, pid)
			}
			// No range for the stack: no alias range at all, or (dual-stack)
			// no IPv6 address.
			bare := fakegce.Instance{Name: e.nodeName(n), Zone: "us-central1-a", Subnetwork: "ipam", Tags: []string{gceNodeTag}}
			if tc.stack != "" {
				bare.AliasIPRanges = []fakegce.AliasIPRange{{IPCidrRange: "10.64.99.0/24", SubnetworkRangeName: "pods"}}
			}
			bare = e.fake.AddInstance(bare)
			e.register(bare.Name, e.providerID(bare))

			eventually(t, 60*time.Second, "pod CIDRs on every node", func() (bool, string) {
				var pending []string
				for _, name := range names {
					node, err := e.node(name)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(node.Spec.PodCIDRs, want[name]) || node.Spec.PodCIDR != want[name][0] || !networkAvailable(node) {
						pending = append(pending, fmt.Sprintf("%s: %v %v", name, node.Spec.PodCIDRs, node.Status.Conditions))
					}
				}
				return len(pending) == 0, strings.Join(pending, "; ")
			})
			ev := waitNodeWarning(t, bare.Name, "CIDRNotAvailable")
			if !strings.Contains(ev.Message, "Node "+bare.Name) || !strings.Contains(ev.Message, "nic0") {
				t.Errorf("CIDRNotAvailable message %q names neither the Node nor what to give its instance", ev.Message)
			}
			node, err := e.node(bare.Name)
			if err != nil {
				t.Fatal(err)
			}
			if len(node.Spec.PodCIDRs) != 0 || networkAvailable(node) {
				t.Errorf("%s without a range got %v, %v", bare.Name, node.Spec.PodCIDRs, node.Status.Conditions)
			}
			if gets := e.fake.Faults().CallCount("GET /compute/v1/projects/{project}/zones/{zone}/instances/{instance}"); gets != 0 {
				t.Errorf("%d instance gets: lookups are not batched (%v)", gets, e.fake.Faults().Calls())
			}
		})
	}
}

// networkAvailable: NetworkUnavailable False as cloud-provider-gcp sets it.
func networkAvailable(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeNetworkUnavailable {
			return c.Status == v1.ConditionFalse && c.Reason == "RouteCreated"
		}
	}
	return false
}

// waitNodeWarning waits for a Warning event with reason on a Node.
func waitNodeWarning(t *testing.T, name, reason string) v1.Event {
	t.Helper()
	var got v1.Event
	eventually(t, 30*time.Second, "a "+reason+" event on "+name, func() (bool, string) {
		evs, err := cp.Admin.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{
			FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + name + ",type=Warning",
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs.Items {
			if ev.Reason == reason {
				got = ev
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d other warnings", len(evs.Items))
	})
	return got
}
