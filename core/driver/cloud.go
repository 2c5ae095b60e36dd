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
	// ClusterNameDefault says ClusterName is the default, not set in the
	// config: a driver whose upstream CCM finds the cluster's identity in
	// the cloud (AWS: the instance's kubernetes.io/cluster/<id> tag) does
	// the same.
	ClusterNameDefault bool
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
	// refuses every call that could change the cloud; `run`: the cloud API
	// client's, when the driver's upstream metrics read HTTP requests).
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

// FactsCloud is implemented by a cloud that resolves settings from the
// cloud itself, where its upstream CCM does (AWS: the cluster ID from the
// instance's tags, the subnets load balancers get): `polyccm plan` shows
// them, so an operator sees what polyccm would use before switching.
// Read-only.
type FactsCloud interface {
	Facts(ctx context.Context) ([]Fact, error)
}

// Fact is one setting a driver resolved, and where it came from.
type Fact struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	// Source says where the value came from: a config key, a tag, a
	// discovery rule.
	Source string `json:"source,omitempty"`
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
	// Plan, if set, makes one pass of the loop for `polyccm plan`: ctx
	// carries a dry run (loadbalancers.WithDryRun), so it reads what it
	// needs and applies its loadbalancers.Plan, which under a dry run
	// records the changes and returns ErrPlanned (nil if there are none)
	// instead of making them.
	Plan func(ctx context.Context) error
}
