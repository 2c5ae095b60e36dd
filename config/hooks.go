package config

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/polyccm/polyccm/config/secret"
)

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
