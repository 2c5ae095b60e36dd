package gce

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
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

// wantRule is the forwarding rule the Service asks for: to the target pool
// (external) or the backend service in the subnetwork (internal).
func wantRule(env *environment, spec *lbSpec) *computepb.ForwardingRule {
	want := spec.forwardingRule()
	if spec.internal {
		want.BackendService = ptr(backendServiceURL(env, spec.bsName))
		want.Network = ptr(networkURL(env))
		want.Subnetwork = ptr(subnetworkURL(env, spec.subnetwork))
		if spec.globalAccess {
			want.AllowGlobalAccess = ptr(true)
		}
	} else {
		want.Target, want.NetworkTier = ptr(targetPoolURL(env, spec)), &spec.tier
	}
	ports, portRange, all := spec.forwardingPorts()
	want.Ports = ports
	if portRange != "" {
		want.PortRange = &portRange
	}
	if all {
		want.AllPorts = ptr(true)
	}
	if spec.ip != "" {
		want.IPAddress = &spec.ip
	}
	return want
}

// createForwardingRule makes the rule on the address the plan holds.
func (l *loadBalancers) createForwardingRule(ctx context.Context, cl *clients, env *environment, spec *lbSpec, want *computepb.ForwardingRule) error {
	name := want.GetName()
	if err := l.c.change(ctx, cl, "forwardingRules.insert", "creating forwarding rule "+name, func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return cl.forwardingRules.Insert(ctx, &computepb.InsertForwardingRuleRequest{RequestId: rid, Project: env.project, Region: env.region, ForwardingRuleResource: want})
	}); err != nil {
		return err
	}
	klog.InfoS("Created forwarding rule", "service", spec.service, "name", name, "ip", want.GetIPAddress())
	return nil
}

// reserveAddress reserves a frontend's address under its rule's name, as
// upstream's ensureStaticIP and address manager do: ip (the address of
// the rule about to be replaced, which this promotes from ephemeral to
// static, or the one asked for), or a new one when ip is "". It returns
// the address reserved.
func (l *loadBalancers) reserveAddress(ctx context.Context, cl *clients, env *environment, spec *lbSpec, fe *frontend, ip string) (string, error) {
	a := &computepb.Address{Name: &fe.name, Description: ptr(serviceDescription(spec.service))}
	if ip != "" {
		a.Address = &ip
	}
	if spec.internal {
		a.AddressType = ptr("INTERNAL")
		a.Subnetwork = ptr(subnetworkURL(env, spec.subnetwork))
	} else {
		a.NetworkTier = &spec.tier
	}
	if fe.v6 {
		a.IpVersion = ptr("IPV6")
		if ip != "" {
			a.PrefixLength = ptr(int32(ipv6PrefixLength))
		}
	}
	if err := l.c.change(ctx, cl, "addresses.insert", "reserving address "+fe.name, func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return cl.addresses.Insert(ctx, &computepb.InsertAddressRequest{RequestId: rid, Project: env.project, Region: env.region, AddressResource: a})
	}); err != nil {
		return "", err
	}
	got, err := l.getAddress(ctx, cl, env, fe.name)
	if err != nil {
		return "", err
	}
	if got == nil || got.GetAddress() == "" {
		return "", fmt.Errorf("address %s was reserved but is not there yet", fe.name)
	}
	return canonicalIP(got.GetAddress()), nil
}

// ruleView is what polyccm sets of a forwarding rule, in one form whichever
// way GCE reports it (full or short URLs, a port list or a range, scheme
// and tier spelled differently).
type ruleView struct {
	IPAddress           string `json:"IPAddress"`
	IPProtocol          string `json:"IPProtocol"`
	Ports               string `json:"ports"`
	Target              string `json:"target"`
	BackendService      string `json:"backendService"`
	LoadBalancingScheme string `json:"loadBalancingScheme"`
	NetworkTier         string `json:"networkTier"`
	Subnetwork          string `json:"subnetwork"`
	AllowGlobalAccess   bool   `json:"allowGlobalAccess"`
	IPVersion           string `json:"ipVersion,omitempty"`
}

// viewRule is fr as compared with want: the address and the tier count
// only where want sets them (GCE picks them otherwise).
func viewRule(fr, want *computepb.ForwardingRule) ruleView {
	v := ruleView{
		IPProtocol:          fr.GetIPProtocol(),
		Ports:               portsOf(fr),
		Target:              shortURL(fr.GetTarget()),
		BackendService:      shortURL(fr.GetBackendService()),
		LoadBalancingScheme: strings.ToUpper(fr.GetLoadBalancingScheme()),
		Subnetwork:          lastSegment(fr.GetSubnetwork()),
		AllowGlobalAccess:   fr.GetAllowGlobalAccess(),
	}
	if want.GetIpVersion() == "IPV6" {
		v.IPVersion = strings.ToUpper(fr.GetIpVersion())
	}
	if want.IPAddress != nil {
		v.IPAddress = canonicalIP(fr.GetIPAddress())
	}
	if want.NetworkTier != nil {
		v.NetworkTier = cmp.Or(fr.GetNetworkTier(), "PREMIUM")
	}
	return v
}

// ruleFields are the fields in which cur differs from want. GCE changes
// almost none of them in place, so any makes the rule be replaced.
func ruleFields(cur, want *computepb.ForwardingRule) []loadbalancers.Field {
	return loadbalancers.Diff(viewRule(cur, want), viewRule(want, want))
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
// description, protocol and scheme; wantRule adds where it forwards.
func (spec *lbSpec) forwardingRule() *computepb.ForwardingRule {
	return &computepb.ForwardingRule{
		Name:                &spec.base,
		Description:         ptr(serviceDescription(spec.service)),
		IPProtocol:          &spec.protocol,
		LoadBalancingScheme: ptr(spec.scheme()),
	}
}
