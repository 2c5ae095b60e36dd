package gce

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// cloud-provider-gcp's internal load balancers: a global HTTP health check
// on a regional INTERNAL backend service.
func TestGlobalHealthChecks(t *testing.T) {
	s := start(t)
	wait := waiter(t)
	ctx := context.Background()
	hcs := client(t, s, compute.NewHealthChecksRESTClient)
	rhcs := client(t, s, compute.NewRegionHealthChecksRESTClient)
	bss := client(t, s, compute.NewRegionBackendServicesRESTClient)

	op := wait(hcs.Insert(ctx, &computepb.InsertHealthCheckRequest{Project: testProject, HealthCheckResource: &computepb.HealthCheck{
		Name: proto.String("k8s-hc"), Type: proto.String("HTTP"), HttpHealthCheck: &computepb.HTTPHealthCheck{Port: proto.Int32(10256), RequestPath: proto.String("/healthz")},
	}}))
	if p := op.Proto(); p.GetRegion() != "" || p.GetZone() != "" || !strings.Contains(p.GetSelfLink(), "/global/operations/") {
		t.Errorf("operation = %v, want a global one", p)
	}
	hc, err := hcs.Get(ctx, &computepb.GetHealthCheckRequest{Project: testProject, HealthCheck: "k8s-hc"})
	base := s.URL() + "/compute/v1/projects/" + testProject
	if err != nil || hc.GetKind() != "compute#healthCheck" || hc.Region != nil || hc.GetSelfLink() != base+"/global/healthChecks/k8s-hc" ||
		hc.GetCheckIntervalSec() != 5 || hc.GetHttpHealthCheck().GetPort() != 10256 || hc.GetHttpHealthCheck().GetRequestPath() != "/healthz" {
		t.Fatalf("hc = %v, %v", hc, err)
	}
	// The same name in a region is another resource.
	wait(rhcs.Insert(ctx, &computepb.InsertRegionHealthCheckRequest{Project: testProject, Region: region, HealthCheckResource: &computepb.HealthCheck{
		Name: proto.String("k8s-hc"), Type: proto.String("TCP"),
	}}))
	_, err = hcs.Insert(ctx, &computepb.InsertHealthCheckRequest{Project: testProject, HealthCheckResource: &computepb.HealthCheck{Name: proto.String("k8s-hc"), Type: proto.String("TCP")}})
	apiErr(t, err, http.StatusConflict, "alreadyExists")
	_, err = hcs.Insert(ctx, &computepb.InsertHealthCheckRequest{Project: testProject, HealthCheckResource: &computepb.HealthCheck{Name: proto.String("bad"), Type: proto.String("GRPC")}})
	apiErr(t, err, 400, "invalid")

	// Update replaces, patch merges.
	hc.CheckIntervalSec = proto.Int32(8)
	hc.TimeoutSec = proto.Int32(1)
	wait(hcs.Update(ctx, &computepb.UpdateHealthCheckRequest{Project: testProject, HealthCheck: "k8s-hc", HealthCheckResource: hc}))
	wait(hcs.Patch(ctx, &computepb.PatchHealthCheckRequest{Project: testProject, HealthCheck: "k8s-hc", HealthCheckResource: &computepb.HealthCheck{UnhealthyThreshold: proto.Int32(5)}}))
	got := s.GlobalHealthChecks()
	if len(got) != 1 || got[0].CheckIntervalSec != 8 || got[0].TimeoutSec != 1 || got[0].UnhealthyThreshold != 5 || got[0].HTTPHealthCheck.Port != 10256 || got[0].Region != "" {
		t.Errorf("global health checks = %+v", got)
	}
	if all := s.HealthChecks(); len(all) != 2 || all[0].SelfLink != hc.GetSelfLink() || !strings.HasSuffix(all[1].SelfLink, "/regions/"+region+"/healthChecks/k8s-hc") {
		t.Errorf("health checks = %+v", all)
	}

	// Lists page and filter like the others.
	for _, n := range []string{"a-hc", "b-hc"} {
		wait(hcs.Insert(ctx, &computepb.InsertHealthCheckRequest{Project: testProject, HealthCheckResource: &computepb.HealthCheck{Name: proto.String(n), Type: proto.String("TCP")}}))
	}
	var names []string
	for h, err := range hcs.List(ctx, &computepb.ListHealthChecksRequest{Project: testProject, MaxResults: proto.Uint32(1)}).All() {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.GetName())
	}
	if !slices.Equal(names, []string{"a-hc", "b-hc", "k8s-hc"}) {
		t.Errorf("list = %v", names)
	}
	names = nil
	for h, err := range hcs.List(ctx, &computepb.ListHealthChecksRequest{Project: testProject, Filter: proto.String(`type = "HTTP"`)}).All() {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.GetName())
	}
	if !slices.Equal(names, []string{"k8s-hc"}) {
		t.Errorf("filtered list = %v", names)
	}
	var scopes []string
	for p, err := range hcs.AggregatedList(ctx, &computepb.AggregatedListHealthChecksRequest{Project: testProject}).All() {
		if err != nil {
			t.Fatal(err)
		}
		if n := len(p.Value.GetHealthChecks()); n > 0 {
			scopes = append(scopes, p.Key)
		}
	}
	if slices.Sort(scopes); !slices.Equal(scopes, []string{"global", "regions/" + region}) {
		t.Errorf("aggregated scopes = %v", scopes)
	}

	// A regional INTERNAL backend service takes the global check; an
	// EXTERNAL one does not.
	wait(bss.Insert(ctx, &computepb.InsertRegionBackendServiceRequest{Project: testProject, Region: region, BackendServiceResource: &computepb.BackendService{
		Name: proto.String("ilb"), LoadBalancingScheme: proto.String("INTERNAL"), HealthChecks: []string{hc.GetSelfLink()},
	}}))
	if b := s.BackendServices()[0]; !slices.Equal(b.HealthChecks, []string{hc.GetSelfLink()}) {
		t.Errorf("backend service health checks = %v", b.HealthChecks)
	}
	_, err = bss.Insert(ctx, &computepb.InsertRegionBackendServiceRequest{Project: testProject, Region: region, BackendServiceResource: &computepb.BackendService{
		Name: proto.String("elb"), LoadBalancingScheme: proto.String("EXTERNAL"), HealthChecks: []string{"global/healthChecks/k8s-hc"},
	}})
	apiErr(t, err, 400, "invalid")
	_, err = bss.Insert(ctx, &computepb.InsertRegionBackendServiceRequest{Project: testProject, Region: region, BackendServiceResource: &computepb.BackendService{
		Name: proto.String("ilb2"), LoadBalancingScheme: proto.String("INTERNAL"), HealthChecks: []string{"global/healthChecks/nope"},
	}})
	apiErr(t, err, 404, "notFound")

	// In use, it stays.
	_, err = hcs.Delete(ctx, &computepb.DeleteHealthCheckRequest{Project: testProject, HealthCheck: "k8s-hc"})
	want := "The health_check resource 'projects/test-project/global/healthChecks/k8s-hc' is already being used by 'projects/test-project/regions/us-central1/backendServices/ilb'"
	if e := apiErr(t, err, 400, "resourceInUseByAnotherResource"); e.Message != want {
		t.Errorf("message = %q", e.Message)
	}
	wait(bss.Delete(ctx, &computepb.DeleteRegionBackendServiceRequest{Project: testProject, Region: region, BackendService: "ilb"}))
	for _, n := range []string{"k8s-hc", "a-hc", "b-hc"} {
		wait(hcs.Delete(ctx, &computepb.DeleteHealthCheckRequest{Project: testProject, HealthCheck: n}))
	}
	_, err = hcs.Get(ctx, &computepb.GetHealthCheckRequest{Project: testProject, HealthCheck: "k8s-hc"})
	apiErr(t, err, 404, "notFound")
	if st := s.Stats()["healthChecks"]; st.Live != 1 || st.Created != 4 {
		t.Errorf("stats = %+v", st)
	}
}

// The global collection as a client we did not write sees it: plain JSON
// over HTTP, per the discovery document.
func TestGlobalHealthChecksWire(t *testing.T) {
	s := start(t)
	coll := "/compute/v1/projects/" + testProject + "/global/healthChecks"
	base := s.URL() + "/compute/v1/projects/" + testProject

	// op checks an answer is a global operation on target, then reads it
	// back DONE without error.
	op := func(resp *http.Response, b []byte, opType, target string) {
		t.Helper()
		m := decode(t, b)
		if resp.StatusCode != 200 || m["kind"] != "compute#operation" || m["operationType"] != opType || m["targetLink"] != base+target {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		if _, ok := m["region"]; ok {
			t.Errorf("global operation has a region: %s", b)
		}
		if !strings.HasPrefix(m["selfLink"].(string), base+"/global/operations/") {
			t.Errorf("selfLink = %v", m["selfLink"])
		}
		_, b = raw(t, s, "GET", strings.TrimPrefix(m["selfLink"].(string), s.URL()), "")
		if m := decode(t, b); m["status"] != "DONE" || m["error"] != nil {
			t.Fatalf("operation = %s", b)
		}
	}

	resp, b := raw(t, s, "POST", coll, `{"name":"hc","type":"HTTP","httpHealthCheck":{"port":10256,"requestPath":"/healthz"},"checkIntervalSec":8,"timeoutSec":1}`)
	op(resp, b, "insert", "/global/healthChecks/hc")

	resp, b = raw(t, s, "GET", coll+"/hc", "")
	var hc struct {
		Kind             string `json:"kind"`
		ID               string `json:"id"`
		Name             string `json:"name"`
		Type             string `json:"type"`
		CheckIntervalSec int    `json:"checkIntervalSec"`
		HealthyThreshold int    `json:"healthyThreshold"`
		SelfLink         string `json:"selfLink"`
		HTTPHealthCheck  struct {
			Port              int    `json:"port"`
			RequestPath       string `json:"requestPath"`
			PortSpecification string `json:"portSpecification"`
		} `json:"httpHealthCheck"`
	}
	if err := json.Unmarshal(b, &hc); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if resp.StatusCode != 200 || hc.Kind != "compute#healthCheck" || hc.ID == "" || hc.Type != "HTTP" || hc.CheckIntervalSec != 8 || hc.HealthyThreshold != 2 ||
		hc.HTTPHealthCheck.Port != 10256 || hc.HTTPHealthCheck.RequestPath != "/healthz" || hc.HTTPHealthCheck.PortSpecification != "USE_FIXED_PORT" ||
		hc.SelfLink != base+"/global/healthChecks/hc" {
		t.Errorf("get = %d %s", resp.StatusCode, b)
	}
	if _, ok := decode(t, b)["region"]; ok {
		t.Errorf("a global health check has a region: %s", b)
	}

	resp, b = raw(t, s, "PATCH", coll+"/hc", `{"httpHealthCheck":{"port":8080}}`)
	op(resp, b, "patch", "/global/healthChecks/hc")
	resp, b = raw(t, s, "PUT", coll+"/hc", `{"name":"hc","type":"TCP","tcpHealthCheck":{"port":10256}}`)
	op(resp, b, "update", "/global/healthChecks/hc")

	_, b = raw(t, s, "GET", coll+"?maxResults=1", "")
	list := decode(t, b)
	items, _ := list["items"].([]any)
	if list["kind"] != "compute#healthCheckList" || list["id"] != "projects/"+testProject+"/global/healthChecks" || len(items) != 1 {
		t.Fatalf("list = %s", b)
	}
	if it := items[0].(map[string]any); it["type"] != "TCP" || it["tcpHealthCheck"].(map[string]any)["port"] != float64(10256) || it["httpHealthCheck"] != nil || it["checkIntervalSec"] != float64(5) {
		t.Errorf("after update = %v", it)
	}

	// Errors are Google error bodies.
	resp, b = raw(t, s, "POST", coll, `{"name":"x","type":"TCP","bogus":1}`)
	if e := decode(t, b)["error"].(map[string]any); resp.StatusCode != 400 || e["code"] != float64(400) || e["errors"].([]any)[0].(map[string]any)["reason"] != "invalid" {
		t.Errorf("unknown field: %d %s", resp.StatusCode, b)
	}
	resp, b = raw(t, s, "DELETE", coll+"/hc", "")
	op(resp, b, "delete", "/global/healthChecks/hc")
	resp, b = raw(t, s, "GET", coll+"/hc", "")
	e := decode(t, b)["error"].(map[string]any)
	if resp.StatusCode != 404 || e["message"] != "The resource 'projects/test-project/global/healthChecks/hc' was not found" ||
		e["errors"].([]any)[0].(map[string]any)["reason"] != "notFound" || e["status"] != "NOT_FOUND" {
		t.Errorf("after delete: %d %s", resp.StatusCode, b)
	}
}
