package aws_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	v1 "k8s.io/api/core/v1"

	awsccm "github.com/polyccm/polyccm/drivers/aws"
)

// Names of shop/web's resources (svcUID, port 80 on node port 30080).
const (
	// Upstream's (see names_test.go for their provenance).
	upstreamSG   = "k8s-shop-web-7f6fe36072"
	upstreamTG80 = "k8s-shop-web-27ea9f0fdb"
	// polyccm's before it took upstream's, as that release computed them,
	// for shop/web-shop (the dash is kept there, dropped in upstream's).
	legacySG   = "k8s-elb-" + nlbName
	legacyTG80 = "k8s-shop-web-shop-525c01124f"
)

// madeElsewhere is an NLB for shop/web made by another controller: a
// security group, one target group with the Service's instance, and a
// listener on port 80.
type madeElsewhere struct {
	sg, tg, lb string // ID and ARNs
}

func (e *env) makeNLB(sgName, sgDesc string, sgTags map[string]string, tgName string, tgHC string, tags map[string]string, instance string) madeElsewhere {
	e.t.Helper()
	c := e.sdk()
	var m madeElsewhere
	sg, err := c.ec2.CreateSecurityGroup(ctx(e.t), &ec2.CreateSecurityGroupInput{
		GroupName: aws.String(sgName), Description: aws.String(sgDesc), VpcId: aws.String(e.vpc.ID),
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeSecurityGroup, Tags: ec2TagList(sgTags)}},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	m.sg = aws.ToString(sg.GroupId)
	tg, err := c.elb.CreateTargetGroup(ctx(e.t), &elbv2.CreateTargetGroupInput{
		Name: aws.String(tgName), Protocol: elbtypes.ProtocolEnumTcp, Port: aws.Int32(30080), VpcId: aws.String(e.vpc.ID),
		TargetType: elbtypes.TargetTypeEnumInstance, HealthCheckProtocol: elbtypes.ProtocolEnum(tgHC), Tags: elbTagList(tags),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	m.tg = aws.ToString(tg.TargetGroups[0].TargetGroupArn)
	if _, err := c.elb.RegisterTargets(ctx(e.t), &elbv2.RegisterTargetsInput{TargetGroupArn: aws.String(m.tg),
		Targets: []elbtypes.TargetDescription{{Id: aws.String(instance), Port: aws.Int32(30080)}}}); err != nil {
		e.t.Fatal(err)
	}
	lb, err := c.elb.CreateLoadBalancer(ctx(e.t), &elbv2.CreateLoadBalancerInput{
		Name: aws.String(nlbName), Type: elbtypes.LoadBalancerTypeEnumNetwork, SecurityGroups: []string{m.sg},
		Subnets: []string{e.public[zoneA].ID, e.public[zoneB].ID}, Tags: elbTagList(tags),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	m.lb = aws.ToString(lb.LoadBalancers[0].LoadBalancerArn)
	if _, err := c.elb.CreateListener(ctx(e.t), &elbv2.CreateListenerInput{LoadBalancerArn: aws.String(m.lb), Port: aws.Int32(80),
		Protocol: elbtypes.ProtocolEnumTcp, DefaultActions: []elbtypes.Action{{Type: elbtypes.ActionTypeEnumForward, TargetGroupArn: aws.String(m.tg)}}}); err != nil {
		e.t.Fatal(err)
	}
	e.fake.Faults().Reset()
	return m
}

func ec2TagList(m map[string]string) []ec2types.Tag {
	var out []ec2types.Tag
	for _, t := range elbTagList(m) {
		out = append(out, ec2types.Tag{Key: t.Key, Value: t.Value})
	}
	return out
}

// keeps checks that a sync used what was there and made nothing, then
// that deleting the Service deletes it all.
func (e *env) keeps(m madeElsewhere, svc *v1.Service) {
	e.t.Helper()
	nodes, _ := e.nodes(1)
	e.ensure(svc, nodes)
	lb := e.nlb()
	if lb.ARN != m.lb || len(lb.SecurityGroups) != 1 || lb.SecurityGroups[0] != m.sg {
		e.t.Errorf("NLB %s with security groups %v, want %s with %s", lb.ARN, lb.SecurityGroups, m.lb, m.sg)
	}
	if tg := e.targetGroup(e.listeners(lb.ARN)[80]); tg.ARN != m.tg {
		e.t.Errorf("port 80 forwards to %s, want %s", tg.Name, m.tg)
	}
	if st := e.fake.Stats(); st.SecurityGroups.Created != 1 || st.TargetGroups.Created != 1 || st.Listeners.Created != 1 {
		e.t.Errorf("resources made: %+v", st)
	}
	e.wantLive(map[string]int{"loadBalancers": 1, "targetGroups": 1, "listeners": 1, "securityGroups": 1})
	if err := e.lbs.EnsureLoadBalancerDeleted(ctx(e.t), cluster, svc); err != nil {
		e.t.Fatal(err)
	}
	e.wantLive(map[string]int{})
}

// An NLB the AWS CCM made, as it makes them, is taken over whole.
func TestTakesOverUpstreamNLB(t *testing.T) {
	e := newEnv(t)
	tags := map[string]string{clusterTag: "owned", awsccm.TagServiceName: "shop/web"}
	inst := e.instance(zoneA)
	e.keeps(e.makeNLB(upstreamSG, "[k8s] Managed SecurityGroup for LoadBalancer", map[string]string{clusterTag: "owned"}, upstreamTG80, "TCP", tags, inst.ID), service(nil))
}

// So is one tagged only with the legacy KubernetesCluster tag.
func TestTakesOverLegacyTaggedNLB(t *testing.T) {
	e := newEnv(t)
	legacy := map[string]string{awsccm.TagClusterLegacy: cluster}
	tags := map[string]string{awsccm.TagClusterLegacy: cluster, awsccm.TagServiceName: "shop/web"}
	inst := e.instance(zoneA)
	e.keeps(e.makeNLB(upstreamSG, "[k8s] Managed SecurityGroup for LoadBalancer", legacy, upstreamTG80, "TCP", tags, inst.ID), service(nil))
}

// An earlier polyccm's NLB keeps its groups with their old names.
func TestKeepsEarlierPolyccmGroups(t *testing.T) {
	e := newEnv(t)
	tags := map[string]string{clusterTag: "owned", awsccm.TagServiceName: "shop/web-shop"}
	inst := e.instance(zoneA)
	svc := service(nil)
	svc.Name = "web-shop"
	e.keeps(e.makeNLB(legacySG, "polyccm: NLB of Service shop/web-shop", tags, legacyTG80, "HTTP", tags, inst.ID), svc)
}

// A group with polyccm's earlier name that the NLB does not use (the AWS
// CCM names a Classic ELB's group so) is neither used nor deleted.
func TestClassicGroupNameIsNotTaken(t *testing.T) {
	e := newEnv(t)
	c := e.sdk()
	classic, err := c.ec2.CreateSecurityGroup(ctx(t), &ec2.CreateSecurityGroupInput{
		GroupName: aws.String(legacySG), Description: aws.String("Security group for Kubernetes ELB " + nlbName + " (shop/web)"), VpcId: aws.String(e.vpc.ID),
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeSecurityGroup, Tags: ec2TagList(map[string]string{clusterTag: "owned"})}},
	})
	if err != nil {
		t.Fatal(err)
	}
	nodes, _ := e.nodes(1)
	svc := service(nil)
	e.ensure(svc, nodes)
	sg := e.securityGroup(e.nlb())
	if sg.ID == aws.ToString(classic.GroupId) || sg.Name != upstreamSG {
		t.Errorf("NLB security group %s (%s), want a new %s", sg.Name, sg.ID, upstreamSG)
	}
	if tg := e.targetGroup(e.listeners(e.nlb().ARN)[80]); tg.Name != upstreamTG80 {
		t.Errorf("target group %s, want %s", tg.Name, upstreamTG80)
	}
	if err := e.lbs.EnsureLoadBalancerDeleted(ctx(t), cluster, svc); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.fake.SecurityGroup(aws.ToString(classic.GroupId)); !ok {
		t.Error("the Classic ELB's security group was deleted")
	}
	e.wantLive(map[string]int{"securityGroups": 1})
}
