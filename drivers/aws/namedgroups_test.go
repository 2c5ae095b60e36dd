package aws_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	awsccm "github.com/polyccm/polyccm/drivers/aws"
	fakeaws "github.com/polyccm/polyccm/test/fakecloud/aws"
)

// addService puts a Service into the informer the driver reads to see
// which Services use a security group.
func (e *env) addService(svc *v1.Service) {
	e.t.Helper()
	if err := e.informers.Core().V1().Services().Informer().GetIndexer().Add(svc); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) removeService(svc *v1.Service) {
	e.t.Helper()
	if err := e.informers.Core().V1().Services().Informer().GetIndexer().Delete(svc); err != nil {
		e.t.Fatal(err)
	}
}

func tenantService(ns, name, uid string, ann map[string]string) *v1.Service {
	s := service(ann)
	s.Namespace, s.Name, s.UID = ns, name, types.UID(uid)
	return s
}

// A Service in another namespace names the victim's managed group in
// security-groups, with target-node-labels that match no Node: before,
// its sync revoked the victim's "all from my group" rule from the nodes'
// group. Now the group is refused with a Warning, and nothing of the
// victim's changes.
func TestAnotherServicesManagedGroupIsRefused(t *testing.T) {
	c := newClassic(t)
	nodes := []*v1.Node{c.node(0), c.node(1)}
	victim := tenantService("tenant-a", "web", "11111111-1111-4111-8111-111111111111", nil)
	c.addService(victim)
	c.ensure(victim, nodes)
	lbs := c.fake.ClassicLoadBalancers()
	if len(lbs) != 1 || len(lbs[0].SecurityGroups) != 1 {
		t.Fatalf("victim's load balancers %+v", lbs)
	}
	victimSG := lbs[0].SecurityGroups[0]
	before := c.letsIn(c.nodeSG.ID)
	if !slices.Contains(before, "-1 from "+victimSG) {
		t.Fatalf("the node group does not let the victim in: %v", before)
	}

	for _, ann := range []string{awsccm.AnnSecurityGroups, awsccm.AnnExtraSecurityGroups} {
		thief := tenantService("tenant-b", "steal", "22222222-2222-4222-8222-222222222222", map[string]string{
			ann: victimSG, awsccm.AnnTargetNodeLabels: "pool=none",
		})
		c.addService(thief)
		_, err := c.lbs.EnsureLoadBalancer(ctx(t), cluster, thief, nodes)
		if err == nil {
			t.Fatalf("%s naming another Service's group: no error", ann)
		}
		ev := strings.Join(c.events(), "\n")
		if !strings.Contains(ev, ann) || !strings.Contains(ev, "tenant-a/web") {
			t.Errorf("events %q: want a Warning on %s naming Service tenant-a/web", ev, ann)
		}
		if got := c.letsIn(c.nodeSG.ID); !slices.Equal(got, before) {
			t.Errorf("%s: the node group now lets in %v, was %v", ann, got, before)
		}
		if n := len(c.fake.ClassicLoadBalancers()); n != 1 {
			t.Errorf("%d Classic load balancers; the thief's must not be made", n)
		}
		c.removeService(thief)
	}
}

// A group a Service names in security-groups (an operator's bastion
// group, say) is let into the nodes' group as the AWS CCM does; the rule
// goes when the last Service naming the group stops naming it or is
// deleted, and an operator's own rule naming the group stays.
func TestNamedGroupRuleIsReleased(t *testing.T) {
	c := newClassic(t)
	bastion := c.fake.AddSecurityGroup(fakeaws.SecurityGroup{Name: "bastion", Description: "operator's bastion", VPCID: c.vpc.ID})
	other := c.fake.AddSecurityGroup(fakeaws.SecurityGroup{Name: "office", Description: "operator's office", VPCID: c.vpc.ID})
	// The operator's own rule from the bastion: SSH only, described.
	if _, err := c.sdk().ec2.AuthorizeSecurityGroupIngress(ctx(t), sshFrom(c.nodeSG.ID, bastion.ID)); err != nil {
		t.Fatal(err)
	}
	nodes := []*v1.Node{c.node(0)}
	one := tenantService("team-a", "one", "33333333-3333-4333-8333-333333333333", map[string]string{awsccm.AnnSecurityGroups: bastion.ID})
	two := tenantService("team-b", "two", "44444444-4444-4444-8444-444444444444", map[string]string{awsccm.AnnSecurityGroups: bastion.ID})
	c.addService(one)
	c.addService(two)
	c.ensure(one, nodes)
	c.ensure(two, nodes)
	all := "-1 from " + bastion.ID
	ssh := "tcp from " + bastion.ID
	if got := c.letsIn(c.nodeSG.ID); !slices.Contains(got, all) || !slices.Contains(got, ssh) {
		t.Fatalf("node group lets in %v; want all from the bastion group and the operator's SSH rule", got)
	}

	// One is deleted: two still uses the group, so the rule stays.
	delOne := one.DeepCopy()
	c.removeService(one)
	if err := c.lbs.EnsureLoadBalancerDeleted(ctx(t), cluster, delOne); err != nil {
		t.Fatal(err)
	}
	if got := c.letsIn(c.nodeSG.ID); !slices.Contains(got, all) {
		t.Fatalf("after one was deleted the node group lets in %v; two still needs all from the bastion", got)
	}

	// Two moves to another group: the bastion's rule goes, the office's
	// comes; the operator's SSH rule stays.
	two.Annotations[awsccm.AnnSecurityGroups] = other.ID
	c.addService(two)
	c.ensure(two, nodes)
	got := c.letsIn(c.nodeSG.ID)
	if slices.Contains(got, all) || !slices.Contains(got, "-1 from "+other.ID) || !slices.Contains(got, ssh) {
		t.Errorf("after two moved to the office group the node group lets in %v; want all from the office group and the SSH rule only", got)
	}

	// Two is deleted: the office's rule goes too.
	c.removeService(two)
	if err := c.lbs.EnsureLoadBalancerDeleted(ctx(t), cluster, two); err != nil {
		t.Fatal(err)
	}
	if got := c.letsIn(c.nodeSG.ID); !slices.Equal(got, []string{ssh}) {
		t.Errorf("after every Service is deleted the node group lets in %v; want the operator's SSH rule only", got)
	}
}

// sshFrom is an operator's rule: SSH from a group, described.
func sshFrom(nodeGroup, from string) *ec2.AuthorizeSecurityGroupIngressInput {
	return &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(nodeGroup), IpPermissions: []ec2types.IpPermission{{
		IpProtocol: aws.String("tcp"), FromPort: aws.Int32(22), ToPort: aws.Int32(22),
		UserIdGroupPairs: []ec2types.UserIdGroupPair{{GroupId: aws.String(from), Description: aws.String("ssh from the bastion")}},
	}}}
}
