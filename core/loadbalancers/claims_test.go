package loadbalancers_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/loadbalancers"
)

// claimer is a driver that observes fixed claims and records what core
// lets it do.
type claimer struct {
	claims   []loadbalancers.Claim
	status   *loadbalancers.Resource
	steps    []loadbalancers.DeleteStep
	planned  int
	adopted  []bool
	check    []loadbalancers.Resource // asked of Judgement.Adopted
	deletion bool
	onPlan   func(j *loadbalancers.Judgement)
	halt     error
}

func (c *claimer) Name(*v1.Service) string { return "lb" }
func (c *claimer) Status(context.Context, *v1.Service) (*v1.LoadBalancerStatus, *loadbalancers.Resource, bool, error) {
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: "192.0.2.9"}}}, c.status, true, nil
}
func (c *claimer) Observe(context.Context, *v1.Service, []*v1.Node, loadbalancers.SyncKind, any) (*loadbalancers.Observed, error) {
	o := &loadbalancers.Observed{LoadBalancer: "lb", Claims: c.claims}
	if c.halt != nil {
		o.Halt = func() error { return c.halt }
	}
	return o, nil
}
func (c *claimer) Plan(_ context.Context, _ *v1.Service, _ *loadbalancers.Observed, j *loadbalancers.Judgement) (*loadbalancers.SyncPlan, error) {
	c.planned++
	if c.onPlan != nil {
		c.onPlan(j)
	}
	c.adopted = nil
	for _, r := range c.check {
		c.adopted = append(c.adopted, j.Adopted(r))
	}
	return &loadbalancers.SyncPlan{LoadBalancer: "lb"}, nil
}
func (c *claimer) Deletion(context.Context, *v1.Service) (*loadbalancers.Deletion, error) {
	if !c.deletion {
		return nil, nil
	}
	return &loadbalancers.Deletion{Steps: c.steps}, nil
}

func TestClaimsAreJudgedBeforeThePlan(t *testing.T) {
	victim := service("team-a", "web", uidA, nil, "203.0.113.10")
	thief := service("team-b", "thief", uidB, nil, "")
	victims := loadbalancers.Resource{Kind: "load balancer", ID: "lb-1", Name: loadbalancers.DefaultName(victim), UIDMark: loadbalancers.UIDMark(loadbalancers.DefaultName(victim))}
	unmarked := loadbalancers.Resource{Kind: "security group", ID: "sg-1", Name: "by-hand"}
	ctx := context.Background()

	// Another Service's load balancer: refused with a Warning event, and
	// the driver never plans; a claim after it is not asked.
	e := newEnv(t, true, false, victim, thief)
	c := &claimer{claims: []loadbalancers.Claim{loadbalancers.ResourceClaim(victims), loadbalancers.ResourceClaim(unmarked)}}
	lb := loadbalancers.Sync(c, e.own)
	_, err := lb.EnsureLoadBalancer(ctx, "c", thief, nil)
	if !loadbalancers.IsNotOwned(err) || c.planned != 0 {
		t.Fatalf("ensure: %v; planned %d times, want a refusal and no plan", err, c.planned)
	}
	if ev := e.events(); len(ev) != 1 || !strings.Contains(ev[0], loadbalancers.ReasonNotOwned) || !strings.Contains(ev[0], "team-a/web") {
		t.Errorf("events %q, want one refusal naming the owner", ev)
	}
	if err := lb.UpdateLoadBalancer(ctx, "c", thief, nil); !loadbalancers.IsNotOwned(err) || c.planned != 0 {
		t.Fatalf("node sync: %v; planned %d times", err, c.planned)
	}

	// Nobody's, with adopting allowed: the plan hears it was adopted.
	e.events()
	c.claims, c.check = []loadbalancers.Claim{loadbalancers.ResourceClaim(unmarked)}, []loadbalancers.Resource{unmarked, victims}
	if _, err := lb.EnsureLoadBalancer(ctx, "c", thief, nil); err != nil || c.planned != 1 || !c.adopted[0] || c.adopted[1] {
		t.Fatalf("ensure: %v; planned %d, adopted %v, want the claimed group adopted and nothing else", err, c.planned, c.adopted)
	}
	if ev := e.events(); len(ev) != 1 || !strings.Contains(ev[0], loadbalancers.ReasonAdopted) {
		t.Errorf("events %q, want the adoption", ev)
	}

	// Without adopting, the same group is refused.
	e2 := newEnv(t, false, false, thief)
	c2 := &claimer{claims: []loadbalancers.Claim{loadbalancers.ResourceClaim(unmarked)}}
	if _, err := loadbalancers.Sync(c2, e2.own).EnsureLoadBalancer(ctx, "c", thief, nil); !loadbalancers.IsNotOwned(err) || c2.planned != 0 {
		t.Fatalf("without adopting: %v; planned %d", err, c2.planned)
	}
}

func TestAddressClaims(t *testing.T) {
	holder := service("team-a", "web", uidA, nil, "203.0.113.10")
	sameNS := service("team-a", "udp", "11111111-2222-3333-4444-555555555555", nil, "")
	asker := service("team-b", "api", uidB, nil, "")
	e := newEnv(t, false, false, holder, sameNS, asker)
	ctx := context.Background()
	run := func(svc *v1.Service, a loadbalancers.AddressClaim) error {
		c := &claimer{claims: []loadbalancers.Claim{{Address: &a}}}
		_, err := loadbalancers.Sync(c, e.own).EnsureLoadBalancer(ctx, "c", svc, nil)
		if err == nil && c.planned != 1 || err != nil && c.planned != 0 {
			t.Errorf("planned %d times with error %v", c.planned, err)
		}
		return err
	}
	// Another namespace's Service's status holds it.
	if err := run(asker, loadbalancers.AddressClaim{Via: "spec.loadBalancerIP", Want: []string{"203.0.113.10"}}); !loadbalancers.IsNotOwned(err) || !strings.Contains(err.Error(), "team-a/web") {
		t.Errorf("held by another namespace: %v", err)
	}
	// A cloud user named from a Service of the same namespace may share it;
	// one named from another namespace's, or by hand, may not.
	user := func(name string) loadbalancers.AddressUser {
		return loadbalancers.AddressUser{Address: "Example address 198.51.100.4", Holder: "the reserved address ip-1", Kind: "forwarding rule", Name: name}
	}
	if err := run(sameNS, loadbalancers.AddressClaim{Via: "spec.loadBalancerIP", Want: []string{"198.51.100.4"}, Users: []loadbalancers.AddressUser{user(loadbalancers.DefaultName(holder))}}); err != nil {
		t.Errorf("shared within a namespace: %v", err)
	}
	err := run(asker, loadbalancers.AddressClaim{Via: "spec.loadBalancerIP", Want: []string{"198.51.100.4"}, Users: []loadbalancers.AddressUser{user(loadbalancers.DefaultName(holder))}})
	if !loadbalancers.IsNotOwned(err) || !strings.Contains(err.Error(), "the reserved address ip-1 is used by forwarding rule") || !strings.Contains(err.Error(), "change spec.loadBalancerIP") {
		t.Errorf("used by another namespace's rule: %v", err)
	}
	if err := run(sameNS, loadbalancers.AddressClaim{Via: "spec.loadBalancerIP", Want: []string{"198.51.100.4"}, Users: []loadbalancers.AddressUser{user("by-hand")}}); !loadbalancers.IsNotOwned(err) {
		t.Errorf("used by a rule made by hand: %v", err)
	}
}

func TestReadOnlyClaimWritesNoRecord(t *testing.T) {
	svc := service("team-a", "web", uidA, map[string]string{annID: "lb-7"}, "203.0.113.7")
	e := newEnv(t, false, true, svc)
	r := loadbalancers.Resource{Kind: "load balancer", ID: "lb-7", Name: "shop", Addresses: []string{"203.0.113.7"}, Via: "the annotation " + annID}
	ctx := context.Background()
	patched := func() int {
		n := 0
		for _, a := range e.kube.Actions() {
			if a.GetVerb() == "patch" {
				n++
			}
		}
		return n
	}
	c := &claimer{claims: []loadbalancers.Claim{{Resource: &r, ReadOnly: true}}}
	if _, err := loadbalancers.Sync(c, e.own).EnsureLoadBalancer(ctx, "c", svc, nil); err != nil || patched() != 0 {
		t.Fatalf("read-only: %v; %d patches, want none", err, patched())
	}
	c.claims = []loadbalancers.Claim{loadbalancers.ResourceClaim(r)}
	if _, err := loadbalancers.Sync(c, e.own).EnsureLoadBalancer(ctx, "c", svc, nil); err != nil || patched() != 1 {
		t.Fatalf("a change: %v; %d patches, want the record", err, patched())
	}
}

func TestDeletionStepsAreGuarded(t *testing.T) {
	victim := service("team-a", "web", uidA, nil, "203.0.113.10")
	thief := service("team-b", "thief", uidB, nil, "")
	e := newEnv(t, false, false, victim, thief)
	ctx := context.Background()
	victims := loadbalancers.Resource{Kind: "security group", ID: "sg-9", Name: "k8s-elb-" + loadbalancers.DefaultName(victim), UIDMark: loadbalancers.UIDMark(loadbalancers.DefaultName(victim))}
	mine := loadbalancers.Resource{Kind: "load balancer", ID: "lb-2", Name: loadbalancers.DefaultName(thief), UIDMark: loadbalancers.UIDMark(loadbalancers.DefaultName(thief))}
	var ran []string
	step := func(name string, guard *loadbalancers.Resource, stop bool) loadbalancers.DeleteStep {
		return loadbalancers.DeleteStep{Guard: guard, StopIfRefused: stop, Run: func(context.Context) error { ran = append(ran, name); return nil }}
	}
	c := &claimer{deletion: true, steps: []loadbalancers.DeleteStep{step("lb", &mine, true), step("victim's group", &victims, false), step("rules", nil, false)}}
	lb := loadbalancers.Sync(c, e.own)
	if err := lb.EnsureLoadBalancerDeleted(ctx, "c", thief); err != nil || strings.Join(ran, ",") != "lb,rules" {
		t.Fatalf("delete: %v; ran %v, want the load balancer and the rules, not the other Service's group", err, ran)
	}
	if ev := e.events(); len(ev) != 1 || !strings.Contains(ev[0], "Not deleting Example security group") {
		t.Errorf("events %q", ev)
	}
	// A refused step the rest hang on ends the deletion, without an error.
	ran = nil
	c.steps = []loadbalancers.DeleteStep{step("victim's group", &victims, true), step("rules", nil, false)}
	if err := lb.EnsureLoadBalancerDeleted(ctx, "c", thief); err != nil || len(ran) != 0 {
		t.Fatalf("delete: %v; ran %v, want nothing", err, ran)
	}
	// Nothing to delete.
	c.deletion = false
	if err := lb.EnsureLoadBalancerDeleted(ctx, "c", thief); err != nil {
		t.Fatal(err)
	}
}

func TestStatusIsReportedOnlyForTheOwner(t *testing.T) {
	victim := service("team-a", "web", uidA, nil, "203.0.113.10")
	thief := service("team-b", "thief", uidB, nil, "")
	e := newEnv(t, false, false, victim, thief)
	victims := loadbalancers.Resource{Kind: "load balancer", ID: "lb-1", Name: loadbalancers.DefaultName(victim), UIDMark: loadbalancers.UIDMark(loadbalancers.DefaultName(victim))}
	c := &claimer{status: &victims}
	lb := loadbalancers.Sync(c, e.own)
	ctx := context.Background()
	if st, exists, err := lb.GetLoadBalancer(ctx, "c", thief); err != nil || exists || st != nil {
		t.Errorf("another's: %v, %v, %v; want none", st, exists, err)
	}
	if st, exists, err := lb.GetLoadBalancer(ctx, "c", victim); err != nil || !exists || st == nil {
		t.Errorf("its own: %v, %v, %v", st, exists, err)
	}
	c.status = nil // the name proves it
	if _, exists, err := lb.GetLoadBalancer(ctx, "c", thief); err != nil || !exists {
		t.Errorf("unjudged: %v, %v", exists, err)
	}
}

// A claimed resource the sync lets go of may be deleted only if it is
// marked as the Service's: one only adopted stays, with a Warning.
func TestMayDeleteOnlyWhatIsMarked(t *testing.T) {
	svc := service("team-a", "web", uidA, nil, "")
	e := newEnv(t, true, false, svc)
	adopted := loadbalancers.Resource{Kind: "security group", ID: "sg-1", Name: "by-hand"}
	marked := loadbalancers.Resource{Kind: "security group", ID: "sg-2", Name: "k8s-elb-" + loadbalancers.DefaultName(svc), UIDMark: loadbalancers.UIDMark(loadbalancers.DefaultName(svc))}
	var got []bool
	c := &claimer{claims: []loadbalancers.Claim{loadbalancers.ResourceClaim(adopted), loadbalancers.ResourceClaim(marked)}, onPlan: func(j *loadbalancers.Judgement) {
		for _, r := range []loadbalancers.Resource{adopted, marked} {
			ok, err := j.MayDelete(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ok)
		}
	}}
	if _, err := loadbalancers.Sync(c, e.own).EnsureLoadBalancer(context.Background(), "c", svc, nil); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] || !got[1] {
		t.Errorf("may delete (adopted, marked) = %v, want [false true]", got)
	}
	ev := e.events()
	if !slices.ContainsFunc(ev, func(s string) bool { return strings.Contains(s, "Not deleting Example security group by-hand") }) {
		t.Errorf("events %q, want the adopted group's Warning", ev)
	}
}

// An observation stopped after some claims: a refusal of what was read
// before still comes first; otherwise the halt's error, and no plan.
func TestHaltComesAfterTheClaims(t *testing.T) {
	victim := service("team-a", "web", uidA, nil, "203.0.113.10")
	thief := service("team-b", "thief", uidB, nil, "")
	e := newEnv(t, false, false, victim, thief)
	victims := loadbalancers.Resource{Kind: "load balancer", ID: "lb-1", Name: loadbalancers.DefaultName(victim), UIDMark: loadbalancers.UIDMark(loadbalancers.DefaultName(victim))}
	halt := errors.New("reading the listeners failed")
	c := &claimer{claims: []loadbalancers.Claim{loadbalancers.ResourceClaim(victims)}, halt: halt}
	lb := loadbalancers.Sync(c, e.own)
	if _, err := lb.EnsureLoadBalancer(context.Background(), "c", thief, nil); !loadbalancers.IsNotOwned(err) || c.planned != 0 {
		t.Fatalf("a refused claim before the halt: %v, planned %d", err, c.planned)
	}
	c.claims = nil
	if _, err := lb.EnsureLoadBalancer(context.Background(), "c", thief, nil); !errors.Is(err, halt) || c.planned != 0 {
		t.Fatalf("no claim refused: %v, planned %d; want the halt's error and no plan", err, c.planned)
	}
}

// A deletion whose reading failed after some steps runs them, then fails.
func TestDeletionFailAfter(t *testing.T) {
	boom := errors.New("describing the groups failed")
	if d, err := (&loadbalancers.Deletion{}).FailAfter(boom); d != nil || !errors.Is(err, boom) {
		t.Errorf("with no steps: %v, %v; want the error at once", d, err)
	}
	ran := 0
	d := &loadbalancers.Deletion{Steps: []loadbalancers.DeleteStep{{Run: func(context.Context) error { ran++; return nil }}}}
	d, err := d.FailAfter(boom)
	if err != nil || len(d.Steps) != 2 {
		t.Fatalf("with a step: %v, %d steps", err, len(d.Steps))
	}
	svc := service("team-a", "web", uidA, nil, "")
	e := newEnv(t, false, false, svc)
	c := &claimer{deletion: true, steps: d.Steps}
	if err := loadbalancers.Sync(c, e.own).EnsureLoadBalancerDeleted(context.Background(), "c", svc); !errors.Is(err, boom) || ran != 1 {
		t.Errorf("delete: %v, ran %d; want the step run, then the error", err, ran)
	}
}
