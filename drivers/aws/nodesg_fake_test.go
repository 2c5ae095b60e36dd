package aws_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	awsccm "github.com/polyccm/polyccm/drivers/aws"
	fakeaws "github.com/polyccm/polyccm/test/fakecloud/aws"
)

// ingressOf lists a group's ingress rules as "proto:from-to cidr desc".
func ingressOf(t *testing.T, f *fakeaws.Server, id string) []string {
	t.Helper()
	sg, ok := f.SecurityGroup(id)
	if !ok {
		t.Fatalf("no security group %s", id)
	}
	var out []string
	for _, p := range sg.Ingress {
		for _, r := range append(slices.Clone(p.IPRanges), p.IPv6Ranges...) {
			out = append(out, p.Protocol+":"+itoa(p.FromPort)+"-"+itoa(p.ToPort)+" "+r.CIDR+" "+r.Description)
		}
	}
	slices.Sort(out)
	return out
}

func itoa(i int32) string { return strconv.Itoa(int(i)) }

// The NLB lets itself into its nodes' cluster security group, as the AWS
// CCM does: client rules from the source ranges to the node ports, health
// rules from its subnets, an MTU-discovery rule per source; an operator's
// rule and the instances' other groups are left alone; a port change
// moves the rules; deleting the Service takes them all out.
func TestNodeSecurityGroupRules(t *testing.T) {
	w := newWorld(t)
	nodeSG := w.fake.AddSecurityGroup(fakeaws.SecurityGroup{
		Name: "nodes", Description: "cluster nodes", VPCID: w.vpc.ID,
		Tags:    map[string]string{awsccm.TagClusterPrefix + cluster: awsccm.TagOwned},
		Ingress: []fakeaws.IPPermission{{Protocol: "tcp", FromPort: 22, ToPort: 22, IPRanges: []fakeaws.IPRange{{CIDR: "10.0.0.0/8", Description: "ssh"}}}},
	})
	other := w.fake.AddSecurityGroup(fakeaws.SecurityGroup{Name: "monitoring", Description: "not the cluster's", VPCID: w.vpc.ID})
	var nodes []*v1.Node
	for _, z := range []string{zoneA, zoneB} {
		in := w.fake.AddInstance(fakeaws.Instance{SubnetID: w.private[z].ID, SecurityGroupIDs: []string{other.ID, nodeSG.ID}})
		nodes = append(nodes, node(in, nil))
	}
	e := w.env(w.config())
	svc := service(nil, tcp("http", 80, 30080))
	svc.Spec.LoadBalancerSourceRanges = []string{"203.0.113.0/24"}
	svc.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
	svc.Spec.HealthCheckNodePort = 31999
	e.ensure(svc, nodes)

	lb := e.nlb()
	var health []string
	for _, az := range lb.Subnets {
		for _, s := range w.fake.Subnets() {
			if s.ID == az.SubnetID {
				health = append(health, "tcp:31999-31999 "+s.CIDRBlock+" kubernetes.io/rule/nlb/health="+lb.Name)
			}
		}
	}
	if len(health) == 0 {
		t.Fatalf("the NLB has no subnets: %+v", lb)
	}
	want := append([]string{
		"icmp:3-4 203.0.113.0/24 kubernetes.io/rule/nlb/mtu",
		"tcp:22-22 10.0.0.0/8 ssh",
		"tcp:30080-30080 203.0.113.0/24 kubernetes.io/rule/nlb/client=" + lb.Name,
	}, health...)
	slices.Sort(want)
	if got := ingressOf(t, w.fake, nodeSG.ID); !slices.Equal(got, want) {
		t.Errorf("node group rules\n got %v\nwant %v", got, want)
	}
	if got := ingressOf(t, w.fake, other.ID); len(got) != 0 {
		t.Errorf("the instances' other group was changed: %v", got)
	}

	// A new node port: the rule moves.
	svc.Spec.Ports[0].NodePort = 30081
	e.ensure(svc, nodes)
	got := ingressOf(t, w.fake, nodeSG.ID)
	if !slices.Contains(got, "tcp:30081-30081 203.0.113.0/24 kubernetes.io/rule/nlb/client="+lb.Name) ||
		slices.Contains(got, "tcp:30080-30080 203.0.113.0/24 kubernetes.io/rule/nlb/client="+lb.Name) {
		t.Errorf("after the node port changed: %v", got)
	}

	if err := e.lbs.EnsureLoadBalancerDeleted(ctx(t), cluster, svc); err != nil {
		t.Fatal(err)
	}
	if got := ingressOf(t, w.fake, nodeSG.ID); !slices.Equal(got, []string{"tcp:22-22 10.0.0.0/8 ssh"}) {
		t.Errorf("after the Service is deleted: %v; want only the operator's rule", got)
	}
}

// disableSecurityGroupIngress leaves the nodes' groups to the operator.
func TestNodeSecurityGroupRulesDisabled(t *testing.T) {
	w := newWorld(t)
	nodeSG := w.fake.AddSecurityGroup(fakeaws.SecurityGroup{
		Name: "nodes", Description: "cluster nodes", VPCID: w.vpc.ID,
		Tags: map[string]string{awsccm.TagClusterPrefix + cluster: awsccm.TagOwned},
	})
	in := w.fake.AddInstance(fakeaws.Instance{SubnetID: w.private[zoneA].ID, SecurityGroupIDs: []string{nodeSG.ID}})
	cfg := w.config()
	cfg.DisableSecurityGroupIngress = true
	e := w.env(cfg)
	e.ensure(service(nil), []*v1.Node{node(in, nil)})
	if got := ingressOf(t, w.fake, nodeSG.ID); len(got) != 0 {
		t.Errorf("rules added with disableSecurityGroupIngress: %v", got)
	}
}

// The usual case: the nodes' only group is not tagged for the cluster.
// The sync puts the rules there (the AWS CCM's choice), so deleting the
// Service must take them out of it too, though the AWS CCM, which looks
// in tagged groups only, would leave them behind.
func TestNodeRulesLeaveUntaggedGroupOnDelete(t *testing.T) {
	w := newWorld(t)
	nodeSG := w.fake.AddSecurityGroup(fakeaws.SecurityGroup{
		Name: "nodes", Description: "cluster nodes", VPCID: w.vpc.ID,
		Ingress: []fakeaws.IPPermission{{Protocol: "tcp", FromPort: 22, ToPort: 22, IPRanges: []fakeaws.IPRange{{CIDR: "10.0.0.0/8", Description: "ssh"}}}},
	})
	e := w.env(w.config())
	var nodes []*v1.Node
	for _, z := range []string{zoneA, zoneB} {
		in := w.fake.AddInstance(fakeaws.Instance{SubnetID: w.private[z].ID, SecurityGroupIDs: []string{nodeSG.ID}})
		n := node(in, nil)
		nodes = append(nodes, n)
		e.addNode(n)
	}
	svc := service(nil, tcp("http", 80, 30080))
	svc.Spec.LoadBalancerSourceRanges = []string{"203.0.113.0/24"}
	e.ensure(svc, nodes)
	if got := ingressOf(t, w.fake, nodeSG.ID); len(got) < 3 {
		t.Fatalf("the sync wrote no rules into the untagged node group: %v", got)
	}
	if err := e.lbs.EnsureLoadBalancerDeleted(ctx(t), cluster, svc); err != nil {
		t.Fatal(err)
	}
	if got := ingressOf(t, w.fake, nodeSG.ID); !slices.Equal(got, []string{"tcp:22-22 10.0.0.0/8 ssh"}) {
		t.Errorf("after the Service is deleted: %v; want only the operator's rule", got)
	}
}

// Several NLBs in one group, deleted at the same time: the shared MTU rule
// goes with the last of them, whatever the order the deletions finish in.
func TestSharedMTURuleGoesWithTheLastNLB(t *testing.T) {
	for _, tagged := range []bool{true, false} {
		t.Run("tagged="+strconv.FormatBool(tagged), func(t *testing.T) {
			w := newWorld(t)
			sg := fakeaws.SecurityGroup{Name: "nodes", Description: "cluster nodes", VPCID: w.vpc.ID}
			if tagged {
				sg.Tags = map[string]string{awsccm.TagClusterPrefix + cluster: awsccm.TagOwned}
			}
			nodeSG := w.fake.AddSecurityGroup(sg)
			e := w.env(w.config())
			in := w.fake.AddInstance(fakeaws.Instance{SubnetID: w.private[zoneA].ID, SecurityGroupIDs: []string{nodeSG.ID}})
			nodes := []*v1.Node{node(in, nil)}
			e.addNode(nodes[0])
			var svcs []*v1.Service
			for i := range 4 {
				svc := service(nil, tcp("http", 80, int32(30080+i)))
				svc.Name = "web" + strconv.Itoa(i)
				svc.UID = types.UID(fmt.Sprintf("%d5e1b6a3-7d2f-4c8e-9a0b-1c2d3e4f5a6b", i))
				e.ensure(svc, nodes)
				svcs = append(svcs, svc)
			}
			if got := ingressOf(t, w.fake, nodeSG.ID); !slices.Contains(got, "icmp:3-4 0.0.0.0/0 kubernetes.io/rule/nlb/mtu") {
				t.Fatalf("no MTU rule after the syncs: %v", got)
			}
			var wg sync.WaitGroup
			errs := make([]error, len(svcs))
			for i, svc := range svcs {
				wg.Go(func() { errs[i] = e.lbs.EnsureLoadBalancerDeleted(ctx(t), cluster, svc) })
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Fatalf("deleting %s: %v", svcs[i].Name, err)
				}
			}
			if got := ingressOf(t, w.fake, nodeSG.ID); len(got) != 0 {
				t.Errorf("after every NLB is deleted the node group holds %v; want nothing", got)
			}
		})
	}
}

// The load-balancer-source-ranges annotation restricts clients as the spec
// field does, when the spec lists none, as the AWS CCM reads it
// (servicehelpers.GetLoadBalancerSourceRanges): the NLB's group and the
// node rules let in those ranges only, and a Classic ELB's group too.
func TestSourceRangesAnnotation(t *testing.T) {
	w := newWorld(t)
	nodeSG := w.fake.AddSecurityGroup(fakeaws.SecurityGroup{Name: "nodes", Description: "cluster nodes", VPCID: w.vpc.ID,
		Tags: map[string]string{awsccm.TagClusterPrefix + cluster: awsccm.TagOwned}})
	in := w.fake.AddInstance(fakeaws.Instance{SubnetID: w.private[zoneA].ID, SecurityGroupIDs: []string{nodeSG.ID}})
	e := w.env(w.config())
	svc := service(map[string]string{v1.AnnotationLoadBalancerSourceRangesKey: "198.51.100.0/24, 203.0.113.0/24"})
	e.ensure(svc, []*v1.Node{node(in, nil)})
	lb := e.nlb()
	got := ingressOf(t, w.fake, nodeSG.ID)
	for _, want := range []string{
		"tcp:30080-30080 198.51.100.0/24 kubernetes.io/rule/nlb/client=" + lb.Name,
		"tcp:30080-30080 203.0.113.0/24 kubernetes.io/rule/nlb/client=" + lb.Name,
	} {
		if !slices.Contains(got, want) {
			t.Errorf("node group rules %v lack %q", got, want)
		}
	}
	if slices.ContainsFunc(got, func(r string) bool { return strings.Contains(r, "0.0.0.0/0") }) {
		t.Errorf("node group rules %v let everyone in", got)
	}
	sg := w.securityGroup(lb)
	for _, p := range sg.Ingress {
		for _, r := range p.IPRanges {
			if r.CIDR == "0.0.0.0/0" {
				t.Errorf("the NLB's group lets everyone in: %+v", sg.Ingress)
			}
		}
	}
}
