package gce

import (
	"context"

	"cloud.google.com/go/compute/apiv1/computepb"

	"github.com/polyccm/polyccm/core/loadbalancers"
)

// LoadBalancerInventory lists the region's forwarding rules named from a
// Service UID whose description names a Service, as polyccm and
// cloud-provider-gcp make them, for `polyccm plan`. GCE resources carry
// no cluster mark, so another cluster's in the same project and region
// cannot be told apart: the plan says so of the ones no Service here owns.
func (c *Cloud) LoadBalancerInventory(ctx context.Context) ([]loadbalancers.Resource, error) {
	cl, err := c.client(ctx)
	if err != nil {
		return nil, err
	}
	env, err := c.environ(ctx)
	if err != nil {
		return nil, err
	}
	rules, err := pages(ctx, c, "forwardingRules.list", func(ctx context.Context, token string) ([]*computepb.ForwardingRule, string, error) {
		it := cl.forwardingRules.List(ctx, &computepb.ListForwardingRulesRequest{Project: env.project, Region: env.region})
		return nextPage[*computepb.ForwardingRule](it, token)
	})
	if err != nil {
		return nil, err
	}
	var out []loadbalancers.Resource
	for _, r := range rules {
		res := c.lbs.resource(r.GetName(), r.GetDescription(), r.GetIPAddress())
		if res.UIDMark != "" && res.Service != "" {
			out = append(out, res)
		}
	}
	return out, nil
}
