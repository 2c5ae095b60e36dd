package hetzner

import (
	"net/http"
	"regexp"
	"strings"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/exp/ctxutil"

	"github.com/polyccm/polyccm/core/cloudapi"
)

// upstreamMetrics are the API metrics of hcloud-go's instrumentation,
// which hcloud-cloud-controller-manager turns on by default, written by
// core/cloudapi from the requests polyccm's hcloud-go client sends;
// docs/metrics.md has the table.
var upstreamMetrics = []cloudapi.UpstreamFamily{&cloudapi.HCloudAPI{Endpoint: hcloudEndpoint}}

// hcloudEndpoint names a request's endpoint as hcloud-go's
// instrumentation does: the operation path hcloud-go put on the request
// ("/servers/-"), else the URL path in lower case without /v1, every run
// of characters other than a-z, / and _ made one "-".
func hcloudEndpoint(req *http.Request) string {
	if p := ctxutil.OpPath(req.Context()); p != "" {
		return p
	}
	p := strings.TrimPrefix(strings.ToLower(req.URL.Path), "/v1")
	return endpointRE.ReplaceAllString(p, "-")
}

var endpointRE = regexp.MustCompile(`[^a-z/_]+`)
