// Package openstack is polyccm's OpenStack driver: a thin translation
// between the OpenStack APIs (Keystone, Nova, Neutron, through gophercloud)
// and polyccm's core contracts, a drop-in for kubernetes/cloud-provider-openstack
// (openstack-cloud-controller-manager). Batching, caching, retries and
// metrics come from core.
package openstack

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/gophercloud/gophercloud/v2"
	blockvolumes "github.com/gophercloud/gophercloud/v2/openstack/blockstorage/v3/volumes"

	"github.com/polyccm/polyccm/config"
	"github.com/polyccm/polyccm/config/secret"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/instances"
	"github.com/polyccm/polyccm/core/volumes"
)

// Name is the driver's name in the config and in build tags.
const Name = "openstack"

// Config is the drivers.openstack subtree: the [Global] and [Networking]
// sections of openstack-cloud-controller-manager's cloud.conf, each key
// named for the one it replaces.
type Config struct {
	// Clouds is a clouds.yaml (openstacksdk's format, which upstream reads
	// with [Global] use-clouds), given as a secret since it holds one;
	// Cloud names its entry (OS_CLOUD). Keys set below win over it.
	Clouds secret.Secret `koanf:"clouds"`
	Cloud  string        `koanf:"cloud"`
	// AuthURL is Keystone's v3 endpoint (auth-url).
	AuthURL string `koanf:"authURL"`
	// Region picks the endpoints from the catalog (region); Nodes get it
	// as topology.kubernetes.io/region.
	Region string `koanf:"region"`
	// Password authentication (username/user-id, password, the project
	// and domains).
	Username          string        `koanf:"username"`
	UserID            string        `koanf:"userID"`
	Password          secret.Secret `koanf:"password" secret:"line"`
	UserDomainName    string        `koanf:"userDomainName"`
	UserDomainID      string        `koanf:"userDomainID"`
	ProjectName       string        `koanf:"projectName"`
	ProjectID         string        `koanf:"projectID"`
	ProjectDomainName string        `koanf:"projectDomainName"`
	ProjectDomainID   string        `koanf:"projectDomainID"`
	// DomainName and DomainID stand for the user's and the project's
	// domain where those are not given (domain-name, domain-id), as
	// gophercloud's clientconfig reads them upstream.
	DomainName string `koanf:"domainName"`
	DomainID   string `koanf:"domainID"`
	// Application credential authentication (application-credential-id,
	// or -name with the user; -secret), the usual choice for a CCM.
	ApplicationCredentialID     string        `koanf:"applicationCredentialID"`
	ApplicationCredentialName   string        `koanf:"applicationCredentialName"`
	ApplicationCredentialSecret secret.Secret `koanf:"applicationCredentialSecret" secret:"token"`
	// EndpointType is the catalog interface used: public (the default),
	// internal or admin (os-endpoint-type).
	EndpointType string `koanf:"endpointType"`
	// CAFile is a PEM bundle the API's certificates are checked against
	// (ca-file); empty: the system's.
	CAFile string `koanf:"caFile"`
	// RegionalProviderID writes providerIDs as openstack://<region>/<id>
	// (the OS_CCM_REGIONAL=true variable) instead of openstack:///<id>.
	RegionalProviderID bool `koanf:"regionalProviderID"`
	// RouterID is the Neutron router pod routes go in ([Route] router-id).
	RouterID string `koanf:"routerID"`
	// Networking is the [Networking] section.
	Networking NetworkingConfig `koanf:"networking"`
}

// NetworkingConfig is drivers.openstack.networking: how Node addresses are
// read from a server's networks.
type NetworkingConfig struct {
	// PublicNetworkNames: addresses on these networks are ExternalIPs
	// (public-network-name, repeatable).
	PublicNetworkNames []string `koanf:"publicNetworkNames"`
	// InternalNetworkNames: when set, only addresses on these networks
	// are InternalIPs, the others are left out (internal-network-name).
	InternalNetworkNames []string `koanf:"internalNetworkNames"`
	// AddressSortOrder is a comma-separated list of CIDRs: addresses in
	// an earlier one come first (address-sort-order).
	AddressSortOrder string `koanf:"addressSortOrder"`
	// IPv6SupportDisabled leaves IPv6 addresses out (ipv6-support-disabled).
	IPv6SupportDisabled bool `koanf:"ipv6SupportDisabled"`
}

// Validate checks the subtree; keys are relative to drivers.openstack.
func (c *Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, config.Problem{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	// With a clouds.yaml, what it gives is checked once it is read (New).
	clouds := !c.Clouds.IsZero()
	switch {
	case clouds && c.Cloud == "":
		add("cloud", "required with clouds: the clouds.yaml entry to use (what OS_CLOUD names)")
	case !clouds && c.Cloud != "":
		add("clouds", "required with cloud: the clouds.yaml holding it, as %s", secret.Forms)
	}
	if c.AuthURL == "" && !clouds {
		add("authURL", "required: Keystone's v3 endpoint, e.g. https://keystone.example.com:5000/v3 (cloud.conf's auth-url)")
	} else if c.AuthURL != "" {
		if err := config.CheckURL("authURL", c.AuthURL, "https://keystone.example.com:5000/v3"); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Region == "" && !clouds {
		add("region", "required: the region whose endpoints polyccm uses (cloud.conf's region)")
	}
	appCred := c.ApplicationCredentialID != "" || c.ApplicationCredentialName != "" || !c.ApplicationCredentialSecret.IsZero()
	switch {
	case appCred && !c.Password.IsZero():
		add("applicationCredentialSecret", "give an application credential or a password, not both")
	}
	if c.UserID == "" && c.Username != "" && c.UserDomainName == "" && c.UserDomainID == "" && c.DomainName == "" && c.DomainID == "" {
		add("userDomainName", "username needs its domain: set userDomainName or userDomainID (or domainName/domainID), or give userID")
	}
	switch {
	case appCred && !c.Password.IsZero():
		// said above
	case appCred:
		if c.ApplicationCredentialSecret.IsZero() {
			add("applicationCredentialSecret", "required with an application credential, given as %s", secret.Forms)
		}
		if c.ApplicationCredentialID == "" && c.ApplicationCredentialName == "" {
			add("applicationCredentialID", "required with applicationCredentialSecret: the credential's ID, or its name with username or userID")
		}
		if c.ApplicationCredentialID == "" && c.ApplicationCredentialName != "" && c.Username == "" && c.UserID == "" {
			add("applicationCredentialName", "a credential given by name needs its user: set username (with userDomainName or userDomainID) or userID")
		}
	case !c.Password.IsZero():
		if c.Username == "" && c.UserID == "" {
			add("username", "required with a password: the user's name (with userDomainName or userDomainID) or userID")
		}
		if c.ProjectName == "" && c.ProjectID == "" {
			add("projectID", "required with a password: the project (projectID, or projectName with projectDomainName or projectDomainID)")
		}
		if c.ProjectID == "" && c.ProjectName != "" && c.ProjectDomainName == "" && c.ProjectDomainID == "" && c.DomainName == "" && c.DomainID == "" {
			add("projectDomainName", "projectName needs its domain: set projectDomainName or projectDomainID (or domainName/domainID for both the user's and the project's), or give projectID")
		}
	case clouds:
		// the clouds.yaml entry gives them
	default:
		add("applicationCredentialSecret", "no credentials: give an application credential (applicationCredentialID and applicationCredentialSecret) or a password (username, password, projectID), as %s", secret.Forms)
	}
	switch c.EndpointType {
	case "", "public", "internal", "admin":
	default:
		add("endpointType", "%q is not a catalog interface: use public (the default), internal or admin", c.EndpointType)
	}
	if c.CAFile != "" {
		if _, err := os.Stat(c.CAFile); err != nil {
			add("caFile", "cannot read %s: %v", c.CAFile, err)
		}
	}
	for _, cidr := range strings.Split(c.Networking.AddressSortOrder, ",") {
		if cidr = strings.TrimSpace(cidr); cidr == "" {
			continue
		}
		if _, _, err := net.ParseCIDR(cidr); err != nil {
			add("networking.addressSortOrder", "%q is not a CIDR: give a comma-separated list of CIDRs", cidr)
		}
	}
	return errors.Join(errs...)
}

// Cloud is OpenStack for one cluster.
type Cloud struct {
	// cfg is the config with its clouds.yaml entry filled in; given is as
	// configured, to read the clouds.yaml's secrets again on each
	// authentication.
	cfg   Config
	given Config
	api   *cloudapi.Client
	deps  driver.Deps
	http  *http.Client

	mu      sync.Mutex
	clients *clients // once authenticated

	listing       *instances.Listing[string, *server]
	volumeListing *volumes.Listing[string, *blockvolumes.Volume]
	routes        *routes

	flavorMu sync.Mutex
	flavors  map[string]string // flavor ID -> its name, for older Novas
}

// New builds the cloud. It makes no API call: Keystone is asked for a
// token and the catalog at the first lookup, so polyccm starts while the
// cloud is unreachable.
func New(cfgAny any, deps driver.Deps) (driver.Cloud, error) {
	given, ok := cfgAny.(*Config)
	if !ok {
		return nil, fmt.Errorf("openstack: config is %T, want *openstack.Config", cfgAny)
	}
	cfg, err := given.resolved()
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, config.Problem{Key: "drivers.openstack.caFile", Msg: err.Error()}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, config.Problem{Key: "drivers.openstack.caFile", Msg: cfg.CAFile + " holds no PEM certificate"}
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	var rt http.RoundTripper = tr
	if deps.Transport != nil {
		rt = deps.Transport(rt)
	}
	c := &Cloud{cfg: cfg, given: *given, api: deps.API, deps: deps, http: &http.Client{Transport: rt}, flavors: map[string]string{}}
	c.listing = c.newListing()
	c.volumeListing = c.newVolumeListing()
	c.initRoutes()
	return c, nil
}

// Instances returns the batched instance source.
func (c *Cloud) Instances() instances.Source { return c }

// endpoint picks a service's endpoint of the region, on the configured
// interface.
func (c *Cloud) endpoint() gophercloud.EndpointOpts {
	a := gophercloud.Availability(c.cfg.EndpointType)
	if a == "" {
		a = gophercloud.AvailabilityPublic
	}
	return gophercloud.EndpointOpts{Region: c.cfg.Region, Availability: a}
}

func init() {
	driver.Register(driver.Driver{
		Name:      Name,
		NewConfig: func() any { return &Config{} },
		New:       New,
		Title:     "OpenStack",
		Upstream:  "kubernetes/cloud-provider-openstack",
		Credentials: []driver.Credential{
			{Key: "password", Name: "openstack-password", SecretKey: "openstack-password", Unset: "an application credential"},
			{Key: "applicationCredentialSecret", Name: "openstack-application-credential-secret", SecretKey: "openstack-application-credential-secret", Unset: "a password"},
			{Key: "clouds", Name: "openstack-clouds", SecretKey: "openstack-clouds", Unset: "the keys under drivers.openstack"},
		},
		Capabilities:    []driver.Capability{driver.Instances, driver.Zones, driver.Routes, driver.Volumes},
		Classify:        classify,
		UpstreamMetrics: upstreamMetrics,
		CredentialsHint: "the OpenStack credentials (drivers.openstack.applicationCredentialID/Secret, or username, password and the project, or the clouds.yaml entry drivers.openstack.cloud) and that Keystone at the auth URL accepts them",
	})
}
