package aws

import (
	"context"

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
	s, err := c.(*Cloud).lbs.planClassicSync(ctx, svc, nodes)
	if err != nil {
		return nil, err
	}
	return &s.plan, nil
}

// PlanOf is the plan a sync of svc would apply now: observed and planned,
// nothing changed. c is the driver's cloud.
func PlanOf(ctx context.Context, c driver.Cloud, svc *v1.Service, nodes []*v1.Node) (*loadbalancers.Plan, error) {
	s, err := c.(*Cloud).lbs.planSync(ctx, svc, nodes)
	if err != nil {
		return nil, err
	}
	return &s.plan, nil
}
