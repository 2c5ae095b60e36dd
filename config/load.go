package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/v2"

	"github.com/polyccm/polyccm/config/secret"
	"github.com/polyccm/polyccm/core/driver"
)

// Source says where Load reads from. Zero values mean the real thing:
// DefaultPath, os.Environ() and the compiled-in drivers.
type Source struct {
	Path     string
	Environ  []string
	Registry *driver.Registry
}

// Load reads, decodes and validates the config. It returns warnings the
// operator should see (they do not stop polyccm) and, if anything is wrong,
// a *Problems error listing every problem.
func Load(src Source) (*Config, []string, error) {
	if src.Path == "" {
		src.Path = DefaultPath
	}
	if src.Environ == nil {
		src.Environ = os.Environ()
	}
	if src.Registry == nil {
		src.Registry = driver.Default()
	}
	l := &loader{src: src, k: koanf.New("."), explicit: map[string]string{}, probs: &Problems{File: src.Path}}
	return l.load()
}

type loader struct {
	src      Source
	k        *koanf.Koanf
	sch      *schema
	explicit map[string]string // keys set by the file or env -> where
	probs    *Problems
	warnings []string
	fileMode fs.FileMode
}

func (l *loader) load() (*Config, []string, error) {
	l.sch = newSchema()
	l.sch.walk("", reflect.TypeOf(Config{}))
	l.sch.addGroup("drivers")
	for _, name := range l.src.Registry.Names() {
		d, _ := l.src.Registry.Lookup(name)
		l.sch.addGroup("drivers." + name)
		l.sch.walk("drivers."+name, reflect.TypeOf(d.NewConfig()))
	}

	if err := l.readFile(); err != nil {
		return nil, nil, err
	}
	l.readEnv()
	l.checkKeys()

	cfg := Defaults()
	cfg.File = l.src.Path
	l.decode("", l.withoutDrivers(), cfg)
	l.decodeDrivers(cfg)
	cfg.ClusterNameDefault = l.explicit["clusterName"] == ""
	l.validate(cfg)
	l.checkSecrets(cfg)

	sort.Strings(l.warnings)
	if err := l.probs.err(); err != nil {
		return nil, l.warnings, err
	}
	return cfg, l.warnings, nil
}

// readEnv applies POLYCCM_* overrides. Names are matched to keys without
// regard to case or single underscores: POLYCCM_NODES__CONCURRENT_SYNCS
// and POLYCCM_NODES__CONCURRENTSYNCS both set nodes.concurrentSyncs.
func (l *loader) readEnv() {
	vars := append([]string(nil), l.src.Environ...)
	sort.Strings(vars)
	for _, kv := range vars {
		name, value, _ := strings.Cut(kv, "=")
		rest, ok := strings.CutPrefix(name, EnvPrefix)
		if !ok || rest == "" {
			continue
		}
		path := strings.ReplaceAll(rest, "__", ".")
		key, ok := l.sch.folded[fold(path)]
		if !ok {
			msg := fmt.Sprintf("does not name a config key (levels are separated by __, e.g. %sNODES__CONCURRENTSYNCS)", EnvPrefix)
			if s := l.sch.suggest(l.sch.envPath(path)); s != "" {
				msg += "; did you mean " + s + "?"
			}
			l.probs.add("environment variable "+name, "%s", msg)
			continue
		}
		t, isLeaf := l.sch.leaves[key]
		if !isLeaf {
			l.probs.add("environment variable "+name, "names the mapping %s; set one of its keys: %s", key, strings.Join(l.sch.children(key), ", "))
			continue
		}
		var v any
		var err error
		if isNumber(t) {
			// Parsed here, not by envValue, so the range checks and
			// messages are the ones a number in the file gets.
			if v, err = envNumber(t, value); err != nil {
				l.probs.add(key, "environment variable %s: %v", name, err)
				continue
			}
		} else if v, err = envValue(t, value); err != nil {
			l.probs.add(key, "environment variable %s: %q is not %s", name, value, typeName(t))
			continue
		}
		// An override of one secret form replaces the secret entirely, so
		// {file:} in the file plus POLYCCM_..._TOKEN__ENV is not "two forms".
		if parent := l.sch.parent(key); l.isSecret(parent) {
			for _, sub := range []string{"file", "env", "credential", "value"} {
				l.k.Delete(parent + "." + sub)
			}
		}
		if err := l.k.Set(key, v); err != nil {
			l.probs.addErr(key, err)
			continue
		}
		l.explicit[key] = "environment variable " + name
	}
}

func (l *loader) isSecret(group string) bool {
	if !l.sch.groups[group] {
		return false
	}
	_, ok := l.sch.leaves[group+".credential"]
	return ok
}

// checkKeys reports every key the schema does not know, with a suggestion.
func (l *loader) checkKeys() {
	reportedDrivers := map[string]bool{}
	for _, key := range l.k.Keys() {
		if _, ok := l.sch.leaves[key]; ok {
			continue
		}
		if rest, ok := strings.CutPrefix(key, "drivers."); ok {
			name, _, _ := strings.Cut(rest, ".")
			if _, known := l.src.Registry.Lookup(name); !known {
				if !reportedDrivers[name] {
					reportedDrivers[name] = true
					l.probs.add("drivers."+name, "%v; remove this section or use a binary built with that driver", l.src.Registry.NotCompiled(name))
				}
				continue
			}
		}
		if l.sch.groups[key] {
			if isEmpty(l.k.Get(key)) {
				continue // `nodes:` or `nodes: {}` (every key commented out) sets nothing
			}
			if l.isSecret(key) {
				l.probs.add(key, "give the secret as %s", secret.Forms)
			} else {
				l.probs.add(key, "must be a mapping with keys: %s", strings.Join(l.sch.children(key), ", "))
			}
			continue
		}
		msg := "unknown key"
		if s := l.sch.suggest(key); s != "" && s != key {
			msg += "; did you mean " + s + "?"
		} else {
			msg += "; valid keys here: " + strings.Join(l.sch.children(l.sch.parent(key)), ", ")
		}
		l.probs.add(key, "%s", msg)
	}
}

// isEmpty reports a YAML null or an empty mapping.
func isEmpty(v any) bool {
	m, isMap := v.(map[string]any)
	return v == nil || (isMap && len(m) == 0)
}

func (l *loader) withoutDrivers() *koanf.Koanf {
	k := l.k.Copy()
	k.Delete("drivers")
	return k
}

// decode unmarshals k's subtree at path into out, reporting errors with
// their full key paths.
func (l *loader) decode(path string, k *koanf.Koanf, out any) {
	dc := &mapstructure.DecoderConfig{
		ErrorUnused: true,
		// Keys are case-sensitive, as checkKeys reports them.
		MatchName: func(mapKey, fieldName string) bool { return mapKey == fieldName },
		DecodeHook: mapstructure.ComposeDecodeHookFunc(
			secretHook,
			durationHook,
			mapstructure.TextUnmarshallerHookFunc(),
			numberHook,
			kindHook,
		),
	}
	err := k.UnmarshalWithConf(path, out, koanf.UnmarshalConf{Tag: "koanf", DecoderConfig: dc})
	// mapstructure wraps its joined errors in one "decoding failed" error.
	for err != nil {
		if _, joined := err.(interface{ Unwrap() []error }); joined {
			break
		}
		if _, ok := err.(*mapstructure.DecodeError); ok {
			break
		}
		inner := errors.Unwrap(err)
		if inner == nil {
			break
		}
		err = inner
	}
	for _, e := range flatten(err) {
		var de *mapstructure.DecodeError
		if !errors.As(e, &de) {
			l.probs.addErr(path, e)
			continue
		}
		msg := de.Unwrap().Error()
		if strings.HasPrefix(msg, "has invalid keys:") {
			continue // checkKeys reported these with suggestions
		}
		key := joinKey(path, de.Name())
		if l.probs.has(key) {
			continue
		}
		// The value may be an override: say which variable to fix.
		if where := l.explicit[key]; strings.HasPrefix(where, "environment variable ") {
			msg = where + ": " + msg
		}
		l.probs.add(key, "%s", msg)
	}
}

func (l *loader) decodeDrivers(cfg *Config) {
	present := map[string]bool{}
	for _, name := range l.k.MapKeys("drivers") {
		present[name] = true
	}
	if _, ok := l.src.Registry.Lookup(cfg.Driver); ok {
		present[cfg.Driver] = true
	}
	for name := range present {
		d, ok := l.src.Registry.Lookup(name)
		if !ok {
			continue // reported by checkKeys or validate
		}
		dc := d.NewConfig()
		if l.k.Exists("drivers." + name) {
			l.decode("drivers."+name, l.k, dc)
		}
		cfg.Drivers[name] = dc
	}
}

// checkSecrets verifies every secret in the selected driver's config can be
// read now, and warns about inline secrets in a file others can read.
func (l *loader) checkSecrets(cfg *Config) {
	for name, dc := range cfg.Drivers {
		walkSecrets("drivers."+name, reflect.ValueOf(dc), "", func(key string, s secret.Secret, kind string) {
			if s.IsZero() {
				return // the driver's Validate says whether it is required
			}
			if name == cfg.Driver {
				check := s.Check
				switch kind {
				case "token":
					check = s.CheckToken
				case "line":
					check = s.CheckLine
				case "json":
					check = s.CheckJSON
				}
				if err := check(); err != nil {
					l.probs.addErr(key, err)
				}
			}
			if where := l.explicit[key+".value"]; s.IsInline() && strings.HasPrefix(where, "environment variable ") {
				l.warnings = append(l.warnings, fmt.Sprintf(
					"%s gives the secret %s inline; environment files such as /etc/default/polyccm are often readable by others: give it as {file:}, {credential:} (systemd LoadCredential=), or {env:} set from a protected source",
					where, key))
			}
			if s.IsInline() && l.fileMode&0o077 != 0 && l.explicit[key+".value"] == l.src.Path {
				l.warnings = append(l.warnings, fmt.Sprintf(
					"%s holds an inline secret at %s but is readable by group or others (mode %#o): run `chmod 600 %s`, or give the secret as {file:}, {env:} or {credential:}",
					l.src.Path, key, l.fileMode, l.src.Path))
			}
		})
	}
}

// walkSecrets calls fn for every Secret in v, with its key and the kind
// its field's `secret:"..."` tag gives ("token": one word, see
// secret.RevealToken; "line": one line, spaces allowed, see
// secret.RevealLine; "json": a JSON document, see secret.CheckJSON).
func walkSecrets(prefix string, v reflect.Value, kind string, fn func(key string, s secret.Secret, kind string)) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return
	}
	if v.Type() == secretType {
		fn(prefix, v.Interface().(secret.Secret), kind)
		return
	}
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		tag := f.Tag.Get("koanf")
		if tag == "" || tag == "-" || !f.IsExported() {
			continue
		}
		walkSecrets(joinKey(prefix, tag), v.Field(i), f.Tag.Get("secret"), fn)
	}
}

// SecretFields returns the secret fields in a driver's config struct
// (what its NewConfig returns): each key, relative to drivers.<name>, with
// the kind its `secret:"..."` tag gives. The driver's registered
// Credentials and the Helm chart's credential keys are checked against
// them.
func SecretFields(cfg any) map[string]string {
	out := map[string]string{}
	walkSecrets("", reflect.ValueOf(cfg), "", func(key string, _ secret.Secret, kind string) { out[key] = kind })
	return out
}
