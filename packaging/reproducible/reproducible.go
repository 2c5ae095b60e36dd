// Package reproducible holds what mkdist and mkimage both check so that the
// same commit gives the same bytes: the time every file carries, and that
// a binary was built without anything that varies between build hosts.
package reproducible

import (
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// SourceDateEpoch is $SOURCE_DATE_EPOCH, the time of every file written;
// target names the make target that sets it, for the error.
func SourceDateEpoch(target string) (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Time{}, errors.New("SOURCE_DATE_EPOCH is not set: " + target + " sets it to the last commit's time")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: not a number of seconds", s)
	}
	return time.Unix(n, 0).UTC(), nil
}

// BuildSettings returns a binary's build settings after checking it was
// built the reproducible way: -trimpath, no VCS stamping, no cgo, and a
// GOOS/GOARCH recorded.
func BuildSettings(bin string) (map[string]string, error) {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("reading the build information of %s: %w", bin, err)
	}
	s := map[string]string{}
	for _, kv := range bi.Settings {
		s[kv.Key] = kv.Value
	}
	switch {
	case s["-trimpath"] != "true":
		return nil, fmt.Errorf("%s was built without -trimpath: its bytes depend on the build directory", bin)
	case s["vcs"] != "":
		return nil, fmt.Errorf("%s was built with VCS stamping (-buildvcs=false is needed): its bytes depend on the checkout's state and time", bin)
	case s["CGO_ENABLED"] != "0":
		return nil, fmt.Errorf("%s was built with cgo: not static, and its bytes depend on the C toolchain", bin)
	case s["GOOS"] == "" || s["GOARCH"] == "":
		return nil, fmt.Errorf("%s: no GOOS/GOARCH in its build information", bin)
	}
	return s, nil
}
