package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/polyccm/polyccm/config"
	"github.com/polyccm/polyccm/config/secret"
	"github.com/polyccm/polyccm/core/driver"
	_ "github.com/polyccm/polyccm/drivers/all" // the example selects a real driver
	"github.com/polyccm/polyccm/drivers/digitalocean"
)

const examplePath = "../ccm.example.yaml"

// The two files the example refers to, which exist only on a real host.
const (
	exampleKubeconfig = "/etc/polyccm/kubeconfig"
	exampleTokenFile  = "/etc/polyccm/digitalocean-token"
)

// exampleEnv points the example's two file references at temp files.
func exampleEnv(t *testing.T) (env []string, kubeconfig, token string) {
	t.Helper()
	dir := t.TempDir()
	kubeconfig, token = filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "token")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(token, []byte("dop_v1_example\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{
		"POLYCCM_KUBECONFIG=" + kubeconfig,
		"POLYCCM_DRIVERS__DIGITALOCEAN__TOKEN__FILE=" + token,
	}, kubeconfig, token
}

func TestExampleLoads(t *testing.T) {
	env, kubeconfig, token := exampleEnv(t)
	cfg, warnings, err := config.Load(config.Source{Path: examplePath, Environ: env})
	if err != nil {
		t.Fatalf("the example does not load:\n%v", err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings: %q", warnings)
	}

	// The example shows every key with its default, except the two paths
	// and the driver it has to choose.
	want := config.Defaults()
	want.File = examplePath
	want.Driver = "digitalocean"
	want.Kubeconfig = kubeconfig
	d, _ := driver.Default().Lookup("digitalocean")
	dc := d.NewConfig().(*digitalocean.Config)
	dc.Token = secret.Secret{File: token}
	want.Drivers = map[string]any{"digitalocean": dc}
	// controllers.services must be what the example's driver supports (an
	// explicit true is an error without load balancers), so it alone may
	// differ from the default.
	want.Controllers.Services = cfg.Controllers.Services
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("the example's values are not the defaults:\ngot  %+v\nwant %+v", cfg, want)
	}
}

func TestExampleProblemsAreOnlyTheHostPaths(t *testing.T) {
	for _, p := range []string{exampleKubeconfig, exampleTokenFile} {
		if _, err := os.Stat(p); err == nil {
			t.Skipf("%s exists on this host", p)
		}
	}
	_, _, err := config.Load(config.Source{Path: examplePath, Environ: []string{}})
	var ps *config.Problems
	if !errors.As(err, &ps) {
		t.Fatalf("error = %v, want *config.Problems", err)
	}
	var keys []string
	for _, p := range ps.List {
		keys = append(keys, p.Key)
	}
	sort.Strings(keys)
	if want := []string{"drivers.digitalocean.token", "kubeconfig"}; !reflect.DeepEqual(keys, want) {
		t.Errorf("problem keys = %q, want %q:\n%v", keys, want, err)
	}
}

// flatten collects the dotted paths of every leaf of a decoded YAML
// mapping (a nested mapping's path is not itself a leaf).
func flatten(prefix string, m map[string]any, out map[string]bool) {
	for k, v := range m {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok {
			flatten(p, sub, out)
			continue
		}
		out[p] = true
	}
}

func TestExampleDocumentsEveryKey(t *testing.T) {
	raw, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	present := map[string]bool{}
	flatten("", doc, present)
	// A top-level key shown commented out, with its default, counts: set,
	// it means something its absence does not (clusterName).
	for _, m := range commentedTopKey.FindAllSubmatch(raw, -1) {
		present[string(m[1])] = true
	}

	drivers, _ := doc["drivers"].(map[string]any)
	if len(drivers) == 0 {
		t.Fatal("the example has no drivers section")
	}
	var names []string
	for n := range drivers {
		names = append(names, n)
	}
	leaves, err := config.SchemaLeaves(driver.Default(), names)
	if err != nil {
		t.Fatal(err)
	}
	if len(leaves) < 30 {
		t.Fatalf("schema has only %d leaves; the walk is broken", len(leaves))
	}
	for _, leaf := range leaves {
		// A secret is shown in one form ({file:}); the others are
		// alternatives the header documents.
		if i := strings.LastIndexByte(leaf, '.'); i > 0 {
			switch leaf[i+1:] {
			case "env", "credential", "value":
				if slices.Contains(leaves, leaf[:i]+".file") {
					continue
				}
			}
		}
		if !present[leaf] {
			t.Errorf("the example does not show %s", leaf)
		}
	}
}

var commentedTopKey = regexp.MustCompile(`(?m)^# ([a-z][A-Za-z0-9]*): \S`)

var keyLine = regexp.MustCompile(`^\s*([A-Za-z][A-Za-z0-9]*):(\s|$)`)

func TestExampleKeysAreCommented(t *testing.T) {
	raw, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	var missing []string
	parents := map[int]string{} // indent -> key, for naming nested keys
	for i, line := range lines {
		m := keyLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		parents[indent] = m[1]
		name := m[1]
		for in := indent - 2; in >= 0; in -= 2 {
			name = parents[in] + "." + name
		}
		if strings.Contains(line, " #") {
			continue
		}
		prev := ""
		for j := i - 1; j >= 0; j-- {
			if s := strings.TrimSpace(lines[j]); s != "" {
				prev = s
				break
			}
		}
		if !strings.HasPrefix(prev, "#") {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d keys in %s have no comment above them or at the end of the line:\n  %s",
			len(missing), examplePath, strings.Join(missing, "\n  "))
	}
}

// uncommented returns the example with the commented-out section of the
// named driver uncommented and that driver selected, as an operator would
// edit it, and the secret files it names replaced by files in dir.
func uncommented(t *testing.T, name, dir string) string {
	t.Helper()
	raw, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	in := false
	for _, line := range strings.Split(string(raw), "\n") {
		switch {
		case line == "  # "+name+":":
			in = true
			line = "  " + name + ":"
		case in && strings.HasPrefix(line, "  #   "):
			line = "    " + strings.TrimPrefix(line, "  #   ")
		case in:
			in = false
		}
		if line == "driver: digitalocean" {
			line = "driver: " + name
		}
		// The example's explicit services: true is for its DigitalOcean;
		// a driver without load balancers refuses it, as its comment says.
		if d, _ := driver.Default().Lookup(name); line == "  services: true" && !d.Has(driver.LoadBalancers) {
			line = "  services: false"
		}
		out = append(out, line)
	}
	text := strings.Join(out, "\n")
	if !strings.Contains(text, "\n  "+name+":\n") {
		t.Fatalf("the example has no commented-out section for %s", name)
	}
	// The secret files of the section, which exist only on a real host.
	for _, ref := range regexp.MustCompile(`\{file: (/etc/polyccm/[^}]+)\}`).FindAllStringSubmatch(text, -1) {
		local := filepath.Join(dir, filepath.Base(ref[1]))
		content := "example-secret\n"
		if strings.HasSuffix(local, ".json") {
			content = `{"type": "service_account"}` + "\n"
		}
		if err := os.WriteFile(local, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		text = strings.ReplaceAll(text, ref[0], "{file: "+local+"}")
	}
	return text
}

// Every driver's section of the example, not only the selected one's,
// loads once uncommented, shows every key of that driver with its default
// and a comment: the AWS and GCE sections are as checked as DigitalOcean's.
func TestExampleEveryDriverSection(t *testing.T) {
	for _, name := range driver.Default().Names() {
		if name == "digitalocean" {
			continue // the selected one: TestExampleLoads and the others
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			text := uncommented(t, name, dir)
			path := filepath.Join(dir, "ccm.yaml")
			if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			kubeconfig := filepath.Join(dir, "kubeconfig")
			if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, warnings, err := config.Load(config.Source{Path: path, Environ: []string{"POLYCCM_KUBECONFIG=" + kubeconfig}})
			if err != nil {
				t.Fatalf("the %s section does not load:\n%v", name, err)
			}
			if len(warnings) != 0 {
				t.Errorf("warnings: %q", warnings)
			}
			// Every key of the driver shown...
			var doc map[string]any
			if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
				t.Fatal(err)
			}
			present := map[string]bool{}
			flatten("", doc, present)
			leaves, err := config.SchemaLeaves(driver.Default(), []string{name})
			if err != nil {
				t.Fatal(err)
			}
			prefix := "drivers." + name + "."
			n := 0
			for _, leaf := range leaves {
				if !strings.HasPrefix(leaf, prefix) {
					continue
				}
				n++
				if i := strings.LastIndexByte(leaf, '.'); i > 0 {
					switch leaf[i+1:] {
					case "env", "credential", "value":
						if slices.Contains(leaves, leaf[:i]+".file") {
							continue
						}
					}
				}
				if !present[leaf] {
					t.Errorf("the example's %s section does not show %s", name, leaf)
				}
			}
			if n == 0 {
				t.Fatalf("no keys for %s in the schema", name)
			}
			// ...with its default (the secrets aside, which have none).
			d, _ := driver.Default().Lookup(name)
			want := reflect.ValueOf(d.NewConfig()).Elem()
			got := reflect.ValueOf(cfg.Drivers[name]).Elem()
			for i := range want.NumField() {
				f := want.Type().Field(i)
				if f.Type == reflect.TypeOf(secret.Secret{}) {
					continue
				}
				if equalDefault(want.Field(i), got.Field(i)) {
					continue
				}
				w, g := want.Field(i).Interface(), got.Field(i).Interface()
				// A key whose default does not validate (OpenStack's
				// authURL) has no default to show: the example gives a
				// value, and the default must fail on that very key.
				if key := f.Tag.Get("koanf"); !slices.Contains(problemKeys(withField(got, i, want.Field(i))), key) {
					t.Errorf("%s%s is %#v in the example, default %#v (which validates: show the default)", prefix, key, g, w)
				}
			}
		})
	}
}

// withField validates a copy of the driver config cfg (a struct) with its
// i-th field set to v, and returns what Validate said.
func withField(cfg reflect.Value, i int, v reflect.Value) error {
	cp := reflect.New(cfg.Type())
	cp.Elem().Set(cfg)
	cp.Elem().Field(i).Set(v)
	val, ok := cp.Interface().(interface{ Validate() error })
	if !ok {
		return nil
	}
	return val.Validate()
}

// problemKeys lists the keys of the config.Problems in err, joined or not.
func problemKeys(err error) []string {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, problemKeys(e)...)
		}
		return out
	}
	var p config.Problem
	if errors.As(err, &p) {
		return []string{p.Key}
	}
	return nil
}

// equalDefault is reflect.DeepEqual with a nil and an empty slice equal (the
// example's [] is an empty slice, a default a nil one), in nested structs
// too.
func equalDefault(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.Slice:
		if a.Len() == 0 && b.Len() == 0 {
			return true
		}
	case reflect.Struct:
		for i := range a.NumField() {
			if !a.Type().Field(i).IsExported() {
				return reflect.DeepEqual(a.Interface(), b.Interface())
			}
		}
		for i := range a.NumField() {
			if !equalDefault(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a.Interface(), b.Interface())
}
