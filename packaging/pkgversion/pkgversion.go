// Package pkgversion turns the version the Makefile stamps into polyccm
// (`git describe --tags --dirty`, or v0.1.0-dev+COMMIT[.dirty] before the
// first tag) into a version dpkg and rpm order correctly.
//
// dpkg and rpm sort "~" before anything, even the end of the version, and a
// version that goes on ("+4...") after one that ends. So:
//
//	v1.2.3                      1.2.3                     a release
//	v1.2.3-rc.1                 1.2.3~rc.1                before 1.2.3
//	v1.2.3-4-gabc1234           1.2.3+4.gabc1234          after 1.2.3, before 1.2.4
//	v1.2.3-4-gabc1234-dirty     1.2.3+4.gabc1234.dirty    uncommitted changes
//	v1.2.3-dirty                1.2.3+0.dirty             before 1.2.3+1.gHASH
//	v0.1.0-dev+abc1234          0.1.0~dev+abc1234         before the first tag
//	v0.1.0-dev+abc1234.dirty    0.1.0~dev+abc1234.dirty
//
// The result is valid both as a Debian upstream version (the package adds
// "-REVISION") and as an RPM Version (which may not contain "-").
package pkgversion

import (
	"fmt"
	"regexp"
	"strings"
)

var (
	// MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD], semver's shape.
	semverRE = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:-([0-9A-Za-z.-]+))?(?:\+([0-9A-Za-z.-]+))?$`)
	// git describe's "-N-gHASH" (N commits after the tag).
	describeRE = regexp.MustCompile(`-([0-9]+)-g([0-9a-f]{4,40})$`)
)

// FromGit converts a polyccm version ("v1.2.3-4-gabc1234-dirty") into a
// dpkg/rpm version ("1.2.3+4.gabc1234.dirty"). It fails on anything that
// does not start with vMAJOR.MINOR.PATCH: a package version that sorts
// wrongly is worse than no package.
func FromGit(v string) (string, error) {
	s := strings.TrimPrefix(v, "v")
	var after []string // parts that make it newer than the tag: "+..."

	dirty := false
	if t, ok := strings.CutSuffix(s, "-dirty"); ok {
		s, dirty = t, true
	}
	if m := describeRE.FindStringSubmatchIndex(s); m != nil {
		after = append(after, s[m[2]:m[3]], "g"+s[m[4]:m[5]])
		s = s[:m[0]]
	} else if dirty {
		// Changes on top of the tag itself: 0 commits after it, so that it
		// sorts before the next commit's 1.gHASH.
		after = append(after, "0")
	}
	m := semverRE.FindStringSubmatch(s)
	if m == nil {
		return "", fmt.Errorf("version %q: want vMAJOR.MINOR.PATCH, optionally followed by -PRERELEASE, +BUILD, git describe's -N-gHASH and -dirty", v)
	}
	out := m[1] + "." + m[2] + "." + m[3]
	if pre := m[4]; pre != "" {
		// A prerelease sorts before its release: "~". "-" is not allowed in
		// an RPM version, and in a Debian version it would start the revision.
		out += "~" + strings.ReplaceAll(pre, "-", ".")
	}
	var build []string
	if b := m[5]; b != "" {
		build = append(build, strings.ReplaceAll(b, "-", "."))
	}
	build = append(build, after...)
	if dirty {
		build = append(build, "dirty")
	}
	if len(build) > 0 {
		out += "+" + strings.Join(build, ".")
	}
	return out, nil
}
