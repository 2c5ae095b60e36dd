package gce

import (
	"fmt"
	"slices"
	"testing"

	"cloud.google.com/go/compute/apiv1/computepb"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/polyccm/polyccm/core/loadbalancers"
)

// The plan on its own: what it changes for what was observed, with no
// cloud behind it (the clients are nil, so a cloud call would panic).

// apiBase is how GCE spells the URLs it returns; polyccm writes short ones.
const apiBase = "https://www.googleapis.com/compute/v1/"

type planCase struct {
	l    *loadBalancers
	env  *environment
	spec *lbSpec
}

// planCID is the cluster ID of the plan tests.
const planCID = "0123456789abcdef"

// newPlanCase is the Service's load balancer spec: internal or external,
// on the given ports.
func newPlanCase(t *testing.T, internal bool, ports ...int32) planCase {
	return newPlanCaseOf(t, internal, nil, ports...)
}

// newPlanCaseOf is newPlanCase with the Service changed by tweak first.
func newPlanCaseOf(t *testing.T, internal bool, tweak func(*v1.Service), ports ...int32) planCase {
	t.Helper()
	l := &loadBalancers{c: &Cloud{}}
	env := &environment{project: "p", networkProject: "p", region: "us-central1", network: "default", subnetwork: "default",
		nodeTags: []string{"node"}, hcRanges: healthCheckRanges}
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "0c6b1f0e-1d2c-4e5f-8a9b-7c6d5e4f3a2b"},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer},
	}
	if internal {
		svc.Annotations = map[string]string{AnnLoadBalancerType: "Internal"}
	}
	for _, p := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, v1.ServicePort{Protocol: v1.ProtocolTCP, Port: p, NodePort: 30000 + p})
	}
	if tweak != nil {
		tweak(svc)
	}
	a := LBAnnotations.Parse(svc)
	spec := desiredLB(svc, a, env.subnetwork, planCID)
	if err := a.Report(nil); err != nil {
		t.Fatal(err)
	}
	spec.targetTags = env.nodeTags // what observe finds
	return planCase{l, env, spec}
}

func (c planCase) plan(byZone map[string][]string, obs *observed) *lbPlan {
	return c.l.plan(nil, c.env, c.spec, byZone, obs)
}

func (c planCase) group(zone string) string { return zone + "/" + instanceGroupName(planCID) }

var threeNodes = map[string][]string{"us-central1-a": {"n-0", "n-1"}, "us-central1-b": {"n-2"}}

// nothing is what a Service without a load balancer shows.
func nothing() *observed {
	return &observed{firewalls: map[string]*computepb.Firewall{}}
}

// converged is what GCE reports of the load balancer c's spec asks for
// over byZone: full URLs, its own spellings.
func (c planCase) converged(byZone map[string][]string) *observed {
	env, spec := c.env, c.spec
	obs := &observed{groups: map[string]*groupState{}, firewalls: map[string]*computepb.Firewall{}}
	rule := &computepb.ForwardingRule{Name: &spec.base, IPProtocol: ptr("TCP"), LoadBalancingScheme: ptr(spec.scheme())}
	rule.IPAddress = ptr("203.0.113.10")
	if spec.internal {
		rule.IPAddress = ptr("10.128.0.9")
	}
	for _, name := range []string{firewallName(spec.base), spec.hcFirewallName()} {
		fw := firewallFor(env, spec, name, rule.GetIPAddress(), false, priorityDefault)
		fw.SourceRanges = slices.Clone(fw.SourceRanges)
		slices.Reverse(fw.SourceRanges)
		obs.firewalls[name] = fw
	}
	if !spec.internal {
		rule.PortRange = ptr(fmt.Sprintf("%d-%d", spec.ports[0], spec.ports[len(spec.ports)-1]))
		rule.Target = ptr(apiBase + targetPoolURL(env, spec))
		obs.rule = rule
		obs.httpHC = httpHealthCheck(spec, nil)
		obs.pool = &computepb.TargetPool{Name: &spec.base, SessionAffinity: ptr("NONE"), HealthChecks: []string{apiBase + httpHealthCheckURL(env, spec.hcName)}}
		for zone, names := range byZone {
			for _, n := range names {
				obs.pool.Instances = append(obs.pool.Instances, apiBase+instanceURL(env.project, zone, n))
			}
		}
		return obs
	}
	for _, p := range spec.ports {
		rule.Ports = append(rule.Ports, fmt.Sprint(p))
	}
	rule.BackendService = ptr(apiBase + backendServiceURL(env, spec.bsName))
	rule.Network = ptr(apiBase + networkURL(env))
	rule.Subnetwork = ptr(apiBase + "projects/p/regions/us-central1/subnetworks/default")
	obs.rule = rule
	obs.hc = healthCheck(spec, nil)
	obs.bs = backendService(env, spec, instanceGroupName(planCID), nil)
	obs.bs.Fingerprint = ptr("fp")
	obs.bs.HealthChecks = []string{apiBase + healthCheckURL(env, spec.hcName)}
	for zone, names := range byZone {
		g := &groupState{exists: true, members: map[string]bool{}}
		for _, n := range names {
			g.members[instanceURL(env.project, zone, n)] = true
		}
		obs.groups[zone] = g
		obs.bs.Backends = append(obs.bs.Backends, &computepb.Backend{Group: ptr(apiBase + instanceGroupURL(env, zone, instanceGroupName(planCID))), BalancingMode: ptr("CONNECTION")})
	}
	return obs
}

// steps are a plan's changes as "action kind name"; every change must be
// applicable.
func steps(t *testing.T, p *lbPlan) []string {
	t.Helper()
	var out []string
	for _, c := range p.Changes {
		if c.Apply == nil {
			t.Errorf("%s has nothing to apply", c)
		}
		out = append(out, fmt.Sprintf("%s %s %s", c.Action, c.Kind, c.Name))
	}
	return out
}

func checkSteps(t *testing.T, p *lbPlan, want ...string) {
	t.Helper()
	if got := steps(t, p); !slices.Equal(got, want) {
		t.Errorf("plan:\n  %q\nwant:\n  %q", got, want)
	}
}

// checkFields asserts the fields of the plan's change of kind and name.
func checkFields(t *testing.T, p *lbPlan, action loadbalancers.Action, kind, name string, want ...loadbalancers.Field) {
	t.Helper()
	for _, c := range p.Changes {
		if c.Action == action && c.Kind == kind && c.Name == name {
			if !slices.Equal(c.Fields, want) {
				t.Errorf("%s %s %s fields %+v, want %+v", action, kind, name, c.Fields, want)
			}
			return
		}
	}
	t.Errorf("no %s %s %s in %s", action, kind, name, p.String())
}

// Upstream's names for the plan tests' Service.
const (
	planNodesHC   = "k8s-" + planCID + "-node"
	planExtHCFw   = planNodesHC + "-http-hc"
	planIntHCFw   = planNodesHC + "-hc"
	planFwOfBase  = "k8s-fw-"
	planNewAddrTo = "a new one"
)

func TestPlanCreatesInOrder(t *testing.T) {
	t.Run("external", func(t *testing.T) {
		c := newPlanCase(t, false, 80)
		b := c.spec.base
		p := c.plan(threeNodes, nothing())
		// The address first (the firewall rules name it), the health
		// check before the pool that uses it, the firewall before
		// traffic can come, the rule, then the reservation released.
		checkSteps(t, p, "create address "+b, "create HTTP health check "+planNodesHC, "create target pool "+b,
			"create firewall rule "+planFwOfBase+b, "create firewall rule "+planExtHCFw, "create forwarding rule "+b, "delete address "+b)
		checkFields(t, p, loadbalancers.Create, kindPool, b,
			loadbalancers.Field{Name: "instances added", From: "none", To: "us-central1-a/n-0, us-central1-a/n-1, us-central1-b/n-2"})
		checkFields(t, p, loadbalancers.Create, kindAddress, b, loadbalancers.Field{Name: "address", From: "none", To: planNewAddrTo})
	})
	t.Run("internal", func(t *testing.T) {
		c := newPlanCase(t, true, 80)
		b := c.spec.base
		p := c.plan(threeNodes, nothing())
		checkSteps(t, p, "create address "+b, "create health check "+planNodesHC,
			"create instance group "+c.group("us-central1-a"), "create instance group "+c.group("us-central1-b"),
			"create backend service "+b, "create firewall rule "+planFwOfBase+b, "create firewall rule "+planIntHCFw,
			"create forwarding rule "+b, "delete address "+b)
		checkFields(t, p, loadbalancers.Create, kindGroup, c.group("us-central1-b"),
			loadbalancers.Field{Name: "instances added", From: "none", To: "us-central1-b/n-2"})
	})
	t.Run("own health check with externalTrafficPolicy Local", func(t *testing.T) {
		c := newPlanCaseOf(t, false, func(s *v1.Service) {
			s.Spec.ExternalTrafficPolicy, s.Spec.HealthCheckNodePort = v1.ServiceExternalTrafficPolicyLocal, 31999
		}, 80)
		b := c.spec.base
		p := c.plan(threeNodes, nothing())
		checkSteps(t, p, "create address "+b, "create HTTP health check "+b, "create target pool "+b,
			"create firewall rule "+planFwOfBase+b, "create firewall rule k8s-"+b+"-http-hc", "create forwarding rule "+b, "delete address "+b)
	})
}

func TestPlanConvergedIsEmpty(t *testing.T) {
	for _, internal := range []bool{false, true} {
		t.Run(fmt.Sprint("internal=", internal), func(t *testing.T) {
			c := newPlanCase(t, internal, 80, 443)
			obs := c.converged(threeNodes)
			p := c.plan(threeNodes, obs)
			if !p.Empty() {
				t.Errorf("plan for a converged load balancer: %s", p.String())
			}
			if p.ip != obs.rule.GetIPAddress() {
				t.Errorf("address %q, want the rule's %q", p.ip, obs.rule.GetIPAddress())
			}
		})
	}
}

func TestPlanReleasesALeftReservation(t *testing.T) {
	c := newPlanCase(t, false, 80)
	obs := c.converged(threeNodes)
	obs.addr = &computepb.Address{Name: &c.spec.base, Address: obs.rule.IPAddress}
	checkSteps(t, c.plan(threeNodes, obs), "delete address "+c.spec.base)
}

func TestPlanNodesJoinAndLeave(t *testing.T) {
	// n-0 leaves, n-3 joins in the same zone.
	next := map[string][]string{"us-central1-a": {"n-1", "n-3"}, "us-central1-b": {"n-2"}}
	members := []loadbalancers.Field{
		{Name: "instances added", From: "none", To: "us-central1-a/n-3"},
		{Name: "instances removed", From: "us-central1-a/n-0", To: "none"},
	}
	t.Run("external", func(t *testing.T) {
		c := newPlanCase(t, false, 80)
		p := c.plan(next, c.converged(threeNodes))
		checkSteps(t, p, "update target pool "+c.spec.base)
		checkFields(t, p, loadbalancers.Update, kindPool, c.spec.base, members...)
	})
	t.Run("internal", func(t *testing.T) {
		c := newPlanCase(t, true, 80)
		p := c.plan(next, c.converged(threeNodes))
		checkSteps(t, p, "update instance group "+c.group("us-central1-a"))
		checkFields(t, p, loadbalancers.Update, kindGroup, c.group("us-central1-a"), members...)
	})
	t.Run("internal, a zone's first node", func(t *testing.T) {
		c := newPlanCase(t, true, 80)
		grown := map[string][]string{"us-central1-a": {"n-0", "n-1"}, "us-central1-b": {"n-2"}, "us-central1-c": {"n-4"}}
		p := c.plan(grown, c.converged(threeNodes))
		checkSteps(t, p, "create instance group "+c.group("us-central1-c"), "update backend service "+c.spec.base)
		g := "projects/p/zones/us-central1-%s/instanceGroups/" + instanceGroupName(planCID)
		checkFields(t, p, loadbalancers.Update, kindBackendService, c.spec.base, loadbalancers.Field{Name: "backends",
			From: fmt.Sprintf("["+g+" "+g+"]", "a", "b"), To: fmt.Sprintf("["+g+" "+g+" "+g+"]", "a", "b", "c")})
	})
}

func TestPlanPortChange(t *testing.T) {
	t.Run("external", func(t *testing.T) {
		c := newPlanCase(t, false, 80, 8080)
		old := newPlanCase(t, false, 80)
		b := c.spec.base
		p := c.plan(threeNodes, old.converged(threeNodes))
		// GCE cannot change a rule's ports: it is replaced, on its
		// address, reserved first and released after.
		checkSteps(t, p, "create address "+b, "delete forwarding rule "+b, "update firewall rule "+planFwOfBase+b,
			"create forwarding rule "+b, "delete address "+b)
		checkFields(t, p, loadbalancers.Update, kindFirewall, planFwOfBase+b, loadbalancers.Field{Name: "allowed", From: "[tcp:80]", To: "[tcp:80,8080]"})
		checkFields(t, p, loadbalancers.Create, kindRule, b, loadbalancers.Field{Name: "ports", From: "80", To: "80-8080"})
		checkFields(t, p, loadbalancers.Create, kindAddress, b, loadbalancers.Field{Name: "address", From: "none", To: "203.0.113.10"})
		if p.ip != "203.0.113.10" {
			t.Errorf("address %q, want the replaced rule's", p.ip)
		}
	})
	t.Run("internal", func(t *testing.T) {
		c := newPlanCase(t, true, 53, 80)
		old := newPlanCase(t, true, 80)
		b := c.spec.base
		p := c.plan(threeNodes, old.converged(threeNodes))
		checkSteps(t, p, "create address "+b, "delete forwarding rule "+b, "update firewall rule "+planFwOfBase+b,
			"create forwarding rule "+b, "delete address "+b)
		checkFields(t, p, loadbalancers.Create, kindRule, b, loadbalancers.Field{Name: "ports", From: "80", To: "53,80"})
		checkFields(t, p, loadbalancers.Create, kindAddress, b, loadbalancers.Field{Name: "address", From: "none", To: "10.128.0.9"})
	})
	t.Run("externalTrafficPolicy Cluster to Local", func(t *testing.T) {
		c := newPlanCaseOf(t, false, func(s *v1.Service) {
			s.Spec.ExternalTrafficPolicy, s.Spec.HealthCheckNodePort = v1.ServiceExternalTrafficPolicyLocal, 31999
		}, 80)
		b := c.spec.base
		obs := newPlanCase(t, false, 80).converged(threeNodes)
		obs.httpHC = nil // observe reads the health check the Service needs
		p := c.plan(threeNodes, obs)
		// The pool swaps health checks in place; the nodes' shared one
		// is deleted unless another pool uses it.
		checkSteps(t, p, "create HTTP health check "+b, "update target pool "+b, "create firewall rule k8s-"+b+"-http-hc",
			"delete HTTP health check "+planNodesHC)
	})
}

func TestPlanSchemeSwitch(t *testing.T) {
	t.Run("external to internal", func(t *testing.T) {
		c := newPlanCase(t, true, 80)
		b := c.spec.base
		was := newPlanCase(t, false, 80).converged(threeNodes)
		obs := &observed{rule: was.rule, switched: true, firewalls: was.firewalls}
		p := c.plan(threeNodes, obs)
		// The old rule first (it uses the pool), the old resources
		// next, and only then the new load balancer, on a new address
		// (an external one cannot become internal).
		checkSteps(t, p, "delete forwarding rule "+b, "delete target pool "+b, "delete HTTP health check health checks of "+b,
			"create address "+b, "create health check "+planNodesHC,
			"create instance group "+c.group("us-central1-a"), "create instance group "+c.group("us-central1-b"),
			"create backend service "+b, "update firewall rule "+planFwOfBase+b, "create firewall rule "+planIntHCFw,
			"create forwarding rule "+b, "delete address "+b)
		checkFields(t, p, loadbalancers.Delete, kindRule, b, loadbalancers.Field{Name: "loadBalancingScheme", From: "EXTERNAL", To: "INTERNAL"})
		checkFields(t, p, loadbalancers.Create, kindAddress, b, loadbalancers.Field{Name: "address", From: "none", To: planNewAddrTo})
	})
	t.Run("internal to external", func(t *testing.T) {
		c := newPlanCase(t, false, 80)
		b := c.spec.base
		was := newPlanCase(t, true, 80).converged(threeNodes)
		obs := &observed{rule: was.rule, switched: true, firewalls: was.firewalls}
		p := c.plan(threeNodes, obs)
		checkSteps(t, p, "delete forwarding rule "+b, "delete backend service "+b, "delete health check health checks of "+b,
			"delete instance group "+instanceGroupName(planCID)+" (unless in use)",
			"create address "+b, "create HTTP health check "+planNodesHC, "create target pool "+b,
			"update firewall rule "+planFwOfBase+b, "create firewall rule "+planExtHCFw, "create forwarding rule "+b, "delete address "+b)
	})
}

func TestFirewallPortRanges(t *testing.T) {
	c := newPlanCase(t, false, 8080, 80, 81, 82, 443, 444)
	if got, want := c.spec.firewallPorts(), []string{"80-82", "443-444", "8080"}; !slices.Equal(got, want) {
		t.Errorf("firewall ports %q, want upstream's ranges %q", got, want)
	}
}

// TestPlanSharedVPC: with the network in a host project, the rules and
// addresses name its network and subnetwork there, and the firewall rules
// go there; the rest stays in the cluster's project.
func TestPlanSharedVPC(t *testing.T) {
	c := newPlanCase(t, true, 80)
	c.env.networkProject = "host"
	c.env.hcRanges = []string{"10.0.0.0/8"}
	w := wantRule(c.env, c.spec)
	if w.GetNetwork() != "projects/host/global/networks/default" || w.GetSubnetwork() != "projects/host/regions/us-central1/subnetworks/default" {
		t.Errorf("rule network %s subnetwork %s, want the host project's", w.GetNetwork(), w.GetSubnetwork())
	}
	if w.GetBackendService() != "projects/p/regions/us-central1/backendServices/"+c.spec.bsName {
		t.Errorf("backend service %s, want the cluster project's", w.GetBackendService())
	}
	fw := firewallFor(c.env, c.spec, c.spec.hcFirewallName(), "10.1.2.3", false, priorityDefault)
	if fw.GetNetwork() != "projects/host/global/networks/default" || !slices.Equal(fw.GetSourceRanges(), []string{"10.0.0.0/8"}) {
		t.Errorf("health-check firewall %v %v, want the host network and the configured ranges", fw.GetNetwork(), fw.GetSourceRanges())
	}
}
