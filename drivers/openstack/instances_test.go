package openstack_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/instances"
	"github.com/polyccm/polyccm/drivers/openstack"
	fake "github.com/polyccm/polyccm/test/fakecloud/openstack"
)

// lookups builds the driver on the fake as the runner does: core's
// batched, cached lookups over the driver's source.
func lookups(t *testing.T, f *fake.Server, cfg *openstack.Config) *instances.Instances {
	t.Helper()
	d, _ := driver.Default().Lookup(openstack.Name)
	api := cloudapi.New(cloudapi.Options{Driver: openstack.Name, QPS: 1000, Burst: 1000, Timeout: 5 * time.Second,
		BaseBackoff: 10 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, MaxAttempts: 3, Classify: d.Classify})
	c, err := openstack.New(cfg, driver.Deps{API: api})
	if err != nil {
		t.Fatal(err)
	}
	return instances.New(c.Instances(), instances.Options{Driver: openstack.Name, BatchWindow: 50 * time.Millisecond, BatchSize: 500, Timeout: 20 * time.Second})
}

func config(f *fake.Server) *openstack.Config {
	a := f.Account()
	return &openstack.Config{AuthURL: f.AuthURL(), Region: a.Region, Username: a.UserName, UserDomainName: a.DomainName,
		Password: secretOf(a.Password), ProjectID: a.ProjectID}
}

// A join storm of 200 Nodes costs one server listing, a ports query per
// 50 servers and one flavor read, never a GET per Node; each Node gets
// what openstack-cloud-controller-manager would give it.
func TestJoinStormIsAFewListings(t *testing.T) {
	f := fake.New(fake.Account{})
	f.AddNetwork(fake.NetworkSpec{Name: "k8s", Subnets: []fake.SubnetSpec{{CIDR: "10.0.0.0/16"}}})
	f.AddFlavor(fake.Flavor{ID: "f-large", Name: "m1.large", VCPUs: 4, RAM: 8192, Disk: 40})
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	const n = 200
	nodes := make([]*v1.Node, n)
	for i := range nodes {
		name := fmt.Sprintf("node-%03d", i)
		id := f.AddServer(fake.ServerSpec{Name: name, Flavor: "f-large", AvailabilityZone: "az-1", Ports: []fake.PortSpec{{Network: "k8s"}}})
		nodes[i] = &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: "openstack:///" + id}}
	}
	in := lookups(t, f, config(f))
	var wg sync.WaitGroup
	errs := make([]error, n)
	mds := make([]string, n)
	for i, node := range nodes {
		wg.Go(func() {
			md, err := in.InstanceMetadata(context.Background(), node)
			if err == nil {
				mds[i] = fmt.Sprintf("%s %s %s %s %d", md.ProviderID, md.InstanceType, md.Zone, md.Region, len(md.NodeAddresses))
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		if want := nodes[i].Spec.ProviderID + " m1.large az-1 RegionOne 1"; mds[i] != want {
			t.Fatalf("node %d metadata %q, want %q", i, mds[i], want)
		}
	}
	fs := f.Faults()
	t.Logf("calls: %d server listings, %d server GETs, %d ports queries, %d flavor GETs", fs.CallCount(fake.ServersList), fs.CallCount(fake.ServersGet), fs.CallCount(fake.PortsList), fs.CallCount(fake.FlavorsGet))
	if got := fs.CallCount(fake.ServersGet); got != 0 {
		t.Errorf("%d server GETs in a join storm, want 0 (one listing answers all)", got)
	}
	if got := fs.CallCount(fake.ServersList); got > 2 {
		t.Errorf("%d server listings, want at most 2", got)
	}
	if got := fs.CallCount(fake.PortsList); got > n/50+2 {
		t.Errorf("%d ports queries for %d servers, want about one per 50", got, n)
	}
	if got := fs.CallCount(fake.FlavorsGet); got != 1 {
		t.Errorf("%d flavor GETs, want 1 (a cluster's flavors are read once)", got)
	}
}

// SHUTOFF is shut down; only Nova's 404 makes a Node's server gone.
func TestShutdownAndGone(t *testing.T) {
	f := fake.New(fake.Account{})
	f.AddNetwork(fake.NetworkSpec{Name: "k8s", Subnets: []fake.SubnetSpec{{CIDR: "10.0.0.0/16"}}})
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	id := f.AddServer(fake.ServerSpec{Name: "a", Ports: []fake.PortSpec{{Network: "k8s"}}})
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: v1.NodeSpec{ProviderID: "openstack:///" + id}}
	if err := f.StopServer(id); err != nil {
		t.Fatal(err)
	}
	in := lookups(t, f, config(f))
	if off, err := in.InstanceShutdown(context.Background(), node); !off || err != nil {
		t.Errorf("InstanceShutdown of a SHUTOFF server = %v, %v", off, err)
	}
	if err := f.DeleteServer(id); err != nil {
		t.Fatal(err)
	}
	in = lookups(t, f, config(f))
	if ok, err := in.InstanceExists(context.Background(), node); ok || err != nil {
		t.Errorf("InstanceExists of a deleted server = %v, %v; want false, nil", ok, err)
	}
}

// A trunk's subports give the Node their networks' addresses, as upstream
// reads them (a GET per subport and per network there; one query each
// here), classified like the server's own networks.
func TestTrunkSubportAddresses(t *testing.T) {
	f := fake.New(fake.Account{})
	f.AddNetwork(fake.NetworkSpec{Name: "k8s", Subnets: []fake.SubnetSpec{{CIDR: "10.0.0.0/16"}}})
	f.AddNetwork(fake.NetworkSpec{Name: "vlan-100", Subnets: []fake.SubnetSpec{{CIDR: "172.16.0.0/24"}}})
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	id := f.AddServer(fake.ServerSpec{Name: "trunked", Ports: []fake.PortSpec{{
		Network: "k8s", IPs: []string{"10.0.0.7"},
		SubPorts: []fake.SubPortSpec{{Network: "vlan-100", IPs: []string{"172.16.0.9"}, SegmentationID: 100}},
	}}})
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "trunked"}, Spec: v1.NodeSpec{ProviderID: "openstack:///" + id}}
	in := lookups(t, f, config(f))
	md, err := in.InstanceMetadata(context.Background(), node)
	if err != nil {
		t.Fatal(err)
	}
	want := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.7"}, {Type: v1.NodeInternalIP, Address: "172.16.0.9"}}
	if fmt.Sprint(md.NodeAddresses) != fmt.Sprint(want) {
		t.Errorf("addresses %v, want %v", md.NodeAddresses, want)
	}
}
