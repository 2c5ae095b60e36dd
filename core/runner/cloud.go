package runner

import (
	"fmt"

	corelisters "k8s.io/client-go/listers/core/v1"

	cloudprovider "k8s.io/cloud-provider"

	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/instances"
	"github.com/polyccm/polyccm/core/loadbalancers"
	"github.com/polyccm/polyccm/core/volumes"
)

// cloud is the cloudprovider.Interface the upstream controllers see: core's
// batched instances plus whatever else the driver provides.
type cloud struct {
	name      string
	instances *instances.Instances
	lb        cloudprovider.LoadBalancer
	// progress tells the service controller's events which Services are
	// only waiting for the cloud (serviceLBController).
	progress *loadbalancers.Progress
	routes   cloudprovider.Routes
	// volumes is core's batched disk lookup for the volume-labels
	// controller; nil when the driver has no volumes capability.
	volumes *volumes.Volumes
	// podCIDRHint is the driver's instances.PodCIDRSource hint for the
	// node-ipam controller; "" when its instances carry no pod ranges.
	podCIDRHint string
	// tasks are the driver's own loops, started with the service
	// controller.
	tasks []driver.Task
}

var _ cloudprovider.Interface = (*cloud)(nil)

// assemble checks the driver's cloud against its declared capabilities and
// wraps it. services is the shared informer's lister (nil in tests that
// build no load balancers).
func assemble(d driver.Driver, dc driver.Cloud, o instances.Options, services corelisters.ServiceLister) (*cloud, error) {
	src := dc.Instances()
	if src == nil {
		return nil, fmt.Errorf("driver %s returned no instance source", d.Name)
	}
	c := &cloud{name: d.Name, instances: instances.New(src, o), progress: loadbalancers.NewProgress()}
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
	return c, nil
}

// Initialize is a no-op: the driver was built with everything it needs
// before the controllers started.
func (c *cloud) Initialize(cloudprovider.ControllerClientBuilder, <-chan struct{}) {}

func (c *cloud) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return c.lb, c.lb != nil }

// Instances is the legacy interface; InstancesV2 replaces it.
func (c *cloud) Instances() (cloudprovider.Instances, bool) { return nil, false }

func (c *cloud) InstancesV2() (cloudprovider.InstancesV2, bool) { return c.instances, true }

// Zones is deprecated upstream; InstanceMetadata carries zone and region.
func (c *cloud) Zones() (cloudprovider.Zones, bool) { return nil, false }

func (c *cloud) Clusters() (cloudprovider.Clusters, bool) { return nil, false }

func (c *cloud) Routes() (cloudprovider.Routes, bool) { return c.routes, c.routes != nil }

func (c *cloud) ProviderName() string { return c.name }

// HasClusterID is true: every polyccm config has a clusterName.
func (c *cloud) HasClusterID() bool { return true }
