//go:build e2e

package e2e

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	fakeos "github.com/polyccm/polyccm/test/fakecloud/openstack"
	"github.com/polyccm/polyccm/test/harness"
	"github.com/polyccm/polyccm/test/simcloud"
)

// osPassword is the user's password in password mode: spaces inside, as
// Keystone passwords may have, and distinctive, so the log check finds it.
const osPassword = "e2e Pa55word never-logged 0xC0FFEE"

// osEnv is one polyccm with the OpenStack driver against a fresh fake
// cloud as simcloud sets it up: the tenant network simcloud.OpenStackNetwork
// ("k8s", 10.0.0.0/16), the external network "public" and the router
// "k8s-router" between them, which drivers.openstack.routerID names. The
// credential (the application credential's secret, or the password) is a
// file polyccm reads, never inline.
type osEnv struct {
	*env
	fake   *fakeos.Server
	router string
	// secretFile holds the credential polyccm reads.
	secretFile string
	// settings are polyccm's, kept unstarted with osOptions.hold.
	settings harness.Settings
}

// osOptions shape an OpenStack e2e environment.
type osOptions struct {
	// password authenticates as the user with a password (username,
	// userDomainName, projectID) instead of the application credential.
	password bool
	tweak    func(*harness.Settings)
	// hold leaves polyccm unstarted: the test runs e.run(e.settings, nil).
	hold bool
}

func newOSEnv(t *testing.T, o osOptions) *osEnv {
	t.Helper()
	e := &osEnv{env: newEnv(t)}
	// The realistic profile: each service throttles past 100 requests,
	// 10 more a second, as clouds put a limit in front of each API.
	p, err := simcloud.StartOpenStack(simcloud.Options{ClusterName: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	e.fake, e.router = p.Fake, p.Router
	e.closer = append(e.closer, e.fake.Close)
	// A second tenant network, for servers with two NICs.
	e.fake.AddNetwork(fakeos.NetworkSpec{Name: "storage", Subnets: []fakeos.SubnetSpec{{CIDR: "10.1.0.0/16"}}})

	var block string
	if o.password {
		a := e.fake.Account()
		e.fake.SetPassword(osPassword)
		e.secret = osPassword
		e.secretFile = e.writeFile("openstack-password", osPassword+"\n")
		block = fmt.Sprintf("authURL: %s\nregion: %s\nusername: %s\nuserDomainName: %s\nprojectID: %s\npassword: {file: %s}\nrouterID: %s",
			e.fake.AuthURL(), a.Region, a.UserName, a.DomainName, a.ProjectID, e.secretFile, e.router)
	} else {
		e.secret = p.AppCredSecret
		if block, err = p.Config(e.dir); err != nil {
			t.Fatal(err)
		}
		e.secretFile = filepath.Join(e.dir, "openstack-application-credential-secret")
	}
	if !strings.Contains(block, "{file: ") || strings.Contains(block, e.secret) {
		t.Fatalf("test bug: the credential must be given as a file: %q", block)
	}
	s := harness.Settings{Driver: "openstack", DriverBlock: block}
	if o.tweak != nil {
		o.tweak(&s)
	}
	e.settings = s
	if !o.hold {
		e.run(s, nil)
	}
	return e
}

// osRegion is the fake's region, which drivers.openstack.region names.
const osRegion = "RegionOne"

// osServer is what a test asks a server to be: one NIC on the "k8s"
// network with a floating IP from "public", and what the rest vary.
type osServer struct {
	name, flavor, zone string
	// accessIPv4 and hostname (server metadata) come before the networks'
	// addresses in upstream's order.
	accessIPv4, hostname string
	// storage adds a second NIC, on the "storage" network.
	storage bool
}

// osBuilt is a server as the fake made it, with its addresses.
type osBuilt struct {
	osServer
	id    string
	fixed []string // the NICs' fixed IPs, in NIC order: fixed[0] on "k8s"
	// byPort are the fixed IPs in the order Neutron lists the ports (by
	// ID), which upstream keeps.
	byPort   []string
	floating string
}

var osFloatingBase = netip.MustParseAddr("198.18.1.0")

// addServer boots a server in the fake; its floating IP is the i-th.
func (e *osEnv) addServer(i int, s osServer) osBuilt {
	e.t.Helper()
	fip := osFloatingBase
	for range i {
		fip = fip.Next()
	}
	ports := []fakeos.PortSpec{{Network: simcloud.OpenStackNetwork, FloatingIP: fip.String()}}
	if s.storage {
		ports = append(ports, fakeos.PortSpec{Network: "storage"})
	}
	var md map[string]string
	if s.hostname != "" {
		md = map[string]string{"hostname": s.hostname}
	}
	id := e.fake.AddServer(fakeos.ServerSpec{Name: s.name, Flavor: s.flavor, AvailabilityZone: s.zone,
		AccessIPv4: s.accessIPv4, Metadata: md, Ports: ports})
	b := osBuilt{osServer: s, id: id, floating: fip.String()}
	ps := e.fake.ServerPorts(id)
	for _, p := range ps {
		for _, ip := range p.FixedIPs {
			b.fixed = append(b.fixed, ip.IP)
		}
	}
	slices.SortFunc(ps, func(a, b fakeos.CloudPort) int { return strings.Compare(a.ID, b.ID) })
	for _, p := range ps {
		for _, ip := range p.FixedIPs {
			b.byPort = append(b.byPort, ip.IP)
		}
	}
	if len(b.fixed) != len(ports) {
		e.t.Fatalf("server %s: fixed IPs %v for %d NICs", s.name, b.fixed, len(ports))
	}
	return b
}

func osProviderID(id string) string { return "openstack:///" + id }

// wantAddresses is a server's Node addresses in the order
// openstack-cloud-controller-manager gives them (nodeAddresses in its
// openstack.go), written out from upstream: the fixed IPs of the ACTIVE
// ports in the order Neutron lists them (by ID), accessIPv4, the hostname metadata, then Nova's
// addresses network by network, sorted by name ("k8s" < "storage"),
// adding what is not there yet: the floating IP as ExternalIP.
func (b osBuilt) wantAddresses() []v1.NodeAddress {
	var out []v1.NodeAddress
	for _, ip := range b.byPort {
		out = append(out, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
	}
	if b.accessIPv4 != "" {
		out = append(out, v1.NodeAddress{Type: v1.NodeExternalIP, Address: b.accessIPv4})
	}
	if b.hostname != "" {
		out = append(out, v1.NodeAddress{Type: v1.NodeHostName, Address: b.hostname})
	}
	return append(out, v1.NodeAddress{Type: v1.NodeExternalIP, Address: b.floating})
}

// nodeServers boots n m1.small servers in zone nova named as the test's
// Nodes, registers their Nodes (every other one with a providerID) and
// waits until polyccm initialized them.
func (e *osEnv) nodeServers(n int) []osBuilt {
	e.t.Helper()
	var out []osBuilt
	var names []string
	for i := range n {
		b := e.addServer(i, osServer{name: e.nodeName(i), flavor: "m1.small", zone: "nova"})
		pid := ""
		if i%2 == 0 {
			pid = osProviderID(b.id)
		}
		e.register(b.name, pid)
		out = append(out, b)
		names = append(names, b.name)
	}
	e.waitInitialized(names, 60*time.Second)
	return out
}

// osCalls is what polyccm asked the fake since before, by call name.
func osCalls(f *fakeos.Server, before map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range f.Faults().Calls() {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}
