package aws

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/annotations"
)

// The node-only sync. When Nodes join or leave, the service controller
// calls UpdateLoadBalancer for every LoadBalancer Service; a full sync
// reads every resource of each load balancer (six reads and more for a
// Classic one) to change only its instances. The node-only sync reads what
// a node change changes (the registered instances) and takes the rest from
// the last full sync of the same Service in this process: that sync
// passed the ownership rule and left the load balancer as the Service
// asks. It does so only while the Service asks for exactly what it asked
// then, and while the load balancer, as far as the one read shows it, is
// still what that sync left; anything else falls back to the full sync.
// Drift the read does not show (attributes, tags, security group rules,
// newly tagged subnets) is corrected by the next full sync: a change of
// the Service, a restart, or a node change once the base is
// loadbalancers.BaseMaxAge old (core/loadbalancers.Bases keeps them).

// syncBase is what the last successful full sync of a Service left.
type syncBase struct {
	// spec is the load balancer the Service asked for then
	// (*classicSpec or *nlbSpec), compared whole with what it asks now.
	spec any
	// subnets are those the sync discovered or resolved (sorted IDs for a
	// Classic load balancer, []subnet for an NLB).
	subnets any
	// sgID is the managed security group's ID, "" without one.
	sgID string
	// tgARNs are an NLB's target groups by the name the Service's ports
	// give them.
	tgARNs map[string]string
	// groups are the node groups the targets' instances were in, which
	// the load balancer's rules were put into; nil when the operator
	// manages them (disableSecurityGroupIngress).
	groups map[string]bool
}

// maxInstanceGroups bounds the instance-to-group cache: past it, the cache
// starts again (the instances are described afresh when needed).
const maxInstanceGroups = 100000

// instanceGroups is which node group each instance's load balancer rules
// go into (nodeGroupFor), as the full syncs found it, shared by every
// Service: one instance's choice is the same for all of them.
type instanceGroups struct {
	mu sync.Mutex
	of map[string]string // instance ID -> group ID ("" none)
	// tagged are the cluster's node groups the latest full sync saw; a new
	// instance's group is chosen among them.
	tagged map[string]bool
}

// learn records the choices of a full sync's observeNodeGroups.
func (g *instanceGroups) learn(ng *nodeGroups) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.of == nil || len(g.of)+len(ng.of) > maxInstanceGroups {
		g.of = map[string]string{}
	}
	maps.Copy(g.of, ng.of)
	g.tagged = maps.Clone(ng.tagged)
}

// nodeGroupsOf returns the node groups of targets, describing only the
// instances the cache does not know. ok is false when the node-only sync
// cannot decide: no full sync taught the cache the cluster's groups, an
// instance was not found, or its group cannot be chosen (the full sync
// reports that).
func (l *loadBalancers) nodeGroupsOf(ctx context.Context, cl *clients, targets []string) (want map[string]bool, ok bool, err error) {
	g := &l.groups
	g.mu.Lock()
	tagged := g.tagged
	var unknown []string
	want = map[string]bool{}
	for _, id := range targets {
		sg, known := g.of[id]
		switch {
		case !known:
			unknown = append(unknown, id)
		case sg != "":
			want[sg] = true
		}
	}
	g.mu.Unlock()
	if tagged == nil {
		return nil, false, nil
	}
	learnt := map[string]string{}
	for chunk := range slices.Chunk(unknown, filterChunk) {
		insts, err := l.c.describeInstances(ctx, cl, []ec2types.Filter{{Name: aws.String("instance-id"), Values: chunk}})
		if err != nil {
			return nil, false, err
		}
		for _, in := range insts {
			id := aws.ToString(in.InstanceId)
			sg, err := nodeGroupFor(id, in.SecurityGroups, func(id string) bool { return tagged[id] })
			if err != nil {
				klog.V(4).InfoS("Node-only sync cannot choose an instance's node group", "instance", id, "err", err)
				return nil, false, nil
			}
			learnt[id] = sg
		}
	}
	for _, id := range unknown {
		sg, found := learnt[id]
		if !found {
			return nil, false, nil // not visible yet, or gone: the full sync decides
		}
		if sg != "" {
			want[sg] = true
		}
	}
	if len(learnt) > 0 {
		g.mu.Lock()
		if g.of == nil || len(g.of)+len(learnt) > maxInstanceGroups {
			g.of = map[string]string{}
		}
		maps.Copy(g.of, learnt)
		g.mu.Unlock()
	}
	return want, true, nil
}

// sameNodeGroups reports whether the targets' node groups are still those
// the full sync put the load balancer's rules into; only then do the
// rules need no change. Without managed rules it is always true.
func (l *loadBalancers) sameNodeGroups(ctx context.Context, cl *clients, base *syncBase, targets []string) (bool, error) {
	if l.c.cfg.DisableSecurityGroupIngress {
		return true, nil
	}
	if base.groups == nil {
		return false, nil
	}
	want, ok, err := l.nodeGroupsOf(ctx, cl, targets)
	if err != nil || !ok {
		return false, err
	}
	return maps.Equal(want, base.groups), nil
}

// unchangedSpec starts both node-only syncs: the Service's base, and its
// spec (specOf: classicSpecOf or nlbSpecOf) when that is still what the
// base's full sync asked for. The target-node-labels annotation, ports,
// health check...: any change is the full sync's, even one the service
// controller has not passed on yet. ok false, logged, sends the node sync
// to the full sync.
func unchangedSpec[S any](base *syncBase, svc *v1.Service, specOf func(*v1.Service) (S, *annotations.Values)) (_ *syncBase, spec S, ok bool) {
	if base == nil {
		fallBack(svc, "no full sync of the Service in this process yet")
		return nil, spec, false
	}
	was, ok := base.spec.(S)
	if !ok {
		fallBack(svc, "the Service's last full sync was of another kind of load balancer")
		return nil, spec, false
	}
	spec, a := specOf(svc)
	if a.Err() != nil {
		fallBack(svc, "the Service's settings have problems, which the full sync reports")
		return nil, spec, false
	}
	if !reflect.DeepEqual(spec, was) {
		fallBack(svc, "the Service asks for something else than at its last full sync")
		return nil, spec, false
	}
	return base, spec, true
}

// fallBack logs why a node sync runs as a full sync.
func fallBack(svc *v1.Service, why string) {
	klog.V(4).InfoS("Node sync runs as a full sync", "service", klog.KObj(svc), "reason", why)
}
