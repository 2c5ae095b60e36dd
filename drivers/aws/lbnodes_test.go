package aws_test

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbctypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/loadbalancers"
	awsccm "github.com/polyccm/polyccm/drivers/aws"
	fakeaws "github.com/polyccm/polyccm/test/fakecloud/aws"
)

// snapshot is the fake's call counts at one moment.
type snapshot map[string]int

func (w *world) snapshot() snapshot { return maps.Clone(w.fake.Faults().Calls()) }

// since is the calls made after s, by endpoint, and their total.
func (w *world) since(s snapshot) (map[string]int, int) {
	out, total := map[string]int{}, 0
	for ep, n := range w.fake.Faults().Calls() {
		if d := n - s[ep]; d > 0 {
			out[ep], total = d, total+d
		}
	}
	return out, total
}

// update runs UpdateLoadBalancer (as the service controller's node sync,
// through Rules) and returns the calls it made.
func (e *env) update(svc *v1.Service, nodes []*v1.Node) (map[string]int, int) {
	e.t.Helper()
	s := e.snapshot()
	if err := e.lbs.UpdateLoadBalancer(ctx(e.t), cluster, svc, nodes); err != nil {
		e.t.Fatalf("UpdateLoadBalancer: %v", err)
	}
	return e.since(s)
}

// newClassicBench is newClassic as the benchmark runs it: the operator
// manages the nodes' security groups.
func newClassicBench(t *testing.T) *classicWorld {
	t.Helper()
	w := newWorld(t)
	cfg := w.config()
	cfg.LoadBalancer.DefaultType = awsccm.TypeClassic
	cfg.DisableSecurityGroupIngress = true
	return &classicWorld{env: w.env(cfg)}
}

func (c *classicWorld) wantInstances(nodes []*v1.Node) {
	c.t.Helper()
	if got, want := sorted(c.elb().Instances...), instanceIDs(nodes); !slices.Equal(got, want) {
		c.t.Errorf("instances %v, want %v", got, want)
	}
}

// Nodes joining and leaving an existing Classic Load Balancer cost one
// read and one (de)registration, whatever else the load balancer has; a
// terminated instance leaves by itself, as on EC2.
func TestClassicNodeSyncCalls(t *testing.T) {
	c := newClassicBench(t)
	var nodes []*v1.Node
	for i := range 4 {
		in := c.fake.AddInstance(fakeaws.Instance{SubnetID: c.private[[]string{zoneA, zoneB}[i%2]].ID})
		nodes = append(nodes, node(in, nil))
	}
	svc := service(map[string]string{awsccm.AnnProxyProtocol: "*", awsccm.AnnConnectionDrainingEnabled: "true"},
		tcp("http", 80, 30080), tcp("https", 443, 30443))
	c.ensure(svc, nodes)
	c.wantInstances(nodes)

	fresh := func() *v1.Node {
		return node(c.fake.AddInstance(fakeaws.Instance{SubnetID: c.private[zoneA].ID}), nil)
	}
	steps := []struct {
		name  string
		nodes func() []*v1.Node
		want  map[string]int
	}{
		{"two join", func() []*v1.Node { return append(slices.Clone(nodes), fresh(), fresh()) },
			map[string]int{"elb DescribeLoadBalancers": 1, "elb RegisterInstancesWithLoadBalancer": 1}},
		{"one Node deleted, its instance running", func() []*v1.Node { return nodes[1:] },
			map[string]int{"elb DescribeLoadBalancers": 1, "elb DeregisterInstancesFromLoadBalancer": 1}},
		{"one terminated, one joins", func() []*v1.Node {
			id := instanceIDs(nodes[:1])[0]
			if err := c.fake.SetInstanceState(id, fakeaws.InstanceStateTerminated); err != nil {
				t.Fatal(err)
			}
			return append(slices.Clone(nodes[1:]), fresh())
		}, map[string]int{"elb DescribeLoadBalancers": 1, "elb RegisterInstancesWithLoadBalancer": 1}},
		{"no change", func() []*v1.Node { return nodes }, map[string]int{"elb DescribeLoadBalancers": 1}},
	}
	for _, s := range steps {
		nodes = s.nodes()
		got, total := c.update(svc, nodes)
		if !maps.Equal(got, s.want) || total > 2 {
			t.Errorf("%s: calls %v, want %v", s.name, got, s.want)
		}
		c.wantInstances(nodes)
	}
	// What the node syncs left is what a full sync would: it changes
	// nothing.
	c.converged(svc, nodes)
}

// With the node groups managed, new instances are described to see that
// their group lets the load balancer in already; one in a group that
// does not falls back to the full sync, which lets it in.
func TestClassicNodeSyncNodeGroups(t *testing.T) {
	c := newClassic(t)
	nodes := []*v1.Node{c.node(0), c.node(1)}
	svc := service(nil)
	c.ensure(svc, nodes)

	nodes = append(nodes, c.node(2))
	got, _ := c.update(svc, nodes)
	want := map[string]int{"elb DescribeLoadBalancers": 1, "ec2 DescribeInstances": 1, "elb RegisterInstancesWithLoadBalancer": 1}
	if !maps.Equal(got, want) {
		t.Errorf("a node in the same group: calls %v, want %v", got, want)
	}
	c.wantInstances(nodes)

	other := c.fake.AddSecurityGroup(fakeaws.SecurityGroup{Name: "more-nodes", Description: "more nodes", VPCID: c.vpc.ID,
		Tags: map[string]string{clusterTag: awsccm.TagOwned}})
	in := c.fake.AddInstance(fakeaws.Instance{SubnetID: c.private[zoneB].ID, SecurityGroupIDs: []string{other.ID}})
	nodes = append(nodes, node(in, nil))
	got, _ = c.update(svc, nodes)
	if got["elb DescribeTags"] == 0 {
		t.Errorf("a node in another group: calls %v, want a full sync", got)
	}
	c.wantInstances(nodes)
	lbSG := c.elb().SecurityGroups[0]
	if got, want := c.letsIn(other.ID), []string{"-1 from " + lbSG}; !slices.Equal(got, want) {
		t.Errorf("the new node group lets in %v, want %v", got, want)
	}
	c.converged(svc, nodes)
}

// classicSDK is a Classic ELB client on the test's key, for changing the
// load balancer behind the driver's back.
func (w *world) classicSDK() *elb.Client {
	cfg := aws.Config{
		Region:      fakeaws.DefaultRegion,
		Credentials: credentials.NewStaticCredentialsProvider(testKeyID, testSecret, ""),
		Retryer:     func() aws.Retryer { return aws.NopRetryer{} },
	}
	return elb.NewFromConfig(cfg, func(o *elb.Options) { o.BaseEndpoint = aws.String(w.fake.ELBURL()) })
}

// The node sync runs as the full sync whenever it cannot tell that only
// the instances differ, and the result is the full sync's.
func TestClassicNodeSyncFallsBack(t *testing.T) {
	fullSync := func(calls map[string]int) bool { return calls["elb DescribeTags"] > 0 }
	labelled := func(c *classicWorld, i int, pool string) *v1.Node {
		n := c.node(i)
		n.Labels = map[string]string{"pool": pool}
		return n
	}

	t.Run("the target node labels changed", func(t *testing.T) {
		c := newClassic(t)
		nodes := []*v1.Node{labelled(c, 0, "a"), labelled(c, 1, "b"), labelled(c, 2, "b")}
		c.ensure(service(nil), nodes)
		c.wantInstances(nodes)
		// The service controller has not synced the changed Service yet;
		// the node sync gets its newest copy.
		svc := service(map[string]string{awsccm.AnnTargetNodeLabels: "pool=b"})
		if got, _ := c.update(svc, nodes); !fullSync(got) {
			t.Errorf("calls %v, want a full sync", got)
		}
		c.wantInstances(nodes[1:])
		// Synced fully once, the Service's node syncs are node-only again.
		nodes = append(nodes, labelled(c, 3, "b"), labelled(c, 4, "a"))
		if got, _ := c.update(svc, nodes); fullSync(got) {
			t.Errorf("calls %v, want a node-only sync", got)
		}
		c.wantInstances([]*v1.Node{nodes[1], nodes[2], nodes[3]})
		c.converged(svc, nodes)
	})

	t.Run("the load balancer drifted", func(t *testing.T) {
		c := newClassicBench(t)
		nodes := []*v1.Node{c.node(0), c.node(1)}
		svc := service(nil)
		c.ensure(svc, nodes)
		want := c.elb().HealthCheck
		_, err := c.classicSDK().ConfigureHealthCheck(ctx(t), &elb.ConfigureHealthCheckInput{LoadBalancerName: aws.String(nlbName),
			HealthCheck: &elbctypes.HealthCheck{Target: aws.String("HTTP:8080/x"), Interval: aws.Int32(30), Timeout: aws.Int32(5),
				HealthyThreshold: aws.Int32(3), UnhealthyThreshold: aws.Int32(3)}})
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, c.node(2))
		if got, _ := c.update(svc, nodes); !fullSync(got) {
			t.Errorf("calls %v, want a full sync", got)
		}
		if hc := c.elb().HealthCheck; hc != want {
			t.Errorf("health check %+v, want it put back to %+v", hc, want)
		}
		c.wantInstances(nodes)
	})

	t.Run("no full sync in this process", func(t *testing.T) {
		c := newClassicBench(t)
		nodes := []*v1.Node{c.node(0), c.node(1)}
		svc := service(nil)
		c.ensure(svc, nodes)
		cfg := c.config()
		cfg.LoadBalancer.DefaultType = awsccm.TypeClassic
		cfg.DisableSecurityGroupIngress = true
		restarted := &classicWorld{env: c.world.env(cfg)}
		nodes = nodes[:1]
		if got, _ := restarted.update(svc, nodes); !fullSync(got) {
			t.Errorf("calls %v, want a full sync", got)
		}
		restarted.wantInstances(nodes)
	})

	t.Run("the load balancer is gone", func(t *testing.T) {
		c := newClassicBench(t)
		nodes := []*v1.Node{c.node(0)}
		svc := service(nil)
		c.ensure(svc, nodes)
		if _, err := c.classicSDK().DeleteLoadBalancer(ctx(t), &elb.DeleteLoadBalancerInput{LoadBalancerName: aws.String(nlbName)}); err != nil {
			t.Fatal(err)
		}
		before := c.mutating()
		c.update(svc, append(nodes, c.node(1)))
		if n := c.mutating() - before; n != 0 || len(c.fake.ClassicLoadBalancers()) != 0 {
			t.Errorf("the node sync made %d changes and left %d load balancers; it must create none", n, len(c.fake.ClassicLoadBalancers()))
		}
	})
}

// Under a dry run the node-only sync plans and stops, as the full sync
// does (polyccm plan itself runs EnsureLoadBalancer only).
func TestClassicNodeSyncDryRun(t *testing.T) {
	c := newClassicBench(t)
	nodes := []*v1.Node{c.node(0)}
	svc := service(nil)
	c.ensure(svc, nodes)
	dctx, d := loadbalancers.WithDryRun(ctx(t))
	before := c.mutating()
	err := c.lbs.UpdateLoadBalancer(dctx, cluster, svc, append(nodes, c.node(1)))
	if !errors.Is(err, loadbalancers.ErrPlanned) {
		t.Fatalf("err = %v, want ErrPlanned", err)
	}
	if n := c.mutating() - before; n != 0 {
		t.Errorf("%d changing calls under a dry run", n)
	}
	if ch := d.Changes(); len(ch) != 1 || ch[0].Kind != "instances" {
		t.Errorf("dry run recorded %v, want the instances change", ch)
	}
	c.wantInstances(nodes)
}

// An NLB's node sync reads the NLB, its target groups and their targets,
// and (de)registers; a changed Service falls back to the full sync.
func TestNLBNodeSync(t *testing.T) {
	w := newWorld(t)
	cfg := w.config()
	cfg.DisableSecurityGroupIngress = true
	e := w.env(cfg)
	nodes, _ := e.nodes(3)
	svc := service(nil)
	e.ensure(svc, nodes)

	more, _ := e.nodes(1)
	nodes = append(nodes[1:], more...)
	got, total := e.update(svc, nodes)
	want := map[string]int{"elbv2 DescribeLoadBalancers": 1, "elbv2 DescribeTargetGroups": 1, "elbv2 DescribeTargetHealth": 1,
		"elbv2 RegisterTargets": 1, "elbv2 DeregisterTargets": 1}
	if !maps.Equal(got, want) {
		t.Errorf("calls %v (%d), want %v", got, total, want)
	}
	tg := e.targetGroup(e.listeners(e.nlb().ARN)[80])
	if got, want := targetIDs(tg), instanceIDs(nodes); !slices.Equal(got, want) {
		t.Errorf("targets %v, want %v", got, want)
	}

	// Only the labelled Nodes, by the newest Service: the full sync.
	nodes[0].Labels = map[string]string{"pool": "b"}
	svc = service(map[string]string{awsccm.AnnTargetNodeLabels: "pool=b"})
	got, _ = e.update(svc, nodes)
	if got["elbv2 DescribeTags"] == 0 {
		t.Errorf("changed target node labels: calls %v, want a full sync", got)
	}
	tg = e.targetGroup(e.listeners(e.nlb().ARN)[80])
	if got, want := targetIDs(tg), instanceIDs(nodes[:1]); !slices.Equal(got, want) {
		t.Errorf("targets %v, want %v", got, want)
	}
	before := e.mutating()
	e.ensure(svc, nodes)
	if n := e.mutating() - before; n != 0 {
		t.Errorf("a full sync after the node syncs made %d changes", n)
	}
}
