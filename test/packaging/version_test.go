package packaging

import (
	"strings"
	"testing"

	debversion "github.com/knqyf263/go-deb-version"
	rpmutils "github.com/sassoftware/go-rpmutils"

	"github.com/polyccm/polyccm/packaging/pkgversion"
)

// The package versions made from polyccm's git versions sort, for dpkg and
// for rpm themselves, in the order the commits came: a prerelease before
// its release, commits after a tag after it, a dev build before the first
// release.
func TestPackageVersionsSortLikeTheCommits(t *testing.T) {
	dpkg, rpm := pkgTool(t, "dpkg"), pkgTool(t, "rpm")
	ordered := []string{
		"v0.1.0-dev+abc1234",
		"v0.1.0-dev+abc1234.dirty",
		"v0.1.0-rc.1",
		"v0.1.0-rc.1-2-gabc1234",
		"v0.1.0-rc.2",
		"v0.1.0",
		"v0.1.0-dirty",
		"v0.1.0-1-gabc1234",
		"v0.1.0-1-gabc1234-dirty",
		"v0.1.0-12-gdef5678",
		"v0.1.1",
		"v0.2.0",
		"v1.0.0",
	}
	var pkg []string
	for _, v := range ordered {
		p, err := pkgversion.FromGit(v)
		if err != nil {
			t.Fatal(err)
		}
		pkg = append(pkg, p+"-1") // with the packages' revision/release
	}
	for i := 0; i+1 < len(pkg); i++ {
		a, b := pkg[i], pkg[i+1]
		// rpm compares version and release separately; the release is the
		// same, so comparing the versions is enough.
		va, vb := strings.TrimSuffix(a, "-1"), strings.TrimSuffix(b, "-1")
		// Debian's and rpm's ordering rules, in Go.
		da, errA := debversion.NewVersion(a)
		db, errB := debversion.NewVersion(b)
		if errA != nil || errB != nil || !da.LessThan(db) {
			t.Errorf("Debian order: %s (%s) does not sort before %s (%s) (%v, %v)", a, ordered[i], b, ordered[i+1], errA, errB)
		}
		if rpmutils.Vercmp(va, vb) != -1 {
			t.Errorf("rpm order: %s (%s) does not sort before %s (%s)", va, ordered[i], vb, ordered[i+1])
		}
		// And the tools themselves, where installed.
		if dpkg {
			if _, _, err := runErr("", nil, "dpkg", "--compare-versions", a, "lt", b); err != nil {
				t.Errorf("dpkg: %s (%s) does not sort before %s (%s)", a, ordered[i], b, ordered[i+1])
			}
		}
		if rpm {
			out := run(t, "", "rpm", "--eval", `%{lua:print(rpm.vercmp("`+va+`", "`+vb+`"))}`)
			if strings.TrimSpace(out) != "-1" {
				t.Errorf("rpm: %s (%s) does not sort before %s (%s): vercmp says %s", va, ordered[i], vb, ordered[i+1], strings.TrimSpace(out))
			}
		}
	}
}
