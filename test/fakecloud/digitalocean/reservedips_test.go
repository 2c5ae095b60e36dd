package digitalocean

import (
	"context"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/digitalocean/godo"
)

func TestReservedIPsThroughGodo(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()

	rip, resp, err := c.ReservedIPs.Create(ctx, &godo.ReservedIPCreateRequest{Region: "fra1"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusAccepted || !inPrefix(t, rip.IP, "198.18.0.0/15") || rip.Region == nil ||
		rip.Region.Slug != "fra1" || rip.Region.Name != "Frankfurt 1" || rip.Droplet != nil || rip.Locked || rip.ProjectID == "" {
		t.Errorf("created %+v (%d)", rip, resp.StatusCode)
	}
	var want []string
	want = append(want, rip.IP, s.AddReservedIP("nyc3"), s.AddReservedIP(""))

	var got []string
	opt := &godo.ListOptions{PerPage: 2, Page: 1}
	for {
		page, resp, err := c.ReservedIPs.List(ctx, opt)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Meta == nil || resp.Meta.Total != 3 {
			t.Fatalf("meta = %+v", resp.Meta)
		}
		for _, r := range page {
			got = append(got, r.IP)
		}
		if resp.Links == nil || resp.Links.IsLastPage() {
			break
		}
		opt.Page++
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("listed %v, want %v", got, want)
	}
	// Addresses never collide with droplets' or load balancers'.
	d := s.AddDroplet(Droplet{})
	lb := s.AddLoadBalancer(LoadBalancer{})
	seen := map[string]bool{d.PublicIPv4: true, lb.IP: true}
	for _, ip := range want {
		if seen[ip] {
			t.Errorf("address %s handed out twice", ip)
		}
		seen[ip] = true
	}

	r, _, err := c.ReservedIPs.Get(ctx, want[2])
	if err != nil || r.IP != want[2] || r.Region.Slug != "nyc3" {
		t.Errorf("get = %+v, %v", r, err)
	}
	if st, ok := s.ReservedIP(want[1]); !ok || st.Region != "nyc3" || st.DropletID != 0 || st.LoadBalancerID != "" {
		t.Errorf("ReservedIP = %+v, %v", st, ok)
	}

	resp, err = c.ReservedIPs.Delete(ctx, want[0])
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %v", err)
	}
	_, _, err = c.ReservedIPs.Get(ctx, want[0])
	apiErr(t, err, http.StatusNotFound)
	_, err = c.ReservedIPs.Delete(ctx, want[0])
	apiErr(t, err, http.StatusNotFound)
	if n := len(s.ReservedIPs()); n != 2 {
		t.Errorf("%d reserved IPs left", n)
	}
}

// Assigned at creation to a droplet: the droplet comes back whole, and the
// address cannot be deleted until the droplet is gone.
func TestReservedIPAssignedToDroplet(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	d := s.AddDroplet(Droplet{Region: "sfo3"})

	resp, body := raw(t, s, "POST", "/v2/reserved_ips", `{"droplet_id":`+strconv.Itoa(d.ID)+`}`)
	if resp.StatusCode != 202 {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	root := decode(t, body)
	w := root["reserved_ip"].(map[string]any)
	dr, ok := w["droplet"].(map[string]any)
	if !ok || dr["id"] != float64(d.ID) || w["region"].(map[string]any)["slug"] != "sfo3" {
		t.Errorf("created %s", body)
	}
	link := root["links"].(map[string]any)["droplets"].([]any)[0].(map[string]any)
	if link["rel"] != "droplet" || link["href"] != s.URL()+"v2/droplets/"+strconv.Itoa(d.ID) {
		t.Errorf("links = %v", root["links"])
	}
	ip := w["ip"].(string)

	got, _, err := c.ReservedIPs.Get(ctx, ip)
	if err != nil || got.Droplet == nil || got.Droplet.ID != d.ID || got.Droplet.Name != d.Name {
		t.Errorf("get = %+v, %v", got, err)
	}
	_, err = c.ReservedIPs.Delete(ctx, ip)
	if e := apiErr(t, err, http.StatusUnprocessableEntity); !strings.Contains(e.Message, "assigned to droplet") {
		t.Errorf("message = %q", e.Message)
	}

	if _, err := c.Droplets.Delete(ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.ReservedIP(ip); st.DropletID != 0 {
		t.Errorf("still assigned to a deleted droplet: %+v", st)
	}
	if _, err := c.ReservedIPs.Delete(ctx, ip); err != nil {
		t.Errorf("delete once free: %v", err)
	}
}

func TestReservedIPWireShapeAndErrors(t *testing.T) {
	s, _ := start(t)
	d := s.AddDroplet(Droplet{Region: "nyc3"})

	resp, body := raw(t, s, "POST", "/v2/reserved_ips", `{"region":"nyc3","project_id":"746c6152-2fa2-11ed-92d3-27aaa54e4988"}`)
	if resp.StatusCode != 202 {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	root := decode(t, body)
	if links, ok := root["links"].(map[string]any); !ok || len(links) != 0 {
		t.Errorf("links = %v, want {}", root["links"])
	}
	w := root["reserved_ip"].(map[string]any)
	for _, key := range []string{"ip", "region", "droplet", "locked", "project_id"} {
		if _, ok := w[key]; !ok {
			t.Errorf("reserved_ip lacks %s: %s", key, body)
		}
	}
	region := w["region"].(map[string]any)
	if w["droplet"] != nil || w["locked"] != false || w["project_id"] != "746c6152-2fa2-11ed-92d3-27aaa54e4988" ||
		region["slug"] != "nyc3" || region["name"] != "New York 3" || region["available"] != true {
		t.Errorf("reserved_ip = %v", w)
	}
	ip := w["ip"].(string)

	_, body = raw(t, s, "GET", "/v2/reserved_ips/"+ip, "")
	if r := decode(t, body); r["reserved_ip"].(map[string]any)["ip"] != ip || r["links"] != nil {
		t.Errorf("get: %s", body)
	}
	_, body = raw(t, s, "GET", "/v2/reserved_ips", "")
	root = decode(t, body)
	if l, ok := root["links"].(map[string]any); !ok || len(l) != 0 || root["meta"].(map[string]any)["total"] != float64(1) ||
		len(root["reserved_ips"].([]any)) != 1 {
		t.Errorf("list: %s", body)
	}

	cases := []struct {
		name, method, path, body string
		status                   int
		id, msg                  string
	}{
		{"neither region nor droplet", "POST", "/v2/reserved_ips", `{}`, 422, "unprocessable_entity", "region or droplet_id is required"},
		{"unknown region", "POST", "/v2/reserved_ips", `{"region":"mars1"}`, 422, "unprocessable_entity", `region "mars1" is invalid`},
		{"unknown droplet", "POST", "/v2/reserved_ips", `{"droplet_id":1}`, 422, "unprocessable_entity", "droplet 1 not found"},
		{"droplet elsewhere", "POST", "/v2/reserved_ips", `{"droplet_id":` + strconv.Itoa(d.ID) + `,"region":"fra1"}`, 422, "unprocessable_entity", "not in region fra1"},
		{"bad JSON", "POST", "/v2/reserved_ips", `{"region":`, 400, "bad_request", "not valid JSON"},
		{"get unknown", "GET", "/v2/reserved_ips/192.0.2.1", "", 404, "not_found", "could not be found"},
		{"get not an address", "GET", "/v2/reserved_ips/abc", "", 404, "not_found", "could not be found"},
		{"delete unknown", "DELETE", "/v2/reserved_ips/192.0.2.1", "", 404, "not_found", "could not be found"},
	}
	for _, tc := range cases {
		resp, body := raw(t, s, tc.method, tc.path, tc.body)
		m := decode(t, body)
		if resp.StatusCode != tc.status || m["id"] != tc.id || !strings.Contains(m["message"].(string), tc.msg) ||
			m["request_id"] != resp.Header.Get("X-Request-Id") {
			t.Errorf("%s: %d %s", tc.name, resp.StatusCode, body)
		}
	}
	if n := len(s.ReservedIPs()); n != 1 {
		t.Errorf("%d reserved IPs after refused requests", n)
	}

	resp, body = raw(t, s, "DELETE", "/v2/reserved_ips/"+ip, "")
	if resp.StatusCode != 204 || len(body) != 0 {
		t.Errorf("delete: %d %q", resp.StatusCode, body)
	}
	if got := s.Faults().Responses("DELETE /v2/reserved_ips/{ip}"); got[204] != 1 || got[404] != 1 {
		t.Errorf("responses = %v", got)
	}
}
