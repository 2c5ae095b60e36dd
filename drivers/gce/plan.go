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

// lbPlan is one sync's changes, and the Service's address: the rule's as
// observed, or the one the plan's reservation got (set when it applies).
type lbPlan struct {
	loadbalancers.Plan
	ip string
}

// ipOr is the address for a plan's fields before it is applied.
func (p *lbPlan) ipOr() string {
	if p.ip == "" {
		return newAddress
	}
	return p.ip
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
	cur := obs.rule
	if obs.switched || obs.leftOther {
		l.planOldScheme(p, cl, env, spec, obs)
	}
	if obs.switched {
		cur = nil
	}
	want := wantRule(env, spec)
	var ruleDiff []loadbalancers.Field
	replace := false
	if cur != nil {
		ruleDiff = ruleFields(cur, want)
		replace = len(ruleDiff) > 0 || (!spec.internal && obs.pool != nil && poolNeedsRecreate(obs.pool, spec))
	}
	makeRule := cur == nil || replace
	reserved := l.planAddress(p, cl, env, spec, obs, cur, makeRule)
	if replace {
		d := l.deleter(cl, env, spec)
		p.Add(loadbalancers.Change{Action: loadbalancers.Delete, Kind: kindRule, Name: spec.base,
			Apply: func(ctx context.Context) error {
				klog.InfoS("Replacing forwarding rule", "service", spec.service, "name", spec.base, "ip", p.ip)
				return d.forwardingRule(ctx)
			}})
	}
	if spec.internal {
		l.planInternal(p, cl, env, spec, byZone, obs)
	} else {
		l.planExternal(p, cl, env, spec, byZone, obs, replace)
	}
	l.planFirewalls(p, cl, env, spec, obs)
	if makeRule {
		p.Add(loadbalancers.Change{Action: loadbalancers.Create, Kind: kindRule, Name: spec.base, Fields: ruleDiff,
			Apply: func(ctx context.Context) error {
				w := wantRule(env, spec)
				w.IPAddress = &p.ip
				return l.createForwardingRule(ctx, cl, env, spec, w)
			}})
	}
	if reserved {
		// The rule holds the address now: deleting the reservation
		// demotes it to ephemeral, as upstream does (a static address
		// counts against the region's quota).
		d := l.deleter(cl, env, spec)
		p.Add(loadbalancers.Change{Action: loadbalancers.Delete, Kind: kindAddress, Name: spec.base, Apply: d.address})
	}
	l.planStale(p, cl, env, spec, obs)
	return p
}

// planAddress decides the Service's address. A rule that stays keeps its
// own. A rule to be made gets one reserved first, under the load
// balancer's name: the replaced rule's (so the Service keeps its IP), the
// Service's loadBalancerIP, or a new one; unless the operator reserved
// loadBalancerIP themselves. It reports whether the plan holds a
// reservation to release at its end.
func (l *loadBalancers) planAddress(p *lbPlan, cl *clients, env *environment, spec *lbSpec, obs *observed, cur *computepb.ForwardingRule, makeRule bool) bool {
	if !makeRule {
		p.ip = cur.GetIPAddress()
		return obs.addr != nil // a reservation a stopped sync left
	}
	if obs.userIP {
		p.ip = spec.ip
		return false
	}
	ip := spec.ip
	if ip == "" && cur != nil && keepsAddress(cur, spec) {
		ip = cur.GetIPAddress()
	}
	if a := obs.addr; a != nil && (ip == "" || a.GetAddress() == ip) {
		p.ip = a.GetAddress() // reserved by an earlier sync that stopped
		return true
	}
	if a := obs.addr; a != nil {
		// Reserved for another address than the one needed now.
		d := l.deleter(cl, env, spec)
		p.Add(loadbalancers.Change{Action: loadbalancers.Delete, Kind: kindAddress, Name: spec.base,
			Fields: []loadbalancers.Field{{Name: "address", From: a.GetAddress(), To: "none"}}, Apply: d.address})
	}
	p.ip = ip
	to := ip
	if to == "" {
		to = "a new one"
	}
	p.Add(loadbalancers.Change{Action: loadbalancers.Create, Kind: kindAddress, Name: spec.base,
		Fields: []loadbalancers.Field{{Name: "address", From: "none", To: to}},
		Apply: func(ctx context.Context) error {
			got, err := l.reserveAddress(ctx, cl, env, spec, ip)
			p.ip = got
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

func (l *loadBalancers) planFirewalls(p *lbPlan, cl *clients, env *environment, spec *lbSpec, obs *observed) {
	for _, name := range []string{firewallName(spec.base), spec.hcFirewallName()} {
		want := firewallFor(env, spec, name, p.ipOr())
		build := func() *computepb.Firewall { return firewallFor(env, spec, name, p.ip) }
		cur := obs.firewalls[name]
		shared := spec.hcShared && name == spec.hcFirewallName()
		createOrUpdate(p, kindFirewall, name, cur != nil,
			func() []loadbalancers.Field {
				return loadbalancers.Diff(viewFirewall(cur, shared), viewFirewall(want, shared))
			},
			func(ctx context.Context) error { return l.insertFirewall(ctx, cl, env, build()) },
			func(ctx context.Context) error { return l.updateFirewall(ctx, cl, env, build()) })
	}
}

// firewallView is what polyccm sets of a firewall rule, in order; allowed
// as "protocol:ports". The shared health check's rule is compared without
// its destination, which upstream set once, for whichever Service made it.
type firewallView struct {
	Description       string   `json:"description"`
	SourceRanges      []string `json:"sourceRanges"`
	DestinationRanges []string `json:"destinationRanges,omitempty"`
	TargetTags        []string `json:"targetTags"`
	Allowed           []string `json:"allowed"`
}

func viewFirewall(fw *computepb.Firewall, shared bool) firewallView {
	var allowed []string
	for _, a := range fw.GetAllowed() {
		ports := slices.Sorted(slices.Values(a.GetPorts()))
		allowed = append(allowed, strings.ToLower(a.GetIPProtocol())+":"+strings.Join(ports, ","))
	}
	v := firewallView{Description: fw.GetDescription(), SourceRanges: sortedOrNil(fw.GetSourceRanges()), TargetTags: sortedOrNil(fw.GetTargetTags()), Allowed: allowed}
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
