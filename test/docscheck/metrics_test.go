package docscheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/test/harness"
)

// docs/metrics.md names every upstream label value a driver's table maps
// an operation to, so the mapping it documents is the one the code has.
func TestMetricsDocNamesEveryMapping(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(harness.RepoRoot(), "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, name := range driver.Known {
		d, ok := driver.Default().Lookup(name)
		if !ok {
			t.Fatalf("driver %s is not compiled in", name)
		}
		if len(d.UpstreamMetrics) == 0 {
			t.Errorf("driver %s declares no upstream metrics", name)
		}
		for _, f := range d.UpstreamMetrics {
			var values []string
			switch f := f.(type) {
			case *cloudapi.AWSAPI:
				for op, req := range f.Requests {
					values = append(values, op, req)
				}
				for _, svc := range f.Services {
					values = append(values, svc)
				}
			case *cloudapi.GCEAPI:
				for _, req := range f.Requests {
					values = append(values, req.Name)
				}
			case *cloudapi.DigitalOceanFirewallAPI:
				for op, up := range f.Operations {
					values = append(values, op, up)
				}
			case *cloudapi.HCloudAPI:
			case *cloudapi.OpenStackAPI:
				for op, req := range f.Requests {
					values = append(values, op, req)
				}
			default:
				t.Errorf("driver %s: family %T is not checked here", name, f)
			}
			for _, v := range values {
				if !strings.Contains(doc, "`"+v+"`") {
					t.Errorf("docs/metrics.md does not name `%s` (driver %s)", v, name)
				}
			}
		}
	}
}
