package gce_test

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/loadbalancers"
	"github.com/polyccm/polyccm/drivers/gce"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
	fakegce "github.com/polyccm/polyccm/test/fakecloud/gce"
)

// cloud-provider-gcp's opt-in L4 deny firewall (gce_loadbalancer_external.go
// at 4e245312): with --enable-l4-deny-firewall, ensureDenyNodeFirewall
// adds k8s-fw-<lb>-deny, denying all to the address at
// firewallPriorityDeny (1000), and ensureAllowNodeFirewall and
// ensureHTTPHealthCheckFirewall write the allow rules at
// firewallPriorityAllow (999). GCE applies the lowest number first and a
// deny wins a tie: an allow rule at 1000 beside the deny rule drops the
// load balancer's traffic.

const (
	upPriorityAllow = 999  // firewallPriorityAllow
	upPriorityDeny  = 1000 // firewallPriorityDeny
	// upNetworkURL is gce.go gceNetworkURL, the network firewallObject
	// and ensureDenyNodeFirewall write.
	upNetworkURL = "https://www.googleapis.com/compute/v1/projects/" + testProject + "/global/networks/default"
)

// overrides watches the fake's firewall rules through every change and
// collects each moment a deny rule overrode an allow rule of its load
// balancer (its traffic rule, its health check's, the nodes' shared
// health-check rule) on the same address and nodes: the load balancer's
// traffic, or its health checks, dropped.
type overrides struct {
	mu   sync.Mutex
	seen []string
}

func watchOverrides(e *env) *overrides {
	o := &overrides{}
	e.fake.WatchFirewalls(func(all []fakegce.Firewall) {
		for _, d := range all {
			for _, a := range all {
				lb := strings.TrimSuffix(strings.TrimPrefix(d.Name, "k8s-fw-"), "-deny")
				own := a.Name == "k8s-fw-"+lb || a.Name == "k8s-"+lb+"-http-hc" || strings.HasSuffix(a.Name, "-node-http-hc")
				if len(d.Denied) == 0 || len(a.Allowed) == 0 || !own || a.Priority < d.Priority || !covers(a, d) ||
					!slices.ContainsFunc(a.TargetTags, func(t string) bool { return slices.Contains(d.TargetTags, t) }) {
					continue
				}
				o.mu.Lock()
				o.seen = append(o.seen, fmt.Sprintf("%s (priority %d) overrode %s (priority %d)", d.Name, d.Priority, a.Name, a.Priority))
				o.mu.Unlock()
			}
		}
	})
	e.t.Cleanup(func() { e.fake.WatchFirewalls(nil) })
	return o
}

func (o *overrides) check(t *testing.T) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.seen) > 0 {
		t.Errorf("a deny rule overrode allow rules:\n  %s", strings.Join(slices.Compact(o.seen), "\n  "))
	}
}

// covers reports whether allow rule a reaches an address deny rule d
// denies (a rule without destinations reaches all).
func covers(a, d fakegce.Firewall) bool {
	if len(a.DestinationRanges) == 0 {
		return true
	}
	for _, ar := range a.DestinationRanges {
		for _, dr := range d.DestinationRanges {
			if prefix(ar).Contains(prefix(dr).Addr()) {
				return true
			}
		}
	}
	return false
}

func prefix(s string) netip.Prefix {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p
	}
	a, _ := netip.ParseAddr(s)
	return netip.PrefixFrom(a, a.BitLen())
}

// firewalls is a Compute client for changes made behind the driver's back.
func (e *env) firewallsClient() *compute.FirewallsClient {
	e.t.Helper()
	c, err := compute.NewFirewallsRESTClient(ctx(e.t), e.userClient()...)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = c.Close() })
	return c
}

// waitOp waits for the operation of a change made behind the driver's
// back: e.waitOp(what)(client.Insert(...)).
func (e *env) waitOp(what string) func(*compute.Operation, error) {
	return func(op *compute.Operation, err error) {
		e.t.Helper()
		if err == nil {
			err = op.Wait(ctx(e.t))
		}
		if err != nil {
			e.t.Fatalf("%s: %v", what, err)
		}
	}
}

// upstreamDeny is what cloud-provider-gcp's sync of an existing external
// load balancer at ip does once --enable-l4-deny-firewall is set:
// ensureAllowNodeFirewall's firewallNeedsUpdate finds the priority
// differs and patches the traffic rule to 999, ensureHTTPHealthCheckFirewall
// patches the health check's (firewallObject: the shared one gets this
// load balancer's address as its destination), then
// ensureDenyNodeFirewall creates the deny rule.
func (e *env) upstreamDeny(svc *v1.Service, ip string) {
	e.t.Helper()
	c := e.firewallsClient()
	lb := e.lbName(svc)
	hcFW := "k8s-" + lb + "-http-hc"
	if healthPort(svc) == 10256 {
		hcFW = e.nodesHC() + "-http-hc"
	}
	for _, name := range []string{"k8s-fw-" + lb, hcFW} {
		e.waitOp("upstream's patch of " + name)(c.Patch(ctx(e.t), &computepb.PatchFirewallRequest{Project: testProject, Firewall: name,
			FirewallResource: &computepb.Firewall{Priority: ptrTo(int32(upPriorityAllow)), DestinationRanges: []string{ip}}}))
	}
	e.waitOp("upstream's deny rule")(c.Insert(ctx(e.t), &computepb.InsertFirewallRequest{Project: testProject, FirewallResource: &computepb.Firewall{
		Name:              ptrTo("k8s-fw-" + lb + "-deny"), // MakeFirewallDenyName
		Description:       ptrTo(fmt.Sprintf(`{"kubernetes.io/service-name":"%s/%s", "kubernetes.io/service-ip":"%s"}`, svc.Namespace, svc.Name, ip)),
		Network:           ptrTo(upNetworkURL),
		SourceRanges:      []string{"0.0.0.0/0"},
		DestinationRanges: []string{ip},
		TargetTags:        []string{testNodeTag},
		Denied:            []*computepb.Denied{{IPProtocol: ptrTo("all")}},
		Priority:          ptrTo(int32(upPriorityDeny)),
	}}))
}

func ptrTo[T any](v T) *T { return &v }

// priorities are the fake's firewall rules' priorities by name.
func (e *env) priorities() map[string]int {
	out := map[string]int{}
	for _, f := range e.fake.Firewalls() {
		out[f.Name] = f.Priority
	}
	return out
}

// TestDenyFirewallKeptAsUpstreamLeftIt: without drivers.gce.l4DenyFirewall
// a load balancer upstream gave the deny rule is taken over as it is; a
// change of the Service keeps its allow rules at 999 (polyccm wrote 1000,
// and the deny rule then dropped the traffic), a Service without a deny
// rule leaves the shared health-check rule above the other's deny rule,
// and deleting the Service deletes its deny rule.
func TestDenyFirewallKeptAsUpstreamLeftIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := e.nodes("n", 2, testZone)
	svc := service(nil, tcp(80, 30080))
	lb := e.lbName(svc)
	ip := e.mustEnsure(svc, nodes).Ingress[0].IP
	e.upstreamDeny(svc, ip)
	w := watchOverrides(e)

	before := e.mutations()
	e.mustEnsure(svc, nodes)
	if n := e.mutations() - before; n != 0 {
		t.Errorf("%d changing calls for upstream's load balancer as it is: %v", n, e.fake.Faults().Calls())
	}

	svc.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24"}
	e.mustEnsure(svc, nodes)
	fw := e.firewall("k8s-fw-" + lb)
	if !slices.Equal(fw.SourceRanges, []string{"192.0.2.0/24"}) || fw.Priority != upPriorityAllow {
		t.Errorf("traffic rule from %v at priority %d, want the new range at upstream's %d", fw.SourceRanges, fw.Priority, upPriorityAllow)
	}
	if deny := e.firewall("k8s-fw-" + lb + "-deny"); deny.Priority != upPriorityDeny || !slices.Equal(deny.DestinationRanges, []string{ip}) {
		t.Errorf("deny rule %+v, want upstream's kept", deny)
	}

	// Another Service on the shared health check, made by polyccm: no
	// deny rule, its own rule at 1000, the shared rule left at 999.
	other := service(nil, tcp(443, 30443))
	other.Name, other.UID = "api", "11111111-2222-4333-8444-555555555555"
	e.mustEnsure(other, nodes)
	prios := e.priorities()
	if p := prios["k8s-fw-"+e.lbName(other)]; p != 1000 {
		t.Errorf("the other Service's traffic rule at %d, want 1000", p)
	}
	if _, ok := prios["k8s-fw-"+e.lbName(other)+"-deny"]; ok {
		t.Error("the other Service got a deny rule it never had")
	}
	if p := prios[e.nodesHC()+"-http-hc"]; p != upPriorityAllow {
		t.Errorf("the shared health-check rule at %d, want %d: the first Service's deny rule overrides it", p, upPriorityAllow)
	}

	e.mustDelete(svc)
	if _, ok := e.fake.Firewall("k8s-fw-" + lb + "-deny"); ok {
		t.Errorf("the deny rule was left behind: %v", e.live()["firewalls"])
	}
	e.mustDelete(other)
	if live := e.live(); len(live) != 0 {
		t.Errorf("left: %v", live)
	}
	w.check(t)
}

// TestDenyFirewallEnabled: with drivers.gce.l4DenyFirewall: enabled every
// external load balancer gets upstream's deny rule: an existing one's
// allow rules move to 999 before the deny rule is made, a new one is made
// with them; an internal one gets none.
func TestDenyFirewallEnabled(t *testing.T) {
	t.Parallel()
	old := newEnv(t)
	nodes := old.nodes("n", 2, testZone)
	svc := service(nil, tcp(80, 30080), tcp(81, 30081))
	ip := old.mustEnsure(svc, nodes).Ingress[0].IP

	e := newEnv(t, withFake(old.fake), withConfig(func(c *gce.Config) { c.L4DenyFirewall = gce.DenyFirewallEnabled }))
	w := watchOverrides(e)
	e.mustEnsure(svc, nodes)
	lb := e.lbName(svc)
	deny := e.firewall("k8s-fw-" + lb + "-deny")
	wantDesc := fmt.Sprintf(`{"kubernetes.io/service-name":"shop/web", "kubernetes.io/service-ip":"%s"}`, ip)
	if deny.Description != wantDesc || !slices.Equal(deny.SourceRanges, []string{"0.0.0.0/0"}) || !slices.Equal(deny.DestinationRanges, []string{ip}) ||
		!slices.Equal(deny.TargetTags, []string{testNodeTag}) || len(deny.Allowed) != 0 || len(deny.Denied) != 1 || deny.Denied[0].IPProtocol != "all" ||
		len(deny.Denied[0].Ports) != 0 || deny.Priority != upPriorityDeny || deny.Direction != "INGRESS" || lastSeg(deny.Network) != "default" {
		t.Errorf("deny rule %+v, want upstream's ensureDenyNodeFirewall's", deny)
	}
	prios := e.priorities()
	for _, name := range []string{"k8s-fw-" + lb, e.nodesHC() + "-http-hc"} {
		if prios[name] != upPriorityAllow {
			t.Errorf("%s at priority %d, want %d", name, prios[name], upPriorityAllow)
		}
	}

	// A new Service with its own health check: made at 999 with its deny
	// rule; converged, nothing more is written.
	local := service(nil, tcp(8080, 31080))
	local.Name, local.UID = "local", "22222222-3333-4444-8555-666666666666"
	local.Spec.ExternalTrafficPolicy, local.Spec.HealthCheckNodePort = v1.ServiceExternalTrafficPolicyLocal, 32000
	e.mustEnsure(local, nodes)
	llb := e.lbName(local)
	prios = e.priorities()
	for name, want := range map[string]int{"k8s-fw-" + llb: upPriorityAllow, "k8s-" + llb + "-http-hc": upPriorityAllow, "k8s-fw-" + llb + "-deny": upPriorityDeny} {
		if prios[name] != want {
			t.Errorf("%s at priority %d, want %d (all: %v)", name, prios[name], want, prios)
		}
	}
	before := e.mutations()
	e.mustEnsure(local, nodes)
	e.mustEnsure(svc, nodes)
	if n := e.mutations() - before; n != 0 {
		t.Errorf("%d changing calls for converged load balancers: %v", n, e.fake.Faults().Calls())
	}

	in := service(internalLB, tcp(9090, 31090))
	in.Name, in.UID = "int", "33333333-4444-4555-8666-777777777777"
	e.mustEnsure(in, nodes)
	if _, ok := e.fake.Firewall("k8s-fw-" + e.lbName(in) + "-deny"); ok {
		t.Error("an internal load balancer got upstream's external deny rule")
	}

	for _, s := range []*v1.Service{svc, local, in} {
		e.mustDelete(s)
	}
	if live := e.live(); len(live) != 0 {
		t.Errorf("left: %v", live)
	}
	w.check(t)
}

// TestDenyFirewallCleanup: with cleanup, upstream's rollback, the deny
// rule goes before the allow rules come back to 1000.
func TestDenyFirewallCleanup(t *testing.T) {
	t.Parallel()
	on := newEnv(t, withConfig(func(c *gce.Config) { c.L4DenyFirewall = gce.DenyFirewallEnabled }))
	nodes := on.nodes("n", 1, testZone)
	svc := service(nil)
	on.mustEnsure(svc, nodes)
	lb := on.lbName(svc)
	on.firewall("k8s-fw-" + lb + "-deny")

	e := newEnv(t, withFake(on.fake), withConfig(func(c *gce.Config) { c.L4DenyFirewall = gce.DenyFirewallCleanup }))
	w := watchOverrides(e)
	e.mustEnsure(svc, nodes)
	want := map[string]int{"k8s-fw-" + lb: 1000, e.nodesHC() + "-http-hc": 1000}
	if got := e.priorities(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("firewall rules %v, want %v", got, want)
	}
	w.check(t)
}

// TestDenyFirewallOfAnotherServiceStays: a deny rule named for the
// Service whose description names another Service is not the Service's:
// its sync is refused, and its deletion leaves that rule, with a Warning
// event, and deletes the rest.
func TestDenyFirewallOfAnotherServiceStays(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := e.nodes("n", 1, testZone)
	svc := service(nil)
	lb := e.lbName(svc)
	ip := e.mustEnsure(svc, nodes).Ingress[0].IP
	e.waitOp("a deny rule by hand")(e.firewallsClient().Insert(ctx(e.t), &computepb.InsertFirewallRequest{Project: testProject, FirewallResource: &computepb.Firewall{
		Name: ptrTo("k8s-fw-" + lb + "-deny"), Description: ptrTo(`{"kubernetes.io/service-name":"other/svc"}`),
		DestinationRanges: []string{ip}, Denied: []*computepb.Denied{{IPProtocol: ptrTo("all")}},
	}}))
	e.events()
	before := e.mutations()
	if _, err := e.ensure(svc, nodes); !loadbalancers.IsNotOwned(err) {
		t.Errorf("Ensure: %v, want the deny rule refused as not the Service's", err)
	}
	if n := e.mutations() - before; n != 0 {
		t.Errorf("%d changing calls after the refusal", n)
	}
	e.mustDelete(svc)
	if _, ok := e.fake.Firewall("k8s-fw-" + lb + "-deny"); !ok {
		t.Error("another Service's deny rule was deleted")
	}
	if live := e.live(); len(live) != 1 || len(live["firewalls"]) != 1 {
		t.Errorf("left: %v, want only the other's deny rule", live)
	}
	if ev := strings.Join(e.events(), "\n"); !strings.Contains(ev, "Warning LoadBalancerNotOwned Not deleting GCE firewall rule k8s-fw-"+lb+"-deny") || !strings.Contains(ev, "other/svc") {
		t.Errorf("events lack the refused deletion:\n%s", ev)
	}
}

// TestInternalFirewallPriorityKept: upstream makes an internal load
// balancer's rules without a priority and patches them without one, so a
// priority someone set stays through polyccm's updates.
func TestInternalFirewallPriorityKept(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := e.nodes("n", 1, testZone)
	svc := service(internalLB)
	lb := e.lbName(svc)
	e.mustEnsure(svc, nodes)
	c := e.firewallsClient()
	for _, name := range []string{"k8s-fw-" + lb, e.nodesHC() + "-hc"} {
		e.waitOp("a priority by hand")(c.Patch(ctx(e.t), &computepb.PatchFirewallRequest{Project: testProject, Firewall: name,
			FirewallResource: &computepb.Firewall{Priority: ptrTo(int32(900))}}))
	}
	before := e.mutations()
	e.mustEnsure(svc, nodes)
	if n := e.mutations() - before; n != 0 {
		t.Errorf("%d changing calls for a priority alone", n)
	}
	svc.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"}
	e.mustEnsure(svc, nodes)
	if fw := e.firewall("k8s-fw-" + lb); !slices.Equal(fw.SourceRanges, []string{"10.0.0.0/8"}) || fw.Priority != 900 {
		t.Errorf("traffic rule from %v at %d, want the new range at 900 kept", fw.SourceRanges, fw.Priority)
	}
}

// TestDenyFirewallWaitsForTheAllowRules: in a Shared VPC whose host
// project leaves firewall changes to its admin, the allow rules may stay
// below the deny rule; then the deny rule is not made (it would drop the
// traffic) but left to the admin too, after them.
func TestDenyFirewallWaitsForTheAllowRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(func(c *gce.Config) {
		c.NetworkProject = "host"
		c.L4DenyFirewall = gce.DenyFirewallEnabled
	}))
	const epFWInsert = "POST /compute/v1/projects/{project}/global/firewalls"
	e.fake.Faults().AddRule(faults.Rule{Match: epFWInsert, Status: 403})
	svc := service(nil)
	lb := e.lbName(svc)
	ip := e.mustEnsure(svc, e.nodes("n", 1, testZone)).Ingress[0].IP
	if n := e.calls(epFWInsert); n != 2 {
		t.Errorf("%d firewall inserts, want the two allow rules' (refused) and not the deny rule's", n)
	}
	var cmds []string
	for _, ev := range e.events() {
		if _, cmd, ok := strings.Cut(ev, "Firewall change required by security admin: `"); ok {
			cmds = append(cmds, strings.TrimSuffix(cmd, "`"))
		}
	}
	if len(cmds) != 3 || !strings.Contains(cmds[0], "create k8s-fw-"+lb+" ") || !strings.Contains(cmds[0], "--priority 999") {
		t.Fatalf("admin commands %q, want the allow rules' at 999, then the deny rule's", cmds)
	}
	want := "gcloud compute firewall-rules create k8s-fw-" + lb + "-deny --project host --network default --description " +
		fmt.Sprintf("%q", fmt.Sprintf(`{"kubernetes.io/service-name":"shop/web", "kubernetes.io/service-ip":"%s"}`, ip)) +
		" --action DENY --rules all --source-ranges 0.0.0.0/0 --destination-ranges " + ip + " --target-tags " + testNodeTag + " --priority 1000"
	if cmds[2] != want {
		t.Errorf("deny rule's command\n %s\nwant\n %s", cmds[2], want)
	}
}
