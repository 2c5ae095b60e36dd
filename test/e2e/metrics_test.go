//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/polyccm/polyccm/drivers/gce"
	fakedo "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
	"github.com/polyccm/polyccm/test/harness"
)

// The upstream CCMs' metrics, under their names, label names and label
// values, on polyccm's /metrics beside its own (docs/metrics.md), for
// each driver: a dashboard or alert made for the upstream CCM keeps
// working after a switch.

// upstreamScraper is bound to the metrics-reader role for these tests.
const upstreamScraper = "e2e-upstream-metrics-scraper"

func bindUpstreamScraper(t *testing.T) {
	t.Helper()
	name := "e2e-upstream-metrics-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	binding := fmt.Sprintf(`apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: %s
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "polyccm:metrics-reader"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: %s}]
`, name, upstreamScraper)
	if err := cp.Apply(context.Background(), []byte(binding), false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// scrapeMetrics reads and parses polyccm's /metrics.
func scrapeMetrics(t *testing.T, c *harness.CCM) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	code, body := getAs(t, c, upstreamScraper, "/metrics")
	if code != http.StatusOK {
		return nil, fmt.Sprintf("GET /metrics = %d", code)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return mfs, ""
}

// metricWant is one series polyccm must serve: exactly these labels, and a
// value (a histogram's sample count) that ok accepts.
type metricWant struct {
	name   string
	labels map[string]string
	ok     func(v float64) bool
	says   string
}

func metricAtLeast(n float64) func(float64) bool { return func(v float64) bool { return v >= n } }
func metricExactly(n float64) func(float64) bool { return func(v float64) bool { return v == n } }

func metricSeries(name string, ok func(float64) bool, says string, kv ...string) metricWant {
	w := metricWant{name: name, labels: map[string]string{}, ok: ok, says: says}
	for i := 0; i+1 < len(kv); i += 2 {
		w.labels[kv[i]] = kv[i+1]
	}
	return w
}

// value is the sample of mfs matching w's labels exactly: a counter's or
// gauge's value, a histogram's sample count.
func metricValue(mfs map[string]*dto.MetricFamily, w metricWant) (float64, bool) {
	mf := mfs[w.name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		if len(m.GetLabel()) != len(w.labels) {
			continue
		}
		for _, l := range m.GetLabel() {
			if v, ok := w.labels[l.GetName()]; !ok || v != l.GetValue() {
				continue next
			}
		}
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue(), true
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue(), true
		case dto.MetricType_HISTOGRAM:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// labelSets lists what name has, for the failure message.
func metricLabelSets(mfs map[string]*dto.MetricFamily, name string) string {
	mf := mfs[name]
	if mf == nil {
		return name + ": none"
	}
	var out []string
	for _, m := range mf.GetMetric() {
		var kv []string
		for _, l := range m.GetLabel() {
			kv = append(kv, l.GetName()+"="+l.GetValue())
		}
		out = append(out, "{"+strings.Join(kv, ",")+"}")
	}
	sort.Strings(out)
	return name + ": " + strings.Join(out, " ")
}

func labelString(labels map[string]string) string {
	var kv []string
	for k, v := range labels {
		kv = append(kv, fmt.Sprintf("%s=%q", k, v))
	}
	sort.Strings(kv)
	return "{" + strings.Join(kv, ",") + "}"
}

// waitMetrics waits until every series is served with a value it accepts.
func waitMetrics(t *testing.T, c *harness.CCM, timeout time.Duration, ws ...metricWant) {
	t.Helper()
	eventually(t, timeout, "the upstream CCM's metrics", func() (bool, string) {
		mfs, why := scrapeMetrics(t, c)
		if mfs == nil {
			return false, why
		}
		for _, w := range ws {
			v, ok := metricValue(mfs, w)
			if !ok || !w.ok(v) {
				return false, fmt.Sprintf("%s%s = %v (served: %v), want %s; %s", w.name, labelString(w.labels), v, ok, w.says, metricLabelSets(mfs, w.name))
			}
		}
		return true, ""
	})
}

// noFamilies checks that none of another driver's upstream names is
// served.
func noUpstreamFamilies(t *testing.T, c *harness.CCM, prefixes ...string) {
	t.Helper()
	mfs, why := scrapeMetrics(t, c)
	if mfs == nil {
		t.Fatal(why)
	}
	for name := range mfs {
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				t.Errorf("%s is served by a polyccm not running that driver", name)
			}
		}
	}
}

// AWS: cloud-provider-aws's request latency and errors by its request
// names, the calls that ended throttled, and every error response.
func TestUpstreamMetricsAWS(t *testing.T) {
	bindUpstreamScraper(t)
	e := newAWSEnv(t, nil)
	// The first lookups are throttled until their retries give up.
	e.fake.Faults().FailNext("ec2 DescribeInstances", 12, http.StatusTooManyRequests)
	var names []string
	for i := range 2 {
		in := e.instance(i, awsZones[i%2])
		e.register(in.PrivateDNSName, e.providerID(in))
		names = append(names, in.PrivateDNSName)
	}
	e.waitInitialized(names, 90*time.Second)
	waitMetrics(t, e.ccm, 30*time.Second,
		metricSeries("cloudprovider_aws_api_request_duration_seconds", metricAtLeast(1), "a latency sample per call that succeeded", "request", "describe_instance"),
		metricSeries("cloudprovider_aws_api_request_errors", metricAtLeast(1), "the calls throttled to the end", "request", "describe_instance"),
		metricSeries("cloudprovider_aws_api_throttled_requests_total", metricAtLeast(1), "the calls throttled to the end", "operation_name", "DescribeInstances"),
		// EC2 throttles with 503 RequestLimitExceeded.
		metricSeries("cloudprovider_aws_api_response_status_total", metricAtLeast(12), "each throttled response",
			"service", "EC2", "operation", "DescribeInstances", "status_code", "503"),
		metricSeries("polyccm_cloud_api_requests_total", metricAtLeast(1), "polyccm's own count too",
			"driver", "aws", "operation", "ec2.DescribeInstances", "outcome", "success"),
	)
	noUpstreamFamilies(t, e.ccm, "cloudprovider_gce_", "firewall_", "hcloud_", "number_of_l4_")
}

// GCE: cloud-provider-gcp's request latency and errors with the region and
// zone each request addressed, and its L4 load balancer counts.
func TestUpstreamMetricsGCE(t *testing.T) {
	bindUpstreamScraper(t)
	e, _ := gceLB(t, 2, nil)
	createService(t, "upm-int", map[string]string{
		gce.AnnLoadBalancerType:  "Internal",
		gce.AnnAllowGlobalAccess: "true",
	}, tcp(8080))
	createService(t, "upm-ext", nil, tcp(80))
	e.waitIngress("upm-int", 90*time.Second)
	e.waitIngress("upm-ext", 90*time.Second)
	// A second full sync reads the instance groups' members: a listing
	// whose request the SDK sends without the caller's context.
	patchSvc(t, "upm-int", map[string]any{"spec": map[string]any{"ports": []v1.ServicePort{tcp(8080), tcp(8081)}}})

	gceReq := func(ok func(float64) bool, says, name, region, zone string) metricWant {
		return metricSeries("cloudprovider_gce_api_request_duration_seconds", ok, says, "request", name, "region", region, "zone", zone, "version", "v1")
	}
	waitMetrics(t, e.ccm, 90*time.Second,
		gceReq(metricAtLeast(2), "the rule read by both syncs", "forwardingrule_get", gceRegion, "<n/a>"),
		gceReq(metricAtLeast(2), "a rule made per Service (the ports change remakes the internal one)", "forwardingrule_create", gceRegion, "<n/a>"),
		gceReq(metricExactly(1), "the external load balancer's pool", "targetpool_create", gceRegion, "<n/a>"),
		gceReq(metricExactly(1), "the internal load balancer's backend service", "backendservice_create", gceRegion, "<n/a>"),
		gceReq(metricAtLeast(1), "the firewall rules", "firewall_create", "<n/a>", "<n/a>"),
		gceReq(metricExactly(1), "the group of us-central1-a", "instancegroup_create", "<n/a>", "us-central1-a"),
		gceReq(metricExactly(1), "the group of us-central1-b", "instancegroup_create", "<n/a>", "us-central1-b"),
		gceReq(metricAtLeast(1), "the members of us-central1-a's group", "instancegroup_list_instances", "<n/a>", "us-central1-a"),
		// A rule looked for before it exists is an error to upstream too.
		metricSeries("cloudprovider_gce_api_request_errors", metricAtLeast(2), "the first reads of the rules (404)",
			"request", "forwardingrule_get", "region", gceRegion, "zone", "<n/a>", "version", "v1"),
		metricSeries("number_of_l4_ilbs", metricExactly(1), "one internal Service", "feature", "L4ILBService"),
		metricSeries("number_of_l4_ilbs", metricExactly(1), "in success", "feature", "L4ILBInSuccess"),
		metricSeries("number_of_l4_ilbs", metricExactly(1), "with global access", "feature", "L4ILBGlobalAccess"),
		metricSeries("number_of_l4_ilbs", metricExactly(0), "no custom subnet", "feature", "L4ILBCustomSubnet"),
		metricSeries("number_of_l4_ilbs", metricExactly(0), "none in error", "feature", "L4ILBInError"),
		metricSeries("number_of_l4_netlbs", metricExactly(1), "one external Service", "status", "Success", "deny_firewall", ""),
		metricSeries("polyccm_cloud_api_requests_total", metricAtLeast(1), "polyccm's own count too",
			"driver", "gce", "operation", "instanceGroups.listInstances", "outcome", "success"),
	)
	deleteServiceAndWait(t, "upm-int", 90*time.Second)
	waitMetrics(t, e.ccm, 30*time.Second,
		metricSeries("number_of_l4_ilbs", metricExactly(0), "the Service deleted", "feature", "L4ILBService"),
		metricSeries("number_of_l4_netlbs", metricExactly(1), "the external one left", "status", "Success", "deny_firewall", ""),
	)
	noUpstreamFamilies(t, e.ccm, "cloudprovider_aws_", "firewall_", "hcloud_")
}

// DigitalOcean: the CCM's public-access firewall metrics: each API
// operation with its result and HTTP status, and each reconcile.
func TestUpstreamMetricsDigitalOcean(t *testing.T) {
	bindUpstreamScraper(t)
	e := newDOEnv(t, []fakedo.Droplet{}, func(s *harness.Settings) {
		withServices(s)
		s.DriverBlock += "\nfirewall:\n  name: upm-fw\n  tags: [\"k8s-worker\"]"
	})
	// The first sync finds no firewall and makes it.
	waitMetrics(t, e.ccm, 60*time.Second,
		metricSeries("firewall_api_operations_total", metricExactly(1), "one listing by name", "operation", "get_by_list", "result", "succeeded", "http_response_code", "200"),
		metricSeries("firewall_api_operation_duration_seconds", metricExactly(1), "its latency", "operation", "get_by_list", "result", "succeeded", "http_response_code", "200"),
		metricSeries("firewall_api_operations_total", metricExactly(1), "the create, answered 202 Accepted", "operation", "create", "result", "succeeded", "http_response_code", "202"),
		metricSeries("firewall_reconciles_total", metricExactly(1), "one reconcile that wrote", "result", "reconciled", "error_type", ""),
		metricSeries("firewall_reconcile_duration_seconds", metricExactly(1), "its latency", "result", "reconciled", "error_type", ""),
	)
	// A NodePort Service opens its port: an update. A Service that asks
	// for no rule leaves the firewall as it is: a skipped reconcile.
	for _, svc := range []*v1.Service{
		{ObjectMeta: metav1.ObjectMeta{Name: "upm-np", Namespace: "default"}, Spec: v1.ServiceSpec{Type: v1.ServiceTypeNodePort, Ports: []v1.ServicePort{tcp(80)}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "upm-cip", Namespace: "default"}, Spec: v1.ServiceSpec{Type: v1.ServiceTypeClusterIP, Ports: []v1.ServicePort{tcp(80)}}},
	} {
		if _, err := cp.Admin.CoreV1().Services("default").Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cp.Admin.CoreV1().Services("default").Delete(context.Background(), svc.Name, metav1.DeleteOptions{})
		})
		if svc.Spec.Type == v1.ServiceTypeNodePort {
			waitMetrics(t, e.ccm, 30*time.Second,
				// Read afresh by its ID before the write.
				metricSeries("firewall_api_operations_total", metricAtLeast(1), "the re-read", "operation", "get_by_id", "result", "succeeded", "http_response_code", "200"),
				metricSeries("firewall_api_operations_total", metricExactly(1), "the update", "operation", "update", "result", "succeeded", "http_response_code", "200"))
		}
	}
	waitMetrics(t, e.ccm, 30*time.Second,
		metricSeries("firewall_reconciles_total", metricAtLeast(1), "a reconcile with nothing to write", "result", "skipped", "error_type", ""),
		metricSeries("polyccm_cloud_api_requests_total", metricAtLeast(1), "polyccm's own count too",
			"driver", "digitalocean", "operation", "firewalls.update", "outcome", "success"),
	)
	noUpstreamFamilies(t, e.ccm, "cloudprovider_", "hcloud_", "number_of_l4_")
}

// Hetzner: hcloud-go's request metrics, which the hcloud CCM turns on:
// every request by status, method and API endpoint.
func TestUpstreamMetricsHetzner(t *testing.T) {
	bindUpstreamScraper(t)
	e, _ := newHZEnv(t, hzOptions{})
	e.fake.Faults().FailNext("GET /v1/servers", 1, http.StatusServiceUnavailable)
	e.nodeServers(2, "fsn1")
	waitMetrics(t, e.ccm, 30*time.Second,
		metricSeries("hcloud_api_requests_total", metricAtLeast(1), "the server listings", "code", "200", "method", "get", "api_endpoint", "/servers"),
		metricSeries("hcloud_api_requests_total", metricExactly(1), "the listing that failed", "code", "503", "method", "get", "api_endpoint", "/servers"),
		metricSeries("hcloud_api_request_duration_seconds", metricAtLeast(2), "a latency sample per request answered", "method", "get"),
		metricSeries("hcloud_api_in_flight_requests", metricAtLeast(0), "the gauge served"),
		metricSeries("polyccm_cloud_api_requests_total", metricAtLeast(1), "polyccm's own count too",
			"driver", "hetzner", "operation", "servers.list", "outcome", "success"),
	)
	noUpstreamFamilies(t, e.ccm, "cloudprovider_", "firewall_", "number_of_l4_")
}
