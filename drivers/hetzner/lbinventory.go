package hetzner

import (
	"context"

	"github.com/polyccm/polyccm/core/loadbalancers"
)

// LoadBalancerInventory lists the project's load balancers made for a
// Service, by hcloud CCM or polyccm (labelled hcloud-ccm/service-uid, or
// named from a Service UID before that label existed), for `polyccm
// plan`. The label names a Service, not a cluster, so another cluster's
// in the same project cannot be told apart: the plan says so of the ones
// no Service here owns.
func (c *Cloud) LoadBalancerInventory(ctx context.Context) ([]loadbalancers.Resource, error) {
	all, err := c.lbs().list(ctx, "", "")
	if err != nil {
		return nil, err
	}
	var out []loadbalancers.Resource
	for _, lb := range all {
		if r := lbResource(lb, ""); r.UIDMark != "" || r.Service != "" {
			out = append(out, r)
		}
	}
	return out, nil
}
