package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polyccm/polyccm/config/secret"
)

func TestLoadDefaults(t *testing.T) {
	path := writeFile(t, minimal, 0o600)
	cfg, warnings, err := Load(Source{Path: path, Environ: []string{}, Registry: testRegistry()})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings = %q, want none for a 0600 file", warnings)
	}
	// Everything the file does not set is exactly Defaults(); the driver
	// section keeps NewConfig's defaults for what it does not set.
	want := Defaults()
	want.Driver = "testcloud"
	want.File = path
	want.Drivers["testcloud"] = &testDriverConfig{Token: secret.Secret{Value: "tok"}, Region: "r1", Interval: 30 * time.Second, Workers: 4}
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("config =\n%+v\nwant\n%+v", cfg, want)
	}
	if cfg.DriverConfig() != cfg.Drivers["testcloud"] {
		t.Error("DriverConfig does not return the selected driver's config")
	}
}

// A driver learns whether clusterName was set or is the default, from the
// file or the environment alike (AWS finds its cluster ID when it is not).
func TestClusterNameDefault(t *testing.T) {
	for _, c := range []struct {
		file string
		env  []string
		want bool
	}{
		{minimal, nil, true},
		{minimal + "clusterName: prod\n", nil, false},
		{minimal + "clusterName: kubernetes\n", nil, false},
		{minimal, []string{"POLYCCM_CLUSTERNAME=prod"}, false},
	} {
		cfg, _, err := Load(Source{Path: writeFile(t, c.file, 0o600), Environ: append([]string{}, c.env...), Registry: testRegistry()})
		if err != nil {
			t.Fatal(err)
		}
		if cfg.ClusterNameDefault != c.want {
			t.Errorf("file %q env %v: ClusterNameDefault %v, want %v", c.file, c.env, cfg.ClusterNameDefault, c.want)
		}
	}
}

func TestLoadSelectedDriverWithoutSection(t *testing.T) {
	// The selected driver gets its config (and its Validate) even when the
	// file has no section for it.
	_, _, err := load(t, "driver: testcloud\n")
	wantOnly(t, err, "drivers.testcloud.token")
}

func TestLoadFileOverrides(t *testing.T) {
	cfg := mustLoad(t, `driver: testcloud
clusterName: prod-1
controllers:
  nodeLifecycle: false
nodes:
  concurrentSyncs: 7
  monitorPeriod: 1m30s
kubeAPI:
  qps: 12.5
routes:
  clusterCIDR: 10.244.0.0/16
drivers:
  testcloud:
    token: {value: tok}
    region: r9
    interval: 2m
    workers: 11
`)
	checks := []struct {
		name      string
		got, want any
	}{
		{"clusterName", cfg.ClusterName, "prod-1"},
		{"controllers.nodeLifecycle", cfg.Controllers.NodeLifecycle, false},
		{"controllers.nodes keeps its default", cfg.Controllers.Nodes, true},
		{"nodes.concurrentSyncs", cfg.Nodes.ConcurrentSyncs, 7},
		{"nodes.monitorPeriod", cfg.Nodes.MonitorPeriod, 90 * time.Second},
		{"nodes.concurrentStatusUpdates keeps its default", cfg.Nodes.ConcurrentStatusUpdates, 20},
		{"kubeAPI.qps", cfg.KubeAPI.QPS, 12.5},
		{"kubeAPI.burst keeps its default", cfg.KubeAPI.Burst, 1000},
		{"routes.clusterCIDR", cfg.Routes.ClusterCIDR, "10.244.0.0/16"},
		{"drivers.testcloud.region", driverConfig(t, cfg, "testcloud").Region, "r9"},
		{"drivers.testcloud.interval", driverConfig(t, cfg, "testcloud").Interval, 2 * time.Minute},
		{"drivers.testcloud.workers", driverConfig(t, cfg, "testcloud").Workers, 11},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestLoadEnvOverrides(t *testing.T) {
	body := minimal + "clusterName: from-file\n"
	cases := []struct {
		name  string
		env   string
		check func(*Config) any
		want  any
	}{
		{"upper case", "POLYCCM_NODES__CONCURRENTSYNCS=50", func(c *Config) any { return c.Nodes.ConcurrentSyncs }, 50},
		{"lower case with single underscores", "POLYCCM_nodes__concurrent_syncs=51", func(c *Config) any { return c.Nodes.ConcurrentSyncs }, 51},
		{"mixed case", "POLYCCM_Nodes__ConcurrentSyncs=52", func(c *Config) any { return c.Nodes.ConcurrentSyncs }, 52},
		{"overrides the file", "POLYCCM_CLUSTERNAME=from-env", func(c *Config) any { return c.ClusterName }, "from-env"},
		{"bool", "POLYCCM_CONTROLLERS__NODE_LIFECYCLE=false", func(c *Config) any { return c.Controllers.NodeLifecycle }, false},
		{"float", "POLYCCM_KUBEAPI__QPS=7.5", func(c *Config) any { return c.KubeAPI.QPS }, 7.5},
		{"duration", "POLYCCM_LEADER_ELECTION__LEASE_DURATION=30s", func(c *Config) any { return c.LeaderElection.LeaseDuration }, 30 * time.Second},
		{"driver int", "POLYCCM_DRIVERS__TESTCLOUD__WORKERS=9", func(c *Config) any { return c.Drivers["testcloud"].(*testDriverConfig).Workers }, 9},
		{"driver duration", "POLYCCM_DRIVERS__TESTCLOUD__INTERVAL=1h", func(c *Config) any { return c.Drivers["testcloud"].(*testDriverConfig).Interval }, time.Hour},
		{"driver string", "POLYCCM_DRIVERS__TESTCLOUD__REGION=r7", func(c *Config) any { return c.Drivers["testcloud"].(*testDriverConfig).Region }, "r7"},
		// Neither the bare prefix nor other variables mean anything.
		{"bare prefix ignored", "POLYCCM_=junk", func(c *Config) any { return c.ClusterName }, "from-file"},
		{"other variables ignored", "HOME_NODES__CONCURRENTSYNCS=3", func(c *Config) any { return c.Nodes.ConcurrentSyncs }, 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := mustLoad(t, body, c.env)
			if got := c.check(cfg); got != c.want {
				t.Errorf("%s: got %v (%T), want %v (%T)", c.env, got, got, c.want, c.want)
			}
		})
	}
}

func TestLoadEnvErrors(t *testing.T) {
	cases := []struct {
		name string
		env  string
		key  string
		want []string
	}{
		{"bad int names the variable", "POLYCCM_NODES__CONCURRENTSYNCS=lots", "nodes.concurrentSyncs",
			[]string{"POLYCCM_NODES__CONCURRENTSYNCS", "an integer"}},
		{"bad bool", "POLYCCM_CONTROLLERS__ROUTES=maybe", "controllers.routes",
			[]string{"POLYCCM_CONTROLLERS__ROUTES", "a boolean"}},
		{"bad float", "POLYCCM_CLOUDAPI__QPS=fast", "cloudAPI.qps",
			[]string{"POLYCCM_CLOUDAPI__QPS", "a number"}},
		{"bare number duration", "POLYCCM_NODES__MONITORPERIOD=5", "nodes.monitorPeriod",
			[]string{`"5" is not a duration`}},
		{"no such key", "POLYCCM_NODES__NOPE=1", "environment variable POLYCCM_NODES__NOPE",
			[]string{"does not name a config key"}},
		{"typo gets a suggestion", "POLYCCM_NODES__CONCURENTSYNCS=1", "environment variable POLYCCM_NODES__CONCURENTSYNCS",
			[]string{"did you mean nodes.concurrentSyncs?"}},
		{"typo in a driver key gets a suggestion", "POLYCCM_DRIVERS__TESTCLOUD__REGOIN=x", "environment variable POLYCCM_DRIVERS__TESTCLOUD__REGOIN",
			[]string{"did you mean drivers.testcloud.region?"}},
		// A single underscore is not a level separator.
		{"levels need a double underscore", "POLYCCM_NODES_CONCURRENTSYNCS=1", "environment variable POLYCCM_NODES_CONCURRENTSYNCS",
			[]string{"does not name a config key", "__"}},
		{"names a mapping", "POLYCCM_NODES=1", "environment variable POLYCCM_NODES",
			[]string{"names the mapping nodes", "concurrentSyncs"}},
		{"names a secret", "POLYCCM_DRIVERS__TESTCLOUD__TOKEN=t0ken-in-env", "environment variable POLYCCM_DRIVERS__TESTCLOUD__TOKEN",
			[]string{"file", "env", "credential", "value"}},
		{"driver not in the registry", "POLYCCM_DRIVERS__AWS__REGION=x", "environment variable POLYCCM_DRIVERS__AWS__REGION",
			[]string{"does not name a config key"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := load(t, minimal, c.env)
			wantProblem(t, err, c.key, c.want...)
			wantOnly(t, err, c.key)
			if strings.Contains(err.Error(), "t0ken-in-env") {
				t.Errorf("error echoes a secret value: %v", err)
			}
		})
	}
}

func TestLoadEnvSuggestionKeepsNestedGroup(t *testing.T) {
	// A typo below a camel-case group must be matched against that group's
	// keys, not against the top-level key the group is.
	for _, name := range []string{
		"POLYCCM_LEADERELECTION__LEASEDURATON",
		"POLYCCM_leader_election__lease_duraton",
	} {
		_, _, err := load(t, minimal, name+"=1s")
		wantProblem(t, err, "environment variable "+name, "did you mean leaderElection.leaseDuration?")
	}
}

func TestLoadEnvReplacesSecretForm(t *testing.T) {
	t.Setenv("CONFIGTEST_TOKEN", "from-env")
	body := `driver: testcloud
drivers:
  testcloud:
    token: {file: /nonexistent/token}
`
	cfg := mustLoad(t, body, "POLYCCM_DRIVERS__TESTCLOUD__TOKEN__ENV=CONFIGTEST_TOKEN")
	got := driverConfig(t, cfg, "testcloud").Token
	if want := (secret.Secret{Env: "CONFIGTEST_TOKEN"}); got != want {
		t.Errorf("token = %#v, want only the env form (%#v)", got, want)
	}
	if v, err := got.Reveal(); err != nil || v != "from-env" {
		t.Errorf("Reveal = %q, %v", v, err)
	}
}

func TestLoadUnknownKeys(t *testing.T) {
	cases := []struct {
		name string
		body string
		key  string
		want string
	}{
		{"top level", "clustrName: x\n", "clustrName", "did you mean clusterName?"},
		{"wrong case", "ClusterName: x\n", "ClusterName", "did you mean clusterName?"},
		{"nested", "nodes:\n  concurentSyncs: 3\n", "nodes.concurentSyncs", "did you mean nodes.concurrentSyncs?"},
		// minimal ends inside drivers.testcloud, so these lines land there.
		{"in a driver", "    regoin: x\n", "drivers.testcloud.regoin", "did you mean drivers.testcloud.region?"},
		{"in a secret", "driver: testcloud\ndrivers:\n  testcloud:\n    token: {fiel: /x}\n", "drivers.testcloud.token.fiel", "did you mean drivers.testcloud.token.file?"},
		// Nothing close: list what is valid instead.
		{"far from everything", "serving:\n  zzzzzzzzzz: 1\n", "serving.zzzzzzzzzz", "valid keys here: bindAddress, certFile, keyFile, securePort"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := minimal + c.body
			if strings.HasPrefix(c.body, "driver:") {
				body = c.body // a whole file
			}
			_, _, err := load(t, body)
			p := wantProblem(t, err, c.key, "unknown key", c.want)
			if c.name == "far from everything" && strings.Contains(p.Msg, "did you mean") {
				t.Errorf("suggestion for a key close to nothing: %q", p.Msg)
			}
		})
	}
}

func TestLoadDriverSectionNotInRegistry(t *testing.T) {
	_, _, err := load(t, minimal+"  aws:\n    region: us-east-1\n    zone: a\n")
	// One problem for the section, not one per key, naming what we have.
	wantProblem(t, err, "drivers.aws", `"aws" is not compiled`, "routecloud, testcloud")
	wantOnly(t, err, "drivers.aws")
}

func TestLoadDriverSelection(t *testing.T) {
	cases := []struct {
		name string
		body string
		want []string
	}{
		{"missing", "clusterName: x\n", []string{"required", "routecloud, testcloud"}},
		{"unknown", "driver: nope\n", []string{`"nope" is not a polyccm driver`, "routecloud, testcloud"}},
		{"not a driver name", "driver: No-Pe\n", []string{`"No-Pe" is not a polyccm driver`, "routecloud, testcloud"}},
		{"known, not compiled", "driver: aws\n", []string{`"aws" is not compiled`, "routecloud, testcloud", "make build DRIVERS="}},
		{"empty mapping", "driver: {}\n", []string{"must be a string, not a mapping"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := load(t, c.body)
			wantProblem(t, err, "driver", c.want...)
			wantOnly(t, err, "driver")
		})
	}
}

func TestLoadDurations(t *testing.T) {
	cases := []struct {
		name string
		body string
		key  string
		want string
	}{
		{"bad unit", "nodes:\n  monitorPeriod: 5x\n", "nodes.monitorPeriod", `"5x" is not a duration`},
		{"bare int", "nodes:\n  monitorPeriod: 5\n", "nodes.monitorPeriod", "needs a unit"},
		{"bare float", "leaderElection:\n  retryPeriod: 1.5\n", "leaderElection.retryPeriod", "needs a unit"},
		{"bare int in a driver", "drivers:\n  testcloud:\n    interval: 5\n", "drivers.testcloud.interval", "needs a unit"},
		{"negative", "routes:\n  reconcilePeriod: -1s\n", "routes.reconcilePeriod", "-1s is out of range: use a duration from 1s to 24h"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := c.body
			if strings.HasPrefix(body, "drivers:") {
				body = "driver: testcloud\n" + strings.Replace(body, "testcloud:\n", "testcloud:\n    token: {value: tok}\n", 1)
			} else {
				body = minimal + body
			}
			_, _, err := load(t, body)
			wantProblem(t, err, c.key, c.want)
			wantOnly(t, err, c.key)
		})
	}
}

func TestLoadWrongTypes(t *testing.T) {
	cases := []struct {
		name string
		body string
		key  string
	}{
		{"string for int", "nodes:\n  concurrentSyncs: many\n", "nodes.concurrentSyncs"},
		{"string for bool", "controllers:\n  nodes: maybe\n", "controllers.nodes"},
		{"string for float", "kubeAPI:\n  qps: fast\n", "kubeAPI.qps"},
		{"list for string", "clusterName: [a, b]\n", "clusterName"},
		{"scalar for mapping", "nodes: 5\n", "nodes"},
		{"mapping for int", "serving:\n  securePort: {a: 1}\n", "serving.securePort"},
		{"string for driver int", "drivers:\n  testcloud:\n    workers: four\n", "drivers.testcloud.workers"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := minimal + c.body
			if strings.HasPrefix(c.body, "drivers:") {
				body = minimal + strings.TrimPrefix(strings.TrimPrefix(c.body, "drivers:\n"), "  testcloud:\n")
			}
			_, _, err := load(t, body)
			problemsOf(t, err)
			if !hasKeyPrefix(problemsOf(t, err), c.key) {
				t.Fatalf("no problem at %s:\n%v", c.key, err)
			}
		})
	}
}

// hasKeyPrefix reports a problem at key or below it.
func hasKeyPrefix(ps *Problems, key string) bool {
	for _, p := range ps.List {
		if p.Key == key || strings.HasPrefix(p.Key, key+".") {
			return true
		}
	}
	return false
}

func TestLoadReportsEveryProblemAtOnce(t *testing.T) {
	_, _, err := load(t, `driver: testcloud
clustrName: x
nodes:
  monitorPeriod: 5
  concurrentSyncs: 0
serving:
  securePort: 70000
logging:
  format: xml
drivers:
  testcloud:
    token: {value: tok}
    workers: 0
`)
	want := []string{
		"clustrName",
		"drivers.testcloud.workers",
		"logging.format",
		"nodes.concurrentSyncs",
		"nodes.monitorPeriod",
		"serving.securePort",
	}
	wantOnly(t, err, want...)
	if msg := err.Error(); !strings.Contains(msg, "has 6 problems:") || strings.Count(msg, "\n  - ") != 6 {
		t.Errorf("error does not list 6 problems:\n%s", msg)
	}
}

func TestLoadSecrets(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("file-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	emptyFile := write("empty", nil)
	bigFile := write("big", make([]byte, secret.MaxFileSize+1))
	twoLines := write("two-lines", []byte("file-token\nsecond line\n"))
	bomFile := write("bom", []byte("\ufefffile-token\n"))
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CONFIGTEST_SET", "env-token")
	os.Unsetenv("CONFIGTEST_UNSET")

	cases := []struct {
		name   string
		token  string // YAML for drivers.testcloud.token
		credir *string
		want   secret.Secret // when ok
		errs   []string      // problem at drivers.testcloud.token[...]
	}{
		{name: "file", token: "{file: " + tokenFile + "}", want: secret.Secret{File: tokenFile}},
		{name: "env", token: "{env: CONFIGTEST_SET}", want: secret.Secret{Env: "CONFIGTEST_SET"}},
		{name: "value", token: "{value: v4lue}", want: secret.Secret{Value: "v4lue"}},
		{name: "missing file", token: "{file: " + filepath.Join(dir, "nope") + "}", errs: []string{"reading secret file", filepath.Join(dir, "nope")}},
		{name: "unset env", token: "{env: CONFIGTEST_UNSET}", errs: []string{"CONFIGTEST_UNSET is not set"}},
		{name: "two forms", token: "{file: " + tokenFile + ", value: s3cr3t-two-forms}", errs: []string{"more than one way"}},
		{name: "empty file", token: "{file: " + emptyFile + "}", errs: []string{"is empty"}},
		// Files that are no secret fail with a message, not an out-of-memory
		// crash or a hang.
		{name: "device", token: "{file: /dev/zero}", errs: []string{"/dev/zero is not a regular file (it is a device)"}},
		{name: "pipe", token: "{file: " + fifo + "}", errs: []string{"is not a regular file (it is a named pipe)"}},
		{name: "too large", token: "{file: " + bigFile + "}", errs: []string{"is larger than 64 KiB"}},
		// A token is one word: a stray line is a config problem, not a
		// request that fails as if the network were down.
		{name: "two lines", token: "{file: " + twoLines + "}", errs: []string{"holds 2 lines", "remove the other lines"}},
		// A byte-order mark is dropped, not sent to the cloud.
		{name: "byte-order mark", token: "{file: " + bomFile + "}", want: secret.Secret{File: bomFile}},
		{name: "plain string", token: "pl41n-s3cr3t-t0ken", errs: []string{"give the secret as"}},
		{name: "non-string value", token: "{value: 123456789}", errs: []string{"must be a string"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := "driver: testcloud\ndrivers:\n  testcloud:\n    token: " + c.token + "\n"
			cfg, warnings, err := load(t, body)
			if c.errs == nil {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				if got := driverConfig(t, cfg, "testcloud").Token; got != c.want {
					t.Errorf("token = %#v, want %#v", got, c.want)
				}
				return
			}
			ps := problemsOf(t, err)
			if !hasKeyPrefix(ps, "drivers.testcloud.token") {
				t.Fatalf("no problem at drivers.testcloud.token:\n%v", err)
			}
			if len(ps.List) != 1 {
				t.Errorf("want one problem, got:\n%v", err)
			}
			for _, w := range c.errs {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
			// Whatever the token looked like, no message repeats it.
			for _, leak := range []string{"pl41n-s3cr3t-t0ken", "s3cr3t-two-forms", "123456789"} {
				if strings.Contains(err.Error(), leak) || strings.Contains(strings.Join(warnings, "\n"), leak) {
					t.Errorf("error or warning contains the secret %q:\n%v", leak, err)
				}
			}
		})
	}
}

func TestLoadCredentialSecret(t *testing.T) {
	body := "driver: testcloud\ndrivers:\n  testcloud:\n    token: {credential: do-token}\n"

	t.Run("without CREDENTIALS_DIRECTORY", func(t *testing.T) {
		t.Setenv("CREDENTIALS_DIRECTORY", "")
		_, _, err := load(t, body)
		wantProblem(t, err, "drivers.testcloud.token", "$CREDENTIALS_DIRECTORY is not set", "LoadCredential=do-token")
	})
	t.Run("credential missing", func(t *testing.T) {
		t.Setenv("CREDENTIALS_DIRECTORY", t.TempDir())
		_, _, err := load(t, body)
		wantProblem(t, err, "drivers.testcloud.token", "systemd credential do-token")
	})
	t.Run("credential present", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "do-token"), []byte("cred\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("CREDENTIALS_DIRECTORY", dir)
		cfg := mustLoad(t, body)
		if v, err := driverConfig(t, cfg, "testcloud").Token.Reveal(); err != nil || v != "cred" {
			t.Errorf("Reveal = %q, %v; want cred", v, err)
		}
	})
}

func TestLoadSecretsOfOtherDriversNotRead(t *testing.T) {
	// Only the selected driver's secrets must be readable now; another
	// driver's section may point at a file that exists only elsewhere.
	mustLoad(t, minimal+"  routecloud:\n    token: {file: /nonexistent/token}\n")
}

func TestLoadInlineSecretWarning(t *testing.T) {
	cases := []struct {
		name  string
		mode  os.FileMode
		token string
		warn  bool
	}{
		{"inline, world-readable", 0o644, "{value: tok}", true},
		{"inline, group-readable", 0o640, "{value: tok}", true},
		{"inline, owner only", 0o600, "{value: tok}", false},
		{"reference, world-readable", 0o644, "{env: CONFIGTEST_WARN}", false},
	}
	t.Setenv("CONFIGTEST_WARN", "x")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeFile(t, "driver: testcloud\ndrivers:\n  testcloud:\n    token: "+c.token+"\n", c.mode)
			_, warnings, err := Load(Source{Path: path, Environ: []string{}, Registry: testRegistry()})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if !c.warn {
				if len(warnings) != 0 {
					t.Errorf("warnings = %q, want none", warnings)
				}
				return
			}
			if len(warnings) != 1 {
				t.Fatalf("warnings = %q, want one", warnings)
			}
			for _, w := range []string{path, "drivers.testcloud.token", "chmod 600"} {
				if !strings.Contains(warnings[0], w) {
					t.Errorf("warning %q does not contain %q", warnings[0], w)
				}
			}
		})
	}
}

func TestLoadInlineSecretFromEnvWarns(t *testing.T) {
	// The file is world-readable but the inline value came from the
	// environment, not the file: no chmod advice for the file, but a
	// warning that environment files (systemd's EnvironmentFile, often
	// world-readable) are no place for a secret.
	path := writeFile(t, "driver: testcloud\n", 0o644)
	_, warnings, err := Load(Source{Path: path, Environ: []string{"POLYCCM_DRIVERS__TESTCLOUD__TOKEN__VALUE=tok"}, Registry: testRegistry()})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(warnings) != 1 || strings.Contains(warnings[0], "chmod") || strings.Contains(warnings[0], "tok ") {
		t.Fatalf("warnings = %q, want one about the environment", warnings)
	}
	for _, w := range []string{"POLYCCM_DRIVERS__TESTCLOUD__TOKEN__VALUE", "drivers.testcloud.token", "/etc/default/polyccm", "{file:}"} {
		if !strings.Contains(warnings[0], w) {
			t.Errorf("warning %q does not contain %q", warnings[0], w)
		}
	}
	// A reference through the environment is fine.
	_, warnings, err = Load(Source{Path: path, Environ: []string{"POLYCCM_DRIVERS__TESTCLOUD__TOKEN__FILE=" + writeFile(t, "tok\n", 0o600)}, Registry: testRegistry()})
	if err != nil || len(warnings) != 0 {
		t.Errorf("a {file:} override: %v, warnings %q", err, warnings)
	}
}

// A URL's credentials never show: config show redacts them, and a URL that
// carries them is refused, since SDKs print request URLs whole in errors.
func TestURLCredentialsAreNotShown(t *testing.T) {
	if got := RedactURL("https://api.example/v2?token=s3cr3tvalue"); strings.Contains(got, "s3cr3tvalue") {
		t.Errorf("RedactURL = %q: a token in the query shows", got)
	}
	if err := CheckURL("drivers.x.url", "ftp://api.example/?access_token=s3cr3tvalue", ""); err == nil || strings.Contains(err.Error(), "s3cr3tvalue") {
		t.Errorf("CheckURL = %v: want a problem that does not show the query's token", err)
	}
	if got := RedactURL("https://ops:hunter2@proxy.example/v2"); got != "https://REDACTED@proxy.example/v2" {
		t.Errorf("RedactURL = %q", got)
	}
	for _, v := range []string{"https://api.example/v2?x=a@b", "ops@example.iam.gserviceaccount.com", "/etc/polyccm/ops@site/kubeconfig"} {
		if got := RedactURL(v); got != v {
			t.Errorf("RedactURL changed %q, which holds no URL credentials, to %q", v, got)
		}
	}
	for _, v := range []string{"https://ops:hunter2@proxy.example/", "https://hunter2@proxy.example/", "ftp://ops:hunter2@proxy.example/", "https://ops:hunter2@[::1/"} {
		err := CheckURL("apiURL", v, "")
		if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "REDACTED@") {
			t.Errorf("CheckURL(%q) = %v, want an error that hides the credentials", v, err)
		}
	}
	// A malformed URL is echoed in its error too: its credentials must
	// not be, whatever is wrong with the rest.
	for _, v := range []string{
		"ops:hunter2@api.example/",          // no scheme
		"//ops:hunter2@api.example/",        // no scheme, but a host
		"https:/ops:hunter2@api.example/",   // one slash
		" https://ops:hunter2@api.example/", // a stray space
		"ht!tp://ops:hunter2@api.example/",  // a scheme url.Parse refuses
		"https://ops:hun/ter2@api.example/", // an unescaped '/' in the password
		"https://ops:hun?ter2@api.example/", // an unescaped '?'
	} {
		err := CheckURL("apiURL", v, "")
		if err == nil || strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "ter2") {
			t.Errorf("CheckURL(%q) = %v, want an error that hides the credentials", v, err)
		}
	}
	for _, v := range []string{"https://ops:hunter2@example/", "https://ops:hun/ter2@example/", " https://ops:hunter2@example/"} {
		c := Defaults()
		c.Kubeconfig = v
		out, err := Render(c)
		if err != nil || strings.Contains(string(out), "ter2") {
			t.Errorf("Render shows the password of %q: %s, %v", v, out, err)
		}
	}
}

func TestLoadControllers(t *testing.T) {
	cases := []struct {
		name string
		body string
		env  []string
		bad  []string // problem keys; nil means valid
	}{
		{"routes without the capability", "controllers:\n  routes: true\nroutes:\n  clusterCIDR: 10.244.0.0/16\n", nil, []string{"controllers.routes"}},
		{"routes with the capability", "driver: routecloud\ncontrollers:\n  routes: true\nroutes:\n  clusterCIDR: 10.244.0.0/16\n", nil, nil},
		{"routes without clusterCIDR", "driver: routecloud\ncontrollers:\n  routes: true\n", nil, []string{"routes.clusterCIDR"}},
		// services defaults to true; only an explicit true is a mistake.
		{"services by default, no load balancers", "", nil, nil},
		{"services explicit, no load balancers", "controllers:\n  services: true\n", nil, []string{"controllers.services"}},
		{"services from env, no load balancers", "", []string{"POLYCCM_CONTROLLERS__SERVICES=true"}, []string{"controllers.services"}},
		{"services explicit, load balancers", "driver: routecloud\ncontrollers:\n  services: true\n", nil, nil},
		{"services explicitly off", "controllers:\n  services: false\n", nil, nil},
		{"everything off", "controllers: {nodes: false, nodeLifecycle: false, services: false, routes: false}\n", nil, []string{"controllers"}},
		{"node IPAM alone", "controllers: {nodes: false, nodeLifecycle: false, services: false, nodeIPAM: true}\n", nil, nil},
		// Alias ranges are routed by the VPC; routes for them are refused.
		{"node IPAM with routes", "driver: routecloud\ncontrollers:\n  nodeIPAM: true\n  routes: true\nroutes:\n  clusterCIDR: 10.244.0.0/16\n", nil, []string{"controllers.nodeIPAM"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := "driver: testcloud\n" + c.body + "drivers:\n  testcloud:\n    token: {value: tok}\n  routecloud:\n    token: {value: tok}\n"
			if strings.Contains(c.body, "driver: routecloud") {
				body = strings.Replace(body, "driver: testcloud\n", "", 1)
			}
			_, _, err := load(t, body, c.env...)
			if c.bad == nil {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			wantOnly(t, err, c.bad...)
		})
	}
}

func TestLoadClusterCIDR(t *testing.T) {
	cases := []struct {
		cidr string
		want string // "" means valid
	}{
		{"10.244.0.0/16", ""},
		{"fd00:10:244::/56", ""},
		{"10.244.0.0/16,fd00:10:244::/56", ""},
		{" fd00:10:244::/56 , 10.244.0.0/16 ", ""},
		{"10.244.0.0/33", "want a CIDR"},
		{"not-a-cidr", "want a CIDR"},
		{"10.244.0.0/16,", "want a CIDR"},
		{"10.244.0.0/16,fd00::/56,10.1.0.0/16", "at most two"},
		{"10.244.0.0/16,10.1.0.0/16", "one IPv4 and one IPv6"},
		{"fd00::/56,fd01::/56", "one IPv4 and one IPv6"},
	}
	for _, c := range cases {
		t.Run(c.cidr, func(t *testing.T) {
			_, _, err := load(t, minimal+"routes:\n  clusterCIDR: \""+c.cidr+"\"\n")
			if c.want == "" {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			wantProblem(t, err, "routes.clusterCIDR", c.want)
			wantOnly(t, err, "routes.clusterCIDR")
		})
	}
}

func TestLoadLeaderElection(t *testing.T) {
	cases := []struct {
		name                string
		enabled             bool
		lease, renew, retry string
		bad                 []string
	}{
		{"defaults", true, "15s", "10s", "2s", nil},
		{"lease equal to renew", true, "10s", "10s", "2s", []string{"leaderElection.leaseDuration"}},
		{"lease shorter than renew", true, "5s", "10s", "2s", []string{"leaderElection.leaseDuration"}},
		{"renew not 1.2 x retry", true, "15s", "2400ms", "2s", []string{"leaderElection.renewDeadline"}},
		{"renew just over 1.2 x retry", true, "15s", "2500ms", "2s", nil},
		{"disabled, relations not checked", false, "5s", "10s", "10s", nil},
		{"zero retry", true, "15s", "10s", "0s", []string{"leaderElection.retryPeriod"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := minimal + "leaderElection:\n  enabled: " + map[bool]string{true: "true", false: "false"}[c.enabled] +
				"\n  leaseDuration: " + c.lease + "\n  renewDeadline: " + c.renew + "\n  retryPeriod: " + c.retry + "\n"
			_, _, err := load(t, body)
			if c.bad == nil {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			wantOnly(t, err, c.bad...)
		})
	}
}

func TestLoadServing(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for _, f := range []string{cert, key} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	missing := filepath.Join(dir, "missing")
	cases := []struct {
		name string
		yaml string
		bad  []string
	}{
		{"port 0 turns serving off", "securePort: 0", nil},
		{"port 65535", "securePort: 65535", nil},
		{"port 65536", "securePort: 65536", []string{"serving.securePort"}},
		{"negative port", "securePort: -1", []string{"serving.securePort"}},
		{"cert without key", "certFile: " + cert, []string{"serving.certFile"}},
		{"key without cert", "keyFile: " + key, []string{"serving.certFile"}},
		{"both", "certFile: " + cert + "\n  keyFile: " + key, nil},
		{"both missing", "certFile: " + missing + "\n  keyFile: " + missing, []string{"serving.certFile", "serving.keyFile"}},
		{"bind address not an IP", "bindAddress: localhost", []string{"serving.bindAddress"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := load(t, minimal+"serving:\n  "+c.yaml+"\n")
			if c.bad == nil {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			wantOnly(t, err, c.bad...)
		})
	}
}

func TestLoadKubeconfig(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg := mustLoad(t, minimal+"kubeconfig: "+kc+"\n"); cfg.Kubeconfig != kc {
		t.Errorf("kubeconfig = %q, want %q", cfg.Kubeconfig, kc)
	}
	missing := filepath.Join(t.TempDir(), "nope")
	_, _, err := load(t, minimal+"kubeconfig: "+missing+"\n")
	wantProblem(t, err, "kubeconfig", missing, "in-cluster")
	wantOnly(t, err, "kubeconfig")
}

func TestLoadFileErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name string
		path string
		want []string
	}{
		{"missing", filepath.Join(dir, "nope.yaml"), []string{"does not exist", "ccm.example.yaml", "--config"}},
		{"directory", dir, []string{"is a directory"}},
		{"invalid YAML", writeFile(t, "driver: [unclosed\n", 0o600), []string{"not valid YAML"}},
		{"not a mapping", writeFile(t, "- a\n- b\n", 0o600), []string{"not valid YAML"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := Load(Source{Path: c.path, Environ: []string{}, Registry: testRegistry()})
			if err == nil {
				t.Fatal("Load succeeded")
			}
			var ps *Problems
			if errors.As(err, &ps) {
				t.Errorf("a file that cannot be read is not a *Problems: %v", err)
			}
			for _, w := range append(c.want, c.path) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestProblemsError(t *testing.T) {
	one := &Problems{File: "/f.yaml", List: []Problem{{Key: "a", Msg: "bad"}}}
	if got, want := one.Error(), "/f.yaml: a: bad"; got != want {
		t.Errorf("one problem: %q, want %q", got, want)
	}
	two := &Problems{List: []Problem{{Key: "b", Msg: "x"}, {Msg: "keyless"}}}
	if got, want := two.Error(), "the config has 2 problems:\n  - keyless\n  - b: x"; got != want {
		t.Errorf("two problems: %q, want %q", got, want)
	}
}

func TestLoadEmptySections(t *testing.T) {
	// A section whose keys are all commented out is null or {}: it sets
	// nothing rather than being "not a mapping".
	for _, body := range []string{
		minimal + "nodes:\n",
		minimal + "nodes: {}\n",
		minimal + "leaderElection:\n  # enabled: false\n",
	} {
		cfg := mustLoad(t, body)
		if cfg.Nodes != Defaults().Nodes || cfg.LeaderElection != Defaults().LeaderElection {
			t.Errorf("%q: sections differ from the defaults: %+v %+v", body, cfg.Nodes, cfg.LeaderElection)
		}
	}
	// An empty secret is simply unset, which the driver's Validate reports.
	for _, token := range []string{"{}", ""} {
		_, _, err := load(t, "driver: testcloud\ndrivers:\n  testcloud:\n    token: "+token+"\n")
		wantProblem(t, err, "drivers.testcloud.token", "required")
		wantOnly(t, err, "drivers.testcloud.token")
	}
}

func TestLoadValueRanges(t *testing.T) {
	cases := []struct {
		yaml string
		bad  string // the problem key; "" means valid
	}{
		{"clusterName: prod.eu-1_a", ""},
		{"clusterName: -prod", "clusterName"},
		{"clusterName: " + strings.Repeat("a", 64), "clusterName"},
		{`clusterName: ""`, "clusterName"},
		{"leaderElection: {namespace: Kube_System}", "leaderElection.namespace"},
		{"leaderElection: {leaseName: UPPER}", "leaderElection.leaseName"},
		{"leaderElection: {leaseName: polyccm.example.com}", ""},
		{"nodes: {concurrentStatusUpdates: 0}", "nodes.concurrentStatusUpdates"},
		{"nodes: {concurrentLifecycleSyncs: -1}", "nodes.concurrentLifecycleSyncs"},
		{"nodes: {statusUpdateFrequency: 0s}", "nodes.statusUpdateFrequency"},
		{"services: {concurrentSyncs: 0}", "services.concurrentSyncs"},
		{"kubeAPI: {qps: 0}", "kubeAPI.qps"},
		{"kubeAPI: {burst: 0}", "kubeAPI.burst"},
		{"cloudAPI: {qps: -1}", "cloudAPI.qps"},
		{"cloudAPI: {qps: 0.5}", ""},
		{"cloudAPI: {burst: 0}", "cloudAPI.burst"},
		{"cloudAPI: {batchSize: 0}", "cloudAPI.batchSize"},
		{"cloudAPI: {timeout: 0s}", "cloudAPI.timeout"},
		{"cloudAPI: {batchWindow: 0s, cacheTTL: 0s}", ""},
		{"cloudAPI: {batchWindow: -1ms}", "cloudAPI.batchWindow"},
		{"cloudAPI: {batchWindow: 5s}", ""},
		{"cloudAPI: {batchWindow: 6s}", "cloudAPI.batchWindow"},
		{"cloudAPI: {cacheTTL: -1s}", "cloudAPI.cacheTTL"},
		{"logging: {verbosity: 10, format: json}", ""},
		{"logging: {verbosity: 11}", "logging.verbosity"},
		{"logging: {verbosity: -1}", "logging.verbosity"},
		{"serving: {bindAddress: '::'}", ""},
	}
	for _, c := range cases {
		t.Run(c.yaml, func(t *testing.T) {
			_, _, err := load(t, minimal+c.yaml+"\n")
			if c.bad == "" {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			wantOnly(t, err, c.bad)
		})
	}
}

// Wrong kinds are said in the config's words, not Go's ("expected type
// 'bool', got unconvertible type 'string'").
func TestLoadWrongKinds(t *testing.T) {
	cases := []struct {
		key, yaml, want string
	}{
		{"controllers.nodes", "yes", `must be true or false, not "yes"`},
		{"leaderElection.enabled", `"true"`, `"true" is quoted, so it is a string: write true or false without quotes`},
		{"controllers.routes", "1", "must be true or false, not the number 1"},
		{"drivers.testcloud.region", "123", `must be a string, not the number 123: quote it ("123")`},
		{"clusterName", "[a, b]", "must be a string, not a list"},
	}
	for _, c := range cases {
		t.Run(c.key+"="+c.yaml, func(t *testing.T) {
			_, _, err := load(t, yamlAt(c.key, c.yaml))
			p := wantProblem(t, err, c.key, c.want)
			if strings.Contains(p.Msg, "type '") || strings.Contains(p.Msg, "interface {}") {
				t.Errorf("problem names Go types: %s", p.Msg)
			}
		})
	}
}
