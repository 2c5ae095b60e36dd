package importer

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/polyccm/polyccm/config"
	_ "github.com/polyccm/polyccm/drivers/all" // the drivers the output is loaded with
)

// The secret values the tests give the importer; none may appear in what
// it returns.
const (
	doToken     = "dop_v1_0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab"
	hcloudToken = "hcloudtokenAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	awsKeyID    = "AKIAIOSFODNN7EXAMPLE"
	awsSecret   = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	awsSession  = "FwoGZXIvYXdzEXAMPLESESSIONTOKEN"
	robotPass   = "robot-hunter2-secret"
	tokenBody   = "token-body-secret-value"
	osPassword  = "os-password-hunter2"
	osAppSecret = "os-app-cred-secret-0123456789"
	osTrustee   = "os-trustee-password-secret"
	osToken     = "gAAAAAos-keystone-token-secret"
)

var secretValues = []string{doToken, hcloudToken, awsKeyID, awsSecret, awsSession, robotPass, tokenBody, osPassword, osAppSecret, osTrustee, osToken}

// importCase is one table row: upstream-style input and what must come out.
type importCase struct {
	name        string
	cloudConfig string            // "" none
	env         map[string]string // an environment file's variables
	args        string            // the command line; "" not given
	want        map[string]any    // output key -> value as YAML decodes it
	absent      []string          // keys that must not be in the output
	unmapped    []string          // each refused setting, by a substring of its source
	notes       []string          // substrings some note must contain
	invalid     []string          // substrings the InputError must contain; the case stops there
	noRoundTrip bool              // the output refers to something only the real host has
}

func (c importCase) input(from string) Input {
	in := Input{From: from, Env: c.env, EnvFile: true, EnvName: "ccm.env"}
	if c.cloudConfig != "" {
		in.CloudConfig, in.CloudConfigName = []byte(c.cloudConfig), "cloud.conf"
	}
	if c.args != "" {
		words, err := SplitCommandLine(c.args)
		if err != nil {
			panic(err)
		}
		in.Args = words
	}
	return in
}

// runCases runs a table for one cloud: each row's output is checked key by
// key, then loaded with the real config loader.
func runCases(t *testing.T, from string, cases []importCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := Import(c.input(from))
			if len(c.invalid) > 0 {
				if err == nil {
					t.Fatalf("no error; want one containing %q", c.invalid)
				}
				for _, w := range c.invalid {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error does not contain %q:\n%v", w, err)
					}
				}
				noSecrets(t, err.Error())
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			doc := decode(t, res.YAML)
			for k, v := range c.want {
				got, ok := lookup(doc, k)
				if !ok {
					t.Errorf("%s is not in the output:\n%s", k, res.YAML)
					continue
				}
				if !reflect.DeepEqual(got, v) {
					t.Errorf("%s = %#v, want %#v", k, got, v)
				}
			}
			for _, k := range c.absent {
				if got, ok := lookup(doc, k); ok {
					t.Errorf("%s = %#v, want it left out", k, got)
				}
			}
			checkItems(t, "unmapped", res.Unmapped, c.unmapped)
			for _, w := range c.notes {
				if !containsItem(res.Notes, w) {
					t.Errorf("no note contains %q; notes:\n%s", w, items(res.Notes))
				}
			}
			noSecrets(t, string(res.YAML), items(res.Notes), items(res.Unmapped))
			if !c.noRoundTrip {
				load(t, res.YAML)
			}
		})
	}
}

// checkItems checks that each want matches exactly one item's source and
// that nothing else was refused.
func checkItems(t *testing.T, what string, got []Item, want []string) {
	t.Helper()
	used := make([]bool, len(got))
	for _, w := range want {
		found := false
		for i, it := range got {
			if !used[i] && strings.Contains(it.Source, w) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			t.Errorf("%s: nothing from %q; got:\n%s", what, w, items(got))
		}
	}
	for i, it := range got {
		if !used[i] {
			t.Errorf("%s: unexpected %s", what, it)
		}
	}
}

func containsItem(list []Item, s string) bool {
	for _, it := range list {
		if strings.Contains(it.String(), s) {
			return true
		}
	}
	return false
}

func items(list []Item) string {
	var b strings.Builder
	for _, it := range list {
		b.WriteString("  " + it.String() + "\n")
	}
	return b.String()
}

func noSecrets(t *testing.T, texts ...string) {
	t.Helper()
	for _, s := range texts {
		for _, v := range secretValues {
			if strings.Contains(s, v) {
				t.Errorf("a secret value was copied into the output:\n%s", s)
			}
		}
	}
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("the output is not YAML: %v\n%s", err, b)
	}
	return doc
}

func lookup(doc map[string]any, path string) (any, bool) {
	var cur any = doc
	for _, p := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[p]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// load writes the output and loads it with polyccm's own loader, strictly,
// with the secrets it refers to present, and returns the config.
func load(t *testing.T, out []byte) *config.Config {
	t.Helper()
	for _, kv := range [][2]string{{"DO_ACCESS_TOKEN", doToken}, {"HCLOUD_TOKEN", hcloudToken}, {"AWS_ACCESS_KEY_ID", awsKeyID}, {"AWS_SECRET_ACCESS_KEY", awsSecret},
		{"OS_PASSWORD", osPassword}, {"OS_APPLICATION_CREDENTIAL_SECRET", osAppSecret}} {
		t.Setenv(kv[0], kv[1])
	}
	p := filepath.Join(t.TempDir(), "ccm.yaml")
	if err := os.WriteFile(p, out, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, warnings, err := config.Load(config.Source{Path: p, Environ: []string{}})
	if err != nil {
		t.Fatalf("polyccm does not accept the imported config: %v\n%s", err, out)
	}
	if len(warnings) > 0 {
		t.Errorf("loading the imported config warns: %q", warnings)
	}
	return cfg
}

// secretFile makes a file a {file:} reference can point at.
func secretFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
