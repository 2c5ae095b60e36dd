package config

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/big"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/v2"
	yamlv3 "go.yaml.in/yaml/v3"

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
	l.validate(cfg)
	l.checkSecrets(cfg)

	sort.Strings(l.warnings)
	if err := l.probs.err(); err != nil {
		return nil, l.warnings, err
	}
	return cfg, l.warnings, nil
}

// MaxFileSize bounds the config file: a full config is a few KiB, and a
// path to /dev/zero or a log file must fail, not fill memory.
const MaxFileSize = 1 << 20

// maxMappingKeys bounds the keys of one mapping. The YAML decoder checks a
// mapping for duplicate keys pairwise, so a mapping of 100 000 keys took a
// minute; polyccm's largest has a few dozen.
const maxMappingKeys = 1000

func (l *loader) readFile() error {
	path := l.src.Path
	// Non-blocking, so that a named pipe is refused below instead of
	// waiting for a writer forever.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("config file %s does not exist: copy ccm.example.yaml there and edit it, or pass --config PATH", path)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("cannot read config file %s: permission denied; run polyccm as a user that may read it (the packages make it readable by the polyccm group)", path)
	case err != nil:
		return fmt.Errorf("cannot read config file %s: %v", path, unwrapPath(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("cannot read config file %s: %v", path, unwrapPath(err))
	}
	switch {
	case st.IsDir():
		return fmt.Errorf("config file %s is a directory; pass the path of the YAML file", path)
	case !st.Mode().IsRegular():
		return fmt.Errorf("config file %s is not a regular file; pass the path of the YAML file", path)
	}
	l.fileMode = st.Mode().Perm()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	switch {
	case err != nil:
		return fmt.Errorf("cannot read config file %s: %v", path, unwrapPath(err))
	case len(b) > MaxFileSize:
		return fmt.Errorf("config file %s is larger than %d KiB; a polyccm config is a few KiB: check the path", path, MaxFileSize>>10)
	}
	if err := checkShape(b); err != nil {
		return fmt.Errorf("config file %s is not valid YAML: %w", path, err)
	}
	if err := l.k.Load(rawBytes(b), yaml.Parser()); err != nil {
		return fmt.Errorf("config file %s is not valid YAML: %w", path, err)
	}
	for _, key := range l.k.Keys() {
		l.explicit[key] = path
	}
	return nil
}

// rawBytes is a koanf provider of a file already read.
type rawBytes []byte

func (b rawBytes) ReadBytes() ([]byte, error) { return b, nil }
func (b rawBytes) Read() (map[string]any, error) {
	return nil, errors.New("rawBytes needs a parser")
}

// checkShape parses the YAML into nodes, which costs time linear in its
// size, and refuses a mapping too large for the decoder to check (see
// maxMappingKeys) and keys repeated in a mapping, each with its line.
func checkShape(b []byte) error {
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(b, &doc); err != nil {
		return err
	}
	var walk func(n *yamlv3.Node) error
	walk = func(n *yamlv3.Node) error {
		if n.Kind == yamlv3.MappingNode {
			if len(n.Content)/2 > maxMappingKeys {
				return fmt.Errorf("line %d: a mapping of %d keys; polyccm's config has at most a few dozen in one place", n.Line, len(n.Content)/2)
			}
			seen := make(map[string]int, len(n.Content)/2)
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				if k.Kind == yamlv3.ScalarNode {
					if line, dup := seen[k.Value]; dup {
						return fmt.Errorf("line %d: key %q is already set on line %d", k.Line, k.Value, line)
					}
					seen[k.Value] = k.Line
				}
			}
		}
		// Aliases are not followed: the decoder bounds their expansion.
		for _, c := range n.Content {
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(&doc)
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

var errNoUnit = errors.New("a duration needs a unit, like 30s, 5m or 1h")

// durationRE is the syntax time.ParseDuration accepts (besides "0").
var durationRE = regexp.MustCompile(`^[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`)

// durationHook parses durations and rejects bare numbers: mapstructure
// would read `monitorPeriod: 5` as five nanoseconds.
func durationHook(from, to reflect.Type, data any) (any, error) {
	if to != durationType {
		return data, nil
	}
	switch v := data.(type) {
	case string:
		s := strings.TrimSpace(v)
		d, err := time.ParseDuration(s)
		if err != nil {
			// Well-formed but refused means it overflows int64 nanoseconds.
			if durationRE.MatchString(s) {
				return nil, fmt.Errorf("%q is out of range: a duration must be shorter than 2562047h (about 292 years)", v)
			}
			return nil, fmt.Errorf("%q is not a duration: use a number with a unit, like 30s, 5m or 1h", v)
		}
		return d, nil
	case time.Duration:
		return v, nil
	}
	switch from.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Float64, reflect.Float32, reflect.Uint64:
		return nil, errNoUnit
	}
	return data, nil
}

// secretHook builds secrets itself so no decoder error ever echoes a value.
func secretHook(from, to reflect.Type, data any) (any, error) {
	if to != secretType {
		return data, nil
	}
	switch v := data.(type) {
	case map[string]any:
		return secret.FromMap(v)
	case secret.Secret:
		return v, nil
	}
	return nil, fmt.Errorf("give the secret as %s", secret.Forms)
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
				if kind == "token" {
					check = s.CheckToken
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
// secret.RevealToken).
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

// isNumber reports a leaf the number checks cover. Durations are int64s
// but have their own syntax and hook.
func isNumber(t reflect.Type) bool {
	if t == durationType {
		return false
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return true
	}
	return false
}

// numberHook checks every number against the Go type it lands in:
// mapstructure would wrap 9223372036854775808 to a negative int, truncate
// 1.5 to 1 and pass NaN on, all silently.
func numberHook(from, to reflect.Type, data any) (any, error) {
	if !isNumber(to) {
		return data, nil
	}
	want := numberName(to)
	v := reflect.ValueOf(data)
	var n number
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n = number{text: strconv.FormatInt(v.Int(), 10), x: new(big.Float).SetInt64(v.Int())}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n = number{text: strconv.FormatUint(v.Uint(), 10), x: new(big.Float).SetUint64(v.Uint())}
	case reflect.Float32, reflect.Float64:
		n = floatNumber(strconv.FormatFloat(v.Float(), 'g', -1, 64), v.Float())
		// YAML reads an integer below MinInt64 as a float, and those
		// just below round to exactly -2^63, which would fit.
		if f := v.Float(); f == math.MinInt64 && to.Kind() >= reflect.Int && to.Kind() <= reflect.Int64 && to.Bits() == 64 {
			return nil, fmt.Errorf("%s is out of range; use %s greater than %d", n.text, numberName(to), int64(math.MinInt64))
		}
	case reflect.String:
		// YAML leaves a number too big for float64 (1e400) as a string.
		s := v.String()
		n, ok := parseNumber(s)
		if !ok {
			return nil, fmt.Errorf("%q is not %s", s, want)
		}
		if _, err := fitNumber(to, n); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%q is quoted, so it is a string: write %s without quotes", s, want)
	case reflect.Bool:
		return nil, fmt.Errorf("must be %s, not %v", want, data)
	case reflect.Map:
		return nil, fmt.Errorf("must be %s, not a mapping", want)
	case reflect.Slice:
		return nil, fmt.Errorf("must be %s, not a list", want)
	case reflect.Struct:
		if _, ok := data.(time.Time); ok { // YAML reads 2001-12-14 as a date
			return nil, fmt.Errorf("must be %s, not a date", want)
		}
		return data, nil
	default:
		return data, nil // the decoder names the type
	}
	return fitNumber(to, n)
}

// kindHook catches a value of the wrong kind for a bool, string or list
// key before mapstructure does, whose message names Go types ("expected
// type 'bool', got unconvertible type 'string'"): it says what the key
// takes, in the config's words.
func kindHook(from, to reflect.Type, data any) (any, error) {
	if data == nil {
		return data, nil
	}
	got := describeValue(data)
	switch to.Kind() {
	case reflect.Bool:
		if str, ok := data.(string); ok {
			if _, err := strconv.ParseBool(str); err == nil {
				return nil, fmt.Errorf("%s is quoted, so it is a string: write true or false without quotes", got)
			}
		}
		if _, ok := data.(bool); !ok {
			return nil, fmt.Errorf("must be true or false, not %s", got)
		}
	case reflect.String:
		switch data.(type) {
		case string:
		case bool, int, int64, uint64, float64:
			return nil, fmt.Errorf("must be a string, not %s: quote it (\"%v\") if that is the value", got, data)
		default:
			return nil, fmt.Errorf("must be a string, not %s", got)
		}
	case reflect.Slice:
		if from.Kind() != reflect.Slice {
			return nil, fmt.Errorf("must be a list, like [a, b], not %s", got)
		}
	}
	return data, nil
}

// describeValue names a decoded YAML value for messages.
func describeValue(v any) string {
	switch x := v.(type) {
	case string:
		if len(x) > 40 {
			x = x[:40] + "…"
		}
		return strconv.Quote(x)
	case bool:
		return strconv.FormatBool(x)
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case int, int64, uint64:
		return fmt.Sprintf("the number %v", x)
	case float64:
		return "the number " + strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprintf("%v", v)
}

// number is a numeric value from the file or the environment, kept exact
// however large, with its text for messages.
type number struct {
	text     string
	x        *big.Float // the value; ±Inf if too large even for big.Float
	nan, inf bool       // the value is NaN or infinite (x is nil)
}

func floatNumber(text string, f float64) number {
	switch {
	case math.IsNaN(f):
		return number{text: text, nan: true}
	case math.IsInf(f, 0):
		return number{text: text, inf: true}
	}
	return number{text: text, x: new(big.Float).SetFloat64(f)}
}

// yamlFloatRE is the float syntax go.yaml.in/yaml/v3 resolves.
var yamlFloatRE = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

// yamlSpecial are YAML's spellings of infinity and NaN.
var yamlSpecial = map[string]float64{
	".inf": math.Inf(1), ".Inf": math.Inf(1), ".INF": math.Inf(1),
	"+.inf": math.Inf(1), "+.Inf": math.Inf(1), "+.INF": math.Inf(1),
	"-.inf": math.Inf(-1), "-.Inf": math.Inf(-1), "-.INF": math.Inf(-1),
	".nan": math.NaN(), ".NaN": math.NaN(), ".NAN": math.NaN(),
}

// parseNumber reads s as YAML reads a plain number (decimal, 0x, 0o, 0b
// or legacy 0 octal, _ separators, floats, .inf, .nan), but with no
// limit on size, so an overflow can be told from a typo.
func parseNumber(s string) (number, bool) {
	if f, ok := yamlSpecial[s]; ok {
		return floatNumber(s, f), true
	}
	plain := strings.ReplaceAll(s, "_", "")
	if plain == "" {
		return number{}, false
	}
	if i, ok := new(big.Int).SetString(plain, 0); ok {
		return number{text: s, x: new(big.Float).SetInt(i)}, true
	}
	if !yamlFloatRE.MatchString(plain) {
		return number{}, false
	}
	return parseFloat(s, plain)
}

// parseFloat parses what strconv.ParseFloat accepts, keeping the value of
// one too large for float64.
func parseFloat(text, s string) (number, bool) {
	f, err := strconv.ParseFloat(s, 64)
	if err == nil {
		return floatNumber(text, f), true
	}
	if !errors.Is(err, strconv.ErrRange) {
		return number{}, false
	}
	if x, _, err := big.ParseFloat(s, 0, 64, big.ToNearestEven); err == nil {
		return number{text: text, x: x}, true
	}
	// Beyond even big.Float's exponent: out of every range, and f has its sign.
	return number{text: text, x: new(big.Float).SetInf(f < 0)}, true
}

// envNumber parses an override for a number leaf the way the same text
// in the file would be read; it also takes what strconv.ParseFloat does
// (NaN, Inf, hex floats), as overrides always have.
func envNumber(t reflect.Type, s string) (any, error) {
	n, ok := parseNumber(s)
	if !ok {
		n, ok = parseFloat(s, s)
	}
	if !ok {
		return nil, fmt.Errorf("%q is not %s", s, numberName(t))
	}
	return fitNumber(t, n)
}

// fitNumber returns n as t's kind of Go number (int64, uint64 or
// float64), or an error saying why it does not fit.
func fitNumber(t reflect.Type, n number) (any, error) {
	var lo, hi *big.Float
	whole := true
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		lo = new(big.Float).SetInt64(-1 << (t.Bits() - 1))
		hi = new(big.Float).SetInt64(1<<(t.Bits()-1) - 1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		lo = new(big.Float)
		hi = new(big.Float).SetUint64(1<<t.Bits() - 1)
	default:
		whole = false
		max := math.MaxFloat64
		if t.Kind() == reflect.Float32 {
			max = math.MaxFloat32
		}
		lo, hi = big.NewFloat(-max), big.NewFloat(max)
	}
	want := numberName(t)
	limit := func(x *big.Float) string {
		if whole {
			return x.Text('f', 0)
		}
		return x.Text('g', -1)
	}
	switch {
	case n.nan || n.inf:
		if whole {
			return nil, fmt.Errorf("must be %s, not %s", want, n.text)
		}
		return nil, fmt.Errorf("must be a finite number like 10 or 0.5, not %s", n.text)
	case n.x.Cmp(hi) > 0:
		return nil, fmt.Errorf("%s is out of range; use %s up to %s", n.text, want, limit(hi))
	case n.x.Cmp(lo) < 0 && lo.Sign() == 0:
		return nil, fmt.Errorf("%s is out of range; use %s, 0 or more", n.text, want)
	case n.x.Cmp(lo) < 0:
		return nil, fmt.Errorf("%s is out of range; use %s no lower than %s", n.text, want, limit(lo))
	case whole && !n.x.IsInt():
		return nil, fmt.Errorf("%s is not a whole number; use %s", n.text, want)
	}
	switch {
	case !whole:
		f, _ := n.x.Float64()
		return f, nil
	case lo.Sign() == 0: // unsigned, and n is within range
		u, _ := n.x.Uint64()
		return u, nil
	}
	i, _ := n.x.Int64()
	return i, nil
}

// numberName is how a number leaf's type is named in errors.
func numberName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	}
	return "an integer"
}
