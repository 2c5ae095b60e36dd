package gce

import (
	"context"

	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// PlanOf observes the Service's load balancer and plans its sync without
// applying it, for tests that apply the plan themselves.
func PlanOf(ctx context.Context, cloud driver.Cloud, svc *v1.Service, nodes []*v1.Node) (*loadbalancers.Plan, error) {
	p, _, err := cloud.(*Cloud).lbs.planFor(ctx, svc, nodes)
	if err != nil {
		return nil, err
	}
	return &p.Plan, nil
}
