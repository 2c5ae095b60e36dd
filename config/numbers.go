package config

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
)

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
