package gce

import (
	"context"
	"slices"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/loadbalancers"
)

// planExternalNodes plans the node-only sync of an external load balancer
// (lbnodes.go): one read of the target pool, whose instances are its
// members, then addInstance for the missing ones and removeInstance for
// the extra ones, each awaited, in the full sync's chunks. A pool gone or
// not as the full sync left it (its health check, its session affinity)
// falls back to the full sync; nothing has been changed then.
func (l *loadBalancers) planExternalNodes(ctx context.Context, cl *clients, env *environment, svc *v1.Service, spec *lbSpec, byZone map[string][]string) (*loadbalancers.SyncPlan, bool, error) {
	pool, err := l.getTargetPool(ctx, cl, env, spec.base)
	if err != nil {
		return nil, true, err
	}
	if pool == nil {
		// Never made again here: the full sync refuses under a node sync.
		fallBack(svc, "the target pool is gone")
		return nil, false, nil
	}
	if why := poolDrift(env, spec, pool); why != "" {
		fallBack(svc, "the target pool changed since the last full sync: "+why)
		return nil, false, nil
	}
	add, remove := loadbalancers.Delta(poolMembers(env, byZone), urlSet(pool.GetInstances()), strings.Compare)
	var p loadbalancers.Plan
	p.Add(loadbalancers.Change{Action: loadbalancers.Update, Kind: kindPool, Name: spec.base, Fields: memberFields(add, remove),
		Apply: func(ctx context.Context) error {
			return l.updateTargetPool(ctx, cl, env, spec, add, remove, nil, false)
		}})
	return l.nodePlan(svc, spec, p), true, nil
}

// poolDrift says what of the pool, besides its members, the full sync
// would change: the health checks it uses (exactly the Service's) and a
// session affinity that makes it recreate the pool. "" when nothing.
func poolDrift(env *environment, spec *lbSpec, pool *computepb.TargetPool) string {
	if hcs := shortURLs(pool.GetHealthChecks()); !slices.Equal(hcs, []string{httpHealthCheckURL(env, spec.hcName)}) {
		return "health checks " + listOrNone(hcs)
	}
	if poolNeedsRecreate(pool, spec) {
		return "session affinity " + pool.GetSessionAffinity()
	}
	return ""
}
