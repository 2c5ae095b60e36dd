package digitalocean

import (
	"context"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/digitalocean/godo"
)

func TestTagsThroughGodo(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	d := s.AddDroplet(Droplet{})
	lb := s.AddLoadBalancer(LoadBalancer{Name: "web"})
	vol := s.AddVolume(Volume{})

	tag, resp, err := c.Tags.Create(ctx, &godo.TagCreateRequest{Name: "k8s:cluster-1"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusCreated || tag.Name != "k8s:cluster-1" || tag.Resources == nil || tag.Resources.Count != 0 {
		t.Errorf("created %+v (%d)", tag, resp.StatusCode)
	}

	_, err = c.Tags.TagResources(ctx, "k8s:cluster-1", &godo.TagResourcesRequest{Resources: []godo.Resource{
		{ID: strconv.Itoa(d.ID), Type: godo.DropletResourceType},
		{ID: vol.ID, Type: godo.VolumeResourceType},
		{ID: lb.ID, Type: godo.LoadBalancerResourceType},
	}})
	if err != nil {
		t.Fatal(err)
	}
	// Tagging again changes nothing.
	if _, err := c.Tags.TagResources(ctx, "k8s:cluster-1", &godo.TagResourcesRequest{Resources: []godo.Resource{
		{ID: lb.ID, Type: godo.LoadBalancerResourceType},
	}}); err != nil {
		t.Fatal(err)
	}

	got, _, err := c.Tags.Get(ctx, "k8s:cluster-1")
	if err != nil {
		t.Fatal(err)
	}
	r := got.Resources
	if r.Count != 3 || r.Droplets == nil || r.Droplets.Count != 1 || r.Volumes == nil || r.Volumes.Count != 1 ||
		r.Images == nil || r.Images.Count != 0 || r.Droplets.LastTaggedURI != s.URL()+"v2/droplets/"+strconv.Itoa(d.ID) ||
		r.LastTaggedURI != s.URL()+"v2/load_balancers/"+lb.ID {
		t.Errorf("tag resources = %+v, droplets %+v, volumes %+v", r, r.Droplets, r.Volumes)
	}

	// The resources bear the tag: the droplet on the wire, the load balancer
	// in the fake's state only (the API does not send its tags back).
	dr, _, err := c.Droplets.Get(ctx, d.ID)
	if err != nil || !slices.Contains(dr.Tags, "k8s:cluster-1") {
		t.Errorf("droplet tags %v, %v", dr.Tags, err)
	}
	if got := s.LoadBalancerTags(lb.ID); !reflect.DeepEqual(got, []string{"k8s:cluster-1"}) {
		t.Errorf("LoadBalancerTags = %v", got)
	}
	if s.LoadBalancerTags("nope") != nil {
		t.Error("LoadBalancerTags of an unknown load balancer")
	}
	if lbs, _, _ := c.LoadBalancers.Get(ctx, lb.ID); lbs == nil || lbs.Tags != nil {
		t.Errorf("tags sent back with the load balancer: %+v", lbs)
	}
	byTag, _, err := c.Droplets.ListByTag(ctx, "k8s:cluster-1", nil)
	if err != nil || len(byTag) != 1 || byTag[0].ID != d.ID {
		t.Errorf("ListByTag = %v, %v", byTag, err)
	}
	want := map[string][]string{"k8s:cluster-1": {strconv.Itoa(d.ID), lb.ID, vol.ID}}
	if got := s.Tags(); !reflect.DeepEqual(got, want) {
		t.Errorf("Tags() = %v, want %v", got, want)
	}

	// Untagging the droplet leaves the others tagged.
	if _, err := c.Tags.UntagResources(ctx, "k8s:cluster-1", &godo.UntagResourcesRequest{Resources: []godo.Resource{
		{ID: strconv.Itoa(d.ID), Type: godo.DropletResourceType},
	}}); err != nil {
		t.Fatal(err)
	}
	if got := s.Tags()["k8s:cluster-1"]; !reflect.DeepEqual(got, []string{lb.ID, vol.ID}) {
		t.Errorf("after untagging the droplet: %v", got)
	}

	// Deleting the tag untags everything, as the reference says.
	resp, err = c.Tags.Delete(ctx, "k8s:cluster-1")
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %v", err)
	}
	_, _, err = c.Tags.Get(ctx, "k8s:cluster-1")
	apiErr(t, err, http.StatusNotFound)
	if len(s.LoadBalancerTags(lb.ID)) != 0 || len(s.Volumes()[0].Tags) != 0 || len(s.Tags()) != 0 {
		t.Errorf("tags left after deletion: %v %v %v", s.LoadBalancerTags(lb.ID), s.Volumes()[0].Tags, s.Tags())
	}
	_, err = c.Tags.Delete(ctx, "k8s:cluster-1")
	apiErr(t, err, http.StatusNotFound)
}

// DigitalOcean's CCM tags load balancers with the cluster's tag, and on a
// 404 creates the tag and tries again; the fake must answer so.
func TestTagResourcesOnMissingTagIs404(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	lb := s.AddLoadBalancer(LoadBalancer{Name: "web"})
	req := &godo.TagResourcesRequest{Resources: []godo.Resource{{ID: lb.ID, Type: godo.LoadBalancerResourceType}}}

	resp, err := c.Tags.TagResources(ctx, "k8s:abc", req)
	if e := apiErr(t, err, http.StatusNotFound); resp == nil || resp.StatusCode != http.StatusNotFound || e.RequestID == "" {
		t.Fatalf("tagging with a missing tag: %v", err)
	}
	if len(s.LoadBalancerTags(lb.ID)) != 0 {
		t.Fatal("a missing tag was applied")
	}
	_, err = c.Tags.UntagResources(ctx, "k8s:abc", &godo.UntagResourcesRequest{Resources: req.Resources})
	apiErr(t, err, http.StatusNotFound)

	if _, _, err := c.Tags.Create(ctx, &godo.TagCreateRequest{Name: "k8s:abc"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Tags.TagResources(ctx, "k8s:abc", req); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if got := s.LoadBalancerTags(lb.ID); !reflect.DeepEqual(got, []string{"k8s:abc"}) {
		t.Errorf("LoadBalancerTags = %v", got)
	}
	if got := s.Faults().Responses("POST /v2/tags/{name}/resources"); got[404] != 1 || got[204] != 1 {
		t.Errorf("responses = %v", got)
	}
}

func TestTagErrors(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	d := s.AddDroplet(Droplet{})
	s.AddTag("web")

	// A bad name is the reference's 400, with its error/root_causes body.
	for _, name := range []string{"здорово", "has space", "dot.ted", "", strings.Repeat("a", 256)} {
		resp, body := raw(t, s, "POST", "/v2/tags", `{"name":"`+name+`"}`)
		m := decode(t, body)
		causes, _ := m["root_causes"].([]any)
		msg, _ := m["error"].(string)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(msg, "Error validating resource tag") ||
			len(causes) != 1 || resp.Header.Get("X-Request-Id") == "" {
			t.Errorf("name %q: %d %s", name, resp.StatusCode, body)
		}
		if _, ok := m["messages"]; !ok {
			t.Errorf("name %q: no messages key: %s", name, body)
		}
	}
	// godo surfaces that body as the message, whatever its shape.
	_, _, err := c.Tags.Create(ctx, &godo.TagCreateRequest{Name: "bad name"})
	if e := apiErr(t, err, http.StatusBadRequest); !strings.Contains(e.Error(), "invalid characters") {
		t.Errorf("godo error = %v", e)
	}
	// The longest valid name, and every allowed character, pass.
	for _, name := range []string{strings.Repeat("a", 255), "Az09_-:x"} {
		if _, _, err := c.Tags.Create(ctx, &godo.TagCreateRequest{Name: name}); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}

	// An existing tag is answered again, under its first spelling.
	for _, name := range []string{"web", "WEB"} {
		tag, resp, err := c.Tags.Create(ctx, &godo.TagCreateRequest{Name: name})
		if err != nil || resp.StatusCode != http.StatusCreated || tag.Name != "web" {
			t.Errorf("create %q again: %+v %v", name, tag, err)
		}
	}
	_, _, err = c.Tags.Get(ctx, "WEB")
	apiErr(t, err, http.StatusNotFound)

	cases := []struct {
		name, body string
		status     int
		id, msg    string
	}{
		{"no resources", `{"resources":[]}`, 400, "parameter_missing", "param is missing or the value is empty: resources"},
		{"no body fields", `{}`, 400, "parameter_missing", "resources"},
		{"bad JSON", `{"resources":`, 400, "bad_request", "not valid JSON"},
		{"unknown droplet", `{"resources":[{"resource_id":"` + strconv.Itoa(d.ID) + `","resource_type":"droplet"},{"resource_id":"1","resource_type":"droplet"}]}`, 422, "unprocessable_entity", "droplet 1 not found"},
		{"droplet id not a number", `{"resources":[{"resource_id":"abc","resource_type":"droplet"}]}`, 422, "unprocessable_entity", "droplet abc not found"},
		{"unknown load balancer", `{"resources":[{"resource_id":"00000000-0000-4000-8000-000000000000","resource_type":"load_balancer"}]}`, 422, "unprocessable_entity", "not found"},
		{"image the fake lacks", `{"resources":[{"resource_id":"7555620","resource_type":"image"}]}`, 422, "unprocessable_entity", "image 7555620 not found"},
		{"unknown type", `{"resources":[{"resource_id":"1","resource_type":"kettle"}]}`, 422, "unprocessable_entity", `resource_type "kettle" is invalid`},
	}
	for _, tc := range cases {
		resp, body := raw(t, s, "POST", "/v2/tags/web/resources", tc.body)
		m := decode(t, body)
		if resp.StatusCode != tc.status || m["id"] != tc.id || !strings.Contains(m["message"].(string), tc.msg) ||
			m["request_id"] != resp.Header.Get("X-Request-Id") {
			t.Errorf("%s: %d %s", tc.name, resp.StatusCode, body)
		}
	}
	// The refused request tagged nothing, not even the droplet that exists.
	if got := s.Tags()["web"]; len(got) != 0 {
		t.Errorf("a refused request tagged %v", got)
	}

	resp, body := raw(t, s, "GET", "/v2/tags/nope", "")
	if m := decode(t, body); resp.StatusCode != 404 || m["id"] != "not_found" || m["request_id"] == "" {
		t.Errorf("get missing: %d %s", resp.StatusCode, body)
	}
	resp, body = raw(t, s, "DELETE", "/v2/tags/nope/resources", `{"resources":[{"resource_id":"1","resource_type":"droplet"}]}`)
	if resp.StatusCode != 404 {
		t.Errorf("untag with a missing tag: %d %s", resp.StatusCode, body)
	}
	if resp, _ := raw(t, s, "PUT", "/v2/tags/web", `{}`); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("PUT a tag: %d", resp.StatusCode)
	}
}

// The documented shapes, read without godo.
func TestTagWireShape(t *testing.T) {
	s, _ := start(t)
	d := s.AddDroplet(Droplet{})

	resp, body := raw(t, s, "POST", "/v2/tags", `{"name":"extra-awesome"}`)
	if resp.StatusCode != 201 {
		t.Fatalf("create: %d %s", resp.StatusCode, body)
	}
	tag := decode(t, body)["tag"].(map[string]any)
	res := tag["resources"].(map[string]any)
	if tag["name"] != "extra-awesome" || res["count"] != float64(0) {
		t.Errorf("created %s", body)
	}
	if _, ok := res["last_tagged_uri"]; ok {
		t.Errorf("last_tagged_uri on an unused tag: %s", body)
	}
	for _, typ := range []string{"droplets", "images", "volumes", "volume_snapshots", "databases"} {
		sub, ok := res[typ].(map[string]any)
		if !ok || sub["count"] != float64(0) {
			t.Errorf("%s = %v", typ, res[typ])
		}
	}

	resp, body = raw(t, s, "POST", "/v2/tags/extra-awesome/resources",
		`{"resources":[{"resource_id":"`+strconv.Itoa(d.ID)+`","resource_type":"droplet"}]}`)
	if resp.StatusCode != 204 || len(body) != 0 {
		t.Fatalf("tag: %d %q", resp.StatusCode, body)
	}
	_, body = raw(t, s, "GET", "/v2/tags/extra-awesome", "")
	res = decode(t, body)["tag"].(map[string]any)["resources"].(map[string]any)
	uri := s.URL() + "v2/droplets/" + strconv.Itoa(d.ID)
	if res["count"] != float64(1) || res["last_tagged_uri"] != uri ||
		res["droplets"].(map[string]any)["count"] != float64(1) || res["droplets"].(map[string]any)["last_tagged_uri"] != uri {
		t.Errorf("get: %s", body)
	}
	_, body = raw(t, s, "GET", "/v2/droplets/"+strconv.Itoa(d.ID), "")
	if tags := decode(t, body)["droplet"].(map[string]any)["tags"].([]any); len(tags) != 1 || tags[0] != "extra-awesome" {
		t.Errorf("droplet tags = %v", tags)
	}

	// Listing: by name, one page with links {}, then paged.
	for _, n := range []string{"b", "a"} {
		raw(t, s, "POST", "/v2/tags", `{"name":"`+n+`"}`)
	}
	_, body = raw(t, s, "GET", "/v2/tags", "")
	root := decode(t, body)
	var names []string
	for _, tg := range root["tags"].([]any) {
		names = append(names, tg.(map[string]any)["name"].(string))
	}
	if links := root["links"].(map[string]any); len(links) != 0 || root["meta"].(map[string]any)["total"] != float64(3) ||
		!reflect.DeepEqual(names, []string{"a", "b", "extra-awesome"}) {
		t.Errorf("list: %s", body)
	}
	_, body = raw(t, s, "GET", "/v2/tags?per_page=2", "")
	root = decode(t, body)
	pages := root["links"].(map[string]any)["pages"].(map[string]any)
	if len(root["tags"].([]any)) != 2 || pages["next"] != s.URL()+"v2/tags?page=2&per_page=2" {
		t.Errorf("page 1: %s", body)
	}
	_, body = raw(t, s, "GET", "/v2/tags?page=2&per_page=2", "")
	if tags := decode(t, body)["tags"].([]any); len(tags) != 1 || tags[0].(map[string]any)["name"] != "extra-awesome" {
		t.Errorf("page 2: %s", body)
	}

	resp, body = raw(t, s, "DELETE", "/v2/tags/extra-awesome/resources",
		`{"resources":[{"resource_id":"`+strconv.Itoa(d.ID)+`","resource_type":"droplet"}]}`)
	if resp.StatusCode != 204 {
		t.Errorf("untag: %d %s", resp.StatusCode, body)
	}
	resp, body = raw(t, s, "DELETE", "/v2/tags/a", "")
	if resp.StatusCode != 204 || len(body) != 0 {
		t.Errorf("delete: %d %q", resp.StatusCode, body)
	}
}

// Tags named when creating a load balancer or a droplet come into being,
// as the API creates them.
func TestTagsCreatedImplicitly(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	req := lbReq("web")
	req.Tags = []string{"k8s:abc", "team_a"}
	lb, _, err := c.LoadBalancers.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	tag, _, err := c.Tags.Get(ctx, "k8s:abc")
	if err != nil || tag.Resources.Count != 1 || tag.Resources.LastTaggedURI != s.URL()+"v2/load_balancers/"+lb.ID {
		t.Errorf("implicit tag: %+v %v", tag, err)
	}
	// The load balancer's JSON still has no tags.
	_, body := raw(t, s, "GET", "/v2/load_balancers/"+lb.ID, "")
	if _, ok := decode(t, body)["load_balancer"].(map[string]any)["tags"]; ok {
		t.Errorf("tags sent back: %s", body)
	}

	d, _, err := c.Droplets.Create(ctx, &godo.DropletCreateRequest{
		Name: "n1", Region: "nyc3", Size: defaultSize, Image: godo.DropletCreateImage{Slug: defaultImage}, Tags: []string{"nodes"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Tags(); !reflect.DeepEqual(got["nodes"], []string{strconv.Itoa(d.ID)}) || len(got) != 3 {
		t.Errorf("Tags() = %v", got)
	}
	// A tag outlives its last resource.
	if _, err := c.Droplets.Delete(ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	if tag, _, err := c.Tags.Get(ctx, "nodes"); err != nil || tag.Resources.Count != 0 {
		t.Errorf("after the droplet went: %+v %v", tag, err)
	}

	bad := lbReq("bad")
	bad.Tags = []string{"no spaces"}
	_, _, err = c.LoadBalancers.Create(ctx, bad)
	if e := apiErr(t, err, http.StatusUnprocessableEntity); !strings.Contains(e.Message, `tag "no spaces" is invalid`) {
		t.Errorf("message = %q", e.Message)
	}
	// Updates ignore tags, as the API takes them on creation only.
	up := lbReq("web")
	up.Tags = []string{"no spaces", "other"}
	if _, _, err := c.LoadBalancers.Update(ctx, lb.ID, up); err != nil {
		t.Errorf("update with tags: %v", err)
	}
	if got := s.LoadBalancerTags(lb.ID); !reflect.DeepEqual(got, []string{"k8s:abc", "team_a"}) {
		t.Errorf("tags after an update: %v", got)
	}
}
