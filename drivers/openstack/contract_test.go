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

// The contract every driver passes (instances so far: load balancers,
// routes and volumes come with Octavia, the router and Cinder).
func TestContract(t *testing.T) {
	f := fake.New(fake.Account{})
	f.AddNetwork(fake.NetworkSpec{Name: "k8s", Subnets: []fake.SubnetSpec{{CIDR: "10.0.0.0/16"}}})
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	drivertest.Run(t, &contractFake{fake: f})
}

type contractFake struct {
	fake *fake.Server
	n    int
}

func (c *contractFake) Driver() string      { return openstack.Name }
func (c *contractFake) ClusterName() string { return "contract" }
func (c *contractFake) Config(*testing.T) any {
	a := c.fake.Account()
	return &openstack.Config{
		AuthURL: c.fake.AuthURL(), Region: a.Region,
		Username: a.UserName, UserDomainName: a.DomainName, Password: secret.Secret{Value: a.Password},
		ProjectID: a.ProjectID,
	}
}

func (c *contractFake) AddInstance(*testing.T) *v1.Node {
	c.n++
	name := fmt.Sprintf("contract-%d", c.n)
	id := c.fake.AddServer(fake.ServerSpec{Name: name, Ports: []fake.PortSpec{{Network: "k8s"}}})
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("node-uid-" + strconv.Itoa(c.n))},
		Spec:       v1.NodeSpec{ProviderID: "openstack:///" + id},
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

func secretOf(v string) secret.Secret { return secret.Secret{Value: v} }
