package gce

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/cloudapi"
)

// routes implements cloudprovider.Routes as VPC routes whose next hop is a
// node's instance, one per pod CIDR, named with the cluster prefix. Routes
// without the prefix are never listed, changed or deleted.
type routes struct{ c *Cloud }

var _ cloudprovider.Routes = (*routes)(nil)

// Routes returns the route implementation.
func (c *Cloud) Routes() cloudprovider.Routes { return c.routes }

// routeName is the cluster prefix + a hash of node and CIDR: stable, and
// within GCE's 63 characters.
func (r *routes) routeName(node, cidr string) string {
	h := sha256.Sum256([]byte(node + "|" + cidr))
	return r.c.prefix + "r-" + hex.EncodeToString(h[:])[:16]
}

// nodesByInstance maps instance URLs to Node names, and Node names to
// instance URLs.
func (r *routes) nodesByInstance() (map[string]string, map[string]string, error) {
	if r.c.nodes == nil {
		return nil, nil, errors.New("gce routes: no node lister")
	}
	nodes, err := r.c.nodes.List(labels.Everything())
	if err != nil {
		return nil, nil, err
	}
	byInstance, byNode := map[string]string{}, map[string]string{}
	for _, n := range nodes {
		if ref, err := parseProviderID(n.Spec.ProviderID); err == nil {
			u := instanceURL(ref.project, ref.zone, ref.name)
			byInstance[u] = n.Name
			byNode[n.Name] = u
		}
	}
	return byInstance, byNode, nil
}

// ListRoutes reports the cluster's routes. A route whose instance is gone
// (GCE warns NEXT_HOP_INSTANCE_NOT_FOUND) or belongs to no Node is reported
// so the route controller deletes it.
func (r *routes) ListRoutes(ctx context.Context, _ string) ([]*cloudprovider.Route, error) {
	cl, err := r.c.client(ctx)
	if err != nil {
		return nil, err
	}
	env, err := r.c.environ(ctx)
	if err != nil {
		return nil, err
	}
	all, err := pages(ctx, r.c, "routes.list", func(ctx context.Context, token string) ([]*computepb.Route, string, error) {
		it := cl.routes.List(ctx, &computepb.ListRoutesRequest{Project: env.project})
		return nextPage[*computepb.Route](it, token)
	})
	if err != nil {
		return nil, err
	}
	byInstance, _, err := r.nodesByInstance()
	if err != nil {
		return nil, err
	}
	var out []*cloudprovider.Route
	for _, rt := range all {
		if !strings.HasPrefix(rt.GetName(), r.c.prefix+"r-") || rt.GetNextHopInstance() == "" {
			continue
		}
		inst := shortURL(rt.GetNextHopInstance())
		node, known := byInstance[inst]
		if !known {
			node = inst
		}
		blackhole := false
		for _, w := range rt.GetWarnings() {
			if w.GetCode() == "NEXT_HOP_INSTANCE_NOT_FOUND" || w.GetCode() == "NEXT_HOP_INSTANCE_NOT_ON_NETWORK" {
				blackhole = true
			}
		}
		out = append(out, &cloudprovider.Route{Name: rt.GetName(), TargetNode: types.NodeName(node), DestinationCIDR: rt.GetDestRange(), Blackhole: blackhole})
	}
	return out, nil
}

// CreateRoute adds the route to the node's instance.
func (r *routes) CreateRoute(ctx context.Context, _ string, _ string, route *cloudprovider.Route) error {
	cl, err := r.c.client(ctx)
	if err != nil {
		return err
	}
	env, err := r.c.environ(ctx)
	if err != nil {
		return err
	}
	_, byNode, err := r.nodesByInstance()
	if err != nil {
		return err
	}
	inst := byNode[string(route.TargetNode)]
	if inst == "" {
		return fmt.Errorf("node %s has no GCE providerID yet; its route waits for it", route.TargetNode)
	}
	name := r.routeName(string(route.TargetNode), route.DestinationCIDR)
	rt := &computepb.Route{
		Name: &name, Network: ptr(networkURL(env)), DestRange: &route.DestinationCIDR,
		NextHopInstance: &inst, Priority: ptr(uint32(1000)),
		Description: ptr(fmt.Sprintf(`{"kubernetes.io/node":%q,"managed-by":"polyccm"}`, route.TargetNode)),
	}
	if err := r.c.change(ctx, cl, "routes.insert", "creating route "+name, func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return cl.routes.Insert(ctx, &computepb.InsertRouteRequest{RequestId: rid, Project: env.project, RouteResource: rt})
	}); err != nil {
		return err
	}
	klog.InfoS("Created route", "node", route.TargetNode, "cidr", route.DestinationCIDR, "route", name)
	return nil
}

// DeleteRoute deletes a route ListRoutes reported; only prefixed routes
// are deleted.
func (r *routes) DeleteRoute(ctx context.Context, _ string, route *cloudprovider.Route) error {
	if !strings.HasPrefix(route.Name, r.c.prefix+"r-") {
		return fmt.Errorf("route %s is not polyccm's (no %s prefix); not deleting it", route.Name, r.c.prefix)
	}
	cl, err := r.c.client(ctx)
	if err != nil {
		return err
	}
	env, err := r.c.environ(ctx)
	if err != nil {
		return err
	}
	err = r.c.change(ctx, cl, "routes.delete", "deleting route "+route.Name, func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return cl.routes.Delete(ctx, &computepb.DeleteRouteRequest{RequestId: rid, Project: env.project, Route: route.Name})
	})
	if err != nil && !cloudapi.IsNotFound(err) {
		return err
	}
	klog.InfoS("Deleted route", "node", route.TargetNode, "cidr", route.DestinationCIDR, "route", route.Name)
	return nil
}
