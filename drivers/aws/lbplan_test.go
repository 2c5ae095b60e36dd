package aws

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The plan alone, with no cloud: what AWS has is written out by hand.

const (
	planUID = "5e1b6a3c-7d2f-4c8e-9a0b-1c2d3e4f5a6b"
	planLB  = "a5e1b6a3c7d2f4c8e9a0b1c2d3e4f5a6"
)

// planService is shop/web with HTTP on 80 and HTTPS (plain TCP) on 443.
func planService() *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: types.UID(planUID)},
		Spec: v1.ServiceSpec{
			Type: v1.ServiceTypeLoadBalancer,
			Ports: []v1.ServicePort{
				{Name: "http", Protocol: v1.ProtocolTCP, Port: 80, NodePort: 30080},
				{Name: "https", Protocol: v1.ProtocolTCP, Port: 443, NodePort: 30443},
			},
			ExternalTrafficPolicy: v1.ServiceExternalTrafficPolicyCluster,
		},
	}
}

func planSpec(t *testing.T, svc *v1.Service) *nlbSpec {
	t.Helper()
	a := LBAnnotations.Parse(svc)
	spec := desiredNLB(svc, a, "unit", "unit")
	if err := a.Err(); err != nil {
		t.Fatal(err)
	}
	return spec
}

var planSubnets = []subnet{{id: "subnet-b", zone: "eu-west-1b"}, {id: "subnet-a", zone: "eu-west-1a"}}

// planHC is what of the default health check goes into target group
// names.
var planHC = healthCheckSpec{protocol: elbtypes.ProtocolEnumTcp, interval: 30}

// tgNames are the target group names of planService's ports.
var (
	tg80  = tgName("unit", planService(), 80, elbtypes.ProtocolEnumTcp, 30080, planHC)
	tg443 = tgName("unit", planService(), 443, elbtypes.ProtocolEnumTcp, 30443, planHC)
)

// convergedTG is a target group as polyccm makes it for planService,
// with instances i-1 and i-2 registered on the node port.
func convergedTG(name string, port int32, tags map[string]string) *observedTG {
	return &observedTG{
		tg: elbtypes.TargetGroup{
			TargetGroupArn: aws.String("arn:tg/" + name), TargetGroupName: aws.String(name),
			Protocol: elbtypes.ProtocolEnumTcp, Port: aws.Int32(port),
			HealthCheckProtocol: elbtypes.ProtocolEnumTcp, HealthCheckPort: aws.String("traffic-port"),
			HealthCheckIntervalSeconds: aws.Int32(30), HealthCheckTimeoutSeconds: aws.Int32(10),
			HealthyThresholdCount: aws.Int32(3), UnhealthyThresholdCount: aws.Int32(3),
		},
		tags:    tags,
		targets: map[target]bool{{"i-1", port}: true, {"i-2", port}: true},
	}
}

func forward(arn string) []elbtypes.Action {
	return []elbtypes.Action{{Type: elbtypes.ActionTypeEnumForward, TargetGroupArn: aws.String(arn)}}
}

// icmpFrom is the MTU-discovery rule (ICMP 3/4) from cidr.
func icmpFrom(cidr string) ec2types.IpPermission {
	return ec2types.IpPermission{IpProtocol: aws.String("icmp"), FromPort: aws.Int32(3), ToPort: aws.Int32(4),
		IpRanges: []ec2types.IpRange{{CidrIp: aws.String(cidr)}}}
}

func tcpFrom(port int32, cidr string) ec2types.IpPermission {
	return ec2types.IpPermission{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(port), ToPort: aws.Int32(port),
		IpRanges: []ec2types.IpRange{{CidrIp: aws.String(cidr)}}}
}

// converged is what AWS has once planService is synced with i-1 and i-2.
func converged() *observed {
	tags := map[string]string{TagClusterPrefix + "unit": TagOwned, TagServiceName: "shop/web"}
	return &observed{
		lb: &elbtypes.LoadBalancer{
			LoadBalancerArn: aws.String("arn:lb"), LoadBalancerName: aws.String(planLB),
			Scheme: elbtypes.LoadBalancerSchemeEnumInternetFacing, IpAddressType: elbtypes.IpAddressTypeIpv4,
			AvailabilityZones: []elbtypes.AvailabilityZone{{SubnetId: aws.String("subnet-a")}, {SubnetId: aws.String("subnet-b")}},
			SecurityGroups:    []string{"sg-1"},
		},
		lbTags:  tags,
		lbAttrs: map[string]string{crossZoneAttr: "false", accessLogsAttr: "false", "deletion_protection.enabled": "false"},
		sg: &ec2types.SecurityGroup{GroupId: aws.String("sg-1"), GroupName: aws.String(sgName("unit", planService())),
			IpPermissions: []ec2types.IpPermission{icmpFrom("0.0.0.0/0"), tcpFrom(80, "0.0.0.0/0"), tcpFrom(443, "0.0.0.0/0")}},
		listeners: map[int32]elbtypes.Listener{
			80:  {ListenerArn: aws.String("arn:listener/80"), Port: aws.Int32(80), Protocol: elbtypes.ProtocolEnumTcp, DefaultActions: forward("arn:tg/" + tg80)},
			443: {ListenerArn: aws.String("arn:listener/443"), Port: aws.Int32(443), Protocol: elbtypes.ProtocolEnumTcp, DefaultActions: forward("arn:tg/" + tg443)},
		},
		attached: []elbtypes.TargetGroup{convergedTG(tg80, 30080, tags).tg, convergedTG(tg443, 30443, tags).tg},
		tgs:      map[string]*observedTG{tg80: convergedTG(tg80, 30080, tags), tg443: convergedTG(tg443, 30443, tags)},
	}
}

func TestPlan(t *testing.T) {
	sg := sgName("unit", planService())
	tg8080 := tgName("unit", planService(), 8080, elbtypes.ProtocolEnumTcp, 30080, planHC)
	tg80new := tgName("unit", planService(), 80, elbtypes.ProtocolEnumTcp, 30081, planHC)
	hc10 := planHC
	hc10.interval = 10
	tg80hc10 := tgName("unit", planService(), 80, elbtypes.ProtocolEnumTcp, 30080, hc10)
	cases := []struct {
		name    string
		svc     func(*v1.Service) // what the Service changes
		obs     func(*observed)   // what AWS has otherwise
		targets []string          // default i-1, i-2
		want    []string
	}{
		{
			name: "nothing exists: made in order",
			obs: func(o *observed) {
				*o = observed{listeners: map[int32]elbtypes.Listener{}, tgs: map[string]*observedTG{}}
			},
			want: []string{
				"create security group " + sg + " (Ingress none -> icmp/3-4/0.0.0.0/0,tcp/80/0.0.0.0/0,tcp/443/0.0.0.0/0)",
				"create load balancer " + planLB + " (Scheme none -> internet-facing; Subnets none -> subnet-a,subnet-b)",
				"create target group " + tg80 + " (Protocol none -> TCP; Port none -> 30080; Targets none -> i-1,i-2)",
				"create target group " + tg443 + " (Protocol none -> TCP; Port none -> 30443; Targets none -> i-1,i-2)",
				"create listener " + planLB + ":80 (Protocol none -> TCP; TargetGroup none -> " + tg80 + ")",
				"create listener " + planLB + ":443 (Protocol none -> TCP; TargetGroup none -> " + tg443 + ")",
			},
		},
		{
			name: "converged: nothing to do",
		},
		{
			name: "a port changed: a new target group and listener, the old ones go",
			svc:  func(s *v1.Service) { s.Spec.Ports[0].Port = 8080 },
			want: []string{
				"update security group sg-1 (Ingress icmp/3-4/0.0.0.0/0,tcp/80/0.0.0.0/0,tcp/443/0.0.0.0/0 -> icmp/3-4/0.0.0.0/0,tcp/443/0.0.0.0/0,tcp/8080/0.0.0.0/0)",
				"create target group " + tg8080 + " (Protocol none -> TCP; Port none -> 30080; Targets none -> i-1,i-2)",
				"create listener " + planLB + ":8080 (Protocol none -> TCP; TargetGroup none -> " + tg8080 + ")",
				"delete listener " + planLB + ":80",
				"delete target group " + tg80,
			},
		},
		{
			name: "a node port changed: the listener moves to a new target group",
			svc:  func(s *v1.Service) { s.Spec.Ports[0].NodePort = 30081 },
			want: []string{
				"create target group " + tg80new + " (Protocol none -> TCP; Port none -> 30081; Targets none -> i-1,i-2)",
				"update listener " + planLB + ":80 (TargetGroup " + tg80 + " -> " + tg80new + ")",
				"delete target group " + tg80,
			},
		},
		{
			name:    "a node joined and one left: only the targets change",
			targets: []string{"i-1", "i-3"},
			want: []string{
				"update target group " + tg80 + " (Targets i-1,i-2 -> i-1,i-3)",
				"update target group " + tg443 + " (Targets i-1,i-2 -> i-1,i-3)",
			},
		},
		{
			name:    "a node left: only its target goes",
			targets: []string{"i-1"},
			want: []string{
				"update target group " + tg80 + " (Targets i-1,i-2 -> i-1)",
				"update target group " + tg443 + " (Targets i-1,i-2 -> i-1)",
			},
		},
		{
			name: "a rule added by hand is revoked",
			obs: func(o *observed) {
				o.sg.IpPermissions = append(o.sg.IpPermissions, tcpFrom(22, "10.0.0.0/8"))
			},
			want: []string{
				"update security group sg-1 (Ingress icmp/3-4/0.0.0.0/0,tcp/22/10.0.0.0/8,tcp/80/0.0.0.0/0,tcp/443/0.0.0.0/0 -> icmp/3-4/0.0.0.0/0,tcp/80/0.0.0.0/0,tcp/443/0.0.0.0/0)",
			},
		},
		{
			name: "source ranges changed: only the security group's ingress",
			svc:  func(s *v1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"203.0.113.0/24"} },
			want: []string{
				"update security group sg-1 (Ingress icmp/3-4/0.0.0.0/0,tcp/80/0.0.0.0/0,tcp/443/0.0.0.0/0 -> icmp/3-4/203.0.113.0/24,tcp/80/203.0.113.0/24,tcp/443/203.0.113.0/24)",
			},
		},
		{
			name: "an NLB without security groups gets none, whatever the source ranges",
			svc:  func(s *v1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"203.0.113.0/24"} },
			obs: func(o *observed) {
				o.lb.SecurityGroups, o.sg, o.noSG = nil, nil, true
			},
		},
		{
			name: "the security group is gone: made again and set on the NLB",
			obs:  func(o *observed) { o.sg = nil },
			want: []string{
				"create security group " + sg + " (Ingress none -> icmp/3-4/0.0.0.0/0,tcp/80/0.0.0.0/0,tcp/443/0.0.0.0/0)",
				"update load balancer " + planLB + " (SecurityGroups sg-1 -> " + sg + ")",
			},
		},
		{
			name: "health check, cross-zone, tags and subnets change in place",
			svc: func(s *v1.Service) {
				s.Annotations = map[string]string{AnnHealthyThreshold: "5", AnnCrossZone: "true", AnnAdditionalResourceTags: "team=shop", AnnSubnets: "subnet-a"}
			},
			obs: func(o *observed) {
				o.tgs[tg443].attrs = map[string]string{"deregistration_delay.timeout_seconds": "300"}
			},
			want: []string{
				"update load balancer " + planLB + " (Subnets subnet-a,subnet-b -> subnet-a; Tags none -> team=shop; " + crossZoneAttr + " false -> true)",
				"update target group " + tg80 + " (HealthyThresholdCount 3 -> 5)",
				"update target group " + tg443 + " (HealthyThresholdCount 3 -> 5)",
			},
		},
		{
			// The interval is in the AWS CCM's target group names: a new
			// one means new target groups, as the AWS CCM makes them.
			name: "the health check interval changed: new target groups",
			svc: func(s *v1.Service) {
				s.Annotations = map[string]string{AnnHealthCheckInterval: "10", AnnHealthCheckTimeout: "6"}
				s.Spec.Ports = s.Spec.Ports[:1]
			},
			want: []string{
				"update security group sg-1 (Ingress icmp/3-4/0.0.0.0/0,tcp/80/0.0.0.0/0,tcp/443/0.0.0.0/0 -> icmp/3-4/0.0.0.0/0,tcp/80/0.0.0.0/0)",
				"create target group " + tg80hc10 + " (Protocol none -> TCP; Port none -> 30080; Targets none -> i-1,i-2)",
				"update listener " + planLB + ":80 (TargetGroup " + tg80 + " -> " + tg80hc10 + ")",
				"delete listener " + planLB + ":443",
				"delete target group " + tg80,
				"delete target group " + tg443,
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			svc := planService()
			if c.svc != nil {
				c.svc(svc)
			}
			spec := planSpec(t, svc)
			subnets := planSubnets
			if len(spec.subnetsAnn) > 0 {
				subnets = []subnet{{id: spec.subnetsAnn[0]}}
			}
			obs := converged()
			if c.obs != nil {
				c.obs(obs)
			}
			targets := c.targets
			if targets == nil {
				targets = []string{"i-1", "i-2"}
			}
			p := planNLB(spec, subnets, targets, obs, nil)
			var got []string
			for _, ch := range p.Changes {
				got = append(got, ch.String())
				if ch.Apply != nil {
					t.Errorf("%s: a plan without an applier has an Apply", ch)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("plan\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(c.want, "\n     "))
			}
			if p.Empty() != (len(c.want) == 0) {
				t.Errorf("Empty() = %v with %d changes", p.Empty(), len(c.want))
			}
		})
	}
}

// Changes that need an ID made earlier in the same plan read it when
// they run: the plan's Apply closures see what the applier holds then.
func TestPlanResolvesIDsWhenApplied(t *testing.T) {
	spec := planSpec(t, planService())
	obs := &observed{listeners: map[int32]elbtypes.Listener{}, tgs: map[string]*observedTG{}}
	ap := &applier{spec: spec, tgARNs: map[string]string{}}
	p := planNLB(spec, planSubnets, []string{"i-1"}, obs, ap)
	if len(p.Changes) != 6 {
		t.Fatalf("plan %s", p.String())
	}
	for _, ch := range p.Changes {
		if ch.Apply == nil {
			t.Errorf("%s has no Apply", ch)
		}
	}
	// What the listener would be given once the target group is made.
	ap.tgARNs[tg80] = "arn:tg/made"
	action, _, _ := ap.listenerSettings(spec.listeners[0])
	if got := aws.ToString(action[0].TargetGroupArn); got != "arn:tg/made" {
		t.Errorf("listener forwards to %q, want the target group made by the plan", got)
	}
}
