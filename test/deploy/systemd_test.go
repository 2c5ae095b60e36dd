package deploy

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/polyccm/polyccm/config"
	"github.com/polyccm/polyccm/core/driver"
	_ "github.com/polyccm/polyccm/drivers/all" // every driver, for their secrets
)

const (
	unitPath    = "systemd/polyccm.service"
	defaultPath = "systemd/polyccm.default"
	// maxExposure is the highest `systemd-analyze security` exposure level
	// the unit may have.
	maxExposure = 2.0
)

// unitCredential is the systemd credential (LoadCredential=) the unit
// provides for a driver secret, to be given in the config as
// {credential: NAME}: the driver's registered Credentials name it, and
// test/registrycheck holds the unit to them.
func unitCredential(t *testing.T, driverName, key string) string {
	t.Helper()
	d, _ := driver.Default().Lookup(driverName)
	for _, c := range d.Credentials {
		if c.Key == key {
			return c.Name
		}
	}
	t.Fatalf("driver %s registers no credential %s", driverName, key)
	return ""
}

// systemdAnalyze returns the path of systemd-analyze. Without it the
// test is skipped (the unit's other checks run in Go), unless
// CCMTEST_REQUIRE_PKGTOOLS is set, as CI sets it: there these checks must
// not pass by not running.
func systemdAnalyze(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("systemd-analyze")
	if err != nil {
		msg := fmt.Sprintf("systemd-analyze not found (%v): install systemd (apt-get install systemd; .ci/run does) to check %s", err, unitPath)
		if os.Getenv("CCMTEST_REQUIRE_PKGTOOLS") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// unit is a parsed unit file: section -> key -> values in order. An empty
// assignment is kept as "".
type unit map[string]map[string][]string

func parseUnit(t *testing.T, text string) unit {
	t.Helper()
	u := unit{}
	section := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
		case strings.HasSuffix(line, `\`):
			t.Fatalf("line %d: continuation lines are not supported by this parser: %s", n, line)
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("line %d: not a key=value in a section: %s", n, line)
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			u[section][k] = append(u[section][k], v)
		}
	}
	return u
}

// last is the effective value of a single-valued key.
func (u unit) last(section, key string) (string, bool) {
	vs := u[section][key]
	if len(vs) == 0 {
		return "", false
	}
	return vs[len(vs)-1], true
}

// copyTree copies the regular files, directories and symlinks under src to
// dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(out, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, out)
		case d.Type().IsRegular():
			return copyFile(p, out, 0o644)
		}
		return nil
	})
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// systemUnitsDir is where the host keeps its packaged units (the targets
// the unit names).
func systemUnitsDir(t *testing.T) string {
	t.Helper()
	for _, d := range []string{"/usr/lib/systemd/system", "/lib/systemd/system"} {
		if st, err := os.Stat(filepath.Join(d, "multi-user.target")); err == nil && st.Mode().IsRegular() {
			return d
		}
	}
	t.Fatal("no /usr/lib/systemd/system/multi-user.target: install systemd (apt-get install systemd)")
	return ""
}

// verifyRoot builds a root for `systemd-analyze verify --root`: the
// packaged units, /usr/bin/polyccm (the built binary, which verify requires
// to exist) unless withBinary is false, and the unit at
// /etc/systemd/system/polyccm.service.
func verifyRoot(t *testing.T, unitText string, withBinary bool) string {
	t.Helper()
	root := t.TempDir()
	if err := copyTree(systemUnitsDir(t), filepath.Join(root, "usr/lib/systemd/system")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "usr/bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if withBinary {
		bin, dst := polyccmBin(t), filepath.Join(root, "usr/bin/polyccm")
		if err := os.Link(bin, dst); err != nil {
			if err := copyFile(bin, dst, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "etc/systemd/system"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/systemd/system/polyccm.service"), []byte(unitText), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// verify runs systemd-analyze verify on the unit in a fresh root and
// returns everything it printed. verify exits 0 on unknown keys and other
// ignored lines, so any output is a finding.
func verify(t *testing.T, unitText string, withBinary bool) (string, error) {
	t.Helper()
	tool := systemdAnalyze(t)
	root := verifyRoot(t, unitText, withBinary)
	cmd := exec.Command(tool, "verify", "--man=no", "--root="+root, "/etc/systemd/system/polyccm.service")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}

func TestUnitVerifies(t *testing.T) {
	text := string(repoFile(t, unitPath))
	if out, err := verify(t, text, true); err != nil || out != "" {
		t.Errorf("systemd-analyze verify %s: %v\n%s", unitPath, err, out)
	}

	// The check can fail: a misspelt key, a bad value and a missing binary
	// are each reported.
	for _, c := range []struct {
		name, text string
		withBinary bool
		want       string
	}{
		{"misspelt key", strings.Replace(text, "Restart=always", "Restart=always\nRestartt=always", 1), true, "Restartt"},
		{"bad value", strings.Replace(text, "NoNewPrivileges=yes", "NoNewPrivileges=perhaps", 1), true, "perhaps"},
		{"no binary", text, false, "/usr/bin/polyccm"},
	} {
		t.Run("broken/"+c.name, func(t *testing.T) {
			out, err := verify(t, c.text, c.withBinary)
			if out == "" && err == nil {
				t.Fatalf("systemd-analyze verify found nothing wrong")
			}
			if !strings.Contains(out, c.want) {
				t.Errorf("systemd-analyze verify does not mention %q:\n%s", c.want, out)
			}
		})
	}
}

var exposureRE = regexp.MustCompile(`Overall exposure level for polyccm\.service: ([0-9]+(?:\.[0-9]+)?)`)

// exposure runs systemd-analyze security --offline on the unit text and
// returns the overall exposure level.
func exposure(t *testing.T, unitText string) (float64, string) {
	t.Helper()
	tool := systemdAnalyze(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "polyccm.service"), []byte(unitText), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(tool, "security", "--offline=yes", "--no-pager", "./polyccm.service")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	m := exposureRE.FindSubmatch(out)
	if m == nil {
		t.Fatalf("systemd-analyze security printed no overall exposure level (%v):\n%s", err, out)
	}
	level, perr := strconv.ParseFloat(string(m[1]), 64)
	if perr != nil {
		t.Fatal(perr)
	}
	return level, string(out)
}

func TestUnitSecurityExposure(t *testing.T) {
	text := string(repoFile(t, unitPath))
	level, out := exposure(t, text)
	t.Logf("%s: exposure level %.1f", unitPath, level)
	if level > maxExposure {
		t.Errorf("%s: exposure level %.1f, want %.1f or lower:\n%s", unitPath, level, maxExposure, out)
	}

	// The check can fail: without its hardening the unit scores far worse.
	t.Run("broken/unhardened", func(t *testing.T) {
		before, _, ok := strings.Cut(text, "# Hardening")
		if !ok {
			t.Fatalf("%s has no \"# Hardening\" comment to cut at", unitPath)
		}
		level, _ := exposure(t, before+"\n[Install]\nWantedBy=multi-user.target\n")
		if level <= maxExposure {
			t.Errorf("the unit without hardening scores %.1f, want above %.1f", level, maxExposure)
		}
	})
}

// TestUnitKeys checks the unit against what the deploy docs promise.
func TestUnitKeys(t *testing.T) {
	u := parseUnit(t, string(repoFile(t, unitPath)))
	want := map[string]string{
		"Type":                    "notify",
		"NotifyAccess":            "main",
		"Restart":                 "always",
		"User":                    "polyccm",
		"Group":                   "polyccm",
		"ExecStart":               "/usr/bin/polyccm run --config " + config.DefaultPath,
		"EnvironmentFile":         "-/etc/default/polyccm",
		"NoNewPrivileges":         "yes",
		"ProtectSystem":           "strict",
		"ProtectHome":             "yes",
		"PrivateTmp":              "yes",
		"PrivateDevices":          "yes",
		"CapabilityBoundingSet":   "",
		"RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
	}
	for k, v := range want {
		got, ok := u.last("Service", k)
		if !ok || got != v {
			t.Errorf("[Service] %s=%q, want %q", k, got, v)
		}
	}
	if !slices.Contains(u["Service"]["SystemCallFilter"], "@system-service") {
		t.Errorf("[Service] SystemCallFilter=%q, want @system-service among them", u["Service"]["SystemCallFilter"])
	}
	if ro := u["Service"]["ReadOnlyPaths"]; !slices.Contains(ro, filepath.Dir(config.DefaultPath)) {
		t.Errorf("[Service] ReadOnlyPaths=%q, want %s", ro, filepath.Dir(config.DefaultPath))
	}
	if w, ok := u.last("Service", "WatchdogSec"); !ok || w == "" || w == "0" || w == "infinity" {
		t.Errorf("[Service] WatchdogSec=%q, want a timeout: polyccm pings the watchdog", w)
	}
	if _, ok := u.last("Install", "WantedBy"); !ok {
		t.Error("[Install] has no WantedBy=: systemctl enable would do nothing")
	}
}

// /etc/default/polyccm: plain VAR=value lines, and every POLYCCM_ example,
// once uncommented, names a real config key with a valid value.
func TestEnvironmentFile(t *testing.T) {
	text := string(repoFile(t, defaultPath))
	varRE := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
	var examples []string
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "":
		case strings.HasPrefix(trimmed, "#"):
			if ex := strings.TrimPrefix(trimmed, "#"); strings.HasPrefix(ex, config.EnvPrefix) {
				examples = append(examples, ex)
			}
		case !varRE.MatchString(trimmed):
			t.Errorf("%s:%d: not VAR=value: %s", defaultPath, i+1, line)
		default:
			examples = append(examples, trimmed)
		}
	}
	if len(examples) == 0 {
		t.Fatalf("%s shows no %s examples", defaultPath, config.EnvPrefix)
	}

	dir := t.TempDir()
	cfg := filepath.Join(dir, "ccm.yaml")
	if err := os.WriteFile(cfg, []byte("driver: digitalocean\ndrivers:\n  digitalocean:\n    token: {value: dop_v1_example}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	load := func(env string) error {
		_, _, err := config.Load(config.Source{Path: cfg, Environ: []string{env}})
		return err
	}
	for _, ex := range examples {
		if err := load(ex); err != nil {
			t.Errorf("%s: %s is rejected: %v", defaultPath, ex, err)
		}
	}
	// The check can fail.
	if err := load(config.EnvPrefix + "LOGGING__VERBOSTY=4"); err == nil {
		t.Error("a misspelt POLYCCM_ variable is accepted: the check above proves nothing")
	}
}
