package digitalocean

import (
	"context"
	"net/http"
	"net/netip"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/digitalocean/godo"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

// lbReq is a minimal valid create request.
func lbReq(name string) *godo.LoadBalancerRequest {
	return &godo.LoadBalancerRequest{
		Name:   name,
		Region: "nyc3",
		ForwardingRules: []godo.ForwardingRule{
			{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 30080},
		},
	}
}

// createLB creates a load balancer through the API and waits (one read,
// with no activation delay) for it to be active.
func createLB(t *testing.T, c *godo.Client, req *godo.LoadBalancerRequest) *godo.LoadBalancer {
	t.Helper()
	lb, _, err := c.LoadBalancers.Create(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := c.LoadBalancers.Get(context.Background(), lb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusActive {
		t.Fatalf("status after a read = %q, want active", got.Status)
	}
	return got
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func inPrefix(t *testing.T, addr, prefix string) bool {
	t.Helper()
	a, err := netip.ParseAddr(addr)
	return err == nil && netip.MustParsePrefix(prefix).Contains(a)
}

func TestLBCreateThenActivate(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	d1, d2 := s.AddDroplet(Droplet{}), s.AddDroplet(Droplet{})
	cert := s.AddCertificate("web")
	idle := uint64(120)
	disable := true
	proxy := true
	req := &godo.LoadBalancerRequest{
		Name:     "a1b2c3.example.com",
		Region:   "fra1",
		SizeUnit: 3,
		ForwardingRules: []godo.ForwardingRule{
			{EntryProtocol: "http", EntryPort: 80, TargetProtocol: "http", TargetPort: 30080},
			{EntryProtocol: "https", EntryPort: 443, TargetProtocol: "http", TargetPort: 30080, CertificateID: cert.ID},
			{EntryProtocol: "http2", EntryPort: 8443, TargetProtocol: "https", TargetPort: 30443, TlsPassthrough: true},
		},
		HealthCheck: &godo.HealthCheck{
			Protocol: "http", Port: 30080, Path: "/healthz", CheckIntervalSeconds: 3,
			ResponseTimeoutSeconds: 5, HealthyThreshold: 5, UnhealthyThreshold: 3, ProxyProtocol: &proxy,
		},
		StickySessions:               &godo.StickySessions{Type: "cookies", CookieName: "DO-LB", CookieTtlSeconds: 300},
		DropletIDs:                   []int{d1.ID, d2.ID},
		Tags:                         []string{"k8s:abc"},
		RedirectHttpToHttps:          true,
		EnableProxyProtocol:          true,
		EnableBackendKeepalive:       true,
		HTTPIdleTimeoutSeconds:       &idle,
		VPCUUID:                      "22222222-2222-4222-8222-222222222222",
		ProjectID:                    "33333333-3333-4333-8333-333333333333",
		DisableLetsEncryptDNSRecords: &disable,
		Firewall:                     &godo.LBFirewall{Allow: []string{"cidr:10.0.0.0/8"}, Deny: []string{"ip:1.2.3.4"}},
		TLSCipherPolicy:              "STRONG",
	}
	lb, resp, err := c.LoadBalancers.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("status code = %d, want 202", resp.StatusCode)
	}
	if lb.Status != StatusNew || lb.IP != "" || lb.IPv6 != "" {
		t.Errorf("created: status %q ip %q ipv6 %q; want new without addresses", lb.Status, lb.IP, lb.IPv6)
	}
	if !uuidRE.MatchString(lb.ID) {
		t.Errorf("id %q is not a UUID", lb.ID)
	}
	created, err := time.Parse(time.RFC3339, lb.Created)
	if err != nil || time.Since(created) > time.Minute {
		t.Errorf("created_at = %q (%v)", lb.Created, err)
	}

	// Everything sent comes back, with the region as an object.
	want := req.ForwardingRules
	if !reflect.DeepEqual(lb.ForwardingRules, want) {
		t.Errorf("rules = %+v, want %+v", lb.ForwardingRules, want)
	}
	if !reflect.DeepEqual(*lb.HealthCheck, *req.HealthCheck) || !reflect.DeepEqual(*lb.StickySessions, *req.StickySessions) {
		t.Errorf("health check %+v, sticky %+v", lb.HealthCheck, lb.StickySessions)
	}
	if lb.Name != req.Name || lb.Region == nil || lb.Region.Slug != "fra1" || lb.Region.Name != "Frankfurt 1" ||
		lb.SizeUnit != 3 || lb.SizeSlug != "" || lb.Type != LBTypeRegional || lb.Network != LBNetworkExternal ||
		lb.NetworkStack != LBNetworkStackIPv4 || lb.Algorithm != "round_robin" ||
		!reflect.DeepEqual(lb.DropletIDs, []int{d1.ID, d2.ID}) || lb.Tag != "" ||
		!lb.RedirectHttpToHttps || !lb.EnableProxyProtocol || !lb.EnableBackendKeepalive ||
		lb.HTTPIdleTimeoutSeconds == nil || *lb.HTTPIdleTimeoutSeconds != 120 || lb.VPCUUID != req.VPCUUID ||
		lb.ProjectID != req.ProjectID || lb.DisableLetsEncryptDNSRecords == nil || !*lb.DisableLetsEncryptDNSRecords ||
		!reflect.DeepEqual(lb.Firewall, req.Firewall) || lb.TLSCipherPolicy != "STRONG" {
		t.Errorf("created = %+v", lb)
	}

	got, _, err := c.LoadBalancers.Get(ctx, lb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusActive || !inPrefix(t, got.IP, "198.18.0.0/15") || got.IPv6 != "" {
		t.Errorf("after activation: status %q ip %q ipv6 %q", got.Status, got.IP, got.IPv6)
	}

	st, ok := s.LoadBalancer(lb.ID)
	if !ok {
		t.Fatal("LoadBalancer: not found")
	}
	if st.IP != got.IP || st.Status != StatusActive || st.SizeUnit != 3 || st.Region != "fra1" ||
		!reflect.DeepEqual(st.Tags, []string{"k8s:abc"}) || st.HTTPIdleTimeoutSeconds != 120 ||
		!st.DisableLetsEncryptDNSRecords || st.HealthCheck.ProxyProtocol == nil || !*st.HealthCheck.ProxyProtocol ||
		st.ForwardingRules[1].CertificateID != cert.ID || !st.ForwardingRules[2].TLSPassthrough ||
		!reflect.DeepEqual(st.Firewall, Firewall{Allow: []string{"cidr:10.0.0.0/8"}, Deny: []string{"ip:1.2.3.4"}}) {
		t.Errorf("state = %+v", st)
	}
}

func TestLBNetworks(t *testing.T) {
	s, c := start(t)
	dual := lbReq("dual")
	dual.NetworkStack = LBNetworkStackDualstack
	internal := lbReq("internal")
	internal.Network = LBNetworkInternal
	nlb := lbReq("nlb")
	nlb.Type = LBTypeRegionalNetwork
	nlb.SizeSlug = "lb-medium"

	d := createLB(t, c, dual)
	v6, err := netip.ParseAddr(d.IPv6)
	if err != nil || !v6.Is6() || !inPrefix(t, d.IPv6, "2001:db8::/32") || !inPrefix(t, d.IP, "198.18.0.0/15") {
		t.Errorf("dualstack: ip %q ipv6 %q", d.IP, d.IPv6)
	}
	i := createLB(t, c, internal)
	if !inPrefix(t, i.IP, "10.0.0.0/8") || i.IPv6 != "" || i.Network != LBNetworkInternal {
		t.Errorf("internal: ip %q ipv6 %q network %q", i.IP, i.IPv6, i.Network)
	}
	n := createLB(t, c, nlb)
	if n.Type != LBTypeRegionalNetwork || n.SizeSlug != "lb-medium" || n.SizeUnit != 0 {
		t.Errorf("network lb: type %q size %q unit %d", n.Type, n.SizeSlug, n.SizeUnit)
	}
	if st, _ := s.LoadBalancer(n.ID); st.SizeUnit != 3 {
		t.Errorf("lb-medium has %d nodes, want 3", st.SizeUnit)
	}
	// Sized by slug, the object goes back through godo's AsRequest without
	// tripping the size/size_unit exclusion.
	if _, _, err := c.LoadBalancers.Update(context.Background(), n.ID, n.AsRequest()); err != nil {
		t.Errorf("round trip of a slug-sized load balancer: %v", err)
	}

	// Addresses are unique across load balancers and droplets.
	dr := s.AddDroplet(Droplet{})
	seen := map[string]bool{}
	for _, a := range []string{d.IP, d.IPv6, i.IP, n.IP, dr.PublicIPv4, dr.PrivateIPv4} {
		if seen[a] {
			t.Errorf("address %s handed out twice", a)
		}
		seen[a] = true
	}

	// Global load balancers need no region.
	glb := lbReq("global")
	glb.Type, glb.Region = LBTypeGlobal, ""
	g := createLB(t, c, glb)
	if g.Region != nil || g.Type != LBTypeGlobal || g.IP == "" {
		t.Errorf("global: %+v", g)
	}
}

func TestLBActivationDelayAndBusyUpdates(t *testing.T) {
	s, c := start(t)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s.SetClock(func() time.Time { return now })
	s.SetLoadBalancerActivationDelay(time.Minute)
	ctx := context.Background()
	d := s.AddDroplet(Droplet{})

	lb, _, err := c.LoadBalancers.Create(ctx, lbReq("slow"))
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(59 * time.Second)
	if got, _, _ := c.LoadBalancers.Get(ctx, lb.ID); got.Status != StatusNew || got.IP != "" {
		t.Errorf("before the delay: status %q ip %q", got.Status, got.IP)
	}

	// The real API refuses changes to a load balancer still being set up
	// with a 403, and these words.
	busy := []func() (*godo.Response, error){
		func() (*godo.Response, error) {
			_, r, err := c.LoadBalancers.Update(ctx, lb.ID, lbReq("renamed"))
			return r, err
		},
		func() (*godo.Response, error) { return c.LoadBalancers.AddDroplets(ctx, lb.ID, d.ID) },
		func() (*godo.Response, error) { return c.LoadBalancers.RemoveDroplets(ctx, lb.ID, d.ID) },
		func() (*godo.Response, error) {
			return c.LoadBalancers.AddForwardingRules(ctx, lb.ID, godo.ForwardingRule{EntryProtocol: "tcp", EntryPort: 22, TargetProtocol: "tcp", TargetPort: 22})
		},
		func() (*godo.Response, error) {
			return c.LoadBalancers.RemoveForwardingRules(ctx, lb.ID, lbReq("").ForwardingRules...)
		},
	}
	for k, call := range busy {
		_, err := call()
		if e := apiErr(t, err, http.StatusForbidden); e.Message != "Load Balancer can't be updated while it processes previous actions" {
			t.Errorf("call %d: message %q", k, e.Message)
		}
	}
	resp, body := raw(t, s, "PUT", "/v2/load_balancers/"+lb.ID, `{"name":"x","region":"nyc3","forwarding_rules":[{"entry_protocol":"tcp","entry_port":1,"target_protocol":"tcp","target_port":1}]}`)
	if m := decode(t, body); resp.StatusCode != 403 || m["id"] != "forbidden" {
		t.Errorf("raw update while new: %d %s", resp.StatusCode, body)
	}

	now = now.Add(time.Second)
	got, _, err := c.LoadBalancers.Update(ctx, lb.ID, lbReq("renamed"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusActive || got.IP == "" || got.Name != "renamed" {
		t.Errorf("after the delay: %+v", got)
	}
	if st, _ := s.LoadBalancer(lb.ID); !st.CreatedAt.Equal(now.Add(-time.Minute)) {
		t.Errorf("created_at = %v", st.CreatedAt)
	}
}

func TestLBListPaging(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	var want []string
	for _, name := range []string{"e", "d", "c", "b", "a"} {
		lb, _, err := c.LoadBalancers.Create(ctx, lbReq(name))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, lb.ID)
	}

	var got []string
	opt := &godo.ListOptions{PerPage: 2, Page: 1}
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("pagination did not end")
		}
		lbs, resp, err := c.LoadBalancers.List(ctx, opt)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Meta == nil || resp.Meta.Total != 5 {
			t.Fatalf("meta = %+v", resp.Meta)
		}
		for _, lb := range lbs {
			got = append(got, lb.ID)
		}
		if resp.Links.IsLastPage() {
			break
		}
		if next := resp.Links.Pages.Next; !strings.HasPrefix(next, s.URL()+"v2/load_balancers?page=") || !strings.Contains(next, "per_page=2") {
			t.Errorf("next link %q", next)
		}
		cur, err := resp.Links.CurrentPage()
		if err != nil {
			t.Fatal(err)
		}
		opt.Page = cur + 1
	}
	// Oldest first, like LoadBalancers.
	if !reflect.DeepEqual(got, want) {
		t.Errorf("listed %v, want %v", got, want)
	}
	var helper []string
	for _, lb := range s.LoadBalancers() {
		helper = append(helper, lb.ID)
	}
	if !reflect.DeepEqual(helper, want) {
		t.Errorf("LoadBalancers() = %v, want %v", helper, want)
	}

	lbs, _, err := c.LoadBalancers.ListByNames(ctx, []string{"a", "c", "zz"}, nil)
	if err != nil || len(lbs) != 2 || lbs[0].Name != "c" || lbs[1].Name != "a" {
		t.Errorf("ListByNames = %v, %v", lbs, err)
	}
	lbs, _, err = c.LoadBalancers.ListByUUIDs(ctx, []string{want[1]}, nil)
	if err != nil || len(lbs) != 1 || lbs[0].ID != want[1] {
		t.Errorf("ListByUUIDs = %v, %v", lbs, err)
	}
}

func TestLBUpdate(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	d1, d2, d3 := s.AddDroplet(Droplet{}), s.AddDroplet(Droplet{}), s.AddDroplet(Droplet{})
	req := lbReq("web")
	req.DropletIDs = []int{d1.ID, d2.ID}
	req.EnableProxyProtocol = true
	req.Tags = []string{"k8s:abc"}
	req.VPCUUID = "22222222-2222-4222-8222-222222222222"
	lb := createLB(t, c, req)

	// Full replacement: what is left out returns to its default.
	upd := lb.AsRequest()
	upd.Name = "web-renamed"
	upd.DropletIDs = []int{d2.ID, d3.ID}
	upd.ForwardingRules = []godo.ForwardingRule{
		{EntryProtocol: "tcp", EntryPort: 443, TargetProtocol: "tcp", TargetPort: 30443},
		{EntryProtocol: "udp", EntryPort: 53, TargetProtocol: "udp", TargetPort: 30053},
	}
	upd.EnableProxyProtocol = false
	upd.HealthCheck = &godo.HealthCheck{Protocol: "tcp", Port: 30443}
	upd.SizeUnit = 4
	got, resp, err := c.LoadBalancers.Update(ctx, lb.ID, upd)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status code = %d", resp.StatusCode)
	}
	if got.Name != "web-renamed" || !reflect.DeepEqual(got.DropletIDs, []int{d2.ID, d3.ID}) ||
		!reflect.DeepEqual(got.ForwardingRules, upd.ForwardingRules) || got.EnableProxyProtocol || got.SizeUnit != 4 ||
		got.IP != lb.IP || got.Created != lb.Created || got.Status != StatusActive || got.VPCUUID != req.VPCUUID {
		t.Errorf("updated = %+v", got)
	}
	// Defaults fill what the health check left out; tcp checks have no path.
	want := godo.HealthCheck{Protocol: "tcp", Port: 30443, CheckIntervalSeconds: 10, ResponseTimeoutSeconds: 5, HealthyThreshold: 5, UnhealthyThreshold: 3}
	if !reflect.DeepEqual(*got.HealthCheck, want) {
		t.Errorf("health check = %+v, want %+v", got.HealthCheck, want)
	}
	if st, _ := s.LoadBalancer(lb.ID); !reflect.DeepEqual(st.Tags, []string{"k8s:abc"}) || st.Name != "web-renamed" {
		t.Errorf("state after update = %+v", st)
	}

	// Switching to a tag lists the tagged droplets.
	s.UpdateDroplet(d1.ID, func(d *Droplet) { d.Tags = []string{"web"} })
	byTag := lb.AsRequest()
	byTag.DropletIDs, byTag.Tag = nil, "web"
	got, _, err = c.LoadBalancers.Update(ctx, lb.ID, byTag)
	if err != nil {
		t.Fatal(err)
	}
	if got.Tag != "web" || !reflect.DeepEqual(got.DropletIDs, []int{d1.ID}) {
		t.Errorf("tag-based: tag %q droplets %v", got.Tag, got.DropletIDs)
	}

	// Some things cannot change, worded like the real "size cannot be
	// modified".
	for field, mutate := range map[string]func(r *godo.LoadBalancerRequest){
		"region":        func(r *godo.LoadBalancerRequest) { r.Region = "sfo3" },
		"network":       func(r *godo.LoadBalancerRequest) { r.Network = LBNetworkInternal },
		"network_stack": func(r *godo.LoadBalancerRequest) { r.NetworkStack = LBNetworkStackDualstack },
		"type":          func(r *godo.LoadBalancerRequest) { r.Type = LBTypeRegionalNetwork },
		"vpc_uuid":      func(r *godo.LoadBalancerRequest) { r.VPCUUID = "44444444-4444-4444-8444-444444444444" },
	} {
		r := lb.AsRequest()
		mutate(r)
		_, _, err := c.LoadBalancers.Update(ctx, lb.ID, r)
		if e := apiErr(t, err, http.StatusUnprocessableEntity); e.Message != field+" cannot be modified" {
			t.Errorf("%s: message %q", field, e.Message)
		}
	}
	// Invalid updates get the create checks.
	bad := lb.AsRequest()
	bad.ForwardingRules = nil
	_, _, err = c.LoadBalancers.Update(ctx, lb.ID, bad)
	apiErr(t, err, http.StatusUnprocessableEntity)

	_, _, err = c.LoadBalancers.Update(ctx, "00000000-0000-4000-8000-000000000000", lb.AsRequest())
	apiErr(t, err, http.StatusNotFound)
}

func TestLBDelete(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	lb := createLB(t, c, lbReq("gone"))
	resp, err := c.LoadBalancers.Delete(ctx, lb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("status code = %d, want 204", resp.StatusCode)
	}
	if _, ok := s.LoadBalancer(lb.ID); ok {
		t.Error("load balancer still exists")
	}
	_, _, err = c.LoadBalancers.Get(ctx, lb.ID)
	if e := apiErr(t, err, http.StatusNotFound); e.Message != "Load Balancer not found" {
		t.Errorf("message = %q", e.Message)
	}
	_, err = c.LoadBalancers.Delete(ctx, lb.ID)
	apiErr(t, err, http.StatusNotFound)

	// A new load balancer can be deleted.
	fresh, _, err := c.LoadBalancers.Create(ctx, lbReq("fresh"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.LoadBalancers.Delete(ctx, fresh.ID); err != nil {
		t.Fatal(err)
	}
	resp2, body := raw(t, s, "GET", "/v2/load_balancers/not-a-uuid", "")
	if m := decode(t, body); resp2.StatusCode != 404 || m["id"] != "not_found" {
		t.Errorf("bad id: %d %s", resp2.StatusCode, body)
	}
}

func TestLBDropletsAndRules(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	d1, d2, d3 := s.AddDroplet(Droplet{}), s.AddDroplet(Droplet{}), s.AddDroplet(Droplet{})
	req := lbReq("web")
	req.DropletIDs = []int{d1.ID}
	lb := createLB(t, c, req)

	resp, err := c.LoadBalancers.AddDroplets(ctx, lb.ID, d2.ID, d3.ID, d1.ID)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("AddDroplets: %v, %v", resp, err)
	}
	if st, _ := s.LoadBalancer(lb.ID); !reflect.DeepEqual(st.DropletIDs, []int{d1.ID, d2.ID, d3.ID}) {
		t.Errorf("after add: %v", st.DropletIDs)
	}
	if _, err := c.LoadBalancers.RemoveDroplets(ctx, lb.ID, d1.ID, 12345); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.LoadBalancer(lb.ID); !reflect.DeepEqual(st.DropletIDs, []int{d2.ID, d3.ID}) {
		t.Errorf("after remove: %v", st.DropletIDs)
	}
	// A destroyed droplet leaves the load balancer, as on the real API.
	s.RemoveDroplet(d3.ID)
	if got, _, _ := c.LoadBalancers.Get(ctx, lb.ID); !reflect.DeepEqual(got.DropletIDs, []int{d2.ID}) {
		t.Errorf("after droplet deletion: %v", got.DropletIDs)
	}

	_, err = c.LoadBalancers.AddDroplets(ctx, lb.ID, 999)
	apiErr(t, err, http.StatusUnprocessableEntity)
	_, err = c.LoadBalancers.AddDroplets(ctx, lb.ID)
	if e := apiErr(t, err, http.StatusUnprocessableEntity); e.Message != "need to provide either a tag or a list of droplets" {
		t.Errorf("empty list: %q", e.Message)
	}
	_, err = c.LoadBalancers.AddDroplets(ctx, "00000000-0000-4000-8000-000000000000", d1.ID)
	apiErr(t, err, http.StatusNotFound)

	// The reference: a tag-based load balancer takes no individual droplets.
	tagged := lbReq("tagged")
	tagged.Tag = "web"
	tlb := createLB(t, c, tagged)
	_, err = c.LoadBalancers.AddDroplets(ctx, tlb.ID, d1.ID)
	apiErr(t, err, http.StatusUnprocessableEntity)

	// Forwarding rules.
	cert := s.AddCertificate("c")
	added := []godo.ForwardingRule{
		{EntryProtocol: "https", EntryPort: 443, TargetProtocol: "http", TargetPort: 30080, CertificateID: cert.ID},
		{EntryProtocol: "udp", EntryPort: 80, TargetProtocol: "udp", TargetPort: 30053},
	}
	if resp, err := c.LoadBalancers.AddForwardingRules(ctx, lb.ID, added...); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("AddForwardingRules: %v, %v", resp, err)
	}
	got, _, _ := c.LoadBalancers.Get(ctx, lb.ID)
	if want := append(req.ForwardingRules, added...); !reflect.DeepEqual(got.ForwardingRules, want) {
		t.Errorf("rules = %+v, want %+v", got.ForwardingRules, want)
	}
	// Port 80 already listens for http.
	_, err = c.LoadBalancers.AddForwardingRules(ctx, lb.ID, godo.ForwardingRule{EntryProtocol: "tcp", EntryPort: 80, TargetProtocol: "tcp", TargetPort: 1})
	apiErr(t, err, http.StatusUnprocessableEntity)
	_, err = c.LoadBalancers.AddForwardingRules(ctx, lb.ID, godo.ForwardingRule{EntryProtocol: "https", EntryPort: 8443, TargetProtocol: "http", TargetPort: 1})
	apiErr(t, err, http.StatusUnprocessableEntity)

	if _, err := c.LoadBalancers.RemoveForwardingRules(ctx, lb.ID, req.ForwardingRules[0], added[1]); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.LoadBalancer(lb.ID); len(st.ForwardingRules) != 1 || st.ForwardingRules[0].CertificateID != cert.ID {
		t.Errorf("after removal: %+v", st.ForwardingRules)
	}
	// The last rule stays.
	_, err = c.LoadBalancers.RemoveForwardingRules(ctx, lb.ID, added[0])
	apiErr(t, err, http.StatusUnprocessableEntity)
}

func TestLBValidation(t *testing.T) {
	s, c := start(t)
	d := s.AddDroplet(Droplet{})
	cert := s.AddCertificate("c")
	rule := func(entry string, port int, target string) []godo.ForwardingRule {
		return []godo.ForwardingRule{{EntryProtocol: entry, EntryPort: port, TargetProtocol: target, TargetPort: 30000}}
	}
	type req = godo.LoadBalancerRequest
	// Each case names the fragment of the message that says why, so a
	// case cannot pass by tripping an earlier check.
	cases := []struct {
		name, want string
		mutate     func(r *req)
	}{
		{"no name", "name is required", func(r *req) { r.Name = "" }},
		{"name starts with dash", "start with a letter or digit", func(r *req) { r.Name = "-web" }},
		{"name ends with dash", "not end with '-'", func(r *req) { r.Name = "web-" }},
		{"name with underscore", "contain only letters", func(r *req) { r.Name = "my_web" }},
		{"name too long", "at most 255", func(r *req) { r.Name = strings.Repeat("a", 256) }},
		{"no region", "region is required", func(r *req) { r.Region = "" }},
		{"bad region", `region "mars1"`, func(r *req) { r.Region = "mars1" }},
		{"bad type", `type "LOCAL"`, func(r *req) { r.Type = "LOCAL" }},
		{"bad network", `network "PUBLIC"`, func(r *req) { r.Network = "PUBLIC" }},
		{"bad network stack", `network_stack "IPV6"`, func(r *req) { r.NetworkStack = "IPV6" }},
		{"bad algorithm", `algorithm "random"`, func(r *req) { r.Algorithm = "random" }},
		{"bad cipher policy", `tls_cipher_policy "WEAK"`, func(r *req) { r.TLSCipherPolicy = "WEAK" }},
		{"size and size_unit", "size and size_unit are mutually exclusive", func(r *req) { r.SizeSlug, r.SizeUnit = "lb-small", 2 }},
		{"bad size", `size "lb-huge"`, func(r *req) { r.SizeSlug = "lb-huge" }},
		{"size_unit too big", "size_unit must be between 1 and 200", func(r *req) { r.SizeUnit = 201 }},
		{"no rules", "at least one forwarding rule", func(r *req) { r.ForwardingRules = nil }},
		{"bad entry protocol", `entry_protocol "ftp"`, func(r *req) { r.ForwardingRules = rule("ftp", 21, "tcp") }},
		{"http3 target", `target_protocol "http3"`, func(r *req) { r.ForwardingRules = rule("tcp", 21, "http3") }},
		{"negative port", "target_port must be between", func(r *req) { r.ForwardingRules[0].TargetPort = -1 }},
		{"port too high", "entry_port must be between", func(r *req) { r.ForwardingRules = rule("tcp", 70000, "tcp") }},
		{"udp to tcp", "udp as both", func(r *req) { r.ForwardingRules = rule("udp", 53, "tcp") }},
		{"https without cert", "https require a certificate_id or tls_passthrough", func(r *req) { r.ForwardingRules = rule("https", 443, "http") }},
		{"http2 without cert", "http2 require a certificate_id or tls_passthrough", func(r *req) { r.ForwardingRules = rule("http2", 443, "http") }},
		{"http3 without cert", "http3 require a certificate_id", func(r *req) { r.ForwardingRules = rule("http3", 443, "http") }},
		{"http3 with passthrough", "tls_passthrough is not supported with entry_protocol http3", func(r *req) {
			r.ForwardingRules = rule("http3", 443, "http")
			r.ForwardingRules[0].TlsPassthrough = true
		}},
		{"unknown cert", "certificate nope not found", func(r *req) {
			r.ForwardingRules = rule("https", 443, "http")
			r.ForwardingRules[0].CertificateID = "nope"
		}},
		{"cert on tcp", "certificate_id is not supported with entry_protocol tcp", func(r *req) {
			r.ForwardingRules = rule("tcp", 443, "tcp")
			r.ForwardingRules[0].CertificateID = cert.ID
		}},
		{"cert and passthrough", "mutually exclusive", func(r *req) {
			r.ForwardingRules = rule("https", 443, "https")
			r.ForwardingRules[0].CertificateID = cert.ID
			r.ForwardingRules[0].TlsPassthrough = true
		}},
		{"passthrough on http", "tls_passthrough is not supported with entry_protocol http", func(r *req) { r.ForwardingRules[0].TlsPassthrough = true }},
		{"duplicate entry port", "entry_port 80 is used by more than one", func(r *req) {
			r.ForwardingRules = append(r.ForwardingRules, rule("tcp", 80, "tcp")...)
		}},
		{"unknown droplet", "droplet 999 not found", func(r *req) { r.DropletIDs = []int{d.ID, 999} }},
		{"tag and droplets", "droplet_ids and tag are mutually exclusive", func(r *req) { r.DropletIDs, r.Tag = []int{d.ID}, "web" }},
		{"bad health protocol", `health_check protocol "udp"`, func(r *req) { r.HealthCheck = &godo.HealthCheck{Protocol: "udp", Port: 53} }},
		{"health interval too low", "check_interval_seconds must be between 3 and 300", func(r *req) {
			r.HealthCheck = &godo.HealthCheck{Protocol: "tcp", CheckIntervalSeconds: 1}
		}},
		{"health threshold high", "healthy_threshold must be between 2 and 10", func(r *req) {
			r.HealthCheck = &godo.HealthCheck{Protocol: "tcp", HealthyThreshold: 11}
		}},
		{"bad sticky type", `sticky_sessions type "ip"`, func(r *req) { r.StickySessions = &godo.StickySessions{Type: "ip"} }},
		{"cookies without name", "cookie_name is required", func(r *req) {
			r.StickySessions = &godo.StickySessions{Type: "cookies", CookieTtlSeconds: 60}
		}},
		{"cookies without ttl", "cookie_ttl_seconds must be positive", func(r *req) {
			r.StickySessions = &godo.StickySessions{Type: "cookies", CookieName: "DO-LB"}
		}},
		{"bad firewall rule", `firewall rule "host:example.com"`, func(r *req) { r.Firewall = &godo.LBFirewall{Deny: []string{"host:example.com"}} }},
		{"bad firewall cidr", `firewall rule "cidr:10.0.0.0/33"`, func(r *req) { r.Firewall = &godo.LBFirewall{Allow: []string{"cidr:10.0.0.0/33"}} }},
		{"idle timeout too short", "http_idle_timeout_seconds must be between 30 and 600", func(r *req) { v := uint64(10); r.HTTPIdleTimeoutSeconds = &v }},
	}
	for _, tc := range cases {
		r := lbReq("web")
		tc.mutate(r)
		_, _, err := c.LoadBalancers.Create(context.Background(), r)
		if e := apiErr(t, err, http.StatusUnprocessableEntity); !strings.Contains(e.Message, tc.want) || e.RequestID == "" {
			t.Errorf("%s: message %q, want it to say %q", tc.name, e.Message, tc.want)
		}
	}
	if n := len(s.LoadBalancers()); n != 0 {
		t.Errorf("%d load balancers created by invalid requests", n)
	}

	// The error document.
	resp, body := raw(t, s, "POST", "/v2/load_balancers", `{"region":"nyc3"}`)
	m := decode(t, body)
	if resp.StatusCode != 422 || m["id"] != "unprocessable_entity" || m["message"] != "name is required" || m["request_id"] != resp.Header.Get("X-Request-Id") {
		t.Errorf("422 body: %d %s", resp.StatusCode, body)
	}
	resp, body = raw(t, s, "POST", "/v2/load_balancers", `{"name":`)
	if m := decode(t, body); resp.StatusCode != 400 || m["id"] != "bad_request" {
		t.Errorf("bad JSON: %d %s", resp.StatusCode, body)
	}
	// size_unit 0 is sent explicitly here (godo omits zeros).
	resp, body = raw(t, s, "POST", "/v2/load_balancers", `{"name":"x","region":"nyc3","size_unit":0,"forwarding_rules":[{"entry_protocol":"tcp","entry_port":1,"target_protocol":"tcp","target_port":1}]}`)
	if resp.StatusCode != 422 {
		t.Errorf("size_unit 0: %d %s", resp.StatusCode, body)
	}

	// Valid edge cases pass.
	for name, mutate := range map[string]func(r *godo.LoadBalancerRequest){
		"https passthrough": func(r *godo.LoadBalancerRequest) {
			r.ForwardingRules = rule("https", 443, "https")
			r.ForwardingRules[0].TlsPassthrough = true
		},
		"http3 with cert beside https on its port": func(r *godo.LoadBalancerRequest) {
			r.ForwardingRules = append(rule("http3", 443, "http"), rule("https", 443, "http")...)
			r.ForwardingRules[0].CertificateID = cert.ID
			r.ForwardingRules[1].CertificateID = cert.ID
		},
		"tcp and udp on one port": func(r *godo.LoadBalancerRequest) {
			r.ForwardingRules = append(rule("tcp", 53, "tcp"), rule("udp", 53, "udp")...)
		},
		"one-letter name": func(r *godo.LoadBalancerRequest) { r.Name = "a" },
		"size_unit 200":   func(r *godo.LoadBalancerRequest) { r.SizeUnit = 200 },
		"ipv6 firewall": func(r *godo.LoadBalancerRequest) {
			r.Firewall = &godo.LBFirewall{Allow: []string{"cidr:2001:db8::/32", "ip:::1"}}
		},
		"https health":     func(r *godo.LoadBalancerRequest) { r.HealthCheck = &godo.HealthCheck{Protocol: "https", Port: 443} },
		"least connection": func(r *godo.LoadBalancerRequest) { r.Algorithm = "least_connections" },
	} {
		r := lbReq("ok")
		mutate(r)
		if _, _, err := c.LoadBalancers.Create(context.Background(), r); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestLBWireShape(t *testing.T) {
	s, _ := start(t)
	resp, body := raw(t, s, "POST", "/v2/load_balancers",
		`{"name":"wire","region":"nyc3","forwarding_rules":[{"entry_protocol":"http","entry_port":80,"target_protocol":"http","target_port":80}]}`)
	if resp.StatusCode != 202 || resp.Header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, body)
	}
	lb := decode(t, body)["load_balancer"].(map[string]any)
	// Every field of the reference's load balancer object is present; the
	// optional ones are absent.
	for _, key := range []string{
		"id", "name", "project_id", "ip", "size_unit", "algorithm", "status", "created_at",
		"forwarding_rules", "health_check", "sticky_sessions", "redirect_http_to_https",
		"enable_proxy_protocol", "enable_backend_keepalive", "http_idle_timeout_seconds",
		"vpc_uuid", "disable_lets_encrypt_dns_records", "firewall", "network", "network_stack",
		"type", "tls_cipher_policy", "region", "tag", "droplet_ids",
	} {
		if _, ok := lb[key]; !ok {
			t.Errorf("missing %s", key)
		}
	}
	for _, key := range []string{"ipv6", "size", "tags"} {
		if _, ok := lb[key]; ok {
			t.Errorf("unexpected %s = %v", key, lb[key])
		}
	}
	if lb["status"] != "new" || lb["ip"] != "" || lb["size_unit"] != float64(1) || lb["tag"] != "" ||
		lb["http_idle_timeout_seconds"] != float64(60) || lb["tls_cipher_policy"] != "DEFAULT" ||
		lb["algorithm"] != "round_robin" || lb["type"] != "REGIONAL" || lb["network"] != "EXTERNAL" ||
		lb["network_stack"] != "IPV4" || lb["vpc_uuid"] != defaultVPC("nyc3") || lb["project_id"] == "" {
		t.Errorf("load balancer = %v", lb)
	}
	if ids, ok := lb["droplet_ids"].([]any); !ok || len(ids) != 0 {
		t.Errorf("droplet_ids = %#v, want []", lb["droplet_ids"])
	}
	fw := lb["firewall"].(map[string]any)
	if deny, ok := fw["deny"].([]any); !ok || len(deny) != 0 {
		t.Errorf("firewall = %v", fw)
	}
	if allow, ok := fw["allow"].([]any); !ok || len(allow) != 0 {
		t.Errorf("firewall = %v", fw)
	}
	// The health check and sticky sessions defaults of the reference's
	// examples; no cookie fields without cookies.
	hc := lb["health_check"].(map[string]any)
	wantHC := map[string]any{"protocol": "http", "port": float64(80), "path": "/", "check_interval_seconds": float64(10),
		"response_timeout_seconds": float64(5), "healthy_threshold": float64(5), "unhealthy_threshold": float64(3)}
	if !reflect.DeepEqual(hc, wantHC) {
		t.Errorf("health_check = %v", hc)
	}
	if ss := lb["sticky_sessions"].(map[string]any); !reflect.DeepEqual(ss, map[string]any{"type": "none"}) {
		t.Errorf("sticky_sessions = %v", ss)
	}
	rule := lb["forwarding_rules"].([]any)[0].(map[string]any)
	if rule["certificate_id"] != "" || rule["tls_passthrough"] != false || len(rule) != 6 {
		t.Errorf("rule = %v", rule)
	}
	region := lb["region"].(map[string]any)
	for _, key := range []string{"slug", "name", "sizes", "available", "features"} {
		if _, ok := region[key]; !ok {
			t.Errorf("region lacks %s", key)
		}
	}

	// List: one page has empty links and a total.
	_, body = raw(t, s, "GET", "/v2/load_balancers", "")
	root := decode(t, body)
	if links, ok := root["links"].(map[string]any); !ok || len(links) != 0 {
		t.Errorf("links = %v", root["links"])
	}
	if root["meta"].(map[string]any)["total"] != float64(1) || len(root["load_balancers"].([]any)) != 1 {
		t.Errorf("list = %s", body)
	}
	// Active: the address appears.
	got := root["load_balancers"].([]any)[0].(map[string]any)
	if got["status"] != "active" || got["ip"] == "" {
		t.Errorf("listed = %v", got)
	}

	resp, body = raw(t, s, "DELETE", "/v2/load_balancers/"+lb["id"].(string), "")
	if resp.StatusCode != 204 || len(body) != 0 {
		t.Errorf("delete: %d %q", resp.StatusCode, body)
	}
	resp, body = raw(t, s, "PATCH", "/v2/load_balancers/"+lb["id"].(string), "")
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "DELETE, GET, PUT" {
		t.Errorf("PATCH: %d %v %s", resp.StatusCode, resp.Header, body)
	}
}

func TestLBFaultsAndCounting(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	f := s.Faults()

	f.FailNext("POST /v2/load_balancers", 1, 500)
	_, _, err := c.LoadBalancers.Create(ctx, lbReq("web"))
	apiErr(t, err, http.StatusInternalServerError)
	if len(s.LoadBalancers()) != 0 {
		t.Error("a plain 500 created a load balancer")
	}
	lb := createLB(t, c, lbReq("web"))

	f.AddRule(faults.Rule{Match: "GET /v2/load_balancers/{id}", Status: 429, RetryAfter: 2 * time.Second, Remaining: 1})
	_, resp, err := c.LoadBalancers.Get(ctx, lb.ID)
	if e := apiErr(t, err, http.StatusTooManyRequests); e.Message != "API Rate limit exceeded." || resp.Header.Get("Retry-After") != "2" {
		t.Errorf("429: %q, Retry-After %q", e.Message, resp.Header.Get("Retry-After"))
	}
	f.FailNext("PUT /v2/load_balancers/{id}", 1, 503)
	_, _, err = c.LoadBalancers.Update(ctx, lb.ID, lb.AsRequest())
	apiErr(t, err, http.StatusServiceUnavailable)
	if _, _, err := c.LoadBalancers.Update(ctx, lb.ID, lb.AsRequest()); err != nil {
		t.Fatal(err)
	}
	f.FailNext("POST /v2/load_balancers/{id}/droplets", 1, 500)
	_, err = c.LoadBalancers.AddDroplets(ctx, lb.ID, 1)
	apiErr(t, err, http.StatusInternalServerError)
	c.LoadBalancers.List(ctx, nil)
	c.LoadBalancers.Get(ctx, "00000000-0000-4000-8000-000000000000")
	c.Certificates.List(ctx, nil)

	want := map[string]map[int]int{
		"POST /v2/load_balancers":               {500: 1, 202: 1},
		"GET /v2/load_balancers/{id}":           {200: 1, 429: 1, 404: 1},
		"PUT /v2/load_balancers/{id}":           {503: 1, 200: 1},
		"POST /v2/load_balancers/{id}/droplets": {500: 1},
		"GET /v2/load_balancers":                {200: 1},
		"GET /v2/certificates":                  {200: 1},
	}
	for ep, responses := range want {
		if got := f.Responses(ep); !reflect.DeepEqual(got, responses) {
			t.Errorf("Responses(%q) = %v, want %v", ep, got, responses)
		}
		n := 0
		for _, k := range responses {
			n += k
		}
		if got := f.CallCount(ep); got != n {
			t.Errorf("CallCount(%q) = %d, want %d", ep, got, n)
		}
	}
}

func TestLBAfterCommit(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	f := s.Faults()

	// The create happens, but the client only sees a 500.
	f.AddRule(faults.Rule{Match: "POST /v2/load_balancers", Status: 500, AfterCommit: true, Remaining: 1})
	_, _, err := c.LoadBalancers.Create(ctx, lbReq("maybe"))
	apiErr(t, err, http.StatusInternalServerError)
	lbs := s.LoadBalancers()
	if len(lbs) != 1 || lbs[0].Name != "maybe" {
		t.Fatalf("load balancers after a committed 500: %+v", lbs)
	}
	if st := s.LoadBalancerStats(); st.Created != 1 || st.Live != 1 {
		t.Errorf("stats = %+v", st)
	}
	// A client that looks before retrying finds it.
	found, _, err := c.LoadBalancers.ListByNames(ctx, []string{"maybe"}, nil)
	if err != nil || len(found) != 1 {
		t.Errorf("ListByNames = %v, %v", found, err)
	}
	if got := f.Responses("POST /v2/load_balancers"); !reflect.DeepEqual(got, map[int]int{500: 1}) {
		t.Errorf("responses = %v", got)
	}

	// A committed delete: the load balancer is gone though the client saw
	// a 503, so its retry gets a 404.
	f.AddRule(faults.Rule{Match: "DELETE /v2/load_balancers/{id}", Status: 503, AfterCommit: true, Remaining: 1})
	_, err = c.LoadBalancers.Delete(ctx, lbs[0].ID)
	apiErr(t, err, http.StatusServiceUnavailable)
	if _, ok := s.LoadBalancer(lbs[0].ID); ok {
		t.Error("the committed delete did not delete")
	}
	_, err = c.LoadBalancers.Delete(ctx, lbs[0].ID)
	apiErr(t, err, http.StatusNotFound)

	// Requests the API would refuse change nothing either way.
	f.AddRule(faults.Rule{Match: "POST /v2/load_balancers", Status: 500, AfterCommit: true, Remaining: 2})
	_, _, err = c.LoadBalancers.Create(ctx, lbReq("-invalid"))
	apiErr(t, err, http.StatusInternalServerError)
	_, _, err = client(t, s, "wrong-token").LoadBalancers.Create(ctx, lbReq("unauthorized"))
	apiErr(t, err, http.StatusInternalServerError)
	if n := len(s.LoadBalancers()); n != 0 {
		t.Errorf("%d load balancers from refused requests", n)
	}
}

func TestLBStatsPeak(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	const n = 20
	ids := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for k := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lb, _, err := c.LoadBalancers.Create(ctx, lbReq("lb"))
			if err != nil {
				errs <- err
				return
			}
			ids[k] = lb.ID
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if st := s.LoadBalancerStats(); st != (LBStats{Created: n, Live: n, Peak: n}) {
		t.Errorf("after creating: %+v", st)
	}
	for k, id := range ids {
		if k%2 == 0 {
			if _, err := c.LoadBalancers.Delete(ctx, id); err != nil {
				t.Fatal(err)
			}
		} else if !s.RemoveLoadBalancer(id) {
			t.Errorf("RemoveLoadBalancer(%s) = false", id)
		}
	}
	if s.RemoveLoadBalancer(ids[0]) {
		t.Error("RemoveLoadBalancer of a deleted one = true")
	}
	// One more, after the others are gone, does not raise the peak.
	createLB(t, c, lbReq("again"))
	s.AddLoadBalancer(LoadBalancer{})
	if st := s.LoadBalancerStats(); st != (LBStats{Created: n + 2, Deleted: n, Live: 2, Peak: n}) {
		t.Errorf("at the end: %+v", st)
	}
}

func TestAddLoadBalancerDefaultsAndHelpers(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	lb := s.AddLoadBalancer(LoadBalancer{Name: "seeded", Network: LBNetworkInternal})
	if !uuidRE.MatchString(lb.ID) || lb.Status != StatusActive || !inPrefix(t, lb.IP, "10.0.0.0/8") ||
		lb.Region != defaultRegion || lb.SizeUnit != 1 || lb.Type != LBTypeRegional || len(lb.ForwardingRules) != 1 ||
		lb.HealthCheck.Protocol != "http" || lb.StickySessions.Type != "none" || lb.VPCUUID != defaultVPC(defaultRegion) ||
		lb.CreatedAt.IsZero() || lb.DropletIDs == nil {
		t.Errorf("seeded = %+v", lb)
	}
	got, _, err := c.LoadBalancers.Get(ctx, lb.ID)
	if err != nil || got.IP != lb.IP || got.Name != "seeded" {
		t.Fatalf("Get = %+v, %v", got, err)
	}

	// Helpers hand out copies.
	lb.ForwardingRules[0].EntryPort = 1
	lb.Firewall.Allow = append(lb.Firewall.Allow, "ip:1.1.1.1")
	lb.HealthCheck.Port = 1
	lb.StickySessions.Type = "cookies"
	if again, _ := s.LoadBalancer(lb.ID); again.ForwardingRules[0].EntryPort != 80 || len(again.Firewall.Allow) != 0 ||
		again.HealthCheck.Port != 80 || again.StickySessions.Type != "none" {
		t.Errorf("state changed through a copy: %+v", again)
	}

	// The API always has a health check and sticky sessions, even if a
	// test drops them.
	if err := s.UpdateLoadBalancer(lb.ID, func(l *LoadBalancer) { l.HealthCheck, l.StickySessions = nil, nil }); err != nil {
		t.Fatal(err)
	}
	if got, _, err := c.LoadBalancers.Get(ctx, lb.ID); err != nil || got.HealthCheck.Protocol != "http" || got.StickySessions.Type != "none" {
		t.Errorf("after clearing: %+v, %v", got, err)
	}

	if err := s.UpdateLoadBalancer(lb.ID, func(l *LoadBalancer) { l.Status = StatusErrored }); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := c.LoadBalancers.Get(ctx, lb.ID); got.Status != StatusErrored {
		t.Errorf("status = %q", got.Status)
	}
	if err := s.UpdateLoadBalancer(lb.ID, func(l *LoadBalancer) { l.Status = "broken" }); err == nil {
		t.Error("invalid status accepted")
	}
	if err := s.UpdateLoadBalancer(lb.ID, func(l *LoadBalancer) { l.ID = "x" }); err == nil {
		t.Error("ID change accepted")
	}
	if err := s.UpdateLoadBalancer("nope", func(*LoadBalancer) {}); err == nil {
		t.Error("unknown id accepted")
	}

	// A seeded "new" one turns active on the next read, with an address.
	pending := s.AddLoadBalancer(LoadBalancer{Status: StatusNew, NetworkStack: LBNetworkStackDualstack})
	if pending.IP != "" {
		t.Errorf("new load balancer has ip %q", pending.IP)
	}
	if got, _, _ := c.LoadBalancers.Get(ctx, pending.ID); got.Status != StatusActive || got.IP == "" || got.IPv6 == "" {
		t.Errorf("after a read: %+v", got)
	}

	func() {
		defer func() {
			if recover() == nil {
				t.Error("duplicate id accepted")
			}
		}()
		s.AddLoadBalancer(LoadBalancer{ID: lb.ID})
	}()
}
