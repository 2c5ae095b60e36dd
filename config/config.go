// Package config loads polyccm's one YAML file: built-in defaults, then the
// file, then POLYCCM_* environment overrides. Loading is strict: an unknown
// key, a wrong type or an invalid value is an error naming its key path, and
// every problem is reported at once. Each driver's subtree (drivers.<name>)
// is decoded into that driver's own struct, just as strictly.
package config

import (
	"time"
)

// DefaultPath is where polyccm looks for its config without --config.
const DefaultPath = "/etc/polyccm/ccm.yaml"

// EnvPrefix starts every environment override; "__" separates levels:
// POLYCCM_NODES__CONCURRENTSYNCS=50 sets nodes.concurrentSyncs.
const EnvPrefix = "POLYCCM_"

// Config is the whole effective configuration.
type Config struct {
	// Driver selects the cloud driver, e.g. "digitalocean".
	Driver string `koanf:"driver"`
	// ClusterName tags and names the cloud resources this cluster owns.
	ClusterName string `koanf:"clusterName"`
	// ClusterNameDefault is true when neither the file nor the
	// environment set clusterName: a driver whose upstream CCM finds the
	// cluster's identity in the cloud (AWS: the cluster tag of the
	// instance it runs on) does the same instead of taking the default.
	ClusterNameDefault bool `koanf:"-"`
	// Kubeconfig is the path of polyccm's kubeconfig; empty means
	// in-cluster (service account) credentials.
	Kubeconfig string `koanf:"kubeconfig"`

	Controllers    Controllers    `koanf:"controllers"`
	Nodes          Nodes          `koanf:"nodes"`
	Services       Services       `koanf:"services"`
	Routes         Routes         `koanf:"routes"`
	LeaderElection LeaderElection `koanf:"leaderElection"`
	Serving        Serving        `koanf:"serving"`
	KubeAPI        KubeAPI        `koanf:"kubeAPI"`
	CloudAPI       CloudAPI       `koanf:"cloudAPI"`
	Logging        Logging        `koanf:"logging"`

	// Drivers holds each driver subtree present in the file, plus the
	// selected driver's, decoded into the driver's config struct.
	Drivers map[string]any `koanf:"-"`

	// File is the path the config was read from.
	File string `koanf:"-"`
}

// DriverConfig returns the selected driver's decoded config.
func (c *Config) DriverConfig() any { return c.Drivers[c.Driver] }

// Controllers switch the upstream controllers on and off.
type Controllers struct {
	// Nodes: cloud-node-controller (initializes Nodes from the cloud).
	Nodes bool `koanf:"nodes"`
	// NodeLifecycle: cloud-node-lifecycle-controller (shutdown taint,
	// deletes Nodes whose instance is gone).
	NodeLifecycle bool `koanf:"nodeLifecycle"`
	// Services: service-lb-controller (Services of type LoadBalancer).
	Services bool `koanf:"services"`
	// Routes: node-route-controller (pod CIDR routes in the cloud).
	Routes bool `koanf:"routes"`
	// KubeletServingCSR: polyccm's kubelet-serving-csr-approving-controller
	// (approves kubelet serving certificates whose addresses the cloud
	// reports for the node). Off by default: it grants certificates.
	KubeletServingCSR bool `koanf:"kubeletServingCSR"`
	// VolumeLabels: polyccm's volume-labels-controller (sets the zone and
	// region labels of PersistentVolumes backed by the cloud's disks).
	VolumeLabels bool `koanf:"volumeLabels"`
	// NodeIPAM: polyccm's node-ipam-controller (sets Nodes' pod CIDRs from
	// their instances' alias IP ranges, for VPC-native clusters; routes
	// stays off with it).
	NodeIPAM bool `koanf:"nodeIPAM"`
}

// Nodes tune the node controllers.
type Nodes struct {
	ConcurrentSyncs          int           `koanf:"concurrentSyncs"`
	ConcurrentStatusUpdates  int           `koanf:"concurrentStatusUpdates"`
	StatusUpdateFrequency    time.Duration `koanf:"statusUpdateFrequency"`
	MonitorPeriod            time.Duration `koanf:"monitorPeriod"`
	ConcurrentLifecycleSyncs int           `koanf:"concurrentLifecycleSyncs"`
}

// Services tune the service (load balancer) controller.
type Services struct {
	ConcurrentSyncs int `koanf:"concurrentSyncs"`
	// AdoptUnmarkedLoadBalancers lets a Service take over a cloud load
	// balancer it asks for (by an annotation naming it) that nothing marks
	// as another cluster's or Service's. Off, such a load balancer is
	// refused (docs/load-balancer-ownership.md).
	AdoptUnmarkedLoadBalancers bool `koanf:"adoptUnmarkedLoadBalancers"`
}

// Routes configure the route controller.
type Routes struct {
	// ClusterCIDR is the pod network, one CIDR or an IPv4,IPv6 pair.
	ClusterCIDR     string        `koanf:"clusterCIDR"`
	ReconcilePeriod time.Duration `koanf:"reconcilePeriod"`
}

// LeaderElection keeps exactly one replica acting.
type LeaderElection struct {
	Enabled       bool          `koanf:"enabled"`
	Namespace     string        `koanf:"namespace"`
	LeaseName     string        `koanf:"leaseName"`
	LeaseDuration time.Duration `koanf:"leaseDuration"`
	RenewDeadline time.Duration `koanf:"renewDeadline"`
	RetryPeriod   time.Duration `koanf:"retryPeriod"`
}

// Serving is the HTTPS endpoint for health checks and metrics.
type Serving struct {
	BindAddress string `koanf:"bindAddress"`
	// SecurePort 0 turns serving off.
	SecurePort int `koanf:"securePort"`
	// CertFile and KeyFile are the serving certificate; both empty means
	// a self-signed one made at start.
	CertFile string `koanf:"certFile"`
	KeyFile  string `koanf:"keyFile"`
}

// KubeAPI bounds polyccm's requests to the Kubernetes API server.
type KubeAPI struct {
	QPS   float64 `koanf:"qps"`
	Burst int     `koanf:"burst"`
}

// CloudAPI shapes every call to the cloud.
type CloudAPI struct {
	QPS         float64       `koanf:"qps"`
	Burst       int           `koanf:"burst"`
	Timeout     time.Duration `koanf:"timeout"`
	BatchWindow time.Duration `koanf:"batchWindow"`
	BatchSize   int           `koanf:"batchSize"`
	CacheTTL    time.Duration `koanf:"cacheTTL"`
}

// Logging configures klog.
type Logging struct {
	Verbosity int    `koanf:"verbosity"`
	Format    string `koanf:"format"`
}

// Defaults returns the built-in configuration every file is laid over.
func Defaults() *Config {
	return &Config{
		ClusterName:        "kubernetes",
		ClusterNameDefault: true,
		Controllers:        Controllers{Nodes: true, NodeLifecycle: true, Services: true, Routes: false},
		Nodes: Nodes{
			// Upstream defaults to one worker; lookups are batched here, so
			// more workers mean bigger batches, not more cloud calls.
			ConcurrentSyncs:          20,
			ConcurrentStatusUpdates:  20,
			StatusUpdateFrequency:    5 * time.Minute,
			MonitorPeriod:            5 * time.Second,
			ConcurrentLifecycleSyncs: 10,
		},
		Services: Services{ConcurrentSyncs: 5},
		Routes:   Routes{ReconcilePeriod: 10 * time.Second},
		LeaderElection: LeaderElection{
			Enabled:   true,
			Namespace: "kube-system",
			// The upstream name, so polyccm and the CCM it replaces never
			// both act during a migration.
			LeaseName:     "cloud-controller-manager",
			LeaseDuration: 15 * time.Second,
			RenewDeadline: 10 * time.Second,
			RetryPeriod:   2 * time.Second,
		},
		Serving: Serving{BindAddress: "0.0.0.0", SecurePort: 10258},
		// Well above upstream's 20/30: initializing a Node takes two writes,
		// so 50 made 5000 Nodes joining together wait over three minutes
		// for polyccm while the apiserver could take them in 15 seconds
		// (docs/performance.md). The apiserver's priority and fairness
		// queues, not this client-side cap, protect it.
		KubeAPI:  KubeAPI{QPS: 500, Burst: 1000},
		CloudAPI: CloudAPI{QPS: 10, Burst: 20, Timeout: 30 * time.Second, BatchWindow: 25 * time.Millisecond, BatchSize: 200, CacheTTL: 30 * time.Second},
		Logging:  Logging{Verbosity: 2, Format: "text"},
		Drivers:  map[string]any{},
	}
}
