//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fakeaws "github.com/polyccm/polyccm/test/fakecloud/aws"
	"github.com/polyccm/polyccm/test/simcloud"
	"github.com/polyccm/polyccm/test/upstream"
)

// The upstream AWS cloud-controller-manager (kubernetes/cloud-provider-aws,
// the version of test/tools/upstream-aws) on the AWS fake: it makes a
// Classic Load Balancer and an NLB, in both of its NLB security group
// modes, then deletes them when their Services go. This proves the fake
// serves what upstream calls, the way upstream reads it (no error in its
// log), so that drop-in tests can have upstream build the starting point
// that polyccm takes over.
func TestAWSUpstreamLoadBalancers(t *testing.T) {
	for _, managed := range []bool{false, true} {
		t.Run(map[bool]string{false: "NLBWithoutSecurityGroup", true: "NLBSecurityGroupModeManaged"}[managed], func(t *testing.T) {
			testAWSUpstream(t, managed)
		})
	}
}

const upstreamCluster = "e2e-upstream"

func testAWSUpstream(t *testing.T, managedNLBGroups bool) {
	e := newEnv(t)
	acct, err := simcloud.StartAWS(simcloud.Options{ClusterName: upstreamCluster}, "eu-west-1", awsAccessKey, awsSecretKey)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(acct.Fake.Close)
	fake := acct.Fake
	// The test asserts upstream logs no error. A new security group that
	// reads as missing for a moment, as on AWS, makes upstream log one and
	// retry (it converges); the rest of the realistic profile stays.
	fake.SetConsistencyDelay(0)
	// The layout upstream expects: public subnets tagged for the cluster and
	// for internet-facing load balancers, private ones for the nodes.
	net := fake.AddNetwork(fakeaws.NetworkSpec{
		VPC: fakeaws.VPC{CIDRBlock: "10.0.0.0/16", Tags: map[string]string{"Name": upstreamCluster}}, Cluster: upstreamCluster,
		Subnets: []fakeaws.SubnetSpec{
			{Zone: "eu-west-1a", Public: true, ClusterTag: "shared", RoleTag: true},
			{Zone: "eu-west-1b", Public: true, ClusterTag: "shared", RoleTag: true},
			{Zone: "eu-west-1a", ClusterTag: "shared", RoleTag: true},
			{Zone: "eu-west-1b", ClusterTag: "shared", RoleTag: true},
		},
	})
	clusterTag := fakeaws.TagClusterPrefix + upstreamCluster
	nodeSG := fake.AddSecurityGroup(fakeaws.SecurityGroup{
		Name: upstreamCluster + "-nodes", Description: "nodes", VPCID: net.VPC.ID, Tags: map[string]string{clusterTag: "owned"},
	})
	var nodes []fakeaws.Instance
	for k, sub := range net.Subnets[2:] {
		// Named after its private DNS name, as Nodes on AWS are.
		in := fake.AddInstance(fakeaws.Instance{
			SubnetID: sub.ID, InstanceType: "m6i.large", SecurityGroupIDs: []string{nodeSG.ID},
			Tags: map[string]string{clusterTag: "owned", "Name": fmt.Sprintf("%s-%d", e.prefix, k)},
		})
		nodes = append(nodes, in)
		upReadyNode(t, in.PrivateDNSName, "aws:///"+in.AvailabilityZone+"/"+in.ID)
	}

	up := upstream.StartAWS(t, upstream.AWSOptions{
		Cluster: cp.Cluster, Account: acct, ClusterID: upstreamCluster, VPCID: net.VPC.ID,
		NLBSecurityGroups: managedNLBGroups, Dir: e.dir,
	})

	clb := createService(t, "up-clb", nil, tcp(80))
	nlb := createService(t, "up-nlb", map[string]string{"service.beta.kubernetes.io/aws-load-balancer-type": "nlb"}, tcp(80), tcp(443))
	clbIngress := up.WaitForIngress(t, "default", clb.Name, 2*time.Minute)
	nlbIngress := up.WaitForIngress(t, "default", nlb.Name, 2*time.Minute)

	lbName := func(svc *v1.Service) string { return "a" + strings.ReplaceAll(string(svc.UID), "-", "")[:31] }
	wantTags := func(what string, tags map[string]string, svc *v1.Service) {
		t.Helper()
		if tags[clusterTag] != "owned" || tags["kubernetes.io/service-name"] != "default/"+svc.Name {
			t.Errorf("%s tags = %v, want %s=owned and kubernetes.io/service-name=default/%s", what, tags, clusterTag, svc.Name)
		}
	}
	publicSubnets := []string{net.Subnets[0].ID, net.Subnets[1].ID}

	// The Classic Load Balancer: named for the Service, in the public
	// subnets, with a security group of its own that the nodes' admits.
	c, ok := fake.ClassicLoadBalancer(lbName(clb))
	if !ok {
		t.Fatalf("no Classic Load Balancer %s; have %v", lbName(clb), fake.ClassicLoadBalancers())
	}
	if c.DNSName != clbIngress.Hostname || c.Scheme != "internet-facing" || !upSameSet(c.Subnets, publicSubnets) || !upSameSet(c.Instances, upInstanceIDs(nodes)) {
		t.Errorf("Classic Load Balancer = %+v (ingress %s); want internet-facing in %v with %v", c, clbIngress.Hostname, publicSubnets, upInstanceIDs(nodes))
	}
	wantTags("Classic Load Balancer", c.Tags, clb)
	if len(c.SecurityGroups) != 1 {
		t.Fatalf("Classic Load Balancer security groups = %v", c.SecurityGroups)
	}
	elbSG, _ := fake.SecurityGroup(c.SecurityGroups[0])
	if elbSG.Name != "k8s-elb-"+c.Name || elbSG.Tags[clusterTag] != "owned" {
		t.Errorf("Classic Load Balancer security group = %+v", elbSG)
	}
	if !upAdmits(fake, nodeSG.ID, elbSG.ID) {
		t.Errorf("node security group %s does not admit the load balancer's %s", nodeSG.ID, elbSG.ID)
	}

	// The NLB: named for the Service, a target group and listener per
	// port, its own security group only in the managed mode.
	var n fakeaws.LoadBalancer
	for _, lb := range fake.LoadBalancers() {
		if lb.Name == lbName(nlb) {
			n = lb
		}
	}
	if n.ARN == "" {
		t.Fatalf("no NLB %s; have %v", lbName(nlb), fake.LoadBalancers())
	}
	var nlbSubnets []string
	for _, s := range n.Subnets {
		nlbSubnets = append(nlbSubnets, s.SubnetID)
	}
	if n.DNSName != nlbIngress.Hostname || n.Type != "network" || n.Scheme != "internet-facing" || !upSameSet(nlbSubnets, publicSubnets) {
		t.Errorf("NLB = %+v (ingress %s)", n, nlbIngress.Hostname)
	}
	wantTags("NLB", n.Tags, nlb)
	tgName := regexp.MustCompile(`^k8s-default-upnlb-[0-9a-f]{10}$`)
	listeners := 0
	for _, l := range fake.Listeners() {
		if l.LoadBalancerARN != n.ARN {
			continue
		}
		listeners++
		tg, _ := fake.TargetGroup(l.DefaultActions[0].TargetGroupARN)
		var targets []string
		for _, tt := range tg.Targets {
			targets = append(targets, tt.ID)
		}
		if !tgName.MatchString(tg.Name) || tg.Protocol != "TCP" || !upSameSet(targets, upInstanceIDs(nodes)) {
			t.Errorf("listener %d: target group %+v", l.Port, tg)
		}
		wantTags("target group "+tg.Name, tg.Tags, nlb)
	}
	if listeners != 2 {
		t.Errorf("NLB has %d listeners, want 2", listeners)
	}
	if managedNLBGroups {
		if len(n.SecurityGroups) != 1 {
			t.Fatalf("NLB security groups = %v, want one upstream manages", n.SecurityGroups)
		}
		sg, _ := fake.SecurityGroup(n.SecurityGroups[0])
		if !regexp.MustCompile(`^k8s-default-upnlb-[0-9a-f]{10}$`).MatchString(sg.Name) || sg.Description != "[k8s] Managed SecurityGroup for LoadBalancer" ||
			sg.Tags[clusterTag] != "owned" || !slices.ContainsFunc(sg.Ingress, func(p fakeaws.IPPermission) bool { return p.FromPort == 443 }) {
			t.Errorf("NLB security group = %+v", sg)
		}
	} else if len(n.SecurityGroups) != 0 {
		t.Errorf("NLB security groups = %v, want none", n.SecurityGroups)
	}
	if !slices.ContainsFunc(upNodeRules(fake, nodeSG.ID), func(d string) bool { return strings.Contains(d, "kubernetes.io/rule/nlb/") }) {
		t.Errorf("node security group has no NLB rule: %v", upNodeRules(fake, nodeSG.ID))
	}

	// Deleted, both go with everything upstream made for them.
	deleteServicesAndWait(t, []string{clb.Name, nlb.Name}, 2*time.Minute)
	if lbs, clbs, tgs := fake.LoadBalancers(), fake.ClassicLoadBalancers(), fake.TargetGroups(); len(lbs)+len(clbs)+len(tgs) != 0 || len(fake.Listeners()) != 0 {
		t.Errorf("left behind: %d NLBs, %d Classic, %d target groups, %d listeners", len(lbs), len(clbs), len(tgs), len(fake.Listeners()))
	}
	for _, sg := range fake.SecurityGroups() {
		if sg.Name != "default" && sg.ID != nodeSG.ID {
			t.Errorf("security group %s (%s) left behind", sg.Name, sg.ID)
		}
	}
	if rules := upNodeRules(fake, nodeSG.ID); len(rules) != 0 {
		t.Errorf("node security group keeps rules for deleted load balancers: %v", rules)
	}
	if errs := up.ErrorLines(); len(errs) > 0 {
		t.Errorf("upstream logged %d errors, the first:\n%s", len(errs), strings.Join(errs[:min(len(errs), 5)], "\n"))
	}
}

// upReadyNode registers a Node as a kubelet on an AWS instance leaves it once
// initialized: its provider ID set, Ready. It is deleted after the test.
func upReadyNode(t *testing.T, name, providerID string) {
	t.Helper()
	ctx := context.Background()
	n, err := cp.Admin.CoreV1().Nodes().Create(ctx, &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Spec:       v1.NodeSpec{ProviderID: providerID},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if _, err := cp.Admin.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func upInstanceIDs(ins []fakeaws.Instance) []string {
	var out []string
	for _, in := range ins {
		out = append(out, in.ID)
	}
	return out
}

func upSameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// upAdmits reports whether security group id has an ingress rule from
// group from.
func upAdmits(fake *fakeaws.Server, id, from string) bool {
	sg, _ := fake.SecurityGroup(id)
	for _, p := range sg.Ingress {
		for _, g := range p.Groups {
			if g.GroupID == from {
				return true
			}
		}
	}
	return false
}

// upNodeRules describes the ingress rules of the node security group.
func upNodeRules(fake *fakeaws.Server, id string) []string {
	sg, _ := fake.SecurityGroup(id)
	var out []string
	for _, p := range sg.Ingress {
		for _, r := range p.IPRanges {
			out = append(out, fmt.Sprintf("%s %d-%d from %s %q", p.Protocol, p.FromPort, p.ToPort, r.CIDR, r.Description))
		}
		for _, g := range p.Groups {
			out = append(out, fmt.Sprintf("%s %d-%d from %s %q", p.Protocol, p.FromPort, p.ToPort, g.GroupID, g.Description))
		}
	}
	return out
}

// Upstream's node controller on the fake: it finds each Node's instance by
// its name, labels it with the zone, the zone id and, for an instance type
// with a network topology, the network nodes DescribeInstanceTopology gives.
func TestAWSUpstreamNodes(t *testing.T) {
	e := newEnv(t)
	acct, err := simcloud.StartAWS(simcloud.Options{ClusterName: upstreamCluster}, "eu-west-1", awsAccessKey, awsSecretKey)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(acct.Fake.Close)
	fake := acct.Fake
	net := fake.AddNetwork(fakeaws.NetworkSpec{
		VPC: fakeaws.VPC{CIDRBlock: "10.0.0.0/16"}, Cluster: upstreamCluster,
		Subnets: []fakeaws.SubnetSpec{{Zone: "eu-west-1b", ClusterTag: "shared"}},
	})
	var nodes []fakeaws.Instance
	for _, typ := range []string{"m6i.large", "p5.48xlarge"} {
		in := fake.AddInstance(fakeaws.Instance{SubnetID: net.Subnets[0].ID, InstanceType: typ,
			Tags: map[string]string{fakeaws.TagClusterPrefix + upstreamCluster: "owned", "Name": e.prefix}})
		nodes = append(nodes, in)
		e.register(in.PrivateDNSName, "")
		t.Cleanup(func() {
			_ = cp.Admin.CoreV1().Nodes().Delete(context.Background(), in.PrivateDNSName, metav1.DeleteOptions{})
		})
	}
	up := upstream.StartAWS(t, upstream.AWSOptions{
		Cluster: cp.Cluster, Account: acct, ClusterID: upstreamCluster, VPCID: net.VPC.ID,
		Controllers: []string{"cloud-node"}, Dir: e.dir,
	})
	var names []string
	for _, in := range nodes {
		names = append(names, in.PrivateDNSName)
	}
	e.waitInitialized(names, time.Minute)
	zoneID := ""
	for _, z := range fake.AvailabilityZones() {
		if z.Name == "eu-west-1b" {
			zoneID = z.ID
		}
	}
	for _, in := range nodes {
		n, err := e.node(in.PrivateDNSName)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{
			"topology.kubernetes.io/zone": "eu-west-1b", "topology.kubernetes.io/region": "eu-west-1",
			"topology.k8s.aws/zone-id": zoneID, "node.kubernetes.io/instance-type": in.InstanceType,
		}
		for k, layer := range fake.NetworkNodes(in.ID) {
			want[fmt.Sprintf("topology.k8s.aws/network-node-layer-%d", k+1)] = layer
		}
		if n.Spec.ProviderID != "aws:///eu-west-1b/"+in.ID {
			t.Errorf("%s: provider ID %q", n.Name, n.Spec.ProviderID)
		}
		for k, v := range want {
			if n.Labels[k] != v {
				t.Errorf("%s (%s): label %s = %q, want %q", n.Name, in.InstanceType, k, n.Labels[k], v)
			}
		}
		for k := range n.Labels {
			if strings.HasPrefix(k, "topology.k8s.aws/network-node-layer-") && want[k] == "" {
				t.Errorf("%s (%s): unexpected label %s=%s", n.Name, in.InstanceType, k, n.Labels[k])
			}
		}
	}
	if errs := up.ErrorLines(); len(errs) > 0 {
		t.Errorf("upstream logged %d errors, the first:\n%s", len(errs), strings.Join(errs[:min(len(errs), 5)], "\n"))
	}
}
