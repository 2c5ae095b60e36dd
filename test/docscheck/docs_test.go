// Package docscheck keeps generated parts of docs/ in step with the code.
// Run `go test ./test/docscheck -update` after changing a driver's
// annotations.
package docscheck

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polyccm/polyccm/core/driver"
	_ "github.com/polyccm/polyccm/drivers/all"
	"github.com/polyccm/polyccm/test/harness"
)

var update = flag.Bool("update", false, "rewrite the generated sections of the docs")

const (
	begin = "<!-- BEGIN GENERATED: annotations table (go test ./test/docscheck -update) -->\n"
	end   = "<!-- END GENERATED -->"
)

func TestAnnotationTables(t *testing.T) {
	// One page per driver with load balancers, from the registry: a new
	// driver's table is checked without an edit here.
	for _, name := range driver.Default().Names() {
		d, _ := driver.Default().Lookup(name)
		if !d.Has(driver.LoadBalancers) || d.Annotations == nil {
			continue // test/registrycheck names what is missing
		}
		doc, set := "docs/"+name+"-load-balancers.md", d.Annotations
		t.Run(doc, func(t *testing.T) {
			path := filepath.Join(harness.RepoRoot(), doc)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			text := string(b)
			i, j := strings.Index(text, begin), strings.Index(text, end)
			if i < 0 || j < i {
				t.Fatalf("%s lacks the generated-section markers %q ... %q", doc, begin, end)
			}
			want := text[:i+len(begin)] + set.MarkdownTable() + text[j:]
			if want == text {
				return
			}
			if *update {
				if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			t.Errorf("%s's annotations table is out of date with the code: run go test ./test/docscheck -update", doc)
		})
	}
}
