package config

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/polyccm/polyccm/config/secret"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
)

// testDriverConfig is a driver config with one field of each kind the
// loader treats specially: a secret, a string, a duration, an int and a
// float.
type testDriverConfig struct {
	Token    secret.Secret `koanf:"token" secret:"token"`
	Region   string        `koanf:"region"`
	Interval time.Duration `koanf:"interval"`
	Workers  int           `koanf:"workers"`
	// Ratio has no range of its own, so decoding alone is tested on it.
	Ratio float64 `koanf:"ratio"`
}

func newTestDriverConfig() any {
	return &testDriverConfig{Region: "r1", Interval: 30 * time.Second, Workers: 4}
}

// Validate returns Problems relative to the driver's subtree, as real
// drivers do, so the loader's prefixing is exercised.
func (c *testDriverConfig) Validate() error {
	var errs []error
	if c.Token.IsZero() {
		errs = append(errs, Problem{Key: "token", Msg: "required"})
	}
	if c.Workers < 1 {
		errs = append(errs, Problem{Key: "workers", Msg: "must be at least 1"})
	}
	return errors.Join(errs...)
}

// testRegistry never touches the process-wide registry: "testcloud" has
// only instances, "routecloud" also load balancers and routes.
func testRegistry() *driver.Registry {
	r := driver.NewRegistry()
	classify := func(error) cloudapi.Classification { return cloudapi.Classification{} }
	newCloud := func(any, driver.Deps) (driver.Cloud, error) { return nil, errors.New("not in tests") }
	r.Register(driver.Driver{
		Name: "testcloud", NewConfig: newTestDriverConfig, New: newCloud, Classify: classify,
		Capabilities: []driver.Capability{driver.Instances},
	})
	r.Register(driver.Driver{
		Name: "routecloud", NewConfig: newTestDriverConfig, New: newCloud, Classify: classify,
		Capabilities: []driver.Capability{driver.Instances, driver.LoadBalancers, driver.Routes},
	})
	return r
}

// minimal is the smallest valid file: a driver and its token.
const minimal = `driver: testcloud
drivers:
  testcloud:
    token: {value: tok}
`

// writeFile writes body as a config file with the given mode.
func writeFile(t *testing.T, body string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ccm.yaml")
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	// WriteFile's mode is filtered by the umask; the tests need it exact.
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// load loads body (mode 0600) with the test registry and exactly the given
// environment, never the process's.
func load(t *testing.T, body string, env ...string) (*Config, []string, error) {
	t.Helper()
	return Load(Source{Path: writeFile(t, body, 0o600), Environ: append([]string{}, env...), Registry: testRegistry()})
}

// mustLoad fails the test unless body loads cleanly.
func mustLoad(t *testing.T, body string, env ...string) *Config {
	t.Helper()
	cfg, _, err := load(t, body, env...)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return cfg
}

// problemsOf asserts err is a *Problems and returns it.
func problemsOf(t *testing.T, err error) *Problems {
	t.Helper()
	if err == nil {
		t.Fatal("Load succeeded, want problems")
	}
	var ps *Problems
	if !errors.As(err, &ps) {
		t.Fatalf("error is %T (%v), want *Problems", err, err)
	}
	return ps
}

// problemKeys returns the sorted keys of every problem.
func problemKeys(ps *Problems) []string {
	keys := make([]string, 0, len(ps.List))
	for _, p := range ps.List {
		keys = append(keys, p.Key)
	}
	sort.Strings(keys)
	return keys
}

// wantProblem asserts a problem at key whose message contains every want.
func wantProblem(t *testing.T, err error, key string, want ...string) Problem {
	t.Helper()
	ps := problemsOf(t, err)
	for _, p := range ps.List {
		if p.Key != key {
			continue
		}
		for _, w := range want {
			if !strings.Contains(p.Msg, w) {
				t.Errorf("problem at %s = %q, want it to contain %q", key, p.Msg, w)
			}
		}
		return p
	}
	t.Fatalf("no problem at %s; got:\n%v", key, err)
	return Problem{}
}

// wantOnly asserts the problems are at exactly these keys.
func wantOnly(t *testing.T, err error, keys ...string) {
	t.Helper()
	ps := problemsOf(t, err)
	sort.Strings(keys)
	got := problemKeys(ps)
	if strings.Join(got, "|") != strings.Join(keys, "|") {
		t.Fatalf("problem keys = %q, want %q; error:\n%v", got, keys, err)
	}
}

// driverConfig returns the test driver's decoded config.
func driverConfig(t *testing.T, cfg *Config, name string) *testDriverConfig {
	t.Helper()
	dc, ok := cfg.Drivers[name].(*testDriverConfig)
	if !ok {
		t.Fatalf("Drivers[%q] = %T, want *testDriverConfig", name, cfg.Drivers[name])
	}
	return dc
}
