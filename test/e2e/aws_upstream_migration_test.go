//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/polyccm/polyccm/drivers/aws"
	fakeaws "github.com/polyccm/polyccm/test/fakecloud/aws"
	"github.com/polyccm/polyccm/test/harness"
	"github.com/polyccm/polyccm/test/upstream"
)

// The switch from the real aws-cloud-controller-manager (issue 32, points
// 8 and 12), in both of its NLB security group modes: upstream makes a
// Classic ELB and two NLBs, its Nodes in two groups at once (one tagged
// for the cluster, and one that is its instance's only, untagged group:
// upstream writes its node rules into both). polyccm takes over creating
// nothing and keeping every hostname and rule; it changes, creates and
// deletes a load balancer; upstream takes over again and creates nothing
// and changes no address; then polyccm deletes every Service and nothing
// is left, not even a node rule in the untagged group.
func TestAWSMigrationFromRealUpstream(t *testing.T) {
	for _, managed := range []bool{false, true} {
		t.Run(map[bool]string{false: "NLBWithoutSecurityGroup", true: "NLBSecurityGroupModeManaged"}[managed], func(t *testing.T) {
			testAWSRealUpstreamMigration(t, managed)
		})
	}
}

func testAWSRealUpstreamMigration(t *testing.T, managed bool) {
	ctx := context.Background()
	servicesOff := "nodes: true\nnodeLifecycle: true\nservices: false"
	e := newAWSEnv(t, func(s *harness.Settings) {
		// polyccm's own default type, which must be upstream's (classic).
		s.DriverBlock = strings.Replace(s.DriverBlock, "\nloadBalancer:\n  defaultType: nlb", "", 1)
		s.Controllers = servicesOff
	})
	// Upstream logs an error (and retries) when a group it just made
	// reads as missing; the test wants its log clean.
	e.fake.SetConsistencyDelay(0)
	tagged := e.fake.AddSecurityGroup(fakeaws.SecurityGroup{Name: "e2e-nodes", Description: "e2e nodes", VPCID: e.vpc.ID,
		Tags: map[string]string{aws.TagClusterPrefix + "e2e": aws.TagOwned}})
	only := e.fake.AddSecurityGroup(fakeaws.SecurityGroup{Name: "e2e-legacy-nodes", Description: "nodes from before the tag", VPCID: e.vpc.ID})
	var ins []fakeaws.Instance
	addNode := func(i int, group string) {
		t.Helper()
		in := e.fake.AddInstance(fakeaws.Instance{SubnetID: e.subnets[awsZones[i%2]].ID, InstanceType: "m6i.large",
			PrivateDNSName: e.nodeName(i) + ".ec2.internal", SecurityGroupIDs: []string{group},
			// Upstream looks for its nodes' instances by the cluster tag.
			Tags: map[string]string{aws.TagClusterPrefix + "e2e": aws.TagOwned}})
		ins = append(ins, in)
		e.register(in.PrivateDNSName, "")
		e.waitInitialized([]string{in.PrivateDNSName}, 30*time.Second)
	}
	addNode(0, tagged.ID)
	addNode(1, only.ID)

	startUpstream := func() *upstream.AWS {
		return upstream.StartAWS(t, upstream.AWSOptions{Cluster: cp.Cluster, Account: e.acct, ClusterID: "e2e", VPCID: e.vpc.ID,
			NLBSecurityGroups: managed, Dir: t.TempDir()})
	}
	ns := map[bool]string{false: "up-migration", true: "up-migration-managed"}[managed]
	nlb := map[string]string{"service.beta.kubernetes.io/aws-load-balancer-type": "nlb"}
	up := startUpstream()
	nsService(t, ns, "web", nil, nil, tcp(80), tcp(443))
	nsService(t, ns, "api", nlb, func(s *v1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"203.0.113.0/24"} }, tcp(80), tcp(443))
	nsService(t, ns, "front", nlb, nil, tcp(8080))
	hostnames := map[string]string{}
	for _, name := range []string{"web", "api", "front"} {
		hostnames[name] = up.WaitForIngress(t, ns, name, 3*time.Minute).Hostname
	}
	up.Stop(t)
	if errs := up.ErrorLines(); len(errs) > 0 {
		t.Fatalf("upstream logged errors building the starting point:\n%s", strings.Join(errs, "\n"))
	}
	rules := func(id string) []string { return sgRuleStrings(mustSG(t, e, id).Ingress) }
	upRules := map[string][]string{tagged.ID: rules(tagged.ID), only.ID: rules(only.ID)}
	for id, r := range upRules {
		if !slices.ContainsFunc(r, func(s string) bool {
			return strings.Contains(s, "kubernetes.io/rule/nlb/") || strings.Contains(s, " from sg-")
		}) {
			var all []string
			for _, sg := range e.fake.SecurityGroups() {
				all = append(all, fmt.Sprintf("%s %s %v %q", sg.ID, sg.Name, sg.Tags, sgRuleStrings(sg.Ingress)))
			}
			for _, lb := range e.fake.ClassicLoadBalancers() {
				all = append(all, fmt.Sprintf("classic %s %v sgs %v", lb.Name, lb.Instances, lb.SecurityGroups))
			}
			for _, name := range []string{"web", "api"} {
				list, _ := cp.Admin.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
				for _, ev := range list.Items {
					all = append(all, fmt.Sprintf("event %s %s %s %s: %s", name, ev.Source.Component, ev.ReportingController, ev.Reason, ev.Message))
				}
			}
			for _, in := range e.fake.Instances() {
				all = append(all, fmt.Sprintf("%s %v", in.ID, in.SecurityGroupIDs))
			}
			t.Fatalf("upstream wrote no node rule into group %s: %q (tagged %s: %q; only %s: %q)\n%s", id, r, tagged.ID, upRules[tagged.ID], only.ID, upRules[only.ID], strings.Join(all, "\n"))
		}
	}
	before := e.fake.Stats()
	t.Logf("upstream's state: %d Classic, %d NLBs, %d target groups, %d listeners, %d security groups",
		before.ClassicLoadBalancers.Live, before.LoadBalancers.Live, before.TargetGroups.Live, before.Listeners.Live, before.SecurityGroups.Live)

	// The switch to polyccm: the plan first, then the service controller.
	servicesOn := func(on bool) {
		t.Helper()
		if _, err := e.ccm.Stop(15 * time.Second); err != nil {
			t.Fatal(err)
		}
		_ = cp.Admin.CoordinationV1().Leases("kube-system").Delete(ctx, "cloud-controller-manager", metav1.DeleteOptions{})
		from, to := "\n  services: false\n", "\n  services: true\n"
		if !on {
			from, to = to, from
		}
		e.opts.Config = strings.Replace(e.opts.Config, from, to, 1)
		if !strings.Contains(e.opts.Config, to) {
			t.Fatalf("could not set the service controller in:\n%s", e.opts.Config)
		}
	}
	servicesOn(true)
	var svcs []*v1.Service
	for _, name := range []string{"web", "api", "front"} {
		svcs = append(svcs, nsSvc(t, ns, name))
	}
	checkAdopted(t, e.plan(t, "plan", e.opts.Config), svcs)
	e.restart()
	for _, s := range svcs {
		waitEnsured(t, ns, s.Name, 0, 2*time.Minute)
	}
	created := func(since fakeaws.Stats) map[string]int {
		st := e.fake.Stats()
		return map[string]int{
			"classic": st.ClassicLoadBalancers.Created - since.ClassicLoadBalancers.Created,
			"nlbs":    st.LoadBalancers.Created - since.LoadBalancers.Created,
			"tgs":     st.TargetGroups.Created - since.TargetGroups.Created,
			"lis":     st.Listeners.Created - since.Listeners.Created,
			"sgs":     st.SecurityGroups.Created - since.SecurityGroups.Created,
		}
	}
	none := map[string]int{"classic": 0, "nlbs": 0, "tgs": 0, "lis": 0, "sgs": 0}
	keepsHostnames := func(when string) {
		t.Helper()
		for name, h := range hostnames {
			s := nsSvc(t, ns, name)
			if ing := s.Status.LoadBalancer.Ingress; len(ing) != 1 || ing[0].Hostname != h {
				t.Errorf("%s: %s/%s publishes %+v, want %s", when, ns, name, ing, h)
			}
		}
	}
	if got := created(before); !maps.Equal(got, none) {
		t.Errorf("the switch to polyccm created %v", got)
	}
	keepsHostnames("after the switch to polyccm")
	for id, r := range upRules {
		if got := rules(id); !slices.Equal(got, r) {
			t.Errorf("after the switch, node group %s lets in\n %q\nwant upstream's\n %q", id, got, r)
		}
	}
	for _, s := range svcs {
		for _, ev := range serviceEvents(t, ns, s.Name) {
			if strings.HasPrefix(ev, "Warning") {
				t.Errorf("%s/%s: %s", ns, s.Name, ev)
			}
		}
	}

	// polyccm's own work: a port added, a Service made, one deleted.
	front := nsSvc(t, ns, "front")
	front.Spec.Ports = append(front.Spec.Ports, v1.ServicePort{Name: "p9090", Port: 9090, Protocol: v1.ProtocolTCP})
	if _, err := cp.Admin.CoreV1().Services(ns).Update(ctx, front, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	nsService(t, ns, "made", nlb, nil, tcp(7070))
	hostnames["made"] = waitNSIngress(t, ns, "made", 2*time.Minute).Status.LoadBalancer.Ingress[0].Hostname
	deleteNSServiceAndWait(t, ns, "api", 2*time.Minute)
	delete(hostnames, "api")
	eventually(t, 2*time.Minute, "front's new listener", func() (bool, string) {
		n := 0
		for _, l := range e.fake.Listeners() {
			if l.Port == 9090 {
				n++
			}
		}
		return n == 1, fmt.Sprintf("%d listeners on 9090", n)
	})

	// The switch back: upstream adopts what polyccm leaves.
	servicesOn(false)
	e.restart()
	ensured := map[string]int{}
	for name := range hostnames {
		ensured[name] = countEnsured(t, ns, name)
	}
	back := e.fake.Stats()
	up = startUpstream()
	for name, n := range ensured {
		eventually(t, 3*time.Minute, ns+"/"+name+" ensured by upstream", func() (bool, string) {
			k := countEnsured(t, ns, name)
			return k > n, fmt.Sprintf("%d EnsuredLoadBalancer events, was %d", k, n)
		})
	}
	if got := created(back); !maps.Equal(got, none) {
		t.Errorf("the switch back to upstream created %v", got)
	}
	keepsHostnames("after the switch back to upstream")
	up.Stop(t)
	if errs := up.ErrorLines(); len(errs) > 0 {
		t.Errorf("upstream logged errors taking polyccm's state over:\n%s", strings.Join(errs, "\n"))
	}

	// polyccm again, and every Service goes: nothing is left.
	servicesOn(true)
	e.restart()
	for name := range hostnames {
		deleteNSServiceAndWait(t, ns, name, 3*time.Minute)
	}
	if n := len(e.fake.ClassicLoadBalancers()) + len(e.fake.LoadBalancers()) + len(e.fake.TargetGroups()) + len(e.fake.Listeners()); n != 0 {
		t.Errorf("%d load balancers, target groups and listeners left", n)
	}
	for _, sg := range e.fake.SecurityGroups() {
		if sg.VPCID == e.vpc.ID && sg.ID != tagged.ID && sg.ID != only.ID && sg.Name != "default" {
			t.Errorf("security group %s (%s) left", sg.Name, sg.ID)
		}
	}
	for _, id := range []string{tagged.ID, only.ID} {
		for _, r := range rules(id) {
			if strings.Contains(r, "kubernetes.io/rule/") || strings.Contains(r, " from sg-") {
				t.Errorf("node group %s still lets in: %s", id, r)
			}
		}
	}
}

// countEnsured counts the EnsuredLoadBalancer events on a Service.
func countEnsured(t *testing.T, ns, name string) int {
	t.Helper()
	list, err := cp.Admin.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",reason=EnsuredLoadBalancer"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range list.Items {
		n += max(int(ev.Count), 1)
	}
	return n
}
