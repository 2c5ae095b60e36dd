package aws

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/cloudapi"
)

// routes implements cloudprovider.Routes on the VPC route tables tagged
// with the cluster tag: one route per node pod CIDR to the node's
// instance, in every such table. Routes in untagged tables, and routes to
// anything but an instance, are never touched.
type routes struct {
	c *Cloud
}

var _ cloudprovider.Routes = (*routes)(nil)

// Routes returns the route implementation.
func (c *Cloud) Routes() cloudprovider.Routes { return c.routes }

// routeTables are the cluster's tagged route tables in its VPC.
func (r *routes) routeTables(ctx context.Context, cl *clients) ([]ec2types.RouteTable, error) {
	vpc, err := r.c.vpcID(ctx, cl)
	if err != nil {
		return nil, err
	}
	all, err := r.c.describeRouteTables(ctx, cl, []ec2types.Filter{
		{Name: aws.String("vpc-id"), Values: []string{vpc}},
		{Name: aws.String("tag-key"), Values: []string{r.c.clusterTag()}},
	})
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("no route table in %s is tagged %s; tag the route tables pod routes belong in (or set controllers.routes to false)", vpc, r.c.clusterTag())
	}
	return all, nil
}

// describeRouteTables lists the route tables the filters select.
func (c *Cloud) describeRouteTables(ctx context.Context, cl *clients, filters []ec2types.Filter) ([]ec2types.RouteTable, error) {
	var all []ec2types.RouteTable
	in := &ec2.DescribeRouteTablesInput{Filters: filters}
	for {
		out, err := cloudapi.Call(ctx, c.api, "ec2.DescribeRouteTables", func(ctx context.Context) (*ec2.DescribeRouteTablesOutput, error) {
			return cl.ec2.DescribeRouteTables(ctx, in)
		})
		if err != nil {
			return nil, err
		}
		all = append(all, out.RouteTables...)
		if aws.ToString(out.NextToken) == "" {
			return all, nil
		}
		in.NextToken = out.NextToken
	}
}

// nodeInstances maps instance IDs to Node names, and back.
func (r *routes) nodeInstances() (byInstance map[string]string, byNode map[string]string, err error) {
	if r.c.nodes == nil {
		return nil, nil, errors.New("aws routes: no node lister")
	}
	nodes, err := r.c.nodes.List(labels.Everything())
	if err != nil {
		return nil, nil, err
	}
	byInstance, byNode = map[string]string{}, map[string]string{}
	for _, n := range nodes {
		if id, err := instanceID(n.Spec.ProviderID); err == nil {
			byInstance[id] = n.Name
			byNode[n.Name] = id
		}
	}
	return byInstance, byNode, nil
}

func destination(rt ec2types.Route) string {
	if c := aws.ToString(rt.DestinationCidrBlock); c != "" {
		return c
	}
	return aws.ToString(rt.DestinationIpv6CidrBlock)
}

// ListRoutes reports routes to instances: those present in every tagged
// table (so a table that lacks one gets it from CreateRoute), and any route
// to an instance that is no Node's or is a blackhole, so the route
// controller removes it.
func (r *routes) ListRoutes(ctx context.Context, _ string) ([]*cloudprovider.Route, error) {
	cl, err := r.c.clusterClient(ctx)
	if err != nil {
		return nil, err
	}
	tables, err := r.routeTables(ctx, cl)
	if err != nil {
		return nil, err
	}
	byInstance, _, err := r.nodeInstances()
	if err != nil {
		return nil, err
	}
	type key struct{ cidr, instance string }
	count := map[key]int{}
	blackhole := map[key]bool{}
	var order []key
	for _, t := range tables {
		for _, rt := range t.Routes {
			id := aws.ToString(rt.InstanceId)
			if id == "" || rt.Origin != ec2types.RouteOriginCreateRoute {
				continue
			}
			k := key{destination(rt), id}
			if count[k] == 0 {
				order = append(order, k)
			}
			count[k]++
			if rt.State == ec2types.RouteStateBlackhole {
				blackhole[k] = true
			}
		}
	}
	var out []*cloudprovider.Route
	for _, k := range order {
		node, known := byInstance[k.instance]
		if count[k] < len(tables) && known && !blackhole[k] {
			continue // incomplete: CreateRoute fills the gaps
		}
		target := node
		if !known {
			target = k.instance // no Node has this instance: the controller deletes it
		}
		out = append(out, &cloudprovider.Route{
			Name:            k.instance + "/" + k.cidr,
			TargetNode:      types.NodeName(target),
			DestinationCIDR: k.cidr,
			Blackhole:       blackhole[k],
		})
	}
	return out, nil
}

// CreateRoute routes the Node's pod CIDR to its instance in every tagged
// table, and turns off the instance's source/destination check so it may
// receive traffic for the pods.
func (r *routes) CreateRoute(ctx context.Context, _ string, _ string, route *cloudprovider.Route) error {
	cl, err := r.c.clusterClient(ctx)
	if err != nil {
		return err
	}
	_, byNode, err := r.nodeInstances()
	if err != nil {
		return err
	}
	id := byNode[string(route.TargetNode)]
	if id == "" {
		return fmt.Errorf("node %s has no AWS providerID yet; its route waits for it", route.TargetNode)
	}
	// The tables first: without one there is nowhere to route, and the
	// instance is left as it is.
	tables, err := r.routeTables(ctx, cl)
	if err != nil {
		return err
	}
	if _, err := cloudapi.Call(ctx, r.c.api, "ec2.ModifyInstanceAttribute", func(ctx context.Context) (*ec2.ModifyInstanceAttributeOutput, error) {
		return cl.ec2.ModifyInstanceAttribute(ctx, &ec2.ModifyInstanceAttributeInput{
			InstanceId: aws.String(id), SourceDestCheck: &ec2types.AttributeBooleanValue{Value: aws.Bool(false)},
		})
	}); err != nil {
		return fmt.Errorf("turning off the source/destination check of %s (node %s): %w", id, route.TargetNode, err)
	}
	v6 := strings.Contains(route.DestinationCIDR, ":")
	for _, t := range tables {
		tid := aws.ToString(t.RouteTableId)
		var existing *ec2types.Route
		for i, rt := range t.Routes {
			if destination(rt) == route.DestinationCIDR {
				existing = &t.Routes[i]
			}
		}
		switch {
		case existing == nil:
			in := &ec2.CreateRouteInput{RouteTableId: aws.String(tid), InstanceId: aws.String(id)}
			if v6 {
				in.DestinationIpv6CidrBlock = aws.String(route.DestinationCIDR)
			} else {
				in.DestinationCidrBlock = aws.String(route.DestinationCIDR)
			}
			_, err := cloudapi.Call(ctx, r.c.api, "ec2.CreateRoute", func(ctx context.Context) (*ec2.CreateRouteOutput, error) {
				return cl.ec2.CreateRoute(ctx, in)
			})
			if err != nil && cloudapi.KindOf(err) != cloudapi.KindExists {
				return fmt.Errorf("creating route %s -> %s in %s: %w", route.DestinationCIDR, id, tid, err)
			}
		case aws.ToString(existing.InstanceId) == id && existing.State != ec2types.RouteStateBlackhole:
			// Already right.
		case aws.ToString(existing.InstanceId) != "" || existing.State == ec2types.RouteStateBlackhole:
			// A route of ours to another (or a vanished) instance.
			in := &ec2.ReplaceRouteInput{RouteTableId: aws.String(tid), InstanceId: aws.String(id)}
			if v6 {
				in.DestinationIpv6CidrBlock = aws.String(route.DestinationCIDR)
			} else {
				in.DestinationCidrBlock = aws.String(route.DestinationCIDR)
			}
			if _, err := cloudapi.Call(ctx, r.c.api, "ec2.ReplaceRoute", func(ctx context.Context) (*ec2.ReplaceRouteOutput, error) {
				return cl.ec2.ReplaceRoute(ctx, in)
			}); err != nil {
				return fmt.Errorf("pointing route %s at %s in %s: %w", route.DestinationCIDR, id, tid, err)
			}
		default:
			return fmt.Errorf("route table %s already routes %s to something that is not an instance; polyccm leaves it alone: remove that route or change the node's pod CIDR", tid, route.DestinationCIDR)
		}
	}
	klog.InfoS("Created route", "node", route.TargetNode, "cidr", route.DestinationCIDR, "instance", id)
	return nil
}

// DeleteRoute removes the route from every tagged table where it still
// points at the instance ListRoutes reported (or is a blackhole).
func (r *routes) DeleteRoute(ctx context.Context, _ string, route *cloudprovider.Route) error {
	cl, err := r.c.clusterClient(ctx)
	if err != nil {
		return err
	}
	tables, err := r.routeTables(ctx, cl)
	if err != nil {
		return err
	}
	instance, _, _ := strings.Cut(route.Name, "/")
	for _, t := range tables {
		tid := aws.ToString(t.RouteTableId)
		for _, rt := range t.Routes {
			if destination(rt) != route.DestinationCIDR || rt.Origin != ec2types.RouteOriginCreateRoute {
				continue
			}
			if aws.ToString(rt.InstanceId) != instance && rt.State != ec2types.RouteStateBlackhole {
				continue // repointed since it was listed
			}
			in := &ec2.DeleteRouteInput{RouteTableId: aws.String(tid)}
			if strings.Contains(route.DestinationCIDR, ":") {
				in.DestinationIpv6CidrBlock = aws.String(route.DestinationCIDR)
			} else {
				in.DestinationCidrBlock = aws.String(route.DestinationCIDR)
			}
			_, err := cloudapi.Call(ctx, r.c.api, "ec2.DeleteRoute", func(ctx context.Context) (*ec2.DeleteRouteOutput, error) {
				return cl.ec2.DeleteRoute(ctx, in)
			})
			if err != nil && !cloudapi.IsNotFound(err) {
				return fmt.Errorf("deleting route %s in %s: %w", route.DestinationCIDR, tid, err)
			}
		}
	}
	klog.InfoS("Deleted route", "node", route.TargetNode, "cidr", route.DestinationCIDR)
	return nil
}
