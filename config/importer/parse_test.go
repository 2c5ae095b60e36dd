package importer

import (
	"reflect"
	"strings"
	"testing"
)

// gcfg's syntax (gopkg.in/gcfg.v1, which cloud-provider-aws and
// cloud-provider-gcp read their cloud configs with).
func TestParseINI(t *testing.T) {
	text := "; comment\n# comment\n[Global]\n" +
		"Zone = us-east-1a ; trailing comment\n" +
		"Quoted = \"a ; b # c \\\"q\\\" \\\\ \"\n" +
		"Spaced =   x   y  \n" +
		"Bare\n" +
		"Empty =\n" +
		"Cont = first \\\n  second\n" +
		"[ServiceOverride \"my \\\"1\\\"\"]\n" +
		"URL = https://x\n"
	got, err := parseINI(text)
	if err != nil {
		t.Fatal(err)
	}
	type kv struct{ sec, sub, name, val string }
	var flat []kv
	for _, e := range got {
		v := e.Value
		if e.Bare {
			v = "<bare>"
		}
		flat = append(flat, kv{e.Section, e.Subsection, e.Name, v})
	}
	want := []kv{
		{"Global", "", "Zone", "us-east-1a"},
		{"Global", "", "Quoted", `a ; b # c "q" \ `},
		{"Global", "", "Spaced", "x   y"},
		{"Global", "", "Bare", "<bare>"},
		{"Global", "", "Empty", ""},
		{"Global", "", "Cont", "first   second"},
		{"ServiceOverride", `my "1"`, "URL", "https://x"},
	}
	if !reflect.DeepEqual(flat, want) {
		t.Errorf("got  %q\nwant %q", flat, want)
	}
	if got[0].Line != 4 {
		t.Errorf("Zone on line %d, want 4", got[0].Line)
	}

	for _, bad := range []string{"x = 1\n", "[Global\n", "[Global]\n1x = 2\n", "[Global]\na = \"open\n", "[S unquoted]\n"} {
		if _, err := parseINI(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	// Errors never quote a value: token-body is one.
	if _, err := parseINI("[global]\ntoken-body = \"" + tokenBody + "\n"); err == nil || strings.Contains(err.Error(), tokenBody) {
		t.Errorf("error %v", err)
	}
}

func TestGcfgBool(t *testing.T) {
	for v, want := range map[string]bool{"true": true, "YES": true, "on": true, "1": true, "false": false, "No": false, "off": false, "0": false} {
		if got, ok := gcfgBool(iniEntry{Value: v}); !ok || got != want {
			t.Errorf("%q = %v, %v", v, got, ok)
		}
	}
	if got, ok := gcfgBool(iniEntry{Bare: true}); !ok || !got {
		t.Error("a bare name is not true")
	}
	if _, ok := gcfgBool(iniEntry{Value: "maybe"}); ok {
		t.Error("maybe is a boolean")
	}
}

func TestSplitCommandLine(t *testing.T) {
	got, err := SplitCommandLine(`/bin/ccm --a=1 --b "two words" --c='single $quoted' --d=x\ y \
  --e="\"q\" \$HOME" ''`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/bin/ccm", "--a=1", "--b", "two words", "--c=single $quoted", "--d=x y", `--e="q" $HOME`, ""}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	for _, bad := range []string{`--a="open`, `--a='open`} {
		if _, err := SplitCommandLine(bad); err == nil {
			t.Errorf("%s split", bad)
		}
	}
}

// A manifest's command and args, as copied from a Deployment.
func TestSplitFlagsFile(t *testing.T) {
	got, err := SplitFlagsFile(`# from kubectl get ds -o yaml
        command:
        - /bin/aws-cloud-controller-manager
        args:
        - --v=2
        - "--cluster-name=prod cluster"
        - '--cloud-config=/etc/cloud.conf'
--leader-elect=true --controllers=*,-route
`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/bin/aws-cloud-controller-manager", "--v=2", "--cluster-name=prod cluster", "--cloud-config=/etc/cloud.conf", "--leader-elect=true", "--controllers=*,-route"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}

func TestParseEnvFile(t *testing.T) {
	got, err := ParseEnvFile("# c\n; c\nexport A=1\nB = two words \nC=\"quoted # not a comment\"\nD='x'\nE=\n")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"A": "1", "B": "two words", "C": "quoted # not a comment", "D": "x", "E": ""}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	_, err = ParseEnvFile("DO_ACCESS_TOKEN=" + doToken + "\nnot a line\n")
	if err == nil || !strings.Contains(err.Error(), "line 2") || strings.Contains(err.Error(), doToken) {
		t.Errorf("error %v", err)
	}
}
