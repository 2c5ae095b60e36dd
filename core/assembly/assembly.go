// Package assembly builds a driver's cloud the one way polyccm runs it:
// the cloud API client with the driver's classifier and metrics, the
// driver from its registry entry and decoded config, and core's layers
// around what it returns (batched instances, the load balancer rules and
// progress, batched disk lookups, routes whose errors fit an event),
// checked against the capabilities the driver declares. `polyccm run`,
// `polyccm plan` and the contract suite all build a driver here, so a
// driver is tested and planned exactly as it runs.
package assembly

import (
	"context"
	"fmt"
	"net/http"

	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/instances"
	"github.com/polyccm/polyccm/core/loadbalancers"
	"github.com/polyccm/polyccm/core/redact"
	"github.com/polyccm/polyccm/core/volumes"
)

// Options are what a driver is built with.
type Options struct {
	Driver driver.Driver
	// Config is the driver's decoded config (Driver.NewConfig's type).
	Config             any
	ClusterName        string
	ClusterNameDefault bool
	// CloudAPI shapes every cloud call; its driver-specific fields
	// (name, classifier, hint, upstream metrics) come from Driver.
	CloudAPI cloudapi.Options
	// Instances shapes the batched lookups; Driver is set here.
	Instances     instances.Options
	ClientBuilder cloudprovider.ControllerClientBuilder
	// Informers is the shared factory the driver and core's layers
	// register their informers with; it is started by the caller.
	Informers                  informers.SharedInformerFactory
	Recorder                   record.EventRecorder
	AdoptUnmarkedLoadBalancers bool
	// Transport, when set, wraps the driver's HTTP transports outside
	// the API client's own (polyccm plan: the read-only guard).
	Transport func(http.RoundTripper) http.RoundTripper
}

// New builds the API client and the driver's cloud, and assembles it.
// It calls no cloud.
func New(o Options) (*Cloud, error) {
	d := o.Driver
	ao := o.CloudAPI
	ao.Driver, ao.Classify, ao.AuthHint = d.Name, d.Classify, d.CredentialsHint
	ao.Upstream = d.UpstreamMetrics
	api := cloudapi.New(ao)
	dc, err := d.New(o.Config, driver.Deps{
		ClusterName:                o.ClusterName,
		ClusterNameDefault:         o.ClusterNameDefault,
		API:                        api,
		ClientBuilder:              o.ClientBuilder,
		Informers:                  o.Informers,
		Recorder:                   o.Recorder,
		AdoptUnmarkedLoadBalancers: o.AdoptUnmarkedLoadBalancers,
		Transport:                  chain(api.Transport(), o.Transport),
	})
	if err != nil {
		return nil, fmt.Errorf("building the %s driver: %w", d.Name, err)
	}
	io := o.Instances
	io.Driver = d.Name
	var services corelisters.ServiceLister
	if o.Informers != nil {
		services = o.Informers.Core().V1().Services().Lister()
	}
	c, err := Assemble(d, dc, io, services)
	if err != nil {
		return nil, err
	}
	c.api = api
	return c, nil
}

// chain wraps inner first, then outer; nil when both are.
func chain(inner, outer func(http.RoundTripper) http.RoundTripper) func(http.RoundTripper) http.RoundTripper {
	switch {
	case inner == nil:
		return outer
	case outer == nil:
		return inner
	}
	return func(rt http.RoundTripper) http.RoundTripper { return outer(inner(rt)) }
}

// Cloud is the cloudprovider.Interface the upstream controllers see: core's
// batched instances plus whatever else the driver provides, wrapped by core.
type Cloud struct {
	name      string
	api       *cloudapi.Client
	dc        driver.Cloud
	instances *instances.Instances
	lb        cloudprovider.LoadBalancer
	progress  *loadbalancers.Progress
	routes    cloudprovider.Routes
	volumes   *volumes.Volumes
	// podCIDRHint is the driver's instances.PodCIDRSource hint for the
	// node-ipam controller; "" when its instances carry no pod ranges.
	podCIDRHint string
	tasks       []driver.Task
}

var _ cloudprovider.Interface = (*Cloud)(nil)

// Assemble checks the driver's cloud against its declared capabilities and
// wraps it. services is the shared informer's lister (nil where no load
// balancer is assembled: the rules then skip what needs it).
func Assemble(d driver.Driver, dc driver.Cloud, o instances.Options, services corelisters.ServiceLister) (*Cloud, error) {
	src := dc.Instances()
	if src == nil {
		return nil, fmt.Errorf("driver %s returned no instance source", d.Name)
	}
	c := &Cloud{name: d.Name, dc: dc, instances: instances.New(src, o), progress: loadbalancers.NewProgress()}
	if ps, ok := src.(instances.PodCIDRSource); ok {
		c.podCIDRHint = ps.PodCIDRHint()
	}
	if lbc, ok := dc.(driver.LoadBalancerCloud); ok {
		if lb := lbc.LoadBalancer(); lb != nil {
			lb = loadbalancers.Rules(lb, loadbalancers.RuleOptions{Services: services, Instances: c.instances})
			c.lb = c.progress.Track(lb)
		}
	}
	if tc, ok := dc.(driver.TaskCloud); ok {
		c.tasks = tc.Tasks()
	}
	if rc, ok := dc.(driver.RouteCloud); ok {
		if r := rc.Routes(); r != nil {
			c.routes = safeRoutes{r}
		}
	}
	if d.Has(driver.LoadBalancers) != (c.lb != nil) {
		return nil, fmt.Errorf("driver %s: declared load balancer support (%v) does not match its cloud", d.Name, d.Has(driver.LoadBalancers))
	}
	if d.Has(driver.Routes) != (c.routes != nil) {
		return nil, fmt.Errorf("driver %s: declared route support (%v) does not match its cloud", d.Name, d.Has(driver.Routes))
	}
	if vc, ok := dc.(driver.VolumeCloud); ok && vc.Volumes() != nil {
		c.volumes = volumes.New(vc.Volumes(), volumes.Options{
			Driver: o.Driver, BatchWindow: o.BatchWindow, BatchSize: o.BatchSize, CacheTTL: o.CacheTTL,
		})
	}
	if d.Has(driver.Volumes) != (c.volumes != nil) {
		return nil, fmt.Errorf("driver %s: declared volume support (%v) does not match its cloud", d.Name, d.Has(driver.Volumes))
	}
	if _, ok := dc.(driver.TaskCloud); d.Has(driver.Tasks) != ok {
		return nil, fmt.Errorf("driver %s: declared tasks (%v) do not match its cloud", d.Name, d.Has(driver.Tasks))
	}
	if _, ok := dc.(driver.InventoryCloud); d.Has(driver.Inventory) != ok {
		return nil, fmt.Errorf("driver %s: declared load balancer inventory (%v) does not match its cloud", d.Name, d.Has(driver.Inventory))
	}
	return c, nil
}

// API is the cloud API client every call of the driver goes through (nil
// for a cloud made by Assemble alone).
func (c *Cloud) API() *cloudapi.Client { return c.api }

// Driver is the driver's own cloud, for its optional parts
// (driver.FactsCloud, driver.InventoryCloud).
func (c *Cloud) Driver() driver.Cloud { return c.dc }

// Lookups is core's batched, cached instance lookup.
func (c *Cloud) Lookups() *instances.Instances { return c.instances }

// Progress reports the load balancer's waits as progress in events.
func (c *Cloud) Progress() *loadbalancers.Progress { return c.progress }

// Volumes is core's batched disk lookup; nil without volume support.
func (c *Cloud) Volumes() *volumes.Volumes { return c.volumes }

// PodCIDRHint is the driver's instances' pod range hint, "" without.
func (c *Cloud) PodCIDRHint() string { return c.podCIDRHint }

// Tasks are the driver's own loops, started with the service controller.
func (c *Cloud) Tasks() []driver.Task { return c.tasks }

// Initialize is a no-op: the driver was built with everything it needs
// before the controllers started.
func (c *Cloud) Initialize(cloudprovider.ControllerClientBuilder, <-chan struct{}) {}

func (c *Cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return c.lb, c.lb != nil }

// Instances is the legacy interface; InstancesV2 replaces it.
func (c *Cloud) Instances() (cloudprovider.Instances, bool) { return nil, false }

func (c *Cloud) InstancesV2() (cloudprovider.InstancesV2, bool) { return c.instances, true }

// Zones is deprecated upstream; InstanceMetadata carries zone and region.
func (c *Cloud) Zones() (cloudprovider.Zones, bool) { return nil, false }

func (c *Cloud) Clusters() (cloudprovider.Clusters, bool) { return nil, false }

func (c *Cloud) Routes() (cloudprovider.Routes, bool) { return c.routes, c.routes != nil }

func (c *Cloud) ProviderName() string { return c.name }

// HasClusterID is true: every polyccm config has a clusterName.
func (c *Cloud) HasClusterID() bool { return true }

// safeRoutes is the driver's routes as the upstream route controller gets
// them: it records a failed CreateRoute as a FailedToCreateRoute event
// quoting the error, so the error is made fit for one (redact.EventError)
// and logged whole when that leaves something out. (The service
// controller's errors get the same in core/loadbalancers.Progress.)
type safeRoutes struct{ cloudprovider.Routes }

func (r safeRoutes) CreateRoute(ctx context.Context, cluster, nameHint string, route *cloudprovider.Route) error {
	err := r.Routes.CreateRoute(ctx, cluster, nameHint, route)
	shown := redact.EventError(err)
	if shown != err {
		klog.ErrorS(err, "Creating a route failed; the event shows this shortened", "node", route.TargetNode, "cidr", route.DestinationCIDR)
	}
	return shown
}
