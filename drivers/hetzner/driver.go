// Package hetzner is polyccm's Hetzner Cloud driver: a thin translation
// between the Hetzner Cloud API (through hcloud-go) and polyccm's core
// contracts, a drop-in for hetznercloud/hcloud-cloud-controller-manager.
// Batching, caching, retries and metrics come from core.
package hetzner

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"github.com/polyccm/polyccm/config"
	"github.com/polyccm/polyccm/config/secret"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/instances"
	"github.com/polyccm/polyccm/core/version"
	"github.com/polyccm/polyccm/core/volumes"
)

// Name is the driver's name in the config and in build tags.
const Name = "hetzner"

// DefaultAPIURL is the public Hetzner Cloud API (hcloud CCM's
// HCLOUD_ENDPOINT default).
const DefaultAPIURL = "https://api.hetzner.cloud/v1"

// Address families of Node addresses (HCLOUD_INSTANCES_ADDRESS_FAMILY).
const (
	FamilyIPv4      = "ipv4"
	FamilyIPv6      = "ipv6"
	FamilyDualStack = "dualstack"
)

// Config is the drivers.hetzner subtree. Each key names the hcloud CCM
// environment variable it replaces.
type Config struct {
	// Token is a Hetzner Cloud API token with read and write access
	// (HCLOUD_TOKEN).
	Token secret.Secret `koanf:"token" secret:"token"`
	// APIURL overrides the API endpoint (HCLOUD_ENDPOINT).
	APIURL string `koanf:"apiURL"`
	// Network is the private Network's name or ID (HCLOUD_NETWORK): Nodes
	// get their InternalIP in it, routes are made in it, and load
	// balancers attach to it.
	Network string `koanf:"network"`
	// Instances shapes Node metadata.
	Instances InstancesConfig `koanf:"instances"`
	// LoadBalancer holds defaults for load balancers (the
	// HCLOUD_LOAD_BALANCERS_* variables), overridden per Service by the
	// load-balancer.hetzner.cloud/* annotations.
	LoadBalancer LoadBalancerConfig `koanf:"loadBalancer"`
}

// InstancesConfig is drivers.hetzner.instances.
type InstancesConfig struct {
	// AddressFamily of the Nodes' ExternalIPs: ipv4 (the default), ipv6
	// or dualstack (HCLOUD_INSTANCES_ADDRESS_FAMILY).
	AddressFamily string `koanf:"addressFamily"`
	// ZoneLabel sets topology.kubernetes.io/zone to the location's legacy
	// datacenter name, as hcloud CCM does by default
	// (HCLOUD_INSTANCES_ZONE_LABEL_ENABLED).
	ZoneLabel bool `koanf:"zoneLabel"`
}

var locationRE = regexp.MustCompile(`^[a-z]{3,4}[0-9]?$`)

// Validate checks the subtree; keys are relative to drivers.hetzner.
func (c *Config) Validate() error {
	var errs []error
	if c.Token.IsZero() {
		errs = append(errs, config.Problem{Key: "token", Msg: "required: a Hetzner Cloud API token with read and write access (hcloud CCM's HCLOUD_TOKEN), given as " + secret.Forms})
	}
	if err := config.CheckURL("apiURL", c.APIURL, DefaultAPIURL); err != nil {
		errs = append(errs, err)
	}
	switch c.Instances.AddressFamily {
	case FamilyIPv4, FamilyIPv6, FamilyDualStack:
	default:
		errs = append(errs, config.Problem{Key: "instances.addressFamily", Msg: fmt.Sprintf("%q is not an address family: use ipv4 (the default), ipv6 or dualstack", c.Instances.AddressFamily)})
	}
	if n := c.Network; n != "" && strings.TrimSpace(n) != n {
		errs = append(errs, config.Problem{Key: "network", Msg: fmt.Sprintf("%q has spaces around it: give the Network's name or ID", n)})
	}
	errs = append(errs, c.LoadBalancer.validate()...)
	if c.LoadBalancer.UsePrivateIP && c.Network == "" {
		errs = append(errs, config.Problem{Key: "loadBalancer.usePrivateIP", Msg: "needs network: targets can use private IPs only in a Network; set drivers.hetzner.network, or turn usePrivateIP off"})
	}
	return errors.Join(errs...)
}

func init() {
	driver.Register(driver.Driver{
		Name: Name,
		NewConfig: func() any {
			return &Config{APIURL: DefaultAPIURL, Instances: InstancesConfig{AddressFamily: FamilyIPv4, ZoneLabel: true}, LoadBalancer: defaultLoadBalancerConfig()}
		},
		New:      New,
		Title:    "Hetzner Cloud",
		Upstream: "hetznercloud/hcloud-cloud-controller-manager",
		Credentials: []driver.Credential{
			{Key: "token", Name: "hcloud-token", SecretKey: "hcloud-token"},
		},
		Annotations:     LBAnnotations,
		Capabilities:    []driver.Capability{driver.Instances, driver.Zones, driver.LoadBalancers, driver.Inventory, driver.Routes, driver.Volumes},
		Classify:        classify,
		UpstreamMetrics: upstreamMetrics,
		CredentialsHint: "the API token at drivers.hetzner.token (a Read & Write token of the cluster's Hetzner Cloud project)",
	})
}

// Cloud is the Hetzner Cloud for one cluster.
type Cloud struct {
	client *hcloud.Client
	api    *cloudapi.Client
	cfg    Config
	deps   driver.Deps
	lb     *loadBalancers
	routes *routes

	listing *instances.Listing[int64, *hcloud.Server]
	// volumeListing is the same for volumes.
	volumeListing *volumes.Listing[int64, *hcloud.Volume]

	netMu sync.Mutex
	netID int64 // the configured Network's ID, once resolved
}

// New builds the cloud. It makes no API call: the Network is resolved on
// first use, so polyccm starts while the API is unreachable.
func New(cfgAny any, deps driver.Deps) (driver.Cloud, error) {
	cfg, ok := cfgAny.(*Config)
	if !ok {
		return nil, fmt.Errorf("hetzner: config is %T, want *hetzner.Config", cfgAny)
	}
	var rt http.RoundTripper = http.DefaultTransport.(*http.Transport).Clone()
	if deps.Transport != nil {
		rt = deps.Transport(rt)
	}
	hc := &http.Client{Transport: &secret.Bearer{Token: cfg.Token, Cloud: "Hetzner Cloud", Base: rt}}
	client := hcloud.NewClient(
		hcloud.WithEndpoint(strings.TrimSuffix(cfg.APIURL, "/")),
		hcloud.WithHTTPClient(hc),
		hcloud.WithApplication("polyccm", version.Version),
		// core/cloudapi retries, with one budget and one hold-off for
		// every driver; hcloud-go's own retries would multiply its.
		hcloud.WithRetryOpts(hcloud.RetryOpts{MaxRetries: 0}),
	)
	c := &Cloud{client: client, api: deps.API, cfg: *cfg, deps: deps}
	c.listing = c.newListing()
	c.volumeListing = c.newVolumeListing()
	c.initLoadBalancers()
	c.initRoutes()
	return c, nil
}

// Instances returns the batched instance source.
func (c *Cloud) Instances() instances.Source { return c }
