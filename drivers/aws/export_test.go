package aws

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// The retry delays, for the black-box tests.
const (
	DeletePollInterval = deletePollInterval
	ConsistencyRetry   = consistencyRetry
)

// ClassicPlanOf is the plan a sync of svc's Classic Load Balancer would
// apply now.
func ClassicPlanOf(ctx context.Context, c driver.Cloud, svc *v1.Service, nodes []*v1.Node) (*loadbalancers.Plan, error) {
	return PlanOf(ctx, c, svc, nodes)
}

// PlanOf is the plan a sync of svc would apply now: observed, judged by
// the ownership rule and planned under a dry run, nothing changed. c is
// the driver's cloud.
func PlanOf(ctx context.Context, c driver.Cloud, svc *v1.Service, nodes []*v1.Node) (*loadbalancers.Plan, error) {
	ctx, d := loadbalancers.WithDryRun(ctx)
	if _, err := c.(*Cloud).LoadBalancer().EnsureLoadBalancer(ctx, "", svc, nodes); err != nil && !errors.Is(err, loadbalancers.ErrPlanned) {
		return nil, err
	}
	return &loadbalancers.Plan{Changes: d.Changes()}, nil
}
