package loadbalancers

import (
	"context"
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// translator plans one change and records what core does with it.
type translator struct {
	applied, held, released int
	gotBase                 []any
	fail                    error
	deleted                 int
}

func (t *translator) Name(*v1.Service) string { return "lb" }
func (t *translator) Status(context.Context, *v1.Service) (*v1.LoadBalancerStatus, *Resource, bool, error) {
	return nil, nil, false, nil
}
func (t *translator) Deletion(context.Context, *v1.Service) (*Deletion, error) {
	return &Deletion{Steps: []DeleteStep{{Run: func(context.Context) error { t.deleted++; return nil }}}}, nil
}
func (t *translator) Observe(_ context.Context, _ *v1.Service, _ []*v1.Node, kind SyncKind, base any) (*Observed, error) {
	t.gotBase = append(t.gotBase, base)
	return &Observed{LoadBalancer: "lb", State: kind}, nil
}
func (t *translator) Plan(_ context.Context, _ *v1.Service, obs *Observed, _ *Judgement) (*SyncPlan, error) {
	p := &SyncPlan{LoadBalancer: "lb", Status: func(context.Context) (*v1.LoadBalancerStatus, error) {
		return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: "192.0.2.1"}}}, nil
	}}
	p.Plan.Add(Change{Action: Update, Kind: "load balancer", Name: "lb", Fields: []Field{{Name: "x", From: "1", To: "2"}},
		Apply: func(context.Context) error { t.applied++; return t.fail }})
	p.Hold = func(ctx context.Context) (context.Context, func(bool)) {
		t.held++
		return ctx, func(bool) { t.released++ }
	}
	if obs.State == FullSync {
		p.Base = "full"
	}
	p.Failed = func(err error) error { return errors.Join(errors.New("seen by the driver"), err) }
	return p, nil
}

func TestSyncRunsThePlan(t *testing.T) {
	tr := &translator{}
	lb := Sync(tr, NewOwnership(Options{Cloud: "Example"}))
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{UID: "u1"}}
	ctx := context.Background()

	st, err := lb.EnsureLoadBalancer(ctx, "c", svc, nil)
	if err != nil || st == nil || st.Ingress[0].IP != "192.0.2.1" || tr.applied != 1 || tr.held != 1 || tr.released != 1 {
		t.Fatalf("ensure: %+v, %v; applied %d, held %d, released %d", st, err, tr.applied, tr.held, tr.released)
	}
	// The node sync gets what the full sync left.
	if err := lb.UpdateLoadBalancer(ctx, "c", svc, nil); err != nil || tr.gotBase[1] != "full" {
		t.Fatalf("update: %v; base %v", err, tr.gotBase)
	}
	// A dry run applies nothing and leaves the base as it was.
	dctx, dry := WithDryRun(ctx)
	if _, err := lb.EnsureLoadBalancer(dctx, "c", svc, nil); !errors.Is(err, ErrPlanned) || tr.applied != 2 || len(dry.Changes()) != 1 {
		t.Fatalf("dry run: %v; applied %d, recorded %v", err, tr.applied, dry.Changes())
	}
	if err := lb.UpdateLoadBalancer(ctx, "c", svc, nil); err != nil || tr.gotBase[3] != "full" {
		t.Fatalf("after the dry run the base is %v, want the full sync's", tr.gotBase)
	}
	// A failed full sync leaves no base; the driver sees the error.
	tr.fail = errors.New("boom")
	if _, err := lb.EnsureLoadBalancer(ctx, "c", svc, nil); err == nil || err.Error() == "boom" {
		t.Fatalf("a failed apply: %v, want the driver's Failed to see it", err)
	}
	tr.fail = nil
	if err := lb.UpdateLoadBalancer(ctx, "c", svc, nil); err != nil || tr.gotBase[5] != nil {
		t.Fatalf("after a failed full sync the base is %v, want none", tr.gotBase)
	}
	// Deleting forgets the base.
	if _, err := lb.EnsureLoadBalancer(ctx, "c", svc, nil); err != nil {
		t.Fatal(err)
	}
	if err := lb.EnsureLoadBalancerDeleted(ctx, "c", svc); err != nil || tr.deleted != 1 {
		t.Fatal(err)
	}
	if err := lb.UpdateLoadBalancer(ctx, "c", svc, nil); err != nil || tr.gotBase[len(tr.gotBase)-1] != nil {
		t.Fatalf("after the delete the base is %v, want none", tr.gotBase)
	}
}
