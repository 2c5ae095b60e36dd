//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/polyccm/polyccm/drivers/aws"
	fakeaws "github.com/polyccm/polyccm/test/fakecloud/aws"
)

// The security groups a Service names (issue 33, points 1 and 2), through
// the binary: a tenant in a second namespace names the victim's managed
// group, with target-node-labels matching no Node, and is refused without
// touching the victim's node rule; a group an operator's Services name is
// let into the nodes while one of them names it, and out when the last
// stops or goes, while the operator's own rule naming it stays.
func TestAWSNamedSecurityGroups(t *testing.T) {
	e := newAWSEnv(t, withServices)
	nodeSG := e.fake.AddSecurityGroup(fakeaws.SecurityGroup{Name: "nodes", Description: "e2e nodes", VPCID: e.vpc.ID,
		Tags: map[string]string{aws.TagClusterPrefix + "e2e": aws.TagOwned}})
	bastion := e.fake.AddSecurityGroup(fakeaws.SecurityGroup{Name: "bastion", Description: "operator's bastion", VPCID: e.vpc.ID})
	office := e.fake.AddSecurityGroup(fakeaws.SecurityGroup{Name: "office", Description: "operator's office", VPCID: e.vpc.ID})
	for i := range 2 {
		in := e.fake.AddInstance(fakeaws.Instance{SubnetID: e.subnets[awsZones[i%2]].ID, InstanceType: "m6i.large",
			PrivateDNSName: e.nodeName(i) + ".ec2.internal", SecurityGroupIDs: []string{nodeSG.ID}})
		e.register(in.PrivateDNSName, "")
		e.waitInitialized([]string{in.PrivateDNSName}, 30*time.Second)
	}
	// The operator's own rule from the bastion: SSH, described.
	ec2c := ec2.NewFromConfig(awssdk.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider(awsAccessKey, awsSecretKey, "")},
		func(o *ec2.Options) { o.BaseEndpoint = awssdk.String(e.fake.EC2URL()) })
	if _, err := ec2c.AuthorizeSecurityGroupIngress(context.Background(), &ec2.AuthorizeSecurityGroupIngressInput{GroupId: awssdk.String(nodeSG.ID),
		IpPermissions: []ec2types.IpPermission{{IpProtocol: awssdk.String("tcp"), FromPort: awssdk.Int32(22), ToPort: awssdk.Int32(22),
			UserIdGroupPairs: []ec2types.UserIdGroupPair{{GroupId: awssdk.String(bastion.ID), Description: awssdk.String("ssh from the bastion")}}}}}); err != nil {
		t.Fatal(err)
	}
	nodeRules := func() []string {
		sg, _ := e.fake.SecurityGroup(nodeSG.ID)
		var out []string
		for _, p := range sg.Ingress {
			for _, g := range p.Groups {
				out = append(out, p.Protocol+" from "+g.GroupID)
			}
		}
		slices.Sort(out)
		return out
	}
	waitRules := func(what string, want ...string) {
		t.Helper()
		slices.Sort(want)
		eventually(t, 60*time.Second, what, func() (bool, string) {
			got := nodeRules()
			return slices.Equal(got, want), fmt.Sprintf("node group lets in %v, want %v", got, want)
		})
	}
	ssh := "tcp from " + bastion.ID

	// The victim, and its managed group's rule in the nodes' group.
	nsService(t, victimNS, "web", map[string]string{aws.AnnType: "classic"}, nil, tcp(80))
	web := waitNSIngress(t, victimNS, "web", 90*time.Second)
	var victimSG string
	for _, lb := range e.fake.ClassicLoadBalancers() {
		if lb.Tags[aws.TagServiceName] == victimNS+"/web" {
			victimSG = lb.SecurityGroups[0]
		}
	}
	if victimSG == "" {
		t.Fatal("no Classic load balancer for the victim")
	}
	waitRules("the victim's rule", "-1 from "+victimSG, ssh)

	// The tenant names the victim's group.
	for i, ann := range []string{aws.AnnSecurityGroups, aws.AnnExtraSecurityGroups} {
		name := fmt.Sprintf("steal%d", i)
		nsService(t, thiefNS, name, map[string]string{aws.AnnType: "classic", ann: victimSG, aws.AnnTargetNodeLabels: "pool=none"}, nil, tcp(8080))
		eventually(t, 60*time.Second, "a Warning on "+thiefNS+"/"+name, func() (bool, string) {
			evs := serviceEvents(t, thiefNS, name)
			for _, ev := range evs {
				if strings.HasPrefix(ev, "Warning ") && strings.Contains(ev, ann) && strings.Contains(ev, victimNS+"/web") {
					return true, ""
				}
			}
			return false, fmt.Sprintf("events %q", evs)
		})
		time.Sleep(2 * time.Second) // a wrong revoke would have happened by now
		if got := nodeRules(); !slices.Contains(got, "-1 from "+victimSG) {
			t.Fatalf("the victim's node rule is gone after %s named its group: %v", name, got)
		}
		noIngress(t, thiefNS, name)
		deleteNSServiceAndWait(t, thiefNS, name, 60*time.Second)
	}
	sameStatus(t, web)
	waitRules("the victim's rule after the tenant left", "-1 from "+victimSG, ssh)

	// Two Services name the bastion group; one goes, then the other moves.
	nsService(t, "team-a", "one", map[string]string{aws.AnnType: "classic", aws.AnnSecurityGroups: bastion.ID}, nil, tcp(81))
	nsService(t, "team-b", "two", map[string]string{aws.AnnType: "classic", aws.AnnSecurityGroups: bastion.ID}, nil, tcp(82))
	waitNSIngress(t, "team-a", "one", 90*time.Second)
	waitNSIngress(t, "team-b", "two", 90*time.Second)
	waitRules("the bastion's rule", "-1 from "+victimSG, "-1 from "+bastion.ID, ssh)
	deleteNSServiceAndWait(t, "team-a", "one", 90*time.Second)
	time.Sleep(2 * time.Second)
	if got := nodeRules(); !slices.Contains(got, "-1 from "+bastion.ID) {
		t.Fatalf("the bastion's rule went with one while two still names the group: %v", got)
	}
	two := nsSvc(t, "team-b", "two")
	two.Annotations[aws.AnnSecurityGroups] = office.ID
	if _, err := cp.Admin.CoreV1().Services("team-b").Update(context.Background(), two, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRules("the office's rule instead of the bastion's", "-1 from "+victimSG, "-1 from "+office.ID, ssh)
	deleteNSServiceAndWait(t, "team-b", "two", 90*time.Second)
	deleteNSServiceAndWait(t, victimNS, "web", 90*time.Second)
	waitRules("only the operator's rule", ssh)
	if n := len(e.fake.ClassicLoadBalancers()); n != 0 {
		t.Errorf("%d Classic load balancers left", n)
	}
}
