package digitalocean_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/polyccm/polyccm/core/loadbalancers"
	"github.com/polyccm/polyccm/drivers/digitalocean"
	fake "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
)

// firewallRemovals reads polyccm_digitalocean_firewall_removals_total.
func firewallRemovals(t *testing.T, what string) float64 {
	t.Helper()
	mfs, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "polyccm_digitalocean_firewall_removals_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == "what" && l.GetValue() == what }) {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// An operator's rule of polyccm's shape and a tag polyccm was not given go,
// as with the DigitalOcean CCM, but each is said on the firewall's
// Services and counted; polyccm's own rules going with their Service are
// not.
func TestFirewallRemovalsAreSaid(t *testing.T) {
	e := newFWEnv(t)
	world := fake.FirewallTargets{Addresses: []string{"0.0.0.0/0", "::/0"}}
	e.fake.AddFirewall(fake.CloudFirewall{
		Name:          fwName,
		InboundRules:  []fake.FirewallRule{{Protocol: "tcp", Ports: "22", Targets: world}},
		OutboundRules: []fake.FirewallRule{{Protocol: "icmp", Targets: world}},
		Tags:          []string{fwTag, "ops-extra"},
	})
	rules0, tags0 := firewallRemovals(t, "inbound_rule"), firewallRemovals(t, "tag")
	np := e.create(nodePortSvc("np", nil, fwPort(v1.ProtocolTCP, 80, 30080)))
	other := e.create(nodePortSvc("other", nil, fwPort(v1.ProtocolTCP, 81, 30081)))
	e.start()
	e.rulesAre(fwWorld("tcp", 30080), fwWorld("tcp", 30081), fwOutTCP, fwOutUDP, fwOutICMP)

	var ev []string
	e.eventually("FirewallRuleRemoved events", func() bool { ev = e.seen(digitalocean.ReasonFirewallRuleRemoved); return len(ev) >= 2 })
	if len(ev) != 2 {
		t.Errorf("events = %q, want one on each of the firewall's two Services", ev)
	}
	for _, m := range ev {
		if !strings.HasPrefix(m, "Warning ") || !strings.Contains(m, "inbound tcp 22 from anywhere") || !strings.Contains(m, "the tag ops-extra") ||
			strings.Contains(m, "the tag "+fwTag) || !strings.Contains(m, "another firewall") {
			t.Errorf("event %q", m)
		}
	}
	if d := firewallRemovals(t, "inbound_rule") - rules0; d != 1 {
		t.Errorf("removals_total{what=inbound_rule} rose by %v, want 1", d)
	}
	if d := firewallRemovals(t, "tag") - tags0; d != 1 {
		t.Errorf("removals_total{what=tag} rose by %v, want 1", d)
	}

	// Its own rules going with their Service are not news.
	e.remove(other)
	e.rulesAre(fwWorld("tcp", 30080), fwOutTCP, fwOutUDP, fwOutICMP)
	e.resyncs(2)
	if ev := e.seen(digitalocean.ReasonFirewallRuleRemoved); len(ev) != 2 {
		t.Errorf("events after a Service's own rule went: %q", ev)
	}
	if d := firewallRemovals(t, "inbound_rule") - rules0; d != 1 {
		t.Errorf("removals_total{what=inbound_rule} rose by %v, want still 1", d)
	}
	_ = np
}

// limitSvc is a NodePort Service with n ports from base, created at the
// given second.
func (e *fwEnv) limitSvc(name string, at int, base int32, n int) *v1.Service {
	e.t.Helper()
	var ports []v1.ServicePort
	for i := range n {
		ports = append(ports, fwPort(v1.ProtocolTCP, int32(1000+i), base+int32(i)))
	}
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, UID: fwUID(name),
			CreationTimestamp: metav1.NewTime(time.Date(2024, 1, 1, 0, 0, at, 0, time.UTC))},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeNodePort, Ports: ports},
	}
	got, err := e.kube.CoreV1().Services("shop").Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

func portRules(base, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fwWorld("tcp", base+i))
	}
	return out
}

// Over DigitalOcean's 50 rules, what fits is applied, oldest Service
// first, and each Service left out is told; when room is made it comes in.
func TestFirewallRuleLimit(t *testing.T) {
	e := newFWEnv(t)
	var operator []fake.FirewallRule
	var operatorRules []string
	for i := range 10 {
		operator = append(operator, fake.FirewallRule{Protocol: "tcp", Ports: fmt.Sprint(2000 + i), Targets: fake.FirewallTargets{Addresses: []string{"10.0.0.0/8"}}})
		operatorRules = append(operatorRules, fmt.Sprintf("in tcp %d allow addrs=10.0.0.0/8", 2000+i))
	}
	e.fake.AddFirewall(fake.CloudFirewall{Name: fwName, Tags: []string{fwTag}, InboundRules: operator})
	// 50 - 10 of the operator's - 3 outbound: 37 for the Services.
	old := e.limitSvc("old", 1, 30100, 20)
	e.limitSvc("mid", 2, 30200, 20) // 40 > 37: left out
	e.limitSvc("new", 3, 30300, 5)  // 25: fits
	e.start()

	want := append(slices.Clone(operatorRules), fwOutTCP, fwOutUDP, fwOutICMP)
	e.rulesAre(slices.Concat(want, portRules(30100, 20), portRules(30300, 5))...)
	var ev []string
	e.eventually("a FirewallRuleLimitReached event", func() bool { ev = e.seen(digitalocean.ReasonFirewallRuleLimit); return len(ev) > 0 })
	if len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning ") || !strings.Contains(ev[0], "20 of this Service's rules") ||
		!strings.Contains(ev[0], "tcp 30200, tcp 30201") || !strings.Contains(ev[0], "50 rules") || !strings.Contains(ev[0], "leave 37") {
		t.Errorf("events = %q, want one on shop/mid", ev)
	}
	e.resyncs(3)
	if ev := e.seen(digitalocean.ReasonFirewallRuleLimit); len(ev) != 1 {
		t.Errorf("the limit said again and again: %q", ev)
	}

	// Room made: the Service left out comes in.
	e.remove(old)
	e.rulesAre(slices.Concat(want, portRules(30200, 20), portRules(30300, 5))...)
	if n := e.fake.Faults().Responses(fwPut)[422] + e.fake.Faults().Responses(fwPost)[422]; n != 0 {
		t.Errorf("%d writes over the limit refused", n)
	}
}

// A Service asking for another's load balancer gets no rule, and is told
// why; its owner's rules stay.
func TestFirewallNoRulesForServicesNotServed(t *testing.T) {
	e := newFWEnv(t)
	tcp := v1.ProtocolTCP
	lb := e.ownLB("web")
	e.create(fwSvc{name: "web", typ: v1.ServiceTypeLoadBalancer, ann: map[string]string{digitalocean.AnnLoadBalancerID: lb.ID},
		ports: []v1.ServicePort{fwPort(tcp, 443, 31443)}})
	e.create(fwSvc{name: "thief", typ: v1.ServiceTypeLoadBalancer, ann: map[string]string{digitalocean.AnnLoadBalancerID: lb.ID},
		ports: []v1.ServicePort{fwPort(tcp, 8443, 31843)}})
	e.create(fwSvc{name: "by-name", typ: v1.ServiceTypeLoadBalancer, ann: map[string]string{digitalocean.AnnName: lb.Name},
		ports: []v1.ServicePort{fwPort(tcp, 8444, 31844)}})
	// Invalid annotations and no load balancer: none will be made.
	e.create(fwSvc{name: "invalid", typ: v1.ServiceTypeLoadBalancer, ann: map[string]string{digitalocean.AnnSizeUnit: "lots"},
		ports: []v1.ServicePort{fwPort(tcp, 8445, 31845)}})
	// Not made yet: its ports open before, as with the DigitalOcean CCM.
	e.create(fwSvc{name: "new", typ: v1.ServiceTypeLoadBalancer, ports: []v1.ServicePort{fwPort(tcp, 8446, 31846)}})
	e.start()

	e.rulesAre("in tcp 10256 allow lbs="+lb.ID, fwWorld("tcp", 443), fwWorld("tcp", 10256), fwWorld("tcp", 8446), fwOutTCP, fwOutUDP, fwOutICMP)
	var ev []string
	e.eventually("FirewallRulesNotOpened events", func() bool { ev = e.seen(digitalocean.ReasonFirewallRulesNotOpened); return len(ev) >= 3 })
	slices.Sort(ev)
	if len(ev) != 3 {
		t.Fatalf("events = %q, want one each on thief, by-name and invalid", ev)
	}
	for _, m := range ev {
		if !strings.HasPrefix(m, "Warning ") {
			t.Errorf("event %q", m)
		}
	}
	if n := slices.IndexFunc(ev, func(m string) bool {
		return strings.Contains(m, lb.ID) && strings.Contains(m, "is not its own") && strings.Contains(m, loadbalancers.ReasonNotOwned)
	}); n < 0 {
		t.Errorf("no event names the load balancer that is not the Service's own: %q", ev)
	}
	if !slices.ContainsFunc(ev, func(m string) bool { return strings.Contains(m, "annotations are invalid") }) {
		t.Errorf("no event says the annotations are invalid: %q", ev)
	}
	e.resyncs(3)
	if got := e.seen(digitalocean.ReasonFirewallRulesNotOpened); len(got) != 3 {
		t.Errorf("said again and again: %q", got)
	}
}

// polyccm plan: one pass under a dry run shows the change and makes none.
func TestFirewallPlan(t *testing.T) {
	e := newFWEnv(t)
	world := fake.FirewallTargets{Addresses: []string{"0.0.0.0/0", "::/0"}}
	fw := e.fake.AddFirewall(fake.CloudFirewall{
		Name:          fwName,
		InboundRules:  []fake.FirewallRule{{Protocol: "tcp", Ports: "22", Targets: world}},
		OutboundRules: []fake.FirewallRule{{Protocol: "icmp", Targets: world}, {Protocol: "tcp", Ports: "all", Targets: world}, {Protocol: "udp", Ports: "all", Targets: world}},
		Tags:          []string{fwTag, "ops-extra"},
	})
	e.create(nodePortSvc("np", nil, fwPort(v1.ProtocolTCP, 80, 30080)))
	task, _ := digitalocean.FirewallTaskEvery(e.cloud, time.Hour, time.Millisecond)
	if task.Plan == nil {
		t.Fatal("the firewall task cannot plan")
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.inf.Core().V1().Services().Informer()
	e.inf.Start(ctx.Done())
	defer func() {
		cancel()
		e.inf.Shutdown()
	}()

	dctx, dry := loadbalancers.WithDryRun(ctx)
	if err := task.Plan(dctx); !errors.Is(err, loadbalancers.ErrPlanned) {
		t.Fatalf("plan: %v, want ErrPlanned", err)
	}
	changes := dry.Changes()
	if len(changes) != 1 {
		t.Fatalf("changes %+v, want one", changes)
	}
	c := changes[0]
	got := c.String()
	for _, want := range []string{
		"update firewall " + fwName + " (" + fw.ID + ")",
		"inbound_rules inbound tcp 22 from anywhere (0.0.0.0/0, ::/0) (no Service polyccm serves asks for it) -> (removed)",
		"inbound_rules (none) -> inbound tcp 30080 from anywhere (0.0.0.0/0, ::/0) for shop/np",
		"tags [" + fwTag + " ops-extra] -> [" + fwTag + "]",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("change %s\nlacks %q", got, want)
		}
	}
	if n := e.calls(fwPut) + e.calls(fwPost); n != 0 {
		t.Errorf("the plan wrote the firewall %d times", n)
	}
	after, _ := e.firewall()
	if !slices.Equal(fwRules(after), fwRules(fw)) {
		t.Errorf("the firewall changed: %q", fwRules(after))
	}

	// Nothing to do: nothing planned.
	if err := e.fake.EditFirewall(fw.ID, func(f *fake.CloudFirewall) {
		f.InboundRules = []fake.FirewallRule{{Protocol: "tcp", Ports: "30080", Targets: world}}
		f.Tags = []string{fwTag}
	}); err != nil {
		t.Fatal(err)
	}
	dctx, dry = loadbalancers.WithDryRun(ctx)
	if err := task.Plan(dctx); err != nil || len(dry.Changes()) != 0 {
		t.Errorf("plan of a firewall up to date: %v, changes %+v", err, dry.Changes())
	}
}
