package openstack_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/polyccm/polyccm/config/secret"
	"github.com/polyccm/polyccm/core/driver/drivertest"
	"github.com/polyccm/polyccm/drivers/openstack"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
	fake "github.com/polyccm/polyccm/test/fakecloud/openstack"
)

// The contract every driver passes: instances, routes (the cluster's
// router) and volumes (Cinder); load balancers come with Octavia.
func TestContract(t *testing.T) {
	f := fake.New(fake.Account{})
	f.AddNetwork(fake.NetworkSpec{Name: "k8s", Subnets: []fake.SubnetSpec{{CIDR: "10.0.0.0/16"}}})
	router := f.AddRouter(fake.RouterSpec{Name: "k8s-router", Subnets: []string{"k8s"}})
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	drivertest.Run(t, &contractFake{fake: f, router: router})
}

type contractFake struct {
	fake    *fake.Server
	router  string
	n       int
	volumes int
}

func (c *contractFake) Driver() string      { return openstack.Name }
func (c *contractFake) ClusterName() string { return "contract" }
func (c *contractFake) Config(*testing.T) any {
	a := c.fake.Account()
	return &openstack.Config{
		AuthURL: c.fake.AuthURL(), Region: a.Region,
		Username: a.UserName, UserDomainName: a.DomainName, Password: secret.Secret{Value: a.Password},
		ProjectID: a.ProjectID, RouterID: c.router,
	}
}

func (c *contractFake) AddInstance(*testing.T) *v1.Node {
	c.n++
	name := fmt.Sprintf("contract-%d", c.n)
	ip := fmt.Sprintf("10.0.%d.%d", c.n/200, 10+c.n%200)
	id := c.fake.AddServer(fake.ServerSpec{Name: name, Ports: []fake.PortSpec{{Network: "k8s", IPs: []string{ip}}}})
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("node-uid-" + strconv.Itoa(c.n))},
		Spec:       v1.NodeSpec{ProviderID: "openstack:///" + id},
		Status:     v1.NodeStatus{Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: ip}}},
	}
}

func (c *contractFake) RemoveInstance(t *testing.T, n *v1.Node) {
	if err := c.fake.DeleteServer(strings.TrimPrefix(n.Spec.ProviderID, "openstack:///")); err != nil {
		t.Fatal(err)
	}
}

func (c *contractFake) MissingProviderID() string {
	return "openstack:///00000000-0000-4000-8000-000000000000"
}

func (c *contractFake) InjectLookupFault(f drivertest.Fault) func() {
	id := c.fake.Faults().AddRule(faults.Rule{Match: "compute.*", Status: f.Status, Timeout: f.Hang})
	return func() { c.fake.Faults().RemoveRule(id) }
}

// AddVolume makes a Cinder volume named as the Cinder CSI driver names
// them; its zone is its availability zone, its region the config's.
func (c *contractFake) AddVolume(*testing.T) (*v1.PersistentVolume, map[string]string) {
	c.volumes++
	id := c.fake.AddVolume(fake.VolumeSpec{Name: fmt.Sprintf("pvc-%d", c.volumes), AvailabilityZone: "nova"})
	return cinderPV(id), map[string]string{v1.LabelTopologyRegion: c.fake.Account().Region, v1.LabelTopologyZone: "nova"}
}

func (c *contractFake) MissingVolume() *v1.PersistentVolume {
	return cinderPV("00000000-0000-4000-8000-00000000beef")
}

func (c *contractFake) InjectVolumeFault(f drivertest.Fault) func() {
	id := c.fake.Faults().AddRule(faults.Rule{Match: "volume.volumes.*", Status: f.Status, Timeout: f.Hang})
	return func() { c.fake.Faults().RemoveRule(id) }
}

func cinderPV(id string) *v1.PersistentVolume {
	return &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
		CSI: &v1.CSIPersistentVolumeSource{Driver: openstack.CSIDriver, VolumeHandle: id},
	}}}
}

func secretOf(v string) secret.Secret { return secret.Secret{Value: v} }
