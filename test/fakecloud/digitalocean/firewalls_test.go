package digitalocean

import (
	"context"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/digitalocean/godo"
)

var uuidShape = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// The documented create body, sent and read back as raw JSON: the wire
// shape, independent of godo's struct tags.
func TestFirewallCreateWireShape(t *testing.T) {
	s, _ := start(t)
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	s.SetClock(func() time.Time { return now })
	s.SetFirewallSettleDelay(10 * time.Second)
	d := s.AddDroplet(Droplet{Tags: []string{"k8s-nodes"}})
	s.AddDroplet(Droplet{}) // untagged: not affected
	lb := s.AddLoadBalancer(LoadBalancer{})

	resp, body := raw(t, s, "POST", "/v2/firewalls", `{
		"name": "k8s-public-access",
		"inbound_rules": [
			{"protocol": "tcp", "ports": "80", "sources": {"load_balancer_uids": ["`+lb.ID+`"]}},
			{"protocol": "tcp", "ports": "22", "action": "allow", "sources": {"tags": ["gateway"], "addresses": ["18.0.0.0/8"]}}
		],
		"outbound_rules": [
			{"protocol": "tcp", "ports": "all", "destinations": {"addresses": ["0.0.0.0/0", "::/0"]}},
			{"protocol": "icmp", "destinations": {"addresses": ["0.0.0.0/0", "::/0"]}}
		],
		"tags": ["k8s-nodes"]
	}`)
	if resp.StatusCode != http.StatusAccepted || resp.Header.Get("X-Request-Id") == "" {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	fw := decode(t, body)["firewall"].(map[string]any)
	id, _ := fw["id"].(string)
	if !uuidShape.MatchString(id) || fw["name"] != "k8s-public-access" || fw["status"] != "waiting" || fw["created_at"] != "2025-03-01T12:00:00Z" {
		t.Errorf("firewall = %v", fw)
	}
	if want := []any{map[string]any{"droplet_id": float64(d.ID), "removing": false, "status": "waiting"}}; !reflect.DeepEqual(fw["pending_changes"], want) {
		t.Errorf("pending_changes = %v, want %v", fw["pending_changes"], want)
	}
	wantIn := []any{
		map[string]any{"protocol": "tcp", "ports": "80", "action": "allow", "sources": map[string]any{"load_balancer_uids": []any{lb.ID}}},
		map[string]any{"protocol": "tcp", "ports": "22", "action": "allow", "sources": map[string]any{"tags": []any{"gateway"}, "addresses": []any{"18.0.0.0/8"}}},
	}
	if !reflect.DeepEqual(fw["inbound_rules"], wantIn) {
		t.Errorf("inbound_rules = %v\nwant %v", fw["inbound_rules"], wantIn)
	}
	// "all" comes back as "0", and ICMP rules always report "0".
	world := map[string]any{"addresses": []any{"0.0.0.0/0", "::/0"}}
	wantOut := []any{
		map[string]any{"protocol": "tcp", "ports": "0", "action": "allow", "destinations": world},
		map[string]any{"protocol": "icmp", "ports": "0", "action": "allow", "destinations": world},
	}
	if !reflect.DeepEqual(fw["outbound_rules"], wantOut) {
		t.Errorf("outbound_rules = %v\nwant %v", fw["outbound_rules"], wantOut)
	}
	if !reflect.DeepEqual(fw["droplet_ids"], []any{}) || !reflect.DeepEqual(fw["tags"], []any{"k8s-nodes"}) {
		t.Errorf("droplet_ids %v tags %v", fw["droplet_ids"], fw["tags"])
	}

	// Still waiting before the delay; applied after it.
	now = now.Add(9 * time.Second)
	_, body = raw(t, s, "GET", "/v2/firewalls/"+id, "")
	if got := decode(t, body)["firewall"].(map[string]any); got["status"] != "waiting" {
		t.Errorf("before the delay: %v", got["status"])
	}
	now = now.Add(time.Second)
	resp, body = raw(t, s, "GET", "/v2/firewalls/"+id, "")
	got := decode(t, body)["firewall"].(map[string]any)
	if resp.StatusCode != 200 || got["status"] != "succeeded" || !reflect.DeepEqual(got["pending_changes"], []any{}) {
		t.Errorf("after the delay: %d %v %v", resp.StatusCode, got["status"], got["pending_changes"])
	}

	// A change makes it wait again.
	resp, body = raw(t, s, "PUT", "/v2/firewalls/"+id, `{"name":"k8s-public-access","inbound_rules":[{"protocol":"udp","ports":"8000-9000","sources":{"addresses":["10.0.0.1"]}}],"tags":["k8s-nodes"]}`)
	got = decode(t, body)["firewall"].(map[string]any)
	if resp.StatusCode != 200 || got["status"] != "waiting" || got["id"] != id || got["created_at"] != "2025-03-01T12:00:00Z" {
		t.Errorf("update: %d %s", resp.StatusCode, body)
	}
	// A whole replacement: the outbound rules left out are gone.
	if !reflect.DeepEqual(got["outbound_rules"], []any{}) || len(got["inbound_rules"].([]any)) != 1 {
		t.Errorf("after PUT: in %v out %v", got["inbound_rules"], got["outbound_rules"])
	}
}

func TestFirewallListPagesAndDelete(t *testing.T) {
	s, _ := start(t)
	var ids []string
	for range 3 {
		ids = append(ids, s.AddFirewall(CloudFirewall{}).ID)
	}
	resp, body := raw(t, s, "GET", "/v2/firewalls?per_page=2", "")
	m := decode(t, body)
	fws := m["firewalls"].([]any)
	pages := m["links"].(map[string]any)["pages"].(map[string]any)
	if resp.StatusCode != 200 || len(fws) != 2 || m["meta"].(map[string]any)["total"] != float64(3) ||
		!strings.HasSuffix(pages["next"].(string), "/v2/firewalls?page=2&per_page=2") || pages["first"] != nil {
		t.Fatalf("page 1: %d %s", resp.StatusCode, body)
	}
	if fws[0].(map[string]any)["id"] != ids[0] || fws[1].(map[string]any)["id"] != ids[1] {
		t.Errorf("not oldest first: %v", fws)
	}
	_, body = raw(t, s, "GET", "/v2/firewalls?page=2&per_page=2", "")
	m = decode(t, body)
	if fws := m["firewalls"].([]any); len(fws) != 1 || fws[0].(map[string]any)["id"] != ids[2] || m["links"].(map[string]any)["pages"].(map[string]any)["prev"] == nil {
		t.Errorf("page 2: %s", body)
	}
	_, body = raw(t, s, "GET", "/v2/firewalls", "")
	if m := decode(t, body); !reflect.DeepEqual(m["links"], map[string]any{}) {
		t.Errorf("one page has links %v", m["links"])
	}

	resp, body = raw(t, s, "DELETE", "/v2/firewalls/"+ids[1], "")
	if resp.StatusCode != http.StatusNoContent || len(body) != 0 {
		t.Errorf("delete: %d %q", resp.StatusCode, body)
	}
	for _, method := range []string{"GET", "DELETE"} {
		resp, body = raw(t, s, method, "/v2/firewalls/"+ids[1], "")
		m := decode(t, body)
		if resp.StatusCode != 404 || m["id"] != "not_found" || m["message"] != "The resource you were accessing could not be found." || m["request_id"] != resp.Header.Get("X-Request-Id") {
			t.Errorf("%s after delete: %d %s", method, resp.StatusCode, body)
		}
	}
	resp, body = raw(t, s, "PUT", "/v2/firewalls/"+ids[1], `{"name":"x1","outbound_rules":[{"protocol":"icmp","destinations":{"addresses":["0.0.0.0/0"]}}]}`)
	if resp.StatusCode != 404 {
		t.Errorf("PUT of a deleted firewall: %d %s", resp.StatusCode, body)
	}
	if got := s.Faults().CallCount("GET /v2/firewalls/{id}"); got != 1 {
		t.Errorf("GET /v2/firewalls/{id} counted %d times, want 1", got)
	}
}

func TestFirewallValidation(t *testing.T) {
	s, _ := start(t)
	d := s.AddDroplet(Droplet{})
	fw := s.AddFirewall(CloudFirewall{Name: "existing"})
	okOut := `"outbound_rules":[{"protocol":"icmp","destinations":{"addresses":["0.0.0.0/0"]}}]`
	in := func(rule string) string { return `{"name":"fw",` + okOut + `,"inbound_rules":[` + rule + `]}` }
	many := make([]string, 50)
	for i := range many {
		many[i] = `{"protocol":"tcp","ports":"` + strconv.Itoa(1000+i) + `","sources":{"addresses":["0.0.0.0/0"]}}`
	}
	cases := []struct {
		name, body string
		status     int
		msg        string
	}{
		{"not JSON", `{"name":`, 400, "not valid JSON"},
		{"no name", `{` + okOut + `}`, 422, "name is required"},
		{"bad name", `{"name":"-fw",` + okOut + `}`, 422, "name must be"},
		{"no rules", `{"name":"fw"}`, 422, "at least one inbound or outbound rule"},
		{"protocol", in(`{"protocol":"sctp","ports":"1","sources":{"addresses":["0.0.0.0/0"]}}`), 422, `protocol "sctp" is invalid`},
		{"no ports", in(`{"protocol":"tcp","sources":{"addresses":["0.0.0.0/0"]}}`), 422, `ports "" is invalid`},
		{"port out of range", in(`{"protocol":"udp","ports":"70000","sources":{"addresses":["0.0.0.0/0"]}}`), 422, `ports "70000" is invalid`},
		{"range backwards", in(`{"protocol":"tcp","ports":"9000-8000","sources":{"addresses":["0.0.0.0/0"]}}`), 422, `ports "9000-8000" is invalid`},
		{"action", in(`{"protocol":"tcp","ports":"22","action":"drop","sources":{"addresses":["0.0.0.0/0"]}}`), 422, `action "drop" is invalid`},
		{"no sources", in(`{"protocol":"tcp","ports":"22"}`), 422, "inbound rule 1: sources are required"},
		{"empty sources", in(`{"protocol":"tcp","ports":"22","sources":{}}`), 422, "sources must include at least one"},
		{"empty destinations", `{"name":"fw","outbound_rules":[{"protocol":"tcp","ports":"all","destinations":{"addresses":[]}}]}`, 422, "outbound rule 1: destinations must include"},
		{"address", in(`{"protocol":"tcp","ports":"22","sources":{"addresses":["nope"]}}`), 422, `address "nope" is not an IP address or CIDR`},
		{"load balancer", in(`{"protocol":"tcp","ports":"10256","sources":{"load_balancer_uids":["4de7ac8b-495b-4884-9a69-1050c6793cd6"]}}`), 422, "load balancer 4de7ac8b-495b-4884-9a69-1050c6793cd6 not found"},
		{"source droplet", in(`{"protocol":"tcp","ports":"22","sources":{"droplet_ids":[1]}}`), 422, "droplet 1 not found"},
		{"droplet", `{"name":"fw",` + okOut + `,"droplet_ids":[1]}`, 422, "droplet 1 not found"},
		{"tag", `{"name":"fw",` + okOut + `,"tags":["a b"]}`, 422, `tag "a b" is invalid`},
		{"six tags", `{"name":"fw",` + okOut + `,"tags":["a","b","c","d","e","f"]}`, 422, "at most 5 tags"},
		{"51 rules", in(strings.Join(many, ",")), 422, "at most 50 rules"},
	}
	for _, c := range cases {
		for _, call := range []struct{ method, path string }{{"POST", "/v2/firewalls"}, {"PUT", "/v2/firewalls/" + fw.ID}} {
			resp, body := raw(t, s, call.method, call.path, c.body)
			m := decode(t, body)
			wantID := "unprocessable_entity"
			if c.status == 400 {
				wantID = "bad_request"
			}
			msg, _ := m["message"].(string)
			if resp.StatusCode != c.status || m["id"] != wantID || !strings.Contains(msg, c.msg) || m["request_id"] == "" {
				t.Errorf("%s, %s: %d %s; want %d with %q", c.name, call.method, resp.StatusCode, body, c.status, c.msg)
			}
		}
	}
	if n := len(s.Firewalls()); n != 1 {
		t.Errorf("%d firewalls after refused creates, want 1", n)
	}
	if got, _ := s.Firewall(fw.ID); got.Name != "existing" {
		t.Errorf("a refused update changed the firewall: %+v", got)
	}
	// The valid forms: a droplet that exists, ranges, all, any address form.
	resp, body := raw(t, s, "POST", "/v2/firewalls", `{"name":"ok.fw-1","droplet_ids":[`+strconv.Itoa(d.ID)+`],`+okOut+`,"inbound_rules":[
		{"protocol":"tcp","ports":"8000-9000","sources":{"addresses":["10.0.0.1","2001:db8::/32"],"droplet_ids":[`+strconv.Itoa(d.ID)+`],"kubernetes_ids":["41b74c5d-9bd0-5555-5555-a57c495b81a3"]}},
		{"protocol":"udp","ports":"all","action":"deny","sources":{"addresses":["0.0.0.0/0"]}}]}`)
	if resp.StatusCode != 202 {
		t.Errorf("valid create: %d %s", resp.StatusCode, body)
	}
}

// The same API through godo, the client polyccm uses.
func TestFirewallThroughGodo(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	lb := s.AddLoadBalancer(LoadBalancer{})
	d1 := s.AddDroplet(Droplet{Tags: []string{"nodes"}})
	d2 := s.AddDroplet(Droplet{})
	world := []string{"0.0.0.0/0", "::/0"}
	req := &godo.FirewallRequest{
		Name: "k8s-public-access",
		InboundRules: []godo.InboundRule{
			{Protocol: "tcp", PortRange: "30080", Sources: &godo.Sources{Addresses: world}},
			{Protocol: "tcp", PortRange: "10256", Sources: &godo.Sources{LoadBalancerUIDs: []string{lb.ID}}},
		},
		OutboundRules: []godo.OutboundRule{
			{Protocol: "tcp", PortRange: "all", Destinations: &godo.Destinations{Addresses: world}},
			{Protocol: "icmp", Destinations: &godo.Destinations{Addresses: world}},
		},
		Tags: []string{"nodes"},
	}
	fw, resp, err := c.Firewalls.Create(ctx, req)
	if err != nil || resp.StatusCode != 202 {
		t.Fatalf("create: %v %v", resp, err)
	}
	wantIn := []godo.InboundRule{
		{Protocol: "tcp", PortRange: "30080", Action: "allow", Sources: &godo.Sources{Addresses: world}},
		{Protocol: "tcp", PortRange: "10256", Action: "allow", Sources: &godo.Sources{LoadBalancerUIDs: []string{lb.ID}}},
	}
	wantOut := []godo.OutboundRule{
		{Protocol: "tcp", PortRange: "0", Action: "allow", Destinations: &godo.Destinations{Addresses: world}},
		{Protocol: "icmp", PortRange: "0", Action: "allow", Destinations: &godo.Destinations{Addresses: world}},
	}
	if fw.Status != "waiting" || !reflect.DeepEqual(fw.InboundRules, wantIn) || !reflect.DeepEqual(fw.OutboundRules, wantOut) ||
		!reflect.DeepEqual(fw.PendingChanges, []godo.PendingChange{{DropletID: d1.ID, Status: "waiting"}}) {
		t.Errorf("created = %+v", fw)
	}
	got, _, err := c.Firewalls.Get(ctx, fw.ID)
	if err != nil || got.Status != "succeeded" || len(got.PendingChanges) != 0 || !reflect.DeepEqual(got.InboundRules, wantIn) {
		t.Errorf("get = %+v, %v", got, err)
	}
	list, resp, err := c.Firewalls.List(ctx, &godo.ListOptions{PerPage: 200})
	if err != nil || len(list) != 1 || list[0].ID != fw.ID || resp.Meta.Total != 1 {
		t.Errorf("list = %+v, %v", list, err)
	}
	// The firewalls of a droplet: by tag, then by ID.
	byDroplet := func(id int) int {
		fws, _, err := c.Firewalls.ListByDroplet(ctx, id, nil)
		if err != nil {
			t.Fatal(err)
		}
		return len(fws)
	}
	if byDroplet(d1.ID) != 1 || byDroplet(d2.ID) != 0 {
		t.Errorf("by droplet: %d %d", byDroplet(d1.ID), byDroplet(d2.ID))
	}
	if _, err := c.Firewalls.AddDroplets(ctx, fw.ID, d2.ID); err != nil {
		t.Fatal(err)
	}
	if byDroplet(d2.ID) != 1 {
		t.Error("a droplet added by ID is not listed")
	}
	// A droplet that is destroyed leaves the firewall.
	s.RemoveDroplet(d2.ID)
	if got, _ := s.Firewall(fw.ID); len(got.DropletIDs) != 0 {
		t.Errorf("droplet_ids after the droplet went: %v", got.DropletIDs)
	}

	ssh := godo.InboundRule{Protocol: "tcp", PortRange: "22", Sources: &godo.Sources{Addresses: []string{"10.0.0.0/8"}}}
	if _, err := c.Firewalls.AddRules(ctx, fw.ID, &godo.FirewallRulesRequest{InboundRules: []godo.InboundRule{ssh}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Firewalls.RemoveRules(ctx, fw.ID, &godo.FirewallRulesRequest{InboundRules: []godo.InboundRule{wantIn[0]}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Firewalls.AddTags(ctx, fw.ID, "more"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Firewalls.RemoveTags(ctx, fw.ID, "nodes"); err != nil {
		t.Fatal(err)
	}
	got, _, _ = c.Firewalls.Get(ctx, fw.ID)
	ssh.Action = "allow"
	if !reflect.DeepEqual(got.InboundRules, []godo.InboundRule{wantIn[1], ssh}) || !reflect.DeepEqual(got.Tags, []string{"more"}) {
		t.Errorf("after rule and tag changes: %+v tags %v", got.InboundRules, got.Tags)
	}

	// Update replaces the whole firewall; a missing one is a 404.
	req.Tags = nil
	up, _, err := c.Firewalls.Update(ctx, fw.ID, req)
	if err != nil || len(up.Tags) != 0 || len(up.InboundRules) != 2 || up.Created != fw.Created {
		t.Errorf("update = %+v, %v", up, err)
	}
	if _, _, err := c.Firewalls.Update(ctx, "4de7ac8b-495b-4884-9a69-1050c6793cd6", req); err == nil {
		t.Error("update of a missing firewall succeeded")
	} else {
		apiErr(t, err, 404)
	}
	// A rule from a load balancer that is gone is refused.
	s.RemoveLoadBalancer(lb.ID)
	_, _, err = c.Firewalls.Update(ctx, fw.ID, req)
	if e := apiErr(t, err, 422); !strings.Contains(e.Message, "load balancer "+lb.ID+" not found") {
		t.Errorf("message %q", e.Message)
	}
	if _, err := c.Firewalls.Delete(ctx, fw.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Firewalls.Get(ctx, fw.ID); err == nil {
		t.Error("deleted firewall still there")
	} else {
		apiErr(t, err, 404)
	}
}

// The helpers tests use to seed and change firewalls outside the API.
func TestFirewallHelpers(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	fw := s.AddFirewall(CloudFirewall{
		Name:         "seeded",
		InboundRules: []FirewallRule{{Protocol: "tcp", Ports: "all", Targets: FirewallTargets{Addresses: []string{"10.0.0.0/8"}}}},
	})
	if fw.Status != FirewallSucceeded || fw.InboundRules[0].Ports != "0" || fw.InboundRules[0].Action != "allow" || fw.CreatedAt.IsZero() {
		t.Errorf("added = %+v", fw)
	}
	err := s.EditFirewall(fw.ID, func(f *CloudFirewall) {
		f.InboundRules = append(f.InboundRules, FirewallRule{Protocol: "udp", Ports: "53", Targets: FirewallTargets{Addresses: []string{"0.0.0.0/0"}}})
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := c.Firewalls.Get(ctx, fw.ID)
	if err != nil || len(got.InboundRules) != 2 || got.InboundRules[1].PortRange != "53" {
		t.Errorf("after EditFirewall: %+v, %v", got, err)
	}
	if err := s.EditFirewall(fw.ID, func(f *CloudFirewall) { f.ID = "other" }); err == nil {
		t.Error("EditFirewall changed the ID")
	}
	if err := s.EditFirewall("missing", func(*CloudFirewall) {}); err == nil {
		t.Error("EditFirewall of a missing firewall")
	}
	if !s.RemoveFirewall(fw.ID) || s.RemoveFirewall(fw.ID) || len(s.Firewalls()) != 0 {
		t.Error("RemoveFirewall")
	}
	defer func() {
		if recover() == nil {
			t.Error("AddFirewall with a taken ID did not panic")
		}
	}()
	s.AddFirewall(CloudFirewall{ID: "x"})
	s.AddFirewall(CloudFirewall{ID: "x"})
}
