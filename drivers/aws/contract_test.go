package aws_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/driver/drivertest"
	awsccm "github.com/polyccm/polyccm/drivers/aws"
	fakeaws "github.com/polyccm/polyccm/test/fakecloud/aws"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
	"github.com/polyccm/polyccm/test/simcloud"
)

// The contract every driver passes, on the realistic profile: NLBs
// provision, new groups read stale, deleted NLBs hold their groups for a
// while, EC2 and ELBv2 throttle per bucket.
func TestContract(t *testing.T) {
	w := newWorld(t)
	simcloud.Realistic.AWS(w.fake)
	drivertest.Run(t, &contractFake{world: w, names: map[string]string{}})
}

type contractFake struct {
	*world
	names map[string]string // instance ID -> Node name
}

func (c *contractFake) Driver() string        { return awsccm.Name }
func (c *contractFake) ClusterName() string   { return c.clusterName }
func (c *contractFake) Config(*testing.T) any { return c.config() }

func (c *contractFake) AddInstance(*testing.T) *v1.Node {
	zone := []string{zoneA, zoneB}[len(c.names)%2]
	in := c.instance(zone)
	c.names[in.ID] = in.PrivateDNSName
	return node(in, nil)
}

func (c *contractFake) RemoveInstance(t *testing.T, n *v1.Node) {
	id := n.Spec.ProviderID[strings.LastIndex(n.Spec.ProviderID, "/")+1:]
	if !c.fake.RemoveInstance(id) {
		t.Fatalf("no instance behind %s", n.Spec.ProviderID)
	}
}

func (c *contractFake) MissingProviderID() string {
	return awsccm.ProviderID(zoneA, "i-0123456789abcdef0")
}

func (c *contractFake) InjectLookupFault(f drivertest.Fault) func() {
	id := c.fake.Faults().AddRule(faults.Rule{Match: "ec2 DescribeInstances", Status: f.Status, Timeout: f.Hang})
	return func() { c.fake.Faults().RemoveRule(id) }
}

func (c *contractFake) Service(name string, ports ...int32) *v1.Service {
	var sp []v1.ServicePort
	for _, p := range ports {
		sp = append(sp, tcp(fmt.Sprint("p", p), p, 30000+p))
	}
	svc := service(nil, sp...)
	svc.Namespace, svc.Name = "default", name
	return svc
}

func (c *contractFake) Targets(*testing.T, *v1.Service) []string {
	var names []string
	for _, tg := range c.fake.TargetGroups() {
		for _, tgt := range tg.Targets {
			if n := c.names[tgt.ID]; !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return names
}

func (c *contractFake) Ports(*testing.T, *v1.Service) []int32 {
	var ports []int32
	for _, l := range c.fake.Listeners() {
		ports = append(ports, l.Port)
	}
	slices.Sort(ports)
	return ports
}

func (c *contractFake) Resources(*testing.T) []string {
	var out []string
	for _, lb := range c.fake.LoadBalancers() {
		out = append(out, "load balancer "+lb.Name)
	}
	for _, tg := range c.fake.TargetGroups() {
		out = append(out, "target group "+tg.Name)
	}
	for _, l := range c.fake.Listeners() {
		out = append(out, fmt.Sprintf("listener %d", l.Port))
	}
	for _, sg := range c.fake.SecurityGroups() {
		out = append(out, "security group "+sg.Name)
	}
	slices.Sort(out)
	return out
}

func (c *contractFake) AddVolume(*testing.T) (*v1.PersistentVolume, map[string]string) {
	v := c.fake.AddVolume(fakeaws.Volume{AvailabilityZone: zoneB})
	return csiPV(awsccm.CSIDriverEBS, v.ID), map[string]string{v1.LabelTopologyZone: zoneB, v1.LabelTopologyRegion: fakeaws.DefaultRegion}
}

func (c *contractFake) MissingVolume() *v1.PersistentVolume {
	return csiPV(awsccm.CSIDriverEBS, "vol-0000000000000dead")
}

func (c *contractFake) InjectVolumeFault(f drivertest.Fault) func() {
	id := c.fake.Faults().AddRule(faults.Rule{Match: "ec2 DescribeVolumes", Status: f.Status, Timeout: f.Hang})
	return func() { c.fake.Faults().RemoveRule(id) }
}
