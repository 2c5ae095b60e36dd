// Package simcloud is a simulated cloud per driver, over the fake APIs of
// test/fakecloud, on a Profile of the real cloud's timing (Realistic by
// default). One adapter per cloud (StartAWS, StartGCE, StartDigitalOcean,
// StartHetzner, StartOpenStack) starts the fake with its credentials and
// writes the drivers.<name> config block that points polyccm at it; the
// e2e tests, the demo (test/demo) and the cluster-scale benchmark
// (test/bench) all start their clouds through it. Cloud, for the demo and
// the benchmark, also fills the cloud with instances and describes its
// load balancers.
package simcloud

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

// Options shape a simulated cloud.
type Options struct {
	// ClusterName is polyccm's clusterName, which names and tags what it
	// creates in the cloud (and, on AWS, the instances of the cluster).
	ClusterName string
	// Latency is added to every API call.
	Latency time.Duration
	// Profile is how like the real cloud the fake behaves; nil is
	// Realistic.
	Profile *Profile
}

func (o Options) profile() Profile {
	if o.Profile == nil {
		return Realistic
	}
	return *o.Profile
}

// Cloud is one simulated cloud.
type Cloud interface {
	// Title names the cloud in output ("Google Compute Engine").
	Title() string
	// ConfigBlock is the drivers.<name> config section for polyccm; files
	// it needs (credentials) go into dir.
	ConfigBlock(dir string) (string, error)
	// Env is added to polyccm's environment (nil: nothing).
	Env(dir string) []string
	// AddInstances creates n running instances and returns the Nodes their
	// kubelets would register: name and providerID (some providerIDs
	// empty: polyccm finds those instances by name).
	AddInstances(n int) []Node
	// PowerOff stops the i-th instance added, Remove deletes it.
	PowerOff(i int) error
	Remove(i int) error
	// LBPorts are ports of a Service of type LoadBalancer that the cloud's
	// load balancers can serve together; nil where polyccm serves no load
	// balancers on the cloud (HasLoadBalancers).
	LBPorts() []v1.ServicePort
	// LBID finds the load balancer of a Service that has an ingress; ""
	// if there is none.
	LBID(svc *v1.Service) string
	// DescribeLB summarises that load balancer, if it exists.
	DescribeLB(id string) (string, bool)
	// LBTargets are the Node names of the instances that load balancer
	// sends traffic to, sorted; false if it does not exist.
	LBTargets(id string) ([]string, bool)
	// LBLeftovers lists cloud resources of load balancers that still
	// exist (nothing once every load balancer is fully deleted).
	LBLeftovers() []string
	// Calls counts polyccm's calls to the cloud API.
	Calls() int
	// Faults is the fake's injector: latency, rate limit, per-endpoint
	// counts.
	Faults() *faults.Injector
	// ThrottleError is the cloud's own throttling answer (status and code),
	// for reports.
	ThrottleError() string
	Close()
}

// Node is a Node as its kubelet registers it.
type Node struct{ Name, ProviderID string }

// clouds are the simulated clouds, by driver name.
var clouds = map[string]func(Options) (Cloud, error){
	"digitalocean": newDigitalOcean,
	"gce":          newGCE,
	"aws":          newAWS,
	"hetzner":      newHetzner,
	"openstack":    newOpenStack,
}

// withoutLoadBalancers are the clouds whose driver serves no load
// balancers yet (OpenStack's Octavia comes later).
var withoutLoadBalancers = map[string]bool{"openstack": true}

// HasLoadBalancers says whether polyccm serves load balancers on the
// driver's simulated cloud; without, the demo and the benchmark leave
// their load balancer steps out.
func HasLoadBalancers(driver string) bool { return !withoutLoadBalancers[driver] }

// Names lists the drivers with a simulated cloud, sorted.
func Names() []string {
	var names []string
	for n := range clouds {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// New starts the simulated cloud for a driver.
func New(driver string, o Options) (Cloud, error) {
	newCloud, ok := clouds[driver]
	if !ok {
		return nil, fmt.Errorf("no simulated cloud for driver %q; use one of: %s", driver, strings.Join(Names(), ", "))
	}
	if o.ClusterName == "" {
		return nil, fmt.Errorf("simcloud: Options.ClusterName is empty")
	}
	return newCloud(o)
}

// TCPUDP are Service ports for clouds whose load balancers serve TCP and
// UDP together.
func TCPUDP() []v1.ServicePort {
	return []v1.ServicePort{
		{Name: "http", Protocol: v1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)},
		{Name: "dns", Protocol: v1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(5353)},
	}
}

// bearer authenticates a simulated user's own API calls, as a user's
// client would.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}
