package cloudapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The four upstream families. Names, label names, types, buckets and the
// registry (the legacy registry, which /metrics serves) are upstream's;
// docs/metrics.md says which polyccm operation feeds which series and
// where the meaning differs.

// naLabel is what cloud-provider-gcp writes for a region or zone a call
// has none of.
const naLabel = "<n/a>"

// opParts splits "ec2.DescribeInstances" into its client and operation.
func opParts(op string) (client, name string) {
	client, name, _ = strings.Cut(op, ".")
	return client, name
}

// --- AWS: cloud-provider-aws pkg/providers/v1/aws_metrics.go ---

var (
	awsRequestDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Name:           "cloudprovider_aws_api_request_duration_seconds",
		Help:           "Latency of AWS API calls that succeeded, by the AWS CCM's request name.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"request"})
	awsRequestErrors = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           "cloudprovider_aws_api_request_errors",
		Help:           "AWS API calls that failed, by the AWS CCM's request name.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"request"})
	awsThrottled = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           "cloudprovider_aws_api_throttled_requests_total",
		Help:           "AWS API calls that ended throttled (RequestLimitExceeded), by SDK operation.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"operation_name"})
	awsResponseStatus = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           "cloudprovider_aws_api_response_status_total",
		Help:           "AWS API responses with an error status, by service, operation and status code.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"service", "operation", "status_code"})
	awsOnce sync.Once
)

// AWSAPI is cloud-provider-aws's API metrics: the latency of a call that
// succeeded and the count of those that failed, for the calls its
// recordAWSMetric times; calls that ended throttled; and every error
// response, by service and SDK operation. The operations are polyccm's
// "<client>.<SDK operation>" names.
type AWSAPI struct {
	familyBase
	// Requests maps the operations upstream times to the request label
	// it gives them ("ec2.DescribeInstances": "describe_instance").
	Requests map[string]string
	// Services maps an operation's client ("ec2") to the SDK's service ID
	// ("EC2"), the service label of the response status counts.
	Services map[string]string
	// Throttled reports whether a call's final error is one upstream
	// counts as throttled.
	Throttled func(err error) bool
}

func (a *AWSAPI) register() {
	awsOnce.Do(func() {
		legacyregistry.MustRegister(awsRequestDuration, awsRequestErrors, awsThrottled, awsResponseStatus)
	})
}

func (a *AWSAPI) finished(o *observation) {
	if req, ok := a.Requests[o.op]; ok {
		if o.err == nil {
			awsRequestDuration.WithLabelValues(req).Observe(o.elapsed.Seconds())
		} else {
			awsRequestErrors.WithLabelValues(req).Inc()
		}
	}
	if o.err != nil && a.Throttled != nil && a.Throttled(o.err) {
		_, name := opParts(o.op)
		awsThrottled.WithLabelValues(name).Inc()
	}
}

func (a *AWSAPI) failedAttempt(op string, cl Classification) {
	client, name := opParts(op)
	if svc, ok := a.Services[client]; ok && cl.Status >= 400 {
		awsResponseStatus.WithLabelValues(svc, name, strconv.Itoa(cl.Status)).Inc()
	}
}

// --- GCE: cloud-provider-gcp providers/gce/metrics.go ---

var (
	gceRequestDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Name:           "cloudprovider_gce_api_request_duration_seconds",
		Help:           "Latency of GCE API calls, by the GCE CCM's request name, region, zone and API version.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"request", "region", "zone", "version"})
	gceRequestErrors = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           "cloudprovider_gce_api_request_errors",
		Help:           "GCE API calls that failed, by the GCE CCM's request name, region, zone and API version.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"request", "region", "zone", "version"})
	gceOnce sync.Once
)

// GCERequest is how the GCE CCM names one kind of call.
type GCERequest struct {
	// Name is upstream's "<resource>_<request>", e.g. "address_get".
	Name string
	// ZoneRegion: upstream labels this zonal call with its region as
	// well (zonal disks); other zonal calls have region "<n/a>".
	ZoneRegion bool
}

// GCEAPI is cloud-provider-gcp's API metrics: latency of every call it
// wraps in a metric context, and the count of those that failed, labelled
// with the region and zone the request addressed ("<n/a>" for none) and
// the API version. Region and zone are read from the request's URL.
type GCEAPI struct {
	familyBase
	// Requests maps the operations upstream counts to its names for them.
	Requests map[string]GCERequest
	// Tag marks a request with a call's id through the context's
	// metadata, for the SDK methods that build their HTTP request from it
	// but without the context itself (the List methods of
	// cloud.google.com/go/compute v1.75.0), so their URL is still the
	// call's. Nil when every request carries its context.
	Tag func(ctx context.Context, header, value string) context.Context
}

func (g *GCEAPI) register() {
	gceOnce.Do(func() { legacyregistry.MustRegister(gceRequestDuration, gceRequestErrors) })
}

func (g *GCEAPI) requests() bool { return true }

func (g *GCEAPI) tagger() func(context.Context, string, string) context.Context { return g.Tag }

func (g *GCEAPI) finished(o *observation) {
	req, ok := g.Requests[o.op]
	if !ok || o.http == nil {
		// No request went out: nothing to say where it was addressed.
		return
	}
	region, zone, version := gceScope(o.http.req.URL.Path)
	if req.ZoneRegion && zone != naLabel {
		region = zoneRegion(zone)
	}
	labels := []string{req.Name, region, zone, version}
	gceRequestDuration.WithLabelValues(labels...).Observe(o.elapsed.Seconds())
	if o.err != nil {
		gceRequestErrors.WithLabelValues(labels...).Inc()
	}
}

// gceScope reads a Compute URL path such as
// /compute/v1/projects/p/zones/europe-west1-b/instances/n.
func gceScope(path string) (region, zone, version string) {
	region, zone, version = naLabel, naLabel, "v1"
	parts := strings.Split(path, "/")
	for i := 0; i+1 < len(parts); i++ {
		switch parts[i] {
		case "compute":
			if v := parts[i+1]; v == "v1" || v == "beta" || v == "alpha" {
				version = v
			}
		case "regions":
			region = parts[i+1]
		case "zones":
			zone = parts[i+1]
		}
	}
	return region, zone, version
}

// zoneRegion: europe-west1-b -> europe-west1.
func zoneRegion(zone string) string {
	if i := strings.LastIndexByte(zone, '-'); i > 0 {
		return zone[:i]
	}
	return zone
}

// --- DigitalOcean: digitalocean-cloud-controller-manager do/metrics.go ---

// Plain Prometheus collectors, as upstream's are (no stability level).
var (
	doFirewallAPIDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "firewall",
		Name:      "api_operation_duration_seconds",
		Help:      "Duration of the public-access firewall's API operations.",
		Buckets:   prometheus.LinearBuckets(1, 4.5, 21),
	}, []string{"operation", "result", "http_response_code"})
	doFirewallAPITotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "firewall",
		Name:      "api_operations_total",
		Help:      "The public-access firewall's API operations.",
	}, []string{"operation", "result", "http_response_code"})
	doOnce sync.Once
)

// DigitalOceanFirewallAPI is the DigitalOcean CCM's firewall API
// metrics: each call on the public-access firewall, by upstream's
// operation name, result (succeeded or failed) and the HTTP status it was
// answered with ("" when none came). The firewall controller's own
// series (reconciles, resource syncs) are the driver's.
type DigitalOceanFirewallAPI struct {
	familyBase
	// Operations maps polyccm's firewall operations to upstream's
	// ("firewalls.get": "get_by_id").
	Operations map[string]string
}

func (d *DigitalOceanFirewallAPI) register() {
	doOnce.Do(func() { legacyregistry.Registerer().MustRegister(doFirewallAPIDuration, doFirewallAPITotal) })
}

func (d *DigitalOceanFirewallAPI) requests() bool { return true }

func (d *DigitalOceanFirewallAPI) finished(o *observation) {
	op, ok := d.Operations[o.op]
	if !ok {
		return
	}
	result, code := "succeeded", ""
	if o.err != nil {
		result = "failed"
	}
	if o.status != 0 {
		code = strconv.Itoa(o.status)
	}
	doFirewallAPIDuration.WithLabelValues(op, result, code).Observe(o.elapsed.Seconds())
	doFirewallAPITotal.WithLabelValues(op, result, code).Inc()
}

// --- Hetzner: hcloud-go's instrumentation, which hcloud-cloud-controller-manager turns on ---

var (
	hcloudInFlight = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "hcloud_api_in_flight_requests",
		Help: "Hetzner Cloud API requests under way.",
	})
	hcloudRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hcloud_api_requests_total",
		Help: "Hetzner Cloud API requests answered, by status code, method and API endpoint.",
	}, []string{"code", "method", "api_endpoint"})
	hcloudDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "hcloud_api_request_duration_seconds",
		Help:    "Latency of Hetzner Cloud API requests answered, by method.",
		Buckets: prometheus.DefBuckets,
	}, []string{"method"})
	hcloudOnce sync.Once
)

// HCloudAPI is the metrics hcloud-go's instrumentation keeps when
// hcloud-cloud-controller-manager turns it on (its default): each HTTP
// request, retries and action polls included, as a client-side
// Prometheus round tripper counts them. A request that got no response
// counts only while under way.
type HCloudAPI struct {
	familyBase
	// Endpoint names a request's API endpoint as hcloud-go does
	// ("/servers/-").
	Endpoint func(req *http.Request) string
}

func (h *HCloudAPI) register() {
	hcloudOnce.Do(func() { legacyregistry.Registerer().MustRegister(hcloudInFlight, hcloudRequests, hcloudDuration) })
}

func (h *HCloudAPI) requests() bool { return true }

func (h *HCloudAPI) finished(*observation) {}

func (h *HCloudAPI) inFlight(d float64) { hcloudInFlight.Add(d) }

func (h *HCloudAPI) exchange(x *exchange) {
	if x.err != nil || x.status == 0 {
		return
	}
	hcloudRequests.WithLabelValues(strconv.Itoa(x.status), strings.ToLower(x.req.Method), h.Endpoint(x.req)).Inc()
	hcloudDuration.WithLabelValues(httpMethodLabel(x.req.Method)).Observe(x.elapsed.Seconds())
}

// httpMethodLabel is the method label of Prometheus's instrumented round
// trippers: the standard methods in lower case (written in upper or lower
// case), "unknown" for anything else.
func httpMethodLabel(m string) string {
	l := strings.ToLower(m)
	if m != l && m != strings.ToUpper(m) {
		return "unknown"
	}
	switch l {
	case "get", "put", "head", "post", "delete", "connect", "options", "notify", "trace", "patch":
		return l
	}
	return "unknown"
}

// --- OpenStack: kubernetes/cloud-provider-openstack pkg/metrics ---

var (
	openstackRequestDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Name:           "openstack_api_request_duration_seconds",
		Help:           "Latency of an OpenStack API call, by openstack-cloud-controller-manager's request name.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"request"})
	openstackRequests = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           "openstack_api_requests_total",
		Help:           "OpenStack API calls, by openstack-cloud-controller-manager's request name.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"request"})
	openstackRequestErrors = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           "openstack_api_request_errors_total",
		Help:           "OpenStack API calls that failed, by openstack-cloud-controller-manager's request name.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"request"})
	openstackOnce sync.Once
)

// OpenStackAPI is openstack-cloud-controller-manager's API metrics: each
// call it wraps in a metric context ("<resource>_<verb>", e.g.
// "server_get"), its latency, its count and the count of those that
// failed. A call upstream does not time is not counted.
type OpenStackAPI struct {
	familyBase
	// Requests maps polyccm's operations to upstream's request names
	// ("compute.servers.get": "server_get").
	Requests map[string]string
}

func (s *OpenStackAPI) register() {
	openstackOnce.Do(func() {
		legacyregistry.MustRegister(openstackRequestDuration, openstackRequests, openstackRequestErrors)
	})
}

func (s *OpenStackAPI) finished(o *observation) {
	req, ok := s.Requests[o.op]
	if !ok {
		return
	}
	openstackRequestDuration.WithLabelValues(req).Observe(o.elapsed.Seconds())
	openstackRequests.WithLabelValues(req).Inc()
	// Upstream counts a 404 as an error too: its metric context sees
	// the error before the caller reads it as "gone".
	if o.err != nil {
		openstackRequestErrors.WithLabelValues(req).Inc()
	}
}
