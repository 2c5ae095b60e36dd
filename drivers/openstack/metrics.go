package openstack

import "github.com/polyccm/polyccm/core/cloudapi"

// upstreamMetrics are openstack-cloud-controller-manager's API metrics
// (pkg/metrics: openstack_api_request_duration_seconds,
// openstack_api_requests_total, openstack_api_request_errors_total), by
// the request names its metric contexts give the same calls; the calls it
// does not time (ports, networks, Keystone) are not counted there either.
var upstreamMetrics = []cloudapi.UpstreamFamily{&cloudapi.OpenStackAPI{Requests: map[string]string{
	"compute.servers.get":  "server_get",
	"compute.servers.list": "server_list",
	"compute.flavors.get":  "flavor_get",
}}}
