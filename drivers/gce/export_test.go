package gce

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// PlanOf observes the Service's load balancer and plans its sync without
// applying it, for tests that apply the plan themselves. It runs through
// core's sync, so the claims are judged as in EnsureLoadBalancer; the
// plan it hands core is empty, so nothing is applied.
func PlanOf(ctx context.Context, cloud driver.Cloud, svc *v1.Service, nodes []*v1.Node) (*loadbalancers.Plan, error) {
	l := cloud.(*Cloud).lbs
	c := &planCapture{loadBalancers: l}
	if _, err := loadbalancers.Sync(c, l.own).EnsureLoadBalancer(ctx, "", svc, nodes); err != nil {
		return nil, err
	}
	if c.plan == nil {
		return &loadbalancers.Plan{}, nil
	}
	return c.plan, nil
}

// planCapture keeps the plan of a sync and hands core an empty one.
type planCapture struct {
	*loadBalancers
	plan *loadbalancers.Plan
}

func (c *planCapture) Plan(ctx context.Context, svc *v1.Service, o *loadbalancers.Observed, j *loadbalancers.Judgement) (*loadbalancers.SyncPlan, error) {
	p, err := c.loadBalancers.Plan(ctx, svc, o, j)
	if err != nil || p == nil {
		return p, err
	}
	c.plan = &p.Plan
	return &loadbalancers.SyncPlan{LoadBalancer: p.LoadBalancer}, nil
}
