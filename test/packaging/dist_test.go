package packaging

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/polyccm/polyccm/test/harness"
)

// makeDist runs make dist into dir and returns the files it made. umask and
// tmp vary what should not matter: the umask the files are read under and
// the temporary directory the binaries are built in.
func makeDist(t *testing.T, dir, umask, tmp string, extra ...string) map[string][]byte {
	t.Helper()
	args := append([]string{"-s", "dist", "DIST=" + dir}, extra...)
	cmd := exec.Command("sh", append([]string{"-c", "umask " + umask + ` && exec make "$@"`, "sh"}, args...)...)
	cmd.Dir = harness.RepoRoot()
	cmd.Env = env("TMPDIR=" + tmp)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("make %s: %s", strings.Join(args, " "), time.Since(start).Round(time.Second))
	files := map[string][]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		files[e.Name()] = readFile(t, filepath.Join(dir, e.Name()))
	}
	return files
}

// make dist twice gives the same bytes: linux/amd64 twice, the second time
// under another umask and TMPDIR, into another directory. Only one platform
// by default: a cold cross-build of linux/arm64 costs more CPU-minutes than
// all the other tests here; CCMTEST_DIST_PLATFORMS="linux/amd64 linux/arm64"
// makes the first run build (and check) those platforms too. The Go build
// cache is shared between the runs, which is fine: the compiler is
// deterministic, and what could differ between two builds (paths, times,
// VCS state, tar and gzip metadata) is in the linking and packing, which
// run both times.
func TestDistIsReproducible(t *testing.T) {
	t.Parallel() // with lintian, which mostly waits on one core
	root := harness.RepoRoot()
	version := strings.TrimSpace(run(t, root, "make", "-s", "version"))
	epoch, err := strconv.ParseInt(strings.TrimSpace(run(t, root, "git", "log", "-1", "--format=%ct")), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	tmpA, tmpB := filepath.Join(base, "tmp-a"), filepath.Join(base, "tmp-b")
	for _, d := range []string{tmpA, tmpB} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	platforms := strings.Fields(os.Getenv("CCMTEST_DIST_PLATFORMS"))
	if len(platforms) == 0 {
		platforms = []string{"linux/amd64"}
	}
	if !slices.Contains(platforms, "linux/amd64") {
		t.Fatalf("CCMTEST_DIST_PLATFORMS=%q: linux/amd64 must be among them, it is built twice", platforms)
	}
	all := makeDist(t, filepath.Join(base, "a"), "022", tmpA, "DIST_PLATFORMS="+strings.Join(platforms, " "))
	amd64 := "polyccm-" + version + "-linux-amd64.tar.gz"
	names := []string{"SHA256SUMS"}
	machines := map[string]elf.Machine{}
	for _, p := range platforms {
		arch, ok := map[string]elf.Machine{"linux/amd64": elf.EM_X86_64, "linux/arm64": elf.EM_AARCH64}[p]
		if !ok {
			t.Fatalf("CCMTEST_DIST_PLATFORMS: no ELF machine known for %s", p)
		}
		name := "polyccm-" + version + "-" + strings.ReplaceAll(p, "/", "-") + ".tar.gz"
		names = append(names, name)
		machines[name] = arch
	}
	slices.Sort(names)
	if got := slices.Sorted(maps.Keys(all)); !slices.Equal(got, names) {
		t.Fatalf("make dist made %v, want %v", got, names)
	}
	sums := checkSums(t, all)
	for name, machine := range machines {
		t.Run(name, func(t *testing.T) {
			bin := checkTarball(t, all[name], strings.TrimSuffix(name, ".tar.gz"), time.Unix(epoch, 0))
			checkStaticELF(t, bin, machine)
			if machine == elf.EM_X86_64 && runtime.GOARCH == "amd64" {
				path := filepath.Join(t.TempDir(), "polyccm")
				if err := os.WriteFile(path, bin, 0o755); err != nil {
					t.Fatal(err)
				}
				if v := binaryVersion(t, path); v.Version != version || v.Platform != "linux/amd64" {
					t.Errorf("the tarball's polyccm reports %s %s, want %s linux/amd64", v.Version, v.Platform, version)
				}
			}
		})
	}

	again := makeDist(t, filepath.Join(base, "b"), "077", tmpB, "DIST_PLATFORMS=linux/amd64")
	if !bytes.Equal(again[amd64], all[amd64]) {
		t.Errorf("%s differs between two make dist runs (%d and %d bytes)", amd64, len(all[amd64]), len(again[amd64]))
	}
	if got := checkSums(t, again); got[amd64] != sums[amd64] {
		t.Errorf("SHA256SUMS lists %s as %s, then as %s", amd64, sums[amd64], got[amd64])
	}
}

// checkSums checks that SHA256SUMS lists every tarball, sorted, in
// sha256sum's format, with the right digests, and returns them by name.
func checkSums(t *testing.T, files map[string][]byte) map[string]string {
	t.Helper()
	sums := map[string]string{}
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(files["SHA256SUMS"]))
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS line %q is not sha256sum's format", sc.Text())
		}
		names = append(names, name)
		sums[name] = sum
		content, ok := files[name]
		if !ok {
			t.Errorf("SHA256SUMS lists %s, which make dist did not make", name)
			continue
		}
		if got := sha256.Sum256(content); hex.EncodeToString(got[:]) != sum {
			t.Errorf("SHA256SUMS says %s is %s; it is %x", name, sum, got)
		}
	}
	for name := range files {
		if strings.HasSuffix(name, ".tar.gz") && sums[name] == "" {
			t.Errorf("SHA256SUMS does not list %s", name)
		}
	}
	if !slices.IsSorted(names) {
		t.Errorf("SHA256SUMS is not sorted by name: %v", names)
	}
	return sums
}

// checkTarball checks a release tarball's gzip and tar metadata and
// layout, and returns the binary in it.
func checkTarball(t *testing.T, tgz []byte, dir string, mtime time.Time) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		t.Fatal(err)
	}
	if !zr.ModTime.IsZero() || zr.Name != "" || zr.Comment != "" {
		t.Errorf("gzip header has time %v, name %q, comment %q; want none", zr.ModTime, zr.Name, zr.Comment)
	}
	want := []struct {
		name string
		mode int64
	}{
		{dir + "/", 0o755},
		{dir + "/README.md", 0o644},
		{dir + "/ccm.example.yaml", 0o644},
		{dir + "/polyccm", 0o755},
		{dir + "/polyccm.default", 0o644},
		{dir + "/polyccm.service", 0o644},
	}
	tr := tar.NewReader(zr)
	var bin []byte
	for i := 0; ; i++ {
		h, err := tr.Next()
		if err == io.EOF {
			if i != len(want) {
				t.Errorf("the tarball has %d entries, want %d", i, len(want))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if i >= len(want) || h.Name != want[i].name {
			t.Errorf("entry %d is %s, want the order %v", i, h.Name, want)
			continue
		}
		if h.Mode != want[i].mode || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || !h.ModTime.Equal(mtime) {
			t.Errorf("%s: mode %o owner %d/%d (%q/%q) time %v; want mode %o, 0/0 without names, the last commit's time %v",
				h.Name, h.Mode, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime, want[i].mode, mtime)
		}
		content, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		switch base := strings.TrimPrefix(h.Name, dir+"/"); base {
		case "polyccm":
			bin = content
		case "README.md", "ccm.example.yaml":
			if !bytes.Equal(content, readRepoFile(t, base)) {
				t.Errorf("%s differs from the repository's", h.Name)
			}
		case "polyccm.service", "polyccm.default":
			if !bytes.Equal(content, readRepoFile(t, "systemd/"+base)) {
				t.Errorf("%s differs from the repository's", h.Name)
			}
		}
	}
	return bin
}

func checkStaticELF(t *testing.T, bin []byte, machine elf.Machine) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("the binary is not ELF: %v", err)
	}
	defer f.Close()
	if f.Machine != machine {
		t.Errorf("the binary is for %v, want %v", f.Machine, machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary has a dynamic loader: not static")
		}
	}
}
