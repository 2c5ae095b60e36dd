package loadbalancers

import (
	"context"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
)

// A driver's load balancer code translates between a Service and its
// cloud; core runs the sync around it, the same for every driver: what the
// driver observed held to the ownership rule before anything is planned
// (and each deletion before it runs), the plan logged with one wording, applied in order (or, under `polyccm plan`'s dry
// run, recorded and stopped before anything changes), what the sync
// publishes read back, and what a full sync left kept for the node-only
// syncs that follow. Rules (live Nodes, the newest Service, one sync of a
// Service at a time) and Progress wrap it, as every load balancer.

// Translator is a driver's load balancer: what it reads, plans and
// publishes. Sync runs it.
type Translator interface {
	// Name is the load balancer's name for a Service
	// (cloudprovider.LoadBalancer.GetLoadBalancerName).
	Name(svc *v1.Service) string
	// Status reads what the Service's load balancer publishes, and the
	// resource it read it from (nil where the name alone proves it the
	// Service's): core reports it only if the ownership rule says that
	// resource is the Service's. exists is false only when the cloud
	// says there is none.
	Status(ctx context.Context, svc *v1.Service) (status *v1.LoadBalancerStatus, of *Resource, exists bool, err error)
	// Observe reads the Service, its target Nodes and the cloud for one
	// sync; it changes nothing. For a node sync (UpdateLoadBalancer, run
	// without creates), base is what the Service's last full sync left
	// (SyncPlan.Base), nil when there is none. Nil: nothing to sync.
	Observe(ctx context.Context, svc *v1.Service, nodes []*v1.Node, sync SyncKind, base any) (*Observed, error)
	// Plan plans the sync from what Observe read, once core has held its
	// claims to the ownership rule; it changes nothing. j answers which
	// claims were adopted, and judges what turns up while applying.
	Plan(ctx context.Context, svc *v1.Service, obs *Observed, j *Judgement) (*SyncPlan, error)
	// Deletion reads what deleting the Service's load balancer deletes;
	// core runs each step its guard allows. Nil: nothing to delete.
	Deletion(ctx context.Context, svc *v1.Service) (*Deletion, error)
}

// SyncKind says which sync a Plan is for.
type SyncKind int

const (
	// FullSync is EnsureLoadBalancer's: everything the Service asks for.
	FullSync SyncKind = iota
	// NodeSync is UpdateLoadBalancer's: a change of the node set.
	NodeSync
)

// SyncPlan is one sync of a Service, planned.
type SyncPlan struct {
	// LoadBalancer names the load balancer in logs.
	LoadBalancer string
	Plan         Plan
	// Status, after the plan is applied, reads back what the Service
	// publishes; it may return a PendingError (the cloud is still
	// building). Nil: nothing (a node sync, or nothing to sync).
	Status func(ctx context.Context) (*v1.LoadBalancerStatus, error)
	// Base, when set, is what this sync leaves for the node syncs that
	// follow; it is kept once the sync succeeded (not under a dry run).
	// A node sync that sets none keeps the base it was given.
	Base any
	// Hold, when set, is what applying runs under (a lock the driver's
	// deletions share): it returns the context to apply with and its
	// release, told whether the plan was applied (not under a dry run's
	// ErrPlanned, nor after a failure). A driver whose reads and changes
	// must run under one lock takes it in Plan and releases it here; Sync
	// calls Hold for every plan Plan returns.
	Hold func(ctx context.Context) (context.Context, func(applied bool))
	// Failed, when set, sees an error of applying first (to report it,
	// or to turn "busy" into a wait) and returns the error to give.
	Failed func(error) error
}

// Sync is the cloudprovider.LoadBalancer that runs a Translator under
// the ownership rule own.
func Sync(t Translator, own *Ownership) cloudprovider.LoadBalancer {
	if own == nil {
		panic("loadbalancers.Sync: no ownership rule") // a wiring mistake, caught by any test
	}
	return &syncer{t: t, own: own}
}

type syncer struct {
	t     Translator
	own   *Ownership
	bases Bases[any]
}

func (s *syncer) GetLoadBalancerName(_ context.Context, _ string, svc *v1.Service) string {
	return s.t.Name(svc)
}

func (s *syncer) GetLoadBalancer(ctx context.Context, _ string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	st, of, exists, err := s.t.Status(ctx, svc)
	if err != nil || !exists || of == nil {
		return st, exists, err
	}
	// Another's load balancer is not this Service's to report.
	if owns, err := s.own.Owns(ctx, svc, *of); err != nil || !owns {
		return nil, false, err
	}
	return st, true, nil
}

func (s *syncer) EnsureLoadBalancer(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	// What the last full sync left no longer holds once this one starts:
	// it may stop half done. A dry run changes nothing, so it still does.
	if DryRunFrom(ctx) == nil {
		s.bases.Forget(svc.UID)
	}
	p, err := s.plan(ctx, svc, nodes, FullSync, nil)
	if err != nil || p == nil {
		return nil, err
	}
	return s.run(ctx, svc, p)
}

func (s *syncer) UpdateLoadBalancer(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) error {
	base, _ := s.bases.Get(svc.UID)
	p, err := s.plan(ctx, svc, nodes, NodeSync, base)
	if err != nil || p == nil {
		return err
	}
	_, err = s.run(ctx, svc, p)
	return err
}

func (s *syncer) EnsureLoadBalancerDeleted(ctx context.Context, _ string, svc *v1.Service) error {
	s.bases.Forget(svc.UID) // nothing left for a node sync to follow
	d, err := s.t.Deletion(ctx, svc)
	if err != nil || d == nil {
		return err
	}
	return s.own.delete(ctx, svc, d)
}

// plan observes, holds what was observed to the ownership rule, and
// plans: nothing is planned, let alone changed, for a refused claim.
func (s *syncer) plan(ctx context.Context, svc *v1.Service, nodes []*v1.Node, kind SyncKind, base any) (*SyncPlan, error) {
	obs, err := s.t.Observe(ctx, svc, nodes, kind, base)
	if err != nil || obs == nil {
		return nil, err
	}
	j, err := s.own.judge(ctx, svc, obs)
	if err != nil {
		return nil, err
	}
	if obs.Halt != nil {
		return nil, obs.Halt()
	}
	return s.t.Plan(ctx, svc, obs, j)
}

// run logs the plan, applies it and reads back the status.
func (s *syncer) run(ctx context.Context, svc *v1.Service, p *SyncPlan) (*v1.LoadBalancerStatus, error) {
	p.Plan.Log(svc)
	if !p.Plan.Empty() {
		msg := "Updating load balancer"
		if p.Plan.creates() {
			msg = "Creating load balancer"
		}
		klog.InfoS(msg, "service", klog.KObj(svc), "loadBalancer", p.LoadBalancer, "changes", p.Plan.String())
	}
	actx, release := ctx, func(bool) {}
	if p.Hold != nil {
		actx, release = p.Hold(ctx)
	}
	err := p.Plan.Apply(actx)
	release(err == nil)
	if err != nil {
		if p.Failed != nil {
			err = p.Failed(err)
		}
		return nil, err
	}
	var st *v1.LoadBalancerStatus
	if p.Status != nil {
		if st, err = p.Status(ctx); err != nil {
			return nil, err
		}
	}
	if p.Base != nil {
		s.bases.Remember(ctx, svc.UID, p.Base)
	}
	return st, nil
}

// creates says whether the plan makes the load balancer itself.
func (p *Plan) creates() bool {
	for _, c := range p.Changes {
		if c.Action == Create && c.Kind == "load balancer" {
			return true
		}
	}
	return false
}
