package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/polyccm/polyccm/config/secret"
)

// mappingKeys returns a YAML mapping node's keys in order.
func mappingKeys(t *testing.T, n *yaml.Node) []string {
	t.Helper()
	if n.Kind != yaml.MappingNode {
		t.Fatalf("node at line %d is kind %v, want a mapping", n.Line, n.Kind)
	}
	var keys []string
	for i := 0; i < len(n.Content); i += 2 {
		keys = append(keys, n.Content[i].Value)
	}
	return keys
}

// lookup returns the value node under key in a mapping, or nil.
func lookup(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// path follows dotted keys from the document root.
func path(t *testing.T, doc *yaml.Node, p string) *yaml.Node {
	t.Helper()
	n := doc.Content[0]
	for _, k := range strings.Split(p, ".") {
		if n = lookup(n, k); n == nil {
			t.Fatalf("rendered config has no %s", p)
		}
	}
	return n
}

// tagOrder is the koanf keys of a struct type in field order.
func tagOrder(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		if tag := t.Field(i).Tag.Get("koanf"); tag != "" && tag != "-" {
			out = append(out, tag)
		}
	}
	return out
}

func render(t *testing.T, cfg *Config) (string, *yaml.Node) {
	t.Helper()
	out, err := Render(cfg)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(out, &doc); err != nil {
		t.Fatalf("Render output is not YAML: %v\n%s", err, out)
	}
	return string(out), &doc
}

func TestRenderOrderAndValues(t *testing.T) {
	const value = "sup3r-s3cret-v4lue"
	cfg := mustLoad(t, strings.Replace(minimal, "{value: tok}", "{value: "+value+"}", 1))
	out, doc := render(t, cfg)

	if strings.Contains(out, value) {
		t.Fatalf("rendered config contains the inline secret:\n%s", out)
	}
	// Plain YAML, as an operator would write it (no "!!float 50").
	if strings.Contains(out, "!!") {
		t.Errorf("rendered config has explicit tags:\n%s", out)
	}
	// Top-level and section keys come in struct order, as in the file.
	if got, want := mappingKeys(t, doc.Content[0]), append(tagOrder(reflect.TypeOf(Config{})), "drivers"); !reflect.DeepEqual(got, want) {
		t.Errorf("top-level keys = %q, want %q", got, want)
	}
	ct := reflect.TypeOf(Config{})
	for i := 0; i < ct.NumField(); i++ {
		f := ct.Field(i)
		if f.Type.Kind() != reflect.Struct {
			continue
		}
		tag := f.Tag.Get("koanf")
		if got, want := mappingKeys(t, path(t, doc, tag)), tagOrder(f.Type); !reflect.DeepEqual(got, want) {
			t.Errorf("%s keys = %q, want %q", tag, got, want)
		}
	}
	if got, want := mappingKeys(t, path(t, doc, "drivers.testcloud")), tagOrder(reflect.TypeOf(testDriverConfig{})); !reflect.DeepEqual(got, want) {
		t.Errorf("drivers.testcloud keys = %q, want %q", got, want)
	}

	scalars := map[string]string{
		"driver":                        "testcloud",
		"clusterName":                   "kubernetes",
		"kubeconfig":                    "",
		"nodes.monitorPeriod":           "5s",
		"nodes.statusUpdateFrequency":   "5m0s",
		"leaderElection.leaseDuration":  "15s",
		"cloudAPI.batchWindow":          "25ms",
		"nodes.concurrentSyncs":         "20",
		"controllers.routes":            "false",
		"kubeAPI.qps":                   "500",
		"drivers.testcloud.interval":    "30s",
		"drivers.testcloud.token.value": "<redacted>",
	}
	for p, want := range scalars {
		if got := path(t, doc, p).Value; got != want {
			t.Errorf("%s = %q, want %q", p, got, want)
		}
	}
	if got := mappingKeys(t, path(t, doc, "drivers.testcloud.token")); !reflect.DeepEqual(got, []string{"value"}) {
		t.Errorf("token keys = %q, want only value", got)
	}
}

func TestRenderSecretReferences(t *testing.T) {
	cases := []struct {
		s    secret.Secret
		want map[string]string
	}{
		{secret.Secret{File: "/run/secrets/tok"}, map[string]string{"file": "/run/secrets/tok"}},
		{secret.Secret{Env: "DO_TOKEN"}, map[string]string{"env": "DO_TOKEN"}},
		// References that look like numbers or booleans stay strings.
		{secret.Secret{File: "007"}, map[string]string{"file": "007"}},
		{secret.Secret{Credential: "true"}, map[string]string{"credential": "true"}},
		{secret.Secret{Credential: "do-token"}, map[string]string{"credential": "do-token"}},
		{secret.Secret{Value: "hunter2"}, map[string]string{"value": "<redacted>"}},
		{secret.Secret{}, map[string]string{}},
	}
	for _, c := range cases {
		t.Run(c.s.Source(), func(t *testing.T) {
			cfg := Defaults()
			cfg.Driver = "testcloud"
			cfg.Drivers["testcloud"] = &testDriverConfig{Token: c.s}
			out, doc := render(t, cfg)
			tok := path(t, doc, "drivers.testcloud.token")
			got := map[string]string{}
			for i := 0; i+1 < len(tok.Content); i += 2 {
				v := tok.Content[i+1]
				// As YAML reads it back: a string, not 7 or true.
				if v.ShortTag() != "!!str" {
					t.Errorf("%s renders as %s %q, want a string\n%s", tok.Content[i].Value, v.ShortTag(), v.Value, out)
				}
				got[tok.Content[i].Value] = v.Value
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("token renders as %v, want %v\n%s", got, c.want, out)
			}
			if c.s.Value != "" && strings.Contains(out, c.s.Value) {
				t.Errorf("output contains the inline value:\n%s", out)
			}
		})
	}
}

func TestRenderRoundTrip(t *testing.T) {
	// What `config show` prints is itself a valid config that loads to the
	// same configuration.
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("tok"), 0o600); err != nil {
		t.Fatal(err)
	}
	body := `driver: routecloud
clusterName: prod
controllers:
  routes: true
routes:
  clusterCIDR: 10.244.0.0/16,fd00::/56
kubeAPI:
  qps: 12.5
cloudAPI:
  qps: 3
drivers:
  routecloud:
    token: {file: ` + tokenFile + `}
    interval: 90s
`
	first := mustLoad(t, body)
	out, err := Render(first)
	if err != nil {
		t.Fatal(err)
	}
	second := mustLoad(t, string(out))
	second.File = first.File
	if !reflect.DeepEqual(first, second) {
		t.Errorf("round trip differs:\nfirst  %+v\nsecond %+v\nrendered:\n%s", first, second, out)
	}
}

// A credential carried in a URL, outside the secret mechanism, is masked
// as the log masks it: a password in the userinfo, and a token or key in
// the query; the rest of the URL, and URLs without credentials, stay.
func TestRenderMasksURLCredentials(t *testing.T) {
	for _, c := range []struct{ in, want, secret string }{
		{"https://api.example.com/v2/?token=s3cr3t-t0ken&page=2", "https://api.example.com/v2/?token=REDACTED&page=2", "s3cr3t-t0ken"},
		{"https://compute.example.com/?key=AIzaSyEXAMPLEKEY0123", "https://compute.example.com/?key=REDACTED", "AIzaSyEXAMPLEKEY0123"},
		{"https://api.example.com/?access_token=ya29.a0Af&alt=json", "https://api.example.com/?access_token=REDACTED&alt=json", "ya29.a0Af"},
		{"https://ops:hunter2@proxy.example/v2?api_key=k3y", "https://REDACTED@proxy.example/v2?api_key=REDACTED", "hunter2"},
		{"https://api.example.com/v2/?page=2&per_page=200", "https://api.example.com/v2/?page=2&per_page=200", ""},
	} {
		cfg := Defaults()
		cfg.Driver = "testcloud"
		cfg.Drivers["testcloud"] = &testDriverConfig{Region: c.in}
		out, doc := render(t, cfg)
		if got := path(t, doc, "drivers.testcloud.region").Value; got != c.want {
			t.Errorf("%s renders as %s, want %s", c.in, got, c.want)
		}
		if c.secret != "" && strings.Contains(out, c.secret) {
			t.Errorf("the output shows %s:\n%s", c.secret, out)
		}
	}
}
