package digitalocean_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/polyccm/polyccm/config/secret"
	"github.com/polyccm/polyccm/core/driver/drivertest"
	"github.com/polyccm/polyccm/drivers/digitalocean"
	fake "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
	"github.com/polyccm/polyccm/test/simcloud"
)

// The contract every driver passes, on the realistic profile: droplets
// and load balancers take time to become active, the API throttles.
func TestContract(t *testing.T) {
	f := fake.New(lbToken)
	simcloud.Realistic.DigitalOcean(f)
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

func (c *contractFake) Driver() string      { return digitalocean.Name }
func (c *contractFake) ClusterName() string { return "contract" }
func (c *contractFake) Config(*testing.T) any {
	return &digitalocean.Config{Token: secret.Secret{Value: lbToken}, APIURL: c.fake.URL()}
}

func (c *contractFake) AddInstance(*testing.T) *v1.Node {
	c.n++
	name := fmt.Sprintf("contract-%d", c.n)
	dr := c.fake.AddDroplet(fake.Droplet{Name: name, Region: lbRegion})
	return lbNode(name, dr, map[string]string{v1.LabelTopologyRegion: lbRegion})
}

func (c *contractFake) RemoveInstance(t *testing.T, n *v1.Node) {
	id, err := strconv.Atoi(strings.TrimPrefix(n.Spec.ProviderID, "digitalocean://"))
	if err != nil || !c.fake.RemoveDroplet(id) {
		t.Fatalf("no droplet behind %s (%v)", n.Spec.ProviderID, err)
	}
}

func (c *contractFake) MissingProviderID() string { return digitalocean.ProviderID(987654321) }

func (c *contractFake) InjectLookupFault(f drivertest.Fault) func() {
	id := c.fake.Faults().AddRule(faults.Rule{Match: "GET /v2/droplets*", Status: f.Status, Timeout: f.Hang})
	return func() { c.fake.Faults().RemoveRule(id) }
}

func (c *contractFake) Service(name string, ports ...int32) *v1.Service {
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: "7f9c0b4e-2d1a-4c3b-9e8f-contract0001"},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer},
	}
	for _, p := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, v1.ServicePort{Name: fmt.Sprint("p", p), Protocol: v1.ProtocolTCP, Port: p, TargetPort: intstr.FromInt32(p), NodePort: 30000 + p})
	}
	return svc
}

// only is the one load balancer the contract's Service has.
func (c *contractFake) only(t *testing.T) fake.LoadBalancer {
	lbs := c.fake.LoadBalancers()
	if len(lbs) != 1 {
		t.Fatalf("%d load balancers, want the Service's one", len(lbs))
	}
	return lbs[0]
}

func (c *contractFake) Targets(t *testing.T, _ *v1.Service) []string {
	var names []string
	for _, id := range c.only(t).DropletIDs {
		if d, ok := c.fake.Droplet(id); ok {
			names = append(names, d.Name)
		}
	}
	slices.Sort(names)
	return names
}

func (c *contractFake) Ports(t *testing.T, _ *v1.Service) []int32 {
	var ports []int32
	for _, r := range c.only(t).ForwardingRules {
		ports = append(ports, int32(r.EntryPort))
	}
	slices.Sort(ports)
	return ports
}

func (c *contractFake) Resources(*testing.T) []string {
	var out []string
	for _, lb := range c.fake.LoadBalancers() {
		out = append(out, "load balancer "+lb.Name)
	}
	slices.Sort(out)
	return out
}

func (c *contractFake) AddVolume(*testing.T) (*v1.PersistentVolume, map[string]string) {
	v := c.fake.AddVolume(fake.Volume{Region: "fra1"})
	return doPV(v.ID), map[string]string{v1.LabelTopologyRegion: "fra1"}
}

func (c *contractFake) MissingVolume() *v1.PersistentVolume {
	return doPV("506f78a4-e098-11e5-ad9f-000f53306ae1")
}

func (c *contractFake) InjectVolumeFault(f drivertest.Fault) func() {
	id := c.fake.Faults().AddRule(faults.Rule{Match: "GET /v2/volumes*", Status: f.Status, Timeout: f.Hang})
	return func() { c.fake.Faults().RemoveRule(id) }
}

func doPV(id string) *v1.PersistentVolume {
	return &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
		CSI: &v1.CSIPersistentVolumeSource{Driver: digitalocean.CSIDriverDOBS, VolumeHandle: id},
	}}}
}
