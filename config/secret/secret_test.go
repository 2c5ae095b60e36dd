package secret

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// value is what every leak check looks for.
const value = "s3cr3t-t0ken-value"

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRevealTrimsWhitespace(t *testing.T) {
	t.Setenv("SECRETTEST_ENV", "\t"+value+"\r\n")
	credDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(credDir, "tok"), []byte(value+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CREDENTIALS_DIRECTORY", credDir)
	cases := []struct {
		name string
		s    Secret
	}{
		{"file with trailing newline", Secret{File: writeTemp(t, "tok", value+"\n")}},
		{"env with CRLF and tab", Secret{Env: "SECRETTEST_ENV"}},
		{"credential", Secret{Credential: "tok"}},
		{"inline with spaces", Secret{Value: "  " + value + " "}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.s.Reveal()
			if err != nil {
				t.Fatalf("Reveal: %v", err)
			}
			if got != value {
				t.Errorf("Reveal = %q, want %q", got, value)
			}
		})
	}
}

func TestRevealRereadsRotatedFile(t *testing.T) {
	p := writeTemp(t, "tok", "first\n")
	s := Secret{File: p}
	if got, err := s.Reveal(); err != nil || got != "first" {
		t.Fatalf("Reveal = %q, %v; want first", got, err)
	}
	// Rotation replaces the file (as kubelet and systemd do) or rewrites it.
	tmp := p + ".new"
	if err := os.WriteFile(tmp, []byte("second\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Reveal(); err != nil || got != "second" {
		t.Fatalf("after rename, Reveal = %q, %v; want second", got, err)
	}
	if err := os.WriteFile(p, []byte("third"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Reveal(); err != nil || got != "third" {
		t.Fatalf("after rewrite, Reveal = %q, %v; want third", got, err)
	}
}

func TestRevealErrors(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("SECRETTEST_BLANK", "  \n")
	os.Unsetenv("SECRETTEST_UNSET")
	cases := []struct {
		name   string
		s      Secret
		credir string
		want   string
	}{
		{"unset", Secret{}, dir, "not set correctly"},
		{"two forms", Secret{Env: "X", Value: value}, dir, "not set correctly"},
		{"missing file", Secret{File: filepath.Join(dir, "nope")}, dir, filepath.Join(dir, "nope") + ": no such file"},
		{"blank file", Secret{File: writeTemp(t, "blank", "\n\n")}, dir, "is empty"},
		{"unset env", Secret{Env: "SECRETTEST_UNSET"}, dir, "SECRETTEST_UNSET is not set"},
		{"blank env", Secret{Env: "SECRETTEST_BLANK"}, dir, "environment variable SECRETTEST_BLANK is empty"},
		{"blank inline", Secret{Value: "   "}, dir, "inline value is empty"},
		{"credential without directory", Secret{Credential: "tok"}, "", "$CREDENTIALS_DIRECTORY is not set"},
		{"credential with a slash", Secret{Credential: "../tok"}, dir, "must not contain '/'"},
		{"missing credential", Secret{Credential: "tok"}, dir, "systemd credential tok: " + filepath.Join(dir, "tok")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("CREDENTIALS_DIRECTORY", c.credir)
			got, err := c.s.Reveal()
			if err == nil {
				t.Fatalf("Reveal = %q, want an error", got)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not contain %q", err, c.want)
			}
			if strings.Contains(err.Error(), value) {
				t.Errorf("error contains the value: %v", err)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	cases := []struct {
		name string
		s    Secret
		want string // "" means no error
	}{
		{"inline", Secret{Value: value}, ""},
		{"file", Secret{File: writeTemp(t, "tok", value)}, ""},
		{"none", Secret{}, "not set; give it as"},
		{"file and inline", Secret{File: "/x", Value: value}, "more than one way"},
		{"env and credential", Secret{Env: "A", Credential: "b"}, "more than one way"},
		{"unreadable", Secret{File: t.TempDir()}, "reading secret file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.s.Check()
			if c.want == "" {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check = %v, want an error containing %q", err, c.want)
			}
			if strings.Contains(err.Error(), value) {
				t.Errorf("Check error contains the value: %v", err)
			}
		})
	}
}

func TestSourceAndPredicates(t *testing.T) {
	cases := []struct {
		s              Secret
		source         string
		zero, isInline bool
	}{
		{Secret{}, "unset", true, false},
		{Secret{File: "/f"}, "file /f", false, false},
		{Secret{Env: "E"}, "environment variable E", false, false},
		{Secret{Credential: "c"}, "systemd credential c", false, false},
		{Secret{Value: value}, "inline value", false, true},
		{Secret{File: "/f", Value: value}, "unset", false, true},
	}
	for _, c := range cases {
		if got := c.s.Source(); got != c.source {
			t.Errorf("%v.Source() = %q, want %q", c.s, got, c.source)
		}
		if c.s.IsZero() != c.zero || c.s.IsInline() != c.isInline {
			t.Errorf("%v: IsZero %v IsInline %v, want %v %v", c.s, c.s.IsZero(), c.s.IsInline(), c.zero, c.isInline)
		}
	}
}

func TestNeverPrintsValue(t *testing.T) {
	s := Secret{Value: value}
	type holder struct {
		Token  Secret
		PToken *Secret
	}
	h := holder{Token: s, PToken: &s}

	printed := map[string]string{}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
		printed["Sprintf "+verb] = fmt.Sprintf(verb, s)
		printed["Sprintf "+verb+" of pointer"] = fmt.Sprintf(verb, &s)
		printed["Sprintf "+verb+" in a struct"] = fmt.Sprintf(verb, h)
	}
	printed["Sprint"] = fmt.Sprint(s)
	printed["String"] = s.String()
	printed["GoString"] = s.GoString()
	for name, v := range map[string]any{"value": s, "pointer": &s, "struct": h} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("json.Marshal %s: %v", name, err)
		}
		printed["json "+name] = string(b)
		y, err := yaml.Marshal(v)
		if err != nil {
			t.Fatalf("yaml.Marshal %s: %v", name, err)
		}
		printed["yaml "+name] = string(y)
	}
	for how, out := range printed {
		if strings.Contains(out, value) {
			t.Errorf("%s prints the value: %s", how, out)
		}
		if !strings.Contains(out, "inline") && !strings.Contains(out, "redacted") && !strings.Contains(how, "%x") {
			// Make sure it printed something meaningful, not an empty form.
			t.Errorf("%s says neither inline nor redacted: %s", how, out)
		}
	}
	// The JSON form keeps references, so logs still say where a secret is.
	b, _ := json.Marshal(Secret{File: "/run/tok"})
	if string(b) != `{"file":"/run/tok"}` {
		t.Errorf("json of a file secret = %s", b)
	}
	if b, _ := json.Marshal(s); string(b) != `{"value":"\u003credacted\u003e"}` {
		t.Errorf("json of an inline secret = %s", b)
	}
}

func TestFromMap(t *testing.T) {
	cases := []struct {
		name string
		in   map[string]any
		want Secret
		errs []string // substrings; nil means no error
	}{
		{"file", map[string]any{"file": "/f"}, Secret{File: "/f"}, nil},
		{"env", map[string]any{"env": "E"}, Secret{Env: "E"}, nil},
		{"credential", map[string]any{"credential": "c"}, Secret{Credential: "c"}, nil},
		{"value", map[string]any{"value": value}, Secret{Value: value}, nil},
		// Two forms decode; Check reports them with the key path.
		{"two forms", map[string]any{"file": "/f", "value": value}, Secret{File: "/f", Value: value}, nil},
		// Unknown sub-keys are the caller's key check's to report.
		{"unknown key", map[string]any{"fiel": "/f"}, Secret{}, nil},
		{"int value", map[string]any{"value": 123456789}, Secret{}, []string{"value: must be a string"}},
		{"two bad", map[string]any{"file": true, "env": 42.5}, Secret{}, []string{"file: must be a string", "env: must be a string"}},
		{"mapping value", map[string]any{"value": map[string]any{"k": value}}, Secret{}, []string{"value: must be a string"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := FromMap(c.in)
			if c.errs == nil {
				if err != nil {
					t.Fatalf("FromMap: %v", err)
				}
				if got != c.want {
					t.Errorf("FromMap = %#v, want %#v", got, c.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("FromMap = %#v, want an error", got)
			}
			if !got.IsZero() {
				t.Errorf("FromMap returned a partial secret %#v with its error", got)
			}
			for _, w := range c.errs {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			for _, leak := range []string{"123456789", "42.5", value} {
				if strings.Contains(err.Error(), leak) {
					t.Errorf("error echoes the value %q: %v", leak, err)
				}
			}
		})
	}
}

func TestRevealToken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) Secret {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return Secret{File: p}
	}
	if v, err := write("bom", "\ufeffdop_v1_abc\n").RevealToken(); err != nil || v != "dop_v1_abc" {
		t.Errorf("with a byte-order mark: %q, %v; want the token without it", v, err)
	}
	if v, err := write("crlf", "dop_v1_abc\r\n").RevealToken(); err != nil || v != "dop_v1_abc" {
		t.Errorf("with CRLF: %q, %v", v, err)
	}
	for name, data := range map[string]string{
		"two-lines": "dop_v1_abc\nold token: dop_v1_xyz\n",
		"space":     "dop_v1_abc dop_v1_xyz\n",
	} {
		_, err := write(name, data).RevealToken()
		if err == nil || strings.Contains(err.Error(), "dop_v1") {
			t.Errorf("%s: %v, want an error that names no token", name, err)
		}
	}
	// A JSON key may span lines: Reveal takes it as it is.
	if v, err := write("json", "{\n  \"type\": \"service_account\"\n}\n").Reveal(); err != nil || !strings.Contains(v, "\n") {
		t.Errorf("Reveal of a JSON key: %q, %v", v, err)
	}
	if _, err := (Secret{File: "/dev/zero"}).Reveal(); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("/dev/zero: %v", err)
	}
}

// A password may hold spaces (Keystone's may); a second line or a
// control character is still refused, naming no part of it.
func TestRevealLine(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) Secret {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return Secret{File: p}
	}
	if v, err := write("spaces", "correct horse battery\r\n").RevealLine(); err != nil || v != "correct horse battery" {
		t.Errorf("a password with spaces: %q, %v", v, err)
	}
	if err := write("spaces2", "correct horse battery\n").CheckLine(); err != nil {
		t.Errorf("CheckLine of a password with spaces: %v", err)
	}
	for name, data := range map[string]string{
		"two-lines": "correct horse\nold: battery staple\n",
		"control":   "correct\x00horse\n",
	} {
		_, err := write(name, data).RevealLine()
		if err == nil || strings.Contains(err.Error(), "horse") {
			t.Errorf("%s: %v, want an error that names no part of it", name, err)
		}
	}
}

func TestCheckJSON(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct{ data, want string }{
		"key":       {`{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n"}`, ""},
		"truncated": {`{"type": "service_account", "private_key": "-----BEGIN PRIV`, "is not a JSON document"},
		"not json":  {"ya29.an-access-token-not-a-key", "is not a JSON document"},
		"array":     {`["service_account"]`, "is not a JSON object"},
	} {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(tc.data), 0o600); err != nil {
			t.Fatal(err)
		}
		err := Secret{File: p}.CheckJSON()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		case err != nil && (strings.Contains(err.Error(), "ya29") || strings.Contains(err.Error(), "BEGIN")):
			t.Errorf("%s: the error quotes the content: %v", name, err)
		}
	}
}
