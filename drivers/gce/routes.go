package gce

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
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
// node's instance, one per pod CIDR, named and described as
// cloud-provider-gcp names them (gce_routes.go), so a cluster switching
// from it keeps its routes: the first 26 characters of the cluster name,
// "-", the Node's UID; the description "k8s-node-route". Only routes with
// both, on the cluster's network, are listed, and only those are deleted.
type routes struct{ c *Cloud }

var _ cloudprovider.Routes = (*routes)(nil)

// Routes returns the route implementation.
func (c *Cloud) Routes() cloudprovider.Routes { return c.routes }

// routeDescription is cloud-provider-gcp's k8sNodeRouteTag: a plain
// string, by which node routes are told from others.
const routeDescription = "k8s-node-route"

var (
	routePrefixRE = regexp.MustCompile(`^[a-z]([-a-z0-9]*)?-$`)
	nodeUIDRE     = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

// ownRoute reports whether a route name is this cluster's: the prefix and
// a Node UID, nothing else. Upstream lists by the prefix alone, so a
// cluster "prod" would take "prod-2"'s routes for its own; the UID rules
// that out without changing a name.
func ownRoute(name, prefix string) bool {
	return strings.HasPrefix(name, prefix) && nodeUIDRE.MatchString(name[len(prefix):])
}

// routePrefix is the names' prefix for a cluster, as upstream's
// truncateClusterName: the first 26 characters and "-". A cluster name
// GCE names cannot start with is an error naming the key.
func (r *routes) routePrefix(clusterName string) (string, error) {
	name := cmp.Or(r.c.deps.ClusterName, clusterName) // the same in production: config clusterName
	p := name
	if len(p) > 26 {
		p = p[:26]
	}
	p += "-"
	if !routePrefixRE.MatchString(p) {
		return "", fmt.Errorf("clusterName %q cannot start a GCE route name (lower-case letters, digits and '-', starting with a letter); routes are named <clusterName>-<node UID> as cloud-provider-gcp names them", name)
	}
	return p, nil
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
func (r *routes) ListRoutes(ctx context.Context, clusterName string) ([]*cloudprovider.Route, error) {
	cl, err := r.c.client(ctx)
	if err != nil {
		return nil, err
	}
	env, err := r.c.environ(ctx)
	if err != nil {
		return nil, err
	}
	prefix, err := r.routePrefix(clusterName)
	if err != nil {
		return nil, err
	}
	// Filtered as upstream lists them; the network is checked here.
	filter := fmt.Sprintf(`(name eq "%s.*") (description eq "%s")`, prefix, routeDescription)
	all, err := pages(ctx, r.c, "routes.list", func(ctx context.Context, token string) ([]*computepb.Route, string, error) {
		it := cl.routes.List(ctx, &computepb.ListRoutesRequest{Project: env.networkProject, Filter: &filter})
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
		if !ownRoute(rt.GetName(), prefix) || rt.GetDescription() != routeDescription ||
			lastSegment(rt.GetNetwork()) != env.network || rt.GetNextHopInstance() == "" {
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
func (r *routes) CreateRoute(ctx context.Context, clusterName string, nameHint string, route *cloudprovider.Route) error {
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
	prefix, err := r.routePrefix(clusterName)
	if err != nil {
		return err
	}
	if nameHint == "" {
		return fmt.Errorf("no name for the route of node %s: the route controller gives the Node's UID", route.TargetNode)
	}
	// An existing route of that name is taken as made (as upstream does):
	// the route controller lists it and replaces it if it differs.
	name := prefix + nameHint
	rt := &computepb.Route{
		Name: &name, Network: ptr(networkURL(env)), DestRange: &route.DestinationCIDR,
		NextHopInstance: &inst, Priority: ptr(uint32(1000)), Description: ptr(routeDescription),
	}
	if err := r.c.change(ctx, cl, "routes.insert", "creating route "+name, func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return cl.routes.Insert(ctx, &computepb.InsertRouteRequest{RequestId: rid, Project: env.networkProject, RouteResource: rt})
	}); err != nil {
		return err
	}
	klog.InfoS("Created route", "node", route.TargetNode, "cidr", route.DestinationCIDR, "route", name)
	return nil
}

// DeleteRoute deletes a route ListRoutes reported; only routes named with
// the cluster's prefix are deleted.
func (r *routes) DeleteRoute(ctx context.Context, clusterName string, route *cloudprovider.Route) error {
	prefix, err := r.routePrefix(clusterName)
	if err != nil {
		return err
	}
	if !ownRoute(route.Name, prefix) {
		return fmt.Errorf("route %s is not this cluster's (not %s<node UID>); not deleting it", route.Name, prefix)
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
		return cl.routes.Delete(ctx, &computepb.DeleteRouteRequest{RequestId: rid, Project: env.networkProject, Route: route.Name})
	})
	if err != nil && !cloudapi.IsNotFound(err) {
		return err
	}
	klog.InfoS("Deleted route", "node", route.TargetNode, "cidr", route.DestinationCIDR, "route", route.Name)
	return nil
}
