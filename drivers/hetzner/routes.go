package hetzner

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/cloudapi"
)

// routes implements cloudprovider.Routes as routes of the configured
// Network, as hcloud CCM makes them: destination the pod CIDR, gateway
// the server's private IP in the Network, one route per destination. The
// route controller only ever deletes routes inside the cluster CIDR, so
// the Network's other routes (a NAT gateway's 0.0.0.0/0) are listed and
// left alone, as upstream lists them.
type routes struct {
	c     *Cloud
	nodes corelisters.NodeLister
}

var _ cloudprovider.Routes = (*routes)(nil)

// Routes returns the route implementation; routes need a Network.
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

func (r *routes) requireNetwork() error {
	if r.c.cfg.Network == "" {
		return errors.New("routes need a Network: set drivers.hetzner.network to the Network the cluster's servers are attached to, or turn controllers.routes off")
	}
	return nil
}

// ListRoutes lists the Network's routes. A gateway is matched to a Node by
// the Node's InternalIP; a gateway no Node has is looked up among the
// servers (one listing), and a route whose gateway is no server's is a
// blackhole, which the route controller deletes.
func (r *routes) ListRoutes(ctx context.Context, _ string) ([]*cloudprovider.Route, error) {
	if err := r.requireNetwork(); err != nil {
		return nil, err
	}
	n, err := r.c.network(ctx)
	if err != nil {
		return nil, err
	}
	byIP := r.nodesByInternalIP()
	var servers map[string]string // private IP → server name, listed on demand
	out := make([]*cloudprovider.Route, 0, len(n.Routes))
	for _, rt := range n.Routes {
		gw := rt.Gateway.String()
		cr := &cloudprovider.Route{
			Name:            gw + "-" + rt.Destination.String(),
			DestinationCIDR: rt.Destination.String(),
		}
		name, ok := byIP[gw]
		if !ok {
			if servers == nil {
				if servers, err = r.serversByPrivateIP(ctx, n.ID); err != nil {
					return nil, err
				}
			}
			name, ok = servers[gw]
		}
		if ok {
			cr.TargetNode = types.NodeName(name)
		} else {
			cr.Blackhole = true
		}
		out = append(out, cr)
	}
	return out, nil
}

func (r *routes) nodesByInternalIP() map[string]string {
	out := map[string]string{}
	if r.nodes == nil {
		return out
	}
	nodes, err := r.nodes.List(labels.Everything())
	if err != nil {
		return out
	}
	for _, n := range nodes {
		for _, a := range n.Status.Addresses {
			if a.Type == v1.NodeInternalIP {
				out[a.Address] = n.Name
			}
		}
	}
	return out
}

func (r *routes) serversByPrivateIP(ctx context.Context, netID int64) (map[string]string, error) {
	ss, err := r.c.listServers(ctx, "")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, s := range ss {
		for _, pn := range s.PrivateNet {
			if pn.Network != nil && pn.Network.ID == netID && pn.IP != nil {
				out[pn.IP.String()] = s.Name
			}
		}
	}
	return out, nil
}

// CreateRoute routes the pod CIDR to the target Node's server. A route to
// the same CIDR through another gateway (the server was replaced) is
// deleted first, as upstream does.
func (r *routes) CreateRoute(ctx context.Context, _ string, _ string, route *cloudprovider.Route) error {
	if err := r.requireNetwork(); err != nil {
		return err
	}
	ip, dest, err := net.ParseCIDR(route.DestinationCIDR)
	if err != nil {
		return cloudapi.Invalid("route for Node %s: %q is not a CIDR", route.TargetNode, route.DestinationCIDR)
	}
	if ip.To4() == nil {
		return cloudapi.Invalid("route %s for Node %s: Hetzner Cloud Networks carry IPv4 only; give IPv6 pod ranges no routes (native routing or an overlay)", dest, route.TargetNode)
	}
	gw, err := r.gateway(ctx, string(route.TargetNode))
	if err != nil {
		return err
	}
	n, err := r.c.network(ctx)
	if err != nil {
		return err
	}
	for _, rt := range n.Routes {
		if rt.Destination.String() != dest.String() {
			continue
		}
		if rt.Gateway.Equal(gw) {
			return nil
		}
		klog.InfoS("Replacing route with another gateway", "node", route.TargetNode, "destination", dest, "old", rt.Gateway, "new", gw)
		if err := r.change(ctx, "networks.delete_route", n, rt, false); err != nil {
			return err
		}
	}
	err = r.change(ctx, "networks.add_route", n, hcloud.NetworkRoute{Destination: dest, Gateway: gw}, true)
	if err == nil {
		klog.InfoS("Created route", "node", route.TargetNode, "destination", dest, "gateway", gw, "network", n.Name)
	}
	return err
}

// gateway is the Node's server's private IP in the Network.
func (r *routes) gateway(ctx context.Context, nodeName string) (net.IP, error) {
	if r.nodes == nil {
		return nil, errors.New("hetzner routes: no node lister")
	}
	node, err := r.nodes.Get(nodeName)
	if err != nil {
		return nil, fmt.Errorf("route for Node %s: %w", nodeName, err)
	}
	netID, err := r.c.networkID(ctx)
	if err != nil {
		return nil, err
	}
	var s *hcloud.Server
	if node.Spec.ProviderID != "" {
		id, err := serverID(node.Spec.ProviderID)
		if err != nil {
			return nil, fmt.Errorf("route for Node %s: %w", nodeName, err)
		}
		if s, err = r.c.getServer(ctx, id); err != nil {
			return nil, err
		}
	} else {
		ss, err := r.c.listServers(ctx, nodeName)
		if err != nil {
			return nil, err
		}
		if len(ss) > 0 {
			s = ss[0]
		}
	}
	if s == nil {
		return nil, fmt.Errorf("route for Node %s: no Hetzner Cloud server for it", nodeName)
	}
	for _, pn := range s.PrivateNet {
		if pn.Network != nil && pn.Network.ID == netID && pn.IP != nil {
			return pn.IP, nil
		}
	}
	return nil, fmt.Errorf("route for Node %s: server %s (%d) is not attached to Network %s; attach it (hcloud server attach-to-network) so its pods can be routed", nodeName, s.Name, s.ID, r.c.cfg.Network)
}

// change adds or deletes one route and waits for the action.
func (r *routes) change(ctx context.Context, op string, n *hcloud.Network, rt hcloud.NetworkRoute, add bool) error {
	var a *hcloud.Action
	err := r.c.api.Do(ctx, op, func(ctx context.Context) error {
		var err error
		if add {
			a, _, err = r.c.client.Network.AddRoute(ctx, n, hcloud.NetworkAddRouteOpts{Route: rt})
		} else {
			a, _, err = r.c.client.Network.DeleteRoute(ctx, n, hcloud.NetworkDeleteRouteOpts{Route: rt})
		}
		return err
	})
	if err == nil {
		err = r.c.wait(ctx, a)
	}
	if err != nil {
		return fmt.Errorf("%s %s via %s in Network %s: %w", op, rt.Destination, rt.Gateway, n.Name, err)
	}
	return nil
}

// DeleteRoute deletes the route to the CIDR, whatever its gateway now; a
// route already gone is done.
func (r *routes) DeleteRoute(ctx context.Context, _ string, route *cloudprovider.Route) error {
	if err := r.requireNetwork(); err != nil {
		return err
	}
	n, err := r.c.network(ctx)
	if err != nil {
		return err
	}
	for _, rt := range n.Routes {
		if rt.Destination.String() == route.DestinationCIDR {
			err := r.change(ctx, "networks.delete_route", n, rt, false)
			if cloudapi.IsNotFound(err) {
				return nil
			}
			if err == nil {
				klog.InfoS("Deleted route", "destination", rt.Destination, "gateway", rt.Gateway, "network", n.Name)
			}
			return err
		}
	}
	return nil
}
