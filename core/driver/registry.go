// Package driver is the registry of cloud drivers compiled into polyccm.
//
// A driver package registers itself in init(); which driver packages are
// linked in is decided by build tags on the shims in drivers/all. The config
// file names one driver; the runner looks it up here, decodes the driver's
// config subtree into the struct NewConfig returns, and calls New.
package driver

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/polyccm/polyccm/core/annotations"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/suggest"
)

// Capability is a part of the cloud-controller contract a driver provides.
type Capability string

const (
	// Instances: node initialization, shutdown and deletion. Every driver
	// has it.
	Instances Capability = "instances"
	// LoadBalancers: Services of type LoadBalancer.
	LoadBalancers Capability = "loadBalancers"
	// Routes: pod CIDR routes in the cloud network.
	Routes Capability = "routes"
	// Volumes: the zone and region of the cloud's disks, for labelling
	// PersistentVolumes. Without it the volume-labels controller stays
	// idle.
	Volumes Capability = "volumes"
	// Zones: Nodes get topology.kubernetes.io/zone and region from
	// instance metadata (the contract suite holds a declaring driver to
	// it).
	Zones Capability = "zones"
	// Tasks: loops of the driver's own beside the service controller
	// (TaskCloud).
	Tasks Capability = "tasks"
	// Inventory: the driver lists the load balancers made for the
	// cluster, for `polyccm plan` (InventoryCloud).
	Inventory Capability = "inventory"
)

// Credential is one secret field of a driver's config (a secret.Secret
// in the type NewConfig returns) and the names deployments give it.
// systemd/polyccm.service, the Helm chart and the deployment docs are
// checked against these (test/registrycheck).
type Credential struct {
	// Key is the field's config key under drivers.<name> ("token").
	Key string
	// Name is the systemd credential the unit loads for it
	// (/etc/credstore/<Name>, `{credential: <Name>}`).
	Name string
	// SecretKey is the Helm chart's default key for it in the
	// credentials Secret (credentials.keys.<driver>.<Key>).
	SecretKey string
	// Unset says what the driver does without it; empty: the field is
	// required.
	Unset string
}

// Driver describes one cloud driver.
type Driver struct {
	// Name is what the config's `driver` key selects, and the build tag
	// suffix (drivers.<name>). Lower-case letters and digits.
	Name string
	// NewConfig returns a pointer to a new config struct with defaults
	// filled in. The config loader (package config; core never reads the
	// config) decodes the file's drivers.<name> subtree into it strictly,
	// by its koanf tags, then calls its Validate() error if it has one.
	NewConfig func() any
	// New builds the cloud from the decoded config. It must not call the
	// cloud: polyccm starts even while the cloud API is unreachable.
	New func(cfg any, deps Deps) (Cloud, error)
	// Title is the cloud's name for people ("Hetzner Cloud").
	Title string
	// Upstream is the per-cloud cloud-controller-manager the driver is a
	// drop-in for (its repository).
	Upstream string
	// Credentials are the config's secret fields, each with the names
	// deployments give it.
	Credentials []Credential
	// Annotations are the Service annotations its load balancers read
	// (with LoadBalancers): docs/<name>-load-balancers.md's table is
	// generated from them (test/docscheck).
	Annotations *annotations.Set
	// Capabilities lists what the cloud from New provides, so config
	// validation can reject, say, routes on a cloud without them; the
	// assembly (core/assembly) checks the cloud against it.
	Capabilities []Capability
	// Classify maps this cloud's SDK errors onto cloudapi kinds; every
	// call the driver makes is retried, counted and judged by it.
	Classify cloudapi.Classifier
	// CredentialsHint says what to check when the cloud rejects our
	// credentials, e.g. "the token at drivers.digitalocean.token".
	CredentialsHint string
	// UpstreamMetrics are the metrics the driver's upstream CCM exports
	// about its cloud calls, and how the driver's operations map onto
	// them (drivers/<name>/metrics.go, docs/metrics.md); the runner's
	// cloudapi.Client writes them beside polyccm's own.
	UpstreamMetrics []cloudapi.UpstreamFamily
}

// Has reports whether the driver declares capability c.
func (d Driver) Has(c Capability) bool {
	for _, x := range d.Capabilities {
		if x == c {
			return true
		}
	}
	return false
}

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9]*$`)

// Registry holds drivers by name. Tests make their own with NewRegistry;
// drivers register into the process-wide one with Register.
type Registry struct {
	mu      sync.RWMutex
	drivers map[string]Driver
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{drivers: map[string]Driver{}} }

// Register adds d. It panics on an invalid name, a missing constructor or a
// duplicate name: these are programming errors found at init.
func (r *Registry) Register(d Driver) {
	if !nameRE.MatchString(d.Name) {
		panic(fmt.Sprintf("driver: invalid driver name %q (want lower-case letters and digits)", d.Name))
	}
	if d.NewConfig == nil {
		panic(fmt.Sprintf("driver: %s registered with a nil NewConfig", d.Name))
	}
	if d.New == nil {
		panic(fmt.Sprintf("driver: %s registered with a nil New", d.Name))
	}
	if d.Classify == nil {
		panic(fmt.Sprintf("driver: %s registered with a nil Classify", d.Name))
	}
	if !d.Has(Instances) {
		panic(fmt.Sprintf("driver: %s must declare the %s capability", d.Name, Instances))
	}
	for _, c := range d.Credentials {
		if c.Key == "" || c.Name == "" || c.SecretKey == "" {
			panic(fmt.Sprintf("driver: %s credential %+v lacks a Key, Name or SecretKey", d.Name, c))
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.drivers[d.Name]; dup {
		panic(fmt.Sprintf("driver: %s registered twice", d.Name))
	}
	r.drivers[d.Name] = d
}

// Names returns the registered driver names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.drivers))
	for n := range r.drivers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Lookup returns the driver called name.
func (r *Registry) Lookup(name string) (Driver, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	d, ok := r.drivers[name]
	return d, ok
}

// Get is Lookup with an error that tells the operator what to do.
func (r *Registry) Get(name string) (Driver, error) {
	if d, ok := r.Lookup(name); ok {
		return d, nil
	}
	return Driver{}, r.NotCompiled(name)
}

// NotCompiled is the error for asking this registry for a driver it lacks.
func (r *Registry) NotCompiled(name string) error {
	return &NotCompiledError{Name: name, Have: r.Names()}
}

// NotCompiledError says a driver is not in this binary, which ones are, and
// how to build one that has it.
type NotCompiledError struct {
	Name string
	Have []string
}

// Known is every driver polyccm has, compiled into this binary or not
// (drivers/<name>; a test keeps the list in step with the tree). It tells
// a driver a rebuild would bring from a name that is no driver at all.
var Known = []string{"aws", "digitalocean", "gce", "hetzner", "openstack"}

func (e *NotCompiledError) Error() string {
	have := "none"
	if len(e.Have) > 0 {
		have = strings.Join(e.Have, ", ")
	}
	if !slices.Contains(Known, e.Name) {
		msg := fmt.Sprintf("%q is not a polyccm driver", e.Name)
		if near := suggest.Closest(e.Name, Known, 2); near != "" && e.Name != "" {
			msg += "; did you mean " + near + "?"
		} else {
			msg += "."
		}
		return msg + fmt.Sprintf(" polyccm's drivers are %s; this binary has: %s", strings.Join(Known, ", "), have)
	}
	want := append([]string{e.Name}, e.Have...)
	sort.Strings(want)
	return fmt.Sprintf("driver %q is not compiled into this binary; it has: %s. Rebuild with `make build DRIVERS=%s` (go build -tags %s)",
		e.Name, have, strings.Join(want, ","), BuildTags(want))
}

// BuildTags returns the -tags value that compiles exactly the named drivers.
func BuildTags(names []string) string {
	tags := []string{"custom"}
	for _, n := range names {
		tags = append(tags, "drivers."+n)
	}
	return strings.Join(tags, ",")
}

var global = NewRegistry()

// Register adds a driver to the process-wide registry; call it from init.
func Register(d Driver) { global.Register(d) }

// Default is the process-wide registry the compiled-in drivers joined.
func Default() *Registry { return global }
