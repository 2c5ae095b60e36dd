package config

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// yamlAt returns a file setting key to the YAML text value on top of
// minimal, so each case needs only the key and the value.
func yamlAt(key, value string) string {
	if rest, ok := strings.CutPrefix(key, "drivers.testcloud."); ok {
		return minimal + "    " + rest + ": " + value + "\n"
	}
	var b strings.Builder
	b.WriteString(minimal)
	parts := strings.Split(key, ".")
	for i, p := range parts {
		b.WriteString(strings.Repeat("  ", i) + p + ":")
		if i == len(parts)-1 {
			b.WriteString(" " + value)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// envFor returns the POLYCCM_ variable that sets key.
func envFor(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "__"))
}

// TestLoadOutOfRange gives each value both in the file and as an override:
// each must be refused at its key, saying why, and never wrap or truncate.
func TestLoadOutOfRange(t *testing.T) {
	cases := []struct {
		key  string
		yaml string // as written in the file
		env  string // as the override, if spelt differently
		want []string
	}{
		// Integers past int64: YAML reads these as uint64 or float64.
		{"kubeAPI.burst", "9223372036854775808", "",
			[]string{"9223372036854775808 is out of range; use an integer up to 9223372036854775807"}},
		{"kubeAPI.burst", "18446744073709551616", "", []string{"is out of range; use an integer up to 9223372036854775807"}},
		{"kubeAPI.burst", "0x8000000000000000", "", []string{"is out of range; use an integer up to 9223372036854775807"}},
		{"nodes.concurrentSyncs", "99999999999999999999999", "", []string{"is out of range; use an integer up to"}},
		{"kubeAPI.burst", "-9223372036854775809", "", []string{"is out of range", "-9223372036854775808"}},
		{"logging.verbosity", "-1e30", "", []string{"is out of range; use an integer no lower than -9223372036854775808"}},
		{"kubeAPI.burst", "1e400", "", []string{"1e400 is out of range; use an integer up to"}},
		{"drivers.testcloud.workers", "9223372036854775808", "", []string{"9223372036854775808 is out of range"}},
		// Neither a fraction nor a non-number becomes an integer.
		{"kubeAPI.burst", "1.5", "", []string{"1.5 is not a whole number; use an integer"}},
		{"drivers.testcloud.workers", "0.999", "", []string{"0.999 is not a whole number"}},
		{"serving.securePort", ".nan", "NaN", []string{"must be an integer, not"}},
		{"kubeAPI.burst", ".inf", "Inf", []string{"must be an integer, not"}},
		// Floats past float64, infinite or NaN.
		{"kubeAPI.qps", "1e400", "", []string{"1e400 is out of range; use a number up to 1.7976931348623157e+308"}},
		{"cloudAPI.qps", "-1e400", "", []string{"-1e400 is out of range; use a number no lower than -1.7976931348623157e+308"}},
		{"kubeAPI.qps", "1e99999999999", "", []string{"1e99999999999 is out of range"}},
		{"kubeAPI.qps", ".nan", "NaN", []string{"must be a finite number like 10 or 0.5, not NaN"}},
		{"cloudAPI.qps", ".inf", "+Inf", []string{"must be a finite number like 10 or 0.5, not +Inf"}},
		{"cloudAPI.qps", "-.inf", "-Inf", []string{"must be a finite number", "-Inf"}},
		// Durations past int64 nanoseconds, either way.
		{"cloudAPI.timeout", "99999999999h", "",
			[]string{`"99999999999h" is out of range: a duration must be shorter than 2562047h (about 292 years)`}},
		{"nodes.monitorPeriod", "-99999999999h", "", []string{`"-99999999999h" is out of range`}},
		{"drivers.testcloud.interval", "2562048h", "", []string{`"2562048h" is out of range`}},
		{"leaderElection.leaseDuration", "9223372036854775808ns", "", []string{"is out of range"}},
		{"routes.reconcilePeriod", "2562047h1h", "", []string{"is out of range"}},
	}
	for _, c := range cases {
		env := c.env
		if env == "" {
			env = c.yaml
		}
		t.Run("file/"+c.key+"="+c.yaml, func(t *testing.T) {
			_, _, err := load(t, yamlAt(c.key, c.yaml))
			wantProblem(t, err, c.key, c.want...)
			wantOnly(t, err, c.key)
		})
		t.Run("env/"+c.key+"="+env, func(t *testing.T) {
			name := envFor(c.key)
			_, _, err := load(t, minimal, name+"="+env)
			wantProblem(t, err, c.key, append([]string{"environment variable " + name + ": "}, c.want...)...)
			wantOnly(t, err, c.key)
		})
	}
}

// TestLoadNumbersInRange: the limits themselves and YAML's other spellings
// of numbers load to exactly their value, from the file and the
// environment alike.
func TestLoadNumbersInRange(t *testing.T) {
	burst := func(c *Config) any { return c.KubeAPI.Burst }
	qps := func(c *Config) any { return c.KubeAPI.QPS }
	workers := func(c *Config) any { return driverConfig(t, c, "testcloud").Workers }
	ratio := func(c *Config) any { return driverConfig(t, c, "testcloud").Ratio }
	interval := func(c *Config) any { return driverConfig(t, c, "testcloud").Interval }
	cases := []struct {
		key  string
		text string
		get  func(*Config) any
		want any
	}{
		// The extremes on the test driver's fields, which have no range of
		// their own: what is checked is that decoding keeps them exact.
		{"drivers.testcloud.workers", "9223372036854775807", workers, math.MaxInt64},
		{"kubeAPI.burst", "1e3", burst, 1000},
		{"kubeAPI.burst", "0x10", burst, 16},
		{"kubeAPI.burst", "0o17", burst, 15},
		{"kubeAPI.burst", "1_000", burst, 1000},
		{"drivers.testcloud.workers", "10.0", workers, 10},
		{"drivers.testcloud.ratio", "1.7976931348623157e308", ratio, math.MaxFloat64},
		{"kubeAPI.qps", "4e-1", qps, 0.4},
		{"kubeAPI.qps", "7", qps, 7.0},
		{"drivers.testcloud.interval", "2562047h", interval, 2562047 * time.Hour},
	}
	for _, c := range cases {
		t.Run("file/"+c.key+"="+c.text, func(t *testing.T) {
			if got := c.get(mustLoad(t, yamlAt(c.key, c.text))); got != c.want {
				t.Errorf("%s: %s loads as %v (%T), want %v", c.key, c.text, got, got, c.want)
			}
		})
		t.Run("env/"+c.key+"="+c.text, func(t *testing.T) {
			if got := c.get(mustLoad(t, minimal, envFor(c.key)+"="+c.text)); got != c.want {
				t.Errorf("%s: %s loads as %v (%T), want %v", envFor(c.key), c.text, got, got, c.want)
			}
		})
	}
}

func TestLoadNumberWrongTypes(t *testing.T) {
	cases := []struct {
		key, yaml, want string
	}{
		{"kubeAPI.burst", `"100"`, `"100" is quoted, so it is a string: write an integer without quotes`},
		{"kubeAPI.qps", `"1e400"`, "1e400 is out of range"},
		{"kubeAPI.qps", "fast", `"fast" is not a number`},
		{"kubeAPI.qps", "NaN", `"NaN" is not a number`}, // YAML spells it .nan
		{"nodes.concurrentSyncs", "lots", `"lots" is not an integer`},
		{"kubeAPI.burst", "true", "must be an integer, not true"},
		{"kubeAPI.burst", "{a: 1}", "must be an integer, not a mapping"},
		{"kubeAPI.qps", "[1]", "must be a number, not a list"},
		{"logging.verbosity", "2001-12-14", "must be an integer, not a date"},
	}
	for _, c := range cases {
		t.Run(c.key+"="+c.yaml, func(t *testing.T) {
			_, _, err := load(t, yamlAt(c.key, c.yaml))
			wantProblem(t, err, c.key, c.want)
		})
	}
}

// TestFitNumberKinds covers the Go number kinds no config field has yet,
// so a driver that uses one gets the same checks.
func TestFitNumberKinds(t *testing.T) {
	cases := []struct {
		typ  any
		text string
		want any    // the value, if it fits
		err  string // else part of the error
	}{
		{int8(0), "127", int64(127), ""},
		{int8(0), "128", nil, "128 is out of range; use an integer up to 127"},
		{int8(0), "-129", nil, "-129 is out of range; use an integer no lower than -128"},
		{int32(0), "2147483648", nil, "use an integer up to 2147483647"},
		{uint8(0), "255", uint64(255), ""},
		{uint8(0), "-1", nil, "-1 is out of range; use a whole number, 0 or more"},
		{uint16(0), "65536", nil, "use a whole number up to 65535"},
		{uint64(0), "18446744073709551615", uint64(math.MaxUint64), ""},
		{uint64(0), "18446744073709551616", nil, "is out of range"},
		{uint(0), "x", nil, `"x" is not a whole number`},
		{float32(0), "1e38", float64(1e38), ""},
		{float32(0), "1e39", nil, "1e39 is out of range; use a number up to 3.4028234663852886e+38"},
		{float64(0), "0x1p-2", 0.25, ""}, // strconv.ParseFloat syntax, as overrides always took
		{float64(0), "infinity", nil, "must be a finite number"},
	}
	for _, c := range cases {
		typ := reflect.TypeOf(c.typ)
		got, err := envNumber(typ, c.text)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("%s %s = %v (%T), %v; want %v (%T)", typ, c.text, got, got, err, c.want, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s %s: error %v, want it to contain %q", typ, c.text, err, c.err)
		}
	}
}

// TestEveryNumberHasARange walks every numeric and duration key of the
// config and sets each to a value no consumer can use: a count that wraps
// an int32 (nodes.concurrentSyncs: 4294967296 used to load and run zero
// workers) and a nanosecond duration. Each must be refused at its key; a
// new key without a range fails here.
func TestEveryNumberHasARange(t *testing.T) {
	sch := newSchema()
	sch.walk("", reflect.TypeOf(Config{}))
	var numbers, durations []string
	for key, typ := range sch.leaves {
		switch {
		case typ == durationType:
			durations = append(durations, key)
		case isNumber(typ):
			numbers = append(numbers, key)
		}
	}
	if len(numbers) < 10 || len(durations) < 8 {
		t.Fatalf("found %d numeric and %d duration keys; the schema walk missed some", len(numbers), len(durations))
	}
	for _, key := range numbers {
		t.Run(key, func(t *testing.T) {
			_, _, err := load(t, yamlAt(key, "4294967296"))
			wantProblem(t, err, key, "4294967296")
		})
	}
	for _, key := range durations {
		t.Run(key, func(t *testing.T) {
			_, _, err := load(t, yamlAt(key, "1ns"))
			wantProblem(t, err, key, "")
		})
	}
}

// The worker counts reach the upstream controllers as int32s: the largest
// accepted value fits, with the config's own range as the limit.
func TestWorkerCountsFitTheirConsumers(t *testing.T) {
	c := mustLoad(t, yamlAt("nodes.concurrentSyncs", "10000"))
	if c.Nodes.ConcurrentSyncs != 10000 || int(int32(c.Nodes.ConcurrentSyncs)) != c.Nodes.ConcurrentSyncs {
		t.Errorf("concurrentSyncs = %d", c.Nodes.ConcurrentSyncs)
	}
	_, _, err := load(t, yamlAt("nodes.concurrentSyncs", "10001"))
	wantProblem(t, err, "nodes.concurrentSyncs", "10001 is out of range: use 1 to 10000 workers")
}
