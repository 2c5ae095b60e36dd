package driver

import (
	"context"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/instances"
	"github.com/polyccm/polyccm/core/volumes"
)

// Deps are what polyccm gives a driver to build its cloud with. Drivers
// take what they need and never reach for globals or environment variables.
type Deps struct {
	// ClusterName tags and names the cloud resources this cluster owns.
	ClusterName string
	// API runs every cloud call: rate limit, retries, classification,
	// metrics. The driver supplies only the calls.
	API *cloudapi.Client
	// Kubernetes access for drivers that read cluster state.
	ClientBuilder cloudprovider.ControllerClientBuilder
	Informers     informers.SharedInformerFactory
	// Recorder emits events (e.g. on Services) as polyccm.
	Recorder record.EventRecorder
	// AdoptUnmarkedLoadBalancers is services.adoptUnmarkedLoadBalancers:
	// the ownership rule (core/loadbalancers) may adopt a load balancer
	// nothing marks as another cluster's or Service's.
	AdoptUnmarkedLoadBalancers bool
}

// Cloud is what a driver's New returns. Instances is required; the optional
// parts are discovered through the LoadBalancerCloud, RouteCloud and
// VolumeCloud interfaces and must match the driver's declared Capabilities.
type Cloud interface {
	// Instances answers batched instance lookups for the node controllers.
	Instances() instances.Source
}

// LoadBalancerCloud is a Cloud that manages load balancers for Services.
type LoadBalancerCloud interface {
	LoadBalancer() cloudprovider.LoadBalancer
}

// RouteCloud is a Cloud that manages pod CIDR routes.
type RouteCloud interface {
	Routes() cloudprovider.Routes
}

// VolumeCloud is a Cloud that can say where its disks are, for the
// volume-labels controller.
type VolumeCloud interface {
	Volumes() volumes.Source
}

// TaskCloud is a Cloud with loops of its own that serve LoadBalancer
// Services (DigitalOcean's public-access firewall and cluster tags). They
// run beside the service controller, so only while polyccm leads and only
// when controllers.services is on.
type TaskCloud interface {
	Tasks() []Task
}

// Task is one such loop. Run blocks until ctx ends; it reports its own
// failures (events, logs) and retries them itself.
type Task struct {
	Name string
	Run  func(ctx context.Context)
}
