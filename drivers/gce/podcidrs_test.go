package gce_test

import (
	"slices"
	"testing"

	"github.com/polyccm/polyccm/core/instances"
	"github.com/polyccm/polyccm/drivers/gce"
	fakegce "github.com/polyccm/polyccm/test/fakecloud/gce"
)

// Instances carry the pod ranges cloud-provider-gcp's cloud CIDR
// allocator reads: nic0's first alias range and the /112 of its IPv6
// address, in the stack type's order, only when every family has one.
func TestPodCIDRsFromAliasRanges(t *testing.T) {
	t.Parallel()
	type inst = fakegce.Instance
	pods := []fakegce.AliasIPRange{{IPCidrRange: "10.4.1.0/24", SubnetworkRangeName: "pods"}, {IPCidrRange: "10.10.0.128/28"}}
	instancesByName := []inst{
		{Name: "alias", AliasIPRanges: pods},
		{Name: "alias-internal-v6", AliasIPRanges: pods, InternalIPv6: "fd20:1:2:3:0:7::"},
		{Name: "alias-external-v6", AliasIPRanges: pods[1:], IPv6: "2600:1900:4000:1:0:9::"},
		{Name: "internal-v6", InternalIPv6: "fd20:1:2:3:0:8:0:5"},
		{Name: "bare"},
	}
	for _, tc := range []struct {
		stack string
		want  map[string][]string
	}{
		{gce.StackIPv4, map[string][]string{
			"alias": {"10.4.1.0/24"}, "alias-internal-v6": {"10.4.1.0/24"}, "alias-external-v6": {"10.10.0.128/28"},
		}},
		{gce.StackDualStack, map[string][]string{
			"alias-internal-v6": {"10.4.1.0/24", "fd20:1:2:3:0:7::/112"},
			"alias-external-v6": {"10.10.0.128/28", "2600:1900:4000:1:0:9::/112"},
		}},
		{gce.StackIPv6, map[string][]string{
			"alias-internal-v6": {"fd20:1:2:3:0:7::/112"},
			"alias-external-v6": {"2600:1900:4000:1:0:9::/112"},
			"internal-v6":       {"fd20:1:2:3:0:8::/112"},
		}},
	} {
		t.Run(tc.stack, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, withConfig(func(c *gce.Config) { c.StackType = tc.stack }))
			e.fake.AddSubnetwork(fakegce.Subnetwork{Name: "nodes", Region: testRegion, IPCidrRange: "10.10.0.0/24",
				SecondaryRanges: []fakegce.SecondaryRange{{RangeName: "pods", IPCidrRange: "10.4.0.0/14"}}})
			var keys []instances.Key
			for _, in := range instancesByName {
				in.Zone, in.Subnetwork = testZone, "nodes"
				keys = append(keys, instances.Key{ProviderID: providerID(e.fake.AddInstance(in))})
			}
			ans, err := e.cloud.Instances().LookupInstances(ctx(t), keys)
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range ans.Results {
				name := instancesByName[i].Name
				if r.Err != nil || r.Instance == nil {
					t.Fatalf("%s: %+v", name, r)
				}
				if got := r.Instance.PodCIDRs; !slices.Equal(got, tc.want[name]) {
					t.Errorf("%s: PodCIDRs %q, want %q", name, got, tc.want[name])
				}
			}
		})
	}
}

// The driver offers pod ranges, with a hint that names what a Node's
// instance lacks in the cluster's stack.
func TestPodCIDRHint(t *testing.T) {
	t.Parallel()
	for stack, want := range map[string]string{
		gce.StackIPv4:      "an alias IP range on the instance's nic0 (a VPC-native instance)",
		gce.StackDualStack: "an alias IP range and an IPv6 address on the instance's nic0 (drivers.gce.stackType is IPV4_IPV6)",
		gce.StackIPv6:      "an IPv6 address on the instance's nic0 (drivers.gce.stackType is IPV6)",
	} {
		e := newEnv(t, withConfig(func(c *gce.Config) { c.StackType = stack }))
		ps, ok := e.cloud.Instances().(instances.PodCIDRSource)
		if !ok {
			t.Fatal("the GCE instance source is not a PodCIDRSource")
		}
		if got := ps.PodCIDRHint(); got != want {
			t.Errorf("%s: hint %q, want %q", stack, got, want)
		}
	}
}
