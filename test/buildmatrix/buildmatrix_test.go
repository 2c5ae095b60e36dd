// Package buildmatrix checks the build-tag scheme end to end: binaries built
// by the Makefile with chosen drivers contain exactly those drivers, are
// statically linked, carry the stamped version, and explain themselves when
// asked for a driver they lack.
package buildmatrix

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/polyccm/polyccm/test/harness"
)

// driversInTree lists drivers/<name> directories, the drivers there are.
func driversInTree(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(harness.RepoRoot(), "drivers"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "all" {
			names = append(names, e.Name())
		}
	}
	return names
}

// makeBuild runs `make build` as a packager would and returns the binary.
func makeBuild(t *testing.T, drivers string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "polyccm")
	args := []string{"-s", "build", "BIN=" + bin}
	if drivers != "" {
		args = append(args, "DRIVERS="+drivers)
	}
	out, err := runIn(harness.RepoRoot(), "make", args...)
	if err != nil {
		t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin
}

func runIn(dir, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	// CGO off as in every polyccm build, so the build cache is shared; no
	// MAKEFLAGS from an outer `make test`, which would change make's output.
	for _, kv := range harness.CleanEnv() {
		if !strings.HasPrefix(kv, "MAKEFLAGS=") && !strings.HasPrefix(kv, "MFLAGS=") && !strings.HasPrefix(kv, "MAKELEVEL=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "CGO_ENABLED=0")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	return buf.String(), err
}

func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// assertStatic fails unless bin is an ELF executable with no interpreter and
// no shared-library dependencies.
func assertStatic(t *testing.T, bin string) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has a dynamic loader (PT_INTERP): not statically linked", bin)
		}
	}
	libs, err := f.ImportedLibraries()
	if err == nil && len(libs) > 0 {
		t.Errorf("%s needs shared libraries %v: not statically linked", bin, libs)
	}
}

func TestSingleDriverBuildHasExactlyThatDriver(t *testing.T) {
	for _, name := range driversInTree(t) {
		t.Run(name, func(t *testing.T) {
			bin := makeBuild(t, name)
			out, err := runIn(t.TempDir(), bin, "drivers")
			if err != nil {
				t.Fatalf("polyccm drivers: %v\n%s", err, out)
			}
			if got := lines(out); !slices.Equal(got, []string{name}) {
				t.Errorf("DRIVERS=%s binary lists drivers %q, want exactly [%s]", name, got, name)
			}
			assertStatic(t, bin)

			// The version the Makefile stamps is the one the binary reports.
			want, err := runIn(harness.RepoRoot(), "make", "-s", "version")
			if err != nil {
				t.Fatal(err)
			}
			out, err = runIn(t.TempDir(), bin, "version", "--json")
			if err != nil {
				t.Fatalf("polyccm version: %v\n%s", err, out)
			}
			var v struct {
				Version, Commit string
				Drivers         []string
			}
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("polyccm version --json: %v\n%s", err, out)
			}
			if v.Version != strings.TrimSpace(want) || v.Commit == "" || v.Commit == "unknown" {
				t.Errorf("version %q commit %q, want %q and a commit", v.Version, v.Commit, strings.TrimSpace(want))
			}
			if !slices.Equal(v.Drivers, []string{name}) {
				t.Errorf("version lists drivers %v", v.Drivers)
			}
		})
	}
}

func TestUntaggedBuildHasEveryDriver(t *testing.T) {
	bin := makeBuild(t, "")
	out, err := runIn(t.TempDir(), bin, "drivers")
	if err != nil {
		t.Fatalf("polyccm drivers: %v\n%s", err, out)
	}
	if got, want := lines(out), driversInTree(t); !slices.Equal(got, want) {
		t.Errorf("untagged binary lists %q, want every driver in the tree %q", got, want)
	}
	assertStatic(t, bin)
}

// A binary without a driver refuses a config naming it and says how to
// build one that has it.
func TestMissingDriverExplainsTheRebuild(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "polyccm")
	// custom alone selects no driver at all.
	out, err := runIn(harness.RepoRoot(), "go", "build", "-trimpath", "-tags", "custom", "-o", bin, "./cmd/polyccm")
	if err != nil {
		t.Fatalf("go build -tags custom: %v\n%s", err, out)
	}
	if out, _ := runIn(t.TempDir(), bin, "drivers"); strings.TrimSpace(out) != "" {
		t.Errorf("a custom build without driver tags lists drivers %q", out)
	}
	cfg := filepath.Join(t.TempDir(), "ccm.yaml")
	if err := os.WriteFile(cfg, []byte("driver: digitalocean\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = runIn(t.TempDir(), bin, "run", "--config", cfg)
	if err == nil {
		t.Fatalf("polyccm ran without its driver:\n%s", out)
	}
	for _, want := range []string{
		`driver "digitalocean" is not compiled into this binary`,
		"it has: none",
		"make build DRIVERS=digitalocean",
		"-tags custom,drivers.digitalocean",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// A misspelt driver in DRIVERS fails the build instead of silently
// building fewer drivers.
func TestMakeRejectsUnknownDriver(t *testing.T) {
	out, err := runIn(harness.RepoRoot(), "make", "-s", "build", "BIN="+filepath.Join(t.TempDir(), "x"), "DRIVERS=digitalocaen")
	if err == nil {
		t.Fatalf("make build DRIVERS=digitalocaen succeeded:\n%s", out)
	}
	if !strings.Contains(out, `no driver named "digitalocaen"`) {
		t.Errorf("make's error does not name the bad driver:\n%s", out)
	}
}

// core is below config: the piece that turns the config into the runner's
// settings lives in cmd/polyccm. An import of config from core would be
// the one upward arrow in the package graph.
func TestCoreDoesNotImportConfig(t *testing.T) {
	out, err := runIn(harness.RepoRoot(), "go", "list", "-deps", "-test", "./core/...")
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range lines(out) {
		if p == "github.com/polyccm/polyccm/config" || strings.HasPrefix(p, "github.com/polyccm/polyccm/config/") {
			t.Errorf("core depends on %s", p)
		}
	}
}

// maxFileLines bounds a product source file: past it, a file does several
// jobs and wants splitting by concern.
const maxFileLines = 600

func TestNoProductFileTooLong(t *testing.T) {
	out, err := runIn(harness.RepoRoot(), "git", "ls-files", "*.go")
	if err != nil {
		t.Fatalf("git ls-files: %v\n%s", err, out)
	}
	for _, f := range lines(out) {
		if strings.HasSuffix(f, "_test.go") || strings.HasPrefix(f, "test/") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(harness.RepoRoot(), f))
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), "\n"); n > maxFileLines {
			t.Errorf("%s has %d lines; split it by concern (at most %d)", f, n, maxFileLines)
		}
	}
}
