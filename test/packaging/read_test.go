package packaging

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/blakesmith/ar"
	rpmutils "github.com/sassoftware/go-rpmutils"
)

// The packages are read in Go, so that `make test` checks them on any
// machine: a .deb is an ar archive of debian-binary, control.tar.gz and
// data.tar.gz (nfpm writes gzip, as packaging/nfpm.yaml says); an .rpm is
// read with go-rpmutils. Debian's and rpm's own tools check them again
// where they are installed (pkgTool).

// pkgFile is one entry of a package: its mode as ls prints it, owner,
// group, and content (regular files).
type pkgFile struct {
	fileEntry
	data []byte
}

// deb is a .deb as dpkg sees it.
type deb struct {
	control   map[string]string // the control file's fields
	conffiles []string
	scripts   map[string][]byte // preinst, postinst, ...
	files     map[string]pkgFile
}

func readDeb(t *testing.T, file string) deb {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := deb{control: map[string]string{}, scripts: map[string][]byte{}, files: map[string]pkgFile{}}
	r := ar.NewReader(f)
	var members []string
	for {
		h, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: not an ar archive: %v", file, err)
		}
		name := strings.TrimSuffix(h.Name, "/")
		members = append(members, name)
		switch name {
		case "debian-binary":
			b, _ := io.ReadAll(r)
			if string(b) != "2.0\n" {
				t.Errorf("debian-binary is %q, want 2.0", b)
			}
		case "control.tar.gz":
			readTarGz(t, r, func(h *tar.Header, b []byte) {
				switch p := path.Clean(h.Name); p {
				case "control":
					d.control = controlFields(t, b)
				case "conffiles":
					d.conffiles = strings.Fields(string(b))
				case "preinst", "postinst", "prerm", "postrm":
					d.scripts[p] = b
				}
			})
		case "data.tar.gz":
			readTarGz(t, r, func(h *tar.Header, b []byte) {
				p := "/" + strings.TrimPrefix(path.Clean(h.Name), "./")
				if p == "/." {
					return
				}
				d.files[p] = pkgFile{fileEntry{h.FileInfo().Mode().String(), h.Uname, h.Gname}, b}
			})
		}
	}
	if strings.Join(members, " ") != "debian-binary control.tar.gz data.tar.gz" {
		t.Errorf("%s holds %v, want debian-binary, control.tar.gz and data.tar.gz in that order", file, members)
	}
	return d
}

func readTarGz(t *testing.T, r io.Reader, each func(*tar.Header, []byte)) {
	t.Helper()
	gz, err := gzip.NewReader(r)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		each(h, b)
	}
}

// controlFields parses a deb822 control file; continuation lines join
// their field with a newline.
func controlFields(t *testing.T, b []byte) map[string]string {
	t.Helper()
	out := map[string]string{}
	last := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, " ") && last != "" {
			out[last] += "\n" + strings.TrimPrefix(line, " ")
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			t.Fatalf("control line %q", line)
		}
		last = k
		out[k] = strings.TrimSpace(v)
	}
	return out
}

// rpmPkg is an .rpm as rpm sees it.
type rpmPkg struct {
	name, version, release, arch, description string
	scripts                                   map[string]string // preinstall, ...
	files                                     map[string]rpmFile
	digestAlgo                                int
}

type rpmFile struct {
	fileEntry
	flags  string // "c" config, "n" noreplace, "l" license, as rpm's fflags
	digest string
}

func readRPM(t *testing.T, file string) rpmPkg {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := rpmutils.ReadRpm(f)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	h := r.Header
	str := func(tag int) string {
		s, _ := h.GetString(tag)
		return s
	}
	p := rpmPkg{
		name: str(rpmutils.NAME), version: str(rpmutils.VERSION), release: str(rpmutils.RELEASE),
		arch: str(rpmutils.ARCH), description: str(rpmutils.DESCRIPTION),
		scripts: map[string]string{}, files: map[string]rpmFile{},
	}
	for name, tag := range map[string]int{"preinstall": rpmutils.PREIN, "postinstall": rpmutils.POSTIN, "preuninstall": rpmutils.PREUN, "postuninstall": rpmutils.POSTUN} {
		if s := str(tag); s != "" {
			p.scripts[name] = s
		}
	}
	// One value for the package; rpmpack (nfpm) writes it once per file.
	if algos, err := h.GetUint32s(rpmutils.FILEDIGESTALGO); err == nil && len(algos) > 0 && !slices.ContainsFunc(algos, func(a uint32) bool { return a != algos[0] }) {
		p.digestAlgo = int(algos[0])
	}
	files, err := h.GetFiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, fi := range files {
		flags := ""
		for _, fl := range []struct {
			bit int
			c   string
		}{{rpmutils.RPMFILE_CONFIG, "c"}, {rpmutils.RPMFILE_NOREPLACE, "n"}, {rpmutils.RPMFILE_LICENSE, "l"}} {
			if fi.Flags()&fl.bit != 0 {
				flags += fl.c
			}
		}
		p.files[fi.Name()] = rpmFile{fileEntry{rpmMode(fi.Mode()), fi.UserName(), fi.GroupName()}, flags, fi.Digest()}
	}
	return p
}

// rpmMode prints an rpm file mode (with its type bits) as ls does.
func rpmMode(m int) string {
	mode := fs.FileMode(m & 0o777)
	if m&0o170000 == 0o040000 {
		mode |= fs.ModeDir
	}
	return mode.String()
}
