package driver

import (
	"context"
	"net/http"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/instances"
	"github.com/polyccm/polyccm/core/loadbalancers"
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
	// Transport, when set, wraps the transport of every HTTP client the
	// driver calls its cloud API with (polyccm plan: core/readonly, which
	// refuses every call that could change the cloud). Nil in `run`.
	Transport func(http.RoundTripper) http.RoundTripper
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

// InventoryCloud is implemented by a cloud that can list the load
// balancers made for this cluster, by polyccm or by the per-cloud CCM it
// replaces (by their marks: tags, descriptions, names derived from Service
// UIDs). `polyccm plan` reports the ones no Service owns. Read-only.
type InventoryCloud interface {
	LoadBalancerInventory(ctx context.Context) ([]loadbalancers.Resource, error)
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
