package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/version"
)

func TestMain(m *testing.M) {
	// The commands read the real environment; overrides from the shell
	// running the tests must not change what they see.
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "POLYCCM_") {
			os.Unsetenv(name)
		}
	}
	os.Exit(m.Run())
}

// cli runs polyccm in-process.
func cli(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

const secretValue = "dop_v1_cmdtest_s3cr3t"

// goodConfig writes a valid config with an inline token.
func goodConfig(t *testing.T, mode os.FileMode, extra string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ccm.yaml")
	body := "driver: digitalocean\n" + extra + "drivers:\n  digitalocean:\n    token: {value: " + secretValue + "}\n"
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDrivers(t *testing.T) {
	code, out, errOut := cli("drivers")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	want := driver.Default().Names()
	if len(want) == 0 {
		t.Fatal("no drivers compiled in; the untagged build should have them all")
	}
	if got := strings.Split(strings.TrimSuffix(out, "\n"), "\n"); !reflect.DeepEqual(got, want) {
		t.Errorf("drivers printed %q, want %q", got, want)
	}
}

func TestVersion(t *testing.T) {
	v := version.Get()
	names := driver.Default().Names()

	code, out, errOut := cli("version")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, w := range []string{"polyccm " + v.Version, v.Commit, runtime.Version(), v.Platform, strings.Join(names, ", ")} {
		if !strings.Contains(out, w) {
			t.Errorf("version output does not contain %q:\n%s", w, out)
		}
	}

	// --version needs no config, even with one named that does not exist.
	for _, args := range [][]string{{"--version"}, {"--version", "--config", "/nonexistent/ccm.yaml"}} {
		code, out, errOut = cli(args...)
		if want := "polyccm " + v.Version + "\n"; code != 0 || errOut != "" || out != want {
			t.Errorf("polyccm %s: exit %d, stdout %q, stderr %q; want 0 and %q", strings.Join(args, " "), code, out, errOut, want)
		}
	}

	code, out, errOut = cli("version", "--json")
	if code != 0 || errOut != "" {
		t.Fatalf("--json: exit %d, stderr %q", code, errOut)
	}
	var got struct {
		Version   string   `json:"version"`
		Commit    string   `json:"commit"`
		GoVersion string   `json:"goVersion"`
		Platform  string   `json:"platform"`
		Drivers   []string `json:"drivers"`
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, out)
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Version != v.Version || got.Commit != v.Commit || got.GoVersion != runtime.Version() || got.Platform != v.Platform || !reflect.DeepEqual(got.Drivers, names) {
		t.Errorf("--json = %+v, want version %s commit %s go %s drivers %q", got, v.Version, v.Commit, runtime.Version(), names)
	}
	for _, k := range []string{"version", "commit", "goVersion", "drivers"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("--json has no %q key:\n%s", k, out)
		}
	}
}

// commandPaths lists every command of the CLI as its argument path.
func commandPaths(c *cobra.Command, prefix []string) [][]string {
	var out [][]string
	for _, sub := range c.Commands() {
		p := append(append([]string{}, prefix...), sub.Name())
		out = append(out, p)
		out = append(out, commandPaths(sub, p)...)
	}
	return out
}

func TestHelp(t *testing.T) {
	paths := append([][]string{{}}, commandPaths(newRoot(io.Discard, io.Discard), nil)...)
	// The tree itself: a command lost from it would otherwise go unnoticed.
	have := map[string]bool{}
	for _, p := range paths {
		have[strings.Join(p, " ")] = true
	}
	for _, want := range []string{"run", "config", "config validate", "config show", "drivers", "version"} {
		if !have[want] {
			t.Errorf("no command %q", want)
		}
	}
	for _, p := range paths {
		for _, flag := range []string{"--help", "-h"} {
			args := append(append([]string{}, p...), flag)
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				code, out, errOut := cli(args...)
				if code != 0 {
					t.Fatalf("exit %d, stderr %q", code, errOut)
				}
				if !strings.Contains(out, "Usage:") {
					t.Errorf("no usage on stdout:\n%s", out)
				}
				if len(p) > 0 && !strings.Contains(out, p[len(p)-1]) {
					t.Errorf("help does not name the command %q:\n%s", p[len(p)-1], out)
				}
			})
		}
	}
	// The root help says which drivers this binary has.
	_, out, _ := cli("--help")
	if !strings.Contains(out, "Drivers in this binary: "+strings.Join(driver.Default().Names(), ", ")) {
		t.Errorf("root help does not list the drivers:\n%s", out)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Run("valid", func(t *testing.T) {
		p := goodConfig(t, 0o600, "clusterName: prod\n")
		code, out, errOut := cli("config", "validate", "--config", p)
		if code != 0 {
			t.Fatalf("exit %d, stderr:\n%s", code, errOut)
		}
		if want := p + " is valid: driver digitalocean, cluster prod\n"; out != want {
			t.Errorf("stdout = %q, want %q", out, want)
		}
		if errOut != "" {
			t.Errorf("stderr = %q, want nothing", errOut)
		}
	})
	t.Run("valid with a warning", func(t *testing.T) {
		p := goodConfig(t, 0o644, "")
		code, _, errOut := cli("--config", p, "config", "validate")
		if code != 0 {
			t.Fatalf("exit %d, stderr:\n%s", code, errOut)
		}
		if !strings.HasPrefix(errOut, "warning: ") || !strings.Contains(errOut, "chmod 600") {
			t.Errorf("stderr = %q, want the inline-secret warning", errOut)
		}
		if strings.Contains(errOut, secretValue) {
			t.Errorf("the warning contains the secret: %s", errOut)
		}
	})
	t.Run("problems", func(t *testing.T) {
		p := goodConfig(t, 0o600, "clustrName: x\nnodes:\n  monitorPeriod: 5\n")
		code, out, errOut := cli("config", "validate", "--config", p)
		if code != 1 {
			t.Fatalf("exit %d, want 1", code)
		}
		if out != "" {
			t.Errorf("stdout = %q, want nothing", out)
		}
		for _, w := range []string{p + " has 2 problems", "clustrName: unknown key; did you mean clusterName?", "nodes.monitorPeriod:"} {
			if !strings.Contains(errOut, w) {
				t.Errorf("stderr does not contain %q:\n%s", w, errOut)
			}
		}
		// The problems are printed once, not again as "polyccm: ...".
		if strings.Contains(errOut, "polyccm:") {
			t.Errorf("problems reported twice:\n%s", errOut)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "nope.yaml")
		code, _, errOut := cli("config", "validate", "--config", p)
		if code != 1 || !strings.Contains(errOut, p+" does not exist") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
	})
}

func TestConfigShow(t *testing.T) {
	for _, mode := range []os.FileMode{0o600, 0o644} {
		t.Run(mode.String(), func(t *testing.T) {
			p := goodConfig(t, mode, "nodes:\n  concurrentSyncs: 33\n")
			code, out, errOut := cli("config", "show", "--config", p)
			if code != 0 {
				t.Fatalf("exit %d, stderr:\n%s", code, errOut)
			}
			if strings.Contains(out, secretValue) || strings.Contains(errOut, secretValue) {
				t.Fatalf("the inline secret was printed:\nstdout:\n%s\nstderr:\n%s", out, errOut)
			}
			if (mode == 0o644) != strings.Contains(errOut, "warning:") {
				t.Errorf("mode %v: stderr = %q", mode, errOut)
			}
			if first, _, _ := strings.Cut(out, "\n"); first != "# effective config from "+p {
				t.Errorf("first line = %q", first)
			}
			var cfg struct {
				Driver string `yaml:"driver"`
				Nodes  struct {
					ConcurrentSyncs int    `yaml:"concurrentSyncs"`
					MonitorPeriod   string `yaml:"monitorPeriod"`
				} `yaml:"nodes"`
				LeaderElection struct {
					LeaseName string `yaml:"leaseName"`
				} `yaml:"leaderElection"`
				KubeAPI struct {
					QPS float64 `yaml:"qps"`
				} `yaml:"kubeAPI"`
				Drivers struct {
					DigitalOcean struct {
						Token  map[string]string `yaml:"token"`
						APIURL string            `yaml:"apiURL"`
					} `yaml:"digitalocean"`
				} `yaml:"drivers"`
			}
			if err := yaml.Unmarshal([]byte(out), &cfg); err != nil {
				t.Fatalf("output is not YAML: %v\n%s", err, out)
			}
			checks := []struct {
				name      string
				got, want any
			}{
				{"driver", cfg.Driver, "digitalocean"},
				{"nodes.concurrentSyncs (from the file)", cfg.Nodes.ConcurrentSyncs, 33},
				{"nodes.monitorPeriod (default)", cfg.Nodes.MonitorPeriod, "5s"},
				{"leaderElection.leaseName (default)", cfg.LeaderElection.LeaseName, "cloud-controller-manager"},
				{"kubeAPI.qps (default)", cfg.KubeAPI.QPS, 500.0},
				{"drivers.digitalocean.apiURL (driver default)", cfg.Drivers.DigitalOcean.APIURL, "https://api.digitalocean.com/"},
				{"drivers.digitalocean.token", reflect.DeepEqual(cfg.Drivers.DigitalOcean.Token, map[string]string{"value": "<redacted>"}), true},
			}
			for _, c := range checks {
				if c.got != c.want {
					t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
				}
			}
		})
	}
	t.Run("bad config", func(t *testing.T) {
		p := goodConfig(t, 0o600, "logging:\n  format: xml\n")
		code, out, errOut := cli("config", "show", "--config", p)
		if code != 1 || out != "" || !strings.Contains(errOut, "logging.format") {
			t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
}

func TestRunWithBadConfigDoesNotStart(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nope.yaml")
	for _, args := range [][]string{{"run", "--config", p}, {"--config", p}} {
		code, _, errOut := cli(args...)
		if code != 1 || !strings.Contains(errOut, "polyccm did not start") || !strings.Contains(errOut, "does not exist") {
			t.Errorf("%q: exit %d, stderr %q", args, code, errOut)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	cases := [][]string{
		{"bogus"},
		{"config", "bogus"},
		{"drivers", "extra"},
		{"version", "--yaml"},
		{"--no-such-flag"},
	}
	for _, args := range cases {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, _, errOut := cli(args...)
			if code == 0 {
				t.Fatalf("exit 0, want an error")
			}
			if !strings.HasPrefix(errOut, "polyccm: ") {
				t.Errorf("stderr = %q, want a polyccm: error", errOut)
			}
		})
	}
}

func TestConfigWithoutSubcommand(t *testing.T) {
	// Bare `polyccm config` explains itself and succeeds.
	code, out, errOut := cli("config")
	if code != 0 || !strings.Contains(out, "validate") || !strings.Contains(out, "show") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
