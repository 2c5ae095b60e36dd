// Package packaging checks what `make package` and `make dist` produce. The
// packages are read in Go (read_test.go), so every check that matters runs
// on any machine; the tools a distribution would use on them (lintian,
// dpkg, rpm) check them again where they are installed. CI sets
// CCMTEST_REQUIRE_PKGTOOLS=1 (.ci/run installs the tools), and then a
// missing tool fails the test with its name instead of leaving its checks
// out: in CI, a packaging check never passes by not running.
package packaging

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/polyccm/polyccm/packaging/pkgversion"
	"github.com/polyccm/polyccm/test/harness"
)

// The drivers the packages are built with: not every driver, so the test
// sees DRIVERS reach the packaged binary.
const pkgDrivers = "aws,gce"

// pkgTool reports whether a distribution tool is on PATH for its extra
// checks. Without it the checks are logged as left out, unless
// CCMTEST_REQUIRE_PKGTOOLS is set (CI), which makes a missing tool fail the
// test with its name.
func pkgTool(t *testing.T, tool string) bool {
	t.Helper()
	if _, err := exec.LookPath(tool); err == nil {
		return true
	}
	pkg := map[string]string{"dpkg-deb": "dpkg", "lintian": "lintian", "dpkg": "dpkg", "rpm": "rpm"}[tool]
	if os.Getenv("CCMTEST_REQUIRE_PKGTOOLS") != "" {
		t.Fatalf("%s is not installed and CCMTEST_REQUIRE_PKGTOOLS is set (Debian: apt-get install %s; .ci/run installs it)", tool, pkg)
	}
	t.Logf("%s is not installed: its checks are left out (the Go checks ran; apt-get install %s to add them)", tool, pkg)
	return false
}

// env is the environment for make and the tools: no POLYCCM_/CCMTEST_
// variables, no MAKEFLAGS from an outer make, no SOURCE_DATE_EPOCH (make
// takes it from git, as the tests expect).
func env(extra ...string) []string {
	var out []string
	for _, kv := range harness.CleanEnv() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "SOURCE_DATE_EPOCH", "GOOS", "GOARCH":
			continue
		}
		out = append(out, kv)
	}
	return append(out, extra...)
}

// run runs a command in dir and returns its stdout; it fails the test,
// showing stderr, if the command fails.
func run(t *testing.T, dir string, name string, args ...string) string {
	t.Helper()
	out, stderr, err := runErr(dir, nil, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr)
	}
	return out
}

func runErr(dir string, extraEnv []string, name string, args ...string) (stdout, stderr string, err error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = env(extraEnv...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// built is what `make package` produced, once for all tests.
type built struct {
	deb, rpm string // package files
	version  string // `make version`
	err      string
}

var (
	buildOnce sync.Once
	pkgs      built
	pkgsDir   string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if pkgsDir != "" {
		os.RemoveAll(pkgsDir)
	}
	os.Exit(code)
}

// packages runs `make package DRIVERS=aws,gce` into a temporary directory
// once and returns the .deb and .rpm.
func packages(t *testing.T) built {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "polyccm-packages-")
		if err != nil {
			pkgs.err = err.Error()
			return
		}
		pkgsDir = dir
		root := harness.RepoRoot()
		out, stderr, err := runErr(root, nil, "make", "-s", "package", "DRIVERS="+pkgDrivers,
			"BIN="+filepath.Join(dir, "polyccm"), "DIST="+filepath.Join(dir, "dist"))
		if err != nil {
			pkgs.err = "make package: " + err.Error() + "\n" + out + stderr
			return
		}
		debs, _ := filepath.Glob(filepath.Join(dir, "dist", "*.deb"))
		rpms, _ := filepath.Glob(filepath.Join(dir, "dist", "*.rpm"))
		if len(debs) != 1 || len(rpms) != 1 {
			pkgs.err = "make package made debs " + strings.Join(debs, " ") + " and rpms " + strings.Join(rpms, " ") + ", want one of each\n" + out
			return
		}
		pkgs.deb, pkgs.rpm = debs[0], rpms[0]
		v, stderr, err := runErr(root, nil, "make", "-s", "version")
		if err != nil {
			pkgs.err = "make version: " + err.Error() + "\n" + stderr
			return
		}
		pkgs.version = strings.TrimSpace(v)
	})
	if pkgs.err != "" {
		t.Fatal(pkgs.err)
	}
	return pkgs
}

// versionInfo is `polyccm version --json`.
type versionInfo struct {
	Version  string   `json:"version"`
	Commit   string   `json:"commit"`
	Platform string   `json:"platform"`
	Drivers  []string `json:"drivers"`
}

func binaryVersion(t *testing.T, bin string) versionInfo {
	t.Helper()
	out := run(t, t.TempDir(), bin, "version", "--json")
	var v versionInfo
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%s version --json: %v\n%s", bin, err, out)
	}
	return v
}

// checkBinaryMatches checks that a packaged binary reports the version make
// stamps and exactly the packaged drivers, and returns the package version
// (without revision) that version maps to.
func checkBinaryMatches(t *testing.T, bin, makeVersion string) string {
	t.Helper()
	v := binaryVersion(t, bin)
	if v.Version != makeVersion {
		t.Errorf("packaged polyccm reports version %q, make version says %q", v.Version, makeVersion)
	}
	if want := strings.Split(pkgDrivers, ","); !slices.Equal(v.Drivers, want) {
		t.Errorf("packaged polyccm has drivers %v, want exactly %v (DRIVERS=%s)", v.Drivers, want, pkgDrivers)
	}
	pv, err := pkgversion.FromGit(v.Version)
	if err != nil {
		t.Fatal(err)
	}
	return pv
}

func readRepoFile(t *testing.T, path string) []byte {
	t.Helper()
	return readFile(t, filepath.Join(harness.RepoRoot(), path))
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fileEntry is one file in a package listing.
type fileEntry struct {
	mode, owner, group string
}
