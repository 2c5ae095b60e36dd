package packaging

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// The files (not directories) the .deb ships, with mode and owner. The
// config and the environment file may hold secrets (an inline value, a
// POLYCCM_..._VALUE override), so they are readable by polyccm's group only.
var debFiles = map[string]fileEntry{
	"/usr/bin/polyccm":                           {"-rwxr-xr-x", "root", "root"},
	"/usr/lib/systemd/system/polyccm.service":    {"-rw-r--r--", "root", "root"},
	"/etc/polyccm/ccm.yaml":                      {"-rw-r-----", "root", "polyccm"},
	"/etc/default/polyccm":                       {"-rw-r-----", "root", "polyccm"},
	"/usr/share/doc/polyccm/copyright":           {"-rw-r--r--", "root", "root"},
	"/usr/share/doc/polyccm/changelog.Debian.gz": {"-rw-r--r--", "*", "*"},
	"/usr/share/lintian/overrides/polyccm":       {"-rw-r--r--", "root", "root"},
}

// The files installed from the repository unchanged.
var fromRepo = map[string]string{
	"/usr/lib/systemd/system/polyccm.service": "systemd/polyccm.service",
	"/etc/polyccm/ccm.yaml":                   "ccm.example.yaml",
	"/etc/default/polyccm":                    "systemd/polyccm.default",
}

// dpkg-deb -c: "-rw-r--r-- root/root 801 2026-11-22 10:52 ./etc/default/polyccm"
var debListLine = regexp.MustCompile(`^([-dlrwxst]{10}) (\S+)/(\S+)\s+\d+ \S+ \S+ \./(\S*)$`)

func TestDebContents(t *testing.T) {
	p := packages(t)
	d := readDeb(t, p.deb)

	got := map[string]fileEntry{}
	for path, f := range d.files {
		if f.mode[0] == 'd' {
			if f.mode != "drwxr-xr-x" {
				t.Errorf("directory %s has mode %s, want drwxr-xr-x", path, f.mode)
			}
			continue
		}
		got[path] = f.fileEntry
	}
	checkDebFiles(t, got)

	// Both files under /etc are conffiles, so dpkg keeps an admin's edits.
	if got, want := d.conffiles, []string{"/etc/default/polyccm", "/etc/polyccm/ccm.yaml"}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("conffiles are %q, want %q", got, want)
	}

	// The control fields.
	if got := d.control["Package"]; got != "polyccm" {
		t.Errorf("Package: %q", got)
	}
	if got := d.control["Architecture"]; got != runtime.GOARCH {
		t.Errorf("Architecture: %q, want %s", got, runtime.GOARCH)
	}
	if got := d.control["Depends"]; got != "" {
		t.Errorf("Depends: %q; a static binary needs nothing", got)
	}
	if got := d.control["Description"]; !strings.Contains(got, "Cloud drivers in this build: aws, gce.") {
		t.Errorf("Description does not name the drivers:\n%s", got)
	}
	for _, script := range []string{"preinst", "postinst", "prerm", "postrm"} {
		if out := d.scripts[script]; !bytes.HasPrefix(out, []byte("#!/bin/sh\n")) {
			t.Errorf("maintainer script %s missing or not a sh script:\n%.200s", script, out)
		}
	}

	// The files themselves: the repository's, and a binary that agrees with
	// the package on version and drivers.
	for dst, src := range fromRepo {
		if !bytes.Equal(d.files[dst].data, readRepoFile(t, src)) {
			t.Errorf("%s in the .deb differs from %s", dst, src)
		}
	}
	pv := checkBinaryMatches(t, extractedBinary(t), p.version)
	if got, want := d.control["Version"], pv+"-1"; got != want {
		t.Errorf("the .deb's Version is %q; its binary's version %s maps to %q", got, p.version, want)
	}
	if base, want := filepath.Base(p.deb), "polyccm_"+pv+"-1_"+runtime.GOARCH+".deb"; base != want {
		t.Errorf("the .deb is named %s, want %s", base, want)
	}

	// Debian's own reader sees the same files.
	if !pkgTool(t, "dpkg-deb") {
		return
	}
	listed := map[string]fileEntry{}
	for _, line := range strings.Split(strings.TrimSpace(run(t, "", "dpkg-deb", "-c", p.deb)), "\n") {
		m := debListLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("unexpected dpkg-deb -c line %q", line)
		}
		if m[1][0] != 'd' {
			listed["/"+m[4]] = fileEntry{m[1], m[2], m[3]}
		}
	}
	checkDebFiles(t, listed)
	if got := strings.TrimSpace(run(t, "", "dpkg-deb", "-f", p.deb, "Version")); got != d.control["Version"] {
		t.Errorf("dpkg-deb reads Version %q, the Go reader %q", got, d.control["Version"])
	}
}

// checkDebFiles compares a listing of the .deb's files with debFiles.
func checkDebFiles(t *testing.T, got map[string]fileEntry) {
	t.Helper()
	for path, want := range debFiles {
		g, ok := got[path]
		switch {
		case !ok:
			t.Errorf("the .deb lacks %s", path)
		case g.mode != want.mode || (want.owner != "*" && (g.owner != want.owner || g.group != want.group)):
			t.Errorf("%s is %s %s/%s, want %s %s/%s", path, g.mode, g.owner, g.group, want.mode, want.owner, want.group)
		}
	}
	for path := range got {
		if _, ok := debFiles[path]; !ok {
			t.Errorf("the .deb ships an unexpected %s", path)
		}
	}
}

// lintian's summary, e.g. "N: 3 hints overridden; 1 unused override".
var unusedOverrides = regexp.MustCompile(`\b[1-9][0-9]* unused overrides?\b`)

// Lintian, Debian's package checker, finds no errors. Warnings are allowed;
// the overrides in packaging/lintian-overrides each give their reason and
// must all still be needed.
func TestDebLintian(t *testing.T) {
	if !pkgTool(t, "lintian") {
		t.Skip("lintian is not installed (CI installs it and requires it)")
	}
	p := packages(t)
	t.Parallel()
	out, stderr, err := runErr("", nil, "lintian", "--fail-on", "error", "--display-info", p.deb)
	t.Logf("lintian %s:\n%s", filepath.Base(p.deb), out)
	if err != nil {
		t.Fatalf("lintian: %v (errors above)\n%s", err, stderr)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "E: ") {
			t.Errorf("lintian error: %s", line)
		}
		if strings.Contains(line, "unused-override") || strings.Contains(line, "mismatched-override") || unusedOverrides.MatchString(line) {
			t.Errorf("stale lintian override: %s", line)
		}
	}
}

// Installing the .deb into an empty root with dpkg --root leaves a runnable
// binary and the unit in place; removing and purging it cleans up.
func TestDebInstallIntoThrowawayRoot(t *testing.T) {
	if !pkgTool(t, "dpkg") {
		t.Skip("dpkg is not installed (CI requires it)")
	}
	p := packages(t)
	t.Parallel()

	root := t.TempDir()
	for _, d := range []string{"var/lib/dpkg/info", "var/lib/dpkg/updates", "var/lib/dpkg/triggers"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"var/lib/dpkg/status", "var/lib/dpkg/available"} {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// --root would chroot into root to run the maintainer scripts, and the
	// empty root has no /bin/sh. --force-script-chrootless runs them on the
	// host instead, with DPKG_ROOT=root: the scripts then touch nothing
	// outside root (no useradd, no systemctl), which is what this checks.
	// --no-triggers: the root has no trigger-interested packages.
	// --force-not-root: dpkg refuses to run as a user otherwise; it then
	// leaves files owned by that user, which is fine in a throwaway root.
	dpkg := func(args ...string) string {
		t.Helper()
		base := []string{"--root=" + root, "--force-script-chrootless", "--no-triggers", "--log=/dev/null"}
		if os.Geteuid() != 0 {
			base = append(base, "--force-not-root")
		}
		out, stderr, err := runErr("", nil, "dpkg", append(base, args...)...)
		if err != nil {
			t.Fatalf("dpkg %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr)
		}
		return out + stderr
	}

	out := dpkg("--install", p.deb)
	if !strings.Contains(out, "not creating the polyccm user") {
		t.Errorf("the preinst did not say it skipped the user in another root:\n%s", out)
	}
	if !strings.Contains(out, "polyccm is installed but not enabled") {
		t.Errorf("the postinst did not say how to enable polyccm:\n%s", out)
	}
	status := dpkg("--status", "polyccm")
	if !strings.Contains(status, "Status: install ok installed") {
		t.Fatalf("polyccm not installed:\n%s", status)
	}
	for _, conf := range []string{"/etc/polyccm/ccm.yaml", "/etc/default/polyccm"} {
		if !strings.Contains(status, "\n "+conf+" ") {
			t.Errorf("dpkg does not list %s as a conffile:\n%s", conf, status)
		}
	}
	for path := range debFiles {
		if _, err := os.Stat(filepath.Join(root, path)); err != nil {
			t.Errorf("after install: %v", err)
		}
	}
	pv := checkBinaryMatches(t, filepath.Join(root, "usr/bin/polyccm"), p.version)
	if !strings.Contains(status, "\nVersion: "+pv+"-1\n") {
		t.Errorf("installed Version is not %s-1:\n%s", pv, status)
	}

	// remove keeps the conffiles, purge removes them.
	dpkg("--remove", "polyccm")
	for _, path := range []string{"usr/bin/polyccm", "usr/lib/systemd/system/polyccm.service"} {
		if _, err := os.Stat(filepath.Join(root, path)); !os.IsNotExist(err) {
			t.Errorf("/%s still there after dpkg --remove (%v)", path, err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "etc/polyccm/ccm.yaml")); err != nil {
		t.Errorf("dpkg --remove removed the config: %v", err)
	}
	dpkg("--purge", "polyccm")
	for _, path := range []string{"etc/polyccm/ccm.yaml", "etc/default/polyccm"} {
		if _, err := os.Stat(filepath.Join(root, path)); !os.IsNotExist(err) {
			t.Errorf("/%s still there after dpkg --purge (%v)", path, err)
		}
	}
}
