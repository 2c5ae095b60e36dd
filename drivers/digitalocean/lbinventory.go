package digitalocean

import (
	"context"

	"github.com/polyccm/polyccm/core/loadbalancers"
)

// LoadBalancerInventory lists the account's load balancers whose names
// come from a Service UID, as this CCM and DigitalOcean's name them, for
// `polyccm plan`. The API does not return a load balancer's tags, so
// another cluster's in the same account cannot be told apart: the plan
// says so of the ones no Service here owns.
func (c *Cloud) LoadBalancerInventory(ctx context.Context) ([]loadbalancers.Resource, error) {
	all, err := c.lbs.list(ctx)
	if err != nil {
		return nil, err
	}
	var out []loadbalancers.Resource
	for i := range all {
		if r := resource(&all[i], ""); r.UIDMark != "" {
			out = append(out, r)
		}
	}
	return out, nil
}
