//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/polyccm/polyccm/drivers/aws"
	fakeaws "github.com/polyccm/polyccm/test/fakecloud/aws"
	"github.com/polyccm/polyccm/test/harness"
)

var awsZones = []string{"eu-west-1a", "eu-west-1b"}

// 200 Nodes registering at once, half with a providerID and half known
// only by their private DNS name, cost a few DescribeInstances calls.
func TestAWSNodesAreInitializedInBatches(t *testing.T) {
	e := newAWSEnv(t, nil)
	const n = 200
	var ins []fakeaws.Instance
	for i := range n {
		ins = append(ins, e.instance(i, awsZones[i%2]))
	}
	var names []string
	var wg sync.WaitGroup
	for i, in := range ins {
		names = append(names, in.PrivateDNSName)
		pid := ""
		if i%2 == 0 {
			pid = e.providerID(in)
		}
		wg.Go(func() { e.register(in.PrivateDNSName, pid) })
	}
	wg.Wait()
	e.waitInitialized(names, 2*time.Minute)
	describes := e.fake.Faults().CallCount("ec2 DescribeInstances")

	zoneIDs := map[string]string{}
	for _, z := range e.fake.AvailabilityZones() {
		zoneIDs[z.Name] = z.ID
	}
	for i, in := range ins {
		node, err := e.node(in.PrivateDNSName)
		if err != nil {
			t.Fatal(err)
		}
		if node.Spec.ProviderID != e.providerID(in) {
			t.Errorf("%s: providerID %q, want %q", node.Name, node.Spec.ProviderID, e.providerID(in))
		}
		if node.Labels[v1.LabelInstanceTypeStable] != "m6i.large" || node.Labels[v1.LabelTopologyZone] != in.AvailabilityZone ||
			node.Labels[v1.LabelTopologyRegion] != "eu-west-1" || node.Labels[aws.LabelZoneID] != zoneIDs[in.AvailabilityZone] {
			t.Errorf("%s: labels %v", node.Name, node.Labels)
		}
		if i == 0 {
			eventually(t, 10*time.Second, node.Name+" addresses", func() (bool, string) {
				node, _ := e.node(in.PrivateDNSName)
				want := []v1.NodeAddress{
					{Type: v1.NodeInternalIP, Address: in.PrivateIP},
					{Type: v1.NodeExternalIP, Address: in.PublicIP},
					{Type: v1.NodeInternalDNS, Address: in.PrivateDNSName},
					{Type: v1.NodeHostName, Address: in.PrivateDNSName},
					{Type: v1.NodeExternalDNS, Address: in.PublicDNSName},
				}
				got := slices.Clone(node.Status.Addresses)
				sortAddrs(got)
				sortAddrs(want)
				return node != nil && slices.Equal(got, want), fmt.Sprintf("%v, want %v", node.Status.Addresses, want)
			})
		}
	}
	if describes > n/5 {
		t.Errorf("initializing %d nodes took %d DescribeInstances calls; want at most %d: lookups are not batched (%v)", n, describes, n/5, e.fake.Faults().Calls())
	}
	t.Logf("%d nodes initialized with %d DescribeInstances calls", n, describes)
}

func sortAddrs(a []v1.NodeAddress) {
	slices.SortFunc(a, func(x, y v1.NodeAddress) int {
		return strings.Compare(string(x.Type)+x.Address, string(y.Type)+y.Address)
	})
}

// A stopped instance taints its Node; a terminated one takes the Node, but
// a storm of throttling and server errors deletes nothing.
func TestAWSShutdownAndDeletion(t *testing.T) {
	e := newAWSEnv(t, nil)
	var ins []fakeaws.Instance
	var names []string
	for i := range 3 {
		in := e.instance(i, "eu-west-1b")
		ins = append(ins, in)
		names = append(names, in.PrivateDNSName)
		e.register(in.PrivateDNSName, "")
	}
	e.waitInitialized(names, 30*time.Second)
	if err := e.fake.SetInstanceState(ins[1].ID, "stopped"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "shutdown taint on "+names[1], func() (bool, string) {
		node, err := e.node(names[1])
		return err == nil && harness.HasTaint(node, harness.ShutdownTaint), "no taint"
	})

	f := e.fake.Faults()
	r1 := f.AddRule(faultRule("ec2 *", 0.5, 503))
	r2 := f.AddRule(faultRule("ec2 *", 0, 500))
	before := f.Injected()
	if err := e.fake.SetInstanceState(ins[0].ID, "terminated"); err != nil {
		t.Fatal(err)
	}
	e.fake.RemoveInstance(ins[2].ID) // gone from listings altogether
	never(t, 8*time.Second, "a node was deleted during an error storm", func() (bool, string) {
		for _, n := range names {
			if !e.exists(n) {
				return true, n + " deleted"
			}
		}
		return false, ""
	})
	if f.Injected()-before < 3 {
		t.Fatalf("only %d injected errors reached polyccm", f.Injected()-before)
	}
	f.RemoveRule(r1)
	f.RemoveRule(r2)
	eventually(t, 30*time.Second, names[0]+" and "+names[2]+" deleted", func() (bool, string) {
		return !e.exists(names[0]) && !e.exists(names[2]), "still there"
	})
	if !e.exists(names[1]) {
		t.Errorf("%s deleted but its instance is only stopped", names[1])
	}
}

// awsLB starts polyccm with services on and n nodes in two zones.
func awsLB(t *testing.T, n int) (*awsEnv, []fakeaws.Instance) {
	t.Helper()
	e := newAWSEnv(t, withServices)
	var ins []fakeaws.Instance
	var names []string
	for i := range n {
		in := e.instance(i, awsZones[i%2])
		ins = append(ins, in)
		names = append(names, in.PrivateDNSName)
		e.register(in.PrivateDNSName, "")
	}
	e.waitInitialized(names, 30*time.Second)
	return e, ins
}

func (e *awsEnv) waitIngress(name string, timeout time.Duration) *v1.Service {
	e.t.Helper()
	var svc *v1.Service
	eventually(e.t, timeout, "Service "+name+" ingress", func() (bool, string) {
		svc = getSvc(e.t, name)
		ing := svc.Status.LoadBalancer.Ingress
		return len(ing) == 1 && ing[0].Hostname != "", fmt.Sprintf("ingress %v", ing)
	})
	return svc
}

// nlb returns the fake's NLB named for svc.
func (e *awsEnv) nlb(svc *v1.Service) (fakeaws.LoadBalancer, bool) {
	want := "a" + strings.ReplaceAll(string(svc.UID), "-", "")[:31]
	for _, lb := range e.fake.LoadBalancers() {
		if lb.Name == want {
			return lb, true
		}
	}
	return fakeaws.LoadBalancer{}, false
}

// lbListeners maps listener port to protocol and the target group's port.
func (e *awsEnv) lbListeners(arn string) map[int32]string {
	out := map[int32]string{}
	for _, l := range e.fake.Listeners() {
		if l.LoadBalancerARN != arn || len(l.DefaultActions) == 0 {
			continue
		}
		tg, _ := e.fake.TargetGroup(l.DefaultActions[0].TargetGroupARN)
		out[l.Port] = fmt.Sprintf("%s->%d", l.Protocol, tg.Port)
	}
	return out
}

// owned are the live resources polyccm made: load balancers, target
// groups, listeners and security groups.
func (e *awsEnv) owned() map[string]int {
	st := e.fake.Stats()
	out := map[string]int{}
	for k, r := range map[string]fakeaws.ResourceStats{"loadBalancers": st.LoadBalancers, "targetGroups": st.TargetGroups, "listeners": st.Listeners, "securityGroups": st.SecurityGroups} {
		if r.Live > 0 {
			out[k] = r.Live
		}
	}
	return out
}

// An NLB Service end to end: listeners and target groups per port on the
// node ports, the AWS CCM's names and health check, a managed security group with the
// source ranges, then a restart, port, node and deletion changes, with
// exactly one NLB ever created.
func TestAWSNetworkLoadBalancer(t *testing.T) {
	e, ins := awsLB(t, 3)
	createService(t, "nlb", nil, tcp(80), tcp(443))
	svc := e.waitIngress("nlb", 90*time.Second)
	lb, ok := e.nlb(svc)
	if !ok {
		t.Fatalf("no NLB for the Service; load balancers %+v", e.fake.LoadBalancers())
	}
	if lb.Type != "network" || lb.Scheme != "internet-facing" || len(lb.Subnets) != 2 || lb.DNSName != svc.Status.LoadBalancer.Ingress[0].Hostname {
		t.Errorf("NLB %+v", lb)
	}
	if lb.Tags[aws.TagClusterPrefix+"e2e"] != aws.TagOwned || lb.Tags[aws.TagServiceName] != "default/nlb" {
		t.Errorf("NLB tags %v", lb.Tags)
	}
	nodePort := map[int32]int32{}
	for _, p := range svc.Spec.Ports {
		nodePort[p.Port] = p.NodePort
	}
	want := map[int32]string{80: fmt.Sprintf("TCP->%d", nodePort[80]), 443: fmt.Sprintf("TCP->%d", nodePort[443])}
	if got := e.lbListeners(lb.ARN); !mapsEqual(got, want) {
		t.Errorf("listeners %v, want %v", got, want)
	}
	tgs := e.fake.TargetGroups()
	if len(tgs) != 2 {
		t.Fatalf("%d target groups, want 2", len(tgs))
	}
	for _, tg := range tgs {
		// The AWS CCM's defaults for externalTrafficPolicy Cluster, and its
		// name shape k8s-<namespace>-<name>-<hash> (drivers/aws/names_test.go).
		if tg.TargetType != "instance" || len(tg.Targets) != 3 || tg.HealthCheck.Port != "traffic-port" || tg.HealthCheck.Protocol != "TCP" || tg.HealthCheck.IntervalSeconds != 30 || !strings.HasPrefix(tg.Name, "k8s-default-nlb-") {
			t.Errorf("target group %s: type %s, %d targets, health check %+v", tg.Name, tg.TargetType, len(tg.Targets), tg.HealthCheck)
		}
		for _, tr := range tg.Targets {
			if tr.Port != tg.Port {
				t.Errorf("target %s on port %d, want the node port %d", tr.ID, tr.Port, tg.Port)
			}
		}
	}
	if len(lb.SecurityGroups) != 1 {
		t.Fatalf("NLB security groups %v, want the one polyccm manages", lb.SecurityGroups)
	}
	sgID := lb.SecurityGroups[0]
	if sg, _ := e.fake.SecurityGroup(sgID); !strings.HasPrefix(sg.Name, "k8s-default-nlb-") || sg.Description != "[k8s] Managed SecurityGroup for LoadBalancer" || sg.Tags[aws.TagServiceName] != "" {
		t.Errorf("security group %s %q, tags %v; want the AWS CCM's name, description and tags", sg.Name, sg.Description, sg.Tags)
	}
	sgSources := func() []string {
		sg, _ := e.fake.SecurityGroup(sgID)
		var out []string
		for _, p := range sg.Ingress {
			for _, r := range p.IPRanges {
				out = append(out, fmt.Sprintf("%s/%d:%s", p.Protocol, p.FromPort, r.CIDR))
			}
		}
		slices.Sort(out)
		return out
	}
	// The ports, and ICMP 3/4 for path MTU discovery, as upstream's.
	if got := sgSources(); !slices.Equal(got, []string{"icmp/3:0.0.0.0/0", "tcp/443:0.0.0.0/0", "tcp/80:0.0.0.0/0"}) {
		t.Errorf("security group ingress %v", got)
	}

	// polyccm restarts; the NLB is found again by name and tags.
	if _, err := e.ccm.Stop(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	_ = cp.Admin.CoordinationV1().Leases("kube-system").Delete(context.Background(), "cloud-controller-manager", metav1.DeleteOptions{})
	e.restart()

	// Ports change: 443 goes, 8080 comes; source ranges narrow.
	patchSvc(t, "nlb", map[string]any{"spec": map[string]any{
		"ports":                    []any{map[string]any{"name": "p80", "port": 80, "protocol": "TCP"}, map[string]any{"name": "p8080", "port": 8080, "protocol": "TCP"}},
		"loadBalancerSourceRanges": []string{"203.0.113.0/24"},
	}})
	eventually(t, 60*time.Second, "listeners follow the ports", func() (bool, string) {
		svc = getSvc(t, "nlb")
		np := map[int32]int32{}
		for _, p := range svc.Spec.Ports {
			np[p.Port] = p.NodePort
		}
		want := map[int32]string{80: fmt.Sprintf("TCP->%d", np[80]), 8080: fmt.Sprintf("TCP->%d", np[8080])}
		got := e.lbListeners(lb.ARN)
		return mapsEqual(got, want) && len(e.fake.TargetGroups()) == 2, fmt.Sprintf("listeners %v, want %v; %d target groups", got, want, len(e.fake.TargetGroups()))
	})
	eventually(t, 30*time.Second, "security group follows", func() (bool, string) {
		got := sgSources()
		want := []string{"icmp/3:203.0.113.0/24", "tcp/80:203.0.113.0/24", "tcp/8080:203.0.113.0/24"}
		slices.Sort(want)
		return slices.Equal(got, want), fmt.Sprint(got)
	})

	// A node leaves the load balancer.
	node, _ := e.node(ins[2].PrivateDNSName)
	node.Labels[v1.LabelNodeExcludeBalancers] = "true"
	if _, err := cp.Admin.CoreV1().Nodes().Update(context.Background(), node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "targets without the excluded node", func() (bool, string) {
		var counts []int
		for _, tg := range e.fake.TargetGroups() {
			for _, tr := range tg.Targets {
				if tr.ID == ins[2].ID {
					return false, tg.Name + " still targets " + tr.ID
				}
			}
			counts = append(counts, len(tg.Targets))
		}
		return slices.Equal(counts, []int{2, 2}), fmt.Sprint(counts)
	})

	if _, again := e.nlb(getSvc(t, "nlb")); !again {
		t.Fatal("NLB gone before the Service was deleted")
	}
	deleteServiceAndWait(t, "nlb", 90*time.Second)
	if left := e.owned(); len(left) != 0 {
		t.Errorf("resources left after the Service was deleted: %v", left)
	}
	if st := e.fake.Stats().LoadBalancers; st.Created != 1 {
		t.Errorf("%d NLBs created for one Service (%+v)", st.Created, st)
	}
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Invalid annotations: a Warning event naming the annotation and nothing
// made in the cloud.
func TestAWSInvalidAnnotations(t *testing.T) {
	e, _ := awsLB(t, 1)
	createService(t, "bad", map[string]string{
		aws.AnnHealthCheckProtocol: "ICMP",
		"service.beta.kubernetes.io/aws-load-balancer-healthcheck-intervall": "10",
	}, tcp(80))
	eventually(t, 30*time.Second, "warning events", func() (bool, string) {
		var all []string
		for _, ev := range warnings(t, "bad") {
			all = append(all, ev.Message)
		}
		s := strings.Join(all, "\n")
		return strings.Contains(s, aws.AnnHealthCheckProtocol+`: "ICMP" is not valid`) &&
			strings.Contains(s, "did you mean "+aws.AnnHealthCheckInterval+"?"), s
	})
	time.Sleep(2 * time.Second)
	if left := e.owned(); len(left) != 0 {
		t.Errorf("resources made for a Service with invalid annotations: %v", left)
	}
	deleteServiceAndWait(t, "bad", 60*time.Second)
}

// Pod CIDR routes go into the cluster's tagged route table, pointing at
// the nodes' instances with source/dest check off, and leave with them.
func TestAWSRoutes(t *testing.T) {
	e := newAWSEnv(t, func(s *harness.Settings) {
		s.Controllers = "nodes: true\nnodeLifecycle: true\nroutes: true"
		s.Extra = "routes:\n  clusterCIDR: 10.244.0.0/16\n  reconcilePeriod: 1s"
	})
	var ins []fakeaws.Instance
	var names []string
	for i := range 3 {
		in := e.instance(i, "eu-west-1a")
		n := harness.UninitializedNode(in.PrivateDNSName, "")
		n.Spec.PodCIDR = fmt.Sprintf("10.244.%d.0/24", i)
		n.Spec.PodCIDRs = []string{n.Spec.PodCIDR}
		e.registerNode(n)
		ins = append(ins, in)
		names = append(names, in.PrivateDNSName)
	}
	e.waitInitialized(names, 30*time.Second)
	routes := func() map[string]string {
		rt, _ := e.fake.RouteTable(e.table.ID)
		got := map[string]string{}
		for _, r := range rt.Routes {
			if r.InstanceID != "" {
				got[r.DestinationCIDRBlock] = r.InstanceID
			}
		}
		return got
	}
	eventually(t, 60*time.Second, "a route per node", func() (bool, string) {
		got := routes()
		for i, in := range ins {
			if got[fmt.Sprintf("10.244.%d.0/24", i)] != in.ID {
				return false, fmt.Sprintf("routes %v", got)
			}
		}
		return len(got) == 3, fmt.Sprintf("routes %v", got)
	})
	for _, in := range ins {
		if got, _ := e.fake.Instance(in.ID); got.SourceDestCheck {
			t.Errorf("%s still has the source/dest check on", in.ID)
		}
	}
	if err := cp.Admin.CoreV1().Nodes().Delete(context.Background(), names[1], metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the deleted node's route removed", func() (bool, string) {
		got := routes()
		_, still := got["10.244.1.0/24"]
		return !still && len(got) == 2, fmt.Sprintf("routes %v", got)
	})
}

// With 30% of EC2 and ELBv2 calls throttled, 10 Services converge to
// exactly 10 NLBs, and deleting them leaves nothing; no Node is lost.
func TestAWSLoadBalancersConvergeUnderThrottling(t *testing.T) {
	e, ins := awsLB(t, 2)
	f := e.fake.Faults()
	f.AddRule(faultRule("ec2 *", 0.3, 503))
	f.AddRule(faultRule("elbv2 *", 0.3, 429))
	const n = 10
	for i := range n {
		createService(t, fmt.Sprintf("astorm-%02d", i), nil, tcp(80))
	}
	for i := range n {
		e.waitIngress(fmt.Sprintf("astorm-%02d", i), 4*time.Minute)
	}
	if st := e.fake.Stats().LoadBalancers; st.Created != n || st.Peak != n {
		t.Errorf("NLBs: %+v; want exactly %d created", st, n)
	}
	deleteServicesAndWait(t, serviceNames("astorm", n), 4*time.Minute)
	if left := e.owned(); len(left) != 0 {
		t.Errorf("resources leaked: %v", left)
	}
	for _, in := range ins {
		if !e.exists(in.PrivateDNSName) {
			t.Errorf("node %s deleted under throttling", in.PrivateDNSName)
		}
	}
	t.Logf("faults injected: %d", f.Injected())
}

// A Classic Service end to end through the binary: listeners on the node
// ports, the nodes registered, the managed group let into the nodes'
// group; ports change, a node joins and one leaves; deleting the Service
// leaves nothing, the node rule included.
func TestAWSClassicLoadBalancer(t *testing.T) {
	e := newAWSEnv(t, withServices)
	nodeSG := e.fake.AddSecurityGroup(fakeaws.SecurityGroup{Name: "nodes", Description: "e2e nodes", VPCID: e.vpc.ID,
		Tags: map[string]string{aws.TagClusterPrefix + "e2e": aws.TagOwned}})
	var ins []fakeaws.Instance
	addNode := func(i int) {
		in := e.fake.AddInstance(fakeaws.Instance{SubnetID: e.subnets[awsZones[i%2]].ID, InstanceType: "m6i.large",
			PrivateDNSName: e.nodeName(i) + ".ec2.internal", SecurityGroupIDs: []string{nodeSG.ID}})
		ins = append(ins, in)
		e.register(in.PrivateDNSName, "")
		e.waitInitialized([]string{in.PrivateDNSName}, 30*time.Second)
	}
	addNode(0)
	addNode(1)
	classic := func() (fakeaws.ClassicLoadBalancer, bool) {
		lbs := e.fake.ClassicLoadBalancers()
		if len(lbs) != 1 {
			return fakeaws.ClassicLoadBalancer{}, false
		}
		return lbs[0], true
	}
	listeners := func(lb fakeaws.ClassicLoadBalancer) []string {
		var out []string
		for _, l := range lb.Listeners {
			out = append(out, fmt.Sprintf("%s:%d->%d", l.Protocol, l.LoadBalancerPort, l.InstancePort))
		}
		slices.Sort(out)
		return out
	}
	wantListeners := func(svc *v1.Service) []string {
		var out []string
		for _, p := range svc.Spec.Ports {
			out = append(out, fmt.Sprintf("TCP:%d->%d", p.Port, p.NodePort))
		}
		slices.Sort(out)
		return out
	}
	nodeRules := func() []string {
		sg, _ := e.fake.SecurityGroup(nodeSG.ID)
		var out []string
		for _, p := range sg.Ingress {
			for _, g := range p.Groups {
				out = append(out, p.Protocol+" from "+g.GroupID)
			}
		}
		return out
	}
	instances := func(n ...int) []string {
		var out []string
		for _, i := range n {
			out = append(out, ins[i].ID)
		}
		slices.Sort(out)
		return out
	}

	createService(t, "clb", map[string]string{aws.AnnType: "classic"}, tcp(80), tcp(443))
	svc := e.waitIngress("clb", 90*time.Second)
	lb, ok := classic()
	if !ok || lb.DNSName != svc.Status.LoadBalancer.Ingress[0].Hostname {
		t.Fatalf("Classic load balancers %+v for ingress %v", e.fake.ClassicLoadBalancers(), svc.Status.LoadBalancer.Ingress)
	}
	if got, want := listeners(lb), wantListeners(svc); !slices.Equal(got, want) {
		t.Errorf("listeners %v, want %v", got, want)
	}
	if lb.Tags[aws.TagClusterPrefix+"e2e"] != aws.TagOwned || lb.Tags[aws.TagServiceName] != "default/clb" || len(lb.SecurityGroups) != 1 {
		t.Errorf("tags %v groups %v", lb.Tags, lb.SecurityGroups)
	}
	lbSG := lb.SecurityGroups[0]
	eventually(t, 30*time.Second, "instances and node rule", func() (bool, string) {
		lb, _ := classic()
		got := slices.Sorted(slices.Values(lb.Instances))
		return slices.Equal(got, instances(0, 1)) && slices.Equal(nodeRules(), []string{"-1 from " + lbSG}), fmt.Sprintf("instances %v, node rules %v", got, nodeRules())
	})
	if e.owned()["loadBalancers"] != 0 {
		t.Errorf("an NLB was made: %v", e.owned())
	}

	// Ports change: 443 goes, 8080 comes.
	patchSvc(t, "clb", map[string]any{"spec": map[string]any{
		"ports": []any{map[string]any{"name": "p80", "port": 80, "protocol": "TCP"}, map[string]any{"name": "p8080", "port": 8080, "protocol": "TCP"}},
	}})
	eventually(t, 60*time.Second, "listeners follow the ports", func() (bool, string) {
		svc = getSvc(t, "clb")
		lb, _ := classic()
		return slices.Equal(listeners(lb), wantListeners(svc)), fmt.Sprintf("listeners %v, want %v", listeners(lb), wantListeners(svc))
	})

	// A node joins, another leaves.
	addNode(2)
	node, _ := e.node(ins[0].PrivateDNSName)
	node.Labels[v1.LabelNodeExcludeBalancers] = "true"
	if _, err := cp.Admin.CoreV1().Nodes().Update(context.Background(), node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "instances follow the nodes", func() (bool, string) {
		lb, _ := classic()
		got := slices.Sorted(slices.Values(lb.Instances))
		return slices.Equal(got, instances(1, 2)), fmt.Sprintf("instances %v, want %v", got, instances(1, 2))
	})

	deleteServiceAndWait(t, "clb", 90*time.Second)
	if left := e.fake.ClassicLoadBalancers(); len(left) != 0 {
		t.Errorf("Classic load balancers left: %+v", left)
	}
	if left := e.owned(); left["securityGroups"] != 1 { // the nodes' own
		t.Errorf("resources left after the Service was deleted: %v", left)
	}
	if got := nodeRules(); len(got) != 0 {
		t.Errorf("node group still lets in %v", got)
	}
	if st := e.fake.Stats().ClassicLoadBalancers; st.Created != 1 {
		t.Errorf("%d Classic load balancers created for one Service (%+v)", st.Created, st)
	}
}
