package loadbalancers

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corelisters "k8s.io/client-go/listers/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/cloudapi"
)

// RuleOptions is what Rules needs besides the driver's load balancer.
type RuleOptions struct {
	// Services is the shared informer's lister, for the newest copy of a
	// Service; nil (in tests) uses the Service as given.
	Services corelisters.ServiceLister
	// Instances answers whether a Node's instance still exists; nil keeps
	// every Node.
	Instances Instances
}

// Rules wraps a driver's load balancer with the rules every cloud's sync
// shares, so that no driver writes them again:
//
//   - the target Nodes: those labelled to be left out of external load
//     balancers never reach the driver, nor Nodes whose instance the cloud
//     says is gone (see live);
//   - UpdateLoadBalancer (the node sync) works on the newest copy of the
//     Service, skips one gone, recreated, being deleted or no longer of
//     type LoadBalancer, and never creates: the driver's calls marked
//     cloudapi.Creates are refused, and that refusal is success;
//   - one Service's Ensure, Update and deletion take turns, and each uses
//     the newest Node list any of them brought (see turns);
//   - GetLoadBalancer passes through as it is.
//
// A driver keeps only the translation between the Service and its cloud.
func Rules(lb cloudprovider.LoadBalancer, o RuleOptions) cloudprovider.LoadBalancer {
	return &rules{LoadBalancer: lb, o: o}
}

type rules struct {
	cloudprovider.LoadBalancer
	o     RuleOptions
	turns turns
}

func (r *rules) EnsureLoadBalancer(ctx context.Context, cluster string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	nodes, done, err := r.turns.take(ctx, svc, nodes, true)
	if err != nil {
		return nil, err
	}
	defer done()
	var st *v1.LoadBalancerStatus
	err = r.retryFresh(ctx, svc, Included(nodes), func(live []*v1.Node) error {
		var err error
		st, err = r.LoadBalancer.EnsureLoadBalancer(ctx, cluster, svc, live)
		return err
	})
	return st, err
}

func (r *rules) UpdateLoadBalancer(ctx context.Context, cluster string, svc *v1.Service, nodes []*v1.Node) error {
	nodes, done, err := r.turns.take(ctx, svc, nodes, true)
	if err != nil {
		return err
	}
	defer done()
	// After the wait: the Service may have changed meanwhile.
	svc, err = r.newest(svc)
	if err != nil || svc == nil {
		return err
	}
	// The node sync may race with the Service's deletion: it must never
	// bring back what the deletion removed.
	ctx = cloudapi.WithoutCreates(ctx)
	err = r.retryFresh(ctx, svc, Included(nodes), func(live []*v1.Node) error {
		return r.LoadBalancer.UpdateLoadBalancer(ctx, cluster, svc, live)
	})
	if errors.Is(err, cloudapi.ErrCreateSkipped) {
		klog.V(4).InfoS("No load balancer to update; the node sync creates none", "service", klog.KObj(svc))
		return nil
	}
	return err
}

func (r *rules) EnsureLoadBalancerDeleted(ctx context.Context, cluster string, svc *v1.Service) error {
	_, done, err := r.turns.take(ctx, svc, nil, false)
	if err != nil {
		return err
	}
	defer done()
	return r.LoadBalancer.EnsureLoadBalancerDeleted(ctx, cluster, svc)
}

// newest returns the copy of svc the node sync should use, or nil to skip
// it. The upstream service controller's node sync passes the copy it
// cached at its last successful sync, which may be older than the
// EnsureLoadBalancer running beside it: a driver that converges the whole
// load balancer from that copy would put back ports or settings the
// Service no longer has, and nothing would sync the Service again. A
// Service gone, being deleted or no longer of type LoadBalancer is left to
// the controller's own sync, which deletes its load balancer.
func (r *rules) newest(svc *v1.Service) (*v1.Service, error) {
	cur := svc
	if r.o.Services != nil {
		var err error
		cur, err = r.o.Services.Services(svc.Namespace).Get(svc.Name)
		switch {
		case apierrors.IsNotFound(err):
			klog.V(4).InfoS("Service gone; its node sync is skipped", "service", klog.KObj(svc))
			return nil, nil
		case err != nil:
			return nil, err
		}
	}
	if cur.UID != svc.UID || cur.DeletionTimestamp != nil || cur.Spec.Type != v1.ServiceTypeLoadBalancer {
		// Recreated under the same name, being deleted, or no longer a
		// load balancer: the controller's sync of the Service handles it.
		return nil, nil
	}
	return cur, nil
}
