package pkgversion

import "testing"

func TestFromGit(t *testing.T) {
	for in, want := range map[string]string{
		"v1.2.3":                   "1.2.3",
		"1.2.3":                    "1.2.3",
		"v1.2.3-rc.1":              "1.2.3~rc.1",
		"v1.2.3-rc-1":              "1.2.3~rc.1",
		"v1.2.3-4-gabc1234":        "1.2.3+4.gabc1234",
		"v1.2.3-4-gabc1234-dirty":  "1.2.3+4.gabc1234.dirty",
		"v1.2.3-dirty":             "1.2.3+0.dirty",
		"v1.2.3-rc.1-4-gabc1234":   "1.2.3~rc.1+4.gabc1234",
		"v0.1.0-dev+abc1234":       "0.1.0~dev+abc1234",
		"v0.1.0-dev+abc1234.dirty": "0.1.0~dev+abc1234.dirty",
		"v0.1.0-dev+unknown":       "0.1.0~dev+unknown",
		"v10.20.30+build-7":        "10.20.30+build.7",
	} {
		got, err := FromGit(in)
		if err != nil || got != want {
			t.Errorf("FromGit(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestFromGitRejects(t *testing.T) {
	for _, in := range []string{"", "v1", "v1.2", "main", "v1.2.3_4", "v01.2.3", "v1.2.3-", "v1.2.3 x"} {
		if got, err := FromGit(in); err == nil {
			t.Errorf("FromGit(%q) = %q, want an error", in, got)
		}
	}
}
