package gce

import (
	"context"
	"net/http"
	"strings"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// holder is what holds an IP in the fake, "" when it is free.
func holder(s *Server, ip string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	return s.usedIPs[ip]
}

// cloud-provider-gcp's external load balancer keeps its IP across a
// rule's recreation: promote the rule's ephemeral IP to a static address
// named like the rule, recreate the rule on it, then delete the address to
// demote the IP to ephemeral again.
func TestAddressPromotionAndDemotionExternal(t *testing.T) {
	s := start(t)
	wait := waiter(t)
	ctx := context.Background()
	addrs := client(t, s, compute.NewAddressesRESTClient)
	tps := client(t, s, compute.NewTargetPoolsRESTClient)
	frs := client(t, s, compute.NewForwardingRulesRESTClient)
	wait(tps.Insert(ctx, &computepb.InsertTargetPoolRequest{Project: testProject, Region: region, TargetPoolResource: &computepb.TargetPool{Name: proto.String("pool")}}))
	rule := func(ip string) *computepb.InsertForwardingRuleRequest {
		r := &computepb.ForwardingRule{Name: proto.String("lb"), PortRange: proto.String("80"), Target: proto.String("regions/" + region + "/targetPools/pool")}
		if ip != "" {
			r.IPAddress = proto.String(ip)
		}
		return &computepb.InsertForwardingRuleRequest{Project: testProject, Region: region, ForwardingRuleResource: r}
	}
	reserve := func(ip string) {
		t.Helper()
		wait(addrs.Insert(ctx, &computepb.InsertAddressRequest{Project: testProject, Region: region, AddressResource: &computepb.Address{Name: proto.String("lb"), Address: proto.String(ip)}}))
	}
	release := func() {
		t.Helper()
		wait(addrs.Delete(ctx, &computepb.DeleteAddressRequest{Project: testProject, Region: region, Address: "lb"}))
	}
	rulePath := "projects/" + testProject + "/regions/" + region + "/forwardingRules/lb"
	addrPath := "projects/" + testProject + "/regions/" + region + "/addresses/lb"

	wait(frs.Insert(ctx, rule("")))
	fr, _ := s.ForwardingRule(region, "lb")
	ip := fr.IPAddress
	if holder(s, ip) != rulePath {
		t.Fatalf("ephemeral %s held by %q", ip, holder(s, ip))
	}

	// Promotion: the address takes the rule's IP, and is in use by it.
	reserve(ip)
	a, err := addrs.Get(ctx, &computepb.GetAddressRequest{Project: testProject, Region: region, Address: "lb"})
	if err != nil || a.GetAddress() != ip || a.GetStatus() != "IN_USE" || len(a.GetUsers()) != 1 || !strings.HasSuffix(a.GetUsers()[0], "/forwardingRules/lb") || holder(s, ip) != addrPath {
		t.Fatalf("promoted = %v, %v (held by %q)", a, err, holder(s, ip))
	}
	// The rule goes and comes back on the static IP.
	wait(frs.Delete(ctx, &computepb.DeleteForwardingRuleRequest{Project: testProject, Region: region, ForwardingRule: "lb"}))
	if holder(s, ip) != addrPath {
		t.Fatalf("after the rule's delete, %s is held by %q", ip, holder(s, ip))
	}
	wait(frs.Insert(ctx, rule(ip)))

	// Demotion: deleting the address succeeds; the rule keeps the IP.
	release()
	if fr, _ := s.ForwardingRule(region, "lb"); fr.IPAddress != ip || holder(s, ip) != rulePath || len(s.Addresses()) != 0 {
		t.Fatalf("demoted: rule %s, %s held by %q, addresses %v", fr.IPAddress, ip, holder(s, ip), s.Addresses())
	}
	// Ephemeral again: no other rule may use it literally.
	r2 := rule(ip)
	r2.ForwardingRuleResource.Name = proto.String("other")
	_, err = frs.Insert(ctx, r2)
	apiErr(t, err, 400, "invalid")
	// It can be promoted again, and demoted again.
	reserve(ip)
	release()

	// Deleting the rule frees the IP.
	wait(frs.Delete(ctx, &computepb.DeleteForwardingRuleRequest{Project: testProject, Region: region, ForwardingRule: "lb"}))
	if h := holder(s, ip); h != "" {
		t.Fatalf("%s still held by %q", ip, h)
	}
	reserve(ip)
	if a, _ := addrs.Get(ctx, &computepb.GetAddressRequest{Project: testProject, Region: region, Address: "lb"}); a.GetStatus() != "RESERVED" || len(a.GetUsers()) != 0 {
		t.Errorf("re-reserved = %v", a)
	}
}

func TestAddressDemotionInternal(t *testing.T) {
	s := start(t)
	wait := waiter(t)
	ctx := context.Background()
	s.AddSubnetwork(Subnetwork{Name: "nodes", Region: region, IPCidrRange: "10.10.0.0/24"})
	addrs := client(t, s, compute.NewAddressesRESTClient)
	hcs := client(t, s, compute.NewHealthChecksRESTClient)
	bss := client(t, s, compute.NewRegionBackendServicesRESTClient)
	frs := client(t, s, compute.NewForwardingRulesRESTClient)
	wait(hcs.Insert(ctx, &computepb.InsertHealthCheckRequest{Project: testProject, HealthCheckResource: &computepb.HealthCheck{Name: proto.String("hc"), Type: proto.String("HTTP")}}))
	wait(bss.Insert(ctx, &computepb.InsertRegionBackendServiceRequest{Project: testProject, Region: region, BackendServiceResource: &computepb.BackendService{
		Name: proto.String("ilb"), LoadBalancingScheme: proto.String("INTERNAL"), HealthChecks: []string{"global/healthChecks/hc"},
	}}))
	ilb := func(name string, ports ...string) *computepb.InsertForwardingRuleRequest {
		return &computepb.InsertForwardingRuleRequest{Project: testProject, Region: region, ForwardingRuleResource: &computepb.ForwardingRule{
			Name: proto.String(name), LoadBalancingScheme: proto.String("INTERNAL"), Ports: ports,
			BackendService: proto.String("regions/" + region + "/backendServices/ilb"), Subnetwork: proto.String("regions/" + region + "/subnetworks/nodes"),
		}}
	}
	wait(frs.Insert(ctx, ilb("ilb", "80")))
	fr, _ := s.ForwardingRule(region, "ilb")
	ip := fr.IPAddress

	wait(addrs.Insert(ctx, &computepb.InsertAddressRequest{Project: testProject, Region: region, AddressResource: &computepb.Address{
		Name: proto.String("ilb"), AddressType: proto.String("INTERNAL"), Address: proto.String(ip), Subnetwork: proto.String("regions/" + region + "/subnetworks/nodes"),
	}}))
	if a := s.Addresses()[0]; a.Status != "IN_USE" || a.Address != ip {
		t.Fatalf("promoted = %+v", a)
	}
	wait(addrs.Delete(ctx, &computepb.DeleteAddressRequest{Project: testProject, Region: region, Address: "ilb"}))
	if h := holder(s, ip); h != "projects/"+testProject+"/regions/"+region+"/forwardingRules/ilb" {
		t.Fatalf("after demotion %s is held by %q", ip, h)
	}
	wait(frs.Delete(ctx, &computepb.DeleteForwardingRuleRequest{Project: testProject, Region: region, ForwardingRule: "ilb"}))
	if h := holder(s, ip); h != "" {
		t.Fatalf("%s still held by %q", ip, h)
	}

	// A shared address has several users; an ephemeral IP could not serve
	// them all, so it cannot be released while they stay.
	wait(addrs.Insert(ctx, &computepb.InsertAddressRequest{Project: testProject, Region: region, AddressResource: &computepb.Address{
		Name: proto.String("vip"), AddressType: proto.String("INTERNAL"), Purpose: proto.String("SHARED_LOADBALANCER_VIP"), Subnetwork: proto.String("regions/" + region + "/subnetworks/nodes"),
	}}))
	vip := s.Addresses()[0].Address
	for _, r := range []*computepb.InsertForwardingRuleRequest{ilb("tcp", "80"), ilb("udp", "53")} {
		r.ForwardingRuleResource.IPAddress = proto.String(vip)
		if r.ForwardingRuleResource.GetName() == "udp" {
			r.ForwardingRuleResource.IPProtocol = proto.String("UDP")
		}
		wait(frs.Insert(ctx, r))
	}
	_, err := addrs.Delete(ctx, &computepb.DeleteAddressRequest{Project: testProject, Region: region, Address: "vip"})
	apiErr(t, err, http.StatusBadRequest, "resourceInUseByAnotherResource")
	wait(frs.Delete(ctx, &computepb.DeleteForwardingRuleRequest{Project: testProject, Region: region, ForwardingRule: "udp"}))
	wait(addrs.Delete(ctx, &computepb.DeleteAddressRequest{Project: testProject, Region: region, Address: "vip"}))
	if h := holder(s, vip); !strings.HasSuffix(h, "/forwardingRules/tcp") {
		t.Errorf("shared VIP after demotion held by %q", h)
	}
}

// The demotion as a client we did not write does it, in plain JSON.
func TestAddressDemotionWire(t *testing.T) {
	s := start(t)
	regional := "/compute/v1/projects/" + testProject + "/regions/" + region
	// done sends a mutation and follows its operation to DONE, returning
	// the final operation document.
	done := func(method, path, body string) map[string]any {
		t.Helper()
		resp, b := raw(t, s, method, path, body)
		m := decode(t, b)
		if resp.StatusCode != 200 || m["kind"] != "compute#operation" {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		for m["status"] != "DONE" {
			_, b = raw(t, s, "POST", strings.TrimPrefix(m["selfLink"].(string), s.URL())+"/wait", "")
			m = decode(t, b)
		}
		return m
	}
	done("POST", regional+"/targetPools", `{"name":"pool"}`)
	done("POST", regional+"/forwardingRules", `{"name":"lb","IPProtocol":"TCP","portRange":"80","target":"regions/`+region+`/targetPools/pool"}`)
	_, b := raw(t, s, "GET", regional+"/forwardingRules/lb", "")
	ip, _ := decode(t, b)["IPAddress"].(string)
	if ip == "" {
		t.Fatalf("rule = %s", b)
	}

	if op := done("POST", regional+"/addresses", `{"name":"lb","address":"`+ip+`"}`); op["error"] != nil {
		t.Fatalf("promotion failed: %v", op)
	}
	_, b = raw(t, s, "GET", regional+"/addresses/lb", "")
	a := decode(t, b)
	users, _ := a["users"].([]any)
	if a["status"] != "IN_USE" || a["address"] != ip || len(users) != 1 || users[0] != s.URL()+regional+"/forwardingRules/lb" {
		t.Fatalf("promoted address = %s", b)
	}

	// Delete while in use: the operation succeeds, the address is gone,
	// the rule keeps its IP.
	if op := done("DELETE", regional+"/addresses/lb", ""); op["error"] != nil || op["operationType"] != "delete" {
		t.Fatalf("demotion failed: %v", op)
	}
	resp, b := raw(t, s, "GET", regional+"/addresses/lb", "")
	if e := decode(t, b)["error"].(map[string]any); resp.StatusCode != 404 || e["code"] != float64(404) {
		t.Errorf("address after delete: %d %s", resp.StatusCode, b)
	}
	_, b = raw(t, s, "GET", regional+"/forwardingRules/lb", "")
	if decode(t, b)["IPAddress"] != ip {
		t.Errorf("rule after demotion = %s", b)
	}

	// Deleting the rule frees the IP: a fresh reservation of it has no
	// users.
	done("DELETE", regional+"/forwardingRules/lb", "")
	if op := done("POST", regional+"/addresses", `{"name":"again","address":"`+ip+`"}`); op["error"] != nil {
		t.Fatalf("reservation failed: %v", op)
	}
	_, b = raw(t, s, "GET", regional+"/addresses/again", "")
	if a := decode(t, b); a["status"] != "RESERVED" || a["users"] != nil {
		t.Errorf("re-reserved = %s", b)
	}
}
