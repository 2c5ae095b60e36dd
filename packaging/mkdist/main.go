// Command mkdist packs polyccm release binaries into reproducible tarballs
// and writes their SHA256SUMS. `make dist` builds the binaries and runs it:
//
//	go run ./packaging/mkdist -version v1.2.3 -out dist linux-amd64/polyccm linux-arm64/polyccm
//
// Each binary becomes DIR/polyccm-VERSION-GOOS-GOARCH.tar.gz holding
// polyccm-VERSION-GOOS-GOARCH/ with the binary, the example config, the
// systemd unit and its environment file, and the README (paths relative to
// the repository root, where mkdist runs). The platform is read from the
// binary's build information.
//
// The same inputs give the same bytes: entries in a fixed order, every time
// SOURCE_DATE_EPOCH (required), owner and group 0 with no names, modes 0755
// and 0644 whatever the umask, and a gzip header without name or time.
// mkdist refuses binaries built without -trimpath, with VCS stamping or
// with cgo, which would make the binaries themselves differ.
package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/polyccm/polyccm/packaging/reproducible"
)

// extras are the files next to the binary in every tarball: name in the
// tarball, path in the repository.
var extras = [][2]string{
	{"README.md", "README.md"},
	{"ccm.example.yaml", "ccm.example.yaml"},
	{"polyccm.default", "systemd/polyccm.default"},
	{"polyccm.service", "systemd/polyccm.service"},
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mkdist:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("mkdist", flag.ContinueOnError)
	version := fs.String("version", "", "the version stamped into the binaries (the Makefile's VERSION)")
	out := fs.String("out", "dist", "output directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *version == "" || strings.ContainsAny(*version, "/ \t\n") {
		return fmt.Errorf("-version %q: want the Makefile's VERSION", *version)
	}
	if fs.NArg() == 0 {
		return errors.New("no binaries given")
	}
	mtime, err := reproducible.SourceDateEpoch("make dist")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}

	sums := map[string]string{}
	for _, bin := range fs.Args() {
		platform, err := checkBinary(bin)
		if err != nil {
			return err
		}
		base := "polyccm-" + *version + "-" + platform
		name := base + ".tar.gz"
		if _, dup := sums[name]; dup {
			return fmt.Errorf("two binaries for %s", platform)
		}
		sum, err := writeTarball(filepath.Join(*out, name), base, bin, mtime)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		sums[name] = sum
		fmt.Println(filepath.Join(*out, name))
	}

	// sha256sum -c reads this format: "HASH  NAME", here sorted by name.
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(sums)) {
		fmt.Fprintf(&b, "%s  %s\n", sums[name], name)
	}
	path := filepath.Join(*out, "SHA256SUMS")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return err
	}
	if err := os.Chmod(path, 0o644); err != nil { // whatever the umask, like the tarballs
		return err
	}
	fmt.Println(path)
	return nil
}

// checkBinary returns the binary's GOOS-GOARCH after checking it was built
// the reproducible way.
func checkBinary(bin string) (string, error) {
	settings, err := reproducible.BuildSettings(bin)
	if err != nil {
		return "", err
	}
	return settings["GOOS"] + "-" + settings["GOARCH"], nil
}

// writeTarball writes path, a gzipped tar of base/ holding bin and the
// extras, and returns its SHA-256.
func writeTarball(path, base, bin string, mtime time.Time) (sum string, err error) {
	type entry struct {
		name, src string
		mode      int64
	}
	entries := []entry{{"polyccm", bin, 0o755}}
	for _, e := range extras {
		entries = append(entries, entry{e[0], e[1], 0o644})
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.name, b.name) })

	tmp, err := os.CreateTemp(filepath.Dir(path), ".mkdist-*")
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	h := sha256.New()
	// No name, no modification time and the same OS byte everywhere: Go's
	// gzip writes exactly the header fields set here. (BestCompression
	// would take three times as long for 0.5% less.)
	zw, err := gzip.NewWriterLevel(io.MultiWriter(tmp, h), gzip.DefaultCompression)
	if err != nil {
		return "", err
	}
	tw := tar.NewWriter(zw)
	hdr := func(name string, typ byte, mode, size int64) *tar.Header {
		return &tar.Header{
			Typeflag: typ,
			Name:     name,
			Mode:     mode,
			Size:     size,
			ModTime:  mtime,
			Format:   tar.FormatPAX,
		}
	}
	if err := tw.WriteHeader(hdr(base+"/", tar.TypeDir, 0o755, 0)); err != nil {
		return "", err
	}
	for _, e := range entries {
		if err := addFile(tw, hdr(base+"/"+e.name, tar.TypeReg, e.mode, 0), e.src); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func addFile(tw *tar.Writer, hdr *tar.Header, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	hdr.Size = st.Size()
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if _, err := io.Copy(tw, f); err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	return nil
}
