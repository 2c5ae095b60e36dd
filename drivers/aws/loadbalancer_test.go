package aws_test

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cloud-provider/api"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
	awsccm "github.com/polyccm/polyccm/drivers/aws"
	fakeaws "github.com/polyccm/polyccm/test/fakecloud/aws"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

// sdk are plain SDK clients on the test's key, for arranging what another
// tool (or another cluster) made.
type sdk struct {
	ec2 *ec2.Client
	elb *elbv2.Client
}

func (w *world) sdk() sdk {
	cfg := aws.Config{
		Region:      fakeaws.DefaultRegion,
		Credentials: credentials.NewStaticCredentialsProvider(testKeyID, testSecret, ""),
		Retryer:     func() aws.Retryer { return aws.NopRetryer{} },
	}
	return sdk{
		ec2: ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(w.fake.EC2URL()) }),
		elb: elbv2.NewFromConfig(cfg, func(o *elbv2.Options) { o.BaseEndpoint = aws.String(w.fake.ELBv2URL()) }),
	}
}

func elbTagList(m map[string]string) []elbtypes.Tag {
	var out []elbtypes.Tag
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, elbtypes.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}

// Listeners follow the TLS settings of an existing NLB: TLS on, a new
// certificate, TLS to the backends (a new target group), and back.
func TestTLSListenerChanges(t *testing.T) {
	e := newEnv(t)
	nodes, _ := e.nodes(2)
	ports := []v1.ServicePort{tcp("http", 80, 30080), tcp("https", 443, 30443)}
	e.ensure(service(nil, ports...), nodes)
	lb := e.nlb()
	tcp443 := e.listeners(lb.ARN)[443]
	tg443 := e.targetGroup(tcp443)

	step := func(name string, ann map[string]string, want map[int32]string) {
		t.Helper()
		e.ensure(service(ann, ports...), nodes)
		if got := listenerSummary(e, lb); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: listeners\n got %v\nwant %v", name, got, want)
		}
		if st := e.fake.Stats(); st.TargetGroups.Live != 2 || st.Listeners.Live != 2 || st.LoadBalancers.Live != 1 {
			t.Errorf("%s: stats %+v", name, st)
		}
	}
	// No policy annotation: none is sent, as the AWS CCM sends none, and
	// the listener gets the API's default.
	step("TLS on 443", map[string]string{awsccm.AnnSSLCert: certARN, awsccm.AnnSSLPorts: "https"}, map[int32]string{
		80: "TCP->TCP:30080", 443: "TLS->TCP:30443 cert=" + certARN + " policy=ELBSecurityPolicy-2016-08",
	})
	if l := e.listeners(lb.ARN)[443]; l.ARN != tcp443.ARN || e.targetGroup(l).ARN != tg443.ARN {
		t.Error("turning TLS on replaced the listener or its target group; it is changed in place")
	}
	step("another certificate and policy", map[string]string{awsccm.AnnSSLCert: cert2ARN, awsccm.AnnSSLPorts: "443", awsccm.AnnSSLNegotiationPolicy: "ELBSecurityPolicy-FS-1-2-Res-2020-10"}, map[int32]string{
		80: "TCP->TCP:30080", 443: "TLS->TCP:30443 cert=" + cert2ARN + " policy=ELBSecurityPolicy-FS-1-2-Res-2020-10",
	})
	// The annotation taken away: the listener keeps the policy it has
	// (the AWS CCM sends none), so TLS clients it serves are not cut off.
	step("TLS to the backends", map[string]string{awsccm.AnnSSLCert: cert2ARN, awsccm.AnnSSLPorts: "443", awsccm.AnnBackendProtocol: "tls"}, map[int32]string{
		80: "TCP->TCP:30080", 443: "TLS->TLS:30443 cert=" + cert2ARN + " policy=ELBSecurityPolicy-FS-1-2-Res-2020-10",
	})
	before := e.calls("ModifyListener")
	e.ensure(service(map[string]string{awsccm.AnnSSLCert: cert2ARN, awsccm.AnnSSLPorts: "443", awsccm.AnnBackendProtocol: "tls"}, ports...), nodes)
	if n := e.calls("ModifyListener") - before; n != 0 {
		t.Errorf("a steady sync without a policy annotation sent %d ModifyListener calls; want none", n)
	}
	if _, ok := e.fake.TargetGroup(tg443.ARN); ok {
		t.Error("the TCP target group of 443 is left behind after the switch to TLS")
	}
	step("TLS off", nil, map[int32]string{80: "TCP->TCP:30080", 443: "TCP->TCP:30443"})
	if l := e.listeners(lb.ARN)[443]; len(l.Certificates) != 0 || l.SSLPolicy != "" {
		t.Errorf("listener 443 keeps TLS settings: %+v", l)
	}
}

// An internal NLB lives in the internal-elb subnets and cannot turn
// internet-facing in place: an error says so and nothing changes.
func TestSchemeCannotChange(t *testing.T) {
	e := newEnv(t)
	nodes, _ := e.nodes(1)
	e.ensure(service(map[string]string{awsccm.AnnInternal: "true"}), nodes)
	lb := e.nlb()
	if lb.Scheme != "internal" {
		t.Fatalf("scheme %s", lb.Scheme)
	}
	before := e.mutating()
	_, err := e.lbs.EnsureLoadBalancer(ctx(t), cluster, service(nil), nodes)
	if err == nil || !strings.Contains(err.Error(), "cannot become internet-facing") {
		t.Fatalf("err = %v, want one saying the scheme cannot change", err)
	}
	if n := e.mutating() - before; n != 0 {
		t.Errorf("%d changing calls: %v", n, e.fake.Faults().Calls())
	}
	if got := e.nlb(); got.Scheme != "internal" || !slices.Equal(sortedSubnets(got), sortedSubnets(lb)) {
		t.Errorf("NLB changed: %+v", got)
	}
}

// Subnets named by ID or Name tag, whatever their tags, and changes to
// them on an existing NLB.
func TestSubnetsByAnnotation(t *testing.T) {
	e := newEnv(t)
	nodes, _ := e.nodes(1)
	e.ensure(service(map[string]string{awsccm.AnnSubnets: e.spare.ID + ", public-b"}), nodes)
	lb := e.nlb()
	if got, want := sortedSubnets(lb), sorted(e.spare.ID, e.public[zoneB].ID); !slices.Equal(got, want) {
		t.Errorf("subnets %v, want %v", got, want)
	}
	arn := lb.ARN
	e.ensure(service(map[string]string{awsccm.AnnSubnets: "spare-c,private-a"}), nodes)
	if got, want := sortedSubnets(e.nlb()), sorted(e.spare.ID, e.private[zoneA].ID); !slices.Equal(got, want) {
		t.Errorf("after the change: subnets %v, want %v", got, want)
	}
	// Without the annotation: the tagged subnets again.
	e.ensure(service(nil), nodes)
	lb = e.nlb()
	if got, want := sortedSubnets(lb), sorted(e.public[zoneA].ID, e.public[zoneB].ID); !slices.Equal(got, want) {
		t.Errorf("without the annotation: subnets %v, want %v", got, want)
	}
	if lb.ARN != arn {
		t.Error("the NLB was replaced")
	}
	if n := e.fake.Faults().CallCount("elbv2 SetSubnets"); n != 2 {
		t.Errorf("SetSubnets called %d times, want 2", n)
	}
}

// Subnet discovery takes one subnet per zone, the lowest ID, among those
// with the role tag and this cluster's tag.
func TestSubnetDiscovery(t *testing.T) {
	w := newWorld(t)
	extra := w.fake.AddSubnet(fakeaws.Subnet{VPCID: w.vpc.ID, AvailabilityZone: zoneA, CIDRBlock: "10.0.5.0/24",
		IPv6CIDRBlocks: []string{"2a05:d018:ab:cd05::/64"},
		Tags:           map[string]string{clusterTag: awsccm.TagOwned, awsccm.TagRoleELB: ""}})
	w.fake.AddSubnet(fakeaws.Subnet{VPCID: w.vpc.ID, AvailabilityZone: zoneC, CIDRBlock: "10.0.6.0/24",
		Tags: map[string]string{awsccm.TagClusterPrefix + "other": awsccm.TagOwned, awsccm.TagRoleELB: "1"}})
	w.fake.AddSubnet(fakeaws.Subnet{VPCID: w.vpc.ID, AvailabilityZone: zoneC, CIDRBlock: "10.0.7.0/24",
		Tags: map[string]string{awsccm.TagRoleELB: "1"}})
	e := w.env(w.config())
	nodes, _ := e.nodes(1)
	e.ensure(service(nil), nodes)
	wantA := min(extra.ID, e.public[zoneA].ID)
	if got, want := sortedSubnets(e.nlb()), sorted(wantA, e.public[zoneB].ID); !slices.Equal(got, want) {
		t.Errorf("subnets %v, want %v", got, want)
	}
}

// Dual-stack can be turned on and off on an existing NLB, with the
// security group following.
func TestDualstackChanges(t *testing.T) {
	e := newEnv(t)
	nodes, _ := e.nodes(1)
	e.ensure(service(nil), nodes)
	e.ensure(service(map[string]string{awsccm.AnnIPAddressType: "dualstack"}), nodes)
	lb := e.nlb()
	if lb.IPAddressType != "dualstack" {
		t.Errorf("IP address type %s, want dualstack", lb.IPAddressType)
	}
	if got, want := ingress(e.securityGroup(lb)), []string{"icmp/3-4/0.0.0.0/0", "tcp/80/0.0.0.0/0", "tcp/80/::/0"}; !slices.Equal(got, want) {
		t.Errorf("ingress %v, want %v", got, want)
	}
	e.ensure(service(nil), nodes)
	lb = e.nlb()
	if lb.IPAddressType != "ipv4" {
		t.Errorf("IP address type %s, want ipv4", lb.IPAddressType)
	}
	if got, want := ingress(e.securityGroup(lb)), []string{"icmp/3-4/0.0.0.0/0", "tcp/80/0.0.0.0/0"}; !slices.Equal(got, want) {
		t.Errorf("ingress %v, want %v", got, want)
	}
}

// The security group lets in exactly the source ranges on the listener
// ports: address rules added by hand (port ranges, IPv6, other ports) and
// ranges the Service no longer lists are revoked; rules naming other
// security groups stay.
func TestSecurityGroupConverges(t *testing.T) {
	e := newEnv(t)
	nodes, _ := e.nodes(1)
	svc := service(nil)
	svc.Spec.LoadBalancerSourceRanges = []string{"203.0.113.0/24"}
	e.ensure(svc, nodes)
	sg := e.securityGroup(e.nlb())
	perm := func(proto string, from, to int32) ec2types.IpPermission {
		return ec2types.IpPermission{IpProtocol: aws.String(proto), FromPort: aws.Int32(from), ToPort: aws.Int32(to)}
	}
	rng := perm("tcp", 1000, 2000)
	rng.IpRanges = []ec2types.IpRange{{CidrIp: aws.String("0.0.0.0/0")}}
	ssh := perm("tcp", 22, 22)
	ssh.IpRanges = []ec2types.IpRange{{CidrIp: aws.String("10.0.0.0/8")}}
	v6 := perm("udp", 8000, 8100)
	v6.Ipv6Ranges = []ec2types.Ipv6Range{{CidrIpv6: aws.String("::/0")}}
	all := perm("-1", -1, -1)
	all.IpRanges = []ec2types.IpRange{{CidrIp: aws.String("192.0.2.0/24")}}
	grp := perm("tcp", 9000, 9000)
	grp.UserIdGroupPairs = []ec2types.UserIdGroupPair{{GroupId: aws.String(e.vpc.DefaultSecurityGroupID)}}
	if _, err := e.sdk().ec2.AuthorizeSecurityGroupIngress(ctx(t), &ec2.AuthorizeSecurityGroupIngressInput{
		GroupId: aws.String(sg.ID), IpPermissions: []ec2types.IpPermission{rng, ssh, v6, all, grp},
	}); err != nil {
		t.Fatal(err)
	}
	svc.Spec.LoadBalancerSourceRanges = []string{"198.51.100.0/24"}
	e.ensure(svc, nodes)
	got := ingress(e.securityGroup(e.nlb()))
	want := []string{"icmp/3-4/198.51.100.0/24", "tcp/80/198.51.100.0/24", "tcp/9000/" + e.vpc.DefaultSecurityGroupID}
	if !slices.Equal(got, want) {
		t.Errorf("ingress\n got %v\nwant %v", got, want)
	}
	before := e.mutating()
	e.ensure(svc, nodes)
	if n := e.mutating() - before; n != 0 {
		t.Errorf("a converged security group got %d changing calls", n)
	}
}

// target-node-labels and the exclusion label pick the targets; Nodes
// without a provider ID wait; updates follow label changes.
func TestTargetNodes(t *testing.T) {
	e := newEnv(t)
	edge1, edge2, excluded, plain := e.instance(zoneA), e.instance(zoneB), e.instance(zoneA), e.instance(zoneB)
	nodes := []*v1.Node{
		node(edge1, map[string]string{"role": "edge", "tier": "1"}),
		node(edge2, map[string]string{"role": "edge", "tier": "1"}),
		node(excluded, map[string]string{"role": "edge", "tier": "1", v1.LabelNodeExcludeBalancers: ""}),
		node(plain, map[string]string{"role": "worker", "tier": "1"}),
		{ObjectMeta: metav1.ObjectMeta{Name: "new", Labels: map[string]string{"role": "edge", "tier": "1"}}},
	}
	ann := map[string]string{awsccm.AnnTargetNodeLabels: "role=edge, tier=1"}
	ports := []v1.ServicePort{tcp("http", 80, 30080), udp("dns", 53, 30053)}
	e.ensure(service(ann, ports...), nodes)
	lb := e.nlb()
	check := func(want ...string) {
		t.Helper()
		for port, l := range e.listeners(lb.ARN) {
			tg := e.targetGroup(l)
			if got := targetIDs(tg); !slices.Equal(got, sorted(want...)) {
				t.Errorf("listener %d targets %v, want %v", port, got, sorted(want...))
			}
			for _, tgt := range tg.Targets {
				if tgt.Port != tg.Port {
					t.Errorf("listener %d: target %s on port %d, want the node port %d", port, tgt.ID, tgt.Port, tg.Port)
				}
			}
		}
	}
	check(edge1.ID, edge2.ID)

	// edge2 stops being an edge node; plain becomes one; the exclusion
	// label set to false counts as absent.
	nodes[1] = node(edge2, map[string]string{"role": "worker", "tier": "1"})
	nodes[2] = node(excluded, map[string]string{"role": "edge", "tier": "1", v1.LabelNodeExcludeBalancers: "false"})
	nodes[3] = node(plain, map[string]string{"role": "edge", "tier": "1"})
	if err := e.lbs.UpdateLoadBalancer(ctx(t), cluster, service(ann, ports...), nodes); err != nil {
		t.Fatal(err)
	}
	check(edge1.ID, excluded.ID, plain.ID)

	// Without the annotation every Node is a target.
	e.ensure(service(nil, ports...), nodes)
	check(edge1.ID, edge2.ID, excluded.ID, plain.ID)
}

// additional-resource-tags go on the NLB, its target groups and its
// security group, next to the ownership tags; as the AWS CCM's, the
// security group's do not name the Service.
func TestAdditionalResourceTags(t *testing.T) {
	e := newEnv(t)
	nodes, _ := e.nodes(1)
	ann := map[string]string{awsccm.AnnAdditionalResourceTags: "team=shop, cost-center=42,env="}
	e.ensure(service(ann, tcp("http", 80, 30080), tcp("https", 443, 30443)), nodes)
	// From the AWS CCM's buildTags (see names_test.go).
	want := map[string]string{clusterTag: "owned", awsccm.TagServiceName: "shop/web", "team": "shop", "cost-center": "42", "env": ""}
	wantSG := map[string]string{clusterTag: "owned", "team": "shop", "cost-center": "42", "env": ""}
	lb := e.nlb()
	if !reflect.DeepEqual(lb.Tags, want) {
		t.Errorf("NLB tags %v, want %v", lb.Tags, want)
	}
	for port, l := range e.listeners(lb.ARN) {
		if tg := e.targetGroup(l); !reflect.DeepEqual(tg.Tags, want) {
			t.Errorf("listener %d target group tags %v, want %v", port, tg.Tags, want)
		}
	}
	if sg := e.securityGroup(lb); !reflect.DeepEqual(sg.Tags, wantSG) {
		t.Errorf("security group tags %v, want %v", sg.Tags, wantSG)
	}
	// A tag added later reaches the NLB.
	ann[awsccm.AnnAdditionalResourceTags] += ",owner=web-team"
	e.ensure(service(ann, tcp("http", 80, 30080), tcp("https", 443, 30443)), nodes)
	if got := e.nlb().Tags["owner"]; got != "web-team" {
		t.Errorf("NLB tag owner = %q after it was added", got)
	}
}

// Health check settings that are not in target group names change on
// the existing target groups; the protocol and interval, which are,
// make new ones, as the AWS CCM does.
func TestHealthCheckChangesInPlace(t *testing.T) {
	e := newEnv(t)
	nodes, _ := e.nodes(1)
	e.ensure(service(nil), nodes)
	lb := e.nlb()
	tg := e.targetGroup(e.listeners(lb.ARN)[80])
	svc := service(map[string]string{awsccm.AnnHealthCheckPort: "31999", awsccm.AnnHealthCheckTimeout: "7", awsccm.AnnUnhealthyThreshold: "5"})
	e.ensure(svc, nodes)
	got := e.targetGroup(e.listeners(lb.ARN)[80])
	if got.ARN != tg.ARN {
		t.Error("the target group was replaced for a health check change")
	}
	want := fakeaws.HealthCheck{Enabled: true, Protocol: "TCP", Port: "31999", IntervalSeconds: 30, TimeoutSeconds: 7, HealthyThreshold: 3, UnhealthyThreshold: 5}
	got.HealthCheck.Matcher = ""
	if got.HealthCheck != want {
		t.Errorf("health check\n got %+v\nwant %+v", got.HealthCheck, want)
	}

	svc.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
	svc.Spec.HealthCheckNodePort = 31999
	e.ensure(svc, nodes)
	if got := e.targetGroup(e.listeners(lb.ARN)[80]); got.ARN == tg.ARN || got.HealthCheck.Protocol != "HTTP" || got.HealthCheck.IntervalSeconds != 10 {
		t.Errorf("after externalTrafficPolicy Local: %s, health check %+v; want a new target group checking HTTP every 10s", got.Name, got.HealthCheck)
	}
	e.wantLive(map[string]int{"loadBalancers": 1, "targetGroups": 1, "listeners": 1, "securityGroups": 1})
}

// foreignNLB makes an NLB with the Service's name that this cluster did
// not make for the Service.
func (e *env) foreignNLB(tags map[string]string) fakeaws.LoadBalancer {
	e.t.Helper()
	_, err := e.sdk().elb.CreateLoadBalancer(ctx(e.t), &elbv2.CreateLoadBalancerInput{
		Name: aws.String(nlbName), Type: elbtypes.LoadBalancerTypeEnumNetwork,
		Subnets: []string{e.public[zoneA].ID}, Tags: elbTagList(tags),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	e.fake.Faults().Reset()
	return e.nlb()
}

// An NLB with the Service's name but not this cluster's and this
// Service's tags is never changed or deleted; the Service gets an error
// naming it.
func TestForeignLoadBalancerIsLeftAlone(t *testing.T) {
	for _, c := range []struct {
		name string
		tags map[string]string
	}{
		{"untagged", nil},
		{"another cluster's", map[string]string{awsccm.TagClusterPrefix + "other": "owned", awsccm.TagServiceName: "shop/web"}},
		{"shared, not owned", map[string]string{clusterTag: "shared", awsccm.TagServiceName: "shop/web"}},
		{"another Service's", map[string]string{clusterTag: "owned", awsccm.TagServiceName: "shop/other"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			nodes, _ := e.nodes(1)
			foreign := e.foreignNLB(c.tags)
			svc := service(map[string]string{awsccm.AnnAdditionalResourceTags: "team=shop"})
			_, err := e.lbs.EnsureLoadBalancer(ctx(t), cluster, svc, nodes)
			if err == nil || !strings.Contains(err.Error(), foreign.ARN) || !strings.Contains(err.Error(), "not tagged "+clusterTag+"=owned") {
				t.Fatalf("EnsureLoadBalancer err = %v, want one naming the NLB and the missing tags", err)
			}
			if err := e.lbs.UpdateLoadBalancer(ctx(t), cluster, svc, nodes); err == nil {
				t.Error("UpdateLoadBalancer accepted the foreign NLB")
			}
			if err := e.lbs.EnsureLoadBalancerDeleted(ctx(t), cluster, svc); err != nil {
				t.Errorf("EnsureLoadBalancerDeleted: %v", err)
			}
			if n := e.mutating(); n != 0 {
				t.Errorf("%d changing calls: %v", n, e.fake.Faults().Calls())
			}
			got, ok := e.nlbNamed(nlbName)
			if !ok {
				t.Fatal("the foreign NLB was deleted")
			}
			if !reflect.DeepEqual(got, foreign) {
				t.Errorf("the foreign NLB changed:\n was %+v\n now %+v", foreign, got)
			}
			if st := e.fake.Stats(); st.TargetGroups.Created != 0 || st.SecurityGroups.Created != 0 || st.Listeners.Created != 0 {
				t.Errorf("resources made next to the foreign NLB: %+v", st)
			}
		})
	}
}

// A target group or security group with the Service's names but without
// its tags is not used, changed or deleted either.
func TestForeignTargetGroupAndSecurityGroup(t *testing.T) {
	e := newEnv(t)
	nodes, _ := e.nodes(1)
	svc := service(nil)
	e.ensure(svc, nodes)
	lb := e.nlb()
	tg := e.targetGroup(e.listeners(lb.ARN)[80])
	sg := e.securityGroup(lb)
	if err := e.lbs.EnsureLoadBalancerDeleted(ctx(t), cluster, svc); err != nil {
		t.Fatal(err)
	}
	// Someone else makes a target group with the name polyccm would give
	// port 80, and a security group with its name.
	c := e.sdk()
	if _, err := c.elb.CreateTargetGroup(ctx(t), &elbv2.CreateTargetGroupInput{
		Name: aws.String(tg.Name), Protocol: elbtypes.ProtocolEnumTcp, Port: aws.Int32(30080), VpcId: aws.String(e.vpc.ID),
		Tags: elbTagList(map[string]string{"team": "other"}),
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ec2.CreateSecurityGroup(ctx(t), &ec2.CreateSecurityGroupInput{
		GroupName: aws.String(sg.Name), Description: aws.String("not polyccm's"), VpcId: aws.String(e.vpc.ID),
	}); err != nil {
		t.Fatal(err)
	}
	e.fake.Faults().Reset()
	_, err := e.lbs.EnsureLoadBalancer(ctx(t), cluster, svc, nodes)
	if err == nil || !strings.Contains(err.Error(), "not tagged") {
		t.Fatalf("EnsureLoadBalancer err = %v, want one about a resource that is not tagged", err)
	}
	if n := e.mutating(); n != 0 {
		t.Errorf("%d changing calls: %v", n, e.fake.Faults().Calls())
	}
	if err := e.lbs.EnsureLoadBalancerDeleted(ctx(t), cluster, svc); err != nil {
		t.Errorf("EnsureLoadBalancerDeleted: %v", err)
	}
	if n := e.mutating(); n != 0 {
		t.Errorf("%d changing calls: %v", n, e.fake.Faults().Calls())
	}
	if st := e.fake.Stats(); st.TargetGroups.Live != 1 || st.SecurityGroups.Live != 1 {
		t.Errorf("the foreign groups are gone: %+v", st)
	}
}

// Deletion removes everything and is idempotent; a Service that never had
// an NLB is deleted without changing anything.
func TestDeleteIsIdempotent(t *testing.T) {
	e := newEnv(t)
	nodes, _ := e.nodes(2)
	svc := service(nil, tcp("http", 80, 30080), udp("dns", 53, 30053))
	if err := e.lbs.EnsureLoadBalancerDeleted(ctx(t), cluster, svc); err != nil {
		t.Fatalf("deleting what never was: %v", err)
	}
	if n := e.mutating(); n != 0 {
		t.Errorf("deleting what never was made %d changing calls", n)
	}
	e.ensure(svc, nodes)
	e.wantLive(map[string]int{"loadBalancers": 1, "targetGroups": 2, "listeners": 2, "securityGroups": 1})
	for range 2 {
		if err := e.lbs.EnsureLoadBalancerDeleted(ctx(t), cluster, svc); err != nil {
			t.Fatalf("EnsureLoadBalancerDeleted: %v", err)
		}
		e.wantLive(map[string]int{})
		if _, exists, err := e.lbs.GetLoadBalancer(ctx(t), cluster, svc); exists || err != nil {
			t.Errorf("GetLoadBalancer = %v, %v after deletion", exists, err)
		}
	}
	// Node updates while the Service goes never bring anything back.
	if err := e.lbs.UpdateLoadBalancer(ctx(t), cluster, svc, nodes); err != nil {
		t.Errorf("UpdateLoadBalancer: %v", err)
	}
	deleting := svc.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{}
	if err := e.lbs.UpdateLoadBalancer(ctx(t), cluster, deleting, nodes); err != nil {
		t.Errorf("UpdateLoadBalancer of a Service being deleted: %v", err)
	}
	if st := e.fake.Stats(); st.LoadBalancers.Created != 1 || st.SecurityGroups.Created != 1 || st.TargetGroups.Created != 2 {
		t.Errorf("made again: %+v", st)
	}
}

// A failing call anywhere in a deletion is an error, never success: what
// is left stays (and GetLoadBalancer keeps reporting it) until a retry
// succeeds.
func TestDeleteWithFailures(t *testing.T) {
	cases := []struct {
		match  string
		status int
		// what is left after the failed deletion
		left map[string]int
	}{
		{"elbv2 DescribeLoadBalancers", 429, map[string]int{"loadBalancers": 1, "targetGroups": 1, "listeners": 1, "securityGroups": 1}},
		{"elbv2 DescribeTags", 429, map[string]int{"loadBalancers": 1, "targetGroups": 1, "listeners": 1, "securityGroups": 1}},
		{"elbv2 DeleteLoadBalancer", 503, map[string]int{"loadBalancers": 1, "targetGroups": 1, "listeners": 1, "securityGroups": 1}},
		{"elbv2 DescribeTargetGroups", 500, map[string]int{"targetGroups": 1, "securityGroups": 1}},
		{"elbv2 DeleteTargetGroup", 429, map[string]int{"targetGroups": 1, "securityGroups": 1}},
		{"elbv2 DeleteTargetGroup", 500, map[string]int{"targetGroups": 1, "securityGroups": 1}},
		{"ec2 DescribeSecurityGroups", 503, map[string]int{"securityGroups": 1}},
		{"ec2 DeleteSecurityGroup", 429, map[string]int{"securityGroups": 1}},
		{"ec2 DeleteSecurityGroup", 500, map[string]int{"securityGroups": 1}},
	}
	for _, c := range cases {
		t.Run(c.match+" "+strconv.Itoa(c.status), func(t *testing.T) {
			e := newEnv(t)
			nodes, _ := e.nodes(1)
			svc := service(nil)
			e.ensure(svc, nodes)
			f := e.fake.Faults()
			id := f.AddRule(faults.Rule{Match: c.match, Status: c.status})
			err := e.lbs.EnsureLoadBalancerDeleted(ctx(t), cluster, svc)
			if err == nil {
				t.Fatalf("EnsureLoadBalancerDeleted succeeded with %s failing", c.match)
			}
			if f.Injected() == 0 {
				t.Fatal("no failure was injected")
			}
			e.wantLive(c.left)
			f.RemoveRule(id)
			if _, exists, err := e.lbs.GetLoadBalancer(ctx(t), cluster, svc); !exists || err != nil {
				t.Errorf("GetLoadBalancer = %v, %v with %v left; want exists", exists, err, e.live())
			}
			if err := e.lbs.EnsureLoadBalancerDeleted(ctx(t), cluster, svc); err != nil {
				t.Fatalf("retry: %v", err)
			}
			e.wantLive(map[string]int{})
			if _, exists, err := e.lbs.GetLoadBalancer(ctx(t), cluster, svc); exists || err != nil {
				t.Errorf("GetLoadBalancer = %v, %v after deletion", exists, err)
			}
		})
	}
}

// An NLB whose tags cannot be read is not taken for someone else's: the
// deletion stops there with the error, and nothing else is deleted.
func TestDeleteWhenOwnershipUnknown(t *testing.T) {
	e := newEnv(t)
	nodes, _ := e.nodes(1)
	svc := service(nil)
	e.ensure(svc, nodes)
	f := e.fake.Faults()
	// Every attempt of the NLB's tag lookup is throttled; later ones work.
	f.AddRule(faults.Rule{Match: "elbv2 DescribeTags", Status: 429, Remaining: 4})
	err := e.lbs.EnsureLoadBalancerDeleted(ctx(t), cluster, svc)
	if k := cloudapi.KindOf(err); k != cloudapi.KindThrottled {
		t.Fatalf("err = %v (kind %v), want the throttling", err, k)
	}
	if n := e.calls("Delete"); n != 0 {
		t.Errorf("%d deletions with the NLB's ownership unknown: %v", n, f.Calls())
	}
	e.wantLive(map[string]int{"loadBalancers": 1, "targetGroups": 1, "listeners": 1, "securityGroups": 1})
	if err := e.lbs.EnsureLoadBalancerDeleted(ctx(t), cluster, svc); err != nil {
		t.Fatal(err)
	}
	e.wantLive(map[string]int{})
}

// GetLoadBalancer reports a Service whose NLB is gone but whose target
// groups are left, so its deletion is finished.
func TestGetLoadBalancerReportsLeftovers(t *testing.T) {
	e := newEnv(t)
	nodes, _ := e.nodes(1)
	svc := service(nil)
	e.ensure(svc, nodes)
	lb := e.nlb()
	sgID := lb.SecurityGroups[0]
	e.fake.Faults().AddRule(faults.Rule{Match: "elbv2 DeleteTargetGroup", Status: 500, Remaining: 4})
	if err := e.lbs.EnsureLoadBalancerDeleted(ctx(t), cluster, svc); err == nil {
		t.Fatal("deletion succeeded with DeleteTargetGroup failing")
	}
	// Only target groups left: the security group goes by hand.
	if _, err := e.sdk().ec2.DeleteSecurityGroup(ctx(t), &ec2.DeleteSecurityGroupInput{GroupId: aws.String(sgID)}); err != nil {
		t.Fatal(err)
	}
	e.wantLive(map[string]int{"targetGroups": 1})
	st, exists, err := e.lbs.GetLoadBalancer(ctx(t), cluster, svc)
	if !exists || err != nil {
		t.Fatalf("GetLoadBalancer = %v, %v with a target group left; want exists", exists, err)
	}
	if st == nil || len(st.Ingress) != 0 {
		t.Errorf("status %+v, want an empty one", st)
	}
	if err := e.lbs.EnsureLoadBalancerDeleted(ctx(t), cluster, svc); err != nil {
		t.Fatal(err)
	}
	e.wantLive(map[string]int{})
}

// While something still holds the security group, deletion asks to be
// retried (deletePollInterval) rather than failing or reporting success.
func TestDeleteWaitsForSecurityGroup(t *testing.T) {
	e := newEnv(t)
	nodes, _ := e.nodes(1)
	svc := service(nil)
	e.ensure(svc, nodes)
	sg := e.securityGroup(e.nlb())
	holder := e.fake.AddInstance(fakeaws.Instance{SubnetID: e.private[zoneA].ID, SecurityGroupIDs: []string{sg.ID}})
	err := e.lbs.EnsureLoadBalancerDeleted(ctx(t), cluster, svc)
	var re *api.RetryError
	if !errors.As(err, &re) || re.RetryAfter() != awsccm.DeletePollInterval {
		t.Fatalf("err = %v (%T), want a RetryError after %s", err, err, awsccm.DeletePollInterval)
	}
	e.wantLive(map[string]int{"securityGroups": 1})
	e.fake.RemoveInstance(holder.ID)
	if err := e.lbs.EnsureLoadBalancerDeleted(ctx(t), cluster, svc); err != nil {
		t.Fatal(err)
	}
	e.wantLive(map[string]int{})
}

// Creates whose answer is lost are found again, never made twice.
func TestLostCreateAnswers(t *testing.T) {
	e := newEnv(t)
	nodes, _ := e.nodes(1)
	svc := service(nil)
	f := e.fake.Faults()
	for _, m := range []string{"ec2 CreateSecurityGroup", "elbv2 CreateLoadBalancer", "elbv2 CreateTargetGroup", "elbv2 CreateListener", "elbv2 RegisterTargets"} {
		f.AddRule(faults.Rule{Match: m, Status: 500, AfterCommit: true, Remaining: 1})
	}
	var err error
	for range 3 {
		if _, err = e.lbs.EnsureLoadBalancer(ctx(t), cluster, svc, nodes); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("EnsureLoadBalancer after retries: %v", err)
	}
	if st := e.fake.Stats(); st.LoadBalancers.Created != 1 || st.SecurityGroups.Created != 1 || st.TargetGroups.Created != 1 || st.Listeners.Created != 1 {
		t.Errorf("made twice: %+v", st)
	}
	e.wantLive(map[string]int{"loadBalancers": 1, "targetGroups": 1, "listeners": 1, "securityGroups": 1})
	if got := targetIDs(e.targetGroup(e.listeners(e.nlb().ARN)[80])); len(got) != 1 {
		t.Errorf("targets %v", got)
	}
}

// Services whose names share the first eight characters have target
// groups with a shared name prefix; deleting one leaves the other's.
func TestDeleteKeepsOtherServicesTargetGroups(t *testing.T) {
	e := newEnv(t)
	nodes, _ := e.nodes(1)
	mk := func(name, uid string) *v1.Service {
		s := service(nil)
		s.Name, s.UID = name, types.UID(uid)
		return s
	}
	a := mk("frontend-a", "11111111-1111-4111-8111-111111111111")
	b := mk("frontend-b", "22222222-2222-4222-8222-222222222222")
	e.ensure(a, nodes)
	e.ensure(b, nodes)
	e.wantLive(map[string]int{"loadBalancers": 2, "targetGroups": 2, "listeners": 2, "securityGroups": 2})
	if err := e.lbs.EnsureLoadBalancerDeleted(ctx(t), cluster, a); err != nil {
		t.Fatal(err)
	}
	e.wantLive(map[string]int{"loadBalancers": 1, "targetGroups": 1, "listeners": 1, "securityGroups": 1})
	lb, ok := e.nlbNamed(e.lbs.GetLoadBalancerName(ctx(t), cluster, b))
	if !ok {
		t.Fatal("frontend-b's NLB is gone")
	}
	for _, l := range e.listeners(lb.ARN) {
		if tg := e.targetGroup(l); tg.Tags[awsccm.TagServiceName] != "shop/frontend-b" {
			t.Errorf("frontend-b forwards to %+v", tg)
		}
	}
}

// An NLB of this Service made without security groups (as the AWS CCM
// makes them by default) is adopted as it is: AWS refuses to add security
// groups to it, so none is made or set. Its source ranges are enforced by
// the client rules in the nodes' security groups, as the AWS CCM writes
// them: no warning then. Only with those rules turned off
// (disableSecurityGroupIngress) does nothing enforce them, and a Warning
// event says so.
func TestAdoptsNLBWithoutSecurityGroups(t *testing.T) {
	for _, disable := range []bool{false, true} {
		t.Run(fmt.Sprintf("disableSecurityGroupIngress=%v", disable), func(t *testing.T) {
			w := newWorld(t)
			cfg := w.config()
			cfg.DisableSecurityGroupIngress = disable
			e := w.env(cfg)
			nodes, ins := e.nodes(2)
			e.foreignNLB(map[string]string{clusterTag: "owned", awsccm.TagServiceName: "shop/web"})
			svc := service(nil)
			svc.Spec.LoadBalancerSourceRanges = []string{"203.0.113.0/24"}
			e.ensure(svc, nodes)
			lb := e.nlb()
			if len(lb.SecurityGroups) != 0 || e.fake.Stats().SecurityGroups.Created != 0 {
				t.Errorf("security groups %v, %d created; want none", lb.SecurityGroups, e.fake.Stats().SecurityGroups.Created)
			}
			if n := e.calls("SetSecurityGroups"); n != 0 {
				t.Errorf("%d SetSecurityGroups calls", n)
			}
			if len(e.listeners(lb.ARN)) != 1 {
				t.Errorf("listeners %v, want the Service's port", e.listeners(lb.ARN))
			}
			// What enforces the ranges: the client rule in the nodes' group.
			group, ok := e.fake.SecurityGroup(ins[0].SecurityGroupIDs[0])
			if !ok {
				t.Fatalf("no group %s", ins[0].SecurityGroupIDs[0])
			}
			enforced := false
			for _, r := range group.Ingress {
				for _, c := range r.IPRanges {
					if c.CIDR == "203.0.113.0/24" && c.Description == "kubernetes.io/rule/nlb/client="+lb.Name {
						enforced = true
					}
				}
			}
			ev := strings.Join(e.events(), "\n")
			switch {
			case !disable && !enforced:
				t.Errorf("no client rule for 203.0.113.0/24 in node group %s: %+v", group.ID, group.Ingress)
			case !disable && strings.Contains(ev, "SourceRangesNotEnforced"):
				t.Errorf("events %q: the node rules enforce the ranges, want no SourceRangesNotEnforced warning", ev)
			case disable && (enforced || !strings.Contains(ev, "SourceRangesNotEnforced")):
				t.Errorf("events %q, node rule %v; want a SourceRangesNotEnforced warning and no rule", ev, enforced)
			}
			e.ensure(svc, nodes) // steady: still no error
		})
	}
}

// A short interval given alone brings the default timeout (6s) below it
// instead of failing on a value the user did not give.
func TestShortIntervalLowersDefaultTimeout(t *testing.T) {
	e := newEnv(t)
	nodes, _ := e.nodes(1)
	e.ensure(service(map[string]string{awsccm.AnnHealthCheckInterval: "5"}), nodes)
	hc := e.targetGroup(e.listeners(e.nlb().ARN)[80]).HealthCheck
	if hc.IntervalSeconds != 5 || hc.TimeoutSeconds != 4 {
		t.Errorf("interval %ds, timeout %ds; want 5s and 4s", hc.IntervalSeconds, hc.TimeoutSeconds)
	}
}

// EC2's eventual consistency and an NLB's lingering interfaces are waits,
// not failures: the Service is looked at again soon, and gets there.
func TestEventualConsistencyIsAWait(t *testing.T) {
	e := newEnv(t)
	e.fake.SetConsistencyDelay(300 * time.Millisecond)
	e.fake.SetDependencyLinger(300 * time.Millisecond)
	nodes, _ := e.nodes(1)
	svc := service(nil)
	_, err := e.lbs.EnsureLoadBalancer(ctx(t), cluster, svc, nodes)
	var pending *loadbalancers.PendingError
	if !errors.As(err, &pending) || pending.RetryAfter() != awsccm.ConsistencyRetry {
		t.Fatalf("first EnsureLoadBalancer = %v (%T), want a wait of %s for the new group", err, err, awsccm.ConsistencyRetry)
	}
	time.Sleep(400 * time.Millisecond)
	e.ensure(svc, nodes)
	err = e.lbs.EnsureLoadBalancerDeleted(ctx(t), cluster, svc)
	if !errors.As(err, &pending) || pending.RetryAfter() != awsccm.DeletePollInterval {
		t.Fatalf("delete = %v (%T), want a wait while the NLB's interfaces hold the group", err, err)
	}
	time.Sleep(400 * time.Millisecond)
	if err := e.lbs.EnsureLoadBalancerDeleted(ctx(t), cluster, svc); err != nil {
		t.Fatal(err)
	}
	e.wantLive(map[string]int{})
}
