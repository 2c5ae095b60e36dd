// Package gce is polyccm's Google Compute Engine driver: instances for
// nodes, external (target pool) and internal (backend service) passthrough
// load balancers for Services, VPC routes for pod CIDRs, and persistent
// disks' zones for PersistentVolume labels, over
// cloud.google.com/go/compute. It translates between the Compute API and
// polyccm's core contracts; batching, caching, retries and metrics come
// from core.
package gce

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"
	"sync"

	htransport "google.golang.org/api/transport/http"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/metadata"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	computev1 "google.golang.org/api/compute/v1"
	"google.golang.org/api/option"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/polyccm/polyccm/config"
	"github.com/polyccm/polyccm/config/secret"
	"github.com/polyccm/polyccm/core/batch"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/instances"
	"github.com/polyccm/polyccm/core/loadbalancers"
	"github.com/polyccm/polyccm/core/version"
)

// Name is the driver's name in the config and in build tags.
const Name = "gce"

const computeScope = "https://www.googleapis.com/auth/compute"

// Config is the drivers.gce subtree.
type Config struct {
	// Project is the project ID; empty: the metadata server's.
	Project string `koanf:"project"`
	// Region for load balancers; empty: the region of the metadata
	// server's zone.
	Region string `koanf:"region"`
	// Network is the VPC network name; empty: the metadata server's
	// instance's network.
	Network string `koanf:"network"`
	// NetworkProject is the project the network belongs to: a Shared VPC
	// host project (cloud-provider-gcp's network-project-id). Firewall
	// rules and routes go there; empty: Project.
	NetworkProject string `koanf:"networkProject"`
	// Subnetwork for internal load balancers (a Service can override it).
	Subnetwork string `koanf:"subnetwork"`
	// NodeTags are the network tags of the nodes, which firewall rules
	// target (cloud-provider-gcp's node-tags); empty: per node instance,
	// its longest tag its name starts with, as upstream finds them.
	NodeTags []string `koanf:"nodeTags"`
	// Credentials is a service-account key (JSON); unset: Application
	// Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, the gcloud
	// well-known file, or the metadata server).
	Credentials secret.Secret `koanf:"credentials" secret:"json"`
	// Endpoint overrides the Compute API URL (Private Service Connect,
	// test doubles).
	Endpoint string `koanf:"endpoint"`
	// HealthCheckSourceRanges are where Google's health checkers come
	// from, which the health checks' firewall rules admit (upstream's
	// --cloud-provider-gce-lb-src-cidrs); empty: Google's ranges.
	HealthCheckSourceRanges []string `koanf:"healthCheckSourceRanges"`
	// ClusterID names the resources the cluster's load balancers share,
	// as cloud-provider-gcp's cluster ID; empty: the ConfigMap
	// kube-system/ingress-uid's (created when absent, as upstream does).
	ClusterID string `koanf:"clusterID"`
	// StackType is cloud-provider-gcp's gce.conf stack-type: IPV4 (the
	// default), IPV4_IPV6 or IPV6. An IPV6 cluster lists its Nodes' IPv6
	// addresses first.
	StackType string `koanf:"stackType"`
	// L4DenyFirewall is cloud-provider-gcp's opt-in deny rule of external
	// load balancers (denyfirewall.go): "enabled" (its
	// --enable-l4-deny-firewall), "cleanup" (its rollback cleanup without
	// that flag: the deny rules are deleted), or empty: each Service keeps
	// what it has, a deny rule with allow rules above it or neither.
	L4DenyFirewall string `koanf:"l4DenyFirewall"`
}

// Cluster stack types (gce.conf stack-type).
const (
	StackIPv4      = "IPV4"
	StackDualStack = "IPV4_IPV6"
	StackIPv6      = "IPV6"
)

var (
	projectRE = regexp.MustCompile(`^[a-z][a-z0-9-]{4,28}[a-z0-9]$|^[a-z][a-z0-9.:-]*[a-z0-9]$`)
	gceNameRE = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)
	regionRE  = regexp.MustCompile(`^[a-z]+-[a-z]+\d+$`)
)

// Validate checks the subtree; keys are relative to drivers.gce.
func (c *Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, config.Problem{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	if c.Project != "" && !projectRE.MatchString(c.Project) {
		add("project", "%q is not a project ID", c.Project)
	}
	if c.NetworkProject != "" && !projectRE.MatchString(c.NetworkProject) {
		add("networkProject", "%q is not a project ID (the Shared VPC host project)", c.NetworkProject)
	}
	for i, r := range c.HealthCheckSourceRanges {
		if _, _, err := net.ParseCIDR(r); err != nil {
			add(fmt.Sprintf("healthCheckSourceRanges[%d]", i), "%q is not a CIDR", r)
		}
	}
	if c.Region != "" && !regionRE.MatchString(c.Region) {
		add("region", "%q is not a region (like europe-west1)", c.Region)
	}
	for key, v := range map[string]string{"network": c.Network, "subnetwork": c.Subnetwork} {
		if v != "" && !gceNameRE.MatchString(lastSegment(v)) {
			add(key, "%q is not a network name or URL", v)
		}
	}
	for i, t := range c.NodeTags {
		if !gceNameRE.MatchString(t) || len(t) > 63 {
			add(fmt.Sprintf("nodeTags[%d]", i), "%q is not a network tag (lower-case letters, digits and dashes)", t)
		}
	}
	if c.ClusterID != "" && !clusterIDRE.MatchString(c.ClusterID) {
		add("clusterID", "%q is not a cluster ID: lower-case letters, digits and dashes, at most 40 (the provider-uid of the ConfigMap kube-system/ingress-uid)", c.ClusterID)
	}
	switch c.StackType {
	case "", StackIPv4, StackDualStack, StackIPv6:
	default:
		add("stackType", "%q is not a stack type: use IPV4, IPV4_IPV6 or IPV6 (cloud-provider-gcp's stack-type)", c.StackType)
	}
	switch c.L4DenyFirewall {
	case DenyFirewallKeep, DenyFirewallEnabled, DenyFirewallCleanup:
	default:
		add("l4DenyFirewall", "%q is not a deny-firewall mode: use enabled (cloud-provider-gcp's --enable-l4-deny-firewall), cleanup (its rollback cleanup: delete the deny rules) or leave it empty (keep what each Service has)", c.L4DenyFirewall)
	}
	if c.Endpoint != "" {
		if err := config.CheckURL("endpoint", c.Endpoint, ""); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func init() {
	driver.Register(driver.Driver{
		Name:      Name,
		NewConfig: func() any { return &Config{StackType: StackIPv4} },
		New:       New,
		Title:     "Google Compute Engine",
		Upstream:  "kubernetes/cloud-provider-gcp",
		Credentials: []driver.Credential{
			{Key: "credentials", Name: "gce-credentials.json", SecretKey: "gce-service-account.json", Unset: "the VM's service account"},
		},
		Annotations:     LBAnnotations,
		Capabilities:    []driver.Capability{driver.Instances, driver.Zones, driver.LoadBalancers, driver.Inventory, driver.Routes, driver.Volumes},
		Classify:        classify,
		UpstreamMetrics: upstreamMetrics,
		CredentialsHint: "the service account (drivers.gce.credentials, GOOGLE_APPLICATION_CREDENTIALS or the instance's) and its compute permissions",
	})
}

// Cloud is GCE for one cluster.
type Cloud struct {
	cfg  Config
	api  *cloudapi.Client
	deps driver.Deps
	cid  *clusterID

	mu      sync.Mutex
	clients *clients
	env     *environment

	sizes  batch.ListSizes // instances per zone and project, from full listings
	tags   tagCache        // instances' network tags, for firewall targets
	nodes  corelisters.NodeLister
	lbs    *loadBalancers
	routes *routes
}

// environment is what the config may leave to the metadata server.
type environment struct {
	project, region, network, subnetwork string
	// networkProject holds the network, its firewall rules and routes.
	networkProject string
	nodeTags       []string
	hcRanges       []string // health checkers' source ranges
}

// New builds the cloud without calling Google: credentials, project and
// network are resolved at the first call.
func New(cfgAny any, deps driver.Deps) (driver.Cloud, error) {
	cfg, ok := cfgAny.(*Config)
	if !ok {
		return nil, fmt.Errorf("gce: config is %T, want *gce.Config", cfgAny)
	}
	c := &Cloud{cfg: *cfg, api: deps.API, deps: deps}
	c.cid = &clusterID{c: c}
	c.lbs = &loadBalancers{c: c, own: loadbalancers.NewOwnership(loadbalancers.Options{
		Cloud:         "GCE",
		Informers:     deps.Informers,
		Clients:       deps.ClientBuilder,
		Recorder:      deps.Recorder,
		AdoptUnmarked: deps.AdoptUnmarkedLoadBalancers,
	})}
	c.routes = &routes{c: c}
	if deps.Informers != nil {
		nodes := deps.Informers.Core().V1().Nodes()
		nodes.Informer()
		c.nodes = nodes.Lister()
	}
	return c, nil
}

// Instances returns the batched instance source.
func (c *Cloud) Instances() instances.Source { return c }

// clients are the Compute REST clients polyccm uses.
type clients struct {
	instances       *compute.InstancesClient
	zoneOps         *compute.ZoneOperationsClient
	regionOps       *compute.RegionOperationsClient
	globalOps       *compute.GlobalOperationsClient
	addresses       *compute.AddressesClient
	forwardingRules *compute.ForwardingRulesClient
	targetPools     *compute.TargetPoolsClient
	// Legacy HTTP health checks, which target pools need, have no client
	// in cloud.google.com/go/compute; the discovery-based client has them.
	httpHealth      *computev1.HttpHealthChecksService
	health          *compute.HealthChecksClient // global: upstream's internal load balancers use one
	firewalls       *compute.FirewallsClient
	backendServices *compute.RegionBackendServicesClient
	instanceGroups  *compute.InstanceGroupsClient
	routes          *compute.RoutesClient
	disks           *compute.DisksClient
	regionDisks     *compute.RegionDisksClient
}

// client builds the clients on first use (building them looks for
// credentials, which may ask the metadata server). A failure is not
// remembered, and a credentials rejection drops them so a rotated key is
// read again.
func (c *Cloud) client(ctx context.Context) (*clients, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.clients != nil {
		return c.clients, nil
	}
	// Through core, so credentials that cannot be loaded count as a
	// credentials rejection (metrics, the operator's hint) like a refused
	// token. Not through call: c.mu is held.
	ts, err := cloudapi.Call(ctx, c.api, "credentials.load", c.tokenSource)
	if err != nil {
		return nil, err
	}
	// One authenticated HTTP client for all the REST clients, bounded by
	// cloudAPI.timeout: the apiv1 List methods (compute v1.75.0) build
	// their requests without the caller's context, so a list the API
	// never answers would otherwise hang past every deadline.
	hc, _, err := htransport.NewClient(ctx, option.WithTokenSource(ts), option.WithUserAgent(version.UserAgent()))
	if err != nil {
		return nil, fmt.Errorf("building the GCE HTTP client: %w", err)
	}
	hc.Timeout = c.api.AttemptTimeout()
	if c.deps.Transport != nil {
		hc.Transport = c.deps.Transport(hc.Transport)
	}
	opts := []option.ClientOption{option.WithHTTPClient(hc)}
	if c.cfg.Endpoint != "" {
		opts = append(opts, option.WithEndpoint(strings.TrimSuffix(c.cfg.Endpoint, "/")))
	}
	cl := &clients{}
	var errs []error
	mk := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	cl.instances, err = compute.NewInstancesRESTClient(ctx, opts...)
	mk(err)
	cl.zoneOps, err = compute.NewZoneOperationsRESTClient(ctx, opts...)
	mk(err)
	cl.regionOps, err = compute.NewRegionOperationsRESTClient(ctx, opts...)
	mk(err)
	cl.globalOps, err = compute.NewGlobalOperationsRESTClient(ctx, opts...)
	mk(err)
	cl.addresses, err = compute.NewAddressesRESTClient(ctx, opts...)
	mk(err)
	cl.forwardingRules, err = compute.NewForwardingRulesRESTClient(ctx, opts...)
	mk(err)
	cl.targetPools, err = compute.NewTargetPoolsRESTClient(ctx, opts...)
	mk(err)
	v1opts := slices.Clone(opts)
	if c.cfg.Endpoint != "" {
		// The discovery-based client wants the API's base path too.
		v1opts = append(v1opts, option.WithEndpoint(strings.TrimSuffix(c.cfg.Endpoint, "/")+"/compute/v1/"))
	}
	if svc, err := computev1.NewService(ctx, v1opts...); err != nil {
		mk(err)
	} else {
		cl.httpHealth = svc.HttpHealthChecks
	}
	cl.health, err = compute.NewHealthChecksRESTClient(ctx, opts...)
	mk(err)
	cl.firewalls, err = compute.NewFirewallsRESTClient(ctx, opts...)
	mk(err)
	cl.backendServices, err = compute.NewRegionBackendServicesRESTClient(ctx, opts...)
	mk(err)
	cl.instanceGroups, err = compute.NewInstanceGroupsRESTClient(ctx, opts...)
	mk(err)
	cl.routes, err = compute.NewRoutesRESTClient(ctx, opts...)
	mk(err)
	cl.disks, err = compute.NewDisksRESTClient(ctx, opts...)
	mk(err)
	cl.regionDisks, err = compute.NewRegionDisksRESTClient(ctx, opts...)
	mk(err)
	if len(errs) > 0 {
		return nil, fmt.Errorf("gce: building Compute clients: %w", errors.Join(errs...))
	}
	// No retries or timeouts of the clients' own: cloudapi retries, counts
	// and bounds every call.
	*cl.instances.CallOptions = compute.InstancesCallOptions{}
	*cl.zoneOps.CallOptions = compute.ZoneOperationsCallOptions{}
	*cl.regionOps.CallOptions = compute.RegionOperationsCallOptions{}
	*cl.globalOps.CallOptions = compute.GlobalOperationsCallOptions{}
	*cl.addresses.CallOptions = compute.AddressesCallOptions{}
	*cl.forwardingRules.CallOptions = compute.ForwardingRulesCallOptions{}
	*cl.targetPools.CallOptions = compute.TargetPoolsCallOptions{}
	*cl.health.CallOptions = compute.HealthChecksCallOptions{}
	*cl.firewalls.CallOptions = compute.FirewallsCallOptions{}
	*cl.backendServices.CallOptions = compute.RegionBackendServicesCallOptions{}
	*cl.instanceGroups.CallOptions = compute.InstanceGroupsCallOptions{}
	*cl.routes.CallOptions = compute.RoutesCallOptions{}
	*cl.disks.CallOptions = compute.DisksCallOptions{}
	*cl.regionDisks.CallOptions = compute.RegionDisksCallOptions{}
	c.clients = cl
	return cl, nil
}

// dropClients forgets the clients after a credentials rejection.
func (c *Cloud) dropClients() {
	c.mu.Lock()
	c.clients = nil
	c.mu.Unlock()
}

// call runs one Compute call through core, dropping the clients when the
// credentials are rejected so the next call re-reads them.
func call[T any](ctx context.Context, c *Cloud, op string, fn func(ctx context.Context) (T, error), opts ...cloudapi.CallOption) (T, error) {
	v, err := cloudapi.Call(ctx, c.api, op, fn, opts...)
	if cloudapi.KindOf(err) == cloudapi.KindUnauthorized {
		c.dropClients()
	}
	return v, err
}

// tokenSource: the configured service-account key, read now, else
// Application Default Credentials.
func (c *Cloud) tokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	if !c.cfg.Credentials.IsZero() {
		js, err := c.cfg.Credentials.Reveal()
		if err != nil {
			return nil, &credentialsError{err: fmt.Errorf("drivers.gce.credentials: %w", err)}
		}
		creds, err := google.CredentialsFromJSONWithType(context.Background(), []byte(js), google.ServiceAccount, computeScope)
		if err != nil {
			return nil, &credentialsError{err: fmt.Errorf("drivers.gce.credentials is not a service-account key: %w", err)}
		}
		return creds.TokenSource, nil
	}
	creds, err := google.FindDefaultCredentials(context.Background(), computeScope)
	if err != nil {
		return nil, &credentialsError{err: fmt.Errorf("no Application Default Credentials (set drivers.gce.credentials or GOOGLE_APPLICATION_CREDENTIALS, or run on GCE): %w", err)}
	}
	return creds.TokenSource, nil
}

// credentialsError is credentials polyccm could not load: reported like a
// rejection.
type credentialsError struct{ err error }

func (e *credentialsError) Error() string { return "GCE credentials: " + e.err.Error() }
func (e *credentialsError) Unwrap() error { return e.err }

// environ resolves what the config leaves to the metadata server, once.
func (c *Cloud) environ(ctx context.Context) (*environment, error) {
	c.mu.Lock()
	if c.env != nil {
		e := c.env
		c.mu.Unlock()
		return e, nil
	}
	c.mu.Unlock()
	e := &environment{project: c.cfg.Project, region: c.cfg.Region, network: lastSegment(c.cfg.Network),
		subnetwork: lastSegment(c.cfg.Subnetwork), nodeTags: c.cfg.NodeTags, hcRanges: c.cfg.HealthCheckSourceRanges}
	if len(e.hcRanges) == 0 {
		e.hcRanges = healthCheckRanges
	}
	md := func(key, path string) (string, error) {
		v, err := cloudapi.Call(ctx, c.api, "metadata."+key, func(ctx context.Context) (string, error) {
			return metadata.GetWithContext(ctx, path)
		})
		if err != nil {
			return "", fmt.Errorf("gce: drivers.gce.%s is not set and the metadata server did not say: %w", key, err)
		}
		return strings.TrimSpace(v), nil
	}
	var err error
	if e.project == "" {
		if e.project, err = md("project", "project/project-id"); err != nil {
			return nil, err
		}
	}
	e.networkProject = cmp.Or(c.cfg.NetworkProject, e.project)
	if e.region == "" {
		zone, err := md("region", "instance/zone")
		if err != nil {
			return nil, err
		}
		e.region = regionOf(lastSegment(zone))
	}
	if e.network == "" {
		nw, err := md("network", "instance/network-interfaces/0/network")
		if err != nil {
			return nil, err
		}
		e.network = lastSegment(nw)
	}
	c.mu.Lock()
	c.env = e
	c.mu.Unlock()
	return e, nil
}

// lastSegment of a resource URL or path; a plain name is itself.
func lastSegment(s string) string {
	return s[strings.LastIndexByte(s, '/')+1:]
}

// regionOf a zone: europe-west1-b -> europe-west1.
func regionOf(zone string) string {
	if i := strings.LastIndexByte(zone, '-'); i > 0 {
		return zone[:i]
	}
	return zone
}
