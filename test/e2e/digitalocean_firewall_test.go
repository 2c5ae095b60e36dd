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

	"github.com/digitalocean/godo"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/polyccm/polyccm/core/planning"
	"github.com/polyccm/polyccm/drivers/digitalocean"
	fakedo "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
	"github.com/polyccm/polyccm/test/harness"
)

// The public-access firewall through the binary (issue 33, point 5): what
// a sync removes that polyccm did not put there is said and counted, and
// shown by polyccm plan; over DigitalOcean's 50 rules what fits is
// applied; a Service whose load balancer polyccm refuses gets no rule.

const (
	e2eFW    = "e2e-public-access"
	e2eFWTag = "k8s-e2e-worker"
)

// withFirewall turns the service controller and the firewall on.
func withFirewall(s *harness.Settings) {
	withServices(s)
	s.DriverBlock += "\nfirewall:\n  name: " + e2eFW + "\n  tags: [\"" + e2eFWTag + "\"]"
}

// firewall is the one firewall named e2eFW, once polyccm made it.
func (e *doEnv) firewall() (fakedo.CloudFirewall, bool) {
	for _, fw := range e.fake.Firewalls() {
		if fw.Name == e2eFW {
			return fw, true
		}
	}
	return fakedo.CloudFirewall{}, false
}

// inbound spells the firewall's inbound rules, sorted: "tcp 80 world",
// "tcp 10256 lb=<id>", "tcp 2000 10.0.0.0/8".
func inbound(fw fakedo.CloudFirewall) []string {
	var out []string
	for _, r := range fw.InboundRules {
		from := strings.Join(r.Targets.Addresses, ",")
		switch {
		case from == "0.0.0.0/0,::/0" || from == "::/0,0.0.0.0/0":
			from = "world"
		case len(r.Targets.LoadBalancerUIDs) > 0:
			from = "lb=" + strings.Join(r.Targets.LoadBalancerUIDs, ",")
		}
		out = append(out, fmt.Sprintf("%s %s %s", r.Protocol, r.Ports, from))
	}
	slices.Sort(out)
	return out
}

// waitFirewall waits until cond holds of the firewall.
func (e *doEnv) waitFirewall(what string, cond func(fakedo.CloudFirewall) bool) fakedo.CloudFirewall {
	e.t.Helper()
	var fw fakedo.CloudFirewall
	eventually(e.t, 60*time.Second, what, func() (bool, string) {
		var ok bool
		if fw, ok = e.firewall(); !ok {
			return false, "no firewall " + e2eFW
		}
		return cond(fw), fmt.Sprintf("inbound %q, tags %q", inbound(fw), fw.Tags)
	})
	return fw
}

// nodePortService creates a NodePort Service in ns with n tcp ports and
// returns it with its node ports.
func nodePortService(t *testing.T, ns, name string, n int) *v1.Service {
	t.Helper()
	var ports []v1.ServicePort
	for i := range n {
		ports = append(ports, v1.ServicePort{Name: fmt.Sprintf("p%d", i), Protocol: v1.ProtocolTCP, Port: int32(1000 + i), TargetPort: intstr.FromInt32(8080)})
	}
	return nsService(t, ns, name, nil, func(s *v1.Service) { s.Spec.Type = v1.ServiceTypeNodePort }, ports...)
}

// worldPorts are the rules a NodePort Service's node ports need.
func worldPorts(svc *v1.Service) []string {
	var out []string
	for _, p := range svc.Spec.Ports {
		out = append(out, fmt.Sprintf("tcp %d world", p.NodePort))
	}
	return out
}

func holds(have []string, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// warningsWith lists the Warning events of reason on a Service.
func warningsWith(t *testing.T, ns, name, reason string) []string {
	t.Helper()
	var out []string
	for _, ev := range serviceEvents(t, ns, name) {
		if strings.HasPrefix(ev, "Warning "+reason+":") {
			out = append(out, ev)
		}
	}
	return out
}

// (a) An operator's rule of polyccm's shape and a tag polyccm was not
// given go at the next sync, as with the DigitalOcean CCM; polyccm plan
// shows it before, and after it is a Warning event on each of the
// firewall's Services and a counter.
func TestDigitalOceanFirewallRemovalsAreVisible(t *testing.T) {
	bindUpstreamScraper(t)
	e := newDOEnv(t, nil, withFirewall)
	ctx := context.Background()
	a := nodePortService(t, "default", "fw-rm-a", 1)
	fw := e.waitFirewall("the firewall with fw-rm-a's node port", func(fw fakedo.CloudFirewall) bool { return holds(inbound(fw), worldPorts(a)...) })

	// The operator's additions, through the API.
	if _, err := e.user.Firewalls.AddRules(ctx, fw.ID, &godo.FirewallRulesRequest{InboundRules: []godo.InboundRule{
		{Protocol: "tcp", PortRange: "22", Sources: &godo.Sources{Addresses: []string{"0.0.0.0/0", "::/0"}}},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.user.Firewalls.AddTags(ctx, fw.ID, "ops-extra"); err != nil {
		t.Fatal(err)
	}

	// polyccm plan shows the change, and makes it not.
	callsBefore := e.fake.Faults().Calls()
	r := e.plan(t, "plan", e.opts.Config)
	checkPlanWroteNothing(t, r, callsBefore, e.fake.Faults().Calls())
	i := slices.IndexFunc(r.report.Tasks, func(p planning.TaskPlan) bool { return p.Task == digitalocean.FirewallTaskName })
	if i < 0 {
		t.Errorf("the plan says nothing of the firewall: tasks %+v", r.report.Tasks)
	} else {
		p := r.report.Tasks[i]
		var fields []string
		for _, c := range p.Changes {
			for _, f := range c.Fields {
				fields = append(fields, c.Action+" "+c.Kind+" "+f.Name+": "+f.From+" -> "+f.To)
			}
		}
		if p.Action != "change" || !slices.ContainsFunc(fields, func(f string) bool {
			return strings.HasPrefix(f, "update firewall inbound_rules: inbound tcp 22 from anywhere") && strings.HasSuffix(f, "-> (removed)")
		}) || !slices.ContainsFunc(fields, func(f string) bool {
			return strings.HasPrefix(f, "update firewall tags:") && strings.Contains(f, "ops-extra")
		}) {
			t.Errorf("the plan's firewall task: %s %s, changes %q; want the removal of tcp 22 and of the tag ops-extra", p.Action, p.Message, fields)
		}
	}

	// A change of the Services brings the sync that removes them.
	b := nodePortService(t, "default", "fw-rm-b", 1)
	e.waitFirewall("the operator's rule and tag removed, fw-rm-b's node port open", func(fw fakedo.CloudFirewall) bool {
		in := inbound(fw)
		return holds(in, worldPorts(b)...) && !slices.Contains(in, "tcp 22 world") && slices.Equal(fw.Tags, []string{e2eFWTag})
	})
	for _, s := range []*v1.Service{a, b} {
		var evs []string
		eventually(t, 30*time.Second, "a "+digitalocean.ReasonFirewallRuleRemoved+" warning on "+s.Name, func() (bool, string) {
			evs = warningsWith(t, s.Namespace, s.Name, digitalocean.ReasonFirewallRuleRemoved)
			return len(evs) > 0, fmt.Sprintf("events %q", serviceEvents(t, s.Namespace, s.Name))
		})
		if len(evs) != 1 || !strings.Contains(evs[0], "inbound tcp 22 from anywhere") || !strings.Contains(evs[0], "the tag ops-extra") || !strings.Contains(evs[0], fw.ID) {
			t.Errorf("%s: %q", s.Name, evs)
		}
	}
	waitMetrics(t, e.ccm, 30*time.Second,
		metricSeries("polyccm_digitalocean_firewall_removals_total", metricExactly(1), "the operator's rule", "what", "inbound_rule"),
		metricSeries("polyccm_digitalocean_firewall_removals_total", metricExactly(1), "the operator's tag", "what", "tag"))

	// polyccm's own rule going with its Service is no news.
	deleteNSServiceAndWait(t, "default", b.Name, 30*time.Second)
	e.waitFirewall("fw-rm-b's node port closed", func(fw fakedo.CloudFirewall) bool { return !holds(inbound(fw), worldPorts(b)...) })
	waitMetrics(t, e.ccm, 5*time.Second,
		metricSeries("polyccm_digitalocean_firewall_removals_total", metricExactly(1), "still only the operator's rule", "what", "inbound_rule"))
	if evs := warningsWith(t, a.Namespace, a.Name, digitalocean.ReasonFirewallRuleRemoved); len(evs) != 1 {
		t.Errorf("fw-rm-a after fw-rm-b's rule went: %q", evs)
	}
}

// checkPlanWroteNothing: the plan refused no call and made no write.
func checkPlanWroteNothing(t *testing.T, r planRun, before, after map[string]int) {
	t.Helper()
	if len(r.report.RefusedCloudCalls) != 0 || len(r.report.KubernetesWrites) != 0 {
		t.Errorf("the plan tried writes: cloud %q, Kubernetes %q", r.report.RefusedCloudCalls, r.report.KubernetesWrites)
	}
	for ep, n := range after {
		if !strings.HasPrefix(ep, "GET ") && n != before[ep] {
			t.Errorf("%s called %d times during the plan", ep, n-before[ep])
		}
	}
}

// (b) Over DigitalOcean's 50 rules the firewall takes what fits, oldest
// Service first, and the Service left out is told; the others' changes
// are not held up, and room made lets it in.
func TestDigitalOceanFirewallRuleLimit(t *testing.T) {
	e := newDOEnv(t, nil, withFirewall)
	ctx := context.Background()
	fw := e.waitFirewall("the firewall", func(fakedo.CloudFirewall) bool { return true })
	var operator []godo.InboundRule
	var operatorRules []string
	for i := range 10 {
		operator = append(operator, godo.InboundRule{Protocol: "tcp", PortRange: fmt.Sprint(2000 + i), Sources: &godo.Sources{Addresses: []string{"10.0.0.0/8"}}})
		operatorRules = append(operatorRules, fmt.Sprintf("tcp %d 10.0.0.0/8", 2000+i))
	}
	if _, err := e.user.Firewalls.AddRules(ctx, fw.ID, &godo.FirewallRulesRequest{InboundRules: operator}); err != nil {
		t.Fatal(err)
	}
	// 50 less the operator's 10 and 3 outbound: 37 for the Services.
	first := nodePortService(t, "default", "fw-lim-1", 20)
	e.waitFirewall("fw-lim-1's node ports", func(fw fakedo.CloudFirewall) bool { return holds(inbound(fw), worldPorts(first)...) })
	time.Sleep(1100 * time.Millisecond) // creation times are in seconds
	second := nodePortService(t, "default", "fw-lim-2", 20)
	time.Sleep(1100 * time.Millisecond)
	third := nodePortService(t, "default", "fw-lim-3", 5)
	want := slices.Concat(operatorRules, worldPorts(first), worldPorts(third))
	slices.Sort(want)
	e.waitFirewall("fw-lim-1's and fw-lim-3's node ports beside the operator's rules, fw-lim-2's left out", func(fw fakedo.CloudFirewall) bool {
		return slices.Equal(inbound(fw), want)
	})
	var evs []string
	eventually(t, 30*time.Second, "a "+digitalocean.ReasonFirewallRuleLimit+" warning on fw-lim-2", func() (bool, string) {
		evs = warningsWith(t, "default", second.Name, digitalocean.ReasonFirewallRuleLimit)
		return len(evs) > 0, fmt.Sprintf("events %q", serviceEvents(t, "default", second.Name))
	})
	if len(evs) != 1 || !strings.Contains(evs[0], "20 of this Service's rules") || !strings.Contains(evs[0], "50 rules") ||
		!strings.Contains(evs[0], fmt.Sprintf("tcp %d", second.Spec.Ports[0].NodePort)) {
		t.Errorf("fw-lim-2: %q", evs)
	}
	for _, s := range []*v1.Service{first, third} {
		if evs := warningsWith(t, "default", s.Name, digitalocean.ReasonFirewallRuleLimit); len(evs) != 0 {
			t.Errorf("%s, which fits: %q", s.Name, evs)
		}
	}

	// Room made: the Service left out comes in.
	deleteNSServiceAndWait(t, "default", first.Name, 30*time.Second)
	want = slices.Concat(operatorRules, worldPorts(second), worldPorts(third))
	slices.Sort(want)
	e.waitFirewall("fw-lim-2's node ports once fw-lim-1 is gone", func(fw fakedo.CloudFirewall) bool { return slices.Equal(inbound(fw), want) })
	if n := e.fake.Faults().Responses("PUT /v2/firewalls/{id}")[422]; n != 0 {
		t.Errorf("%d updates refused by DigitalOcean", n)
	}
}

// (c) A tenant's Service asking for another's load balancer is refused,
// and the firewall opens none of its ports; its owner's stay open.
func TestDigitalOceanFirewallNoRulesForRefusedServices(t *testing.T) {
	e, _ := lbNodes(t, 2, withFirewall)
	rn := map[string]string{"service.beta.kubernetes.io/do-loadbalancer-type": "REGIONAL_NETWORK"}
	with := func(kv ...string) map[string]string {
		m := maps.Clone(rn)
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	nsService(t, victimNS, "fw-web", with(), nil, tcp(443))
	web := waitNSIngress(t, victimNS, "fw-web", 90*time.Second)
	lbID := web.Annotations[digitalocean.AnnLoadBalancerID]
	lb, ok := e.fake.LoadBalancer(lbID)
	if !ok {
		t.Fatalf("fw-web's load balancer %q does not exist", lbID)
	}
	e.waitFirewall("fw-web's rules", func(fw fakedo.CloudFirewall) bool {
		return holds(inbound(fw), "tcp 443 world", "tcp 10256 lb="+lbID)
	})

	nsService(t, thiefNS, "fw-by-id", with(digitalocean.AnnLoadBalancerID, lbID), nil, tcp(8443))
	nsService(t, thiefNS, "fw-by-name", with(digitalocean.AnnName, lb.Name), nil, tcp(8444))
	waitRefused(t, thiefNS, "fw-by-id", victimNS+"/fw-web")
	waitRefused(t, thiefNS, "fw-by-name", victimNS+"/fw-web")
	// A Service made after them: once its port is open, the firewall has
	// seen the tenant's Services.
	marker := nodePortService(t, thiefNS, "fw-marker", 1)
	fw := e.waitFirewall("fw-marker's node port", func(fw fakedo.CloudFirewall) bool { return holds(inbound(fw), worldPorts(marker)...) })
	in := inbound(fw)
	for _, port := range []string{"tcp 8443 world", "tcp 8444 world"} {
		if slices.Contains(in, port) {
			t.Errorf("the firewall opens %s for a Service polyccm refused: %q", port, in)
		}
	}
	if !holds(in, "tcp 443 world", "tcp 10256 lb="+lbID) {
		t.Errorf("fw-web's rules are gone: %q", in)
	}
	for _, name := range []string{"fw-by-id", "fw-by-name"} {
		eventually(t, 30*time.Second, "a "+digitalocean.ReasonFirewallRulesNotOpened+" warning on "+name, func() (bool, string) {
			evs := warningsWith(t, thiefNS, name, digitalocean.ReasonFirewallRulesNotOpened)
			return len(evs) == 1 && strings.Contains(evs[0], lbID), fmt.Sprintf("events %q", serviceEvents(t, thiefNS, name))
		})
	}

	for _, s := range []struct{ ns, name string }{{thiefNS, "fw-by-id"}, {thiefNS, "fw-by-name"}, {thiefNS, "fw-marker"}, {victimNS, "fw-web"}} {
		deleteNSServiceAndWait(t, s.ns, s.name, 60*time.Second)
	}
	if _, ok := e.fake.LoadBalancer(lbID); ok {
		t.Errorf("fw-web's load balancer outlived it")
	}
}

// checkFirewallUnchanged: the plan's firewall task would change nothing
// and warn of nothing.
func checkFirewallUnchanged(t *testing.T, r planRun) {
	t.Helper()
	i := slices.IndexFunc(r.report.Tasks, func(p planning.TaskPlan) bool { return p.Task == digitalocean.FirewallTaskName })
	if i < 0 {
		t.Errorf("the plan says nothing of the firewall: tasks %+v", r.report.Tasks)
		return
	}
	p := r.report.Tasks[i]
	if p.Action != planning.Nothing || len(p.Changes) != 0 {
		t.Errorf("the plan's firewall task: %s %s, changes %+v; want nothing", p.Action, p.Message, p.Changes)
	}
	for _, ev := range p.Events {
		if ev.Type == v1.EventTypeWarning {
			t.Errorf("the plan's firewall task: a Warning %s on %s: %s", ev.Reason, ev.Object, ev.Message)
		}
	}
}
