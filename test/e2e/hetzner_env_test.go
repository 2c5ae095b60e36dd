//go:build e2e

package e2e

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	v1 "k8s.io/api/core/v1"

	fakehz "github.com/polyccm/polyccm/test/fakecloud/hetzner"
	"github.com/polyccm/polyccm/test/harness"
	"github.com/polyccm/polyccm/test/simcloud"
)

// hzEnv is one polyccm with the Hetzner Cloud driver against a fresh fake
// project, which holds the Network simcloud.HetznerNetwork ("k8s",
// 10.0.0.0/8 with the servers' subnet 10.0.0.0/16 in eu-central) that
// drivers.hetzner.network names.
type hzEnv struct {
	*env
	fake    *fakehz.Server
	user    *hcloud.Client // acts as the project's user would
	token   string
	network int64
	// settings are polyccm's, kept unstarted with hzOptions.hold.
	settings harness.Settings
}

// hzOptions shape a Hetzner e2e environment.
type hzOptions struct {
	// profile is the simulated cloud's timing; nil is Realistic (actions
	// take 300 ms, a new load balancer 2 s, the project's 3,600-request
	// bucket throttles).
	profile *simcloud.Profile
	// servers are made before polyccm starts.
	servers []fakehz.ServerSpec
	// tweak adjusts polyccm's settings.
	tweak func(*harness.Settings)
	// hold leaves polyccm unstarted: the test runs e.run(e.settings, nil)
	// when it is ready.
	hold bool
}

// newHZEnv starts a fake Hetzner Cloud project and a polyccm for it.
func newHZEnv(t *testing.T, o hzOptions) (*hzEnv, []fakehz.CloudServer) {
	t.Helper()
	// API tokens are 64 letters and digits.
	e := &hzEnv{env: newEnv(t), token: "hz" + strings.Repeat("E2e0", 15) + "tk"}
	e.secret = e.token
	p, err := simcloud.StartHetzner(simcloud.Options{ClusterName: "e2e", Profile: o.profile}, e.token)
	if err != nil {
		t.Fatal(err)
	}
	e.fake, e.user, e.network = p.Fake, p.User, p.Network
	e.closer = append(e.closer, e.fake.Close)
	var servers []fakehz.CloudServer
	for _, spec := range o.servers {
		servers = append(servers, e.addServer(spec))
	}
	block, err := p.Config(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	s := harness.Settings{Driver: "hetzner", DriverBlock: block}
	if o.tweak != nil {
		o.tweak(&s)
	}
	e.settings = s
	if !o.hold {
		e.run(s, nil)
	}
	return e, servers
}

// hzLBSetting adds a key under drivers.hetzner.loadBalancer, which the
// simulated project's block may already have (its location).
func hzLBSetting(s *harness.Settings, kv string) {
	if strings.Contains(s.DriverBlock, "\nloadBalancer:\n") {
		s.DriverBlock = strings.Replace(s.DriverBlock, "\nloadBalancer:\n", "\nloadBalancer:\n  "+kv+"\n", 1)
		return
	}
	s.DriverBlock += "\nloadBalancer:\n  " + kv
}

// addServer makes a server in the project's Network (unless spec names
// another) and returns it as the fake holds it.
func (e *hzEnv) addServer(spec fakehz.ServerSpec) fakehz.CloudServer {
	e.t.Helper()
	if spec.Network == 0 {
		spec.Network = e.network
	}
	sv, ok := e.fake.Server(e.fake.AddServer(spec))
	if !ok {
		e.t.Fatalf("the fake lost server %s", spec.Name)
	}
	return sv
}

// nodeServers makes n servers named as the test's Nodes, in the Network,
// registers their Nodes (by name; with a providerID for every third) and
// waits until polyccm initialized them.
func (e *hzEnv) nodeServers(n int, location string) []fakehz.CloudServer {
	e.t.Helper()
	var out []fakehz.CloudServer
	var names []string
	for i := range n {
		sv := e.addServer(fakehz.ServerSpec{Name: e.nodeName(i), Type: "cx22", Location: location})
		pid := ""
		if i%3 == 0 {
			pid = hzProviderID(sv.ID)
		}
		e.register(sv.Name, pid)
		out = append(out, sv)
		names = append(names, sv.Name)
	}
	e.waitInitialized(names, 60*time.Second)
	return out
}

// joinNode makes the i-th Node's server and registers it, uninitialized.
func (e *hzEnv) joinNode(i int, location string) fakehz.CloudServer {
	e.t.Helper()
	sv := e.addServer(fakehz.ServerSpec{Name: e.nodeName(i), Type: "cx22", Location: location})
	e.register(sv.Name, "")
	return sv
}

func hzProviderID(id int64) string { return "hcloud://" + strconv.FormatInt(id, 10) }

// hzWrites keeps the calls to endpoints that change something.
func hzWrites(calls map[string]int) map[string]int {
	out := map[string]int{}
	for ep, n := range calls {
		if !strings.HasPrefix(ep, "GET ") && n > 0 {
			out[ep] = n
		}
	}
	return out
}

// hzLBName is cloudprovider.DefaultLoadBalancerName: "a" and the UID
// without dashes, cut to 32 characters, which hcloud CCM names load
// balancers by.
func hzLBName(svc *v1.Service) string {
	n := "a" + strings.ReplaceAll(string(svc.UID), "-", "")
	return n[:min(len(n), 32)]
}

// lbOf returns the Service's load balancer, found by hcloud CCM's label.
func (e *hzEnv) lbOf(svc *v1.Service) (fakehz.LoadBalancer, bool) {
	var found []fakehz.LoadBalancer
	for _, lb := range e.fake.LoadBalancers() {
		if lb.Labels["hcloud-ccm/service-uid"] == string(svc.UID) {
			found = append(found, lb)
		}
	}
	if len(found) > 1 {
		e.t.Fatalf("%d load balancers labelled for Service %s: %+v", len(found), svc.Name, found)
	}
	if len(found) == 0 {
		return fakehz.LoadBalancer{}, false
	}
	return found[0], true
}

// hzIngress is what a load balancer's Service publishes, as hcloud CCM
// builds it: public IPv4, IPv6 (unless left out), private IP.
func hzIngress(lb fakehz.LoadBalancer, ipv6, private bool) []string {
	out := []string{lb.IPv4}
	if ipv6 {
		out = append(out, lb.IPv6)
	}
	if private && lb.PrivateIP != "" {
		out = append(out, lb.PrivateIP)
	}
	return out
}

func ingressOf(svc *v1.Service) []string {
	var out []string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		out = append(out, cmp.Or(in.IP, in.Hostname))
	}
	return out
}

// waitLB waits until the Service publishes the addresses of its load
// balancer (found by label) and returns both.
func (e *hzEnv) waitLB(name string, ipv6, private bool, timeout time.Duration) (*v1.Service, fakehz.LoadBalancer) {
	e.t.Helper()
	var svc *v1.Service
	var lb fakehz.LoadBalancer
	eventually(e.t, timeout, "Service "+name+" publishes its load balancer's addresses", func() (bool, string) {
		svc = getSvc(e.t, name)
		var ok bool
		if lb, ok = e.lbOf(svc); !ok {
			return false, "no load balancer labelled for it yet"
		}
		want, got := hzIngress(lb, ipv6, private), ingressOf(svc)
		return slices.Equal(got, want), fmt.Sprintf("ingress %v, want %v", got, want)
	})
	return svc, lb
}

// serverTargets are a load balancer's server targets, sorted, with "p"
// after those using the private IP.
func serverTargets(lb fakehz.LoadBalancer) []string {
	var out []string
	for _, t := range lb.Targets {
		if t.Type != fakehz.TargetServer {
			out = append(out, t.Type)
			continue
		}
		s := strconv.FormatInt(t.ServerID, 10)
		if t.UsePrivateIP {
			s += "p"
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// wantTargets are the servers as serverTargets shows them.
func wantTargets(private bool, servers ...fakehz.CloudServer) []string {
	var out []string
	for _, s := range servers {
		v := strconv.FormatInt(s.ID, 10)
		if private {
			v += "p"
		}
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

// lbServices describes a load balancer's services and health checks.
func lbServices(lb fakehz.LoadBalancer) []string {
	var out []string
	for _, s := range lb.Services {
		hc := s.HealthCheck
		d := fmt.Sprintf("%s %d->%d proxy=%v hc %s:%d/%ds/%ds/%d", s.Protocol, s.ListenPort, s.DestinationPort, s.ProxyProtocol,
			hc.Protocol, hc.Port, hc.Interval, hc.Timeout, hc.Retries)
		if hc.HTTP != nil {
			d += fmt.Sprintf(" http %q %q %v tls=%v", hc.HTTP.Domain, hc.HTTP.Path, hc.HTTP.StatusCodes, hc.HTTP.TLS)
		}
		if s.HTTP != nil {
			d += fmt.Sprintf(" svc-http %+v", *s.HTTP)
		}
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}

// tcpService is the service hcloud CCM adds for a TCP port without
// health-check annotations: listen on the port, forward to the node
// port, a tcp health check on the node port with the API's 15s/10s/3.
func tcpService(p v1.ServicePort) fakehz.Service {
	return fakehz.Service{Protocol: fakehz.ProtocolTCP, ListenPort: int(p.Port), DestinationPort: int(p.NodePort),
		HealthCheck: fakehz.HealthCheck{Protocol: fakehz.ProtocolTCP, Port: int(p.NodePort), Interval: 15, Timeout: 10, Retries: 3}}
}
