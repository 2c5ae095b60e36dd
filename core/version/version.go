// Package version holds the build identity stamped into the binary by the
// Makefile's -ldflags, so `polyccm version`, logs and metrics agree on it.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set at link time with -X; the defaults describe an unstamped `go build`.
var (
	Version = "v0.0.0-dev"
	Commit  = ""
	Date    = ""
)

// Info is the build identity.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	BuildDate string `json:"buildDate"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the build identity. When the commit was not stamped it falls
// back to the VCS information the Go toolchain records, if any.
func Get() Info {
	commit := Commit
	if commit == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					commit = s.Value
				}
			}
		}
	}
	if commit == "" {
		commit = "unknown"
	}
	return Info{
		Version:   Version,
		Commit:    commit,
		BuildDate: Date,
		GoVersion: runtime.Version(),
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
	}
}

// UserAgent is what polyccm sends to cloud APIs, so cloud-side logs name us.
func UserAgent() string {
	return fmt.Sprintf("polyccm/%s (%s)", Version, runtime.GOOS+"/"+runtime.GOARCH)
}
