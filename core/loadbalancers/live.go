package loadbalancers

import (
	"context"
	"errors"
	"sync"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/cloudapi"
)

// Instances answers whether a Node's instance exists, from a short-lived
// cache it can be told to forget. core/instances.Instances is one.
type Instances interface {
	// InstanceExists is false only when the cloud definitively says the
	// instance is gone.
	InstanceExists(ctx context.Context, node *v1.Node) (bool, error)
	Forget(node *v1.Node)
}

// metadataSource is an Instances that also knows an instance's addresses
// (core/instances.Instances does, from the same cached lookup).
type metadataSource interface {
	InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error)
}

// The Nodes whose instance the cloud definitively says is gone are left
// out of every load balancer call.
//
// A Node outlives its instance until the node lifecycle controller sees it
// NotReady and deletes it, most of a minute. Meanwhile every cloud refuses
// a load balancer request naming the missing instance (DigitalOcean 422,
// ELBv2 InvalidTarget), so without this no load balancer could take in a
// new Node or a changed port until the old Node was gone. Nodes only in
// doubt (a failed lookup) stay in: leaving out a live Node would cut its
// traffic.

// retryFresh calls f with the Nodes whose instances are not known to be
// gone. The cache may not know yet that an instance went away; when the
// cloud refuses the request as invalid or naming something missing, the
// Nodes are looked up afresh and, if any turned out gone, f is tried once
// more without them.
func (l *rules) retryFresh(ctx context.Context, svc *v1.Service, nodes []*v1.Node, f func([]*v1.Node) error) error {
	if l.o.Instances == nil {
		return f(nodes)
	}
	live := l.live(ctx, svc, nodes)
	err := f(live)
	if err == nil || ctx.Err() != nil {
		return err
	}
	// Only the cloud's own refusal: a request the driver would not send
	// (a bad annotation) says nothing about the Nodes.
	var ce *cloudapi.Error
	if !errors.As(err, &ce) || (ce.Kind != cloudapi.KindInvalid && ce.Kind != cloudapi.KindNotFound) {
		return err
	}
	for _, n := range live {
		if n.Spec.ProviderID != "" {
			l.o.Instances.Forget(n)
		}
	}
	fresh := l.live(ctx, svc, live)
	if len(fresh) == len(live) {
		return err
	}
	return f(fresh)
}

// lookups is how many existence lookups run at once: enough to fill the
// instance batcher's batches, few enough that thousands of Nodes do not
// mean thousands of goroutines.
const lookups = 256

// live returns nodes without those whose instance is definitively gone,
// in their order. Nodes without a providerID are kept: the driver decides
// what to do with them, and a lookup by name could cost a cloud call.
func (l *rules) live(ctx context.Context, svc *v1.Service, nodes []*v1.Node) []*v1.Node {
	gone := make([]bool, len(nodes))
	filled := make([]*v1.Node, len(nodes))
	meta, _ := l.o.Instances.(metadataSource)
	sem := make(chan struct{}, lookups)
	var wg sync.WaitGroup
	for i, n := range nodes {
		if n.Spec.ProviderID == "" {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			exists, err := l.o.Instances.InstanceExists(ctx, n)
			gone[i] = err == nil && !exists
			if !gone[i] && meta != nil && !hasAddress(n, v1.NodeExternalIP) {
				filled[i] = withCloudAddresses(ctx, meta, n)
			}
		})
	}
	wg.Wait()
	out := make([]*v1.Node, 0, len(nodes))
	var left []string
	for i, n := range nodes {
		if gone[i] {
			left = append(left, n.Name)
			continue
		}
		if filled[i] != nil {
			n = filled[i]
		}
		out = append(out, n)
	}
	if len(left) > 0 {
		klog.InfoS("Leaving Nodes out of the load balancer until they are deleted: the cloud says their instances no longer exist",
			"service", klog.KObj(svc), "nodes", left)
	}
	return out
}

// withCloudAddresses is a copy of a Node that has no external address
// yet, with the addresses the cloud reports for its instance; nil if the
// cloud knows none either. The node controller writes a new Node's
// addresses just after its providerID, and the service controller does
// not sync again on an address change, so a driver that picks targets by
// address (DigitalOcean's REGIONAL_NETWORK needs a public one) would leave
// a joining Node out until some other change came. The lookup is the one
// the existence check just made, from the cache.
func withCloudAddresses(ctx context.Context, meta metadataSource, n *v1.Node) *v1.Node {
	md, err := meta.InstanceMetadata(ctx, n)
	if err != nil || md == nil || len(md.NodeAddresses) == 0 {
		return nil
	}
	found := false
	for _, a := range md.NodeAddresses {
		found = found || a.Type == v1.NodeExternalIP
	}
	if !found {
		return nil
	}
	c := n.DeepCopy()
	c.Status.Addresses = append([]v1.NodeAddress(nil), md.NodeAddresses...)
	return c
}

func hasAddress(n *v1.Node, kind v1.NodeAddressType) bool {
	for _, a := range n.Status.Addresses {
		if a.Type == kind {
			return true
		}
	}
	return false
}
