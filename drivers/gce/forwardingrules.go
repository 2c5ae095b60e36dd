package gce

import (
	"context"
	"fmt"
	"slices"
	"strings"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/cloudapi"
)

func (l *loadBalancers) getForwardingRule(ctx context.Context, cl *clients, env *environment, name string) (*computepb.ForwardingRule, error) {
	fr, err := call(ctx, l.c, "forwardingRules.get", func(ctx context.Context) (*computepb.ForwardingRule, error) {
		return cl.forwardingRules.Get(ctx, &computepb.GetForwardingRuleRequest{Project: env.project, Region: env.region, ForwardingRule: name})
	})
	if cloudapi.IsNotFound(err) {
		return nil, nil
	}
	return fr, err
}

// ensureForwardingRule creates the rule, or recreates it when something
// it cannot change in place differs; cur is the rule as the pass began,
// nil if there was none. It returns the rule's address.
func (l *loadBalancers) ensureForwardingRule(ctx context.Context, cl *clients, env *environment, spec *lbSpec, want, cur *computepb.ForwardingRule) (string, error) {
	ports, portRange, all := spec.forwardingPorts()
	want.Ports, want.AllPorts = ports, nil
	if portRange != "" {
		want.PortRange = &portRange
	}
	if all {
		want.AllPorts = ptr(true)
	}
	if spec.ip != "" {
		want.IPAddress = &spec.ip
	}
	var err error
	if cur != nil && !sameForwardingRule(cur, want) {
		klog.InfoS("Recreating forwarding rule", "service", spec.service, "name", spec.base)
		if err := l.deleter(cl, env, spec.base).forwardingRule(ctx); err != nil {
			return "", err
		}
		cur = nil
	}
	if cur == nil {
		if err := l.c.change(ctx, cl, "forwardingRules.insert", "creating forwarding rule "+spec.base, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.forwardingRules.Insert(ctx, &computepb.InsertForwardingRuleRequest{RequestId: rid, Project: env.project, Region: env.region, ForwardingRuleResource: want})
		}); err != nil {
			return "", err
		}
		if cur, err = l.getForwardingRule(ctx, cl, env, spec.base); err != nil {
			return "", err
		}
		if cur == nil {
			return "", fmt.Errorf("forwarding rule %s was created but is not there yet", spec.base)
		}
		klog.InfoS("Created forwarding rule", "service", spec.service, "name", spec.base, "ip", cur.GetIPAddress())
	}
	return cur.GetIPAddress(), nil
}

func sameForwardingRule(cur, want *computepb.ForwardingRule) bool {
	if want.IPAddress != nil && cur.GetIPAddress() != want.GetIPAddress() {
		return false
	}
	tier := func(s string) string {
		if s == "" {
			return "PREMIUM"
		}
		return s
	}
	return cur.GetIPProtocol() == want.GetIPProtocol() &&
		portsOf(cur) == portsOf(want) &&
		shortURL(cur.GetTarget()) == shortURL(want.GetTarget()) &&
		shortURL(cur.GetBackendService()) == shortURL(want.GetBackendService()) &&
		strings.EqualFold(cur.GetLoadBalancingScheme(), want.GetLoadBalancingScheme()) &&
		(want.NetworkTier == nil || tier(cur.GetNetworkTier()) == want.GetNetworkTier()) &&
		lastSegment(cur.GetSubnetwork()) == lastSegment(want.GetSubnetwork()) &&
		cur.GetAllowGlobalAccess() == want.GetAllowGlobalAccess()
}

// portsOf describes a rule's ports whichever way they were given: a list,
// a range ("80-80" is port 80) or all ports.
func portsOf(fr *computepb.ForwardingRule) string {
	switch {
	case fr.GetAllPorts():
		return "all"
	case len(fr.GetPorts()) > 0:
		ps := slices.Clone(fr.GetPorts())
		slices.Sort(ps)
		return strings.Join(ps, ",")
	}
	lo, hi, ok := strings.Cut(fr.GetPortRange(), "-")
	if !ok || lo == hi {
		return lo
	}
	return lo + "-" + hi
}

// forwardingRule is what every scheme's rule has: the Service's name,
// description, protocol and scheme; the caller adds where it forwards.
func (spec *lbSpec) forwardingRule() *computepb.ForwardingRule {
	return &computepb.ForwardingRule{
		Name:                &spec.base,
		Description:         ptr(description(spec)),
		IPProtocol:          &spec.protocol,
		LoadBalancingScheme: ptr(spec.scheme()),
	}
}
