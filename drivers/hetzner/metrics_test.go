package hetzner

import (
	"context"
	"net/http"
	"testing"

	"github.com/hetznercloud/hcloud-go/v2/hcloud/exp/ctxutil"
)

// The endpoint label is hcloud-go's: its operation path when it set one,
// else the URL path as its instrumentation turns it into a label.
func TestHCloudEndpoint(t *testing.T) {
	for _, c := range []struct {
		path, opPath, want string
	}{
		{"/v1/servers/42", "/servers/%d", "/servers/-"},
		{"/v1/servers", "/servers?%s", "/servers"},
		{"/v1/Load_Balancers/7/actions/add_target", "", "/load_balancers/-/actions/add_target"},
		{"/v1/volumes/12/actions/attach", "", "/volumes/-/actions/attach"},
	} {
		ctx := context.Background()
		if c.opPath != "" {
			ctx = ctxutil.SetOpPath(ctx, c.opPath)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.example"+c.path, nil)
		if got := hcloudEndpoint(req); got != c.want {
			t.Errorf("%s (op path %q): %q, want %q", c.path, c.opPath, got, c.want)
		}
	}
}
