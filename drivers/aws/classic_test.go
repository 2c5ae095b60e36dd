package aws_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/annotations"
	"github.com/polyccm/polyccm/core/loadbalancers"
	awsccm "github.com/polyccm/polyccm/drivers/aws"
	fakeaws "github.com/polyccm/polyccm/test/fakecloud/aws"
)

// classicWorld is a world whose nodes share one security group tagged for
// the cluster, with the driver built for Classic Load Balancers by
// default, as upstream.
type classicWorld struct {
	*env
	nodeSG  fakeaws.SecurityGroup
	extraSG string // an operator's group, where a test makes one
}

func newClassic(t *testing.T) *classicWorld {
	t.Helper()
	w := newWorld(t)
	sg := w.fake.AddSecurityGroup(fakeaws.SecurityGroup{Name: "nodes", Description: "cluster nodes", VPCID: w.vpc.ID,
		Tags: map[string]string{clusterTag: awsccm.TagOwned}})
	cfg := w.config()
	cfg.LoadBalancer.DefaultType = awsccm.TypeClassic
	return &classicWorld{env: w.env(cfg), nodeSG: sg}
}

// node adds an instance in the node group in zone a or b.
func (c *classicWorld) node(i int) *v1.Node {
	in := c.fake.AddInstance(fakeaws.Instance{SubnetID: c.private[[]string{zoneA, zoneB}[i%2]].ID, SecurityGroupIDs: []string{c.nodeSG.ID}})
	return node(in, nil)
}

func (c *classicWorld) elb() fakeaws.ClassicLoadBalancer {
	c.t.Helper()
	lb, ok := c.fake.ClassicLoadBalancer(nlbName)
	if !ok {
		c.t.Fatalf("no Classic Load Balancer %s; have %v", nlbName, c.fake.ClassicLoadBalancers())
	}
	return lb
}

// letsIn lists the groups a node group lets in with every protocol.
func (c *classicWorld) letsIn(id string) []string {
	sg, ok := c.fake.SecurityGroup(id)
	if !ok {
		c.t.Fatalf("no security group %s", id)
	}
	var out []string
	for _, p := range sg.Ingress {
		for _, g := range p.Groups {
			out = append(out, p.Protocol+" from "+g.GroupID)
		}
	}
	slices.Sort(out)
	return out
}

func listenerStrings(lb fakeaws.ClassicLoadBalancer) []string {
	var out []string
	for _, l := range lb.Listeners {
		s := l.Protocol + ":" + itoa(l.LoadBalancerPort) + "->" + l.InstanceProtocol + ":" + itoa(l.InstancePort)
		if l.SSLCertificateID != "" {
			s += " " + l.SSLCertificateID
		}
		if len(l.PolicyNames) > 0 {
			s += " " + strings.Join(l.PolicyNames, ",")
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

func instanceIDs(nodes []*v1.Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Spec.ProviderID[strings.LastIndex(n.Spec.ProviderID, "/")+1:])
	}
	slices.Sort(out)
	return out
}

// converged asserts that one more sync changes nothing in AWS.
func (c *classicWorld) converged(svc *v1.Service, nodes []*v1.Node) {
	c.t.Helper()
	before := c.mutating()
	c.ensure(svc, nodes)
	if n := c.mutating() - before; n != 0 {
		c.t.Errorf("a converged sync made %d changing calls: %v", n, c.fake.Faults().Calls())
	}
}

// A Service without a type gets the Classic Load Balancer upstream makes:
// a listener per port, upstream's health check and attributes, its nodes
// registered, the k8s-elb-<name> group letting the source ranges in, and
// the nodes' group letting that group in. A second sync changes nothing.
func TestClassicCreate(t *testing.T) {
	c := newClassic(t)
	nodes := []*v1.Node{c.node(0), c.node(1)}
	svc := service(nil, tcp("http", 80, 30080), tcp("https", 443, 30443))
	st := c.ensure(svc, nodes)
	lb := c.elb()
	if len(st.Ingress) != 1 || st.Ingress[0].Hostname != lb.DNSName || !strings.HasSuffix(lb.DNSName, ".elb.amazonaws.com") {
		t.Errorf("status %+v, want the DNS name %s", st, lb.DNSName)
	}
	if got, want := listenerStrings(lb), []string{"TCP:443->TCP:30443", "TCP:80->TCP:30080"}; !slices.Equal(got, want) {
		t.Errorf("listeners %v, want %v", got, want)
	}
	if hc := lb.HealthCheck; hc != (fakeaws.ClassicHealthCheck{Target: "TCP:30080", Interval: 10, Timeout: 5, HealthyThreshold: 2, UnhealthyThreshold: 6}) {
		t.Errorf("health check %+v", hc)
	}
	if at := lb.Attributes; at.IdleTimeout != 60 || at.CrossZoneLoadBalancing || at.ConnectionDraining || at.AccessLog {
		t.Errorf("attributes %+v", at)
	}
	if got := sorted(lb.Instances...); !slices.Equal(got, instanceIDs(nodes)) {
		t.Errorf("instances %v, want %v", got, instanceIDs(nodes))
	}
	if lb.Scheme != "internet-facing" || !slices.Equal(sorted(lb.Subnets...), sorted(c.public[zoneA].ID, c.public[zoneB].ID)) {
		t.Errorf("scheme %s subnets %v, want internet-facing in the public subnets", lb.Scheme, lb.Subnets)
	}
	if lb.Tags[clusterTag] != awsccm.TagOwned || lb.Tags[awsccm.TagServiceName] != "shop/web" {
		t.Errorf("tags %v", lb.Tags)
	}
	if len(lb.SecurityGroups) != 1 {
		t.Fatalf("security groups %v, want the managed one", lb.SecurityGroups)
	}
	sg, _ := c.fake.SecurityGroup(lb.SecurityGroups[0])
	if sg.Name != "k8s-elb-"+nlbName || sg.Description != "Security group for Kubernetes ELB "+nlbName+" (shop/web)" || sg.Tags[clusterTag] != awsccm.TagOwned {
		t.Errorf("group %s %q tags %v", sg.Name, sg.Description, sg.Tags)
	}
	if got, want := ingress(sg), []string{"icmp/3-4/0.0.0.0/0", "tcp/443/0.0.0.0/0", "tcp/80/0.0.0.0/0"}; !slices.Equal(got, want) {
		t.Errorf("group ingress %v, want %v", got, want)
	}
	if got, want := c.letsIn(c.nodeSG.ID), []string{"-1 from " + sg.ID}; !slices.Equal(got, want) {
		t.Errorf("node group lets in %v, want %v", got, want)
	}
	if c.live()["loadBalancers"] != 0 {
		t.Errorf("an NLB was made too: %v", c.live())
	}
	c.converged(svc, nodes)
	if _, ok, err := c.lbs.GetLoadBalancer(ctx(t), cluster, svc); err != nil || !ok {
		t.Errorf("GetLoadBalancer = %v, %v", ok, err)
	}
}

// Ports and nodes change: listeners follow the ports (a changed node port
// replaces its listener), the group's ingress follows them, and nodes are
// registered and deregistered.
func TestClassicPortsAndNodes(t *testing.T) {
	c := newClassic(t)
	nodes := []*v1.Node{c.node(0), c.node(1)}
	svc := service(nil, tcp("http", 80, 30080), tcp("https", 443, 30443))
	c.ensure(svc, nodes)

	svc = service(nil, tcp("http", 80, 30081), tcp("alt", 8080, 30880))
	nodes = []*v1.Node{nodes[1], c.node(2), c.node(3)}
	reg, dereg := c.calls("RegisterInstances"), c.calls("DeregisterInstances")
	c.ensure(svc, nodes)
	lb := c.elb()
	if got, want := listenerStrings(lb), []string{"TCP:80->TCP:30081", "TCP:8080->TCP:30880"}; !slices.Equal(got, want) {
		t.Errorf("listeners %v, want %v", got, want)
	}
	if got := sorted(lb.Instances...); !slices.Equal(got, instanceIDs(nodes)) {
		t.Errorf("instances %v, want %v", got, instanceIDs(nodes))
	}
	if c.calls("RegisterInstances")-reg != 1 || c.calls("DeregisterInstances")-dereg != 1 {
		t.Errorf("%d register and %d deregister calls, want one each", c.calls("RegisterInstances")-reg, c.calls("DeregisterInstances")-dereg)
	}
	if lb.HealthCheck.Target != "TCP:30081" {
		t.Errorf("health check %s, want the first port's new node port", lb.HealthCheck.Target)
	}
	sg, _ := c.fake.SecurityGroup(lb.SecurityGroups[0])
	if got, want := ingress(sg), []string{"icmp/3-4/0.0.0.0/0", "tcp/80/0.0.0.0/0", "tcp/8080/0.0.0.0/0"}; !slices.Equal(got, want) {
		t.Errorf("group ingress %v, want %v", got, want)
	}
	c.converged(svc, nodes)
	// A node sync (no creates) follows the nodes too.
	nodes = nodes[:1]
	if err := c.lbs.UpdateLoadBalancer(ctx(t), cluster, svc, nodes); err != nil {
		t.Fatal(err)
	}
	if got := c.elb().Instances; !slices.Equal(got, instanceIDs(nodes)) {
		t.Errorf("after UpdateLoadBalancer instances %v, want %v", got, instanceIDs(nodes))
	}
}

// Deleting the Service deletes the load balancer, takes its group out of
// the nodes' group and deletes the group once its interfaces are gone
// (a wait before that): nothing of it is left.
func TestClassicDelete(t *testing.T) {
	c := newClassic(t)
	c.fake.SetDependencyLinger(300 * time.Millisecond)
	nodes := []*v1.Node{c.node(0)}
	svc := service(nil)
	svc.Status.LoadBalancer = *c.ensure(svc, nodes)
	err := c.lbs.EnsureLoadBalancerDeleted(ctx(t), cluster, svc)
	var pending *loadbalancers.PendingError
	if !errors.As(err, &pending) || pending.RetryAfter() != awsccm.DeletePollInterval {
		t.Fatalf("delete = %v (%T), want a wait while the interfaces hold the group", err, err)
	}
	if len(c.fake.ClassicLoadBalancers()) != 0 {
		t.Error("the load balancer is still there")
	}
	if got := c.letsIn(c.nodeSG.ID); len(got) != 0 {
		t.Errorf("the node group still lets in %v", got)
	}
	time.Sleep(400 * time.Millisecond)
	if err := c.lbs.EnsureLoadBalancerDeleted(ctx(t), cluster, svc); err != nil {
		t.Fatal(err)
	}
	for _, sg := range c.fake.SecurityGroups() {
		if sg.ID != c.nodeSG.ID && sg.Name != "default" {
			t.Errorf("security group %s (%s) is left", sg.ID, sg.Name)
		}
	}
	if _, ok, err := c.lbs.GetLoadBalancer(ctx(t), cluster, svc); err != nil || ok {
		t.Errorf("GetLoadBalancer after delete = %v, %v; want none", ok, err)
	}
}

// A Service's type decides the kind, whatever the default; the NLB keeps
// working beside a Classic one.
func TestClassicTypeAnnotation(t *testing.T) {
	c := newClassic(t)
	nodes := []*v1.Node{c.node(0)}
	c.ensure(service(map[string]string{awsccm.AnnType: "nlb"}), nodes)
	if c.live()["loadBalancers"] != 1 || len(c.fake.ClassicLoadBalancers()) != 0 {
		t.Fatalf("type nlb made %v and %d Classic", c.live(), len(c.fake.ClassicLoadBalancers()))
	}
	w := newWorld(t)
	e := w.env(w.config()) // default nlb
	in := w.instance(zoneA)
	e.ensure(service(map[string]string{awsccm.AnnType: "classic"}), []*v1.Node{node(in, nil)})
	if len(w.fake.ClassicLoadBalancers()) != 1 || w.live()["loadBalancers"] != 0 {
		t.Errorf("type classic made %v and %d Classic", w.live(), len(w.fake.ClassicLoadBalancers()))
	}
}

// Changing the kind of an existing load balancer is refused, changing
// nothing.
func TestClassicKindChangeRefused(t *testing.T) {
	c := newClassic(t)
	nodes := []*v1.Node{c.node(0)}
	svc := service(nil)
	svc.Status.LoadBalancer = *c.ensure(svc, nodes)
	svc.Annotations = map[string]string{awsccm.AnnType: "nlb"}
	before := c.mutating()
	_, err := c.lbs.EnsureLoadBalancer(ctx(t), cluster, svc, nodes)
	invalid(t, err, awsccm.AnnType, "cannot become a Network Load Balancer")
	if c.mutating() != before {
		t.Error("a refused kind change changed AWS")
	}
}

// A key only NLBs use is said once and ignored; the rest applies. The
// reverse holds on an NLB.
func TestClassicOtherTypeAnnotationsWarn(t *testing.T) {
	c := newClassic(t)
	nodes := []*v1.Node{c.node(0)}
	c.ensure(service(map[string]string{
		awsccm.AnnTargetGroupAttributes: "not valid at all",
		awsccm.AnnConnectionIdleTimeout: "120",
	}), nodes)
	if got := c.elb().Attributes.IdleTimeout; got != 120 {
		t.Errorf("idle timeout %d, want the rest applied", got)
	}
	c.wantOneWarning(awsccm.AnnTargetGroupAttributes, "Network Load Balancers only")

	svc := service(map[string]string{awsccm.AnnType: "nlb", awsccm.AnnConnectionDrainingEnabled: "true", awsccm.AnnCrossZone: "true"})
	svc.UID = "11111111-2222-3333-4444-555555555555"
	c.ensure(svc, nodes)
	if c.live()["loadBalancers"] != 1 {
		t.Errorf("no NLB: %v", c.live())
	}
	c.wantOneWarning(awsccm.AnnConnectionDrainingEnabled, "Classic Load Balancers only")
}

func (c *classicWorld) wantOneWarning(key, frag string) {
	c.t.Helper()
	n := 0
	for _, ev := range c.events() {
		if strings.Contains(ev, key) {
			n++
			if !strings.HasPrefix(ev, v1.EventTypeWarning+" "+annotations.ReasonIgnored) || !strings.Contains(ev, frag) {
				c.t.Errorf("event %q, want a warning saying %q", ev, frag)
			}
		}
	}
	if n != 1 {
		c.t.Errorf("%d events name %s, want one", n, key)
	}
}

// An invalid value leaves the load balancer as it is, with a Warning
// event.
func TestClassicInvalidValueChangesNothing(t *testing.T) {
	c := newClassic(t)
	nodes := []*v1.Node{c.node(0)}
	c.ensure(service(nil), nodes)
	c.events()
	before := c.mutating()
	_, err := c.lbs.EnsureLoadBalancer(ctx(t), cluster, service(map[string]string{
		awsccm.AnnConnectionIdleTimeout: "forever", awsccm.AnnCrossZone: "true",
	}), []*v1.Node{nodes[0], c.node(1)})
	invalid(t, err, awsccm.AnnConnectionIdleTimeout, "not valid")
	if c.mutating() != before {
		t.Error("an invalid Service changed AWS")
	}
	if c.elb().Attributes.CrossZoneLoadBalancing || len(c.elb().Instances) != 1 {
		t.Error("the load balancer changed")
	}
	evs := c.events()
	if len(evs) != 1 || !strings.Contains(evs[0], annotations.Reason) {
		t.Errorf("events %q, want one %s", evs, annotations.Reason)
	}
}

const testCert = "arn:aws:acm:eu-west-1:123456789012:certificate/abc"

// Each annotation is applied as upstream applies it, and a second sync
// changes nothing.
func TestClassicAnnotations(t *testing.T) {
	const extra = "EXTRA" // the operator's group, made per case
	cases := []struct {
		name  string
		ann   map[string]string
		local bool
		check func(t *testing.T, c *classicWorld, lb fakeaws.ClassicLoadBalancer)
	}{
		{name: "ssl", ann: map[string]string{awsccm.AnnSSLCert: testCert, awsccm.AnnSSLPorts: "443", awsccm.AnnSSLNegotiationPolicy: "ELBSecurityPolicy-TLS-1-2-2017-01"},
			check: func(t *testing.T, c *classicWorld, lb fakeaws.ClassicLoadBalancer) {
				want := []string{"SSL:443->TCP:30443 " + testCert + " k8s-SSLNegotiationPolicy-ELBSecurityPolicy-TLS-1-2-2017-01", "TCP:80->TCP:30080"}
				if got := listenerStrings(lb); !slices.Equal(got, want) {
					t.Errorf("listeners %v, want %v", got, want)
				}
			}},
		{name: "backend https", ann: map[string]string{awsccm.AnnSSLCert: testCert, awsccm.AnnSSLPorts: "https", awsccm.AnnBackendProtocol: "https"},
			check: func(t *testing.T, c *classicWorld, lb fakeaws.ClassicLoadBalancer) {
				want := []string{"HTTPS:443->HTTPS:30443 " + testCert, "TCP:80->TCP:30080"}
				if got := listenerStrings(lb); !slices.Equal(got, want) || lb.HealthCheck.Target != "SSL:30080" {
					t.Errorf("listeners %v health %s, want %v and SSL:30080", got, lb.HealthCheck.Target, want)
				}
			}},
		{name: "backend http", ann: map[string]string{awsccm.AnnBackendProtocol: "http"},
			check: func(t *testing.T, c *classicWorld, lb fakeaws.ClassicLoadBalancer) {
				if got, want := listenerStrings(lb), []string{"HTTP:443->HTTP:30443", "HTTP:80->HTTP:30080"}; !slices.Equal(got, want) {
					t.Errorf("listeners %v, want %v", got, want)
				}
			}},
		{name: "proxy protocol", ann: map[string]string{awsccm.AnnProxyProtocol: "*"},
			check: func(t *testing.T, c *classicWorld, lb fakeaws.ClassicLoadBalancer) {
				if !slices.ContainsFunc(lb.Policies, func(p fakeaws.ClassicPolicy) bool {
					return p.Name == "k8s-proxyprotocol-enabled" && p.TypeName == "ProxyProtocolPolicyType"
				}) {
					t.Errorf("policies %+v", lb.Policies)
				}
				for _, port := range []int32{30080, 30443} {
					if !slices.Equal(lb.BackendPolicies[port], []string{"k8s-proxyprotocol-enabled"}) {
						t.Errorf("backend policies %v", lb.BackendPolicies)
					}
				}
			}},
		{name: "local traffic", local: true,
			check: func(t *testing.T, c *classicWorld, lb fakeaws.ClassicLoadBalancer) {
				if lb.HealthCheck.Target != "HTTP:31999/healthz" {
					t.Errorf("health check %s", lb.HealthCheck.Target)
				}
			}},
		{name: "health check", ann: map[string]string{awsccm.AnnHealthCheckProtocol: "http", awsccm.AnnHealthCheckPort: "8081", awsccm.AnnHealthCheckPath: "/ready",
			awsccm.AnnHealthCheckInterval: "30", awsccm.AnnHealthCheckTimeout: "7", awsccm.AnnHealthyThreshold: "3", awsccm.AnnUnhealthyThreshold: "4"},
			check: func(t *testing.T, c *classicWorld, lb fakeaws.ClassicLoadBalancer) {
				if hc := lb.HealthCheck; hc != (fakeaws.ClassicHealthCheck{Target: "HTTP:8081/ready", Interval: 30, Timeout: 7, HealthyThreshold: 3, UnhealthyThreshold: 4}) {
					t.Errorf("health check %+v", hc)
				}
			}},
		{name: "attributes", ann: map[string]string{awsccm.AnnConnectionDrainingEnabled: "true", awsccm.AnnConnectionDrainingTimeout: "120", awsccm.AnnConnectionIdleTimeout: "300",
			awsccm.AnnCrossZone: "true", awsccm.AnnAccessLogEnabled: "true", awsccm.AnnAccessLogEmitInterval: "5", awsccm.AnnAccessLogS3BucketName: "logs-bucket", awsccm.AnnAccessLogS3BucketPrefix: "shop"},
			check: func(t *testing.T, c *classicWorld, lb fakeaws.ClassicLoadBalancer) {
				at := lb.Attributes
				if !at.ConnectionDraining || at.ConnectionDrainingTimeout != 120 || at.IdleTimeout != 300 || !at.CrossZoneLoadBalancing ||
					!at.AccessLog || at.AccessLogEmitInterval != 5 || at.AccessLogS3BucketName != "logs-bucket" || at.AccessLogS3BucketPrefix != "shop" {
					t.Errorf("attributes %+v", at)
				}
			}},
		{name: "extra security groups", ann: map[string]string{awsccm.AnnExtraSecurityGroups: extra},
			check: func(t *testing.T, c *classicWorld, lb fakeaws.ClassicLoadBalancer) {
				if len(lb.SecurityGroups) != 2 || lb.SecurityGroups[1] != c.extraSG {
					t.Errorf("groups %v, want the managed one then %s", lb.SecurityGroups, c.extraSG)
				}
			}},
		{name: "own security groups", ann: map[string]string{awsccm.AnnSecurityGroups: extra},
			check: func(t *testing.T, c *classicWorld, lb fakeaws.ClassicLoadBalancer) {
				if !slices.Equal(lb.SecurityGroups, []string{c.extraSG}) {
					t.Errorf("groups %v, want only %s", lb.SecurityGroups, c.extraSG)
				}
				for _, sg := range c.fake.SecurityGroups() {
					if strings.HasPrefix(sg.Name, "k8s-elb-") {
						t.Errorf("a managed group %s was made", sg.Name)
					}
				}
				if got := c.letsIn(c.nodeSG.ID); !slices.Equal(got, []string{"-1 from " + c.extraSG}) {
					t.Errorf("node group lets in %v", got)
				}
			}},
		{name: "internal", ann: map[string]string{awsccm.AnnInternal: "true"},
			check: func(t *testing.T, c *classicWorld, lb fakeaws.ClassicLoadBalancer) {
				if lb.Scheme != "internal" || !slices.Equal(sorted(lb.Subnets...), sorted(c.private[zoneA].ID, c.private[zoneB].ID)) {
					t.Errorf("scheme %s subnets %v", lb.Scheme, lb.Subnets)
				}
			}},
		{name: "subnets", ann: map[string]string{awsccm.AnnSubnets: "spare-c"},
			check: func(t *testing.T, c *classicWorld, lb fakeaws.ClassicLoadBalancer) {
				if !slices.Equal(lb.Subnets, []string{c.spare.ID}) {
					t.Errorf("subnets %v", lb.Subnets)
				}
			}},
		{name: "tags", ann: map[string]string{awsccm.AnnAdditionalResourceTags: "team=shop"},
			check: func(t *testing.T, c *classicWorld, lb fakeaws.ClassicLoadBalancer) {
				sg, _ := c.fake.SecurityGroup(lb.SecurityGroups[0])
				if lb.Tags["team"] != "shop" || sg.Tags["team"] != "shop" {
					t.Errorf("tags %v and %v", lb.Tags, sg.Tags)
				}
			}},
		{name: "target node labels", ann: map[string]string{awsccm.AnnTargetNodeLabels: "role=edge"},
			check: func(t *testing.T, c *classicWorld, lb fakeaws.ClassicLoadBalancer) {
				if len(lb.Instances) != 1 {
					t.Errorf("instances %v, want the labelled node only", lb.Instances)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newClassic(t)
			c.extraSG = c.fake.AddSecurityGroup(fakeaws.SecurityGroup{Name: "mine", Description: "mine", VPCID: c.vpc.ID}).ID
			ann := map[string]string{}
			for k, v := range tc.ann {
				ann[k] = strings.ReplaceAll(v, extra, c.extraSG)
			}
			nodes := []*v1.Node{c.node(0), c.node(1)}
			nodes[0].Labels = map[string]string{"role": "edge"}
			svc := service(ann, tcp("http", 80, 30080), tcp("https", 443, 30443))
			if tc.local {
				svc.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
				svc.Spec.HealthCheckNodePort = 31999
			}
			c.ensure(svc, nodes)
			tc.check(t, c, c.elb())
			c.converged(svc, nodes)
		})
	}
}
