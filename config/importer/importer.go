// Package importer turns the settings an upstream cloud-controller-manager
// ran with (its cloud config file, its environment variables and its
// command line) into polyccm's YAML config: `polyccm config import`.
//
// Every setting it is given either becomes a polyccm key, is left out
// because polyccm's default (or behaviour) is what it meant, or is refused
// with the reason polyccm cannot do it. Secrets are never copied: a token
// read from an environment variable or a file becomes a reference to the
// same variable or file.
package importer

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/polyccm/polyccm/config/secret"
	"github.com/polyccm/polyccm/core/driver"
)

// Input is what is known of the upstream CCM.
type Input struct {
	// From names the upstream CCM by polyccm's driver for it: aws, gce,
	// digitalocean, hetzner or openstack.
	From string
	// CloudConfig is its cloud config file (AWS's and OpenStack's
	// cloud.conf, GCE's gce.conf); nil: none given. CloudConfigName is its path.
	CloudConfig     []byte
	CloudConfigName string
	// Env is its environment. EnvFile says Env is an environment file
	// given as the CCM's, so every variable in it is meant for the CCM;
	// otherwise it is this process's environment, and only the variables
	// the CCM or its cloud SDK reads are looked at. EnvName names the
	// source in messages.
	Env     map[string]string
	EnvFile bool
	EnvName string
	// Args is its command line (the program name first or not); nil:
	// not given.
	Args []string
	// ReadFile reads the file the command line's --cloud-config names
	// when CloudConfig is nil; nil: it is not read.
	ReadFile func(path string) ([]byte, error)
	// Registry has the drivers whose config keys order the output; nil:
	// driver.Default().
	Registry *driver.Registry
}

// Item is one message about one upstream setting.
type Item struct {
	// Source names the setting: an environment variable, a flag, or a
	// cloud config file's section and key.
	Source string
	Text   string
}

func (i Item) String() string {
	if i.Source == "" {
		return i.Text
	}
	return i.Source + ": " + i.Text
}

// Result is the imported config and what to tell the operator.
type Result struct {
	// YAML is the polyccm config. With Unmapped not empty it holds the
	// rest, and lists what is missing in its header.
	YAML []byte
	// Notes say how settings were carried over where it needs saying:
	// secret references, settings polyccm takes from elsewhere, settings
	// left to polyccm's default.
	Notes []Item
	// Unmapped are settings polyccm cannot carry over, each with why.
	Unmapped []Item
}

// InputError lists what is wrong with the input itself: a file that does
// not parse, a value the upstream CCM would refuse to start with.
type InputError struct{ Problems []string }

func (e *InputError) Error() string {
	if len(e.Problems) == 1 {
		return e.Problems[0]
	}
	return fmt.Sprintf("%d problems with the upstream settings:\n  %s", len(e.Problems), strings.Join(e.Problems, "\n  "))
}

// Clouds are the values of Input.From.
var Clouds = []string{"aws", "gce", "digitalocean", "hetzner", "openstack"}

// importer is one upstream CCM's side of the import.
type importer interface {
	// upstream names the CCM in messages.
	upstream() string
	// providerNames are the --cloud-provider values it answers to.
	providerNames() []string
	// cloudConfig maps its cloud config file; nil when it reads none.
	cloudConfig() func(b *builder, entries []iniEntry)
	// readsEnv says whether this process's variable name is one the CCM
	// or its SDK reads (or is in its namespace, like HCLOUD_*).
	readsEnv(name string) bool
	// env maps its environment variables.
	env(b *builder, env map[string]string)
	// cloudFlags adds its own flags and controllers to the upstream
	// command line's.
	cloudFlags(c *commandLine)
	// finish makes the decisions that need every source: the cluster
	// name, which controllers run.
	finish(b *builder, c *commandLine)
}

func importerFor(name string) (importer, error) {
	switch name {
	case "aws":
		return &awsImporter{}, nil
	case "gce":
		return &gceImporter{}, nil
	case "digitalocean":
		return &doImporter{}, nil
	case "hetzner":
		return &hetznerImporter{}, nil
	case "openstack":
		return &openstackImporter{}, nil
	}
	return nil, fmt.Errorf("--from %q: import from one of %s", name, strings.Join(Clouds, ", "))
}

// Import maps the upstream settings onto polyccm's config.
func Import(in Input) (*Result, error) {
	imp, err := importerFor(in.From)
	if err != nil {
		return nil, err
	}
	if in.Registry == nil {
		in.Registry = driver.Default()
	}
	if in.EnvName == "" {
		in.EnvName = "the environment"
	}
	b := &builder{in: in, imp: imp, driver: in.From, vals: map[string]setting{}}
	b.set("driver", in.From, "")

	cl := newCommandLine(imp)
	if in.Args != nil {
		cl.parse(b, in.Args)
	}

	// The cloud config: the file given, else the one the command line names.
	cfgText, cfgName := in.CloudConfig, in.CloudConfigName
	if cfgText == nil && cl.cloudConfigPath != "" && imp.cloudConfig() != nil {
		if in.ReadFile == nil {
			b.invalidf("the command line's --cloud-config=%s was not read; pass the file with --cloud-config", cl.cloudConfigPath)
		} else if data, err := in.ReadFile(cl.cloudConfigPath); err != nil {
			b.invalidf("reading the command line's --cloud-config: %v; pass a copy of the file with --cloud-config", err)
		} else {
			cfgText, cfgName = data, cl.cloudConfigPath
		}
	}
	if cfgName == "" {
		cfgName = "cloud config"
	}
	b.cfgName = cfgName
	if cfgText != nil {
		if imp.cloudConfig() == nil {
			b.invalidf("%s reads no cloud config file; leave --cloud-config out", imp.upstream())
		} else if entries, err := parseINI(string(cfgText)); err != nil {
			b.invalidf("%s: %v", cfgName, err)
		} else {
			imp.cloudConfig()(b, entries)
		}
	}

	env := map[string]string{}
	for k, v := range in.Env {
		if in.EnvFile || imp.readsEnv(k) {
			env[k] = v
		}
	}
	imp.env(b, env)
	if in.Args == nil {
		b.note("", "no upstream command line was given (--flags or --flags-file), so the controllers and what its flags set (--cluster-name, leader election, worker counts) are polyccm's defaults")
	}
	imp.finish(b, cl)

	if len(b.invalid) > 0 {
		return nil, &InputError{Problems: b.invalid}
	}
	out, err := b.render()
	if err != nil {
		return nil, err
	}
	return &Result{YAML: out, Notes: b.notes, Unmapped: b.unmapped}, nil
}

// setting is one key of the output, with the upstream setting it came from.
type setting struct {
	value any
	from  string
}

// builder collects the output keys and the messages.
type builder struct {
	in       Input
	imp      importer
	driver   string
	cfgName  string
	vals     map[string]setting
	notes    []Item
	unmapped []Item
	invalid  []string
}

// set sets a key; a driver key is given relative to drivers.<driver>.
func (b *builder) set(key string, v any, from string) {
	b.vals[key] = setting{value: v, from: from}
}

func (b *builder) setDriver(key string, v any, from string) {
	b.set("drivers."+b.driver+"."+key, v, from)
}

func (b *builder) has(key string) bool { _, ok := b.vals[key]; return ok }

// secretEnv makes a driver secret a reference to an environment variable,
// and says so.
func (b *builder) secretEnv(key, name, from string) {
	b.setDriver(key, secret.Secret{Env: name}, from)
	b.note(from, "drivers.%s.%s is {env: %s}: polyccm reads the variable when it needs the credential, so run it with %s set as the upstream CCM had it; the value was not copied", b.driver, key, name, name)
}

// secretFile makes a driver secret a reference to a file.
func (b *builder) secretFile(key, path, from string) {
	b.setDriver(key, secret.Secret{File: path}, from)
	b.note(from, "drivers.%s.%s is {file: %s}: polyccm reads that file (again after it changes) where it runs; the value was not copied", b.driver, key, path)
}

func (b *builder) note(source, format string, args ...any) {
	b.notes = append(b.notes, Item{Source: source, Text: fmt.Sprintf(format, args...)})
}

func (b *builder) unmappedf(source, format string, args ...any) {
	b.unmapped = append(b.unmapped, Item{Source: source, Text: fmt.Sprintf(format, args...)})
}

func (b *builder) invalidf(format string, args ...any) {
	b.invalid = append(b.invalid, fmt.Sprintf(format, args...))
}

func (b *builder) upstreamName() string { return b.imp.upstream() }

// urlValue checks a URL the output will hold: credentials in it would be a
// secret copied in the clear, so such a URL is refused.
func (b *builder) urlValue(source, v string) bool {
	if u, err := url.Parse(v); err == nil && u.User != nil {
		b.unmappedf(source, "the URL holds credentials (user:password@), which polyccm never copies into its config or sends; give the URL without them")
		return false
	}
	return true
}

// sortedKeys returns m's keys in order, for deterministic output.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
