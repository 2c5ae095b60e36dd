package gce_test

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/polyccm/polyccm/config/secret"
	"github.com/polyccm/polyccm/core/driver/drivertest"
	"github.com/polyccm/polyccm/drivers/gce"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
	fakegce "github.com/polyccm/polyccm/test/fakecloud/gce"
	"github.com/polyccm/polyccm/test/simcloud"
)

// The contract every driver passes, on the realistic profile: operations
// run for a while, the API throttles per group of calls.
func TestContract(t *testing.T) {
	f := fakegce.New(testProject, testToken)
	simcloud.Realistic.GCE(f)
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	key, err := f.ServiceAccountKey("polyccm@" + testProject + ".iam.gserviceaccount.com")
	if err != nil {
		t.Fatal(err)
	}
	drivertest.Run(t, &contractFake{fake: f, key: string(key)})
}

type contractFake struct {
	fake *fakegce.Server
	key  string
	n    int
}

func (c *contractFake) Driver() string      { return gce.Name }
func (c *contractFake) ClusterName() string { return testCluster }
func (c *contractFake) Config(*testing.T) any {
	return &gce.Config{
		Project: testProject, Region: testRegion,
		Network: fakegce.DefaultNetwork, Subnetwork: fakegce.DefaultNetwork,
		NodeTags:    []string{testNodeTag},
		Credentials: secret.Secret{Value: c.key},
		Endpoint:    c.fake.URL(),
	}
}

func (c *contractFake) AddInstance(*testing.T) *v1.Node {
	c.n++
	zone := []string{testZone, testZone2}[c.n%2]
	in := c.fake.AddInstance(fakegce.Instance{Name: fmt.Sprintf("contract-%d", c.n), Zone: zone, MachineType: "e2-standard-4", Tags: []string{testNodeTag}})
	return node(in.Name, providerID(in))
}

func (c *contractFake) RemoveInstance(t *testing.T, n *v1.Node) {
	parts := strings.Split(strings.TrimPrefix(n.Spec.ProviderID, "gce://"), "/")
	if len(parts) != 3 || !c.fake.RemoveInstance(parts[1], parts[2]) {
		t.Fatalf("no instance behind %s", n.Spec.ProviderID)
	}
}

func (c *contractFake) MissingProviderID() string {
	return gce.ProviderID(testProject, testZone, "no-such-instance")
}

func (c *contractFake) InjectLookupFault(f drivertest.Fault) func() {
	var ids []int
	for _, m := range []string{"GET /compute/v1/projects/{project}/zones/{zone}/instances*", "GET /compute/v1/projects/{project}/aggregated/instances*"} {
		ids = append(ids, c.fake.Faults().AddRule(faults.Rule{Match: m, Status: f.Status, Timeout: f.Hang}))
	}
	return func() {
		for _, id := range ids {
			c.fake.Faults().RemoveRule(id)
		}
	}
}

func (c *contractFake) Service(name string, ports ...int32) *v1.Service {
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: "0c9f4d2e-8b7a-4e61-9d3c-2f1a0b9c8d7e"},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer},
	}
	for _, p := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, v1.ServicePort{Name: fmt.Sprint("p", p), Protocol: v1.ProtocolTCP, Port: p, NodePort: 30000 + p})
	}
	return svc
}

func (c *contractFake) Targets(*testing.T, *v1.Service) []string {
	var names []string
	for _, tp := range c.fake.TargetPools() {
		for _, in := range tp.Instances {
			names = append(names, lastSeg(in))
		}
	}
	slices.Sort(names)
	return names
}

func (c *contractFake) Ports(t *testing.T, _ *v1.Service) []int32 {
	var ports []int32
	for _, r := range c.fake.ForwardingRules() {
		specs := r.Ports
		if r.PortRange != "" {
			specs = append(specs, r.PortRange)
		}
		for _, s := range specs {
			lo, hi, _ := strings.Cut(s, "-")
			from, err1 := strconv.Atoi(lo)
			to, err2 := strconv.Atoi(cmp.Or(hi, lo))
			if err1 != nil || err2 != nil {
				t.Fatalf("forwarding rule %s: port %q", r.Name, s)
			}
			for p := from; p <= to; p++ {
				ports = append(ports, int32(p))
			}
		}
	}
	slices.Sort(ports)
	return ports
}

func (c *contractFake) Resources(*testing.T) []string {
	var out []string
	for _, r := range c.fake.ForwardingRules() {
		out = append(out, "forwarding rule "+r.Name)
	}
	for _, r := range c.fake.TargetPools() {
		out = append(out, "target pool "+r.Name)
	}
	for _, r := range c.fake.HTTPHealthChecks() {
		out = append(out, "http health check "+r.Name)
	}
	for _, r := range c.fake.HealthChecks() {
		out = append(out, "health check "+r.Name)
	}
	for _, r := range c.fake.Firewalls() {
		out = append(out, "firewall "+r.Name)
	}
	for _, r := range c.fake.BackendServices() {
		out = append(out, "backend service "+r.Name)
	}
	for _, r := range c.fake.InstanceGroups() {
		out = append(out, "instance group "+r.Name)
	}
	for _, r := range c.fake.Addresses() {
		out = append(out, "address "+r.Name)
	}
	slices.Sort(out)
	return out
}

func (c *contractFake) AddVolume(*testing.T) (*v1.PersistentVolume, map[string]string) {
	c.n++
	name := fmt.Sprintf("contract-disk-%d", c.n)
	c.fake.AddDisk(fakegce.Disk{Name: name, Zone: testZone2})
	return csiPV(gce.CSIDriverPD, zonalID(testZone2, name)), map[string]string{v1.LabelTopologyZone: testZone2, v1.LabelTopologyRegion: testRegion}
}

func (c *contractFake) MissingVolume() *v1.PersistentVolume {
	return csiPV(gce.CSIDriverPD, zonalID(testZone, "no-such-disk"))
}

func (c *contractFake) InjectVolumeFault(f drivertest.Fault) func() {
	var ids []int
	for _, ep := range []string{epListDisks, epListRegionDisks, epAggDisks, epGetDisk} {
		ids = append(ids, c.fake.Faults().AddRule(faults.Rule{Match: ep, Status: f.Status, Timeout: f.Hang}))
	}
	return func() {
		for _, id := range ids {
			c.fake.Faults().RemoveRule(id)
		}
	}
}
