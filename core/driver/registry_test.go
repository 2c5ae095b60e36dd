package driver_test

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
)

// valid returns a driver that Register accepts; tests break one field.
func valid(name string) driver.Driver {
	return driver.Driver{
		Name:         name,
		NewConfig:    func() any { return &struct{}{} },
		New:          func(any, driver.Deps) (driver.Cloud, error) { return nil, nil },
		Capabilities: []driver.Capability{driver.Instances},
		Classify:     func(error) cloudapi.Classification { return cloudapi.Classification{} },
	}
}

// mustPanic runs f and returns the panic message, failing if f returns.
func mustPanic(t *testing.T, f func()) (msg string) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			t.Fatalf("no panic")
		}
		msg = fmt.Sprint(r)
	}()
	f()
	return ""
}

func TestRegisterRejectsProgrammingErrors(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*driver.Driver)
		wantMsg string
	}{
		{"empty name", func(d *driver.Driver) { d.Name = "" }, "invalid driver name"},
		{"upper case", func(d *driver.Driver) { d.Name = "AWS" }, "invalid driver name"},
		{"dash", func(d *driver.Driver) { d.Name = "my-cloud" }, "invalid driver name"},
		{"leading digit", func(d *driver.Driver) { d.Name = "9cloud" }, "invalid driver name"},
		{"dot", func(d *driver.Driver) { d.Name = "drivers.aws" }, "invalid driver name"},
		{"nil NewConfig", func(d *driver.Driver) { d.NewConfig = nil }, "nil NewConfig"},
		{"nil New", func(d *driver.Driver) { d.New = nil }, "nil New"},
		{"nil Classify", func(d *driver.Driver) { d.Classify = nil }, "nil Classify"},
		{"no capabilities", func(d *driver.Driver) { d.Capabilities = nil }, "instances capability"},
		{"no instances", func(d *driver.Driver) { d.Capabilities = []driver.Capability{driver.Routes} }, "instances capability"},
		{"credential without a name", func(d *driver.Driver) {
			d.Credentials = []driver.Credential{{Key: "token", SecretKey: "fake-token"}}
		}, "lacks a Key, Name or SecretKey"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := driver.NewRegistry()
			d := valid("fake")
			tt.mutate(&d)
			msg := mustPanic(t, func() { r.Register(d) })
			if !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("panic %q, want it to mention %q", msg, tt.wantMsg)
			}
			// A rejected driver must not have been half-registered.
			if n := r.Names(); len(n) != 0 {
				t.Errorf("Names() = %v after a rejected Register", n)
			}
		})
	}
}

func TestRegisterAcceptsValidNames(t *testing.T) {
	r := driver.NewRegistry()
	for _, n := range []string{"aws", "gcp2", "x", "digitalocean"} {
		r.Register(valid(n))
	}
	if got, want := r.Names(), []string{"aws", "digitalocean", "gcp2", "x"}; !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
}

func TestRegisterDuplicatePanics(t *testing.T) {
	r := driver.NewRegistry()
	r.Register(valid("aws"))
	msg := mustPanic(t, func() { r.Register(valid("aws")) })
	if !strings.Contains(msg, "twice") {
		t.Errorf("panic %q, want it to say the driver was registered twice", msg)
	}
}

func TestNamesSorted(t *testing.T) {
	r := driver.NewRegistry()
	if n := r.Names(); n == nil || len(n) != 0 {
		t.Errorf("empty registry Names() = %#v, want an empty non-nil slice", n)
	}
	for _, n := range []string{"zeta", "alpha", "mid", "beta"} {
		r.Register(valid(n))
	}
	if got, want := r.Names(), []string{"alpha", "beta", "mid", "zeta"}; !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
}

func TestRegistriesAreIndependent(t *testing.T) {
	a, b := driver.NewRegistry(), driver.NewRegistry()
	a.Register(valid("aws"))
	if _, ok := b.Lookup("aws"); ok {
		t.Error("a driver registered in one registry is visible in another")
	}
}

func TestGetFound(t *testing.T) {
	r := driver.NewRegistry()
	d := valid("aws")
	d.CredentialsHint = "check the key"
	d.Capabilities = []driver.Capability{driver.Instances, driver.LoadBalancers}
	r.Register(d)
	got, err := r.Get("aws")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.Name != "aws" || got.CredentialsHint != "check the key" {
		t.Errorf("Get returned %+v", got)
	}
	if !got.Has(driver.LoadBalancers) || got.Has(driver.Routes) {
		t.Errorf("Has: capabilities %v not reported faithfully", got.Capabilities)
	}
}

func TestGetMissing(t *testing.T) {
	tests := []struct {
		name    string
		have    []string
		ask     string
		want    []string // substrings
		notWant []string
	}{
		{
			// A driver polyccm has, left out of this build: a rebuild brings it.
			name: "known driver, others compiled",
			have: []string{"digitalocean", "aws"},
			ask:  "gce",
			want: []string{
				`driver "gce" is not compiled into this binary`,
				"it has: aws, digitalocean.",
				"`make build DRIVERS=aws,digitalocean,gce`",
				"-tags custom,drivers.aws,drivers.digitalocean,drivers.gce",
			},
		},
		{
			// No build has it: advising one would send the operator on a
			// rebuild that cannot work.
			name:    "no such driver",
			have:    []string{"digitalocean", "aws"},
			ask:     "vultr",
			want:    []string{`"vultr" is not a polyccm driver`, "polyccm's drivers are aws, digitalocean, gce, hetzner", "this binary has: aws, digitalocean"},
			notWant: []string{"make build", "-tags", "did you mean"},
		},
		{
			name:    "misspelt driver",
			have:    []string{"digitalocean"},
			ask:     "digtalocean",
			want:    []string{`"digtalocean" is not a polyccm driver; did you mean digitalocean?`},
			notWant: []string{"make build"},
		},
		{
			name: "identifier, none compiled",
			ask:  "aws",
			want: []string{"it has: none", "DRIVERS=aws`", "-tags custom,drivers.aws)"},
		},
		{
			// Not a valid driver name: suggesting a build with it would
			// only produce a build error.
			name:    "not an identifier",
			have:    []string{"aws"},
			ask:     "Digital-Ocean",
			want:    []string{`"Digital-Ocean" is not a polyccm driver; did you mean digitalocean?`, "this binary has: aws"},
			notWant: []string{"make build", "-tags"},
		},
		{
			name:    "empty name",
			ask:     "",
			want:    []string{`"" is not a polyccm driver`, "this binary has: none"},
			notWant: []string{"make build", "did you mean"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := driver.NewRegistry()
			for _, n := range tt.have {
				r.Register(valid(n))
			}
			d, err := r.Get(tt.ask)
			if err == nil {
				t.Fatalf("Get(%q) = %+v, want an error", tt.ask, d)
			}
			if d.Name != "" {
				t.Errorf("Get returned a non-zero Driver %q with its error", d.Name)
			}
			var nc *driver.NotCompiledError
			if !errors.As(err, &nc) {
				t.Fatalf("error %T is not a *NotCompiledError", err)
			}
			if nc.Name != tt.ask {
				t.Errorf("NotCompiledError.Name = %q, want %q", nc.Name, tt.ask)
			}
			msg := err.Error()
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q lacks %q", msg, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(msg, w) {
					t.Errorf("error %q should not contain %q", msg, w)
				}
			}
		})
	}
}

func TestNotCompiledDoesNotMutateHave(t *testing.T) {
	// Error() sorts a list built from Have; it must not reorder the
	// caller's slice (append may share the backing array).
	have := make([]string, 2, 10)
	have[0], have[1] = "zeta", "beta"
	e := &driver.NotCompiledError{Name: "alpha", Have: have}
	_ = e.Error()
	_ = e.Error()
	if !slices.Equal(have, []string{"zeta", "beta"}) {
		t.Errorf("Have changed to %v", have)
	}
}

func TestBuildTags(t *testing.T) {
	tests := []struct {
		names []string
		want  string
	}{
		{nil, "custom"},
		{[]string{"aws"}, "custom,drivers.aws"},
		{[]string{"aws", "digitalocean"}, "custom,drivers.aws,drivers.digitalocean"},
	}
	for _, tt := range tests {
		if got := driver.BuildTags(tt.names); got != tt.want {
			t.Errorf("BuildTags(%v) = %q, want %q", tt.names, got, tt.want)
		}
	}
}

// Known is every driver in the tree: a new one under drivers/ must be
// listed, or a config naming it would be told it is no driver at all.
func TestKnownMatchesTheTree(t *testing.T) {
	entries, err := os.ReadDir("../../drivers")
	if err != nil {
		t.Fatal(err)
	}
	var tree []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "all" {
			tree = append(tree, e.Name())
		}
	}
	if !slices.Equal(tree, driver.Known) {
		t.Errorf("drivers/ holds %v, driver.Known lists %v", tree, driver.Known)
	}
}
