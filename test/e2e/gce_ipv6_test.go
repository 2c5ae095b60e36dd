//go:build e2e

package e2e

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/polyccm/polyccm/drivers/gce"
	fakegce "github.com/polyccm/polyccm/test/fakecloud/gce"
)

// A dual-stack internal Service, through the binary and the dual-stack
// API server: an IPv4 and an IPv6 forwarding rule to one backend service,
// both addresses in the status in the Service's family order, and nothing
// left when it goes.
func TestGCEDualStackInternalLoadBalancer(t *testing.T) {
	e, _ := gceLB(t, 2, nil)
	v6net := netip.MustParsePrefix("fd20:9:8:7::/64")
	e.fake.AddSubnetwork(fakegce.Subnetwork{Name: "dual", Region: gceRegion, Network: "default", IPCidrRange: "10.30.0.0/24",
		StackType: "IPV4_IPV6", IPv6AccessType: "INTERNAL", InternalIPv6Prefix: v6net.String()})
	policy := v1.IPFamilyPolicyRequireDualStack
	nsService(t, "default", "dual", map[string]string{gce.AnnLoadBalancerType: "Internal", gce.AnnInternalSubnet: "dual"}, func(s *v1.Service) {
		s.Spec.IPFamilyPolicy = &policy
		s.Spec.IPFamilies = []v1.IPFamily{v1.IPv6Protocol, v1.IPv4Protocol}
	}, tcp(8080))
	var svc *v1.Service
	eventually(t, 90*time.Second, "both addresses in the status", func() (bool, string) {
		svc = getSvc(t, "dual")
		ing := svc.Status.LoadBalancer.Ingress
		return len(ing) == 2, fmt.Sprintf("ingress %v", ing)
	})
	ing := svc.Status.LoadBalancer.Ingress
	v6, err6 := netip.ParseAddr(ing[0].IP)
	v4, err4 := netip.ParseAddr(ing[1].IP)
	if err6 != nil || err4 != nil || !v6net.Contains(v6) || !netip.MustParsePrefix("10.30.0.0/24").Contains(v4) {
		t.Errorf("status %v, want an IPv6 address of %s first (the Service's first family), then one of 10.30.0.0/24", ing, v6net)
	}
	base := cloudprovider.DefaultLoadBalancerName(svc)
	fr4, ok4 := e.fake.ForwardingRule(gceRegion, base)
	fr6, ok6 := e.fake.ForwardingRule(gceRegion, base+"-ipv6")
	if !ok4 || !ok6 || fr6.IPVersion != "IPV6" || fr6.BackendService != fr4.BackendService {
		t.Errorf("rules %+v (%v) and %+v (%v): want an IPv4 and an IPV6 rule to one backend service", fr4, ok4, fr6, ok6)
	}
	var fws []string
	for _, fw := range e.fake.Firewalls() {
		fws = append(fws, fw.Name)
	}
	if !slices.Contains(fws, "k8s-fw-"+base+"-ipv6") || !slices.ContainsFunc(fws, func(n string) bool { return strings.HasSuffix(n, "-node-hc-ipv6") }) {
		t.Errorf("firewall rules %v, want the IPv6 ones", fws)
	}
	deleteServiceAndWait(t, "dual", 90*time.Second)
	if live := e.live(); len(live) != 0 {
		t.Errorf("resources left after the Service was deleted: %v", live)
	}
}
