package packaging

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// rpm's names for Go's architectures.
var rpmArch = map[string]string{"amd64": "x86_64", "arm64": "aarch64"}

func TestRPMContents(t *testing.T) {
	requireTools(t, "rpm")
	p := packages(t)

	// rpm -qp --queryformat: one line per file: mode, owner, group, flags
	// ("c" config, "n" noreplace, "l" license), path.
	out := run(t, "", "rpm", "-qp", "--queryformat",
		`[%{FILEMODES:perms} %{FILEUSERNAME} %{FILEGROUPNAME} %{FILEFLAGS:fflags}| %{FILENAMES}\n]`, p.rpm)
	type rpmEntry struct {
		fileEntry
		flags string
	}
	want := map[string]rpmEntry{
		"/usr/bin/polyccm":                        {fileEntry{"-rwxr-xr-x", "root", "root"}, ""},
		"/usr/lib/systemd/system/polyccm.service": {fileEntry{"-rw-r--r--", "root", "root"}, ""},
		"/etc/polyccm":                            {fileEntry{"drwxr-xr-x", "root", "root"}, ""},
		"/etc/polyccm/ccm.yaml":                   {fileEntry{"-rw-r-----", "root", "polyccm"}, "cn"},
		"/etc/default/polyccm":                    {fileEntry{"-rw-r--r--", "root", "root"}, "cn"},
		"/usr/share/licenses/polyccm/copyright":   {fileEntry{"-rw-r--r--", "root", "root"}, "l"},
	}
	got := map[string]rpmEntry{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		meta, path, ok := strings.Cut(line, "| ")
		f := strings.Fields(meta)
		if !ok || len(f) < 3 {
			t.Fatalf("unexpected rpm line %q", line)
		}
		e := rpmEntry{fileEntry: fileEntry{f[0], f[1], f[2]}}
		if len(f) > 3 {
			e.flags = f[3]
		}
		got[path] = e
	}
	for path, w := range want {
		g, ok := got[path]
		switch {
		case !ok:
			t.Errorf("the .rpm lacks %s", path)
		case g != w:
			t.Errorf("%s is %s %s/%s flags %q, want %s %s/%s flags %q", path, g.mode, g.owner, g.group, g.flags, w.mode, w.owner, w.group, w.flags)
		}
	}
	for path := range got {
		if _, ok := want[path]; !ok {
			t.Errorf("the .rpm ships an unexpected %s", path)
		}
	}

	// rpm -qlp, the plain listing, agrees.
	list := strings.Fields(run(t, "", "rpm", "-qlp", p.rpm))
	if len(list) != len(want) {
		t.Errorf("rpm -qlp lists %d files, want %d: %v", len(list), len(want), list)
	}

	// The files' contents, by their SHA-256 digests: the repository's
	// files, and the binary the .deb has (which runs, and agrees with the
	// packages on version and drivers).
	bin := extractedBinary(t)
	pv := checkBinaryMatches(t, bin, p.version)
	digests := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(run(t, "", "rpm", "-qp", "--queryformat",
		`%{FILEDIGESTALGO}\n[%{FILEDIGESTS} %{FILENAMES}\n]`, p.rpm)), "\n")[1:] {
		if sum, path, ok := strings.Cut(line, " "); ok && sum != "" {
			digests[path] = sum
		}
	}
	wantDigests := map[string][]byte{"/usr/bin/polyccm": readFile(t, bin)}
	for dst, src := range fromRepo {
		wantDigests[dst] = readRepoFile(t, src)
	}
	for path, content := range wantDigests {
		if sum := sha256.Sum256(content); digests[path] != hex.EncodeToString(sum[:]) {
			t.Errorf("%s in the .rpm has SHA-256 %q, want %x (rpm digests: %v)", path, digests[path], sum, digests)
		}
	}
	nvra := strings.TrimSpace(run(t, "", "rpm", "-qp", "--queryformat", "%{NAME} %{VERSION} %{RELEASE} %{ARCH}", p.rpm))
	if want := "polyccm " + pv + " 1 " + rpmArch[runtime.GOARCH]; nvra != want {
		t.Errorf("the .rpm is %q, want %q", nvra, want)
	}
	if base, want := filepath.Base(p.rpm), "polyccm-"+pv+"-1."+rpmArch[runtime.GOARCH]+".rpm"; base != want {
		t.Errorf("the .rpm is named %s, want %s", base, want)
	}

	scripts := run(t, "", "rpm", "-qp", "--scripts", p.rpm)
	for _, s := range []string{"preinstall", "postinstall", "preuninstall", "postuninstall"} {
		if !strings.Contains(scripts, s+" scriptlet (using /bin/sh)") {
			t.Errorf("the .rpm has no %s scriptlet:\n%s", s, scripts)
		}
	}
	if !strings.Contains(scripts, "useradd --system") {
		t.Errorf("the .rpm's scriptlets do not create the polyccm user:\n%s", scripts)
	}
	if desc := run(t, "", "rpm", "-qp", "--queryformat", "%{DESCRIPTION}", p.rpm); !strings.Contains(desc, "Cloud drivers in this build: aws, gce.") {
		t.Errorf("the .rpm's description does not name the drivers:\n%s", desc)
	}
}

// extractedBinary is /usr/bin/polyccm from the .deb.
func extractedBinary(t *testing.T) string {
	t.Helper()
	requireTools(t, "dpkg-deb")
	dir := t.TempDir()
	run(t, "", "dpkg-deb", "-x", packages(t).deb, dir)
	return filepath.Join(dir, "usr/bin/polyccm")
}
