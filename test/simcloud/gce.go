package simcloud

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/polyccm/polyccm/test/fakecloud/faults"
	fakegce "github.com/polyccm/polyccm/test/fakecloud/gce"
)

const (
	gceProject = "polyccm-demo"
	gceRegion  = fakegce.DefaultRegion // us-central1
	gceNodeTag = "demo-node"
	gceSubnet  = "nodes"
)

// GCEProject is a started fake Compute Engine project and the
// service-account key polyccm signs in with, as with a real one: the one
// setup the demo, the benchmark and the e2e tests share.
type GCEProject struct {
	Fake            *fakegce.Server
	Project, Region string
}

// StartGCE starts a fake Compute Engine API for project, with o's latency
// and profile. The fake hands token out for the key; polyccm never sees
// it in its config.
func StartGCE(o Options, project, token string) (*GCEProject, error) {
	f := fakegce.New(project, token)
	f.Faults().SetLatency(o.Latency)
	o.profile().GCE(f)
	if err := f.Start(); err != nil {
		return nil, err
	}
	return &GCEProject{Fake: f, Project: project, Region: fakegce.DefaultRegion}, nil
}

// Config writes the service-account key into dir and returns the
// drivers.gce block for the default network's subnetwork, with the
// nodes' network tag.
func (p *GCEProject) Config(dir, subnetwork, nodeTag string) (string, error) {
	key, err := p.Fake.ServiceAccountKey("polyccm@" + p.Project + ".iam.gserviceaccount.com")
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, "gce-service-account.json")
	if err := os.WriteFile(file, key, 0o600); err != nil {
		return "", err
	}
	return fmt.Sprintf("project: %s\nregion: %s\nnetwork: default\nsubnetwork: %s\nnodeTags: [%s]\ncredentials: {file: %s}\nendpoint: %s",
		p.Project, p.Region, subnetwork, nodeTag, file, p.Fake.URL()), nil
}

// gce is the simulated Google Compute Engine (test/fakecloud/gce).
type gce struct {
	*GCEProject
	fake      *fakegce.Server
	instances []fakegce.Instance
}

func newGCE(o Options) (Cloud, error) {
	p, err := StartGCE(o, gceProject, "ya29.demo-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if err != nil {
		return nil, err
	}
	// The nodes' own subnetwork in the default network: the auto-mode
	// /20 holds 4092 instances, the benchmark needs 5000.
	p.Fake.AddSubnetwork(fakegce.Subnetwork{Name: gceSubnet, Region: gceRegion, Network: "default", IPCidrRange: "10.0.0.0/16"})
	return &gce{GCEProject: p, fake: p.Fake}, nil
}

func (c *gce) Title() string { return "Google Compute Engine" }

func (c *gce) ConfigBlock(dir string) (string, error) { return c.Config(dir, gceSubnet, gceNodeTag) }

func (c *gce) Env(string) []string { return nil }

// AddInstances spreads the instances over three zones of the region, in
// the nodes' subnetwork of the default network; some have an external
// IPv6 address too.
func (c *gce) AddInstances(n int) []Node {
	zones := []string{gceRegion + "-a", gceRegion + "-b", gceRegion + "-c"}
	types := []string{"e2-standard-4", "n2-standard-8", "e2-medium"}
	nodes := make([]Node, n)
	base := len(c.instances) // later calls add more, named after them
	for k := range n {
		i := base + k
		in := fakegce.Instance{
			Name: fmt.Sprintf("node-%02d", i), Zone: zones[i%len(zones)], MachineType: types[i%len(types)],
			Status: fakegce.StatusRunning, Tags: []string{gceNodeTag}, Subnetwork: gceSubnet,
		}
		if i%4 == 0 {
			in.IPv6 = fmt.Sprintf("2600:1900:4000:d0:0:%x::", i+1)
		}
		in = c.fake.AddInstance(in)
		c.instances = append(c.instances, in)
		nodes[k].Name = in.Name
		if i%2 == 0 {
			nodes[k].ProviderID = "gce://" + gceProject + "/" + in.Zone + "/" + in.Name
		}
	}
	return nodes
}

// PowerOff stops the instance; a stopped GCE instance is TERMINATED.
func (c *gce) PowerOff(i int) error {
	return c.fake.SetInstanceStatus(c.instances[i].Zone, c.instances[i].Name, fakegce.StatusTerminated)
}

func (c *gce) Remove(i int) error {
	if !c.fake.RemoveInstance(c.instances[i].Zone, c.instances[i].Name) {
		return fmt.Errorf("no instance %s/%s", c.instances[i].Zone, c.instances[i].Name)
	}
	return nil
}

// Calls counts every API call: the simulated user changes instances from
// the Go side, not through the API. Token exchanges are not API calls.
func (c *gce) Calls() int { return c.fake.Faults().Total() }

// LBPorts are TCP only: a GCE passthrough load balancer serves one
// protocol.
func (c *gce) LBPorts() []v1.ServicePort {
	return []v1.ServicePort{
		{Name: "http", Protocol: v1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)},
		{Name: "https", Protocol: v1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(8443)},
	}
}

// LBID is the forwarding rule holding the Service's IP, as region/name.
func (c *gce) LBID(svc *v1.Service) string {
	ip := svc.Status.LoadBalancer.Ingress[0].IP
	for _, fr := range c.fake.ForwardingRules() {
		if fr.IPAddress == ip {
			return path.Base(fr.Region) + "/" + fr.Name
		}
	}
	return ""
}

func (c *gce) DescribeLB(id string) (string, bool) {
	region, name, _ := strings.Cut(id, "/")
	fr, ok := c.fake.ForwardingRule(region, name)
	if !ok {
		return "", false
	}
	var b strings.Builder
	fmt.Fprintf(&b, "GCE forwarding rule %s in %s (%s): %s %s:%s", fr.Name, region, strings.ToLower(fr.LoadBalancingScheme), fr.IPProtocol, fr.IPAddress, fr.PortRange)
	if pool, ok := c.fake.TargetPool(region, path.Base(fr.Target)); ok && fr.Target != "" {
		fmt.Fprintf(&b, "\n    -> target pool %s: %d instances", pool.Name, len(pool.Instances))
		for _, hc := range c.fake.HTTPHealthChecks() {
			for _, link := range pool.HealthChecks {
				if link == hc.SelfLink {
					fmt.Fprintf(&b, ", health check %s HTTP :%d%s", hc.Name, hc.Port, hc.RequestPath)
				}
			}
		}
	} else if fr.BackendService != "" {
		fmt.Fprintf(&b, "\n    -> backend service %s", path.Base(fr.BackendService))
	}
	for _, fw := range c.fake.Firewalls() {
		var allowed []string
		for _, a := range fw.Allowed {
			allowed = append(allowed, strings.ToLower(a.IPProtocol)+":"+strings.Join(a.Ports, ","))
		}
		fmt.Fprintf(&b, "\n    firewall %s allows %s from %s to instances tagged %s",
			fw.Name, strings.Join(allowed, " "), strings.Join(fw.SourceRanges, ","), strings.Join(fw.TargetTags, ","))
	}
	return b.String(), true
}

// LBTargets are the instances of the forwarding rule's target pool (on
// GCE a Node is named after its instance).
func (c *gce) LBTargets(id string) ([]string, bool) {
	region, name, _ := strings.Cut(id, "/")
	fr, ok := c.fake.ForwardingRule(region, name)
	if !ok || fr.Target == "" {
		return nil, ok
	}
	pool, ok := c.fake.TargetPool(region, path.Base(fr.Target))
	if !ok {
		return nil, false
	}
	var out []string
	for _, u := range pool.Instances {
		out = append(out, path.Base(u))
	}
	slices.Sort(out)
	return out, true
}

// lbLeftovers lists what load balancers use; the fake starts with none of
// it, so everything listed is polyccm's.
func (c *gce) LBLeftovers() []string {
	var out []string
	for _, r := range c.fake.ForwardingRules() {
		out = append(out, "forwarding rule "+r.Name)
	}
	for _, r := range c.fake.TargetPools() {
		out = append(out, "target pool "+r.Name)
	}
	for _, r := range c.fake.HTTPHealthChecks() {
		out = append(out, "HTTP health check "+r.Name)
	}
	for _, r := range c.fake.HealthChecks() {
		out = append(out, "health check "+r.Name)
	}
	for _, r := range c.fake.BackendServices() {
		out = append(out, "backend service "+r.Name)
	}
	for _, r := range c.fake.InstanceGroups() {
		out = append(out, "instance group "+r.Name)
	}
	for _, r := range c.fake.Firewalls() {
		out = append(out, "firewall "+r.Name)
	}
	for _, r := range c.fake.Addresses() {
		out = append(out, "address "+r.Name)
	}
	return out
}

func (c *gce) Faults() *faults.Injector { return c.fake.Faults() }

// ThrottleError: Compute answers 429 rateLimitExceeded.
func (c *gce) ThrottleError() string { return "429 rateLimitExceeded" }

func (c *gce) Close() { c.fake.Close() }
