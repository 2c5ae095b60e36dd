package aws

import (
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbctypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"

	"github.com/polyccm/polyccm/core/loadbalancers"
)

func testClassicSpec() *classicSpec {
	return &classicSpec{
		name: "lb1", service: "shop/web",
		listeners: []classicListener{{port: 80, nodePort: 30080, proto: "TCP", instance: "TCP"}},
		health:    classicHealth{Target: "TCP:30080", Interval: 10, Timeout: 5, HealthyThreshold: 2, UnhealthyThreshold: 6},
		attrs:     classicAttrs{IdleTimeout: 60},
		sources:   []string{"0.0.0.0/0"},
		tags:      map[string]string{"kubernetes.io/cluster/c": "owned", TagServiceName: "shop/web"},
	}
}

// convergedClassic is what AWS has once spec is made, with instances.
func convergedClassic(spec *classicSpec, instances ...string) *classicObserved {
	lb := &elbctypes.LoadBalancerDescription{Scheme: aws.String("internet-facing"), Subnets: []string{"subnet-a"}, SecurityGroups: []string{"sg-lb"},
		HealthCheck: &elbctypes.HealthCheck{Target: aws.String("TCP:30080"), Interval: aws.Int32(10), Timeout: aws.Int32(5), HealthyThreshold: aws.Int32(2), UnhealthyThreshold: aws.Int32(6)}}
	for _, l := range spec.listeners {
		lb.ListenerDescriptions = append(lb.ListenerDescriptions, elbctypes.ListenerDescription{Listener: awsListener(l)})
	}
	for _, id := range instances {
		lb.Instances = append(lb.Instances, elbctypes.Instance{InstanceId: aws.String(id)})
	}
	sg := &ec2types.SecurityGroup{GroupId: aws.String("sg-lb"), IpPermissions: permissions([]ingressRule{
		{proto: "tcp", from: 80, to: 80, cidr: "0.0.0.0/0"}, {proto: "icmp", from: 3, to: 4, cidr: "0.0.0.0/0"}})}
	return &classicObserved{lb: lb, tags: spec.tags, sg: sg, policies: map[string]bool{},
		attrs: &elbctypes.LoadBalancerAttributes{ConnectionSettings: &elbctypes.ConnectionSettings{IdleTimeout: aws.Int32(60)},
			ConnectionDraining: &elbctypes.ConnectionDraining{Timeout: aws.Int32(300)}},
		nodes: &classicNodeGroups{want: map[string]bool{"sg-nodes": true}, have: map[string]bool{"sg-nodes": true}, tagged: map[string]bool{"sg-nodes": true}}}
}

func planKinds(p loadbalancers.Plan) []string {
	var out []string
	for _, c := range p.Changes {
		out = append(out, string(c.Action)+" "+c.Kind+" "+c.Name)
	}
	return out
}

// The Classic plan alone: from nothing, converged, and each kind of
// change, in the order AWS accepts.
func TestPlanClassic(t *testing.T) {
	proxy := testClassicSpec()
	proxy.proxy = true
	ssl := testClassicSpec()
	ssl.sslPolicy = "P"
	ssl.listeners[0].proto, ssl.listeners[0].cert = "SSL", "arn:cert"
	ported := testClassicSpec()
	ported.listeners = []classicListener{{port: 80, nodePort: 30081, proto: "TCP", instance: "TCP"}, {port: 8080, nodePort: 30880, proto: "TCP", instance: "TCP"}}
	ported.health.Target = "TCP:30081"
	cases := []struct {
		name    string
		spec    *classicSpec
		obs     func(*classicSpec) *classicObserved
		targets []string
		want    []string
	}{
		{name: "nothing yet", spec: testClassicSpec(), targets: []string{"i-1"},
			obs: func(s *classicSpec) *classicObserved {
				return &classicObserved{policies: map[string]bool{}, nodes: &classicNodeGroups{want: map[string]bool{"sg-nodes": true}}}
			},
			want: []string{"create security group k8s-elb-lb1", "create load balancer lb1", "update health check lb1", "update attributes lb1",
				"update instances lb1", "update node security group sg-nodes"}},
		{name: "converged", spec: testClassicSpec(), targets: []string{"i-1"}, obs: func(s *classicSpec) *classicObserved { return convergedClassic(s, "i-1") }},
		{name: "nodes", spec: testClassicSpec(), targets: []string{"i-2", "i-3"}, obs: func(s *classicSpec) *classicObserved { return convergedClassic(s, "i-1", "i-2") },
			want: []string{"update instances lb1"}},
		{name: "ports", spec: ported, targets: []string{"i-1"}, obs: func(*classicSpec) *classicObserved { return convergedClassic(testClassicSpec(), "i-1") },
			want: []string{"update security group sg-lb", "update listener lb1:80", "create listener lb1:8080", "update health check lb1"}},
		{name: "proxy protocol", spec: proxy, targets: []string{"i-1"}, obs: func(s *classicSpec) *classicObserved { return convergedClassic(testClassicSpec(), "i-1") },
			want: []string{"create policy k8s-proxyprotocol-enabled", "update backend policies lb1:30080"}},
		{name: "ssl policy", spec: ssl, targets: []string{"i-1"}, obs: func(s *classicSpec) *classicObserved { return convergedClassic(testClassicSpec(), "i-1") },
			want: []string{"update listener lb1:80", "create policy k8s-SSLNegotiationPolicy-P", "update listener policies lb1:80"}},
		{name: "node group left", spec: testClassicSpec(), targets: []string{"i-1"},
			obs: func(s *classicSpec) *classicObserved {
				o := convergedClassic(s, "i-1")
				o.nodes.have["sg-old"], o.nodes.tagged["sg-old"] = true, true
				o.nodes.have["sg-theirs"] = true // untagged: upstream leaves it
				return o
			},
			want: []string{"update node security group sg-old"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := planClassic(tc.spec, []string{"subnet-a"}, tc.targets, tc.obs(tc.spec), nil)
			if got := planKinds(p); !slices.Equal(got, tc.want) {
				t.Errorf("plan\n got %q\nwant %q\n%s", got, tc.want, p.String())
			}
		})
	}
}
