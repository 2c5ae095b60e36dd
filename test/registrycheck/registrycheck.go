// Package registrycheck holds every place in the tree that lists the cloud
// drivers against the registry (core/driver, filled by drivers/all): a
// driver added to the registry and forgotten in one place, or a place that
// lists a driver the registry lacks, is a Problem naming the file and what
// to add. `make test` runs it (registrycheck_test.go); docs/adding-a-driver.md
// is the same list for people.
package registrycheck

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/polyccm/polyccm/config"
	"github.com/polyccm/polyccm/core/driver"
)

// Problem is one place that disagrees with the registry.
type Problem struct {
	// File is the path, relative to the repository root, to fix.
	File string
	Msg  string
}

func (p Problem) String() string { return p.File + ": " + p.Msg }

// Places are the files Check reads, relative to the root: the hand-made
// lists of drivers. The drivers' own folders and shims come on top.
var Places = []string{
	"core/driver/registry.go",
	"config/importer/importer.go",
	"test/simcloud/simcloud.go",
	"Makefile",
	"ccm.example.yaml",
	"README.md",
	"systemd/polyccm.service",
	"packaging/helm/polyccm/Chart.yaml",
	"packaging/helm/polyccm/values.yaml",
	"packaging/helm/polyccm/values.schema.json",
	"packaging/helm/polyccm/templates/_helpers.tpl",
	"docs/architecture.md",
	"docs/deploy-helm.md",
	"docs/deploy-systemd.md",
	"docs/packaging.md",
	"docs/switching.md",
	"docs/metrics.md",
	"docs/volume-labels.md",
}

type checker struct {
	root     string
	problems []Problem
	files    map[string]string
}

func (c *checker) add(file, format string, args ...any) {
	c.problems = append(c.problems, Problem{File: file, Msg: fmt.Sprintf(format, args...)})
}

// read returns a file's text, or "" with a Problem if it is missing.
func (c *checker) read(file string) string {
	if s, ok := c.files[file]; ok {
		return s
	}
	b, err := os.ReadFile(filepath.Join(c.root, file))
	if err != nil {
		c.add(file, "cannot read it: %v", err)
	}
	c.files[file] = string(b)
	return string(b)
}

func (c *checker) exists(file string) bool {
	_, err := os.Stat(filepath.Join(c.root, file))
	return err == nil
}

// Check compares the tree at root with the drivers (the registry's, every
// driver compiled in) and returns every disagreement.
func Check(root string, drivers []driver.Driver) []Problem {
	c := &checker{root: root, files: map[string]string{}}
	var names []string
	for _, d := range drivers {
		names = append(names, d.Name)
	}
	slices.Sort(names)

	c.tree(names)
	c.goList("core/driver/registry.go", "Known", names)
	c.goList("config/importer/importer.go", "Clouds", names)
	c.goList("test/simcloud/simcloud.go", "clouds", names)
	c.makefile(names)
	c.packagingDoc(names)
	c.helmSchema(names)
	c.chartKeywords(names)
	for _, d := range drivers {
		c.definition(d)
		c.folder(d)
		c.deployment(d)
		c.docs(d)
	}
	return c.problems
}

// tree: drivers/<name> folders and drivers/all shims are the registry.
func (c *checker) tree(names []string) {
	entries, err := os.ReadDir(filepath.Join(c.root, "drivers"))
	if err != nil {
		c.add("drivers", "cannot list it: %v", err)
		return
	}
	for _, e := range entries {
		if e.IsDir() && e.Name() != "all" && !slices.Contains(names, e.Name()) {
			c.add("drivers/"+e.Name(), "a driver folder the registry lacks: add drivers/all/%s.go (the registry line)", e.Name())
		}
	}
	for _, n := range names {
		if !c.exists("drivers/all/" + n + ".go") {
			c.add("drivers/all/"+n+".go", "missing: the registry line of driver %s (see drivers/all/all.go)", n)
		}
	}
}

// goList compares the string literals of a Go variable (a slice's
// elements, a map's keys) with the driver names.
func (c *checker) goList(file, ident string, names []string) {
	src := c.read(file)
	if src == "" {
		return
	}
	f, err := parser.ParseFile(token.NewFileSet(), file, src, 0)
	if err != nil {
		c.add(file, "does not parse: %v", err)
		return
	}
	var got []string
	found := false
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, id := range vs.Names {
			if id.Name != ident || i >= len(vs.Values) {
				continue
			}
			lit, ok := vs.Values[i].(*ast.CompositeLit)
			if !ok {
				continue
			}
			found = true
			for _, e := range lit.Elts {
				if kv, ok := e.(*ast.KeyValueExpr); ok {
					e = kv.Key
				}
				if b, ok := e.(*ast.BasicLit); ok && b.Kind == token.STRING {
					s, _ := strconv.Unquote(b.Value)
					got = append(got, s)
				}
			}
		}
		return false
	})
	if !found {
		c.add(file, "has no list %s of drivers", ident)
		return
	}
	c.sameSet(file, ident, got, names)
}

func (c *checker) sameSet(file, what string, got, want []string) {
	for _, n := range want {
		if !slices.Contains(got, n) {
			c.add(file, "%s lacks driver %s", what, n)
		}
	}
	for _, n := range got {
		if !slices.Contains(want, n) {
			c.add(file, "%s lists %s, which the registry lacks", what, n)
		}
	}
}

var demoDriversRE = regexp.MustCompile(`(?m)^DEMO_DRIVERS\s*:?=\s*(.*)$`)

func (c *checker) makefile(names []string) {
	m := demoDriversRE.FindStringSubmatch(c.read("Makefile"))
	if m == nil {
		c.add("Makefile", "has no DEMO_DRIVERS line")
		return
	}
	c.sameSet("Makefile", "DEMO_DRIVERS", strings.Fields(m[1]), names)
}

var everyDriverRE = regexp.MustCompile("every driver in `drivers/` \\(([^)]*)\\)")

func (c *checker) packagingDoc(names []string) {
	m := everyDriverRE.FindStringSubmatch(c.read("docs/packaging.md"))
	if m == nil {
		c.add("docs/packaging.md", "has no \"every driver in `drivers/` (...)\" row")
		return
	}
	c.sameSet("docs/packaging.md", "the build-tags table", strings.Split(strings.ReplaceAll(m[1], " ", ""), ","), names)
}

func (c *checker) helmSchema(names []string) {
	const file = "packaging/helm/polyccm/values.schema.json"
	var schema struct {
		Properties struct {
			Driver struct {
				Enum []string `json:"enum"`
			} `json:"driver"`
			Config struct {
				Properties struct {
					Drivers struct {
						Properties map[string]json.RawMessage `json:"properties"`
					} `json:"drivers"`
				} `json:"properties"`
			} `json:"config"`
			Credentials struct {
				Properties struct {
					Keys struct {
						Properties map[string]struct {
							Properties map[string]json.RawMessage `json:"properties"`
						} `json:"properties"`
					} `json:"keys"`
				} `json:"properties"`
			} `json:"credentials"`
		} `json:"properties"`
	}
	if err := json.Unmarshal([]byte(c.read(file)), &schema); err != nil {
		c.add(file, "does not parse: %v", err)
		return
	}
	c.sameSet(file, "properties.driver.enum", schema.Properties.Driver.Enum, names)
	c.sameSet(file, "config.drivers", keys(schema.Properties.Config.Properties.Drivers.Properties), names)
	c.sameSet(file, "credentials.keys", keys(schema.Properties.Credentials.Properties.Keys.Properties), names)
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func (c *checker) chartKeywords(names []string) {
	const file = "packaging/helm/polyccm/Chart.yaml"
	var chart struct {
		Keywords []string `json:"keywords"`
	}
	if err := yaml.Unmarshal([]byte(c.read(file)), &chart); err != nil {
		c.add(file, "does not parse: %v", err)
		return
	}
	for _, n := range names {
		if !slices.Contains(chart.Keywords, n) {
			c.add(file, "keywords lack driver %s", n)
		}
	}
}

// definition: the registry entry itself is whole, and its credentials are
// the config type's secret fields.
func (c *checker) definition(d driver.Driver) {
	file := "drivers/" + d.Name + "/driver.go"
	if d.Title == "" || d.Upstream == "" {
		c.add(file, "driver.Register for %s lacks a Title or an Upstream", d.Name)
	}
	var creds []string
	for _, cr := range d.Credentials {
		creds = append(creds, cr.Key)
	}
	c.sameSet(file, "driver.Register's Credentials (against the config's secret.Secret fields)", creds, keys(config.SecretFields(d.NewConfig())))
}

// jobs are the file names a driver's folder uses for each job it has
// (docs/adding-a-driver.md): the same names in every driver.
var jobs = map[driver.Capability][]string{
	driver.Instances:     {"driver.go", "errors.go", "metrics.go", "instances.go", "contract_test.go"},
	driver.LoadBalancers: {"loadbalancer.go", "lbspec.go", "lbplan.go"},
	driver.Inventory:     {"lbinventory.go"},
	driver.Routes:        {"routes.go"},
	driver.Volumes:       {"volumes.go"},
	driver.Tasks:         {"tasks.go"},
}

func (c *checker) folder(d driver.Driver) {
	dir := "drivers/" + d.Name + "/"
	for _, capability := range d.Capabilities {
		for _, f := range jobs[capability] {
			if !c.exists(dir + f) {
				c.add(dir+f, "missing: driver %s has %s, and that job lives in %s (docs/adding-a-driver.md)", d.Name, capability, f)
			}
		}
	}
	if b, _ := os.ReadFile(filepath.Join(c.root, dir, "contract_test.go")); !strings.Contains(string(b), "drivertest.Run(") {
		c.add(dir+"contract_test.go", "does not run the contract suite (drivertest.Run)")
	}
	c.judgesNothing(dir)
}

// ownershipHolder finds what a driver keeps the ownership rule in: a
// field or variable of type *loadbalancers.Ownership.
var ownershipHolder = regexp.MustCompile(`(\w+)\s+\*loadbalancers\.Ownership\b`)

// judgesNothing: core runs the ownership rule on what a driver's
// Observe claims and on each deletion step's guard; a driver that calls
// the rule's checks itself has a sync sequence of its own again.
func (c *checker) judgesNothing(dir string) {
	entries, _ := os.ReadDir(filepath.Join(c.root, dir))
	var files []string
	holders := map[string]bool{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		files = append(files, dir+e.Name())
		for _, m := range ownershipHolder.FindAllStringSubmatch(c.read(dir+e.Name()), -1) {
			holders[m[1]] = true
		}
	}
	if len(holders) == 0 {
		return
	}
	calls := regexp.MustCompile(`\b(` + strings.Join(slices.Sorted(maps.Keys(holders)), "|") + `)\.(Check|CheckDelete|CheckAddresses|Verify|Refuse|ServiceByUIDMark)\(`)
	for _, f := range files {
		for i, line := range strings.Split(c.read(f), "\n") {
			if m := calls.FindStringSubmatch(line); m != nil {
				c.add(fmt.Sprintf("%s:%d", f, i+1), "calls the ownership rule's %s itself: claim the resource in Observe, give the deletion step a Guard, or use Judgement.Found while applying (docs/adding-a-driver.md)", m[2])
			}
		}
	}
}

// deployment: every credential reaches polyccm from the systemd unit and
// the Helm chart, and both are documented.
func (c *checker) deployment(d driver.Driver) {
	const (
		unit     = "systemd/polyccm.service"
		values   = "packaging/helm/polyccm/values.yaml"
		helpers  = "packaging/helm/polyccm/templates/_helpers.tpl"
		helmDoc  = "docs/deploy-helm.md"
		unitDoc  = "docs/deploy-systemd.md"
		example  = "ccm.example.yaml"
		readme   = "README.md"
		switches = "docs/switching.md"
	)
	var v struct {
		Config struct {
			Drivers map[string]any `json:"drivers"`
		} `json:"config"`
		Credentials struct {
			Keys map[string]map[string]string `json:"keys"`
		} `json:"credentials"`
	}
	if err := yaml.Unmarshal([]byte(c.read(values)), &v); err != nil {
		c.add(values, "does not parse: %v", err)
	}
	if _, ok := v.Config.Drivers[d.Name]; !ok {
		c.add(values, "config.drivers lacks %s (add `%s: {}`)", d.Name, d.Name)
	}
	unitText, helmText, unitDocText := c.read(unit), c.read(helmDoc), c.read(unitDoc)
	for _, cr := range d.Credentials {
		key := "drivers." + d.Name + "." + cr.Key
		if !regexp.MustCompile(`(?m)^LoadCredential=` + regexp.QuoteMeta(cr.Name) + `(:|$)`).MatchString(unitText) {
			c.add(unit, "no LoadCredential=%s for %s", cr.Name, key)
		}
		if !strings.Contains(unitDocText, "| `"+cr.Name+"` | `"+key+"` |") {
			c.add(unitDoc, "the credentials table lacks the row | `%s` | `%s` |", cr.Name, key)
		}
		if got := v.Credentials.Keys[d.Name][cr.Key]; got != cr.SecretKey {
			c.add(values, "credentials.keys.%s.%s is %q, the driver's SecretKey is %q", d.Name, cr.Key, got, cr.SecretKey)
		}
		if !tableRow(helmText, "| "+d.Name+" |", "`"+key+"`", "`"+cr.SecretKey+"`") {
			c.add(helmDoc, "the credentials table has no row for %s naming `%s` and `%s`", d.Name, key, cr.SecretKey)
		}
		if cr.Unset == "" && !strings.Contains(c.read(helpers), "credentials.keys."+d.Name+"."+cr.Key) {
			c.add(helpers, "does not fail a release of driver %s without its required %s (credentials.keys.%s.%s)", d.Name, key, d.Name, cr.Key)
		}
	}
	if !strings.Contains(helmText, "`"+d.Name+"`") {
		c.add(helmDoc, "the values table's `driver` row does not list `%s`", d.Name)
	}
	if !regexp.MustCompile(`(?m)^  (# )?` + d.Name + `:`).MatchString(c.read(example)) {
		c.add(example, "has no drivers.%s section (commented out unless selected)", d.Name)
	}
	if !strings.Contains(c.read(readme), "driver: "+d.Name+"\n") {
		c.add(readme, "does not show `driver: %s` (a section on %s)", d.Name, d.Title)
	}
	if !strings.Contains(c.read(switches), "--from "+d.Name) {
		c.add(switches, "does not show `polyccm config import --from %s` (switching from %s)", d.Name, d.Upstream)
	}
}

// tableRow reports whether a line of text starts with prefix and holds
// every cell.
func tableRow(text, prefix string, cells ...string) bool {
	for line := range strings.Lines(text) {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		ok := true
		for _, cell := range cells {
			ok = ok && strings.Contains(line, cell)
		}
		if ok {
			return true
		}
	}
	return false
}

// docs: the driver's own pages and its rows in the shared ones.
func (c *checker) docs(d driver.Driver) {
	if !strings.Contains(c.read("docs/architecture.md"), "| `drivers/"+d.Name+"` |") {
		c.add("docs/architecture.md", "the package table has no row | `drivers/%s` |", d.Name)
	}
	if d.Has(driver.LoadBalancers) {
		doc := "docs/" + d.Name + "-load-balancers.md"
		if !c.exists(doc) {
			c.add(doc, "missing: driver %s has load balancers; its annotation table lives here (generated by test/docscheck)", d.Name)
		}
		if d.Annotations == nil {
			c.add("drivers/"+d.Name+"/driver.go", "driver.Register for %s lacks Annotations (the load balancer annotations it reads)", d.Name)
		}
	}
	if len(d.UpstreamMetrics) > 0 && !strings.Contains(c.read("docs/metrics.md"), "\n## "+d.Title+" (") {
		c.add("docs/metrics.md", "has no section \"## %s (...)\" for the driver's upstream metrics", d.Title)
	}
	if d.Has(driver.Volumes) && !strings.Contains(c.read("docs/volume-labels.md"), "| `"+d.Name+"` |") {
		c.add("docs/volume-labels.md", "the table of PVs each driver takes has no row | `%s` |", d.Name)
	}
}
