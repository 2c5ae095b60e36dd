package digitalocean

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/digitalocean/godo"
)

// A load balancer created with ip takes that reserved (BYOIP) address, as
// DigitalOcean's CCM asks with service.beta.kubernetes.io/do-loadbalancer-ip.
func TestLBCreateWithReservedIP(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	ip := s.AddReservedIP("nyc3")

	req := lbReq("byoip")
	req.IP = ip
	created, _, err := c.LoadBalancers.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if created.Status != StatusNew || created.IP != "" {
		t.Errorf("created: status %q ip %q", created.Status, created.IP)
	}
	if st, _ := s.ReservedIP(ip); st.LoadBalancerID != created.ID {
		t.Errorf("reserved IP not bound: %+v", st)
	}
	got, _, err := c.LoadBalancers.Get(ctx, created.ID)
	if err != nil || got.Status != StatusActive || got.IP != ip {
		t.Fatalf("active: %+v %v", got, err)
	}

	// In use: it cannot be deleted, nor given to a second load balancer.
	_, err = c.ReservedIPs.Delete(ctx, ip)
	if e := apiErr(t, err, http.StatusUnprocessableEntity); !strings.Contains(e.Message, "in use by load balancer "+created.ID) {
		t.Errorf("delete in use: %q", e.Message)
	}
	again := lbReq("again")
	again.IP = ip
	_, _, err = c.LoadBalancers.Create(ctx, again)
	if e := apiErr(t, err, http.StatusUnprocessableEntity); !strings.Contains(e.Message, "already assigned") {
		t.Errorf("second use: %q", e.Message)
	}

	// ip is create-only: an update naming another address keeps the first.
	other := s.AddReservedIP("nyc3")
	resp, body := raw(t, s, "PUT", "/v2/load_balancers/"+created.ID,
		`{"name":"byoip","region":"nyc3","ip":"`+other+`","forwarding_rules":[{"entry_protocol":"http","entry_port":80,"target_protocol":"http","target_port":30080}]}`)
	if w := decode(t, body); resp.StatusCode != 200 || w["load_balancer"].(map[string]any)["ip"] != ip {
		t.Errorf("update with ip: %d %s", resp.StatusCode, body)
	}
	if st, _ := s.ReservedIP(other); st.LoadBalancerID != "" {
		t.Errorf("an update bound %s", other)
	}
	if _, _, err := c.LoadBalancers.Update(ctx, created.ID, got.AsRequest()); err != nil {
		t.Errorf("round trip: %v", err)
	}

	// Deleting the load balancer frees the address for reuse.
	if _, err := c.LoadBalancers.Delete(ctx, created.ID); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.ReservedIP(ip); st.LoadBalancerID != "" {
		t.Errorf("still bound after deletion: %+v", st)
	}
	if lb := createLB(t, c, again); lb.IP != ip {
		t.Errorf("reuse: ip %q, want %s", lb.IP, ip)
	}

	// DUALSTACK keeps the BYOIP IPv4 and still gets an IPv6 address.
	dual := lbReq("dual")
	dual.IP, dual.NetworkStack = other, LBNetworkStackDualstack
	if lb := createLB(t, c, dual); lb.IP != other || !inPrefix(t, lb.IPv6, "2001:db8::/32") {
		t.Errorf("dualstack: ip %q ipv6 %q", lb.IP, lb.IPv6)
	}
}

func TestLBReservedIPRefusals(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	nyc := s.AddReservedIP("nyc3")
	fra := s.AddReservedIP("fra1")
	d := s.AddDroplet(Droplet{Region: "nyc3"})
	held, _, err := c.ReservedIPs.Create(ctx, &godo.ReservedIPCreateRequest{DropletID: d.ID})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, want string
		mutate     func(r *godo.LoadBalancerRequest)
	}{
		{"not reserved", "not a BYOIP address on this account", func(r *godo.LoadBalancerRequest) { r.IP = "192.0.2.10" }},
		{"other region", "is in region fra1", func(r *godo.LoadBalancerRequest) { r.IP = fra }},
		{"held by a droplet", "already assigned", func(r *godo.LoadBalancerRequest) { r.IP = held.IP }},
		{"not an address", `ip "nyc3-ip" is not a valid IPv4 address`, func(r *godo.LoadBalancerRequest) { r.IP = "nyc3-ip" }},
		{"IPv6", "not a valid IPv4 address", func(r *godo.LoadBalancerRequest) { r.IP = "2001:db8::1" }},
		{"internal", "not supported for INTERNAL", func(r *godo.LoadBalancerRequest) { r.IP, r.Network = nyc, LBNetworkInternal }},
		{"global", "not supported for GLOBAL", func(r *godo.LoadBalancerRequest) { r.IP, r.Type, r.Region = nyc, LBTypeGlobal, "" }},
		// Other mistakes are reported before the address is looked at.
		{"invalid otherwise", "name is required", func(r *godo.LoadBalancerRequest) { r.IP, r.Name = nyc, "" }},
	}
	for _, tc := range cases {
		r := lbReq("web")
		tc.mutate(r)
		_, _, err := c.LoadBalancers.Create(ctx, r)
		if e := apiErr(t, err, http.StatusUnprocessableEntity); !strings.Contains(e.Message, tc.want) {
			t.Errorf("%s: message %q, want it to say %q", tc.name, e.Message, tc.want)
		}
	}
	if n := len(s.LoadBalancers()); n != 0 {
		t.Errorf("%d load balancers created by refused requests", n)
	}
	if st, _ := s.ReservedIP(nyc); st.LoadBalancerID != "" {
		t.Errorf("a refused request bound %s", nyc)
	}
	// The raw body: the same 422 document as every other.
	resp, body := raw(t, s, "POST", "/v2/load_balancers",
		`{"name":"w","region":"nyc3","ip":"192.0.2.10","forwarding_rules":[{"entry_protocol":"tcp","entry_port":80,"target_protocol":"tcp","target_port":80}]}`)
	if m := decode(t, body); resp.StatusCode != 422 || m["id"] != "unprocessable_entity" || m["request_id"] == "" {
		t.Errorf("raw: %d %s", resp.StatusCode, body)
	}
}

func TestLBSubnetUUID(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	const subnet = "d4ba5b5a-9738-4a6a-b78d-4a86efb9f9e0"

	req := lbReq("sub")
	req.VPCSubnetUUID = subnet
	lb := createLB(t, c, req)
	if lb.VPCSubnetUUID != subnet {
		t.Errorf("subnet = %q", lb.VPCSubnetUUID)
	}
	if st, _ := s.LoadBalancer(lb.ID); st.SubnetUUID != subnet {
		t.Errorf("state subnet = %q", st.SubnetUUID)
	}
	_, body := raw(t, s, "GET", "/v2/load_balancers/"+lb.ID, "")
	if w := decode(t, body)["load_balancer"].(map[string]any); w["subnet_uuid"] != subnet {
		t.Errorf("wire: %s", body)
	}
	// Load balancers not placed in a subnet have no subnet_uuid at all.
	plain := createLB(t, c, lbReq("plain"))
	_, body = raw(t, s, "GET", "/v2/load_balancers/"+plain.ID, "")
	if _, ok := decode(t, body)["load_balancer"].(map[string]any)["subnet_uuid"]; ok {
		t.Errorf("subnet_uuid on a plain load balancer: %s", body)
	}

	// Immutable like the VPC: left out it is kept, changed it is refused.
	if _, _, err := c.LoadBalancers.Update(ctx, lb.ID, lb.AsRequest()); err != nil {
		t.Errorf("round trip: %v", err)
	}
	up := lbReq("sub")
	got, _, err := c.LoadBalancers.Update(ctx, lb.ID, up)
	if err != nil || got.VPCSubnetUUID != subnet {
		t.Errorf("update without subnet: %+v %v", got, err)
	}
	up.VPCSubnetUUID = "11111111-1111-4111-8111-111111111111"
	_, _, err = c.LoadBalancers.Update(ctx, lb.ID, up)
	if e := apiErr(t, err, http.StatusUnprocessableEntity); e.Message != "subnet_uuid cannot be modified" {
		t.Errorf("message = %q", e.Message)
	}
	_, _, err = c.LoadBalancers.Update(ctx, plain.ID, up)
	apiErr(t, err, http.StatusUnprocessableEntity)

	bad := lbReq("bad")
	bad.VPCSubnetUUID = "subnet-1"
	_, _, err = c.LoadBalancers.Create(ctx, bad)
	if e := apiErr(t, err, http.StatusUnprocessableEntity); !strings.Contains(e.Message, `subnet_uuid "subnet-1" is not a valid UUID`) {
		t.Errorf("message = %q", e.Message)
	}
}

// HTTP/3 as the backend validates it (DigitalOcean's CCM mirrors it): one
// rule at most, with a certificate, to an HTTP target, beside an https or
// http2 rule, whose port it may share since QUIC runs over UDP.
func TestLBHTTP3Rules(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	cert := s.AddCertificate("web")
	h3 := func(port int, target string) godo.ForwardingRule {
		return godo.ForwardingRule{EntryProtocol: "http3", EntryPort: port, TargetProtocol: target, TargetPort: 30443, CertificateID: cert.ID}
	}
	tls := func(proto string, port int) godo.ForwardingRule {
		return godo.ForwardingRule{EntryProtocol: proto, EntryPort: port, TargetProtocol: "http", TargetPort: 30443, CertificateID: cert.ID}
	}
	for name, rules := range map[string][]godo.ForwardingRule{
		"beside https on 443": {h3(443, "http"), tls("https", 443)},
		"beside http2":        {tls("http2", 443), h3(443, "https")},
		"on a port of its own": {
			tls("https", 443), h3(8443, "http2"),
		},
	} {
		r := lbReq("ok")
		r.ForwardingRules = rules
		if _, _, err := c.LoadBalancers.Create(ctx, r); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, tc := range []struct {
		name, want string
		rules      []godo.ForwardingRule
	}{
		{"alone", "requires a forwarding rule with entry_protocol https or http2", []godo.ForwardingRule{h3(443, "http")}},
		{"beside plain http only", "requires a forwarding rule with entry_protocol https or http2", append(lbReq("x").ForwardingRules, h3(443, "http"))},
		{"two", "only one forwarding rule may use entry_protocol http3", []godo.ForwardingRule{tls("https", 443), h3(443, "http"), h3(8443, "http")}},
		{"to tcp", `target_protocol for entry_protocol http3 "tcp" is invalid`, []godo.ForwardingRule{tls("https", 443), h3(443, "tcp")}},
		{"with a udp rule on its port", "entry_port 443 is used by more than one", []godo.ForwardingRule{
			tls("https", 443), h3(443, "http"), {EntryProtocol: "udp", EntryPort: 443, TargetProtocol: "udp", TargetPort: 443},
		}},
		{"two https on one port", "entry_port 443 is used by more than one", []godo.ForwardingRule{tls("https", 443), tls("http2", 443)}},
	} {
		r := lbReq("bad")
		r.ForwardingRules = tc.rules
		_, _, err := c.LoadBalancers.Create(ctx, r)
		if e := apiErr(t, err, http.StatusUnprocessableEntity); !strings.Contains(e.Message, tc.want) {
			t.Errorf("%s: message %q, want it to say %q", tc.name, e.Message, tc.want)
		}
	}

	// The sub-resource endpoints keep the same rules.
	r := lbReq("rules")
	r.ForwardingRules = []godo.ForwardingRule{tls("https", 443)}
	lb := createLB(t, c, r)
	if _, err := c.LoadBalancers.AddForwardingRules(ctx, lb.ID, h3(443, "http")); err != nil {
		t.Fatalf("add http3: %v", err)
	}
	_, err := c.LoadBalancers.AddForwardingRules(ctx, lb.ID, h3(8443, "http"))
	apiErr(t, err, http.StatusUnprocessableEntity)
	_, err = c.LoadBalancers.AddForwardingRules(ctx, lb.ID, godo.ForwardingRule{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 30080})
	if err != nil {
		t.Fatal(err)
	}
	// Its https fallback cannot go while the http3 rule stays; both can.
	_, err = c.LoadBalancers.RemoveForwardingRules(ctx, lb.ID, tls("https", 443))
	if e := apiErr(t, err, http.StatusUnprocessableEntity); !strings.Contains(e.Message, "requires a forwarding rule with entry_protocol https or http2") {
		t.Errorf("message = %q", e.Message)
	}
	if _, err := c.LoadBalancers.RemoveForwardingRules(ctx, lb.ID, tls("https", 443), h3(443, "http")); err != nil {
		t.Errorf("remove both: %v", err)
	}
	if st, _ := s.LoadBalancer(lb.ID); len(st.ForwardingRules) != 1 || st.ForwardingRules[0].EntryProtocol != "http" {
		t.Errorf("rules left: %+v", st.ForwardingRules)
	}
}
