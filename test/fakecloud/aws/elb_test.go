package aws

import (
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
)

type elbv2CreateLB = elbv2.CreateLoadBalancerOutput

func createNLB(c clients, name string, subs []Subnet, sgs ...string) (*elbv2.CreateLoadBalancerOutput, error) {
	var ids []string
	for _, s := range subs {
		ids = append(ids, s.ID)
	}
	return c.elb.CreateLoadBalancer(ctx, &elbv2.CreateLoadBalancerInput{
		Name: awssdk.String(name), Type: elbtypes.LoadBalancerTypeEnumNetwork, Scheme: elbtypes.LoadBalancerSchemeEnumInternetFacing,
		Subnets: ids, SecurityGroups: sgs,
		Tags: []elbtypes.Tag{{Key: awssdk.String("kubernetes.io/service-name"), Value: awssdk.String("default/" + name)}},
	})
}

func deleteLB(t *testing.T, c clients, arn string) {
	t.Helper()
	must[*elbv2.DeleteLoadBalancerOutput](t)(c.elb.DeleteLoadBalancer(ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: &arn}))
}

func createTG(t *testing.T, c clients, name, protocol string, port int32, vpc string) elbtypes.TargetGroup {
	t.Helper()
	out := must[*elbv2.CreateTargetGroupOutput](t)(c.elb.CreateTargetGroup(ctx, &elbv2.CreateTargetGroupInput{
		Name: &name, Protocol: elbtypes.ProtocolEnum(protocol), Port: &port, VpcId: &vpc, TargetType: elbtypes.TargetTypeEnumInstance,
	}))
	return out.TargetGroups[0]
}

func TestNLBLifecycle(t *testing.T) {
	s, c := start(t)
	s.SetLoadBalancerActivationDelay(time.Hour)
	clock := time.Now()
	s.SetClock(func() time.Time { return clock })
	vpc, subs := network(t, s, "c1")
	nodes := []Instance{s.AddInstance(Instance{SubnetID: subs[0].ID}), s.AddInstance(Instance{SubnetID: subs[1].ID})}

	// Load balancer.
	created := must[*elbv2.CreateLoadBalancerOutput](t)(createNLB(c, "a1b2c3", subs))
	lb := created.LoadBalancers[0]
	arnRE := regexp.MustCompile(`^arn:aws:elasticloadbalancing:eu-west-1:123456789012:loadbalancer/net/a1b2c3/[0-9a-f]{16}$`)
	if !arnRE.MatchString(*lb.LoadBalancerArn) {
		t.Errorf("ARN = %s", *lb.LoadBalancerArn)
	}
	if !regexp.MustCompile(`^a1b2c3-[0-9a-f]{16}\.elb\.eu-west-1\.amazonaws\.com$`).MatchString(*lb.DNSName) {
		t.Errorf("DNS name = %s", *lb.DNSName)
	}
	if lb.State.Code != elbtypes.LoadBalancerStateEnumProvisioning || *lb.VpcId != vpc.ID || *lb.CanonicalHostedZoneId != "Z2IFOLAFXWLO4F" ||
		lb.Type != elbtypes.LoadBalancerTypeEnumNetwork || lb.IpAddressType != elbtypes.IpAddressTypeIpv4 || len(lb.AvailabilityZones) != 2 ||
		*lb.AvailabilityZones[1].ZoneName != subs[1].AvailabilityZone || len(lb.SecurityGroups) != 0 || lb.CreatedTime == nil {
		t.Errorf("load balancer = %+v", lb)
	}
	lbARN := *lb.LoadBalancerArn
	// Creating it again with the same settings answers with the same one.
	again := must[*elbv2.CreateLoadBalancerOutput](t)(createNLB(c, "a1b2c3", subs))
	if *again.LoadBalancers[0].LoadBalancerArn != lbARN {
		t.Errorf("second create made %s", *again.LoadBalancers[0].LoadBalancerArn)
	}
	_, err := createNLB(c, "a1b2c3", subs[:1])
	apiErr(t, err, "DuplicateLoadBalancerName", http.StatusBadRequest)

	desc := must[*elbv2.DescribeLoadBalancersOutput](t)(c.elb.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{Names: []string{"a1b2c3"}}))
	if len(desc.LoadBalancers) != 1 || desc.LoadBalancers[0].State.Code != elbtypes.LoadBalancerStateEnumProvisioning {
		t.Errorf("described = %+v", desc.LoadBalancers)
	}
	clock = clock.Add(time.Hour)
	desc = must[*elbv2.DescribeLoadBalancersOutput](t)(c.elb.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{LoadBalancerArns: []string{lbARN}}))
	if desc.LoadBalancers[0].State.Code != elbtypes.LoadBalancerStateEnumActive {
		t.Errorf("state after the delay = %s", desc.LoadBalancers[0].State.Code)
	}

	// Target group and targets.
	tg := createTG(t, c, "k8s-default-a1b2c3-80", "TCP", 30080, vpc.ID)
	if *tg.HealthCheckPort != "traffic-port" || tg.HealthCheckProtocol != elbtypes.ProtocolEnumTcp || *tg.HealthCheckIntervalSeconds != 30 ||
		*tg.HealthyThresholdCount != 5 || *tg.UnhealthyThresholdCount != 2 || len(tg.LoadBalancerArns) != 0 || tg.TargetType != elbtypes.TargetTypeEnumInstance {
		t.Errorf("target group = %+v", tg)
	}
	if again := createTG(t, c, "k8s-default-a1b2c3-80", "TCP", 30080, vpc.ID); *again.TargetGroupArn != *tg.TargetGroupArn {
		t.Error("identical CreateTargetGroup made a new group")
	}
	_, err = c.elb.CreateTargetGroup(ctx, &elbv2.CreateTargetGroupInput{Name: awssdk.String("k8s-default-a1b2c3-80"), Protocol: elbtypes.ProtocolEnumTcp, Port: awssdk.Int32(30081), VpcId: &vpc.ID})
	apiErr(t, err, "DuplicateTargetGroupName", http.StatusBadRequest)
	_, err = c.elb.CreateTargetGroup(ctx, &elbv2.CreateTargetGroupInput{Name: awssdk.String(strings.Repeat("x", 33)), Protocol: elbtypes.ProtocolEnumTcp, Port: awssdk.Int32(1), VpcId: &vpc.ID})
	apiErr(t, err, "ValidationError", http.StatusBadRequest)

	tgARN := *tg.TargetGroupArn
	var targets []elbtypes.TargetDescription
	for _, n := range nodes {
		targets = append(targets, elbtypes.TargetDescription{Id: awssdk.String(n.ID), Port: awssdk.Int32(30080)})
	}
	must[*elbv2.RegisterTargetsOutput](t)(c.elb.RegisterTargets(ctx, &elbv2.RegisterTargetsInput{TargetGroupArn: &tgARN, Targets: targets}))
	stopped := s.AddInstance(Instance{SubnetID: subs[0].ID, State: InstanceStateStopped})
	_, err = c.elb.RegisterTargets(ctx, &elbv2.RegisterTargetsInput{TargetGroupArn: &tgARN, Targets: []elbtypes.TargetDescription{{Id: &stopped.ID}}})
	apiErr(t, err, "InvalidTarget", http.StatusBadRequest)
	_, err = c.elb.RegisterTargets(ctx, &elbv2.RegisterTargetsInput{TargetGroupArn: &tgARN, Targets: []elbtypes.TargetDescription{{Id: awssdk.String("i-0123456789abcdef0")}}})
	apiErr(t, err, "InvalidTarget", http.StatusBadRequest)

	health := must[*elbv2.DescribeTargetHealthOutput](t)(c.elb.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: &tgARN}))
	if len(health.TargetHealthDescriptions) != 2 || health.TargetHealthDescriptions[0].TargetHealth.State != elbtypes.TargetHealthStateEnumUnused ||
		health.TargetHealthDescriptions[0].TargetHealth.Reason != elbtypes.TargetHealthReasonEnumNotInUse {
		t.Errorf("health before a listener = %+v", health.TargetHealthDescriptions)
	}

	// TLS listener.
	cert := "arn:aws:acm:eu-west-1:123456789012:certificate/9c2b5d8e-1f3a-4b6c-8d7e-0a1b2c3d4e5f"
	ls := must[*elbv2.CreateListenerOutput](t)(c.elb.CreateListener(ctx, &elbv2.CreateListenerInput{
		LoadBalancerArn: &lbARN, Protocol: elbtypes.ProtocolEnumTls, Port: awssdk.Int32(443),
		Certificates:   []elbtypes.Certificate{{CertificateArn: &cert}},
		AlpnPolicy:     []string{"HTTP2Preferred"},
		DefaultActions: []elbtypes.Action{{Type: elbtypes.ActionTypeEnumForward, TargetGroupArn: &tgARN}},
	}))
	l := ls.Listeners[0]
	if !strings.HasPrefix(*l.ListenerArn, strings.Replace(lbARN, ":loadbalancer/", ":listener/", 1)+"/") || *l.SslPolicy != "ELBSecurityPolicy-2016-08" ||
		len(l.Certificates) != 1 || *l.Certificates[0].CertificateArn != cert || l.AlpnPolicy[0] != "HTTP2Preferred" ||
		*l.DefaultActions[0].TargetGroupArn != tgARN || *l.DefaultActions[0].ForwardConfig.TargetGroups[0].Weight != 1 {
		t.Errorf("listener = %+v", l)
	}
	_, err = c.elb.CreateListener(ctx, &elbv2.CreateListenerInput{
		LoadBalancerArn: &lbARN, Protocol: elbtypes.ProtocolEnumTcp, Port: awssdk.Int32(443),
		DefaultActions: []elbtypes.Action{{Type: elbtypes.ActionTypeEnumForward, TargetGroupArn: &tgARN}},
	})
	apiErr(t, err, "DuplicateListener", http.StatusBadRequest)
	_, err = c.elb.CreateListener(ctx, &elbv2.CreateListenerInput{
		LoadBalancerArn: &lbARN, Protocol: elbtypes.ProtocolEnumTls, Port: awssdk.Int32(8443),
		DefaultActions: []elbtypes.Action{{Type: elbtypes.ActionTypeEnumForward, TargetGroupArn: &tgARN}},
	})
	apiErr(t, err, "ValidationError", http.StatusBadRequest)
	udp := createTG(t, c, "k8s-udp", "UDP", 30053, vpc.ID)
	_, err = c.elb.CreateListener(ctx, &elbv2.CreateListenerInput{
		LoadBalancerArn: &lbARN, Protocol: elbtypes.ProtocolEnumTcp, Port: awssdk.Int32(53),
		DefaultActions: []elbtypes.Action{{Type: elbtypes.ActionTypeEnumForward, TargetGroupArn: udp.TargetGroupArn}},
	})
	apiErr(t, err, "IncompatibleProtocols", http.StatusBadRequest)

	tgDesc := must[*elbv2.DescribeTargetGroupsOutput](t)(c.elb.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{LoadBalancerArn: &lbARN}))
	if len(tgDesc.TargetGroups) != 1 || !slices.Equal(tgDesc.TargetGroups[0].LoadBalancerArns, []string{lbARN}) {
		t.Errorf("groups of the load balancer = %+v", tgDesc.TargetGroups)
	}
	health = must[*elbv2.DescribeTargetHealthOutput](t)(c.elb.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: &tgARN}))
	for _, h := range health.TargetHealthDescriptions {
		if h.TargetHealth.State != elbtypes.TargetHealthStateEnumHealthy || *h.HealthCheckPort != "30080" {
			t.Errorf("health = %+v", h)
		}
	}
	if err := s.SetTargetHealth(tgARN, nodes[0].ID, TargetHealthUnhealthy); err != nil {
		t.Fatal(err)
	}
	health = must[*elbv2.DescribeTargetHealthOutput](t)(c.elb.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{
		TargetGroupArn: &tgARN, Targets: []elbtypes.TargetDescription{{Id: &nodes[0].ID, Port: awssdk.Int32(30080)}},
	}))
	if len(health.TargetHealthDescriptions) != 1 || health.TargetHealthDescriptions[0].TargetHealth.State != elbtypes.TargetHealthStateEnumUnhealthy {
		t.Errorf("forced health = %+v", health.TargetHealthDescriptions)
	}

	// Delete order: the group is in use until its listener goes.
	_, err = c.elb.DeleteTargetGroup(ctx, &elbv2.DeleteTargetGroupInput{TargetGroupArn: &tgARN})
	apiErr(t, err, "ResourceInUse", http.StatusBadRequest)
	deleteLB(t, c, lbARN)
	if len(s.Listeners()) != 0 {
		t.Errorf("listeners survive their load balancer: %+v", s.Listeners())
	}
	deleteLB(t, c, lbARN) // deleting a deleted load balancer succeeds
	_, err = c.elb.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{LoadBalancerArns: []string{lbARN}})
	apiErr(t, err, "LoadBalancerNotFound", http.StatusBadRequest)
	must[*elbv2.DeleteTargetGroupOutput](t)(c.elb.DeleteTargetGroup(ctx, &elbv2.DeleteTargetGroupInput{TargetGroupArn: &tgARN}))
	must[*elbv2.DeleteTargetGroupOutput](t)(c.elb.DeleteTargetGroup(ctx, &elbv2.DeleteTargetGroupInput{TargetGroupArn: udp.TargetGroupArn}))
	_, err = c.elb.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{TargetGroupArns: []string{tgARN}})
	apiErr(t, err, "TargetGroupNotFound", http.StatusBadRequest)

	want := Stats{
		LoadBalancers: ResourceStats{Created: 1, Deleted: 1, Live: 0, Peak: 1},
		TargetGroups:  ResourceStats{Created: 2, Deleted: 2, Live: 0, Peak: 2},
		Listeners:     ResourceStats{Created: 1, Deleted: 1, Live: 0, Peak: 1},
	}
	if got := s.Stats(); got != want {
		t.Errorf("stats = %+v, want %+v", got, want)
	}
}

func TestDescribeWithMarkers(t *testing.T) {
	s, c := start(t)
	vpc, subs := network(t, s, "c1")
	var want []string
	for k := range 7 {
		out := must[*elbv2.CreateLoadBalancerOutput](t)(createNLB(c, "lb-"+strconv.Itoa(k), subs))
		want = append(want, *out.LoadBalancers[0].LoadBalancerArn)
	}
	p := elbv2.NewDescribeLoadBalancersPaginator(c.elb, &elbv2.DescribeLoadBalancersInput{PageSize: awssdk.Int32(3)})
	var got []string
	pages := 0
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, lb := range out.LoadBalancers {
			got = append(got, *lb.LoadBalancerArn)
		}
	}
	if pages != 3 || !slices.Equal(got, want) {
		t.Errorf("pages = %d, got %v", pages, got)
	}
	_, err := c.elb.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{PageSize: awssdk.Int32(401)})
	apiErr(t, err, "ValidationError", http.StatusBadRequest)
	_, err = c.elb.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{Names: []string{"lb-0", "nope"}})
	ae := apiErr(t, err, "LoadBalancerNotFound", http.StatusBadRequest)
	if ae.ErrorMessage() != "Load balancers '[nope]' not found" {
		t.Errorf("message = %q", ae.ErrorMessage())
	}
	_, err = c.elb.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{LoadBalancerArns: []string{"arn:bogus"}})
	apiErr(t, err, "ValidationError", http.StatusBadRequest)

	// Listeners page the same way.
	tg := createTG(t, c, "tg", "TCP", 30000, vpc.ID)
	for k := range 5 {
		must[*elbv2.CreateListenerOutput](t)(c.elb.CreateListener(ctx, &elbv2.CreateListenerInput{
			LoadBalancerArn: &want[0], Protocol: elbtypes.ProtocolEnumTcp, Port: awssdk.Int32(int32(8000 + k)),
			DefaultActions: []elbtypes.Action{{Type: elbtypes.ActionTypeEnumForward, TargetGroupArn: tg.TargetGroupArn}},
		}))
	}
	lp := elbv2.NewDescribeListenersPaginator(c.elb, &elbv2.DescribeListenersInput{LoadBalancerArn: &want[0], PageSize: awssdk.Int32(2)})
	var ports []int32
	for lp.HasMorePages() {
		out, err := lp.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range out.Listeners {
			ports = append(ports, *l.Port)
		}
	}
	if !slices.Equal(ports, []int32{8000, 8001, 8002, 8003, 8004}) {
		t.Errorf("listener ports = %v", ports)
	}
	// A target group serves one load balancer only.
	_, err = c.elb.CreateListener(ctx, &elbv2.CreateListenerInput{
		LoadBalancerArn: &want[1], Protocol: elbtypes.ProtocolEnumTcp, Port: awssdk.Int32(80),
		DefaultActions: []elbtypes.Action{{Type: elbtypes.ActionTypeEnumForward, TargetGroupArn: tg.TargetGroupArn}},
	})
	apiErr(t, err, "TargetGroupAssociationLimit", http.StatusBadRequest)
}

func TestAttributesAndSecurityGroups(t *testing.T) {
	s, c := start(t)
	vpc, subs := network(t, s, "c1")
	lb := must[*elbv2.CreateLoadBalancerOutput](t)(createNLB(c, "attrs", subs)).LoadBalancers[0]
	attrs := must[*elbv2.DescribeLoadBalancerAttributesOutput](t)(c.elb.DescribeLoadBalancerAttributes(ctx, &elbv2.DescribeLoadBalancerAttributesInput{LoadBalancerArn: lb.LoadBalancerArn}))
	get := func(kvs []elbtypes.LoadBalancerAttribute, k string) string {
		for _, a := range kvs {
			if *a.Key == k {
				return *a.Value
			}
		}
		return "<missing>"
	}
	if get(attrs.Attributes, "load_balancing.cross_zone.enabled") != "false" || get(attrs.Attributes, "deletion_protection.enabled") != "false" {
		t.Errorf("attributes = %+v", attrs.Attributes)
	}
	mod := must[*elbv2.ModifyLoadBalancerAttributesOutput](t)(c.elb.ModifyLoadBalancerAttributes(ctx, &elbv2.ModifyLoadBalancerAttributesInput{
		LoadBalancerArn: lb.LoadBalancerArn,
		Attributes:      []elbtypes.LoadBalancerAttribute{{Key: awssdk.String("load_balancing.cross_zone.enabled"), Value: awssdk.String("true")}},
	}))
	if get(mod.Attributes, "load_balancing.cross_zone.enabled") != "true" {
		t.Errorf("modified = %+v", mod.Attributes)
	}
	_, err := c.elb.ModifyLoadBalancerAttributes(ctx, &elbv2.ModifyLoadBalancerAttributesInput{
		LoadBalancerArn: lb.LoadBalancerArn,
		Attributes:      []elbtypes.LoadBalancerAttribute{{Key: awssdk.String("no.such.key"), Value: awssdk.String("true")}},
	})
	apiErr(t, err, "ValidationError", http.StatusBadRequest)

	// Deletion protection blocks DeleteLoadBalancer.
	must[*elbv2.ModifyLoadBalancerAttributesOutput](t)(c.elb.ModifyLoadBalancerAttributes(ctx, &elbv2.ModifyLoadBalancerAttributesInput{
		LoadBalancerArn: lb.LoadBalancerArn,
		Attributes:      []elbtypes.LoadBalancerAttribute{{Key: awssdk.String("deletion_protection.enabled"), Value: awssdk.String("true")}},
	}))
	_, err = c.elb.DeleteLoadBalancer(ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: lb.LoadBalancerArn})
	apiErr(t, err, "OperationNotPermitted", http.StatusBadRequest)

	tg := createTG(t, c, "tg-attrs", "TCP", 30000, vpc.ID)
	tgMod := must[*elbv2.ModifyTargetGroupAttributesOutput](t)(c.elb.ModifyTargetGroupAttributes(ctx, &elbv2.ModifyTargetGroupAttributesInput{
		TargetGroupArn: tg.TargetGroupArn,
		Attributes: []elbtypes.TargetGroupAttribute{
			{Key: awssdk.String("proxy_protocol_v2.enabled"), Value: awssdk.String("true")},
			{Key: awssdk.String("deregistration_delay.timeout_seconds"), Value: awssdk.String("0")},
		},
	}))
	tgAttrs := map[string]string{}
	for _, a := range tgMod.Attributes {
		tgAttrs[*a.Key] = *a.Value
	}
	if tgAttrs["proxy_protocol_v2.enabled"] != "true" || tgAttrs["deregistration_delay.timeout_seconds"] != "0" || tgAttrs["preserve_client_ip.enabled"] != "true" {
		t.Errorf("target group attributes = %v", tgAttrs)
	}
	_, err = c.elb.ModifyTargetGroupAttributes(ctx, &elbv2.ModifyTargetGroupAttributesInput{
		TargetGroupArn: tg.TargetGroupArn,
		Attributes:     []elbtypes.TargetGroupAttribute{{Key: awssdk.String("proxy_protocol_v2.enabled"), Value: awssdk.String("yes")}},
	})
	apiErr(t, err, "ValidationError", http.StatusBadRequest)
	mt := must[*elbv2.ModifyTargetGroupOutput](t)(c.elb.ModifyTargetGroup(ctx, &elbv2.ModifyTargetGroupInput{
		TargetGroupArn: tg.TargetGroupArn, HealthCheckProtocol: elbtypes.ProtocolEnumHttp, HealthCheckPath: awssdk.String("/healthz"), HealthCheckPort: awssdk.String("10256"),
	}))
	if h := mt.TargetGroups[0]; *h.HealthCheckPath != "/healthz" || *h.HealthCheckPort != "10256" || h.HealthCheckProtocol != elbtypes.ProtocolEnumHttp {
		t.Errorf("modified health check = %+v", h)
	}

	// An NLB made without security groups cannot get any; one made with
	// them can change them.
	sg := s.AddSecurityGroup(SecurityGroup{Name: "lb", Description: "lb", VPCID: vpc.ID})
	_, err = c.elb.SetSecurityGroups(ctx, &elbv2.SetSecurityGroupsInput{LoadBalancerArn: lb.LoadBalancerArn, SecurityGroups: []string{sg.ID}})
	apiErr(t, err, "InvalidConfigurationRequest", http.StatusBadRequest)
	withSG := must[*elbv2.CreateLoadBalancerOutput](t)(createNLB(c, "with-sg", subs, sg.ID)).LoadBalancers[0]
	sg2 := s.AddSecurityGroup(SecurityGroup{Name: "lb2", Description: "lb2", VPCID: vpc.ID})
	set := must[*elbv2.SetSecurityGroupsOutput](t)(c.elb.SetSecurityGroups(ctx, &elbv2.SetSecurityGroupsInput{LoadBalancerArn: withSG.LoadBalancerArn, SecurityGroups: []string{sg2.ID}}))
	if !slices.Equal(set.SecurityGroupIds, []string{sg2.ID}) {
		t.Errorf("set groups = %v", set.SecurityGroupIds)
	}
	_, err = c.elb.SetSecurityGroups(ctx, &elbv2.SetSecurityGroupsInput{LoadBalancerArn: withSG.LoadBalancerArn, SecurityGroups: []string{"sg-0123456789abcdef0"}})
	apiErr(t, err, "InvalidSecurityGroup", http.StatusBadRequest)
	// An empty list goes on the wire as "SecurityGroups=": nor can an NLB
	// made with groups lose them all.
	_, err = c.elb.SetSecurityGroups(ctx, &elbv2.SetSecurityGroupsInput{LoadBalancerArn: withSG.LoadBalancerArn, SecurityGroups: []string{}})
	if ae := apiErr(t, err, "ValidationError", http.StatusBadRequest); !strings.Contains(ae.ErrorMessage(), "remove all") {
		t.Errorf("message = %q", ae.ErrorMessage())
	}
	if lb, _ := s.LoadBalancer(*withSG.LoadBalancerArn); !slices.Equal(lb.SecurityGroups, []string{sg2.ID}) {
		t.Errorf("groups = %v", lb.SecurityGroups)
	}
}

func TestDeregistrationDrains(t *testing.T) {
	s, c := start(t)
	clock := time.Now()
	s.SetClock(func() time.Time { return clock })
	vpc, subs := network(t, s, "c1")
	node := s.AddInstance(Instance{SubnetID: subs[0].ID})
	lb := must[*elbv2.CreateLoadBalancerOutput](t)(createNLB(c, "drain", subs)).LoadBalancers[0]
	tg := createTG(t, c, "drain", "TCP", 30000, vpc.ID)
	must[*elbv2.CreateListenerOutput](t)(c.elb.CreateListener(ctx, &elbv2.CreateListenerInput{
		LoadBalancerArn: lb.LoadBalancerArn, Protocol: elbtypes.ProtocolEnumTcp, Port: awssdk.Int32(80),
		DefaultActions: []elbtypes.Action{{Type: elbtypes.ActionTypeEnumForward, TargetGroupArn: tg.TargetGroupArn}},
	}))
	target := []elbtypes.TargetDescription{{Id: &node.ID, Port: awssdk.Int32(30000)}}
	must[*elbv2.RegisterTargetsOutput](t)(c.elb.RegisterTargets(ctx, &elbv2.RegisterTargetsInput{TargetGroupArn: tg.TargetGroupArn, Targets: target}))
	must[*elbv2.DeregisterTargetsOutput](t)(c.elb.DeregisterTargets(ctx, &elbv2.DeregisterTargetsInput{TargetGroupArn: tg.TargetGroupArn, Targets: target}))
	state := func() []elbtypes.TargetHealthStateEnum {
		out := must[*elbv2.DescribeTargetHealthOutput](t)(c.elb.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: tg.TargetGroupArn}))
		var st []elbtypes.TargetHealthStateEnum
		for _, h := range out.TargetHealthDescriptions {
			st = append(st, h.TargetHealth.State)
		}
		return st
	}
	if got := state(); !slices.Equal(got, []elbtypes.TargetHealthStateEnum{elbtypes.TargetHealthStateEnumDraining}) {
		t.Errorf("after deregistration = %v", got)
	}
	if g, _ := s.TargetGroup(*tg.TargetGroupArn); len(g.Targets) != 0 {
		t.Errorf("draining target still listed as registered: %+v", g.Targets)
	}
	clock = clock.Add(301 * time.Second)
	if got := state(); len(got) != 0 {
		t.Errorf("after the deregistration delay = %v", got)
	}
}

func TestELBTags(t *testing.T) {
	s, c := start(t)
	vpc, subs := network(t, s, "c1")
	lb := must[*elbv2.CreateLoadBalancerOutput](t)(createNLB(c, "tags", subs)).LoadBalancers[0]
	tg := createTG(t, c, "tags", "TCP", 30000, vpc.ID)
	arns := []string{*lb.LoadBalancerArn, *tg.TargetGroupArn}
	must[*elbv2.AddTagsOutput](t)(c.elb.AddTags(ctx, &elbv2.AddTagsInput{ResourceArns: arns, Tags: []elbtypes.Tag{{Key: awssdk.String("owner"), Value: awssdk.String("polyccm")}}}))
	must[*elbv2.RemoveTagsOutput](t)(c.elb.RemoveTags(ctx, &elbv2.RemoveTagsInput{ResourceArns: arns[:1], TagKeys: []string{"kubernetes.io/service-name"}}))
	out := must[*elbv2.DescribeTagsOutput](t)(c.elb.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: arns}))
	if len(out.TagDescriptions) != 2 || len(out.TagDescriptions[0].Tags) != 1 || *out.TagDescriptions[0].Tags[0].Key != "owner" ||
		*out.TagDescriptions[1].ResourceArn != *tg.TargetGroupArn || len(out.TagDescriptions[1].Tags) != 1 {
		t.Errorf("tags = %+v", out.TagDescriptions)
	}
	_, err := c.elb.AddTags(ctx, &elbv2.AddTagsInput{ResourceArns: arns, Tags: []elbtypes.Tag{{Key: awssdk.String("k"), Value: awssdk.String("1")}, {Key: awssdk.String("k"), Value: awssdk.String("2")}}})
	apiErr(t, err, "DuplicateTagKeys", http.StatusBadRequest)
	var many []elbtypes.Tag
	for k := range 50 {
		many = append(many, elbtypes.Tag{Key: awssdk.String("k" + strconv.Itoa(k)), Value: awssdk.String("v")})
	}
	_, err = c.elb.AddTags(ctx, &elbv2.AddTagsInput{ResourceArns: arns[:1], Tags: many})
	apiErr(t, err, "TooManyTags", http.StatusBadRequest)
	gone := strings.Replace(*tg.TargetGroupArn, (*tg.TargetGroupArn)[len(*tg.TargetGroupArn)-16:], "0123456789abcdef", 1)
	_, err = c.elb.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: []string{gone}})
	apiErr(t, err, "TargetGroupNotFound", http.StatusBadRequest)
	var tooMany []string
	for range 21 {
		tooMany = append(tooMany, arns[0])
	}
	_, err = c.elb.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: tooMany})
	apiErr(t, err, "ValidationError", http.StatusBadRequest)
}

// SetSubnets and SetIpAddressType change an existing load balancer, with
// CreateLoadBalancer's checks.
func TestSetSubnetsAndIPAddressType(t *testing.T) {
	s, c := start(t)
	vpc, subs := network(t, s, "c1")
	lb := must[*elbv2.CreateLoadBalancerOutput](t)(createNLB(c, "subnets", subs[:1])).LoadBalancers[0]

	set := must[*elbv2.SetSubnetsOutput](t)(c.elb.SetSubnets(ctx, &elbv2.SetSubnetsInput{LoadBalancerArn: lb.LoadBalancerArn, Subnets: []string{subs[0].ID, subs[1].ID}}))
	if len(set.AvailabilityZones) != 2 || set.IpAddressType != elbtypes.IpAddressTypeIpv4 {
		t.Errorf("SetSubnets = %+v", set)
	}
	got, _ := s.LoadBalancer(*lb.LoadBalancerArn)
	if len(got.Subnets) != 2 || got.Subnets[1].SubnetID != subs[1].ID || got.Subnets[1].ZoneName != subs[1].AvailabilityZone {
		t.Errorf("subnets = %+v", got.Subnets)
	}
	// Two subnets of one zone, unknown subnets and other VPCs' are refused.
	same := s.AddSubnet(Subnet{VPCID: vpc.ID, AvailabilityZone: subs[0].AvailabilityZone})
	_, err := c.elb.SetSubnets(ctx, &elbv2.SetSubnetsInput{LoadBalancerArn: lb.LoadBalancerArn, Subnets: []string{subs[0].ID, same.ID}})
	apiErr(t, err, "InvalidConfigurationRequest", http.StatusBadRequest)
	_, err = c.elb.SetSubnets(ctx, &elbv2.SetSubnetsInput{LoadBalancerArn: lb.LoadBalancerArn, Subnets: []string{"subnet-0123456789abcdef0"}})
	apiErr(t, err, "SubnetNotFound", http.StatusBadRequest)
	other := s.Subnets()[0] // the default VPC's
	_, err = c.elb.SetSubnets(ctx, &elbv2.SetSubnetsInput{LoadBalancerArn: lb.LoadBalancerArn, Subnets: []string{other.ID}})
	apiErr(t, err, "InvalidConfigurationRequest", http.StatusBadRequest)
	if got, _ := s.LoadBalancer(*lb.LoadBalancerArn); len(got.Subnets) != 2 {
		t.Errorf("a refused SetSubnets changed the subnets: %+v", got.Subnets)
	}

	// Dualstack needs IPv6 in every subnet.
	_, err = c.elb.SetIpAddressType(ctx, &elbv2.SetIpAddressTypeInput{LoadBalancerArn: lb.LoadBalancerArn, IpAddressType: elbtypes.IpAddressTypeDualstack})
	apiErr(t, err, "InvalidSubnet", http.StatusBadRequest)
	_, err = c.elb.SetIpAddressType(ctx, &elbv2.SetIpAddressTypeInput{LoadBalancerArn: lb.LoadBalancerArn, IpAddressType: elbtypes.IpAddressTypeDualstackWithoutPublicIpv4})
	apiErr(t, err, "InvalidConfigurationRequest", http.StatusBadRequest)
	v6 := s.AddVPC(VPC{CIDRBlock: "10.1.0.0/16", IPv6CIDRBlocks: []string{"2a05:d018:1::/56"}})
	v6sub := s.AddSubnet(Subnet{VPCID: v6.ID, IPv6CIDRBlocks: []string{"2a05:d018:1:1::/64"}})
	lb6 := must[*elbv2.CreateLoadBalancerOutput](t)(createNLB(c, "dual", []Subnet{v6sub})).LoadBalancers[0]
	ip := must[*elbv2.SetIpAddressTypeOutput](t)(c.elb.SetIpAddressType(ctx, &elbv2.SetIpAddressTypeInput{LoadBalancerArn: lb6.LoadBalancerArn, IpAddressType: elbtypes.IpAddressTypeDualstack}))
	if ip.IpAddressType != elbtypes.IpAddressTypeDualstack {
		t.Errorf("SetIpAddressType = %+v", ip)
	}
	if got, _ := s.LoadBalancer(*lb6.LoadBalancerArn); got.IPAddressType != "dualstack" {
		t.Errorf("IP address type = %s", got.IPAddressType)
	}
	_, err = c.elb.SetIpAddressType(ctx, &elbv2.SetIpAddressTypeInput{LoadBalancerArn: awssdk.String("arn:aws:elasticloadbalancing:eu-west-1:123456789012:loadbalancer/net/gone/0123456789abcdef"), IpAddressType: elbtypes.IpAddressTypeIpv4})
	apiErr(t, err, "LoadBalancerNotFound", http.StatusBadRequest)
}

// An Elastic IP is one load balancer's at a time (and so is a private
// address in its subnet): ELBv2 refuses a second with ResourceInUse.
func TestFixedAddressesAreOneLoadBalancers(t *testing.T) {
	s, c := start(t)
	_, subs := network(t, s, "c1")
	mapping := func(name string, m elbtypes.SubnetMapping, scheme elbtypes.LoadBalancerSchemeEnum) error {
		_, err := c.elb.CreateLoadBalancer(ctx, &elbv2.CreateLoadBalancerInput{
			Name: awssdk.String(name), Type: elbtypes.LoadBalancerTypeEnumNetwork, Scheme: scheme,
			SubnetMappings: []elbtypes.SubnetMapping{m},
		})
		return err
	}
	eip := elbtypes.SubnetMapping{SubnetId: &subs[0].ID, AllocationId: awssdk.String("eipalloc-0123456789abcdef0")}
	if err := mapping("first", eip, elbtypes.LoadBalancerSchemeEnumInternetFacing); err != nil {
		t.Fatal(err)
	}
	apiErr(t, mapping("second", eip, elbtypes.LoadBalancerSchemeEnumInternetFacing), "ResourceInUse", http.StatusBadRequest)

	ip := subs[1].CIDRBlock[:strings.LastIndexByte(subs[1].CIDRBlock, '.')] + ".20"
	private := elbtypes.SubnetMapping{SubnetId: &subs[1].ID, PrivateIPv4Address: &ip}
	if err := mapping("third", private, elbtypes.LoadBalancerSchemeEnumInternal); err != nil {
		t.Fatal(err)
	}
	apiErr(t, mapping("fourth", private, elbtypes.LoadBalancerSchemeEnumInternal), "ResourceInUse", http.StatusBadRequest)
}
