package packaging

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"debug/elf"
	"encoding/hex"
	"encoding/pem"
	"io"
	"io/fs"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/polyccm/polyccm/config"
	"github.com/polyccm/polyccm/test/harness"
)

// The image is built with one driver: quicker, and the test sees DRIVERS
// reach the binary in the image.
const imageDrivers = "aws"

// imageFacts is what the image must say, each taken from where make image
// takes it (git, go.mod, LICENSE, the Makefile), not written down here.
type imageFacts struct {
	version, tag, commit, date, source, licenses, repo string
	epoch                                              time.Time
	platforms                                          []string
}

func imageFactsOf(t *testing.T) imageFacts {
	t.Helper()
	root := harness.RepoRoot()
	git := func(args ...string) string { return strings.TrimSpace(run(t, root, "git", args...)) }
	f := imageFacts{
		version: strings.TrimSpace(run(t, root, "make", "-s", "version")),
		commit:  git("rev-parse", "HEAD"),
		date:    git("log", "-1", "--format=%cI"),
	}
	m := regexp.MustCompile(`(?m)^IMAGE\s*\?=\s*(\S+)$`).FindSubmatch(readRepoFile(t, "Makefile"))
	if m == nil {
		t.Fatal("the Makefile sets no default IMAGE ?= ...")
	}
	f.repo = string(m[1])
	f.tag = strings.ReplaceAll(f.version, "+", "-")
	epoch, err := strconv.ParseInt(git("log", "-1", "--format=%ct"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	f.epoch = time.Unix(epoch, 0)
	module, _, _ := strings.Cut(string(readRepoFile(t, "go.mod")), "\n")
	f.source = "https://" + strings.TrimPrefix(module, "module ")
	if lic := string(readRepoFile(t, "LICENSE")); strings.Contains(lic, "Apache License") && strings.Contains(lic, "Version 2.0") {
		f.licenses = "Apache-2.0"
	} else {
		t.Fatal("LICENSE is not the Apache License 2.0: update this test and mkimage's licenses label")
	}
	f.platforms = strings.Fields(os.Getenv("CCMTEST_IMAGE_PLATFORMS"))
	if len(f.platforms) == 0 {
		f.platforms = []string{"linux/amd64", "linux/arm64"}
	}
	slices.Sort(f.platforms)
	return f
}

// makeImage runs make image into dist under a umask and TMPDIR, as
// makeDist does, and returns what it printed by key ("digest", "image",
// "pushed").
func makeImage(t *testing.T, f imageFacts, dist, umask, tmp string, extra ...string) map[string]string {
	t.Helper()
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-s", "image", "DIST=" + dist, "DRIVERS=" + imageDrivers,
		"IMAGE_PLATFORMS=" + strings.Join(f.platforms, " ")}, extra...)
	cmd := exec.Command("sh", append([]string{"-c", "umask " + umask + ` && exec make "$@"`, "sh"}, args...)...)
	cmd.Dir = harness.RepoRoot()
	// The caller's IMAGE or PUSH must not change what is built or where it goes.
	for _, kv := range env("TMPDIR=" + tmp) {
		if k, _, _ := strings.Cut(kv, "="); k != "IMAGE" && k != "PUSH" {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("make %s: %s\n%s", strings.Join(args, " "), time.Since(start).Round(time.Second), out)
	printed := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok {
			printed[k] = v
		}
	}
	return printed
}

// make image builds a multi-platform image index of the static binary with
// the build's labels, reproducibly, and pushes it to a registry.
func TestImage(t *testing.T) {
	t.Parallel() // with lintian and make dist, which wait on other things than these builds
	f := imageFactsOf(t)
	if !strings.Contains(f.version, "+") {
		t.Logf("version %s has no '+': the tag's character replacement is not exercised", f.version)
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	pushTo := strings.TrimPrefix(srv.URL, "http://") + "/polyccm"

	base := t.TempDir()
	a := filepath.Join(base, "a")
	printedA := makeImage(t, f, a, "022", filepath.Join(base, "tmp-a"))
	idx := checkLayout(t, f, filepath.Join(a, "image"))
	digest, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if want := f.repo + ":" + f.tag; printedA["image"] != want || printedA["digest"] != digest.String() {
		t.Errorf("make image printed image %q digest %q; the layout holds %s %s", printedA["image"], printedA["digest"], want, digest)
	}
	archive := "polyccm-" + f.version + "-image.tar"
	tarA := readFile(t, filepath.Join(a, archive))
	checkArchive(t, tarA, filepath.Join(a, "image"), f.epoch)

	// Again, into another directory, under another umask and TMPDIR, and
	// pushed: the same digest and the same archive bytes.
	b := filepath.Join(base, "b")
	printedB := makeImage(t, f, b, "077", filepath.Join(base, "tmp-b"), "PUSH="+pushTo)
	if printedB["digest"] != digest.String() {
		t.Errorf("the index digest is %s, then %s: make image is not reproducible", digest, printedB["digest"])
	}
	if !bytes.Equal(readFile(t, filepath.Join(b, archive)), tarA) {
		t.Errorf("%s differs between two make image runs", archive)
	}
	if want := pushTo + ":" + f.tag + "@" + digest.String(); printedB["pushed"] != want {
		t.Errorf("make image PUSH=%s printed pushed %q, want %q", pushTo, printedB["pushed"], want)
	}
	checkPulled(t, pushTo+":"+f.tag, idx)

	t.Run("stale binary refused", func(t *testing.T) { checkStaleRefused(t, f, b) })
}

// checkLayout checks the OCI layout make image wrote and returns its image
// index.
func checkLayout(t *testing.T, f imageFacts, dir string) v1.ImageIndex {
	t.Helper()
	checkBlobNames(t, dir)
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Manifests) != 1 {
		t.Fatalf("%s/index.json lists %d entries, want the one image index", dir, len(tm.Manifests))
	}
	d := tm.Manifests[0]
	if d.MediaType != types.OCIImageIndex {
		t.Errorf("index.json lists a %s, want an OCI image index", d.MediaType)
	}
	if got := d.Annotations["org.opencontainers.image.ref.name"]; got != f.tag {
		t.Errorf("index.json names the image %q, want the tag %q", got, f.tag)
	}
	if got := d.Annotations["io.containerd.image.name"]; got != f.repo+":"+f.tag {
		t.Errorf("index.json's io.containerd.image.name is %q, want %s:%s", got, f.repo, f.tag)
	}
	idx, err := top.ImageIndex(d.Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if im.MediaType != types.OCIImageIndex {
		t.Errorf("the index is a %s, want %s", im.MediaType, types.OCIImageIndex)
	}
	checkLabels(t, f, "the index's annotations", im.Annotations)

	var platforms []string
	for _, m := range im.Manifests {
		if m.Platform == nil {
			t.Fatalf("index entry %s has no platform", m.Digest)
		}
		platforms = append(platforms, m.Platform.String())
		if m.MediaType != types.OCIManifestSchema1 || m.ArtifactType != "" {
			t.Errorf("%s: a %s with artifactType %q, want an OCI image manifest", m.Platform, m.MediaType, m.ArtifactType)
		}
		img, err := idx.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(m.Platform.String(), func(t *testing.T) { checkImage(t, f, img, *m.Platform) })
	}
	if !slices.Equal(platforms, f.platforms) {
		t.Errorf("the index has platforms %v in this order, want %v", platforms, f.platforms)
	}
	return idx
}

// checkBlobNames checks every blob is named by its SHA-256, so that the
// digests read back are the content's.
func checkBlobNames(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "blobs", "sha256"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		sum := sha256.Sum256(readFile(t, filepath.Join(dir, "blobs", "sha256", e.Name())))
		if hex.EncodeToString(sum[:]) != e.Name() {
			t.Errorf("blob %s has SHA-256 %x", e.Name(), sum)
		}
	}
}

func checkLabels(t *testing.T, f imageFacts, what string, got map[string]string) {
	t.Helper()
	want := map[string]string{
		"org.opencontainers.image.version":  f.version,
		"org.opencontainers.image.revision": f.commit,
		"org.opencontainers.image.source":   f.source,
		"org.opencontainers.image.licenses": f.licenses,
		"org.opencontainers.image.title":    "polyccm",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s is %q, want %q", what, k, got[k], v)
		}
	}
	created, err := time.Parse(time.RFC3339, got["org.opencontainers.image.created"])
	if err != nil || !created.Equal(f.epoch) {
		t.Errorf("%s: created %q, want the commit's date %s", what, got["org.opencontainers.image.created"], f.date)
	}
	if d := got["org.opencontainers.image.description"]; !strings.Contains(d, "drivers in this image: "+strings.ReplaceAll(imageDrivers, ",", ", ")+".") {
		t.Errorf("%s: the description %q does not name the drivers %s", what, d, imageDrivers)
	}
}

// checkImage checks one platform's image: manifest, config and layer, and
// runs the binary in it where this machine can.
func checkImage(t *testing.T, f imageFacts, img v1.Image, platform v1.Platform) {
	mf, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if mf.MediaType != types.OCIManifestSchema1 || mf.Config.MediaType != types.OCIConfigJSON {
		t.Errorf("manifest %s with config %s, want OCI's", mf.MediaType, mf.Config.MediaType)
	}
	checkLabels(t, f, "the manifest's annotations", mf.Annotations)
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != platform.OS || cfg.Architecture != platform.Architecture {
		t.Errorf("the config says %s/%s, the index %s", cfg.OS, cfg.Architecture, platform)
	}
	if !cfg.Created.Equal(f.epoch) {
		t.Errorf("the config's created %v, want the commit's date %s", cfg.Created.Time, f.date)
	}
	c := cfg.Config
	if !slices.Equal(c.Entrypoint, []string{"/usr/bin/polyccm"}) || !slices.Equal(c.Cmd, []string{"run", "--config", config.DefaultPath}) {
		t.Errorf("entrypoint %q cmd %q, want [/usr/bin/polyccm] [run --config %s]", c.Entrypoint, c.Cmd, config.DefaultPath)
	}
	if c.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", c.User)
	}
	checkLabels(t, f, "the config's labels", c.Labels)

	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 || len(cfg.RootFS.DiffIDs) != 1 {
		t.Fatalf("%d layers, %d diff IDs; want one of each (no base image)", len(layers), len(cfg.RootFS.DiffIDs))
	}
	if mt, _ := layers[0].MediaType(); mt != types.OCILayer {
		t.Errorf("the layer is a %s, want %s", mt, types.OCILayer)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := checkLayer(t, rc, f.epoch)

	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[platform.Architecture]
	checkStaticELF(t, files["usr/bin/polyccm"], machine)
	if !strings.Contains(string(files["etc/passwd"]), ":65532:65532:") || !strings.Contains(string(files["etc/group"]), ":65532:") {
		t.Errorf("/etc/passwd and /etc/group do not name user and group 65532:\n%s%s", files["etc/passwd"], files["etc/group"])
	}
	checkCABundle(t, files["etc/ssl/certs/ca-certificates.crt"])

	if platform.Architecture != runtime.GOARCH || runtime.GOOS != "linux" {
		t.Logf("not running the %s binary on %s/%s", platform, runtime.GOOS, runtime.GOARCH)
		return
	}
	bin := filepath.Join(t.TempDir(), "polyccm")
	if err := os.WriteFile(bin, files["usr/bin/polyccm"], 0o755); err != nil {
		t.Fatal(err)
	}
	v := binaryVersion(t, bin)
	if v.Version != f.version || v.Commit != f.commit || v.Platform != platform.String() {
		t.Errorf("the image's polyccm reports %s %s %s, want %s %s %s", v.Version, v.Commit, v.Platform, f.version, f.commit, platform)
	}
	if got, want := run(t, t.TempDir(), bin, "drivers"), strings.ReplaceAll(imageDrivers, ",", "\n")+"\n"; got != want {
		t.Errorf("polyccm drivers in the image says %q, want %q (DRIVERS=%s)", got, want, imageDrivers)
	}
}

// checkLayer checks the layer's entries, in order, with their modes,
// owners and times, and returns the files' contents by name.
func checkLayer(t *testing.T, r io.Reader, mtime time.Time) map[string][]byte {
	t.Helper()
	want := []struct {
		name string
		mode int64
	}{
		{"etc/", 0o755},
		{"etc/group", 0o644},
		{"etc/passwd", 0o644},
		{"etc/ssl/", 0o755},
		{"etc/ssl/certs/", 0o755},
		{"etc/ssl/certs/ca-certificates.crt", 0o644},
		{"tmp/", 0o1777},
		{"usr/", 0o755},
		{"usr/bin/", 0o755},
		{"usr/bin/polyccm", 0o755},
	}
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for i := 0; ; i++ {
		h, err := tr.Next()
		if err == io.EOF {
			if i != len(want) {
				t.Errorf("the layer has %d entries, want %d", i, len(want))
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
		if h.Typeflag == tar.TypeReg {
			if files[h.Name], err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
	return files
}

// checkCABundle checks the bundle is PEM certificates, enough of them to be
// a root store, and that it holds no other kind of block.
func checkCABundle(t *testing.T, b []byte) {
	t.Helper()
	n := 0
	for rest := b; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			if len(bytes.TrimSpace(rest)) != 0 {
				t.Errorf("the CA bundle has %d bytes that are not PEM", len(rest))
			}
			break
		}
		if _, err := x509.ParseCertificate(blk.Bytes); blk.Type != "CERTIFICATE" || err != nil {
			t.Errorf("the CA bundle's block %d: %s, %v", n, blk.Type, err)
		}
		n++
	}
	if n < 50 {
		t.Errorf("the CA bundle has %d certificates: too few for the cloud APIs' TLS", n)
	}
}

// checkArchive checks the tar holds exactly the layout's files, in order,
// with fixed modes, owners and times.
func checkArchive(t *testing.T, archive []byte, dir string, mtime time.Time) {
	t.Helper()
	want := map[string][]byte{}
	var order []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			rel += "/"
		} else {
			want[rel] = readFile(t, p)
		}
		order = append(order, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, h.Name)
		mode := map[bool]int64{true: 0o755, false: 0o644}[h.Typeflag == tar.TypeDir]
		if h.Mode != mode || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || !h.ModTime.Equal(mtime) {
			t.Errorf("archive entry %s: mode %o owner %d/%d (%q/%q) time %v", h.Name, h.Mode, h.Uid, h.Gid, h.Uname, h.Gname, h.ModTime)
		}
		if content, ok := want[h.Name]; ok {
			if b, _ := io.ReadAll(tr); !bytes.Equal(b, content) {
				t.Errorf("archive entry %s differs from the layout's file", h.Name)
			}
		}
	}
	if !slices.Equal(got, order) {
		t.Errorf("the archive holds %v, want the layout's files in order %v", got, order)
	}
	if !slices.Contains(got, "index.json") || !slices.Contains(got, "oci-layout") {
		t.Errorf("the archive has no index.json or oci-layout: %v", got)
	}
}

// checkPulled reads ref back from the registry: the same index, manifests,
// configs and layer bytes as the layout's.
func checkPulled(t *testing.T, ref string, local v1.ImageIndex) {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	remoteIdx, err := remote.Index(r)
	if err != nil {
		t.Fatalf("pulling %s: %v", ref, err)
	}
	rawRemote, err := remoteIdx.RawManifest()
	if err != nil {
		t.Fatal(err)
	}
	rawLocal, err := local.RawManifest()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rawRemote, rawLocal) {
		t.Fatalf("the registry's index for %s differs from the layout's:\n%s\n%s", ref, rawRemote, rawLocal)
	}
	im, err := local.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range im.Manifests {
		li, err := local.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		ri, err := remoteIdx.Image(m.Digest)
		if err != nil {
			t.Fatalf("pulling %s's %s image: %v", ref, m.Platform, err)
		}
		for what, get := range map[string]func(v1.Image) ([]byte, error){
			"manifest": func(i v1.Image) ([]byte, error) { return i.RawManifest() },
			"config":   func(i v1.Image) ([]byte, error) { return i.RawConfigFile() },
		} {
			l, err1 := get(li)
			r, err2 := get(ri)
			if err1 != nil || err2 != nil || !bytes.Equal(l, r) {
				t.Errorf("%s: the registry's %s differs from the layout's (%v, %v)", m.Platform, what, err1, err2)
			}
		}
		layers, err := ri.Layers()
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range layers {
			want, _ := l.Digest()
			rc, err := l.Compressed()
			if err != nil {
				t.Fatal(err)
			}
			h := sha256.New()
			_, err = io.Copy(h, rc)
			rc.Close()
			if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); err != nil || got != want.String() {
				t.Errorf("%s: the registry's layer %s has digest %s (%v)", m.Platform, want, got, err)
			}
		}
	}
	t.Logf("pulled %s: %d platforms, the layout's bytes", ref, len(im.Manifests))
}

// checkStaleRefused checks mkimage refuses a binary stamped with another
// version than the one it is told, which would label it wrongly.
func checkStaleRefused(t *testing.T, f imageFacts, dist string) {
	bin := filepath.Join(t.TempDir(), "polyccm")
	p, err := layout.FromPath(filepath.Join(dist, "image"))
	if err != nil {
		t.Fatal(err)
	}
	top, _ := p.ImageIndex()
	tm, _ := top.IndexManifest()
	idx, _ := top.ImageIndex(tm.Manifests[0].Digest)
	im, _ := idx.IndexManifest()
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	layers, _ := img.Layers()
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := checkLayer(t, rc, f.epoch)
	if err := os.WriteFile(bin, files["usr/bin/polyccm"], 0o755); err != nil {
		t.Fatal(err)
	}
	other := "v0.0.0-not-" + strings.ReplaceAll(f.tag, ".", "-")
	stdout, stderr, err := runErr(harness.RepoRoot(), []string{"SOURCE_DATE_EPOCH=" + strconv.FormatInt(f.epoch.Unix(), 10)},
		"go", "run", "./packaging/mkimage", "-version", other, "-revision", f.commit, "-out", t.TempDir(), bin)
	if err == nil {
		t.Fatalf("mkimage packed a binary of %s as %s:\n%s", f.version, other, stdout)
	}
	if !strings.Contains(stderr, "not stamped with this version") {
		t.Errorf("mkimage failed, but not for the version: %s", stderr)
	}
}
