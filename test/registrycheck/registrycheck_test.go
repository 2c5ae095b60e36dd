package registrycheck

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/polyccm/polyccm/core/driver"
	_ "github.com/polyccm/polyccm/drivers/all"
	"github.com/polyccm/polyccm/test/harness"
)

func registered(t *testing.T) []driver.Driver {
	t.Helper()
	var out []driver.Driver
	for _, n := range driver.Default().Names() {
		d, _ := driver.Default().Lookup(n)
		out = append(out, d)
	}
	if len(out) == 0 {
		t.Fatal("no driver is compiled in: run without build tags")
	}
	return out
}

// The tree agrees with the registry: every place that lists drivers
// lists exactly the registered ones.
func TestTreeMatchesRegistry(t *testing.T) {
	for _, p := range Check(harness.RepoRoot(), registered(t)) {
		t.Errorf("%s", p)
	}
}

// copyTree copies what Check reads (the places, the driver folders' file
// names, the docs) into a temporary root.
func copyTree(t *testing.T, names []string) string {
	t.Helper()
	src, dst := harness.RepoRoot(), t.TempDir()
	files := slices.Clone(Places)
	for _, n := range names {
		files = append(files, "drivers/all/"+n+".go", "docs/"+n+"-load-balancers.md")
		entries, err := os.ReadDir(filepath.Join(src, "drivers", n))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			files = append(files, "drivers/"+n+"/"+e.Name())
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(src, f))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// Removing a driver from any one place the check reads fails it with a
// problem naming that file: no place is listed but unchecked. (The copy
// is checked clean first, so a problem is the removal's.)
func TestRemovingADriverFromOnePlaceIsNamed(t *testing.T) {
	drivers := registered(t)
	var names []string
	for _, d := range drivers {
		names = append(names, d.Name)
	}
	root := copyTree(t, names)
	if ps := Check(root, drivers); len(ps) != 0 {
		t.Fatalf("the copied tree has problems before any removal: %v", ps)
	}
	const victim = "hetzner"
	if !slices.Contains(names, victim) {
		t.Skipf("driver %s is not compiled in", victim)
	}
	for _, place := range Places {
		t.Run(place, func(t *testing.T) {
			path := filepath.Join(root, place)
			orig, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			defer os.WriteFile(path, orig, 0o644)
			// The driver's name and the names its definition gives it
			// (credentials, title), as a careless edit would drop them.
			removed := strings.NewReplacer(`"hetzner"`, `"gone"`, "hetzner", "gone", "hcloud-token", "gone-token", "Hetzner Cloud", "Gone Cloud").Replace(string(orig))
			if removed == string(orig) {
				t.Fatalf("%s does not name driver %s at all: why is it a place?", place, victim)
			}
			if err := os.WriteFile(path, []byte(removed), 0o644); err != nil {
				t.Fatal(err)
			}
			ps := Check(root, drivers)
			named := false
			for _, p := range ps {
				named = named || p.File == place
			}
			t.Logf("%v", ps)
			if !named {
				t.Errorf("driver %s taken out of %s: the check named %v, not the file", victim, place, ps)
			}
		})
	}
	t.Run("a job's file", func(t *testing.T) {
		path := filepath.Join(root, "drivers", victim, "lbplan.go")
		if err := os.Rename(path, path+".moved"); err != nil {
			t.Fatal(err)
		}
		defer os.Rename(path+".moved", path)
		ps := Check(root, drivers)
		if !slices.ContainsFunc(ps, func(p Problem) bool { return p.File == "drivers/hetzner/lbplan.go" }) {
			t.Errorf("drivers/%s/lbplan.go gone: the check named %v", victim, ps)
		}
	})
	t.Run("a driver judging ownership itself", func(t *testing.T) {
		path := filepath.Join(root, "drivers", victim, "judge.go")
		src := "package hetzner\n\nfunc (l *loadBalancers) judge(ctx context.Context, svc *v1.Service, r loadbalancers.Resource) error {\n\t_, err := l.own.Check(ctx, svc, r)\n\treturn err\n}\n"
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(path)
		ps := Check(root, drivers)
		if !slices.ContainsFunc(ps, func(p Problem) bool {
			return p.File == "drivers/hetzner/judge.go:4" && strings.Contains(p.Msg, "Check itself")
		}) {
			t.Errorf("a driver calling l.own.Check: the check named %v", ps)
		}
	})
	t.Run("the registry line", func(t *testing.T) {
		path := filepath.Join(root, "drivers", "all", victim+".go")
		if err := os.Rename(path, path+".moved"); err != nil {
			t.Fatal(err)
		}
		defer os.Rename(path+".moved", path)
		ps := Check(root, drivers)
		if !slices.ContainsFunc(ps, func(p Problem) bool { return p.File == "drivers/all/hetzner.go" }) {
			t.Errorf("drivers/all/%s.go gone: the check named %v", victim, ps)
		}
	})
}

// A definition whose credentials are not its config's secret fields is
// named at the driver's driver.go.
func TestCredentialsMatchTheConfig(t *testing.T) {
	for _, d := range registered(t) {
		if len(d.Credentials) == 0 {
			continue
		}
		broken := d
		broken.Credentials = d.Credentials[1:]
		c := &checker{root: harness.RepoRoot(), files: map[string]string{}}
		c.definition(broken)
		if len(c.problems) == 0 || c.problems[0].File != "drivers/"+d.Name+"/driver.go" {
			t.Errorf("driver %s without its credential %s: problems %v", d.Name, d.Credentials[0].Key, c.problems)
		}
	}
}

// docs/adding-a-driver.md, the list for people, names every place the
// check reads and every job file it requires.
func TestGuideNamesEveryPlace(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(harness.RepoRoot(), "docs", "adding-a-driver.md"))
	if err != nil {
		t.Fatal(err)
	}
	guide := string(b)
	for _, p := range Places {
		if !strings.Contains(guide, "`"+p+"`") {
			t.Errorf("docs/adding-a-driver.md does not name `%s`, a place test/registrycheck reads", p)
		}
	}
	for _, files := range jobs {
		for _, f := range files {
			if !strings.Contains(guide, "`"+f+"`") {
				t.Errorf("docs/adding-a-driver.md does not name `%s`, a job file test/registrycheck requires", f)
			}
		}
	}
}
