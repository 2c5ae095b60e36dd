package cloudapi_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"

	"github.com/polyccm/polyccm/core/cloudapi"
)

// The upstream series have no driver label: each test uses label values
// of its own (request names, operations, endpoints), so tests and -count
// repeats do not see each other's samples.

// series finds the sample of name with exactly labels in what /metrics
// serves; nil when there is none.
func series(t *testing.T, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	mfs, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) == len(labels) && testutil.LabelsMatch(m, labels) {
				return m
			}
		}
	}
	return nil
}

func counter(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	if m := series(t, name, labels); m != nil {
		return m.GetCounter().GetValue()
	}
	return 0
}

// observations is how many samples a histogram series has taken.
func observations(t *testing.T, name string, labels map[string]string) uint64 {
	t.Helper()
	if m := series(t, name, labels); m != nil {
		return m.GetHistogram().GetSampleCount()
	}
	return 0
}

func unique(t *testing.T, s string) string {
	return fmt.Sprintf("%s_%s_%d", s, strings.ReplaceAll(t.Name(), "/", "_"), runs.Add(1))
}

// apiErr is an SDK error with an AWS-style error code.
type apiErr struct {
	status int
	code   string
}

func (e *apiErr) Error() string { return "api error " + e.code }

func TestAWSFamily(t *testing.T) {
	req := unique(t, "describe")
	op, other := "ec2."+unique(t, "Describe"), "elbv2."+unique(t, "Create")
	_, opName, _ := strings.Cut(op, ".")
	_, otherName, _ := strings.Cut(other, ".")
	fam := &cloudapi.AWSAPI{
		Requests: map[string]string{op: req},
		Services: map[string]string{"ec2": "EC2", "elbv2": "Elastic Load Balancing v2"},
		Throttled: func(err error) bool {
			var a *apiErr
			return errors.As(err, &a) && a.code == "RequestLimitExceeded"
		},
	}
	c := newClient(t, func(o *cloudapi.Options) {
		o.Upstream = []cloudapi.UpstreamFamily{fam}
		o.Classify = func(err error) cloudapi.Classification {
			var a *apiErr
			if errors.As(err, &a) {
				k := cloudapi.ClassifyHTTPStatus(a.status)
				if a.code == "RequestLimitExceeded" {
					k = cloudapi.KindThrottled
				}
				return cloudapi.Classification{Kind: k, Status: a.status}
			}
			return cloudapi.Classification{}
		}
	})
	if c.Transport() != nil {
		t.Error("Transport() is set for a family that reads no HTTP request: the AWS clients would be rebuilt for nothing")
	}
	ctx := context.Background()

	// A call that succeeds after a 503: one latency sample, no error, the
	// 503 counted as a response status.
	s := &script{errs: []error{&apiErr{status: 503, code: "Unavailable"}, nil}}
	if err := c.Do(ctx, op, s.fn); err != nil {
		t.Fatal(err)
	}
	if n := observations(t, "cloudprovider_aws_api_request_duration_seconds", map[string]string{"request": req}); n != 1 {
		t.Errorf("request_duration_seconds{request=%q} has %d samples, want 1", req, n)
	}
	if v := counter(t, "cloudprovider_aws_api_request_errors", map[string]string{"request": req}); v != 0 {
		t.Errorf("request_errors = %v after a success, want 0", v)
	}
	if v := counter(t, "cloudprovider_aws_api_response_status_total", map[string]string{"service": "EC2", "operation": opName, "status_code": "503"}); v != 1 {
		t.Errorf("response_status_total{EC2,%s,503} = %v, want 1", opName, v)
	}

	// A call throttled on every attempt: an error, a throttled call, and
	// each attempt's 400 counted.
	s = &script{errs: []error{&apiErr{status: 400, code: "RequestLimitExceeded"}}}
	if err := c.Do(ctx, op, s.fn); err == nil {
		t.Fatal("want an error")
	}
	if v := counter(t, "cloudprovider_aws_api_request_errors", map[string]string{"request": req}); v != 1 {
		t.Errorf("request_errors = %v, want 1", v)
	}
	if n := observations(t, "cloudprovider_aws_api_request_duration_seconds", map[string]string{"request": req}); n != 1 {
		t.Errorf("a failed call took a latency sample (%d in all); upstream times only successes", n)
	}
	if v := counter(t, "cloudprovider_aws_api_throttled_requests_total", map[string]string{"operation_name": opName}); v != 1 {
		t.Errorf("throttled_requests_total = %v, want 1", v)
	}
	if v := counter(t, "cloudprovider_aws_api_response_status_total", map[string]string{"service": "EC2", "operation": opName, "status_code": "400"}); v != 3 {
		t.Errorf("response_status_total{400} = %v, want 3 (one per attempt)", v)
	}

	// An operation upstream does not time: only its error responses.
	if err := c.Do(ctx, other, (&script{errs: []error{&apiErr{status: 400, code: "ValidationError"}}}).fn); err == nil {
		t.Fatal("want an error")
	}
	if v := counter(t, "cloudprovider_aws_api_response_status_total", map[string]string{"service": "Elastic Load Balancing v2", "operation": otherName, "status_code": "400"}); v != 1 {
		t.Errorf("response_status_total{ELBv2,%s,400} = %v, want 1", otherName, v)
	}
	if v := counter(t, "cloudprovider_aws_api_throttled_requests_total", map[string]string{"operation_name": otherName}); v != 0 {
		t.Errorf("an invalid request counted as throttled")
	}

	// A call that never reached the cloud is none of upstream's.
	c.Close()
	_ = c.Do(ctx, op, func(context.Context) error { return nil })
	if v := counter(t, "cloudprovider_aws_api_request_errors", map[string]string{"request": req}); v != 1 {
		t.Errorf("request_errors = %v after a refused call, want still 1", v)
	}
}

// recorder is a cloud answering every request with the status its path
// asks for (/status/<code>/...), noting the headers it got.
type recorder struct {
	mu      sync.Mutex
	headers []http.Header
	srv     *httptest.Server
}

func newRecorder(t *testing.T) *recorder {
	r := &recorder{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.headers = append(r.headers, req.Header.Clone())
		r.mu.Unlock()
		code := 200
		if _, rest, ok := strings.Cut(req.URL.Path, "/status/"); ok {
			_, _ = fmt.Sscanf(rest, "%d", &code)
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// get is an SDK call: a GET of path, a status of 400 and above an error.
func get(hc *http.Client, url string, withContext bool) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		var req *http.Request
		if withContext {
			req, _ = http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		} else {
			// As the compute v1.75.0 List methods build theirs: no
			// context, only the headers its metadata holds.
			req, _ = http.NewRequest(http.MethodGet, url, nil)
			if h, ok := ctx.Value(tagKey{}).([2]string); ok {
				req.Header.Set(h[0], h[1])
			}
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode >= 400 {
			return status(resp.StatusCode)
		}
		return nil
	}
}

type tagKey struct{}

func TestGCEFamilyLabelsFromTheRequest(t *testing.T) {
	cloud := newRecorder(t)
	zonal, regional, zonalDisk, global, listed := unique(t, "instances_get"), unique(t, "address_get"),
		unique(t, "disk_get"), unique(t, "firewall_get"), unique(t, "instancegroup_list_instances")
	fam := &cloudapi.GCEAPI{
		Requests: map[string]cloudapi.GCERequest{
			"instances.get": {Name: zonal}, "addresses.get": {Name: regional}, "disks.get": {Name: zonalDisk, ZoneRegion: true},
			"firewalls.get": {Name: global}, "instanceGroups.listInstances": {Name: listed},
		},
		Tag: func(ctx context.Context, header, value string) context.Context {
			return context.WithValue(ctx, tagKey{}, [2]string{header, value})
		},
	}
	c := newClient(t, func(o *cloudapi.Options) { o.Upstream = []cloudapi.UpstreamFamily{fam} })
	hc := &http.Client{Transport: c.Transport()(http.DefaultTransport)}
	base := cloud.srv.URL + "/compute/v1/projects/p"
	ctx := context.Background()
	calls := []struct {
		op, path string
		ctx      bool
		labels   map[string]string
		failed   bool
	}{
		{"instances.get", "/zones/europe-west1-b/instances/n1", true,
			map[string]string{"request": zonal, "region": "<n/a>", "zone": "europe-west1-b", "version": "v1"}, false},
		{"addresses.get", "/regions/europe-west1/addresses/status/404", true,
			map[string]string{"request": regional, "region": "europe-west1", "zone": "<n/a>", "version": "v1"}, true},
		{"disks.get", "/zones/us-central1-f/disks/d", true,
			map[string]string{"request": zonalDisk, "region": "us-central1", "zone": "us-central1-f", "version": "v1"}, false},
		{"firewalls.get", "/global/firewalls/k8s-fw", true,
			map[string]string{"request": global, "region": "<n/a>", "zone": "<n/a>", "version": "v1"}, false},
		// Tied to its call by the header alone.
		{"instanceGroups.listInstances", "/zones/asia-east1-a/instanceGroups/g/listInstances", false,
			map[string]string{"request": listed, "region": "<n/a>", "zone": "asia-east1-a", "version": "v1"}, false},
	}
	for _, call := range calls {
		err := c.Do(ctx, call.op, get(hc, base+call.path, call.ctx))
		if (err != nil) != call.failed {
			t.Fatalf("%s: %v", call.op, err)
		}
		if n := observations(t, "cloudprovider_gce_api_request_duration_seconds", call.labels); n != 1 {
			t.Errorf("%s: request_duration_seconds%v has %d samples, want 1", call.op, call.labels, n)
		}
		want := 0.0
		if call.failed {
			want = 1
		}
		if v := counter(t, "cloudprovider_gce_api_request_errors", call.labels); v != want {
			t.Errorf("%s: request_errors%v = %v, want %v", call.op, call.labels, v, want)
		}
	}
	for i, h := range cloud.headers {
		if v := h.Get("X-Polyccm-Call"); v != "" {
			t.Errorf("request %d reached the cloud with polyccm's call header (%q)", i, v)
		}
	}
}

func TestDigitalOceanFirewallFamily(t *testing.T) {
	cloud := newRecorder(t)
	get, upd := unique(t, "get_by_id"), unique(t, "update")
	fam := &cloudapi.DigitalOceanFirewallAPI{Operations: map[string]string{"firewalls.get": get, "firewalls.update": upd}}
	c := newClient(t, func(o *cloudapi.Options) { o.Upstream = []cloudapi.UpstreamFamily{fam}; o.MaxAttempts = 1 })
	hc := &http.Client{Transport: c.Transport()(http.DefaultTransport)}
	ctx := context.Background()

	if err := c.Do(ctx, "firewalls.get", getFn(hc, cloud.srv.URL+"/v2/firewalls/status/202")); err != nil {
		t.Fatal(err)
	}
	_ = c.Do(ctx, "firewalls.get", getFn(hc, cloud.srv.URL+"/v2/firewalls/status/404"))
	// No answer at all: the code is empty.
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	_ = c.Do(ctx, "firewalls.update", getFn(hc, dead.URL+"/v2/firewalls/x"))

	for _, w := range []map[string]string{
		{"operation": get, "result": "succeeded", "http_response_code": "202"},
		{"operation": get, "result": "failed", "http_response_code": "404"},
		{"operation": upd, "result": "failed", "http_response_code": ""},
	} {
		if v := counter(t, "firewall_api_operations_total", w); v != 1 {
			t.Errorf("firewall_api_operations_total%v = %v, want 1", w, v)
		}
		if n := observations(t, "firewall_api_operation_duration_seconds", w); n != 1 {
			t.Errorf("firewall_api_operation_duration_seconds%v has %d samples, want 1", w, n)
		}
	}
}

func getFn(hc *http.Client, url string) func(ctx context.Context) error { return get(hc, url, true) }

func TestHCloudFamilyCountsEachRequest(t *testing.T) {
	cloud := newRecorder(t)
	ep := "/" + unique(t, "servers") + "/-"
	fam := &cloudapi.HCloudAPI{Endpoint: func(*http.Request) string { return ep }}
	c := newClient(t, func(o *cloudapi.Options) { o.Upstream = []cloudapi.UpstreamFamily{fam}; o.MaxAttempts = 2 })
	hc := &http.Client{Transport: c.Transport()(http.DefaultTransport)}

	var inFlight float64
	seen := false
	err := c.Do(context.Background(), "servers.get", func(ctx context.Context) error {
		if seen {
			// The second attempt: the first request is no longer under way.
			inFlight, _ = gauge(t, "hcloud_api_in_flight_requests", nil)
		}
		seen = true
		return get(hc, cloud.srv.URL+"/v1/servers/status/503", true)(ctx)
	})
	if err == nil {
		t.Fatal("want an error")
	}
	if inFlight != 0 {
		t.Errorf("hcloud_api_in_flight_requests = %v between requests, want 0", inFlight)
	}
	// Each request, the retried one too, as hcloud-go's round tripper
	// counts them.
	if v := counter(t, "hcloud_api_requests_total", map[string]string{"code": "503", "method": "get", "api_endpoint": ep}); v != 2 {
		t.Errorf("hcloud_api_requests_total{503,get,%s} = %v, want 2", ep, v)
	}
	if m := series(t, "hcloud_api_request_duration_seconds", map[string]string{"method": "get"}); m == nil || m.GetHistogram().GetSampleCount() < 2 {
		t.Errorf("hcloud_api_request_duration_seconds{method=get} = %v, want at least 2 samples", m)
	}
}

// A driver without upstream families keeps its HTTP clients as it builds
// them.
func TestNoFamiliesNoTransport(t *testing.T) {
	if newClient(t, nil).Transport() != nil {
		t.Error("Transport() is set for a client without upstream families")
	}
}

// openstack-cloud-controller-manager counts each call it times, and each
// that failed, 404 included (its metric context sees the error first).
func TestOpenStackFamily(t *testing.T) {
	cloud := newRecorder(t)
	get, list := unique(t, "server_get"), unique(t, "server_list")
	fam := &cloudapi.OpenStackAPI{Requests: map[string]string{"compute.servers.get": get, "compute.servers.list": list}}
	c := newClient(t, func(o *cloudapi.Options) { o.Upstream = []cloudapi.UpstreamFamily{fam}; o.MaxAttempts = 1 })
	hc := http.DefaultClient // the family reads no HTTP exchange
	ctx := context.Background()

	if err := c.Do(ctx, "compute.servers.list", getFn(hc, cloud.srv.URL+"/status/200")); err != nil {
		t.Fatal(err)
	}
	_ = c.Do(ctx, "compute.servers.get", getFn(hc, cloud.srv.URL+"/status/404"))
	_ = c.Do(ctx, "network.ports.list", getFn(hc, cloud.srv.URL+"/status/200")) // not upstream's

	for req, want := range map[string][2]float64{list: {1, 0}, get: {1, 1}} {
		l := map[string]string{"request": req}
		if v := counter(t, "openstack_api_requests_total", l); v != want[0] {
			t.Errorf("openstack_api_requests_total%v = %v, want %v", l, v, want[0])
		}
		if v := counter(t, "openstack_api_request_errors_total", l); v != want[1] {
			t.Errorf("openstack_api_request_errors_total%v = %v, want %v", l, v, want[1])
		}
		if n := observations(t, "openstack_api_request_duration_seconds", l); n != 1 {
			t.Errorf("openstack_api_request_duration_seconds%v has %d samples, want 1", l, n)
		}
	}
}
