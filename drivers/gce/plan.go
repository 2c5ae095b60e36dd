package gce

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	computev1 "google.golang.org/api/compute/v1"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// What a plan's changes are to, as the plan names them.
const (
	kindRule           = "forwarding rule"
	kindPool           = "target pool"
	kindHTTPHealth     = "HTTP health check"
	kindHealth         = "health check"
	kindGroup          = "instance group"
	kindBackendService = "backend service"
	kindFirewall       = "firewall rule"
)

// lbPlan is one sync's changes, and the Service's address once they are
// applied: the rule's as observed, or the one a create in the plan got.
type lbPlan struct {
	loadbalancers.Plan
	ip string
}

// plan computes the changes that make what obs found into what spec asks
// for, over the nodes' instances by zone. It makes no cloud call: the
// changes' Apply closures do, in the plan's order, which is the order GCE
// needs (what a resource refers to exists before it; a rule goes before
// what it uses). The URLs resources refer to each other by are derived
// from their names, so nothing waits for a create's answer.
func (l *loadBalancers) plan(cl *clients, env *environment, spec *lbSpec, byZone map[string][]string, obs *observed) *lbPlan {
	p := &lbPlan{}
	cur := obs.rule
	if obs.switched {
		l.planOldScheme(p, cl, env, spec, obs)
		cur = nil
	}
	if spec.internal {
		l.planInternal(p, cl, env, spec, byZone, obs)
	} else {
		l.planExternal(p, cl, env, spec, byZone, obs)
	}
	l.planFirewalls(p, cl, env, spec, obs)
	l.planRule(p, cl, env, spec, cur)
	return p
}

// planOldScheme deletes what only the other scheme's load balancer of the
// Service uses, so that a Service whose type changed leaves nothing
// behind. The old rule goes first, as GCE refuses to delete a target pool
// or backend service a rule uses. The firewall rules are the same for both
// schemes and stay.
func (l *loadBalancers) planOldScheme(p *lbPlan, cl *clients, env *environment, spec *lbSpec, obs *observed) {
	d := l.deleter(cl, env, spec.base)
	del := func(kind, name string, apply func(context.Context) error) {
		p.Add(loadbalancers.Change{Action: loadbalancers.Delete, Kind: kind, Name: name, Apply: apply})
	}
	if fr := obs.rule; fr != nil {
		from := fr.GetLoadBalancingScheme()
		p.Add(loadbalancers.Change{Action: loadbalancers.Delete, Kind: kindRule, Name: spec.base,
			Fields: []loadbalancers.Field{{Name: "loadBalancingScheme", From: from, To: spec.scheme()}},
			Apply: func(ctx context.Context) error {
				klog.InfoS("Load balancer scheme changed: deleting the old load balancer", "service", spec.service, "from", from, "to", spec.scheme())
				return d.forwardingRule(ctx)
			}})
	}
	if spec.internal {
		if obs.old.pool {
			del(kindPool, spec.base, d.targetPool)
		}
		if obs.old.httpHC {
			del(kindHTTPHealth, spec.base+"-hc", d.httpHealthCheck)
		}
		return
	}
	if obs.old.bs {
		del(kindBackendService, spec.base, d.backendService)
	}
	if obs.old.regionHC {
		del(kindHealth, spec.base+"-hc", d.regionHealthCheck)
	}
	for _, zone := range obs.old.groupZones {
		del(kindGroup, zone+"/"+l.c.instanceGroupName(), func(ctx context.Context) error { return d.instanceGroup(ctx, zone) })
	}
}

func (l *loadBalancers) planExternal(p *lbPlan, cl *clients, env *environment, spec *lbSpec, byZone map[string][]string, obs *observed) {
	hc := httpHealthCheck(spec)
	if cur := obs.httpHC; cur == nil {
		p.Add(loadbalancers.Change{Action: loadbalancers.Create, Kind: kindHTTPHealth, Name: hc.Name,
			Apply: func(ctx context.Context) error { return l.insertHTTPHealthCheck(ctx, cl, env, hc) }})
	} else {
		p.Add(loadbalancers.Change{Action: loadbalancers.Update, Kind: kindHTTPHealth, Name: hc.Name,
			Fields: loadbalancers.Diff(&computev1.HttpHealthCheck{Port: cur.Port, RequestPath: cur.RequestPath}, &computev1.HttpHealthCheck{Port: hc.Port, RequestPath: hc.RequestPath}),
			Apply:  func(ctx context.Context) error { return l.updateHTTPHealthCheck(ctx, cl, env, hc) }})
	}

	want := poolMembers(env, byZone)
	if obs.pool == nil {
		p.Add(loadbalancers.Change{Action: loadbalancers.Create, Kind: kindPool, Name: spec.base,
			Fields: memberFields(slices.Sorted(maps.Keys(want)), nil),
			Apply:  func(ctx context.Context) error { return l.createTargetPool(ctx, cl, env, spec, want) }})
		return
	}
	add, remove := loadbalancers.Delta(want, urlSet(obs.pool.GetInstances()), strings.Compare)
	fields := memberFields(add, remove)
	hcURL := httpHealthCheckURL(env, spec)
	attach := !hasURL(obs.pool.GetHealthChecks(), hcURL)
	if attach {
		have := shortURLs(obs.pool.GetHealthChecks())
		fields = append(fields, loadbalancers.Field{Name: "healthChecks", From: listOrNone(have), To: listOrNone(append(have, hcURL))})
	}
	p.Add(loadbalancers.Change{Action: loadbalancers.Update, Kind: kindPool, Name: spec.base, Fields: fields,
		Apply: func(ctx context.Context) error { return l.updateTargetPool(ctx, cl, env, spec, add, remove, attach) }})
}

func (l *loadBalancers) planInternal(p *lbPlan, cl *clients, env *environment, spec *lbSpec, byZone map[string][]string, obs *observed) {
	hc := regionHealthCheck(spec)
	if cur := obs.regionHC; cur == nil {
		p.Add(loadbalancers.Change{Action: loadbalancers.Create, Kind: kindHealth, Name: hc.GetName(),
			Apply: func(ctx context.Context) error { return l.insertRegionHealthCheck(ctx, cl, env, hc) }})
	} else {
		have := &computepb.HTTPHealthCheck{Port: ptr(cur.GetHttpHealthCheck().GetPort()), RequestPath: ptr(cur.GetHttpHealthCheck().GetRequestPath())}
		p.Add(loadbalancers.Change{Action: loadbalancers.Update, Kind: kindHealth, Name: hc.GetName(),
			Fields: loadbalancers.Diff(have, hc.HttpHealthCheck),
			Apply:  func(ctx context.Context) error { return l.updateRegionHealthCheck(ctx, cl, env, hc) }})
	}

	// The cluster's instance groups are shared by its internal load
	// balancers, not part of this one: a node sync, which makes nothing
	// else, makes the group of a zone that gained its first node.
	name := l.c.instanceGroupName()
	zones := slices.Sorted(maps.Keys(byZone))
	for _, zone := range zones {
		want := map[string]bool{}
		for _, n := range byZone[zone] {
			want[instanceURL(env.project, zone, n)] = true
		}
		g := obs.groups[zone]
		if g == nil || !g.exists {
			p.Add(loadbalancers.Change{Action: loadbalancers.Create, Kind: kindGroup, Name: zone + "/" + name,
				Fields: memberFields(slices.Sorted(maps.Keys(want)), nil),
				Apply: func(ctx context.Context) error {
					return l.createInstanceGroup(cloudapi.WithCreates(ctx), cl, env, zone, want)
				}})
			continue
		}
		add, remove := loadbalancers.Delta(want, g.members, strings.Compare)
		p.Add(loadbalancers.Change{Action: loadbalancers.Update, Kind: kindGroup, Name: zone + "/" + name, Fields: memberFields(add, remove),
			Apply: func(ctx context.Context) error {
				return l.updateInstanceGroup(cloudapi.WithCreates(ctx), cl, env, zone, add, remove)
			}})
	}

	bs := backendService(env, spec, name, zones)
	if cur := obs.bs; cur == nil {
		p.Add(loadbalancers.Change{Action: loadbalancers.Create, Kind: kindBackendService, Name: spec.base,
			Apply: func(ctx context.Context) error { return l.insertBackendService(ctx, cl, env, bs) }})
	} else {
		p.Add(loadbalancers.Change{Action: loadbalancers.Update, Kind: kindBackendService, Name: spec.base,
			Fields: loadbalancers.Diff(viewBackendService(cur), viewBackendService(bs)),
			Apply:  func(ctx context.Context) error { return l.updateBackendService(ctx, cl, env, bs, cur.Fingerprint) }})
	}
}

// backendServiceView is what polyccm sets of a backend service, with URLs
// short and groups in order.
type backendServiceView struct {
	Protocol     string   `json:"protocol"`
	HealthChecks []string `json:"healthChecks"`
	Backends     []string `json:"backends"`
}

func viewBackendService(bs *computepb.BackendService) backendServiceView {
	var groups []string
	for _, b := range bs.GetBackends() {
		groups = append(groups, b.GetGroup())
	}
	return backendServiceView{Protocol: bs.GetProtocol(), HealthChecks: shortURLs(bs.GetHealthChecks()), Backends: shortURLs(groups)}
}

func (l *loadBalancers) planFirewalls(p *lbPlan, cl *clients, env *environment, spec *lbSpec, obs *observed) {
	for _, want := range firewalls(env, spec) {
		if cur := obs.firewalls[want.GetName()]; cur == nil {
			p.Add(loadbalancers.Change{Action: loadbalancers.Create, Kind: kindFirewall, Name: want.GetName(),
				Apply: func(ctx context.Context) error { return l.insertFirewall(ctx, cl, env, want) }})
		} else {
			p.Add(loadbalancers.Change{Action: loadbalancers.Update, Kind: kindFirewall, Name: want.GetName(),
				Fields: loadbalancers.Diff(viewFirewall(cur), viewFirewall(want)),
				Apply:  func(ctx context.Context) error { return l.updateFirewall(ctx, cl, env, want) }})
		}
	}
}

// firewallView is what polyccm sets of a firewall rule, in order; allowed
// as "protocol:ports".
type firewallView struct {
	SourceRanges []string `json:"sourceRanges"`
	TargetTags   []string `json:"targetTags"`
	Allowed      []string `json:"allowed"`
}

func viewFirewall(fw *computepb.Firewall) firewallView {
	var allowed []string
	for _, a := range fw.GetAllowed() {
		ports := slices.Sorted(slices.Values(a.GetPorts()))
		allowed = append(allowed, strings.ToLower(a.GetIPProtocol())+":"+strings.Join(ports, ","))
	}
	return firewallView{SourceRanges: sortedOrNil(fw.GetSourceRanges()), TargetTags: sortedOrNil(fw.GetTargetTags()), Allowed: allowed}
}

// planRule creates the rule, or replaces it (a delete and a create) when
// anything differs: GCE changes a forwarding rule's fields almost never in
// place. cur is the rule that stays through the plan, if any.
func (l *loadBalancers) planRule(p *lbPlan, cl *clients, env *environment, spec *lbSpec, cur *computepb.ForwardingRule) {
	want := wantRule(env, spec)
	var fields []loadbalancers.Field
	if cur != nil {
		if fields = ruleFields(cur, want); len(fields) == 0 {
			p.ip = cur.GetIPAddress()
			return
		}
		d := l.deleter(cl, env, spec.base)
		p.Add(loadbalancers.Change{Action: loadbalancers.Delete, Kind: kindRule, Name: spec.base,
			Apply: func(ctx context.Context) error {
				klog.InfoS("Recreating forwarding rule", "service", spec.service, "name", spec.base)
				return d.forwardingRule(ctx)
			}})
	}
	p.Add(loadbalancers.Change{Action: loadbalancers.Create, Kind: kindRule, Name: spec.base, Fields: fields,
		Apply: func(ctx context.Context) error {
			ip, err := l.createForwardingRule(ctx, cl, env, spec, want)
			p.ip = ip
			return err
		}})
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
