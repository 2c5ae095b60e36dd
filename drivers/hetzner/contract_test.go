package hetzner_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/polyccm/polyccm/config/secret"
	"github.com/polyccm/polyccm/core/driver/drivertest"
	"github.com/polyccm/polyccm/drivers/hetzner"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
	fake "github.com/polyccm/polyccm/test/fakecloud/hetzner"
	"github.com/polyccm/polyccm/test/simcloud"
)

const contractToken = "contract0contract0contract0contract0contract0contract0contract0c"

// The contract every driver passes, on the realistic profile: actions
// take time, load balancers take longer, the project's bucket throttles.
func TestContract(t *testing.T) {
	f := fake.New(contractToken)
	simcloud.Realistic.Hetzner(f)
	network := f.AddNetwork("k8s", "10.0.0.0/8", fake.Subnet{IPRange: "10.0.0.0/16", NetworkZone: "eu-central"})
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	drivertest.Run(t, &contractFake{fake: f, network: network})
}

type contractFake struct {
	fake    *fake.Server
	network int64
	n       int
	volumes int
}

func (c *contractFake) Driver() string      { return hetzner.Name }
func (c *contractFake) ClusterName() string { return "contract" }
func (c *contractFake) Config(*testing.T) any {
	return &hetzner.Config{
		Token: secret.Secret{Value: contractToken}, APIURL: c.fake.Endpoint(), Network: "k8s",
		Instances: hetzner.InstancesConfig{AddressFamily: hetzner.FamilyIPv4, ZoneLabel: true},
	}
}

func (c *contractFake) AddInstance(*testing.T) *v1.Node {
	c.n++
	name := fmt.Sprintf("contract-%d", c.n)
	id := c.fake.AddServer(fake.ServerSpec{Name: name, Network: c.network})
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("node-uid-" + strconv.Itoa(c.n))},
		Spec:       v1.NodeSpec{ProviderID: hetzner.ProviderID(id)},
	}
}

func (c *contractFake) RemoveInstance(t *testing.T, n *v1.Node) {
	id, err := strconv.ParseInt(strings.TrimPrefix(n.Spec.ProviderID, "hcloud://"), 10, 64)
	if err == nil {
		err = c.fake.DeleteServer(id)
	}
	if err != nil {
		t.Fatalf("no server behind %s: %v", n.Spec.ProviderID, err)
	}
}

func (c *contractFake) MissingProviderID() string { return hetzner.ProviderID(987654321) }

func (c *contractFake) InjectLookupFault(f drivertest.Fault) func() {
	id := c.fake.Faults().AddRule(faults.Rule{Match: "GET /v1/servers*", Status: f.Status, Timeout: f.Hang})
	return func() { c.fake.Faults().RemoveRule(id) }
}

func (c *contractFake) Service(name string, ports ...int32) *v1.Service {
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: "7f9c0b4e-2d1a-4c3b-9e8f-c0a7ac700001",
			Annotations: map[string]string{hetzner.AnnLocation: "fsn1"},
		},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer},
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
	for _, tg := range c.only(t).Targets {
		if s, ok := c.fake.Server(tg.ServerID); ok {
			names = append(names, s.Name)
		}
	}
	slices.Sort(names)
	return names
}

func (c *contractFake) Ports(t *testing.T, _ *v1.Service) []int32 {
	var ports []int32
	for _, s := range c.only(t).Services {
		ports = append(ports, int32(s.ListenPort))
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
	c.volumes++
	id := c.fake.AddVolume(fmt.Sprintf("pvc-%d", c.volumes), "nbg1")
	return hzPV(strconv.FormatInt(id, 10)), map[string]string{v1.LabelTopologyRegion: "nbg1", v1.LabelTopologyZone: "nbg1-dc3"}
}

func (c *contractFake) MissingVolume() *v1.PersistentVolume { return hzPV("99999999") }

func (c *contractFake) InjectVolumeFault(f drivertest.Fault) func() {
	id := c.fake.Faults().AddRule(faults.Rule{Match: "GET /v1/volumes*", Status: f.Status, Timeout: f.Hang})
	return func() { c.fake.Faults().RemoveRule(id) }
}

func hzPV(id string) *v1.PersistentVolume {
	return &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
		CSI: &v1.CSIPersistentVolumeSource{Driver: hetzner.CSIDriver, VolumeHandle: id},
	}}}
}
