package config

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/knadh/koanf/v2"
)

// fuzzMarker is the inline secret the seeds carry. The loader must never
// print it: not in an error, a warning or Render's output.
const fuzzMarker = "MARKER-s3cr3t-9f2c"

// FuzzLoad feeds the loader a config file and POLYCCM_* environment (one
// NAME=VALUE a line) and checks that it never panics, that a config it
// accepts is valid, that a refusal names a key or the file, and that no
// inline secret leaks, and that every number and duration it accepts is
// exactly the one the input gave. The seeds are testdata/bad/*.yaml; a
// file's "# env: NAME=VALUE" lines are its environment and its
// "# want: KEY: TEXT" lines what TestBadSeeds expects.
func FuzzLoad(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("testdata", "bad", "*.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	if len(seeds) == 0 {
		f.Fatal("no seeds in testdata/bad")
	}
	for _, p := range seeds {
		body, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(body, seedEnv(body))
	}
	f.Add([]byte(minimal), "")
	f.Add([]byte(minimal), "POLYCCM_DRIVERS__TESTCLOUD__TOKEN__VALUE="+fuzzMarker)

	f.Fuzz(func(t *testing.T, body []byte, env string) {
		// Secret forms read the files they name: /dev/zero would never
		// end and /dev/stdin would block, which is no finding.
		in := string(body) + env
		if len(body) > 64<<10 || strings.Contains(in, "/dev") || strings.Contains(in, "/proc") || strings.Contains(in, "/sys") {
			t.Skip()
		}
		path := filepath.Join(t.TempDir(), "ccm.yaml")
		if err := os.WriteFile(path, body, 0o600); err != nil {
			t.Fatal(err)
		}
		environ := []string{}
		if env != "" {
			environ = strings.Split(env, "\n")
		}
		src := Source{Path: path, Environ: environ, Registry: testRegistry()}

		cfg, warnings, err := Load(src)
		leaks := secretLeakCheck(t, src)

		for _, w := range warnings {
			leaks(w, "a warning")
		}
		if err != nil {
			if cfg != nil {
				t.Errorf("Load returned a config and an error: %v", err)
			}
			checkLoadError(t, src, err)
			leaks(err.Error(), "the error")
			return
		}
		if cfg == nil {
			t.Fatal("Load returned neither a config nor an error")
		}
		if _, ok := src.Registry.Lookup(cfg.Driver); !ok || cfg.DriverConfig() == nil {
			t.Errorf("accepted a config whose driver %q is not usable", cfg.Driver)
		}
		// What Load accepted must still pass validation on its own: nothing
		// after validate may have broken it.
		again := &loader{src: src, k: koanf.New("."), explicit: map[string]string{}, probs: &Problems{File: path}}
		again.validate(cfg)
		if err := again.probs.err(); err != nil {
			t.Errorf("Load accepted a config that does not validate: %v", err)
		}
		checkExactValues(t, src, cfg)
		out, err := Render(cfg)
		if err != nil {
			t.Fatalf("Render of a loaded config: %v", err)
		}
		leaks(string(out), "Render")
	})
}

// TestBadSeeds loads every seed as FuzzLoad does and checks what the seed
// promises: each is refused, and each "# want: KEY: TEXT" line names a
// problem at KEY whose message contains TEXT.
func TestBadSeeds(t *testing.T) {
	seeds, err := filepath.Glob(filepath.Join("testdata", "bad", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range seeds {
		t.Run(filepath.Base(p), func(t *testing.T) {
			body := mustRead(t, p)
			environ := []string{}
			if env := seedEnv(body); env != "" {
				environ = strings.Split(env, "\n")
			}
			_, _, err := Load(Source{Path: p, Environ: environ, Registry: testRegistry()})
			if err == nil {
				t.Fatal("a bad seed loaded")
			}
			for _, w := range seedWants(body) {
				key, text, ok := strings.Cut(w, ": ")
				if !ok {
					t.Fatalf("malformed want line %q: use # want: KEY: TEXT", w)
				}
				wantProblem(t, err, key, text)
			}
		})
	}
}

// seedWants returns a seed file's "# want: KEY: TEXT" lines.
func seedWants(body []byte) []string {
	var wants []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		if w, ok := strings.CutPrefix(sc.Text(), "# want: "); ok {
			wants = append(wants, w)
		}
	}
	return wants
}

// seedEnv returns a seed file's "# env: NAME=VALUE" lines as Environ text.
func seedEnv(body []byte) string {
	var env []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		if kv, ok := strings.CutPrefix(sc.Text(), "# env: "); ok {
			env = append(env, kv)
		}
	}
	return strings.Join(env, "\n")
}

// checkLoadError asserts a refusal says where: a file error names the file;
// a *Problems names the file and gives every problem a key the operator can
// find (a schema key, a key the input set, or an environment variable).
func checkLoadError(t *testing.T, src Source, err error) {
	t.Helper()
	var ps *Problems
	if !errors.As(err, &ps) {
		if !strings.Contains(err.Error(), src.Path) {
			t.Errorf("error does not name the file %s: %v", src.Path, err)
		}
		return
	}
	if ps.File != src.Path || !strings.HasPrefix(ps.Error(), src.Path+":") && !strings.HasPrefix(ps.Error(), src.Path+" has") {
		t.Errorf("problems do not name the file %s: %v", src.Path, err)
	}
	if len(ps.List) == 0 {
		t.Errorf("an error of no problems: %q", err)
	}
	l := readTree(t, src)
	for _, p := range ps.List {
		switch {
		case p.Key == "":
			t.Errorf("problem without a key: %q (error: %v)", p.Msg, err)
		case l.sch.leaves[p.Key] != nil, l.sch.groups[p.Key], l.k.Exists(p.Key),
			strings.HasPrefix(p.Key, "environment variable "+EnvPrefix):
		default:
			t.Errorf("problem at %q, which is neither a config key nor in the input: %v", p.Key, err)
		}
	}
}

// readTree reads src's file and environment the way Load does, for the
// keys and values the input set. A file that is not YAML gives an empty
// tree.
func readTree(t *testing.T, src Source) *loader {
	t.Helper()
	l := &loader{src: src, k: koanf.New("."), explicit: map[string]string{}, probs: &Problems{File: src.Path}}
	// The schema as Load builds it.
	l.sch = newSchema()
	l.sch.walk("", reflect.TypeOf(Config{}))
	l.sch.addGroup("drivers")
	for _, name := range src.Registry.Names() {
		d, _ := src.Registry.Lookup(name)
		l.sch.addGroup("drivers." + name)
		l.sch.walk("drivers."+name, reflect.TypeOf(d.NewConfig()))
	}
	if err := l.readFile(); err == nil {
		l.readEnv()
	}
	return l
}

// secretLeakCheck returns a check that text does not hold fuzzMarker when
// the input gave it only as an inline secret. Where the input also used
// it elsewhere (a cluster name, a key, an env name), printing it there is
// no leak, so nothing is checked.
func secretLeakCheck(t *testing.T, src Source) func(text, what string) {
	t.Helper()
	l := readTree(t, src)
	var secrets []string
	for g := range l.sch.groups {
		if l.isSecret(g) {
			secrets = append(secrets, g)
		}
	}
	secretEnv := map[string]bool{}
	var inSecret, elsewhere strings.Builder
	for _, key := range l.k.Keys() {
		elsewhere.WriteString(key + "\n")
		v := fmt.Sprint(l.k.Get(key))
		if isInlineSecretKey(key, secrets) {
			inSecret.WriteString(v + "\n")
			if where, ok := strings.CutPrefix(l.explicit[key], "environment variable "); ok {
				secretEnv[where] = true
			}
			continue
		}
		elsewhere.WriteString(v + "\n")
	}
	for _, kv := range src.Environ {
		name, value, _ := strings.Cut(kv, "=")
		elsewhere.WriteString(name + "\n")
		if !secretEnv[name] {
			elsewhere.WriteString(value + "\n")
		}
	}
	// A file the YAML parser refused (or one of only comments) has no
	// tree: nothing of it may be echoed, so its marker counts as secret.
	noTree := len(l.k.Keys()) == 0 && bytes.Contains(mustRead(t, src.Path), []byte(fuzzMarker)) && !strings.Contains(elsewhere.String(), fuzzMarker)
	check := noTree || strings.Contains(inSecret.String(), fuzzMarker) && !strings.Contains(elsewhere.String(), fuzzMarker)
	return func(text, what string) {
		t.Helper()
		if check && strings.Contains(text, fuzzMarker) {
			t.Errorf("%s shows the inline secret %s:\n%s", what, fuzzMarker, text)
		}
	}
}

// isInlineSecretKey reports a key holding (or given instead of) a secret's
// value: the secret itself as a scalar, its value, or any sub-key other
// than the references file, env and credential, which are printed.
func isInlineSecretKey(key string, secrets []string) bool {
	for _, s := range secrets {
		if key == s {
			return true
		}
		if rest, ok := strings.CutPrefix(key, s+"."); ok {
			sub, _, _ := strings.Cut(rest, ".")
			return sub != "file" && sub != "env" && sub != "credential"
		}
	}
	return false
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkExactValues asserts that every number and duration the input set
// was loaded as exactly that value: never wrapped, truncated or rounded
// by the decoder.
func checkExactValues(t *testing.T, src Source, cfg *Config) {
	t.Helper()
	l := readTree(t, src)
	for _, key := range l.k.Keys() {
		typ, ok := l.sch.leaves[key]
		if !ok || !isNumber(typ) && typ != durationType {
			continue
		}
		field, ok := fieldAt(cfg, key)
		if !ok {
			t.Errorf("accepted %s but the config has no such field", key)
			continue
		}
		raw := l.k.Get(key)
		if raw == nil {
			continue // null leaves the zero value, which validation judges
		}
		if typ == durationType {
			s, isString := raw.(string)
			d, err := time.ParseDuration(strings.TrimSpace(s))
			if !isString || err != nil || time.Duration(field.Int()) != d {
				t.Errorf("%s: input %#v loaded as %v", key, raw, time.Duration(field.Int()))
			}
			continue
		}
		in, ok := exactValue(reflect.ValueOf(raw))
		got, _ := exactValue(field)
		if !ok || got == nil || in.Cmp(got) != 0 {
			t.Errorf("%s: input %#v loaded as %v", key, raw, field)
		}
	}
}

// exactValue returns a Go number as an exact big.Float, or false for
// anything else (including NaN and infinities, which no config may hold).
func exactValue(v reflect.Value) (*big.Float, bool) {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return new(big.Float).SetInt64(v.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return new(big.Float).SetUint64(v.Uint()), true
	case reflect.Float32, reflect.Float64:
		if math.IsNaN(v.Float()) || math.IsInf(v.Float(), 0) {
			return nil, false
		}
		return new(big.Float).SetFloat64(v.Float()), true
	}
	return nil, false
}

// fieldAt returns the field of cfg (or of a driver's config) a leaf key
// decodes into.
func fieldAt(cfg *Config, key string) (reflect.Value, bool) {
	v := reflect.ValueOf(cfg).Elem()
	parts := strings.Split(key, ".")
	if parts[0] == "drivers" && len(parts) > 2 {
		dc, ok := cfg.Drivers[parts[1]]
		if !ok {
			return reflect.Value{}, false
		}
		v, parts = reflect.ValueOf(dc), parts[2:]
	}
	for _, p := range parts {
		for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return reflect.Value{}, false
		}
		found := false
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).Tag.Get("koanf") == p {
				v, found = v.Field(i), true
				break
			}
		}
		if !found {
			return reflect.Value{}, false
		}
	}
	return v, true
}
