package simcloud

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/test/fakecloud/faults"
	fakeos "github.com/polyccm/polyccm/test/fakecloud/openstack"
)

// The simulated project's networks, as a kubeadm or Magnum cluster on
// OpenStack has them: every server on the tenant network
// OpenStackNetwork (10.0.0.0/16) with a floating IP from the external
// OpenStackPublicNetwork, and the router OpenStackRouter between them,
// where pod routes go.
const (
	OpenStackNetwork       = "k8s"
	OpenStackPublicNetwork = "public"
	OpenStackRouter        = "k8s-router"
)

// openstackFloatingBase is where floating IPs start: 198.18.0.0/15 (a
// benchmarking range) holds a 5000-Node cluster's, above the router's
// gateway address.
var openstackFloatingBase = netip.MustParseAddr("198.18.1.0")

// OpenStackProject is a started fake OpenStack cloud (Keystone, Nova,
// Neutron, Cinder), the application credential polyccm authenticates
// with, and the cluster's router: the one setup the demo, the benchmark
// and the e2e tests share.
type OpenStackProject struct {
	Fake          *fakeos.Server
	AppCredID     string
	AppCredSecret string
	Router        string // the ID of OpenStackRouter
}

// StartOpenStack starts a fake OpenStack cloud with o's latency and
// profile, the networks and router above, and an application credential
// of the project's user, as a CCM is usually given.
func StartOpenStack(o Options) (*OpenStackProject, error) {
	f := fakeos.New(fakeos.Account{})
	f.Faults().SetLatency(o.Latency)
	o.profile().OpenStack(f)
	f.AddNetwork(fakeos.NetworkSpec{Name: OpenStackPublicNetwork, External: true, Subnets: []fakeos.SubnetSpec{{CIDR: "198.18.0.0/15"}}})
	f.AddNetwork(fakeos.NetworkSpec{Name: OpenStackNetwork, Subnets: []fakeos.SubnetSpec{{CIDR: "10.0.0.0/16"}}})
	router := f.AddRouter(fakeos.RouterSpec{Name: OpenStackRouter, Subnets: []string{OpenStackNetwork}, ExternalNetwork: OpenStackPublicNetwork})
	secret := "sim" + strconv.FormatInt(time.Now().UnixNano(), 36)
	id := f.AddApplicationCredential("polyccm", secret)
	if err := f.Start(); err != nil {
		return nil, err
	}
	return &OpenStackProject{Fake: f, AppCredID: id, AppCredSecret: secret, Router: router}, nil
}

// OpenStack applies the profile to the OpenStack fake. Only throttling
// applies: the fake boots no servers and makes no load balancers, and its
// one write, a router's routes, takes effect at once as in Neutron.
// Throttling is a bucket per service (100 requests, 10 more a second), as
// clouds put in front of each API.
func (p Profile) OpenStack(f *fakeos.Server) {
	if p.Throttling {
		f.SetRateLimit(fakeos.DefaultRateLimit, fakeos.DefaultRefillPerSecond)
	} else {
		f.SetRateLimit(0, 0)
	}
}

// Config writes the application credential's secret into dir and returns
// the drivers.openstack block: Keystone's URL, the region, the credential
// and the router.
func (a *OpenStackProject) Config(dir string) (string, error) {
	p := filepath.Join(dir, "openstack-application-credential-secret")
	if err := os.WriteFile(p, []byte(a.AppCredSecret+"\n"), 0o600); err != nil {
		return "", err
	}
	return fmt.Sprintf("authURL: %s\nregion: %s\napplicationCredentialID: %s\napplicationCredentialSecret: {file: %s}\nrouterID: %s",
		a.Fake.AuthURL(), a.Fake.Account().Region, a.AppCredID, p, a.Router), nil
}

// openstackCloud is the simulated OpenStack cloud (test/fakecloud/openstack).
// polyccm serves no OpenStack load balancers yet: LBPorts is nil, and the
// demo and the benchmark leave load balancers out.
type openstackCloud struct {
	*OpenStackProject
	fake    *fakeos.Server
	servers []string // IDs, in the order added
}

func newOpenStack(o Options) (Cloud, error) {
	p, err := StartOpenStack(o)
	if err != nil {
		return nil, err
	}
	return &openstackCloud{OpenStackProject: p, fake: p.Fake}, nil
}

func (c *openstackCloud) Title() string { return "OpenStack" }

func (c *openstackCloud) ConfigBlock(dir string) (string, error) { return c.Config(dir) }

func (c *openstackCloud) Env(string) []string { return nil }

// AddInstances boots m1.small servers in zone nova, each with a port on
// the tenant network and a floating IP. A third of the Nodes have no
// providerID (polyccm finds them by name), the rest "openstack:///<id>".
func (c *openstackCloud) AddInstances(n int) []Node {
	nodes := make([]Node, n)
	base := len(c.servers) // later calls add more, named after them
	for k := range n {
		i := base + k
		b := openstackFloatingBase.As4()
		binary.BigEndian.PutUint32(b[:], binary.BigEndian.Uint32(b[:])+uint32(i))
		fip := netip.AddrFrom4(b)
		name := fmt.Sprintf("node-%02d", i)
		id := c.fake.AddServer(fakeos.ServerSpec{Name: name, Flavor: "m1.small", AvailabilityZone: "nova",
			Ports: []fakeos.PortSpec{{Network: OpenStackNetwork, FloatingIP: fip.String()}}})
		c.servers = append(c.servers, id)
		nodes[k].Name = name
		if i%3 != 2 {
			nodes[k].ProviderID = "openstack:///" + id
		}
	}
	return nodes
}

// PowerOff and Remove act on the fake directly, as the dashboard would:
// the fake serves no server actions.
func (c *openstackCloud) PowerOff(i int) error { return c.fake.StopServer(c.servers[i]) }

func (c *openstackCloud) Remove(i int) error { return c.fake.DeleteServer(c.servers[i]) }

// Calls counts every call, Keystone's included.
func (c *openstackCloud) Calls() int {
	n := 0
	for _, k := range c.fake.Faults().Calls() {
		n += k
	}
	return n
}

// No load balancers yet (Octavia comes later): nothing to find or show.
func (c *openstackCloud) LBPorts() []v1.ServicePort        { return nil }
func (c *openstackCloud) LBID(*v1.Service) string          { return "" }
func (c *openstackCloud) DescribeLB(string) (string, bool) { return "", false }
func (c *openstackCloud) LBTargets(string) ([]string, bool) {
	return nil, false
}
func (c *openstackCloud) LBLeftovers() []string { return nil }

func (c *openstackCloud) Faults() *faults.Injector { return c.fake.Faults() }

// ThrottleError: Nova answers 429 with its overLimit document.
func (c *openstackCloud) ThrottleError() string { return "429 overLimit" }

func (c *openstackCloud) Close() { c.fake.Close() }
