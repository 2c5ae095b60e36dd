// Package digitalocean is polyccm's DigitalOcean driver: a thin translation
// between the DigitalOcean API (through godo) and polyccm's core contracts.
// Batching, caching, retries and metrics come from core.
package digitalocean

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/digitalocean/godo"

	"github.com/polyccm/polyccm/config"
	"github.com/polyccm/polyccm/config/secret"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/instances"
	"github.com/polyccm/polyccm/core/loadbalancers"
	"github.com/polyccm/polyccm/core/version"
	"github.com/polyccm/polyccm/core/volumes"
)

// Name is the driver's name in the config and in build tags.
const Name = "digitalocean"

// DefaultAPIURL is the public DigitalOcean API.
const DefaultAPIURL = "https://api.digitalocean.com/"

// Config is the drivers.digitalocean subtree.
type Config struct {
	// Token is an API token with read access to droplets and write access
	// to load balancers (and read access to volumes, for
	// controllers.volumeLabels).
	Token secret.Secret `koanf:"token" secret:"token"`
	// APIURL overrides the API endpoint (a proxy, or a test double).
	APIURL string `koanf:"apiURL"`
	// VPCID is the VPC the cluster's droplets and load balancers live in.
	VPCID string `koanf:"vpcID"`
	// Region places load balancers when no node carries a region label
	// yet; normally the nodes' region is used.
	Region string `koanf:"region"`
	// ClusterID is the DigitalOcean CCM's DO_CLUSTER_ID (a DOKS cluster's
	// UUID): load balancers are tagged k8s:<clusterID>, as that CCM tags
	// them. Unset, they get no cluster tag, as with that CCM.
	ClusterID string `koanf:"clusterID"`
	// LoadBalancer holds defaults for new load balancers.
	LoadBalancer LoadBalancerConfig `koanf:"loadBalancer"`
	// Firewall is the DigitalOcean CCM's public-access firewall
	// (PUBLIC_ACCESS_FIREWALL_NAME and _TAGS); off while Name is empty.
	Firewall FirewallConfig `koanf:"firewall"`
}

// LoadBalancerConfig is drivers.digitalocean.loadBalancer.
type LoadBalancerConfig struct {
	// DefaultType is the type of a load balancer whose Service has no
	// do-loadbalancer-type annotation: REGIONAL_NETWORK, as the
	// DigitalOcean CCM (DEFAULT_LB_TYPE), or REGIONAL. The type chosen is
	// written on the Service, so changing this never changes a live one.
	DefaultType string `koanf:"defaultType"`
}

// defaultType is the type of a new load balancer whose Service names none.
func (c *Config) defaultType() string {
	if c.LoadBalancer.DefaultType == "" {
		return typeRegionalNetwork
	}
	return c.LoadBalancer.DefaultType
}

// FirewallConfig is drivers.digitalocean.firewall.
type FirewallConfig struct {
	// Name of the Cloud Firewall polyccm keeps open for NodePort Services
	// and REGIONAL_NETWORK load balancers. Empty: no firewall is managed.
	Name string `koanf:"name"`
	// Tags are the droplet tags the firewall applies to (the cluster's
	// nodes); required with Name.
	Tags []string `koanf:"tags"`
}

var (
	uuidRE   = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	regionRE = regexp.MustCompile(`^[a-z]{3}[0-9]$`)
	tagRE    = regexp.MustCompile(`^[A-Za-z0-9:_-]{1,255}$`)
)

// Load balancer types.
const (
	typeRegional        = "REGIONAL"
	typeRegionalNetwork = "REGIONAL_NETWORK"
)

// Validate checks the subtree; keys are relative to drivers.digitalocean.
func (c *Config) Validate() error {
	var errs []error
	if c.Token.IsZero() {
		errs = append(errs, config.Problem{Key: "token", Msg: "required: a DigitalOcean API token (read droplets, manage load balancers), given as " + secret.Forms})
	}
	if err := config.CheckURL("apiURL", c.APIURL, DefaultAPIURL); err != nil {
		errs = append(errs, err)
	}
	if c.Region != "" && !regionRE.MatchString(c.Region) {
		errs = append(errs, config.Problem{Key: "region", Msg: fmt.Sprintf("%q is not a region slug (like fra1 or nyc3)", c.Region)})
	}
	if t := c.LoadBalancer.DefaultType; t != "" && t != typeRegional && t != typeRegionalNetwork {
		errs = append(errs, config.Problem{Key: "loadBalancer.defaultType", Msg: fmt.Sprintf("%q is not a load balancer type: use REGIONAL_NETWORK (the DigitalOcean CCM's default) or REGIONAL", t)})
	}
	if c.ClusterID != "" && !tagRE.MatchString("k8s:"+c.ClusterID) {
		errs = append(errs, config.Problem{Key: "clusterID", Msg: fmt.Sprintf("%q cannot be part of a tag (k8s:<clusterID>): use letters, digits, '-', '_' and ':' (a DOKS cluster's UUID)", c.ClusterID)})
	}
	switch {
	case c.Firewall.Name != "" && len(c.Firewall.Tags) == 0:
		errs = append(errs, config.Problem{Key: "firewall.tags", Msg: "required with firewall.name: the droplet tags of the cluster's nodes, which the firewall applies to"})
	case c.Firewall.Name == "" && len(c.Firewall.Tags) > 0:
		errs = append(errs, config.Problem{Key: "firewall.name", Msg: "required with firewall.tags: the name of the Cloud Firewall polyccm keeps open (or remove firewall.tags to manage none)"})
	}
	if len(c.Firewall.Tags) > 5 {
		errs = append(errs, config.Problem{Key: "firewall.tags", Msg: fmt.Sprintf("%d tags; a DigitalOcean firewall takes at most 5: use one tag the cluster's nodes share", len(c.Firewall.Tags))})
	}
	for i, t := range c.Firewall.Tags {
		if !tagRE.MatchString(t) {
			errs = append(errs, config.Problem{Key: fmt.Sprintf("firewall.tags[%d]", i), Msg: fmt.Sprintf("%q is not a DigitalOcean tag: letters, digits, '-', '_' and ':', at most 255", t)})
		}
	}
	if c.VPCID != "" && !uuidRE.MatchString(c.VPCID) {
		errs = append(errs, config.Problem{Key: "vpcID", Msg: fmt.Sprintf("%q is not a VPC UUID (like 5a4981aa-9653-4bd1-bef5-d6bff52042e4)", c.VPCID)})
	}
	return errors.Join(errs...)
}

func init() {
	driver.Register(driver.Driver{
		Name: Name,
		NewConfig: func() any {
			return &Config{APIURL: DefaultAPIURL, LoadBalancer: LoadBalancerConfig{DefaultType: typeRegionalNetwork}, Firewall: FirewallConfig{Tags: []string{}}}
		},
		New:      New,
		Title:    "DigitalOcean",
		Upstream: "digitalocean/digitalocean-cloud-controller-manager",
		Credentials: []driver.Credential{
			{Key: "token", Name: "digitalocean-token", SecretKey: "digitalocean-token"},
		},
		Annotations:     LBAnnotations,
		Capabilities:    []driver.Capability{driver.Instances, driver.LoadBalancers, driver.Inventory, driver.Tasks, driver.Volumes},
		Classify:        classify,
		UpstreamMetrics: upstreamMetrics,
		CredentialsHint: "the API token at drivers.digitalocean.token (it needs read access to droplets and write access to load balancers)",
	})
}

// Cloud is the DigitalOcean cloud for one cluster.
type Cloud struct {
	client *godo.Client
	api    *cloudapi.Client
	cfg    Config
	lbs    *loadBalancers

	listing *instances.Listing[int, godo.Droplet]
	// volumeListing is the same for volumes.
	volumeListing *volumes.Listing[string, *godo.Volume]
}

// New builds the cloud. It makes no API call.
func New(cfgAny any, deps driver.Deps) (driver.Cloud, error) {
	cfg, ok := cfgAny.(*Config)
	if !ok {
		return nil, fmt.Errorf("digitalocean: config is %T, want *digitalocean.Config", cfgAny)
	}
	base := cfg.APIURL
	if !strings.HasSuffix(base, "/") {
		// godo resolves "v2/..." against the base; without the slash a
		// proxy path prefix would be dropped.
		base += "/"
	}
	var rt http.RoundTripper = http.DefaultTransport.(*http.Transport).Clone()
	if deps.Transport != nil {
		rt = deps.Transport(rt)
	}
	hc := &http.Client{Transport: &secret.Bearer{Token: cfg.Token, Cloud: "DigitalOcean", Base: rt}}
	client, err := godo.New(hc, godo.SetBaseURL(base), godo.SetUserAgent(version.UserAgent()))
	if err != nil {
		return nil, fmt.Errorf("digitalocean: drivers.digitalocean.apiURL: %w", err)
	}
	c := &Cloud{client: client, api: deps.API, cfg: *cfg}
	c.listing = c.newListing()
	c.volumeListing = c.newVolumeListing()
	c.lbs = &loadBalancers{c: c, deps: deps, cluster: deps.ClusterName, own: loadbalancers.NewOwnership(loadbalancers.Options{
		Cloud:         "DigitalOcean",
		Informers:     deps.Informers,
		Clients:       deps.ClientBuilder,
		Recorder:      deps.Recorder,
		AdoptUnmarked: deps.AdoptUnmarkedLoadBalancers,
		// The API does not return a load balancer's tags, so its owner is
		// recorded on the Service.
		Records: true,
		Asks:    asks,
	})}
	return c, nil
}

// Instances returns the batched instance source.
func (c *Cloud) Instances() instances.Source { return c }
