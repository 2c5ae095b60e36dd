package gce

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/loadbalancers"
)

// What a plan's changes are to, as the plan names them.
const (
	kindRule           = "forwarding rule"
	kindAddress        = "address"
	kindPool           = "target pool"
	kindHTTPHealth     = "HTTP health check"
	kindHealth         = "health check"
	kindGroup          = "instance group"
	kindBackendService = "backend service"
	kindFirewall       = "firewall rule"
)

// newAddress stands in a plan for the address a reservation in it gets.
const newAddress = "(the address reserved for it)"

// lbPlan is one sync's changes, and the Service's addresses: its rules'
// as observed, or the ones the plan's reservations got (set when they
// apply).
type lbPlan struct {
	loadbalancers.Plan
	ip, ip6 string
	// base is what the node-only sync may reuse once the plan is applied.
	base *syncBase
	// allowLeft: a write of an allow rule was left to the Shared VPC host
	// project's admin, so the rule may still be below the deny rule.
	allowLeft bool
}

// ipOr is the address for a plan's fields before it is applied.
func ipOr(ip string) string {
	if ip == "" {
		return newAddress
	}
	return ip
}

// frontend is one forwarding rule of the Service, of one IP version: its
// name (its address reservation's too), the address asked for, what GCE
// has, and where the plan keeps the rule's address.
type frontend struct {
	name string
	v6   bool
	want string // the address asked for; "" for any
	user bool   // want is an address the operator reserved
	cur  *computepb.ForwardingRule
	addr *computepb.Address // a reservation a stopped sync left
	ip   *string
	rule func() *computepb.ForwardingRule
}

// rulePlan is what the plan decided for a frontend.
type rulePlan struct {
	fe             *frontend
	make, reserved bool
	diff           []loadbalancers.Field
}

// plan computes the changes that make what obs found into what spec asks
// for, over the nodes' instances by zone. It makes no cloud call: the
// changes' Apply closures do, in the plan's order, which is the order GCE
// needs (an address is reserved before the rule holding it is replaced,
// what a resource refers to exists before it, a rule goes before what it
// uses). URLs are derived from names, so nothing waits for a create's
// answer; the one value learnt while applying is a new address, which
// the later steps read from the plan.
func (l *loadBalancers) plan(cl *clients, env *environment, spec *lbSpec, byZone map[string][]string, obs *observed) *lbPlan {
	p := &lbPlan{}
	deny := l.denies(spec, obs)
	if obs.deny != nil && !deny {
		// First: no allow rule goes back to 1000 while it is there.
		l.planDropDeny(p, cl, env, spec)
	}
	cur := obs.rule
	if obs.rule6 != nil && !spec.v6 {
		l.planDropIPv6(p, cl, env, spec, obs)
	}
	if obs.switched || obs.leftOther {
		l.planOldScheme(p, cl, env, spec, obs)
	}
	if obs.switched {
		cur = nil
	}
	if cur != nil && !spec.v4 {
		d := l.deleter(cl, env, spec)
		p.Add(loadbalancers.Change{Action: loadbalancers.Delete, Kind: kindRule, Name: spec.base, Apply: d.forwardingRule})
		cur = nil
	}
	var rules []*rulePlan
	if spec.v4 {
		fe := &frontend{name: spec.base, want: spec.ip, user: obs.userIP, cur: cur, addr: obs.addr, ip: &p.ip,
			rule: func() *computepb.ForwardingRule { return wantRule(env, spec) }}
		poolGone := cur != nil && !spec.internal && obs.pool != nil && poolNeedsRecreate(obs.pool, spec)
		rules = append(rules, l.planRuleStart(p, cl, env, spec, fe, poolGone))
	}
	if spec.v6 {
		fe := &frontend{name: ipv6Name(spec.base), v6: true, want: spec.ip6, user: spec.ip6 != "", cur: obs.rule6, addr: obs.addr6, ip: &p.ip6,
			rule: func() *computepb.ForwardingRule { return wantRule6(env, spec) }}
		rules = append(rules, l.planRuleStart(p, cl, env, spec, fe, false))
	}
	if spec.internal {
		l.planInternal(p, cl, env, spec, byZone, obs)
	} else {
		l.planExternal(p, cl, env, spec, byZone, obs, len(rules) > 0 && rules[0].make && cur != nil)
	}
	l.planFirewalls(p, cl, env, spec, obs, deny)
	if deny {
		l.planDeny(p, cl, env, spec, obs)
	}
	for _, rp := range rules {
		l.planRuleEnd(p, cl, env, spec, rp)
	}
	l.planStale(p, cl, env, spec, obs)
	return p
}

// planRuleStart plans a frontend's address and, when its rule must be
// replaced (it differs from what is wanted, or what it forwards to is
// recreated), the old rule's deletion.
func (l *loadBalancers) planRuleStart(p *lbPlan, cl *clients, env *environment, spec *lbSpec, fe *frontend, forceReplace bool) *rulePlan {
	rp := &rulePlan{fe: fe}
	replace := false
	if fe.cur != nil {
		rp.diff = ruleFields(fe.cur, fe.rule())
		replace = len(rp.diff) > 0 || forceReplace
	}
	rp.make = fe.cur == nil || replace
	rp.reserved = l.planAddress(p, cl, env, spec, fe, rp.make)
	if replace {
		d := l.deleter(cl, env, spec)
		p.Add(loadbalancers.Change{Action: loadbalancers.Delete, Kind: kindRule, Name: fe.name,
			Apply: func(ctx context.Context) error {
				klog.InfoS("Replacing forwarding rule", "service", spec.service, "name", fe.name, "ip", *fe.ip)
				return d.rule(ctx, fe.name)
			}})
	}
	return rp
}

// planRuleEnd makes the frontend's rule, on the address the plan holds,
// and then releases the reservation that kept the address.
func (l *loadBalancers) planRuleEnd(p *lbPlan, cl *clients, env *environment, spec *lbSpec, rp *rulePlan) {
	fe := rp.fe
	if rp.make {
		p.Add(loadbalancers.Change{Action: loadbalancers.Create, Kind: kindRule, Name: fe.name, Fields: rp.diff,
			Apply: func(ctx context.Context) error {
				w := fe.rule()
				w.IPAddress = fe.ip
				return l.createForwardingRule(ctx, cl, env, spec, w)
			}})
	}
	if rp.reserved {
		// The rule holds the address now: deleting the reservation
		// demotes it to ephemeral, as upstream does (a static address
		// counts against the region's quota).
		d := l.deleter(cl, env, spec)
		p.Add(loadbalancers.Change{Action: loadbalancers.Delete, Kind: kindAddress, Name: fe.name,
			Apply: func(ctx context.Context) error { return d.addressNamed(ctx, fe.name) }})
	}
}

// planAddress decides a frontend's address. A rule that stays keeps its
// own. A rule to be made gets one reserved first, under the rule's name:
// the replaced rule's (so the Service keeps its IP), the one asked for, or
// a new one; unless the operator reserved the one asked for themselves.
// It reports whether the plan holds a reservation to release at its end.
func (l *loadBalancers) planAddress(p *lbPlan, cl *clients, env *environment, spec *lbSpec, fe *frontend, makeRule bool) bool {
	if !makeRule {
		*fe.ip = canonicalIP(fe.cur.GetIPAddress())
		return fe.addr != nil // a reservation a stopped sync left
	}
	if fe.user {
		*fe.ip = fe.want
		return false
	}
	ip := fe.want
	if ip == "" && fe.cur != nil && keepsAddress(fe.cur, spec) {
		ip = canonicalIP(fe.cur.GetIPAddress())
	}
	if a := fe.addr; a != nil && (ip == "" || canonicalIP(a.GetAddress()) == ip) {
		*fe.ip = canonicalIP(a.GetAddress()) // reserved by an earlier sync that stopped
		return true
	}
	if a := fe.addr; a != nil {
		// Reserved for another address than the one needed now.
		d := l.deleter(cl, env, spec)
		p.Add(loadbalancers.Change{Action: loadbalancers.Delete, Kind: kindAddress, Name: fe.name,
			Fields: []loadbalancers.Field{{Name: "address", From: a.GetAddress(), To: "none"}},
			Apply:  func(ctx context.Context) error { return d.addressNamed(ctx, fe.name) }})
	}
	*fe.ip = ip
	to := ip
	if to == "" {
		to = "a new one"
	}
	p.Add(loadbalancers.Change{Action: loadbalancers.Create, Kind: kindAddress, Name: fe.name,
		Fields: []loadbalancers.Field{{Name: "address", From: "none", To: to}},
		Apply: func(ctx context.Context) error {
			got, err := l.reserveAddress(ctx, cl, env, spec, fe, ip)
			*fe.ip = got
			return err
		}})
	return true
}

// createOrUpdate plans the create of a resource GCE lacks, or the update
// of the one it has (fields: how it differs; no fields, no update).
func createOrUpdate(p *lbPlan, kind, name string, exists bool, fields func() []loadbalancers.Field, create, update func(context.Context) error) {
	if !exists {
		p.Add(loadbalancers.Change{Action: loadbalancers.Create, Kind: kind, Name: name, Apply: create})
		return
	}
	p.Add(loadbalancers.Change{Action: loadbalancers.Update, Kind: kind, Name: name, Fields: fields(), Apply: update})
}

// keepsAddress reports whether cur's address can carry over to the rule
// that replaces it: not across network tiers or subnetworks.
func keepsAddress(cur *computepb.ForwardingRule, spec *lbSpec) bool {
	if !strings.EqualFold(cur.GetLoadBalancingScheme(), spec.scheme()) {
		return false
	}
	if spec.internal {
		return lastSegment(cur.GetSubnetwork()) == spec.subnetwork
	}
	tier := cur.GetNetworkTier()
	if tier == "" {
		tier = "PREMIUM"
	}
	return tier == spec.tier
}

// planFirewalls makes or updates the Service's allow rules, at the
// priority upstream gives them (allowPriority): with the deny rule, 999,
// so they win over it.
func (l *loadBalancers) planFirewalls(p *lbPlan, cl *clients, env *environment, spec *lbSpec, obs *observed, deny bool) {
	type fwFor struct {
		name string
		v6   bool
	}
	var fws []fwFor
	if spec.v4 {
		fws = append(fws, fwFor{firewallName(spec.base), false}, fwFor{spec.hcFirewallName(), false})
	}
	if spec.v6 {
		for _, n := range spec.firewallNames6() {
			fws = append(fws, fwFor{n, true})
		}
	}
	for _, f := range fws {
		ip := &p.ip
		if f.v6 {
			ip = &p.ip6
		}
		cur := obs.firewalls[f.name]
		prio := l.allowPriority(spec, deny, f.name, cur)
		want := firewallFor(env, spec, f.name, ipOr(*ip), f.v6, prio)
		build := func() *computepb.Firewall { return firewallFor(env, spec, f.name, *ip, f.v6, prio) }
		shared := spec.hcShared && (f.name == spec.hcFirewallName() || f.name == ipv6Name(spec.hcFirewallName()))
		write := func(fn func(context.Context, *clients, *environment, *lbSpec, *computepb.Firewall) (bool, error)) func(context.Context) error {
			return func(ctx context.Context) error {
				left, err := fn(ctx, cl, env, spec, build())
				p.allowLeft = p.allowLeft || left
				return err
			}
		}
		createOrUpdate(p, kindFirewall, f.name, cur != nil,
			func() []loadbalancers.Field {
				return loadbalancers.Diff(viewFirewall(cur, shared), viewFirewall(want, shared))
			},
			write(l.insertFirewall), write(l.updateFirewall))
	}
}

// planDropIPv6 deletes the IPv6 rule of a Service that serves IPv6 no
// more (its family was removed, or it turned external), with its
// reservation and its own firewall rules; the nodes' shared health-check
// rule goes with the shared health check.
func (l *loadBalancers) planDropIPv6(p *lbPlan, cl *clients, env *environment, spec *lbSpec, obs *observed) {
	d := l.deleter(cl, env, spec)
	name := ipv6Name(spec.base)
	p.Add(loadbalancers.Change{Action: loadbalancers.Delete, Kind: kindRule, Name: name,
		Apply: func(ctx context.Context) error { return d.rule(ctx, name) }})
	if obs.addr6 != nil {
		p.Add(loadbalancers.Change{Action: loadbalancers.Delete, Kind: kindAddress, Name: name,
			Apply: func(ctx context.Context) error { return d.addressNamed(ctx, name) }})
	}
	for _, fw := range []string{ipv6Name(firewallName(spec.base)), ipv6Name(internalHCFirewallName(spec.base, spec.cid, false))} {
		p.Add(loadbalancers.Change{Action: loadbalancers.Delete, Kind: kindFirewall, Name: fw,
			Apply: func(ctx context.Context) error { return d.firewall(ctx, fw) }})
	}
}

// firewallView is what polyccm sets of a firewall rule, in order; allowed
// and denied as "protocol:ports". The shared health check's rule is
// compared without its destination, which upstream set once, for
// whichever Service made it.
type firewallView struct {
	Description       string   `json:"description"`
	SourceRanges      []string `json:"sourceRanges"`
	DestinationRanges []string `json:"destinationRanges,omitempty"`
	TargetTags        []string `json:"targetTags"`
	Allowed           []string `json:"allowed,omitempty"`
	Denied            []string `json:"denied,omitempty"`
	Priority          int32    `json:"priority"`
}

func viewFirewall(fw *computepb.Firewall, shared bool) firewallView {
	var allowed, denied []string
	for _, a := range fw.GetAllowed() {
		ports := slices.Sorted(slices.Values(a.GetPorts()))
		allowed = append(allowed, strings.ToLower(a.GetIPProtocol())+":"+strings.Join(ports, ","))
	}
	for _, d := range fw.GetDenied() {
		ports := slices.Sorted(slices.Values(d.GetPorts()))
		denied = append(denied, strings.ToLower(d.GetIPProtocol())+":"+strings.Join(ports, ","))
	}
	v := firewallView{Description: fw.GetDescription(), SourceRanges: sortedOrNil(fw.GetSourceRanges()), TargetTags: sortedOrNil(fw.GetTargetTags()),
		Allowed: allowed, Denied: denied, Priority: fw.GetPriority()}
	if !shared {
		v.DestinationRanges = sortedOrNil(fw.GetDestinationRanges())
	}
	return v
}

// planStale deletes the health check the Service no longer uses (its
// externalTrafficPolicy changed) and a backend service its rule left
// (backend sharing turned on or off), once nothing of the Service refers
// to them. Shared ones go only when no other Service uses them.
func (l *loadBalancers) planStale(p *lbPlan, cl *clients, env *environment, spec *lbSpec, obs *observed) {
	d := l.deleter(cl, env, spec)
	var old []string
	switch {
	case spec.internal && obs.bs != nil:
		old = shortURLs(obs.bs.GetHealthChecks())
	case !spec.internal && obs.pool != nil:
		old = shortURLs(obs.pool.GetHealthChecks())
	}
	for _, u := range old {
		name := lastSegment(u)
		if name == spec.hcName || (name != spec.base && name != nodesHealthCheckName(spec.cid)) {
			continue // in use, or not one upstream or polyccm names
		}
		shared := name != spec.base
		if spec.internal {
			p.Add(loadbalancers.Change{Action: loadbalancers.Delete, Kind: kindHealth, Name: name,
				Apply: func(ctx context.Context) error { return d.healthCheck(ctx, name, shared) }})
		} else {
			p.Add(loadbalancers.Change{Action: loadbalancers.Delete, Kind: kindHTTPHealth, Name: name,
				Apply: func(ctx context.Context) error { return d.httpHealthCheck(ctx, name, shared) }})
		}
	}
	if obs.oldBS != "" {
		name := obs.oldBS
		p.Add(loadbalancers.Change{Action: loadbalancers.Delete, Kind: kindBackendService, Name: name,
			Apply: func(ctx context.Context) error { return d.backendService(ctx, name, name != spec.base) }})
	}
}

// planOldScheme deletes the rule of the other scheme and what only that
// scheme's load balancer of the Service uses, so that a Service whose
// type changed leaves nothing behind. The rule goes first, as GCE refuses
// to delete a target pool or backend service a rule uses. The Service's
// traffic firewall rule has one name for both schemes and stays.
func (l *loadBalancers) planOldScheme(p *lbPlan, cl *clients, env *environment, spec *lbSpec, obs *observed) {
	d := l.deleter(cl, env, spec)
	fr := obs.rule
	if obs.switched {
		from := fr.GetLoadBalancingScheme()
		p.Add(loadbalancers.Change{Action: loadbalancers.Delete, Kind: kindRule, Name: spec.base,
			Fields: []loadbalancers.Field{{Name: "loadBalancingScheme", From: from, To: spec.scheme()}},
			Apply: func(ctx context.Context) error {
				klog.InfoS("Load balancer scheme changed: deleting the old load balancer", "service", spec.service, "from", from, "to", spec.scheme())
				return d.forwardingRule(ctx)
			}})
	}
	if spec.internal {
		p.Add(loadbalancers.Change{Action: loadbalancers.Delete, Kind: kindPool, Name: spec.base, Apply: d.targetPool})
		p.Add(loadbalancers.Change{Action: loadbalancers.Delete, Kind: kindHTTPHealth, Name: "health checks of " + spec.base,
			Apply: d.httpHealthChecks})
		return
	}
	bs := spec.base
	if fr != nil {
		bs = lastSegment(fr.GetBackendService())
	}
	p.Add(loadbalancers.Change{Action: loadbalancers.Delete, Kind: kindBackendService, Name: bs,
		Apply: func(ctx context.Context) error { return d.backendService(ctx, bs, bs != spec.base) }})
	p.Add(loadbalancers.Change{Action: loadbalancers.Delete, Kind: kindHealth, Name: "health checks of " + spec.base, Apply: d.healthChecks})
	p.Add(loadbalancers.Change{Action: loadbalancers.Delete, Kind: kindGroup, Name: instanceGroupName(spec.cid) + " (unless in use)",
		Apply: func(ctx context.Context) error { return l.pruneInstanceGroups(ctx, cl, env, spec.cid) }})
}

// memberFields name the instances a change adds to a pool or group and
// those it removes.
func memberFields(add, remove []string) []loadbalancers.Field {
	var out []loadbalancers.Field
	if len(add) > 0 {
		out = append(out, loadbalancers.Field{Name: "instances added", From: "none", To: instanceList(add)})
	}
	if len(remove) > 0 {
		out = append(out, loadbalancers.Field{Name: "instances removed", From: instanceList(remove), To: "none"})
	}
	return out
}

// maxListed bounds the instances a field names, so a plan for a large
// cluster stays one readable log line.
const maxListed = 10

// instanceList names instances as zone/name.
func instanceList(urls []string) string {
	var names []string
	for i, u := range urls {
		if i == maxListed {
			names = append(names, fmt.Sprintf("and %d more", len(urls)-i))
			break
		}
		if _, rest, ok := strings.Cut(u, "/zones/"); ok {
			u = strings.Replace(rest, "/instances/", "/", 1)
		}
		names = append(names, u)
	}
	return strings.Join(names, ", ")
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// shortURLs are urls short and sorted; nil when there are none, so an
// empty list and a missing one compare equal.
func shortURLs(urls []string) []string {
	var out []string
	for _, u := range urls {
		out = append(out, shortURL(u))
	}
	return sortedOrNil(out)
}

func sortedOrNil(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
