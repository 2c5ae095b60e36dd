// Command mkpkg builds the polyccm .deb and .rpm from packaging/nfpm.yaml
// with nfpm used as a Go library, so building packages needs nothing but
// Go. `make package` runs it after building the binary:
//
//	go run ./packaging/mkpkg -bin bin/polyccm -version v1.2.3 -out dist
//
// It converts the version to dpkg/rpm form (packaging/pkgversion), reads
// which drivers the binary has from its build tags, and, when the binary can
// run here, checks that `polyccm version` reports that version and those
// drivers. File times come from SOURCE_DATE_EPOCH when it is set. Run it
// from the repository root: the paths in nfpm.yaml are relative to it.
package main

import (
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	_ "github.com/goreleaser/nfpm/v2/rpm" // registers the rpm packager
	"go.yaml.in/yaml/v3"

	"github.com/polyccm/polyccm/packaging/pkgversion"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mkpkg:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("mkpkg", flag.ContinueOnError)
	var (
		config     = fs.String("config", "packaging/nfpm.yaml", "nfpm configuration")
		bin        = fs.String("bin", "bin/polyccm", "the polyccm binary to package")
		version    = fs.String("version", "", "the version stamped into the binary (the Makefile's VERSION)")
		out        = fs.String("out", "dist", "output directory")
		formats    = fs.String("formats", "deb,rpm", "comma-separated package formats")
		maintainer = fs.String("maintainer", "polyccm developers <polyccm@users.noreply.github.com>", "the packages' Maintainer/Packager")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *version == "" {
		return errors.New("-version is required (make package passes the Makefile's VERSION)")
	}
	pkgVersion, err := pkgversion.FromGit(*version)
	if err != nil {
		return err
	}

	bi, err := buildinfo.ReadFile(*bin)
	if err != nil {
		return fmt.Errorf("reading the build information of %s: %w", *bin, err)
	}
	goos, goarch := setting(bi, "GOOS"), setting(bi, "GOARCH")
	if goos != "linux" {
		return fmt.Errorf("%s is built for %s, not linux", *bin, goos)
	}
	if setting(bi, "CGO_ENABLED") != "0" {
		return fmt.Errorf("%s was built with cgo: the packages promise a static binary (build it with make build)", *bin)
	}
	drivers, err := driversOf(bi)
	if err != nil {
		return err
	}
	if goarch == runtime.GOARCH {
		if err := checkBinary(*bin, *version, drivers); err != nil {
			return err
		}
	}

	vars := map[string]string{
		"PACKAGE_BIN":        *bin,
		"PACKAGE_VERSION":    pkgVersion,
		"PACKAGE_ARCH":       goarch, // nfpm maps it to amd64/x86_64 and so on
		"PACKAGE_DRIVERS":    strings.Join(drivers, ", "),
		"PACKAGE_MAINTAINER": *maintainer,
	}
	cfg, err := nfpm.ParseFileWithEnvMapping(*config, func(name string) string {
		if v, ok := vars[name]; ok {
			return v
		}
		// Signing passphrases (NFPM_PASSPHRASE, NFPM_DEB_PASSPHRASE, ...)
		// for a signing key configured in the file.
		if strings.HasPrefix(name, "NFPM_") {
			return os.Getenv(name)
		}
		return ""
	})
	if err != nil {
		return fmt.Errorf("%s: %w", *config, err)
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%s: %w", *config, err)
	}
	mtime, err := sourceDateEpoch()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	// Debian wants /usr/share/doc/polyccm/changelog.Debian.gz; an entry for
	// this version says what it was built from (the rpm gets it too).
	changelog, err := writeChangelog(pkgVersion+"-"+cfg.Release, *version, *maintainer, mtime)
	if err != nil {
		return err
	}
	defer os.Remove(changelog)
	cfg.Changelog = changelog
	for _, format := range strings.Split(*formats, ",") {
		path, err := build(&cfg, format, mtime, *out)
		if err != nil {
			return fmt.Errorf("%s: %w", format, err)
		}
		fmt.Println(path)
	}
	return nil
}

func build(cfg *nfpm.Config, format string, mtime time.Time, out string) (string, error) {
	packager, err := nfpm.Get(format)
	if err != nil {
		return "", err
	}
	info, err := cfg.Get(format)
	if err != nil {
		return "", err
	}
	info = nfpm.WithDefaults(info)
	if format == "rpm" {
		// The synopsis is the rpm's Summary, not part of its description.
		if _, rest, ok := strings.Cut(info.Description, "\n"); ok {
			info.Description = rest
		}
	}
	if !mtime.IsZero() {
		info.MTime = mtime
		// The rpm's build host is recorded in it; a fixed one keeps the
		// package's bytes independent of the machine.
		info.RPM.BuildHost = "reproducible"
	}
	info.Target = filepath.Join(out, packager.ConventionalFileName(info))
	f, err := os.Create(info.Target)
	if err != nil {
		return "", err
	}
	if err := packager.Package(info, f); err != nil {
		f.Close()
		os.Remove(info.Target)
		return "", err
	}
	return info.Target, f.Close()
}

func setting(bi *buildinfo.BuildInfo, key string) string {
	for _, s := range bi.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}

// driversOf reads the drivers a binary has from its build tags: with the
// "custom" tag exactly the drivers.NAME tags, without it every driver in
// this source tree (drivers/all imports them all).
func driversOf(bi *buildinfo.BuildInfo) ([]string, error) {
	tags := strings.Split(setting(bi, "-tags"), ",")
	var drivers []string
	if slices.Contains(tags, "custom") {
		for _, t := range tags {
			if name, ok := strings.CutPrefix(t, "drivers."); ok {
				drivers = append(drivers, name)
			}
		}
	} else {
		entries, err := os.ReadDir("drivers")
		if err != nil {
			return nil, fmt.Errorf("listing the drivers of an untagged build (run mkpkg from the repository root): %w", err)
		}
		for _, e := range entries {
			if e.IsDir() && e.Name() != "all" {
				drivers = append(drivers, e.Name())
			}
		}
	}
	if len(drivers) == 0 {
		return nil, errors.New("the binary has no cloud driver: build it with make build [DRIVERS=...]")
	}
	slices.Sort(drivers)
	return drivers, nil
}

// checkBinary runs `polyccm version --json` and compares it with what the
// package will say.
func checkBinary(bin, version string, drivers []string) error {
	cmd := exec.Command(bin, "version", "--json")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")} // no POLYCCM_* from outside
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("%s version --json: %w\n%s", bin, err, stderr.Bytes())
	}
	var v struct {
		Version string   `json:"version"`
		Drivers []string `json:"drivers"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		return fmt.Errorf("%s version --json: %w", bin, err)
	}
	if v.Version != version {
		return fmt.Errorf("%s reports version %s, not %s: rebuild it (make package builds it first)", bin, v.Version, version)
	}
	slices.Sort(v.Drivers)
	if !slices.Equal(v.Drivers, drivers) {
		return fmt.Errorf("%s has drivers %v, its build tags say %v", bin, v.Drivers, drivers)
	}
	return nil
}

// writeChangelog writes a one-entry changelog in nfpm's (chglog's) format
// to a temporary file and returns its path.
func writeChangelog(pkgVersion, version, maintainer string, date time.Time) (string, error) {
	if date.IsZero() {
		date = time.Now().UTC().Truncate(time.Second)
	}
	entries := []map[string]any{{
		"semver":   pkgVersion,
		"date":     date,
		"packager": maintainer,
		"deb":      map[string]any{"urgency": "medium", "distributions": []string{"unstable"}},
		"changes":  []map[string]string{{"note": "polyccm " + version + ", built from its source repository."}},
	}}
	b, err := yaml.Marshal(entries)
	if err != nil {
		return "", err
	}
	f, err := os.CreateTemp("", "polyccm-changelog-*.yaml")
	if err != nil {
		return "", err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), f.Close()
}

// sourceDateEpoch is $SOURCE_DATE_EPOCH as a time, or zero when unset.
func sourceDateEpoch() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Time{}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: not a number of seconds", s)
	}
	return time.Unix(n, 0).UTC(), nil
}
