package openstack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/portsecurity"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
)

// routes are pod CIDR routes in the cluster's Neutron router (the
// extraroute extension), as openstack-cloud-controller-manager makes
// them: destination the Node's pod CIDR, next hop its InternalIP of the
// CIDR's family; each route's CIDR also an allowed address pair on the
// Node's port, so port security lets the pods' traffic through. The
// route controller lists every route of the router and deletes only
// those in the cluster CIDR: routes outside it are left alone.
type routes struct {
	c     *Cloud
	nodes corelisters.NodeLister

	mu   sync.Mutex // read-modify-write of the router's routes, without extraroute-atomic
	exts *networkExtensions
}

// networkExtensions are the Neutron extensions the routes depend on.
type networkExtensions struct {
	atomic, addressPairs bool
}

// Routes returns the route manager.
func (c *Cloud) Routes() cloudprovider.Routes { return c.routes }

// initRoutes registers the Node informer in New, before the informers
// start: one asked for later would never be started.
func (c *Cloud) initRoutes() {
	c.routes = &routes{c: c}
	if c.deps.Informers != nil {
		n := c.deps.Informers.Core().V1().Nodes()
		n.Informer()
		c.routes.nodes = n.Lister()
	}
}

// ready checks the config and reads the extensions once: without
// extraroute there are no routes, as upstream says at start.
func (r *routes) ready(ctx context.Context) (*clients, *networkExtensions, error) {
	if r.c.cfg.RouterID == "" {
		return nil, nil, errors.New("routes need the cluster's router: set drivers.openstack.routerID (cloud.conf's [Route] router-id), or turn controllers.routes off")
	}
	if r.nodes == nil {
		return nil, nil, errors.New("routes need the Node informer, which this process was not given")
	}
	cl, err := r.c.session(ctx)
	if err != nil {
		return nil, nil, err
	}
	r.mu.Lock()
	exts := r.exts
	r.mu.Unlock()
	if exts != nil {
		return cl, exts, nil
	}
	var list []extensions.Extension
	if err := r.c.api.Do(ctx, "network.extensions.list", func(ctx context.Context) error {
		pages, err := extensions.List(cl.network).AllPages(ctx)
		if err != nil {
			return err
		}
		list, err = extensions.ExtractExtensions(pages)
		return err
	}); err != nil {
		return nil, nil, err
	}
	has := func(alias string) bool {
		return slices.ContainsFunc(list, func(e extensions.Extension) bool { return e.Alias == alias })
	}
	if !has("extraroute") && !has("extraroute-atomic") {
		return nil, nil, errors.New("this Neutron has no extraroute extension, which routes need: turn controllers.routes off and use an overlay network")
	}
	exts = &networkExtensions{atomic: has("extraroute-atomic"), addressPairs: has("allowed-address-pairs")}
	r.mu.Lock()
	r.exts = exts
	r.mu.Unlock()
	return cl, exts, nil
}

func (r *routes) router(ctx context.Context, cl *clients) (*routers.Router, error) {
	var rt *routers.Router
	err := r.c.api.Do(ctx, "network.routers.get", func(ctx context.Context) error {
		var err error
		rt, err = routers.Get(ctx, cl.network, r.c.cfg.RouterID).Extract()
		return err
	})
	return rt, err
}

// ListRoutes lists every route of the router; a next hop no Node has is
// a blackhole named by its address, as upstream names it.
func (r *routes) ListRoutes(ctx context.Context, _ string) ([]*cloudprovider.Route, error) {
	cl, _, err := r.ready(ctx)
	if err != nil {
		return nil, err
	}
	nodes, err := r.nodes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	rt, err := r.router(ctx, cl)
	if err != nil {
		return nil, err
	}
	out := make([]*cloudprovider.Route, 0, len(rt.Routes))
	for _, item := range rt.Routes {
		name, found := nodeByAddress(item.NextHop, nodes)
		out = append(out, &cloudprovider.Route{
			Name: item.DestinationCIDR, TargetNode: name, Blackhole: !found, DestinationCIDR: item.DestinationCIDR,
		})
	}
	return out, nil
}

// CreateRoute adds the route (extraroute-atomic: add_extraroutes; else
// the router's routes rewritten under a lock) and the port's allowed
// address pair. A failed pair takes the route back, as upstream unwinds.
func (r *routes) CreateRoute(ctx context.Context, _ string, _ string, route *cloudprovider.Route) error {
	cl, exts, err := r.ready(ctx)
	if err != nil {
		return err
	}
	addr, err := r.nextHop(route.TargetNode, route.DestinationCIDR)
	if err != nil {
		return err
	}
	want := routers.Route{DestinationCIDR: route.DestinationCIDR, NextHop: addr}
	undo, err := r.changeRoutes(ctx, cl, exts, want, true)
	if err != nil || undo == nil {
		return err
	}
	if err := r.changePair(ctx, cl, exts, addr, route.DestinationCIDR, true); err != nil {
		undo()
		return err
	}
	klog.InfoS("Created route", "node", route.TargetNode, "cidr", route.DestinationCIDR, "nextHop", addr, "router", r.c.cfg.RouterID)
	return nil
}

// DeleteRoute removes the route and, for a live Node, its address pair.
func (r *routes) DeleteRoute(ctx context.Context, _ string, route *cloudprovider.Route) error {
	cl, exts, err := r.ready(ctx)
	if err != nil {
		return err
	}
	addr := string(route.TargetNode) // a blackhole is named by its next hop
	if !route.Blackhole {
		if addr, err = r.nextHop(route.TargetNode, route.DestinationCIDR); err != nil {
			return err
		}
	}
	gone := routers.Route{DestinationCIDR: route.DestinationCIDR, NextHop: addr}
	undo, err := r.changeRoutes(ctx, cl, exts, gone, false)
	if err != nil || undo == nil || route.Blackhole {
		return err
	}
	if err := r.changePair(ctx, cl, exts, addr, route.DestinationCIDR, false); err != nil {
		undo()
		return err
	}
	klog.InfoS("Deleted route", "node", route.TargetNode, "cidr", route.DestinationCIDR, "router", r.c.cfg.RouterID)
	return nil
}

// changeRoutes adds or removes one route; undo reverses it (nil: nothing
// was to change).
func (r *routes) changeRoutes(ctx context.Context, cl *clients, exts *networkExtensions, rt routers.Route, add bool) (undo func(), err error) {
	if exts.atomic {
		call := func(ctx context.Context, add bool) error {
			opts := extraroutes.Opts{Routes: &[]routers.Route{rt}}
			if add {
				return r.c.api.Do(ctx, "network.routers.add_extraroutes", func(ctx context.Context) error {
					_, err := extraroutes.Add(ctx, cl.network, r.c.cfg.RouterID, opts).Extract()
					return err
				})
			}
			return r.c.api.Do(ctx, "network.routers.remove_extraroutes", func(ctx context.Context) error {
				_, err := extraroutes.Remove(ctx, cl.network, r.c.cfg.RouterID, opts).Extract()
				return err
			})
		}
		if err := call(ctx, add); err != nil {
			return nil, err
		}
		return func() { logUndo(call(context.WithoutCancel(ctx), !add)) }, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cur, err := r.router(ctx, cl)
	if err != nil {
		return nil, err
	}
	i := slices.Index(cur.Routes, rt)
	if (i >= 0) == add {
		return nil, nil // already so
	}
	orig := slices.Clone(cur.Routes)
	next := slices.Clone(cur.Routes)
	if add {
		next = append(next, rt)
	} else {
		next = slices.Delete(next, i, i+1)
	}
	set := func(ctx context.Context, routes []routers.Route) error {
		return r.c.api.Do(ctx, "network.routers.update", func(ctx context.Context) error {
			_, err := routers.Update(ctx, cl.network, r.c.cfg.RouterID, routers.UpdateOpts{Routes: &routes}).Extract()
			return err
		})
	}
	if err := set(ctx, next); err != nil {
		return nil, err
	}
	return func() { logUndo(set(context.WithoutCancel(ctx), orig)) }, nil
}

func logUndo(err error) {
	if err != nil {
		klog.ErrorS(err, "Could not undo a route change after a later step failed; the next route sync repairs it")
	}
}

// securedPort is a port with the port-security extension's field.
type securedPort struct {
	ports.Port
	portsecurity.PortSecurityExt
}

// changePair adds or removes cidr as an allowed address pair on the port
// holding addr, when the cloud has the extension and the port has port
// security on (else there is nothing to let through).
func (r *routes) changePair(ctx context.Context, cl *clients, exts *networkExtensions, addr, cidr string, add bool) error {
	if !exts.addressPairs {
		return nil
	}
	var found []securedPort
	if err := r.c.api.Do(ctx, "network.ports.list", func(ctx context.Context) error {
		pages, err := ports.List(cl.network, ports.ListOpts{FixedIPs: []ports.FixedIPOpts{{IPAddress: addr}}}).AllPages(ctx)
		if err != nil {
			return err
		}
		return ports.ExtractPortsInto(pages, &found)
	}); err != nil {
		return err
	}
	if len(found) > 1 {
		// One address in several networks: the port on a network the
		// router serves is the Node's, as upstream picks it.
		nets, err := r.routerNetworks(ctx, cl)
		if err != nil {
			return err
		}
		found = slices.DeleteFunc(found, func(p securedPort) bool { return !slices.Contains(nets, p.NetworkID) })
	}
	if len(found) != 1 {
		return fmt.Errorf("%d ports hold %s, want one: cannot add the pod range %s to its allowed address pairs", len(found), addr, cidr)
	}
	p := found[0]
	if !p.PortSecurityEnabled {
		return nil
	}
	pairs := slices.Clone(p.AllowedAddressPairs)
	i := slices.IndexFunc(pairs, func(a ports.AddressPair) bool { return a.IPAddress == cidr })
	switch {
	case add && i >= 0, !add && i < 0:
		return nil
	case add:
		pairs = append(pairs, ports.AddressPair{IPAddress: cidr})
	default:
		pairs = slices.Delete(pairs, i, i+1)
	}
	return r.c.api.Do(ctx, "network.ports.update", func(ctx context.Context) error {
		_, err := ports.Update(ctx, cl.network, p.ID, ports.UpdateOpts{AllowedAddressPairs: &pairs}).Extract()
		return err
	})
}

// routerNetworks are the networks the router has an interface on.
func (r *routes) routerNetworks(ctx context.Context, cl *clients) ([]string, error) {
	ifaces, err := r.c.listPorts(ctx, cl, "device_id", []string{r.c.cfg.RouterID})
	if err != nil {
		return nil, err
	}
	var nets []string
	for _, p := range ifaces {
		nets = append(nets, p.NetworkID)
	}
	return nets, nil
}

// nextHop is the Node's InternalIP of the CIDR's family.
func (r *routes) nextHop(node types.NodeName, cidr string) (string, error) {
	ip, _, err := net.ParseCIDR(cidr)
	if err != nil {
		return "", fmt.Errorf("route destination %q is not a CIDR", cidr)
	}
	want6 := ip.To4() == nil
	n, err := r.nodes.Get(string(node))
	if err != nil {
		return "", fmt.Errorf("no Node %s to route %s to: %w", node, cidr, err)
	}
	for _, a := range n.Status.Addresses {
		if a.Type != v1.NodeInternalIP {
			continue
		}
		if ip := net.ParseIP(a.Address); ip != nil && (ip.To4() == nil) == want6 {
			return a.Address, nil
		}
	}
	return "", fmt.Errorf("Node %s has no InternalIP of %s's family to route it to", node, cidr)
}

func nodeByAddress(addr string, nodes []*v1.Node) (types.NodeName, bool) {
	for _, n := range nodes {
		for _, a := range n.Status.Addresses {
			if a.Address == addr {
				return types.NodeName(n.Name), true
			}
		}
	}
	return types.NodeName(addr), false
}
