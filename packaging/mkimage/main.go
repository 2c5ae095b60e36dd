// Command mkimage packs polyccm's static binaries into a multi-platform OCI
// image, without a container daemon. `make image` cross-builds the binaries
// and runs it:
//
//	go run ./packaging/mkimage -version v1.2.3 -revision HASH -date 2026-01-31T12:00:00Z \
//	    -image ghcr.io/polyccm/polyccm -out dist [-push REGISTRY/NAME] linux-amd64/polyccm linux-arm64/polyccm
//
// It writes OUT/image/, an OCI image layout whose index.json names one
// image index (tag: the version with "+" made "-") with an image per binary,
// and OUT/polyccm-VERSION-image.tar, the same layout as one tar file
// (skopeo's oci-archive:, podman load, docker load), then prints the
// reference and the index digest. With -push it also pushes the index to
// REGISTRY/NAME:TAG, with the credentials of `docker login`.
//
// Each image has no base: one layer holding the binary at /usr/bin/polyccm,
// /etc/passwd and /etc/group naming root and nonroot (65532), /tmp, and a
// CA bundle for the cloud APIs' TLS (an empty image has none). It runs as
// 65532:65532.
//
// The same inputs give the same digests: layer entries in a fixed order,
// every file time SOURCE_DATE_EPOCH (required), owner 0 without names,
// fixed modes, a gzip header without name or time, the config's created
// time the commit's date (-date), and the CA bundle from a Go module pinned
// in go.mod rather than the build machine's. Like mkdist, it refuses
// binaries built without -trimpath, with VCS stamping or with cgo, and
// binaries stamped with another version or commit.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"

	"github.com/polyccm/polyccm/packaging/reproducible"
)

const (
	// The image's user: distroless's nonroot, which Kubernetes manifests
	// and policies commonly expect.
	uid = 65532
	gid = 65532

	binPath = "/usr/bin/polyccm"
	caPath  = "/etc/ssl/certs/ca-certificates.crt" // the first place Go looks on Linux
)

// defaultCmd is what `docker run IMAGE` runs: the packaged config path.
var defaultCmd = []string{"run", "--config", "/etc/polyccm/ccm.yaml"}

// invalidTag matches what an OCI tag may not contain.
var invalidTag = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

type options struct {
	version, revision, source, image, out, push string
	created, mtime                              time.Time
	bins                                        []string
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

func parse(args []string) (options, error) {
	var o options
	var date string
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	fs.StringVar(&o.version, "version", "", "the version stamped into the binaries (the Makefile's VERSION)")
	fs.StringVar(&o.revision, "revision", "", "the commit stamped into the binaries (the Makefile's COMMIT)")
	fs.StringVar(&date, "date", "", "the commit's date, RFC 3339 (the Makefile's DATE); default SOURCE_DATE_EPOCH")
	fs.StringVar(&o.source, "source", "https://github.com/polyccm/polyccm", "the source repository's URL, for the labels")
	fs.StringVar(&o.image, "image", "ghcr.io/polyccm/polyccm", "the image's repository, for its name in the layout")
	fs.StringVar(&o.out, "out", "dist", "output directory")
	fs.StringVar(&o.push, "push", "", "also push the index to this repository (REGISTRY/NAME), tagged with the version")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.version == "" || strings.ContainsAny(o.version, "/ \t\n") {
		return o, fmt.Errorf("-version %q: want the Makefile's VERSION", o.version)
	}
	if o.revision == "" {
		return o, errors.New("-revision: want the Makefile's COMMIT")
	}
	o.bins = fs.Args()
	if len(o.bins) == 0 {
		return o, errors.New("no binaries given")
	}
	var err error
	if o.mtime, err = reproducible.SourceDateEpoch("make image"); err != nil {
		return o, err
	}
	o.created = o.mtime
	if date != "" {
		t, err := time.Parse(time.RFC3339, date)
		if err != nil {
			return o, fmt.Errorf("-date: %w", err)
		}
		o.created = t.UTC()
	}
	for _, r := range []string{o.image, o.push} {
		if r == "" {
			continue
		}
		// A repository, not a reference: the tag is always the version's.
		if _, err := name.NewRepository(r, name.StrictValidation); err != nil {
			return o, fmt.Errorf("%q is not a repository REGISTRY/NAME (the tag is the version's): %w", r, err)
		}
	}
	return o, nil
}

// tag is the image tag for a version: "+" (build metadata in
// v0.1.0-dev+abc1234) and anything else a tag may not hold become "-".
func tag(version string) string {
	t := invalidTag.ReplaceAllString(version, "-")
	if len(t) > 128 {
		t = t[:128]
	}
	return t
}

func run(args []string) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	t := tag(o.version)
	ref := o.image + ":" + t

	var adds []mutate.IndexAddendum
	var drivers []string
	for _, bin := range o.bins {
		info, err := checkBinary(bin, o.version, o.revision)
		if err != nil {
			return err
		}
		if drivers != nil && !slices.Equal(drivers, info.drivers) {
			return fmt.Errorf("%s has drivers %v, the other binaries %v", bin, info.drivers, drivers)
		}
		drivers = info.drivers
		for _, a := range adds {
			if a.Descriptor.Platform.OS == info.os && a.Descriptor.Platform.Architecture == info.arch {
				return fmt.Errorf("two binaries for %s/%s", info.os, info.arch)
			}
		}
		img, err := buildImage(o, bin, info)
		if err != nil {
			return fmt.Errorf("%s: %w", bin, err)
		}
		adds = append(adds, mutate.IndexAddendum{
			Add:        imageOnly{img},
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: info.os, Architecture: info.arch}},
		})
	}
	// The index lists the platforms in a fixed order, whatever the
	// arguments' order.
	slices.SortFunc(adds, func(a, b mutate.IndexAddendum) int {
		return strings.Compare(a.Descriptor.Platform.String(), b.Descriptor.Platform.String())
	})
	idx := mutate.IndexMediaType(mutate.AppendManifests(empty.Index, adds...), types.OCIImageIndex)
	idx = mutate.Annotations(idx, labels(o, drivers)).(v1.ImageIndex)
	digest, err := idx.Digest()
	if err != nil {
		return err
	}

	dir := filepath.Join(o.out, "image")
	archive := filepath.Join(o.out, "polyccm-"+o.version+"-image.tar")
	if err := writeLayout(dir, idx, map[string]string{
		"org.opencontainers.image.ref.name": t,   // the OCI layout's name for it
		"io.containerd.image.name":          ref, // what docker/ctr load name it
	}); err != nil {
		return err
	}
	if err := writeArchive(archive, dir, o.mtime); err != nil {
		return err
	}
	fmt.Println(dir)
	fmt.Println(archive)
	fmt.Println("image:", ref)
	fmt.Println("digest:", digest)

	if o.push != "" {
		pushed, err := push(o.push+":"+t, idx)
		if err != nil {
			return err
		}
		fmt.Println("pushed:", pushed)
	}
	return nil
}

// imageOnly describes an image in the index as docker and buildx do.
// go-containerregistry would add an artifactType (the config's media
// type), which is meant for artifacts, not runnable images.
type imageOnly struct{ v1.Image }

func (i imageOnly) Descriptor() (*v1.Descriptor, error) {
	d, err := partial.Descriptor(i.Image)
	if err != nil {
		return nil, err
	}
	d.ArtifactType = ""
	return d, nil
}

// binaryInfo is what mkimage needs to know of a binary.
type binaryInfo struct {
	os, arch string
	drivers  []string
}

// checkBinary reads a binary's platform and drivers after checking it was
// built the reproducible way and stamped with this version and commit (a
// stale binary would otherwise be labelled with the wrong version).
func checkBinary(bin, version, revision string) (binaryInfo, error) {
	s, err := reproducible.BuildSettings(bin)
	if err != nil {
		return binaryInfo{}, err
	}
	if s["GOOS"] != "linux" {
		return binaryInfo{}, fmt.Errorf("%s is for %s/%s: images are for linux", bin, s["GOOS"], s["GOARCH"])
	}
	// -trimpath keeps -ldflags out of the build information, so look for
	// the stamped strings themselves.
	content, err := os.ReadFile(bin)
	if err != nil {
		return binaryInfo{}, err
	}
	for _, want := range []string{version, revision} {
		if !bytes.Contains(content, []byte(want)) {
			return binaryInfo{}, fmt.Errorf("%s does not hold %q: not stamped with this version and commit (stale?): rebuild it", bin, want)
		}
	}
	drivers, err := driversOf(s["-tags"])
	if err != nil {
		return binaryInfo{}, fmt.Errorf("%s: %w", bin, err)
	}
	return binaryInfo{os: s["GOOS"], arch: s["GOARCH"], drivers: drivers}, nil
}

// driversOf reads the drivers from the build tags, as mkpkg does: with
// "custom" exactly the drivers.NAME tags, without it every driver in this
// source tree.
func driversOf(tags string) ([]string, error) {
	var drivers []string
	if slices.Contains(strings.Split(tags, ","), "custom") {
		for _, t := range strings.Split(tags, ",") {
			if n, ok := strings.CutPrefix(t, "drivers."); ok {
				drivers = append(drivers, n)
			}
		}
	} else {
		entries, err := os.ReadDir("drivers")
		if err != nil {
			return nil, fmt.Errorf("listing the drivers of an untagged build (run mkimage from the repository root): %w", err)
		}
		for _, e := range entries {
			if e.IsDir() && e.Name() != "all" {
				drivers = append(drivers, e.Name())
			}
		}
	}
	if len(drivers) == 0 {
		return nil, errors.New("no cloud driver in the binary")
	}
	slices.Sort(drivers)
	return drivers, nil
}

// labels are the org.opencontainers.image.* labels of the configs, and the
// annotations of the manifests and the index.
func labels(o options, drivers []string) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "polyccm",
		"org.opencontainers.image.description": "polyccm, one Kubernetes cloud-controller-manager for several clouds. Cloud drivers in this image: " + strings.Join(drivers, ", ") + ".",
		"org.opencontainers.image.version":     o.version,
		"org.opencontainers.image.revision":    o.revision,
		"org.opencontainers.image.created":     o.created.Format(time.RFC3339),
		"org.opencontainers.image.source":      o.source,
		"org.opencontainers.image.url":         o.source,
		"org.opencontainers.image.licenses":    "Apache-2.0", // LICENSE
	}
}

func buildImage(o options, bin string, info binaryInfo) (v1.Image, error) {
	layerBytes, err := layerTar(bin, o.mtime)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: o.created}
	img, err := mutate.Append(empty.Image, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{Created: created, CreatedBy: "make image (packaging/mkimage)", Comment: "polyccm " + o.version},
	})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Created = info.os, info.arch, created
	cfg.Config = v1.Config{
		User:       strconv.Itoa(uid) + ":" + strconv.Itoa(gid),
		Entrypoint: []string{binPath},
		Cmd:        slices.Clone(defaultCmd),
		Env:        []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		WorkingDir: "/",
		Labels:     labels(o, info.drivers),
	}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return nil, err
	}
	img = mutate.ConfigMediaType(mutate.MediaType(img, types.OCIManifestSchema1), types.OCIConfigJSON)
	return mutate.Annotations(img, labels(o, info.drivers)).(v1.Image), nil
}

// layerTar returns the layer, gzipped: its entries in a fixed order, each
// owned by 0:0 (no names) at mtime.
func layerTar(bin string, mtime time.Time) ([]byte, error) {
	ca, err := caBundle()
	if err != nil {
		return nil, err
	}
	files := []struct {
		name    string
		mode    int64
		content []byte // nil for a directory
		src     string // or the file to copy
	}{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, content: []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", gid))},
		{name: "etc/passwd", mode: 0o644, content: []byte(fmt.Sprintf(
			"root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/nonexistent:/sbin/nologin\n", uid, gid))},
		{name: "etc/ssl/", mode: 0o755},
		{name: "etc/ssl/certs/", mode: 0o755},
		{name: strings.TrimPrefix(caPath, "/"), mode: 0o644, content: ca},
		// Writable by all, sticky, as on any Linux: for libraries that
		// assume a /tmp (the manifests' read-only root hides it anyway).
		{name: "tmp/", mode: 0o1777},
		{name: "usr/", mode: 0o755},
		{name: "usr/bin/", mode: 0o755},
		{name: strings.TrimPrefix(binPath, "/"), mode: 0o755, src: bin},
	}
	var buf bytes.Buffer
	// No name, no time, the same OS byte everywhere (see mkdist).
	zw, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(zw)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, ModTime: mtime, Format: tar.FormatPAX, Typeflag: tar.TypeReg}
		var r io.Reader = bytes.NewReader(f.content)
		switch {
		case strings.HasSuffix(f.name, "/"):
			h.Typeflag = tar.TypeDir
		case f.src != "":
			src, err := os.Open(f.src)
			if err != nil {
				return nil, err
			}
			defer src.Close()
			st, err := src.Stat()
			if err != nil {
				return nil, err
			}
			h.Size, r = st.Size(), src
		default:
			h.Size = int64(len(f.content))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := io.Copy(tw, r); err != nil {
				return nil, fmt.Errorf("%s: %w", f.name, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// caBundle is Mozilla's root store as golang.org/x/crypto/x509roots/fallback
// ships it, in PEM. Roots with a constraint (a distrust-after date) are left
// out: a PEM file cannot carry the constraint, and trusting them without it
// would trust more than Mozilla does.
func caBundle() ([]byte, error) {
	var b bytes.Buffer
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		if err := pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate}); err != nil {
			return nil, err
		}
	}
	if b.Len() == 0 {
		return nil, errors.New("the CA bundle is empty")
	}
	return b.Bytes(), nil
}

// writeLayout replaces dir with an OCI image layout holding idx, named by
// the annotations. It is written next to dir and renamed, so a failed run
// leaves no half-written layout.
func writeLayout(dir string, idx v1.ImageIndex, annotations map[string]string) (err error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".mkimage-")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	p, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(annotations)); err != nil {
		return err
	}
	// go-containerregistry writes files with mode 0777 less the umask:
	// make them what the archive says, whatever the umask.
	if err := filepath.WalkDir(tmp, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chmod(path, map[bool]os.FileMode{true: 0o755, false: 0o644}[d.IsDir()])
	}); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	return os.Rename(tmp, dir)
}

// writeArchive writes the layout dir as one tar: entries in lexical order,
// owner 0 without names, modes 0755/0644, every time mtime.
func writeArchive(path, dir string, mtime time.Time) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".mkimage-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	tw := tar.NewWriter(tmp)
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error { // lexical order
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: mtime, Format: tar.FormatPAX, Typeflag: tar.TypeReg}
		if d.IsDir() {
			h.Name, h.Mode, h.Typeflag = h.Name+"/", 0o755, tar.TypeDir
			return tw.WriteHeader(h)
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		h.Size = st.Size()
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// push pushes idx as ref and returns ref@digest after checking that the
// registry serves that digest for the tag.
func push(ref string, idx v1.ImageIndex) (string, error) {
	tagged, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	opts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}
	if err := remote.WriteIndex(tagged, idx, opts...); err != nil {
		return "", fmt.Errorf("pushing %s: %w", ref, err)
	}
	want, err := idx.Digest()
	if err != nil {
		return "", err
	}
	desc, err := remote.Head(tagged, opts...)
	if err != nil {
		return "", fmt.Errorf("reading back %s: %w", ref, err)
	}
	if desc.Digest != want {
		return "", fmt.Errorf("%s is %s in the registry after the push, want %s", ref, desc.Digest, want)
	}
	return ref + "@" + want.String(), nil
}
