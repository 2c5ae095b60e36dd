package aws

import (
	"context"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/polyccm/polyccm/core/loadbalancers"
)

// The retry delays, for the black-box tests.
const (
	DeletePollInterval = deletePollInterval
	ConsistencyRetry   = consistencyRetry
)

// ClassicPlanOf is the plan a sync of svc's Classic Load Balancer would
// apply now.
func ClassicPlanOf(ctx context.Context, lb cloudprovider.LoadBalancer, svc *v1.Service, nodes []*v1.Node) (*loadbalancers.Plan, error) {
	s, err := lb.(*loadBalancers).planClassicSync(ctx, svc, nodes)
	if err != nil {
		return nil, err
	}
	return &s.plan, nil
}

// PlanOf is the plan a sync of svc would apply now: observed and planned,
// nothing changed. lb is the driver's own load balancer (not wrapped).
func PlanOf(ctx context.Context, lb cloudprovider.LoadBalancer, svc *v1.Service, nodes []*v1.Node) (*loadbalancers.Plan, error) {
	s, err := lb.(*loadBalancers).planSync(ctx, svc, nodes)
	if err != nil {
		return nil, err
	}
	return &s.plan, nil
}
