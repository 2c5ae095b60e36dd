package gce

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/metadata"
	"golang.org/x/oauth2"
	"google.golang.org/api/option"
)

func TestMetadataThroughRealClient(t *testing.T) {
	s := start(t)
	s.AddInstance(Instance{Name: "node-1", Tags: []string{"k8s-node", "web"}})
	cfg, ok := s.MetadataFor(zone, "node-1")
	if !ok {
		t.Fatal("no instance")
	}
	md := NewMetadata(cfg)
	if err := md.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(md.Close)
	t.Setenv("GCE_METADATA_HOST", md.Host())
	ctx := context.Background()
	mc := metadata.NewClient(&http.Client{Timeout: 5 * time.Second})

	if !metadata.OnGCE() {
		t.Error("OnGCE is false with GCE_METADATA_HOST set")
	}
	check := func(name, got string, err error, want string) {
		t.Helper()
		if err != nil || got != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
	p, err := mc.ProjectIDWithContext(ctx)
	check("project", p, err, testProject)
	z, err := mc.ZoneWithContext(ctx)
	check("zone", z, err, zone)
	n, err := mc.InstanceNameWithContext(ctx)
	check("name", n, err, "node-1")
	h, err := mc.HostnameWithContext(ctx)
	check("hostname", h, err, "node-1.us-central1-a.c.test-project.internal")
	net, err := mc.GetWithContext(ctx, "instance/network-interfaces/0/network")
	check("network", net, err, "projects/123456789012/networks/default")
	ip, err := mc.InternalIPWithContext(ctx)
	check("internal ip", ip, err, cfg.NetworkIP)
	tags, err := mc.InstanceTagsWithContext(ctx)
	if err != nil || !slices.Equal(tags, []string{"k8s-node", "web"}) {
		t.Errorf("tags = %v, %v", tags, err)
	}
	_, err = mc.GetWithContext(ctx, "instance/attributes/cluster-name")
	var nd metadata.NotDefinedError
	if !errors.As(err, &nd) {
		t.Errorf("missing attribute: %v", err)
	}
	md.Set("instance/attributes/cluster-name", "prod")
	attr, err := mc.InstanceAttributeValueWithContext(ctx, "cluster-name")
	check("attribute", attr, err, "prod")

	// The token endpoint hands out the fake API's token, which a compute
	// client can then use.
	tok, err := mc.GetWithContext(ctx, "instance/service-accounts/default/token")
	var body struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
		TokenType   string `json:"token_type"`
	}
	if err != nil || json.Unmarshal([]byte(tok), &body) != nil || body.AccessToken != testToken || body.TokenType != "Bearer" || body.ExpiresIn != 3600 {
		t.Fatalf("token = %s, %v", tok, err)
	}
	ic, err := compute.NewInstancesRESTClient(ctx, option.WithEndpoint(s.URL()),
		option.WithTokenSource(oauth2.StaticTokenSource(&oauth2.Token{AccessToken: body.AccessToken})))
	if err != nil {
		t.Fatal(err)
	}
	defer ic.Close()
	if err := getInstanceNamed(ic, ctx, "node-1"); err != nil {
		t.Error(err)
	}
	if md.Faults().CallCount("GET /computeMetadata/v1/instance/service-accounts/default/token") != 1 {
		t.Errorf("endpoints: %v", md.Faults().Endpoints())
	}

	// Injected 503s are retried by the client.
	md.Faults().FailNext("GET /computeMetadata/v1/instance/name", 1, 503)
	n, err = mc.InstanceNameWithContext(ctx)
	check("name after a 503", n, err, "node-1")
}

func getInstanceNamed(c *compute.InstancesClient, ctx context.Context, name string) error {
	_, err := c.Get(ctx, getReq(name))
	return err
}

func TestMetadataRequiresFlavor(t *testing.T) {
	md := NewMetadata(MetadataConfig{ProjectID: "p", Tags: []string{"a"}})
	if err := md.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(md.Close)
	get := func(path string, hdr map[string]string) (*http.Response, string) {
		req, _ := http.NewRequest("GET", md.URL()+path, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	flavor := map[string]string{"Metadata-Flavor": "Google"}
	if resp, _ := get("/computeMetadata/v1/project/project-id", nil); resp.StatusCode != 403 || resp.Header.Get("Metadata-Flavor") != "Google" {
		t.Errorf("no header: %d", resp.StatusCode)
	}
	if resp, _ := get("/computeMetadata/v1/project/project-id", map[string]string{"Metadata-Flavor": "Google", "X-Forwarded-For": "1.2.3.4"}); resp.StatusCode != 403 {
		t.Errorf("forwarded: %d", resp.StatusCode)
	}
	if resp, b := get("/computeMetadata/v1/project/project-id", flavor); resp.StatusCode != 200 || b != "p" || resp.Header.Get("Content-Type") != "application/text" {
		t.Errorf("project: %d %q", resp.StatusCode, b)
	}
	if resp, b := get("/computeMetadata/v1/instance/tags", flavor); b != `["a"]` || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("tags: %q", b)
	}
	if _, b := get("/computeMetadata/v1/instance/name?alt=json", flavor); b != `"test-instance"` {
		t.Errorf("alt=json: %q", b)
	}
	if _, b := get("/computeMetadata/v1/instance/network-interfaces/0/", flavor); b != "network\n" {
		t.Errorf("directory: %q", b)
	}
	if resp, _ := get("/computeMetadata/v1/instance/nothing", flavor); resp.StatusCode != 404 {
		t.Errorf("unknown: %d", resp.StatusCode)
	}
}
