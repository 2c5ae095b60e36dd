package loadbalancers

import (
	"context"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corelisters "k8s.io/client-go/listers/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
)

// Newest wraps lb so that UpdateLoadBalancer works on the newest copy of
// the Service the informer has. The upstream service controller's node
// sync passes the copy it cached at its last successful sync, which may be
// older than the EnsureLoadBalancer running beside it: a driver that
// converges the whole load balancer from that copy would put back ports or
// settings the Service no longer has, and nothing would sync the Service
// again. A Service gone, being deleted or no longer of type LoadBalancer
// is left to the controller's own sync, which deletes its load balancer.
func Newest(lb cloudprovider.LoadBalancer, services corelisters.ServiceLister) cloudprovider.LoadBalancer {
	return &newest{LoadBalancer: lb, services: services}
}

type newest struct {
	cloudprovider.LoadBalancer
	services corelisters.ServiceLister
}

func (n *newest) UpdateLoadBalancer(ctx context.Context, cluster string, svc *v1.Service, nodes []*v1.Node) error {
	cur, err := n.services.Services(svc.Namespace).Get(svc.Name)
	switch {
	case apierrors.IsNotFound(err):
		klog.V(4).InfoS("Service gone; its node sync is skipped", "service", klog.KObj(svc))
		return nil
	case err != nil:
		return err
	case cur.UID != svc.UID, cur.DeletionTimestamp != nil, cur.Spec.Type != v1.ServiceTypeLoadBalancer:
		// Recreated under the same name, being deleted, or no longer a
		// load balancer: the controller's sync of the Service handles it.
		return nil
	}
	return n.LoadBalancer.UpdateLoadBalancer(ctx, cluster, cur, nodes)
}
