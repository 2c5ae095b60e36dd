package openstack

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"testing"
)

func keysOf(m map[string]any) string { return fmt.Sprint(slices.Sorted(maps.Keys(m))) }

func obj(v any) map[string]any { return v.(map[string]any) }

// TestOctaviaWire checks the documents on the wire, with net/http and
// JSON alone, against the shapes of Octavia's API reference (types/*.py
// of API 2.27): a client we did not write must agree with the fake.
func TestOctaviaWire(t *testing.T) {
	s, _, _ := lbCloud(t, 0, 0)
	tok := token(t, s)
	sub := subnetOf(s, "private", 4)
	const base = "/load-balancer/v2/lbaas"
	// A fully populated load balancer; listener_1's default pool only
	// names one of the pools.
	r, b := raw(t, s, tok, http.MethodPost, base+"/loadbalancers", `{"loadbalancer": {"name": "best", "vip_subnet_id": "`+sub+`",
		"listeners": [{"name": "http", "protocol": "HTTP", "protocol_port": 80, "default_pool": {"name": "web",
			"protocol": "HTTP", "lb_algorithm": "ROUND_ROBIN", "healthmonitor": {"type": "HTTP", "delay": 3, "timeout": 1,
			"max_retries": 2}, "members": [{"address": "10.0.0.20", "protocol_port": 8080}]}},
			{"name": "alt", "protocol": "TCP", "protocol_port": 8080, "default_pool": {"name": "tcp"}}],
		"pools": [{"name": "tcp", "protocol": "TCP", "lb_algorithm": "SOURCE_IP"}]}}`, nil)
	if r.StatusCode != http.StatusCreated || r.Header.Get("Content-Type") != "application/json" ||
		r.Header.Get("X-Openstack-Request-Id") == "" {
		t.Fatalf("create: %d %v %s", r.StatusCode, r.Header, b)
	}
	lb := obj(doc(t, b)["loadbalancer"])
	if got := keysOf(lb); got != "[additional_vips admin_state_up availability_zone created_at description flavor_id id listeners "+
		"name operating_status pools project_id provider provisioning_status tags tenant_id updated_at vip_address "+
		"vip_network_id vip_port_id vip_qos_policy_id vip_subnet_id]" {
		t.Errorf("load balancer keys %s", got)
	}
	id := lb["id"].(string)
	if lb["provisioning_status"] != "PENDING_CREATE" || lb["operating_status"] != "OFFLINE" || lb["updated_at"] != nil ||
		lb["flavor_id"] != nil || lb["tenant_id"] != lb["project_id"] || lb["provider"] != "amphora" ||
		len(lb["additional_vips"].([]any)) != 0 || lb["description"] != "" {
		t.Errorf("load balancer %v", lb)
	}
	// Full listeners and pools: no back references.
	l0 := obj(lb["listeners"].([]any)[0])
	if got := keysOf(l0); got != "[admin_state_up allowed_cidrs alpn_protocols client_authentication client_ca_tls_container_ref "+
		"client_crl_container_ref connection_limit created_at default_pool_id default_tls_container_ref description "+
		"hsts_include_subdomains hsts_max_age hsts_preload id insert_headers l7policies name operating_status project_id "+
		"protocol protocol_port provisioning_status sni_container_refs tags tenant_id timeout_client_data "+
		"timeout_member_connect timeout_member_data timeout_tcp_inspect tls_ciphers tls_versions updated_at]" {
		t.Errorf("full listener keys %s", got)
	}
	if l0["allowed_cidrs"] != nil || len(obj(l0["insert_headers"])) != 0 || l0["connection_limit"] != -1.0 ||
		l0["client_authentication"] != "NONE" || l0["tls_versions"] != nil || l0["hsts_max_age"] != nil {
		t.Errorf("full listener %v", l0)
	}
	var web map[string]any
	for _, p := range lb["pools"].([]any) {
		if obj(p)["name"] == "web" {
			web = obj(p)
		}
	}
	if _, ok := web["loadbalancers"]; ok || web["session_persistence"] != nil || web["tls_enabled"] != false {
		t.Errorf("full pool %v", web)
	}
	hm := obj(web["healthmonitor"])
	if hm["http_method"] != "GET" || hm["url_path"] != "/" || hm["expected_codes"] != "200" || hm["http_version"] != nil ||
		hm["max_retries_down"] != 3.0 || hm["operating_status"] != "OFFLINE" {
		t.Errorf("full monitor %v", hm)
	}
	m0 := obj(web["members"].([]any)[0])
	if got := keysOf(m0); got != "[address admin_state_up backup created_at id monitor_address monitor_port name "+
		"operating_status project_id protocol_port provisioning_status subnet_id tags tenant_id updated_at weight]" {
		t.Errorf("member keys %s", got)
	}
	if m0["subnet_id"] != nil || m0["monitor_port"] != nil || m0["operating_status"] != "OFFLINE" || m0["weight"] != 1.0 {
		t.Errorf("full member %v", m0)
	}
	l1 := obj(lb["listeners"].([]any)[1])
	tcp := obj(lb["pools"].([]any)[0])
	if tcp["name"] != "tcp" || l1["default_pool_id"] != tcp["id"] {
		t.Errorf("a pool named by a listener: %v / %v", l1, tcp)
	}

	// Once ACTIVE, the plain documents: IDs for children.
	_, b = raw(t, s, tok, http.MethodGet, base+"/loadbalancers/"+id, "", nil)
	lb = obj(doc(t, b)["loadbalancer"])
	if lb["provisioning_status"] != "ACTIVE" || lb["operating_status"] != "ONLINE" || keysOf(obj(lb["listeners"].([]any)[0])) != "[id]" {
		t.Errorf("load balancer %v", lb)
	}
	_, b = raw(t, s, tok, http.MethodGet, base+"/listeners/"+l0["id"].(string), "", nil)
	l := obj(doc(t, b)["listener"])
	if lbs := l["loadbalancers"].([]any); len(lbs) != 1 || obj(lbs[0])["id"] != id || l["operating_status"] != "ONLINE" {
		t.Errorf("listener %v", l)
	}
	_, b = raw(t, s, tok, http.MethodGet, base+"/pools/"+web["id"].(string), "", nil)
	p := obj(doc(t, b)["pool"])
	if p["healthmonitor_id"] != hm["id"] || keysOf(obj(p["members"].([]any)[0])) != "[id]" ||
		obj(p["listeners"].([]any)[0])["id"] != l0["id"] || obj(p["loadbalancers"].([]any)[0])["id"] != id {
		t.Errorf("pool %v", p)
	}
	_, b = raw(t, s, tok, http.MethodGet, base+"/healthmonitors/"+hm["id"].(string), "", nil)
	if h := obj(doc(t, b)["healthmonitor"]); obj(h["pools"].([]any)[0])["id"] != web["id"] || h["operating_status"] != "ONLINE" {
		t.Errorf("monitor %v", h)
	}
	_, b = raw(t, s, tok, http.MethodGet, base+"/pools/"+web["id"].(string)+"/members", "", nil)
	if d := doc(t, b); len(d["members"].([]any)) != 1 || len(d["members_links"].([]any)) != 0 {
		t.Errorf("members %s", b)
	}
	// The status tree: listeners, their pools under them, "health_monitor".
	_, b = raw(t, s, tok, http.MethodGet, base+"/loadbalancers/"+id+"/status", "", nil)
	st := obj(obj(doc(t, b)["statuses"])["loadbalancer"])
	if keysOf(st) != "[id listeners name operating_status provisioning_status]" {
		t.Errorf("status keys %v", st)
	}
	sp := obj(obj(st["listeners"].([]any)[0])["pools"].([]any)[0])
	if keysOf(obj(sp["health_monitor"])) != "[id name operating_status provisioning_status type]" ||
		keysOf(obj(sp["members"].([]any)[0])) != "[address id name operating_status protocol_port provisioning_status]" ||
		obj(sp["members"].([]any)[0])["operating_status"] != "ONLINE" {
		t.Errorf("status pool %v", sp)
	}
	// /v2.0 is served too, as gophercloud asks for it.
	if r, _ := raw(t, s, tok, http.MethodGet, "/load-balancer/v2.0/lbaas/loadbalancers/"+id, "", nil); r.StatusCode != http.StatusOK {
		t.Errorf("/v2.0: %d", r.StatusCode)
	}

	// 404s, Octavia's document for each kind.
	const nope = "5b1c2b47-9e48-4b44-9c53-8b1d5c3fbd4c"
	for _, tc := range []struct{ path, resource string }{{"/loadbalancers/" + nope, "Load Balancer"},
		{"/loadbalancers/" + nope + "/status", "Load Balancer"}, {"/listeners/" + nope, "Listener"},
		{"/pools/" + nope, "Pool"}, {"/healthmonitors/" + nope, "Health Monitor"},
		{"/pools/" + web["id"].(string) + "/members/" + nope, "Member"}, {"/pools/" + nope + "/members", "Pool"}} {
		r, b := raw(t, s, tok, http.MethodGet, base+tc.path, "", nil)
		if r.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d", tc.path, r.StatusCode)
		}
		jsonEq(t, b, `{"faultcode": "Client", "faultstring": "`+tc.resource+` `+nope+` not found.", "debuginfo": null}`)
	}
	// A batch answers 202 and a delete 204, without bodies.
	r, b = raw(t, s, tok, http.MethodPut, base+"/pools/"+web["id"].(string)+"/members",
		`{"members": [{"address": "10.0.0.21", "protocol_port": 8080}]}`, nil)
	if r.StatusCode != http.StatusAccepted || len(b) != 0 {
		t.Errorf("batch: %d %q", r.StatusCode, b)
	}
	r, b = raw(t, s, tok, http.MethodDelete, base+"/loadbalancers/"+id+"?cascade=true", "", nil)
	if r.StatusCode != http.StatusNoContent || len(b) != 0 {
		t.Errorf("delete: %d %q", r.StatusCode, b)
	}
	// Without a token, keystonemiddleware's 401.
	if r, _ := raw(t, s, "", http.MethodGet, base+"/loadbalancers", "", nil); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token: %d", r.StatusCode)
	}
}
