package hetzner

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
)

// The wire, as the API reference documents it, checked without any
// client's structs.

func sameKeys(t *testing.T, what string, m map[string]any, want ...string) {
	t.Helper()
	got := keys(m)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("%s keys = %v, want %v", what, got, want)
	}
}

func TestWireListEnvelope(t *testing.T) {
	s, _ := start(t)
	s.AddServer(ServerSpec{})
	r, b := raw(t, s, "GET", "/v1/servers", "")
	if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s", r.StatusCode, r.Header.Get("Content-Type"))
	}
	m := doc(t, b)
	sameKeys(t, "list", m, "servers", "meta")
	p := m["meta"].(map[string]any)["pagination"].(map[string]any)
	sameKeys(t, "pagination", p, "page", "per_page", "previous_page", "next_page", "last_page", "total_entries")
	if p["page"] != 1.0 || p["per_page"] != 25.0 || p["previous_page"] != nil || p["next_page"] != nil ||
		p["last_page"] != 1.0 || p["total_entries"] != 1.0 {
		t.Errorf("pagination = %v", p)
	}
	if id := r.Header.Get("X-Correlation-Id"); !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(id) {
		t.Errorf("X-Correlation-Id = %q", id)
	}
	if r.Header.Get("RateLimit-Limit") != "3600" {
		t.Errorf("RateLimit-Limit = %q", r.Header.Get("RateLimit-Limit"))
	}
	rem, _ := strconv.Atoi(r.Header.Get("RateLimit-Remaining"))
	reset, _ := strconv.ParseInt(r.Header.Get("RateLimit-Reset"), 10, 64)
	if rem != 3599 || reset < time.Now().Unix() || reset > time.Now().Add(2*time.Second).Unix() {
		t.Errorf("RateLimit-Remaining = %d, RateLimit-Reset = %d (now %d)", rem, reset, time.Now().Unix())
	}
	// An empty list is [], not null.
	_, b = raw(t, s, "GET", "/v1/load_balancers", "")
	if string(b) != `{"load_balancers":[],"meta":{"pagination":{"page":1,"per_page":25,"previous_page":null,"next_page":null,"last_page":1,"total_entries":0}}}` {
		t.Errorf("empty list = %s", b)
	}
}

func TestWireErrors(t *testing.T) {
	s, _ := start(t)
	cases := []struct {
		method, path, body, token string
		status                    int
		want                      string
	}{
		{"GET", "/v1/servers", "", "wrong", 401, `{"error":{"code":"unauthorized","message":"unable to authenticate","details":{}}}`},
		{"GET", "/v1/nothing", "", "", 401, `{"error":{"code":"unauthorized","message":"unable to authenticate","details":{}}}`},
		{"GET", "/v1/nothing", "", testToken, 404, `{"error":{"code":"not_found","message":"not found","details":{}}}`},
		{"GET", "/v1/servers/42", "", testToken, 404, `{"error":{"code":"not_found","message":"server with ID '42' not found","details":{}}}`},
		{"POST", "/v1/load_balancers", "{", testToken, 400, `{"error":{"code":"json_error","message":"invalid JSON in request body","details":{}}}`},
		{"POST", "/v1/load_balancers", `{"load_balancer_type":"lb11","location":"fsn1"}`, testToken, 400,
			`{"error":{"code":"invalid_input","message":"invalid input in field 'name'","details":{"fields":[{"name":"name","messages":["is required"]}]}}}`},
		{"GET", "/v1/actions", "", testToken, 400,
			`{"error":{"code":"invalid_input","message":"invalid input in field 'id'","details":{"fields":[{"name":"id","messages":["is required"]}]}}}`},
		{"GET", "/v1/datacenters", "", testToken, 410,
			`{"error":{"code":"deprecated_api_endpoint","message":"API functionality was removed","details":{"announcement":"https://docs.hetzner.cloud/changelog#2026-06-02-datacenters-deprecated"}}}`},
	}
	for _, tc := range cases {
		req, _ := http.NewRequest(tc.method, s.URL()+tc.path, stringsReader(tc.body))
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b := readAll(t, r)
		if r.StatusCode != tc.status || string(b) != tc.want {
			t.Errorf("%s %s: %d %s\nwant %d %s", tc.method, tc.path, r.StatusCode, b, tc.status, tc.want)
		}
		if r.Header.Get("X-Correlation-Id") == "" || r.Header.Get("RateLimit-Remaining") == "" {
			t.Errorf("%s %s: headers %v", tc.method, tc.path, r.Header)
		}
	}
}

func TestWireShapes(t *testing.T) {
	s, c := start(t)
	network, ids := cluster(s, 1)
	_, b := raw(t, s, "GET", fmt.Sprintf("/v1/servers/%d", ids[0]), "")
	sv := doc(t, b)["server"].(map[string]any)
	sameKeys(t, "server", sv, "id", "name", "status", "created", "public_net", "private_net", "server_type",
		"location", "image", "iso", "rescue_enabled", "locked", "backup_window", "outgoing_traffic", "ingoing_traffic",
		"included_traffic", "protection", "labels", "volumes", "load_balancers", "primary_disk_size", "placement_group")
	sameKeys(t, "public_net", sv["public_net"].(map[string]any), "ipv4", "ipv6", "floating_ips", "firewalls")
	sameKeys(t, "ipv4", sv["public_net"].(map[string]any)["ipv4"].(map[string]any), "id", "ip", "blocked", "dns_ptr")
	sameKeys(t, "private_net", sv["private_net"].([]any)[0].(map[string]any), "network", "ip", "alias_ips", "mac_address")
	sameKeys(t, "location", sv["location"].(map[string]any), "id", "name", "description", "country", "city",
		"latitude", "longitude", "network_zone")
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$`).MatchString(sv["created"].(string)) {
		t.Errorf("created = %v", sv["created"])
	}
	if ip6 := sv["public_net"].(map[string]any)["ipv6"].(map[string]any)["ip"].(string); !regexp.MustCompile(`^2001:db8:[0-9a-f:]+::/64$`).MatchString(ip6) {
		t.Errorf("ipv6 = %s", ip6)
	}

	_, b = raw(t, s, "GET", fmt.Sprintf("/v1/networks/%d", network), "")
	nw := doc(t, b)["network"].(map[string]any)
	sameKeys(t, "network", nw, "id", "name", "created", "ip_range", "subnets", "routes", "servers", "load_balancers",
		"protection", "labels", "expose_routes_to_vswitch")
	sameKeys(t, "subnet", nw["subnets"].([]any)[0].(map[string]any), "type", "ip_range", "network_zone", "gateway")

	res, _, err := c.LoadBalancer.Create(context.Background(), hcloud.LoadBalancerCreateOpts{Name: "lb",
		LoadBalancerType: &hcloud.LoadBalancerType{Name: "lb11"}, Location: &hcloud.Location{Name: "fsn1"},
		Network:  &hcloud.Network{ID: network},
		Services: []hcloud.LoadBalancerCreateOptsService{{Protocol: hcloud.LoadBalancerServiceProtocolHTTP}},
		Targets: []hcloud.LoadBalancerCreateOptsTarget{{Type: hcloud.LoadBalancerTargetTypeServer,
			Server: hcloud.LoadBalancerCreateOptsTargetServer{Server: &hcloud.Server{ID: ids[0]}}, UsePrivateIP: hcloud.Ptr(true)}}})
	if err != nil {
		t.Fatal(err)
	}
	_, b = raw(t, s, "GET", fmt.Sprintf("/v1/load_balancers/%d", res.LoadBalancer.ID), "")
	lb := doc(t, b)["load_balancer"].(map[string]any)
	sameKeys(t, "load_balancer", lb, "id", "name", "public_net", "private_net", "location", "load_balancer_type",
		"protection", "labels", "targets", "services", "algorithm", "outgoing_traffic", "ingoing_traffic",
		"included_traffic", "created")
	sameKeys(t, "lb public_net", lb["public_net"].(map[string]any), "enabled", "ipv4", "ipv6")
	sameKeys(t, "lb type", lb["load_balancer_type"].(map[string]any), "id", "name", "description", "max_connections",
		"max_services", "max_targets", "max_assigned_certificates", "deprecated", "deprecation", "prices")
	svc := lb["services"].([]any)[0].(map[string]any)
	sameKeys(t, "service", svc, "protocol", "listen_port", "destination_port", "proxyprotocol", "health_check", "http")
	sameKeys(t, "health_check", svc["health_check"].(map[string]any), "protocol", "port", "interval", "timeout", "retries", "http")
	sameKeys(t, "http", svc["http"].(map[string]any), "cookie_name", "cookie_lifetime", "certificates", "redirect_http",
		"sticky_sessions", "timeout_idle")
	if svc["listen_port"] != 80.0 || svc["destination_port"] != 80.0 || svc["http"].(map[string]any)["cookie_name"] != "HCLBSTICKY" {
		t.Errorf("http service defaults: %v", svc)
	}
	tg := lb["targets"].([]any)[0].(map[string]any)
	sameKeys(t, "target", tg, "type", "server", "health_status", "use_private_ip")
	sameKeys(t, "health_status", tg["health_status"].([]any)[0].(map[string]any), "listen_port", "status")
	if pn := lb["private_net"].([]any)[0].(map[string]any); pn["network"] != float64(network) || pn["ip"] != "10.0.0.3" {
		t.Errorf("private_net = %v", pn)
	}
}

func TestCatalog(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	locs, err := c.Location.All(ctx)
	if err != nil || len(locs) != 6 {
		t.Fatal(locs, err)
	}
	zones := map[string]hcloud.NetworkZone{}
	for _, l := range locs {
		zones[l.Name] = l.NetworkZone
	}
	if zones["fsn1"] != "eu-central" || zones["ash"] != "us-east" || zones["hil"] != "us-west" || zones["sin"] != "ap-southeast" {
		t.Errorf("zones = %v", zones)
	}
	st, _, err := c.ServerType.GetByName(ctx, "cx22")
	if err != nil || st == nil || st.Cores != 2 || st.Memory != 4 || st.Architecture != hcloud.ArchitectureX86 {
		t.Errorf("cx22 = %+v %v", st, err)
	}
	types, err := c.LoadBalancerType.All(ctx)
	if err != nil || len(types) != 3 || types[0].Name != "lb11" || types[0].MaxServices != 5 || types[0].MaxTargets != 25 ||
		types[2].MaxTargets != 150 || types[1].MaxAssignedCertificates != 25 {
		t.Errorf("lb types = %v %v", types, err)
	}
	if _, err := c.Datacenter.All(ctx); err == nil {
		t.Error("datacenters answered")
	} else {
		apiErr(t, err, hcloud.ErrorDeprecatedAPIEndpoint, http.StatusGone)
	}
	s.ServeDatacenters(true)
	dc, _, err := c.Datacenter.GetByName(ctx, "fsn1-dc14")
	if err != nil || dc == nil || dc.Location.Name != "fsn1" || DatacenterName("nbg1") != "nbg1-dc3" {
		t.Errorf("fsn1-dc14 = %+v %v", dc, err)
	}
}
