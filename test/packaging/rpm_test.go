package packaging

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// rpm's names for Go's architectures.
var rpmArch = map[string]string{"amd64": "x86_64", "arm64": "aarch64"}

func TestRPMContents(t *testing.T) {
	p := packages(t)
	r := readRPM(t, p.rpm)

	want := map[string]rpmFile{
		"/usr/bin/polyccm":                        {fileEntry{"-rwxr-xr-x", "root", "root"}, "", ""},
		"/usr/lib/systemd/system/polyccm.service": {fileEntry{"-rw-r--r--", "root", "root"}, "", ""},
		"/etc/polyccm":                            {fileEntry{"drwxr-xr-x", "root", "root"}, "", ""},
		"/etc/polyccm/ccm.yaml":                   {fileEntry{"-rw-r-----", "root", "polyccm"}, "cn", ""},
		"/etc/default/polyccm":                    {fileEntry{"-rw-r-----", "root", "polyccm"}, "cn", ""},
		"/usr/share/licenses/polyccm/copyright":   {fileEntry{"-rw-r--r--", "root", "root"}, "l", ""},
	}
	for path, w := range want {
		g, ok := r.files[path]
		switch {
		case !ok:
			t.Errorf("the .rpm lacks %s", path)
		case g.fileEntry != w.fileEntry || g.flags != w.flags:
			t.Errorf("%s is %s %s/%s flags %q, want %s %s/%s flags %q", path, g.mode, g.owner, g.group, g.flags, w.mode, w.owner, w.group, w.flags)
		}
	}
	for path := range r.files {
		if _, ok := want[path]; !ok {
			t.Errorf("the .rpm ships an unexpected %s", path)
		}
	}

	// The files' contents, by their SHA-256 digests (rpm's algorithm 8):
	// the repository's files, and the binary the .deb has (which runs, and
	// agrees with the packages on version and drivers).
	if r.digestAlgo != 8 {
		t.Errorf("file digest algorithm %d, want 8 (SHA-256)", r.digestAlgo)
	}
	bin := extractedBinary(t)
	pv := checkBinaryMatches(t, bin, p.version)
	wantDigests := map[string][]byte{"/usr/bin/polyccm": readFile(t, bin)}
	for dst, src := range fromRepo {
		wantDigests[dst] = readRepoFile(t, src)
	}
	for path, content := range wantDigests {
		if sum := sha256.Sum256(content); r.files[path].digest != hex.EncodeToString(sum[:]) {
			t.Errorf("%s in the .rpm has SHA-256 %q, want %x", path, r.files[path].digest, sum)
		}
	}
	if nvra, want := r.name+" "+r.version+" "+r.release+" "+r.arch, "polyccm "+pv+" 1 "+rpmArch[runtime.GOARCH]; nvra != want {
		t.Errorf("the .rpm is %q, want %q", nvra, want)
	}
	if base, want := filepath.Base(p.rpm), "polyccm-"+pv+"-1."+rpmArch[runtime.GOARCH]+".rpm"; base != want {
		t.Errorf("the .rpm is named %s, want %s", base, want)
	}
	for _, s := range []string{"preinstall", "postinstall", "preuninstall", "postuninstall"} {
		if r.scripts[s] == "" {
			t.Errorf("the .rpm has no %s scriptlet", s)
		}
	}
	if !strings.Contains(r.scripts["preinstall"], "useradd --system") {
		t.Errorf("the .rpm's preinstall does not create the polyccm user:\n%s", r.scripts["preinstall"])
	}
	if !strings.Contains(r.description, "Cloud drivers in this build: aws, gce.") {
		t.Errorf("the .rpm's description does not name the drivers:\n%s", r.description)
	}

	// rpm itself reads the same package.
	if !pkgTool(t, "rpm") {
		return
	}
	nvra := strings.TrimSpace(run(t, "", "rpm", "-qp", "--queryformat", "%{NAME} %{VERSION} %{RELEASE} %{ARCH}", p.rpm))
	if want := r.name + " " + r.version + " " + r.release + " " + r.arch; nvra != want {
		t.Errorf("rpm reads %q, the Go reader %q", nvra, want)
	}
	out := run(t, "", "rpm", "-qp", "--queryformat", `[%{FILEMODES:perms} %{FILEUSERNAME} %{FILEGROUPNAME} %{FILEFLAGS:fflags}| %{FILENAMES}\n]`, p.rpm)
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		meta, path, ok := strings.Cut(line, "| ")
		f := strings.Fields(meta)
		if !ok || len(f) < 3 {
			t.Fatalf("unexpected rpm line %q", line)
		}
		flags := ""
		if len(f) > 3 {
			flags = f[3]
		}
		if g := r.files[path]; g.fileEntry != (fileEntry{f[0], f[1], f[2]}) || g.flags != flags {
			t.Errorf("rpm reads %s as %q, the Go reader as %+v", path, meta, g)
		}
	}
	scripts := run(t, "", "rpm", "-qp", "--scripts", p.rpm)
	for _, s := range []string{"preinstall", "postinstall", "preuninstall", "postuninstall"} {
		if !strings.Contains(scripts, s+" scriptlet (using /bin/sh)") {
			t.Errorf("rpm finds no %s scriptlet:\n%s", s, scripts)
		}
	}
}

// extractedBinary is /usr/bin/polyccm from the .deb.
func extractedBinary(t *testing.T) string {
	t.Helper()
	d := readDeb(t, packages(t).deb)
	path := filepath.Join(t.TempDir(), "polyccm")
	if err := os.WriteFile(path, d.files["/usr/bin/polyccm"].data, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}
