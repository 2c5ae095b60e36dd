package gce

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

const (
	dualSubnet = "regions/" + region + "/subnetworks/dual"
	v4Subnet   = "regions/" + region + "/subnetworks/v4only"
	ilbBackend = "regions/" + region + "/backendServices/ilb"
	regionRel  = "projects/" + testProject + "/regions/" + region
)

// ipv6Env is a fake with a dual-stack subnetwork (fd20:1:2:3::/64), an
// IPv4-only one, and an INTERNAL backend service for rules to use.
type ipv6Env struct {
	s     *Server
	wait  func(*compute.Operation, error) *compute.Operation
	frs   *compute.ForwardingRulesClient
	addrs *compute.AddressesClient
}

func newIPv6Env(t *testing.T) ipv6Env {
	t.Helper()
	s := start(t)
	s.AddSubnetwork(Subnetwork{Name: "dual", Region: region, IPCidrRange: "10.10.0.0/24", StackType: "IPV4_IPV6", IPv6AccessType: "INTERNAL", InternalIPv6Prefix: "fd20:1:2:3::/64"})
	s.AddSubnetwork(Subnetwork{Name: "v4only", Region: region, IPCidrRange: "10.20.0.0/24"})
	e := ipv6Env{s: s, wait: waiter(t), frs: client(t, s, compute.NewForwardingRulesRESTClient), addrs: client(t, s, compute.NewAddressesRESTClient)}
	ctx := context.Background()
	hcs := client(t, s, compute.NewHealthChecksRESTClient)
	bss := client(t, s, compute.NewRegionBackendServicesRESTClient)
	e.wait(hcs.Insert(ctx, &computepb.InsertHealthCheckRequest{Project: testProject, HealthCheckResource: &computepb.HealthCheck{Name: proto.String("hc"), Type: proto.String("TCP")}}))
	e.wait(bss.Insert(ctx, &computepb.InsertRegionBackendServiceRequest{Project: testProject, Region: region, BackendServiceResource: &computepb.BackendService{
		Name: proto.String("ilb"), LoadBalancingScheme: proto.String("INTERNAL"), HealthChecks: []string{"global/healthChecks/hc"},
	}}))
	return e
}

// v6Rule is an INTERNAL IPV6 rule on port 80 in subnet, at ip if not "".
func v6Rule(name, subnet, ip string) *computepb.InsertForwardingRuleRequest {
	r := &computepb.ForwardingRule{
		Name: proto.String(name), LoadBalancingScheme: proto.String("INTERNAL"), IpVersion: proto.String("IPV6"), Ports: []string{"80"},
		BackendService: proto.String(ilbBackend), Subnetwork: proto.String(subnet),
	}
	if ip != "" {
		r.IPAddress = proto.String(ip)
	}
	return &computepb.InsertForwardingRuleRequest{Project: testProject, Region: region, ForwardingRuleResource: r}
}

// v6Address is an INTERNAL IPV6 address of the dual-stack subnetwork, at
// ip (a /96) if not "".
func v6Address(name, ip string) *computepb.InsertAddressRequest {
	a := &computepb.Address{Name: proto.String(name), AddressType: proto.String("INTERNAL"), IpVersion: proto.String("IPV6"), Subnetwork: proto.String(dualSubnet)}
	if ip != "" {
		a.Address, a.PrefixLength = proto.String(ip), proto.Int32(96)
	}
	return &computepb.InsertAddressRequest{Project: testProject, Region: region, AddressResource: a}
}

func (e ipv6Env) rule(t *testing.T, name string) *computepb.ForwardingRule {
	t.Helper()
	fr, err := e.frs.Get(context.Background(), &computepb.GetForwardingRuleRequest{Project: testProject, Region: region, ForwardingRule: name})
	if err != nil {
		t.Fatal(err)
	}
	return fr
}

// refused asserts a 400 invalid whose message names field and says want.
func refused(t *testing.T, err error, field, want string) {
	t.Helper()
	e := apiErr(t, err, http.StatusBadRequest, "invalid")
	if !strings.Contains(e.Message, "'"+field+"'") || !strings.Contains(e.Message, want) {
		t.Fatalf("message = %q, want %q and %q", e.Message, field, want)
	}
}

func TestIPv6ForwardingRuleAllocation(t *testing.T) {
	e := newIPv6Env(t)
	ctx := context.Background()
	e.wait(e.frs.Insert(ctx, v6Rule("a", dualSubnet, "")))
	e.wait(e.frs.Insert(ctx, v6Rule("b", dualSubnet, "")))
	for name, want := range map[string]string{"a": "fd20:1:2:3:0:1:0:0/96", "b": "fd20:1:2:3:0:2:0:0/96"} {
		if fr := e.rule(t, name); fr.GetIPAddress() != want || fr.GetIpVersion() != "IPV6" || !strings.HasSuffix(fr.GetSubnetwork(), dualSubnet) {
			t.Errorf("rule %s: IPAddress %q ipVersion %q subnetwork %q, want %s", name, fr.GetIPAddress(), fr.GetIpVersion(), fr.GetSubnetwork(), want)
		}
	}
	if h := holder(e.s, "fd20:1:2:3:0:1::"); h != regionRel+"/forwardingRules/a" {
		t.Errorf("fd20:1:2:3:0:1:: held by %q", h)
	}

	// Literals, plain or as GCE reports them, are taken as given.
	e.wait(e.frs.Insert(ctx, v6Rule("c", dualSubnet, "fd20:1:2:3:0:7::")))
	e.wait(e.frs.Insert(ctx, v6Rule("d", dualSubnet, "fd20:1:2:3:0:8:0:0/96")))
	if c, d := e.rule(t, "c").GetIPAddress(), e.rule(t, "d").GetIPAddress(); c != "fd20:1:2:3:0:7:0:0/96" || d != "fd20:1:2:3:0:8:0:0/96" {
		t.Errorf("literal rules at %q and %q", c, d)
	}
	// Freed when the rule goes.
	e.wait(e.frs.Delete(ctx, &computepb.DeleteForwardingRuleRequest{Project: testProject, Region: region, ForwardingRule: "c"}))
	if h := holder(e.s, "fd20:1:2:3:0:7::"); h != "" {
		t.Errorf("deleted rule's /96 held by %q", h)
	}

	// An IPv4 rule in the same subnetwork keeps today's behaviour.
	v4 := v6Rule("v4", dualSubnet, "")
	v4.ForwardingRuleResource.IpVersion = nil
	e.wait(e.frs.Insert(ctx, v4))
	if fr := e.rule(t, "v4"); fr.GetIPAddress() != "10.10.0.2" || fr.IpVersion != nil {
		t.Errorf("IPv4 rule: IPAddress %q ipVersion %v", fr.GetIPAddress(), fr.IpVersion)
	}

	for _, tc := range []struct {
		name string
		req  *computepb.InsertForwardingRuleRequest
		want string
	}{
		{"outside the /64", v6Rule("x", dualSubnet, "fd20:9::1:0:0"), "not in the IPv6 range"},
		{"not a /96 start", v6Rule("x", dualSubnet, "fd20:1:2:3:0:9:0:1"), "/96"},
		{"the reserved first /96", v6Rule("x", dualSubnet, "fd20:1:2:3::"), "reserved"},
		{"a /64 range", v6Rule("x", dualSubnet, "fd20:1:2:3::/64"), "IPv6 /96"},
		{"IPv4 on an IPV6 rule", v6Rule("x", dualSubnet, "10.10.0.9"), "needs an IPv6 address"},
		{"IPv6 on an IPv4 rule", func() *computepb.InsertForwardingRuleRequest {
			r := v6Rule("x", dualSubnet, "fd20:1:2:3:0:9::")
			r.ForwardingRuleResource.IpVersion = nil
			return r
		}(), "needs ipVersion IPV6"},
	} {
		_, err := e.frs.Insert(ctx, tc.req)
		t.Run(tc.name, func(t *testing.T) { refused(t, err, "resource.IPAddress", tc.want) })
	}
}

// A node's /96 is not an ILB's to take; it is free again once the node
// goes.
func TestIPv6ForwardingRuleSkipsInstanceAddresses(t *testing.T) {
	e := newIPv6Env(t)
	ctx := context.Background()
	e.s.AddInstance(Instance{Name: "node", Subnetwork: "dual", InternalIPv6: "fd20:1:2:3:0:1:0:0"})
	e.wait(e.frs.Insert(ctx, v6Rule("a", dualSubnet, "")))
	if got := e.rule(t, "a").GetIPAddress(); got != "fd20:1:2:3:0:2:0:0/96" {
		t.Errorf("rule beside the node at %q", got)
	}
	e.s.RemoveInstance(DefaultZone, "node")
	e.wait(e.frs.Insert(ctx, v6Rule("b", dualSubnet, "")))
	if got := e.rule(t, "b").GetIPAddress(); got != "fd20:1:2:3:0:1:0:0/96" {
		t.Errorf("rule after the node went at %q", got)
	}
}

func TestIPv6ForwardingRuleNeedsDualStackSubnet(t *testing.T) {
	e := newIPv6Env(t)
	_, err := e.frs.Insert(context.Background(), v6Rule("x", v4Subnet, ""))
	refused(t, err, "resource.subnetwork", "has no IPv6 range; its stackType must be IPV4_IPV6")
	if len(e.s.ForwardingRules()) != 0 {
		t.Errorf("rules = %v", e.s.ForwardingRules())
	}
}

func TestIPv6TargetPoolRuleRefused(t *testing.T) {
	e := newIPv6Env(t)
	ctx := context.Background()
	tps := client(t, e.s, compute.NewTargetPoolsRESTClient)
	e.wait(tps.Insert(ctx, &computepb.InsertTargetPoolRequest{Project: testProject, Region: region, TargetPoolResource: &computepb.TargetPool{Name: proto.String("pool")}}))
	_, err := e.frs.Insert(ctx, &computepb.InsertForwardingRuleRequest{Project: testProject, Region: region, ForwardingRuleResource: &computepb.ForwardingRule{
		Name: proto.String("lb"), IpVersion: proto.String("IPV6"), PortRange: proto.String("80"), Target: proto.String("regions/" + region + "/targetPools/pool"),
	}})
	refused(t, err, "resource.ipVersion", "Target pools support IPv4 only")
}

// GKE keeps an internal load balancer's IPv6 address across a rule's
// recreation as it keeps an IPv4 one: promote, then demote.
func TestIPv6AddressPromotionAndDemotion(t *testing.T) {
	e := newIPv6Env(t)
	ctx := context.Background()
	const ip, key = "fd20:1:2:3:0:1:0:0", "fd20:1:2:3:0:1::"
	rulePath, addrPath := regionRel+"/forwardingRules/lb", regionRel+"/addresses/lb"
	getAddr := func(name string) *computepb.Address {
		t.Helper()
		a, err := e.addrs.Get(ctx, &computepb.GetAddressRequest{Project: testProject, Region: region, Address: name})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}

	e.wait(e.frs.Insert(ctx, v6Rule("lb", dualSubnet, "")))
	if got := e.rule(t, "lb").GetIPAddress(); got != ip+"/96" || holder(e.s, key) != rulePath {
		t.Fatalf("ephemeral rule at %q held by %q", got, holder(e.s, key))
	}

	// Promotion.
	e.wait(e.addrs.Insert(ctx, v6Address("lb", ip)))
	a := getAddr("lb")
	if a.GetAddress() != ip || a.GetPrefixLength() != 96 || a.GetIpVersion() != "IPV6" || a.GetStatus() != "IN_USE" ||
		len(a.GetUsers()) != 1 || !strings.HasSuffix(a.GetUsers()[0], "/forwardingRules/lb") || holder(e.s, key) != addrPath {
		t.Fatalf("promoted = %v (held by %q)", a, holder(e.s, key))
	}
	// The rule comes back on the static address, by name.
	e.wait(e.frs.Delete(ctx, &computepb.DeleteForwardingRuleRequest{Project: testProject, Region: region, ForwardingRule: "lb"}))
	if holder(e.s, key) != addrPath || getAddr("lb").GetStatus() != "RESERVED" {
		t.Fatalf("after the rule's delete, held by %q", holder(e.s, key))
	}
	e.wait(e.frs.Insert(ctx, v6Rule("lb", dualSubnet, "lb")))
	if got := e.rule(t, "lb").GetIPAddress(); got != ip+"/96" {
		t.Fatalf("rule on the static address at %q", got)
	}

	// Demotion: the rule keeps its IP, now ephemeral.
	e.wait(e.addrs.Delete(ctx, &computepb.DeleteAddressRequest{Project: testProject, Region: region, Address: "lb"}))
	if got := e.rule(t, "lb").GetIPAddress(); got != ip+"/96" || holder(e.s, key) != rulePath || len(e.s.Addresses()) != 0 {
		t.Fatalf("demoted: rule at %q, held by %q, addresses %v", got, holder(e.s, key), e.s.Addresses())
	}
	e.wait(e.frs.Delete(ctx, &computepb.DeleteForwardingRuleRequest{Project: testProject, Region: region, ForwardingRule: "lb"}))
	if h := holder(e.s, key); h != "" {
		t.Fatalf("%s still held by %q", key, h)
	}
	e.wait(e.addrs.Insert(ctx, v6Address("again", ip)))
	if a := getAddr("again"); a.GetStatus() != "RESERVED" || len(a.GetUsers()) != 0 {
		t.Errorf("re-reserved = %v", a)
	}

	// An address without one gets the next free /96; an IPv4 rule cannot
	// use an IPv6 address.
	e.wait(e.addrs.Insert(ctx, v6Address("fresh", "")))
	if a := getAddr("fresh"); a.GetAddress() != "fd20:1:2:3:0:2:0:0" || a.GetPrefixLength() != 96 {
		t.Errorf("allocated = %v", a)
	}
	r := v6Rule("v4", dualSubnet, "fresh")
	r.ForwardingRuleResource.IpVersion = proto.String("IPV4")
	_, err := e.frs.Insert(ctx, r)
	refused(t, err, "resource.IPAddress", "needs ipVersion IPV6")
}

func TestIPv6AddressFilterAndRefusals(t *testing.T) {
	e := newIPv6Env(t)
	ctx := context.Background()
	for _, name := range []string{"one", "two", "three"} {
		e.wait(e.addrs.Insert(ctx, v6Address(name, "")))
	}
	for _, filter := range []string{`address = "fd20:1:2:3:0:2:0:0"`, `address eq fd20:1:2:3:0:2:0:0`} {
		var names []string
		for a, err := range e.addrs.List(ctx, &computepb.ListAddressesRequest{Project: testProject, Region: region, Filter: proto.String(filter)}).All() {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, a.GetName())
		}
		if len(names) != 1 || names[0] != "two" {
			t.Errorf("%s: %v", filter, names)
		}
	}

	v4only := v6Address("x", "")
	v4only.AddressResource.Subnetwork = proto.String(v4Subnet)
	_, err := e.addrs.Insert(ctx, v4only)
	refused(t, err, "resource.subnetwork", "its stackType must be IPV4_IPV6")
	_, err = e.addrs.Insert(ctx, v6Address("x", "10.10.0.9"))
	refused(t, err, "resource.address", "Must be an IPv6 address")
	_, err = e.addrs.Insert(ctx, v6Address("x", "fd20:1:2:4::1:0:0"))
	refused(t, err, "resource.address", "not in the IPv6 range")
	bad := v6Address("x", "fd20:1:2:3:0:9::")
	bad.AddressResource.PrefixLength = proto.Int32(64)
	_, err = e.addrs.Insert(ctx, bad)
	refused(t, err, "resource.prefixLength", "/96")
	ext := v6Address("x", "")
	ext.AddressResource.AddressType, ext.AddressResource.Subnetwork = proto.String("EXTERNAL"), nil
	_, err = e.addrs.Insert(ctx, ext)
	refused(t, err, "resource.ipVersion", "INTERNAL")
	// Taken by another address.
	_, err = e.addrs.Insert(ctx, v6Address("x", "fd20:1:2:3:0:1:0:0"))
	apiErr(t, err, http.StatusBadRequest, "ipInUseByAnotherResource")
}

func TestIPv6SubnetworkDefaults(t *testing.T) {
	s := start(t)
	sn := s.AddSubnetwork(Subnetwork{Name: "dual", Region: region, IPCidrRange: "10.10.0.0/24", StackType: "IPV4_IPV6"})
	if sn.IPv6AccessType != "INTERNAL" || !strings.HasPrefix(sn.InternalIPv6Prefix, "fd20:") || !strings.HasSuffix(sn.InternalIPv6Prefix, "::/64") {
		t.Errorf("defaults = %q %q", sn.IPv6AccessType, sn.InternalIPv6Prefix)
	}
	for _, bad := range []Subnetwork{
		{Name: "b1", StackType: "IPV4_IPV6", InternalIPv6Prefix: "fd20:1:2::/48"},
		{Name: "b2", StackType: "IPV4_IPV6", InternalIPv6Prefix: "10.0.0.0/8"},
		{Name: "b3", InternalIPv6Prefix: "fd20:1:2:3::/64"}, // IPV4_ONLY
	} {
		bad.Region, bad.IPCidrRange = region, "10.30.0.0/24"
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", bad.Name)
				}
			}()
			s.AddSubnetwork(bad)
		}()
	}
}

func TestFirewallIPFamilies(t *testing.T) {
	s := start(t)
	wait := waiter(t)
	ctx := context.Background()
	fw := client(t, s, compute.NewFirewallsRESTClient)
	mk := func(name string, src, dst []string, dir string) *computepb.InsertFirewallRequest {
		return &computepb.InsertFirewallRequest{Project: testProject, FirewallResource: &computepb.Firewall{
			Name: proto.String(name), Allowed: []*computepb.Allowed{{IPProtocol: proto.String("tcp")}},
			SourceRanges: src, DestinationRanges: dst, Direction: proto.String(dir),
		}}
	}
	_, err := fw.Insert(ctx, mk("mixed-src", []string{"10.0.0.0/8", "fd20::/20"}, nil, "INGRESS"))
	refused(t, err, "resource.sourceRanges[1]", "cannot mix IPv4 and IPv6")
	_, err = fw.Insert(ctx, mk("mixed-dst", nil, []string{"::/0", "0.0.0.0/0"}, "EGRESS"))
	refused(t, err, "resource.destinationRanges[1]", "cannot mix IPv4 and IPv6")
	_, err = fw.Insert(ctx, mk("mixed-both", []string{"10.0.0.0/8"}, []string{"fd20:1:2:3::/64"}, "INGRESS"))
	refused(t, err, "resource.destinationRanges", "cannot mix IPv4 and IPv6")

	// One family is fine; the default range follows the other list's.
	wait(fw.Insert(ctx, mk("v6", []string{"fd20::/20", "2001:db8::1"}, []string{"fd20:1:2:3:0:1:0:0/96"}, "INGRESS")))
	wait(fw.Insert(ctx, mk("v6-dst", nil, []string{"fd20:1:2:3:0:1:0:0/96"}, "INGRESS")))
	wait(fw.Insert(ctx, mk("v4", nil, nil, "INGRESS")))
	for name, want := range map[string]string{"v6-dst": "::/0", "v4": "0.0.0.0/0"} {
		if f, _ := s.Firewall(name); len(f.SourceRanges) != 1 || f.SourceRanges[0] != want {
			t.Errorf("%s: sourceRanges %v, want [%s]", name, f.SourceRanges, want)
		}
	}
	// Patching in a range of the other family is refused too.
	_, err = fw.Patch(ctx, &computepb.PatchFirewallRequest{Project: testProject, Firewall: "v6", FirewallResource: &computepb.Firewall{SourceRanges: []string{"10.0.0.0/8"}}})
	refused(t, err, "resource.destinationRanges", "cannot mix IPv4 and IPv6")
}

// rawDone sends a mutation as plain JSON and follows its operation to
// DONE, failing the test unless it succeeds.
func rawDone(t *testing.T, s *Server, method, path, body string) {
	t.Helper()
	resp, b := raw(t, s, method, path, body)
	m := decode(t, b)
	if resp.StatusCode != http.StatusOK || m["kind"] != "compute#operation" {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	for m["status"] != "DONE" {
		_, b = raw(t, s, "POST", strings.TrimPrefix(m["selfLink"].(string), s.URL())+"/wait", "")
		m = decode(t, b)
	}
	if m["error"] != nil {
		t.Fatalf("%s %s: operation %s", method, path, b)
	}
}

// The wire format as a client we did not write sees it.
func TestIPv6Wire(t *testing.T) {
	s := start(t)
	s.AddSubnetwork(Subnetwork{Name: "dual", Region: region, IPCidrRange: "10.10.0.0/24", StackType: "IPV4_IPV6", IPv6AccessType: "INTERNAL", InternalIPv6Prefix: "fd20:1:2:3::/64"})
	s.AddSubnetwork(Subnetwork{Name: "v4only", Region: region, IPCidrRange: "10.20.0.0/24"})
	regional := "/compute/v1/" + regionRel
	rawDone(t, s, "POST", "/compute/v1/projects/"+testProject+"/global/healthChecks", `{"name":"hc","type":"TCP","tcpHealthCheck":{"port":80}}`)
	rawDone(t, s, "POST", regional+"/backendServices", `{"name":"ilb","loadBalancingScheme":"INTERNAL","protocol":"TCP","healthChecks":["global/healthChecks/hc"]}`)
	rawDone(t, s, "POST", regional+"/forwardingRules", `{"name":"lb","loadBalancingScheme":"INTERNAL","ipVersion":"IPV6","IPProtocol":"TCP","ports":["80"],`+
		`"backendService":"`+ilbBackend+`","subnetwork":"`+dualSubnet+`"}`)
	_, b := raw(t, s, "GET", regional+"/forwardingRules/lb", "")
	if fr := decode(t, b); fr["IPAddress"] != "fd20:1:2:3:0:1:0:0/96" || fr["ipVersion"] != "IPV6" {
		t.Errorf("rule = %s", b)
	}

	rawDone(t, s, "POST", regional+"/addresses", `{"name":"lb","addressType":"INTERNAL","ipVersion":"IPV6","address":"fd20:1:2:3:0:1:0:0","prefixLength":96,"subnetwork":"`+dualSubnet+`"}`)
	_, b = raw(t, s, "GET", regional+"/addresses/lb", "")
	if a := decode(t, b); a["address"] != "fd20:1:2:3:0:1:0:0" || a["prefixLength"] != float64(96) || a["ipVersion"] != "IPV6" || a["status"] != "IN_USE" {
		t.Errorf("address = %s", b)
	}
	_, b = raw(t, s, "GET", regional+"/addresses?filter="+url.QueryEscape(`address = "fd20:1:2:3:0:1:0:0"`), "")
	if items, _ := decode(t, b)["items"].([]any); len(items) != 1 || items[0].(map[string]any)["name"] != "lb" {
		t.Errorf("filtered list = %s", b)
	}

	// The refusal, as the JSON error document.
	resp, b := raw(t, s, "POST", regional+"/forwardingRules", `{"name":"x","loadBalancingScheme":"INTERNAL","ipVersion":"IPV6","ports":["80"],`+
		`"backendService":"`+ilbBackend+`","subnetwork":"`+v4Subnet+`"}`)
	e, _ := decode(t, b)["error"].(map[string]any)
	if msg, _ := e["message"].(string); resp.StatusCode != http.StatusBadRequest || e["code"] != float64(400) || !strings.Contains(msg, "'resource.subnetwork'") || !strings.Contains(msg, "IPV4_IPV6") {
		t.Errorf("refusal: %d %s", resp.StatusCode, b)
	}
}
