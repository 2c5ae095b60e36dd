package simcloud

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/polyccm/polyccm/test/fakecloud/faults"
	fakehz "github.com/polyccm/polyccm/test/fakecloud/hetzner"
)

// HetznerNetwork is the simulated project's private network, which every
// server joins, as a Hetzner cluster's nodes share one.
const HetznerNetwork = "k8s"

// HetznerProject is a started fake Hetzner Cloud API, the token it
// accepts, its network and a client acting as the project's user: the
// one setup the demo, the benchmark and the e2e tests share.
type HetznerProject struct {
	Fake    *fakehz.Server
	User    *hcloud.Client
	Token   string
	Network int64 // the ID of HetznerNetwork
}

// StartHetzner starts a fake Hetzner Cloud API accepting token, with o's
// latency and profile, holding the network HetznerNetwork (10.0.0.0/8,
// its servers in 10.0.0.0/16, eu-central).
func StartHetzner(o Options, token string) (*HetznerProject, error) {
	f := fakehz.New(token)
	f.Faults().SetLatency(o.Latency)
	o.profile().Hetzner(f)
	network := f.AddNetwork(HetznerNetwork, "10.0.0.0/8", fakehz.Subnet{IPRange: "10.0.0.0/16", NetworkZone: "eu-central"})
	if err := f.Start(); err != nil {
		return nil, err
	}
	user := hcloud.NewClient(hcloud.WithEndpoint(f.Endpoint()), hcloud.WithToken(token))
	return &HetznerProject{Fake: f, User: user, Token: token, Network: network}, nil
}

// Hetzner applies the profile to the Hetzner Cloud fake: load balancers
// and managed certificates take Provisioning, other actions Operation,
// new targets are "unknown" for TargetHealth, and the project's bucket
// (3,600 requests, one more a second) throttles.
func (p Profile) Hetzner(f *fakehz.Server) {
	f.SetLoadBalancerCreateDelay(p.Provisioning)
	f.SetCertificateIssueDelay(p.Provisioning)
	f.SetActionDelay(p.Operation)
	f.SetTargetHealthDelay(p.TargetHealth)
	if p.Throttling {
		f.SetRateLimit(fakehz.DefaultRateLimit, fakehz.DefaultRefillPerSecond)
	} else {
		f.SetRateLimit(0, 0)
	}
}

// Config writes the token into dir and returns the drivers.hetzner
// block: the token file, the fake's endpoint, the network, and fsn1 for
// new load balancers.
func (a *HetznerProject) Config(dir string) (string, error) {
	p := filepath.Join(dir, "hetzner-token")
	if err := os.WriteFile(p, []byte(a.Token+"\n"), 0o600); err != nil {
		return "", err
	}
	// Load balancers need a location; clusters set it once, as
	// HCLOUD_LOAD_BALANCERS_LOCATION, where the servers are.
	return fmt.Sprintf("token: {file: %s}\napiURL: %s\nnetwork: %s\nloadBalancer:\n  location: fsn1", p, a.Fake.Endpoint(), HetznerNetwork), nil
}

// hetzner is the simulated Hetzner Cloud (test/fakecloud/hetzner).
type hetzner struct {
	*HetznerProject
	fake    *fakehz.Server
	servers []fakehz.CloudServer
}

func newHetzner(o Options) (Cloud, error) {
	// API tokens are 64 letters and digits.
	tok := "sim" + strconv.FormatInt(time.Now().UnixNano(), 36)
	p, err := StartHetzner(o, tok+strings.Repeat("x", 64-len(tok)))
	if err != nil {
		return nil, err
	}
	return &hetzner{HetznerProject: p, fake: p.Fake}, nil
}

func (c *hetzner) Title() string { return "Hetzner Cloud" }

func (c *hetzner) ConfigBlock(dir string) (string, error) { return c.Config(dir) }

func (c *hetzner) Env(string) []string { return nil }

// AddInstances makes cx22 servers in fsn1 with public IPv4 and IPv6 and
// an address on the project's network. A third of the Nodes have no
// providerID (polyccm finds them by name), the rest "hcloud://<id>".
func (c *hetzner) AddInstances(n int) []Node {
	nodes := make([]Node, n)
	base := len(c.servers) // later calls add more, named after them
	for k := range n {
		i := base + k
		id := c.fake.AddServer(fakehz.ServerSpec{Name: fmt.Sprintf("node-%02d", i), Type: "cx22", Location: "fsn1", Network: c.Network})
		sv, _ := c.fake.Server(id)
		c.servers = append(c.servers, sv)
		nodes[k].Name = sv.Name
		if i%3 != 2 {
			nodes[k].ProviderID = "hcloud://" + strconv.FormatInt(id, 10)
		}
	}
	return nodes
}

// PowerOff and Remove act on the fake directly, as the Console would: the
// fake serves no server actions.
func (c *hetzner) PowerOff(i int) error {
	return c.fake.SetServerStatus(c.servers[i].ID, fakehz.StatusOff)
}

func (c *hetzner) Remove(i int) error { return c.fake.DeleteServer(c.servers[i].ID) }

// Calls counts every call: the simulated user makes none through the API.
func (c *hetzner) Calls() int {
	n := 0
	for _, k := range c.fake.Faults().Calls() {
		n += k
	}
	return n
}

// LBPorts are TCP only: Hetzner load balancers have no UDP.
func (c *hetzner) LBPorts() []v1.ServicePort {
	return []v1.ServicePort{
		{Name: "http", Protocol: v1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)},
		{Name: "https", Protocol: v1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(8443)},
	}
}

// LBID finds the load balancer by the Service's ingress address, else by
// hcloud CCM's service-uid label or its default name ("a" and the UID
// without dashes, cut to 32).
func (c *hetzner) LBID(svc *v1.Service) string {
	var ips []string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		ips = append(ips, in.IP)
	}
	uid := string(svc.UID)
	name := "a" + strings.ReplaceAll(uid, "-", "")
	name = name[:min(len(name), 32)]
	lbs := c.fake.LoadBalancers()
	for _, match := range []func(fakehz.LoadBalancer) bool{
		func(lb fakehz.LoadBalancer) bool {
			return slices.ContainsFunc(ips, func(ip string) bool { return ip != "" && (ip == lb.IPv4 || ip == lb.IPv6 || ip == lb.PrivateIP) })
		},
		func(lb fakehz.LoadBalancer) bool { return uid != "" && lb.Labels["hcloud-ccm/service-uid"] == uid },
		func(lb fakehz.LoadBalancer) bool { return uid != "" && lb.Name == name },
	} {
		for _, lb := range lbs {
			if match(lb) {
				return strconv.FormatInt(lb.ID, 10)
			}
		}
	}
	return ""
}

func (c *hetzner) lb(id string) (fakehz.LoadBalancer, bool) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return fakehz.LoadBalancer{}, false
	}
	return c.fake.LoadBalancer(n)
}

func (c *hetzner) DescribeLB(id string) (string, bool) {
	lb, ok := c.lb(id)
	if !ok {
		return "", false
	}
	var services []string
	hc := ""
	for _, s := range lb.Services {
		services = append(services, fmt.Sprintf("%s:%d->%d", s.Protocol, s.ListenPort, s.DestinationPort))
		hc = fmt.Sprintf("%s :%d every %ds", s.HealthCheck.Protocol, s.HealthCheck.Port, s.HealthCheck.Interval)
	}
	private := "no network"
	if lb.Network != 0 {
		private = "private " + lb.PrivateIP
	}
	return fmt.Sprintf("Hetzner Cloud load balancer %s (%d), %s in %s, %s, public %s: services %s, %d targets, health check %s",
		lb.Name, lb.ID, lb.Type, lb.Location, private, cmp.Or(lb.IPv4, "-"), strings.Join(services, " "), len(lb.Targets), hc), true
}

// LBTargets maps server targets to their Nodes, and IP targets to the
// server with that public address; label selector targets are not
// followed.
func (c *hetzner) LBTargets(id string) ([]string, bool) {
	lb, ok := c.lb(id)
	if !ok {
		return nil, false
	}
	byID, byIP := map[int64]string{}, map[string]string{}
	for _, sv := range c.servers {
		byID[sv.ID], byIP[sv.PublicIPv4] = sv.Name, sv.Name
	}
	var out []string
	for _, t := range lb.Targets {
		switch t.Type {
		case fakehz.TargetServer:
			out = append(out, cmp.Or(byID[t.ServerID], strconv.FormatInt(t.ServerID, 10)))
		case fakehz.TargetIP:
			out = append(out, cmp.Or(byIP[t.IP], t.IP))
		}
	}
	slices.Sort(out)
	return out, true
}

// LBLeftovers lists the load balancers and managed certificates left.
func (c *hetzner) LBLeftovers() []string {
	var out []string
	for _, lb := range c.fake.LoadBalancers() {
		out = append(out, fmt.Sprintf("load balancer %s (%d)", lb.Name, lb.ID))
	}
	for _, cert := range c.fake.Certificates() {
		if cert.Type == fakehz.CertManaged {
			out = append(out, fmt.Sprintf("managed certificate %s (%d)", cert.Name, cert.ID))
		}
	}
	return out
}

func (c *hetzner) Faults() *faults.Injector { return c.fake.Faults() }

// ThrottleError: Hetzner Cloud answers 429 with code rate_limit_exceeded.
func (c *hetzner) ThrottleError() string { return "429 rate_limit_exceeded" }

func (c *hetzner) Close() { c.fake.Close() }
