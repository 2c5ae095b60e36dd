package gce_test

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/polyccm/polyccm/drivers/gce"
	fakegce "github.com/polyccm/polyccm/test/fakecloud/gce"
)

const dualSubnet = "dual"

// dualStack adds a dual-stack subnetwork with internal IPv6 addresses.
func (e *env) dualStack() netip.Prefix {
	e.fake.AddSubnetwork(fakegce.Subnetwork{Name: dualSubnet, Region: testRegion, IPCidrRange: "10.20.0.0/20",
		StackType: "IPV4_IPV6", IPv6AccessType: "INTERNAL", InternalIPv6Prefix: "fd20:1:2:3::/64"})
	return netip.MustParsePrefix("fd20:1:2:3::/64")
}

func dualService(families ...v1.IPFamily) *v1.Service {
	svc := service(map[string]string{gce.AnnLoadBalancerType: "Internal", gce.AnnInternalSubnet: dualSubnet}, tcp(80, 30080))
	svc.Spec.IPFamilies = families
	policy := v1.IPFamilyPolicySingleStack
	if len(families) == 2 {
		policy = v1.IPFamilyPolicyRequireDualStack
	}
	svc.Spec.IPFamilyPolicy = &policy
	return svc
}

// ensureStatus is EnsureLoadBalancer, failing the test on an error, with
// the status written back to the Service as the service controller does.
func (e *env) ensureStatus(svc *v1.Service, nodes []*v1.Node) []string {
	e.t.Helper()
	st, err := e.ensure(svc, nodes)
	if err != nil {
		e.t.Fatalf("EnsureLoadBalancer: %v", err)
	}
	svc.Status.LoadBalancer = *st
	var ips []string
	for _, in := range st.Ingress {
		ips = append(ips, in.IP)
	}
	return ips
}

func inPrefix(p netip.Prefix, ip string) bool {
	a, err := netip.ParseAddr(ip)
	return err == nil && p.Contains(a)
}

func TestDualStackInternalLoadBalancer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v6net := e.dualStack()
	nodes := e.nodes("a", 2, testZone)
	svc := dualService(v1.IPv4Protocol, v1.IPv6Protocol)
	lb := e.lbName(svc)

	ips := e.ensureStatus(svc, nodes)
	if len(ips) != 2 || !strings.HasPrefix(ips[0], "10.20.") || !inPrefix(v6net, ips[1]) {
		t.Fatalf("status %v, want the subnetwork's IPv4 address then an IPv6 one of %s", ips, v6net)
	}
	fr4, fr6 := e.forwardingRule(lb), e.forwardingRule(lb+"-ipv6")
	if fr6.IPVersion != "IPV6" || shortURL(fr6.BackendService) != shortURL(fr4.BackendService) || lastSeg(fr6.Subnetwork) != dualSubnet {
		t.Errorf("IPv6 rule %+v, want an IPV6 rule to the IPv4 rule's backend service %s in %s", fr6, fr4.BackendService, dualSubnet)
	}
	fw6 := e.firewall("k8s-fw-" + lb + "-ipv6")
	if !slices.Equal(fw6.SourceRanges, []string{"::/0"}) || len(fw6.DestinationRanges) != 1 || !strings.HasPrefix(fw6.DestinationRanges[0], ips[1]+"/") {
		t.Errorf("IPv6 firewall rule: sources %v, destinations %v; want ::/0 to %s", fw6.SourceRanges, fw6.DestinationRanges, ips[1])
	}
	if hc6 := e.firewall(e.nodesHC() + "-hc-ipv6"); !slices.Equal(hc6.SourceRanges, []string{"2600:2d00:1:b029::/64"}) {
		t.Errorf("IPv6 health-check firewall rule sources %v, want Google's IPv6 health checkers", hc6.SourceRanges)
	}
	if fw4 := e.firewall("k8s-fw-" + lb); slices.ContainsFunc(fw4.SourceRanges, func(r string) bool { return strings.Contains(r, ":") }) {
		t.Errorf("the IPv4 firewall rule holds IPv6 ranges: %v", fw4.SourceRanges)
	}
	if a := e.fake.Addresses(); len(a) != 0 {
		t.Errorf("reservations left after the rules were made: %+v", a)
	}
	if st, ok := e.get(svc); !ok || len(st.Ingress) != 2 || st.Ingress[1].IP != ips[1] {
		t.Errorf("GetLoadBalancer = %+v, %v; want both addresses", st, ok)
	}

	// Steady state: nothing is written.
	before := e.mutations()
	e.ensureStatus(svc, nodes)
	if d := e.mutations() - before; d != 0 {
		t.Errorf("%d changing calls for an unchanged dual-stack Service: %v", d, e.fake.Faults().Calls())
	}

	// A change GCE cannot make in place replaces both rules; both keep
	// their addresses.
	svc.Spec.Ports = append(svc.Spec.Ports, tcp(443, 30443))
	if got := e.ensureStatus(svc, nodes); !slices.Equal(got, ips) {
		t.Errorf("after the rules were replaced the addresses are %v, want %v kept", got, ips)
	}
	if fr6 := e.forwardingRule(lb + "-ipv6"); !slices.Equal(fr6.Ports, []string{"443", "80"}) && !slices.Equal(fr6.Ports, []string{"80", "443"}) {
		t.Errorf("IPv6 rule ports %v, want 80 and 443", fr6.Ports)
	}
	if a := e.fake.Addresses(); len(a) != 0 {
		t.Errorf("reservations left after the replacement: %+v", a)
	}

	// The IPv6 family removed: the IPv6 rule and its firewall rule go,
	// the IPv4 one stays as it is.
	svc.Spec.IPFamilies = []v1.IPFamily{v1.IPv4Protocol}
	if got := e.ensureStatus(svc, nodes); !slices.Equal(got, ips[:1]) {
		t.Errorf("IPv4 only: status %v, want %v", got, ips[:1])
	}
	for _, r := range e.fake.ForwardingRules() {
		if strings.HasSuffix(r.Name, "-ipv6") {
			t.Errorf("IPv6 rule %s left after the family was removed", r.Name)
		}
	}
	if _, ok := e.fake.Firewall("k8s-fw-" + lb + "-ipv6"); ok {
		t.Error("IPv6 firewall rule left after the family was removed")
	}

	e.mustDelete(svc)
	if live := e.live(); len(live) != 0 {
		t.Errorf("left after EnsureLoadBalancerDeleted: %v", live)
	}
}

func TestIPv6OnlyInternalLoadBalancer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	v6net := e.dualStack()
	nodes := e.nodes("a", 2, testZone)
	svc := dualService(v1.IPv6Protocol)
	lb := e.lbName(svc)
	ips := e.ensureStatus(svc, nodes)
	if len(ips) != 1 || !inPrefix(v6net, ips[0]) {
		t.Fatalf("status %v, want one IPv6 address of %s", ips, v6net)
	}
	for _, r := range e.fake.ForwardingRules() {
		if r.Name != lb+"-ipv6" {
			t.Errorf("an IPv6-only Service made rule %s", r.Name)
		}
	}
	if _, ok := e.fake.Firewall("k8s-fw-" + lb); ok {
		t.Error("an IPv6-only Service made an IPv4 firewall rule")
	}
	// Node churn reaches it: a node sync is not taken for a missing
	// load balancer.
	more := append(nodes, e.nodes("b", 1, testZone)...)
	if err := e.lb.UpdateLoadBalancer(ctx(t), "kubernetes", svc, more); err != nil {
		t.Fatalf("UpdateLoadBalancer: %v", err)
	}
	if got := shortURLs(e.instanceGroups()[testZone].Members); !slices.Equal(got, instancePaths(more)) {
		t.Errorf("group holds %v after the node sync, want %v", got, instancePaths(more))
	}
	e.mustDelete(svc)
	if live := e.live(); len(live) != 0 {
		t.Errorf("left: %v", live)
	}
}

// An external Service asking for IPv6 gets what cloud-provider-gcp gives
// it: an IPv4 target-pool load balancer, and a Normal event saying so.
func TestExternalServesIPv4Only(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	svc := service(nil, tcp(80, 30080))
	svc.Spec.IPFamilies = []v1.IPFamily{v1.IPv6Protocol, v1.IPv4Protocol}
	ips := e.ensureStatus(svc, e.nodes("a", 1, testZone))
	if len(ips) != 1 || !netip.MustParseAddr(ips[0]).Is4() {
		t.Errorf("status %v, want one IPv4 address", ips)
	}
	if ev := strings.Join(e.events(), "\n"); !strings.Contains(ev, "Normal") || !strings.Contains(ev, "spec.ipFamilies") {
		t.Errorf("events %q, want a Normal event about spec.ipFamilies", ev)
	}
}

// reserve reserves an address as the operator would, behind polyccm.
func (e *env) reserve(a *computepb.Address) string {
	e.t.Helper()
	cl, err := compute.NewAddressesRESTClient(ctx(e.t), e.userClient()...)
	if err != nil {
		e.t.Fatal(err)
	}
	defer cl.Close()
	op, err := cl.Insert(ctx(e.t), &computepb.InsertAddressRequest{Project: testProject, Region: testRegion, AddressResource: a})
	if err == nil {
		err = op.Wait(ctx(e.t))
	}
	if err != nil {
		e.t.Fatalf("reserving %s: %v", a.GetName(), err)
	}
	got, err := cl.Get(ctx(e.t), &computepb.GetAddressRequest{Project: testProject, Region: testRegion, Address: a.GetName()})
	if err != nil {
		e.t.Fatal(err)
	}
	return got.GetAddress()
}

// networking.gke.io/load-balancer-ip-addresses: the named reservations
// are the rules' addresses, and stay reserved when the Service goes.
func TestStaticAddressesAnnotation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.dualStack()
	subnet := "projects/" + testProject + "/regions/" + testRegion + "/subnetworks/" + dualSubnet
	ip4 := e.reserve(&computepb.Address{Name: proto.String("ilb-v4"), AddressType: proto.String("INTERNAL"), Subnetwork: &subnet})
	ip6 := e.reserve(&computepb.Address{Name: proto.String("ilb-v6"), AddressType: proto.String("INTERNAL"), Subnetwork: &subnet, IpVersion: proto.String("IPV6")})
	nodes := e.nodes("a", 1, testZone)

	svc := dualService(v1.IPv4Protocol, v1.IPv6Protocol)
	svc.Annotations[gce.AnnIPAddresses] = "ilb-v4, ilb-v6"
	ips := e.ensureStatus(svc, nodes)
	if len(ips) != 2 || ips[0] != ip4 || ips[1] != netip.MustParseAddr(strings.Split(ip6, "/")[0]).String() {
		t.Fatalf("status %v, want the reserved %s and %s", ips, ip4, ip6)
	}
	before := e.mutations()
	e.ensureStatus(svc, nodes)
	if d := e.mutations() - before; d != 0 {
		t.Errorf("%d changing calls for an unchanged Service: %v", d, e.fake.Faults().Calls())
	}
	e.mustDelete(svc)
	var left []string
	for _, a := range e.fake.Addresses() {
		left = append(left, a.Name)
	}
	if !slices.Equal(left, []string{"ilb-v4", "ilb-v6"}) {
		t.Errorf("addresses after the Service went: %v, want the operator's two kept", left)
	}

	// An external Service takes its IPv4 reservation over spec.loadBalancerIP.
	ext := e.reserve(&computepb.Address{Name: proto.String("web-ip")})
	other := e.reserve(&computepb.Address{Name: proto.String("old-ip")})
	web := service(map[string]string{gce.AnnIPAddresses: "web-ip"}, tcp(80, 30080))
	web.Name, web.UID = "web2", types.UID("77777777-2222-4333-8444-555555555555")
	web.Spec.LoadBalancerIP = other
	if got := e.ensureStatus(web, nodes); !slices.Equal(got, []string{ext}) {
		t.Errorf("status %v, want the annotation's %s", got, ext)
	}
	if ev := strings.Join(e.events(), "\n"); !strings.Contains(ev, "wins over spec.loadBalancerIP") {
		t.Errorf("events %q, want one saying the annotation wins over spec.loadBalancerIP", ev)
	}
	e.mustDelete(web)
}

func TestStaticAddressesAnnotationInvalid(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := e.nodes("a", 1, testZone)
	e.reserve(&computepb.Address{Name: proto.String("one")})
	e.reserve(&computepb.Address{Name: proto.String("two")})
	for _, tc := range []struct{ value, want string }{
		{"missing", "no address missing is reserved"},
		{"one,two", "two IPv4 addresses"},
		{"a,b,c", "at most two"},
		{"Not_A_Name", "not valid: want up to two names"},
	} {
		svc := service(map[string]string{gce.AnnIPAddresses: tc.value}, tcp(80, 30080))
		before := e.mutations()
		_, err := e.ensure(svc, nodes)
		if msg := invalid(t, err)[gce.AnnIPAddresses]; !strings.Contains(msg, tc.want) {
			t.Errorf("%q: problem %q, want %q", tc.value, msg, tc.want)
		}
		if d := e.mutations() - before; d != 0 {
			t.Errorf("%q: %d changing calls for an invalid Service", tc.value, d)
		}
		if ev := strings.Join(e.events(), "\n"); !strings.Contains(ev, "Warning") || !strings.Contains(ev, gce.AnnIPAddresses) {
			t.Errorf("%q: events %q, want a Warning naming the annotation", tc.value, ev)
		}
	}
}
