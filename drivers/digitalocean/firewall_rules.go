package digitalocean

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/digitalocean/godo"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The public-access firewall's rules: the ones the Services want, the ones
// polyccm owns, and the plan that turns the firewall as it is into the
// firewall polyccm keeps.
//
// Ownership: polyccm owns the inbound rules of exactly the shape the
// DigitalOcean CCM writes: action allow, protocol tcp or udp, one port,
// and sources of exactly {addresses: [0.0.0.0/0, ::/0]} or exactly
// {load_balancer_uids: [one ID]}. It adds the ones the Services want and
// removes the others of that shape. Every other inbound rule and every
// outbound rule is the operator's and is kept as it is; the DigitalOcean
// CCM's allow-all outbound rules are added when missing, never removed.
// The DigitalOcean CCM rebuilds the whole firewall instead, dropping
// whatever an operator added.

// AnnFirewallManaged on a NodePort Service, "false", keeps its node ports
// out of the firewall (the DigitalOcean CCM's key and meaning; absent or
// any other value means managed).
const AnnFirewallManaged = "kubernetes.digitalocean.com/firewall-managed"

// maxFirewallRules is DigitalOcean's limit on a firewall's inbound and
// outbound rules together.
const maxFirewallRules = 50

var worldAddrs = []string{"0.0.0.0/0", "::/0"}

// allowAllOutbound are the DigitalOcean CCM's outbound rules: the nodes
// may reach anything.
func allowAllOutbound() []godo.OutboundRule {
	var out []godo.OutboundRule
	for _, p := range []string{"tcp", "udp", "icmp"} {
		r := godo.OutboundRule{Protocol: p, Destinations: &godo.Destinations{Addresses: slices.Clone(worldAddrs)}}
		if p != "icmp" {
			r.PortRange = "all"
		}
		out = append(out, r)
	}
	return out
}

// wantedRule is an inbound rule the Services want, with the Services it
// is for (for events).
type wantedRule struct {
	rule     godo.InboundRule
	services []*v1.Service
}

// badManaged is a Service whose firewall-managed value is not a bool.
type badManaged struct {
	svc   *v1.Service
	value string
}

// desiredInbound computes the rules the Services want, by ruleKey, as the
// DigitalOcean CCM does: each node port of a managed NodePort Service, and
// for each EXTERNAL REGIONAL_NETWORK load balancer its health check port
// (from the load balancer once its ID is recorded) and its Service ports,
// from anywhere. An invalid firewall-managed value counts as managed.
func desiredInbound(svcs []*v1.Service, defType string) (map[string]*wantedRule, []badManaged) {
	want := map[string]*wantedRule{}
	var bad []badManaged
	add := func(svc *v1.Service, r godo.InboundRule) {
		k := inboundKey(r)
		w := want[k]
		if w == nil {
			w = &wantedRule{rule: r}
			want[k] = w
		}
		if !slices.Contains(w.services, svc) {
			w.services = append(w.services, svc)
		}
	}
	for _, svc := range svcs {
		switch svc.Spec.Type {
		case v1.ServiceTypeNodePort:
			if raw, ok := svc.Annotations[AnnFirewallManaged]; ok {
				managed, err := strconv.ParseBool(raw)
				if err != nil {
					bad = append(bad, badManaged{svc: svc, value: raw})
				} else if !managed {
					continue
				}
			}
			for _, p := range svc.Spec.Ports {
				if proto := ruleProtocol(p.Protocol); proto != "" && p.NodePort != 0 {
					add(svc, worldRule(proto, int(p.NodePort)))
				}
			}
		case v1.ServiceTypeLoadBalancer:
			if !passesToNodes(svc, defType) {
				continue
			}
			hc := worldRule("tcp", firewallHealthPort(svc))
			if id := svc.Annotations[AnnLoadBalancerID]; id != "" {
				hc.Sources = &godo.Sources{LoadBalancerUIDs: []string{id}}
			}
			add(svc, hc)
			for _, p := range svc.Spec.Ports {
				if proto := ruleProtocol(p.Protocol); proto != "" && p.Port != 0 {
					add(svc, worldRule(proto, int(p.Port)))
				}
			}
		}
	}
	return want, bad
}

// firewallHealthPort is the port a REGIONAL_NETWORK load balancer checks,
// as the DigitalOcean CCM opens it: the healthCheckNodePort for
// externalTrafficPolicy Local, else kube-proxy's.
func firewallHealthPort(svc *v1.Service) int {
	if svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal && svc.Spec.HealthCheckNodePort != 0 {
		return int(svc.Spec.HealthCheckNodePort)
	}
	return kubeProxyHealthPort
}

func ruleProtocol(p v1.Protocol) string {
	switch p {
	case v1.ProtocolTCP:
		return "tcp"
	case v1.ProtocolUDP:
		return "udp"
	}
	return "" // SCTP: Cloud Firewalls have no such rule
}

func worldRule(proto string, port int) godo.InboundRule {
	return godo.InboundRule{Protocol: proto, PortRange: strconv.Itoa(port), Sources: &godo.Sources{Addresses: slices.Clone(worldAddrs)}}
}

// ownedShape reports whether r has the shape of a rule polyccm writes (see
// the ownership rule above).
func ownedShape(r godo.InboundRule) bool {
	if cmp.Or(string(r.Action), "allow") != "allow" || (r.Protocol != "tcp" && r.Protocol != "udp") || r.Sources == nil {
		return false
	}
	if n, err := strconv.Atoi(r.PortRange); err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != r.PortRange {
		return false
	}
	s := r.Sources
	if len(s.Tags) > 0 || len(s.DropletIDs) > 0 || len(s.KubernetesIDs) > 0 {
		return false
	}
	switch {
	case len(s.LoadBalancerUIDs) == 0:
		return len(s.Addresses) == 2 && slices.Contains(s.Addresses, worldAddrs[0]) && slices.Contains(s.Addresses, worldAddrs[1])
	case len(s.Addresses) == 0:
		return len(s.LoadBalancerUIDs) == 1 && s.LoadBalancerUIDs[0] != ""
	}
	return false
}

// inboundKey and outboundKey identify rules for comparison: the API
// reports "all" ports as "0" and icmp ports as "0", an absent action as
// allow, and the order within a target list means nothing.
func inboundKey(r godo.InboundRule) string {
	s := r.Sources
	if s == nil {
		s = &godo.Sources{}
	}
	return ruleKey(r.Protocol, r.PortRange, string(r.Action), s.Addresses, s.Tags, s.DropletIDs, s.LoadBalancerUIDs, s.KubernetesIDs)
}

func outboundKey(r godo.OutboundRule) string {
	d := r.Destinations
	if d == nil {
		d = &godo.Destinations{}
	}
	return ruleKey(r.Protocol, r.PortRange, string(r.Action), d.Addresses, d.Tags, d.DropletIDs, d.LoadBalancerUIDs, d.KubernetesIDs)
}

func ruleKey(proto, ports, action string, addrs, tags []string, droplets []int, lbs, k8s []string) string {
	proto = strings.ToLower(proto)
	if proto == "icmp" || ports == "" || ports == "all" {
		ports = "0"
	}
	set := func(v []string) string {
		v = slices.Clone(v)
		slices.Sort(v)
		return strings.Join(slices.Compact(v), ",")
	}
	ids := make([]string, len(droplets))
	for i, d := range droplets {
		ids[i] = strconv.Itoa(d)
	}
	return fmt.Sprintf("%s %s %s addresses=%s tags=%s droplets=%s lbs=%s k8s=%s",
		proto, ports, cmp.Or(action, "allow"), set(addrs), set(tags), set(ids), set(lbs), set(k8s))
}

// describeRule says a rule polyccm writes in an operator's words.
func describeRule(r godo.InboundRule) string {
	from := "anywhere (0.0.0.0/0, ::/0)"
	if s := r.Sources; s != nil && len(s.LoadBalancerUIDs) > 0 {
		from = "load balancer " + strings.Join(s.LoadBalancerUIDs, ", ")
	}
	return fmt.Sprintf("inbound %s %s from %s", r.Protocol, r.PortRange, from)
}

// fwPlan is what turns the firewall into the one polyccm keeps.
type fwPlan struct {
	req *godo.FirewallRequest
	// added are the wanted rules the firewall lacks; removed the rules of
	// polyccm's shape it has and no Service wants.
	added   []*wantedRule
	removed []godo.InboundRule
	// other changes: outbound rules added, name or tags put back.
	outAdded, renamed, retagged bool
	// removedTags are the firewall's tags that are not configured.
	removedTags []string
	// skipped are rules of the operator's that cannot be written back
	// (no sources or destinations left, e.g. after what they named went).
	skipped int
}

func (p *fwPlan) empty() bool {
	return len(p.added) == 0 && len(p.removed) == 0 && !p.outAdded && !p.renamed && !p.retagged
}

// planFirewall merges want into fw (nil: there is none yet).
func planFirewall(fw *godo.Firewall, name string, tags []string, want map[string]*wantedRule) *fwPlan {
	p := &fwPlan{req: &godo.FirewallRequest{Name: name, Tags: slices.Clone(tags)}}
	var have godo.Firewall
	if fw != nil {
		have = *fw
		p.renamed = fw.Name != name
		p.retagged = !sameSet(fw.Tags, tags)
		for _, t := range fw.Tags {
			if !slices.Contains(tags, t) && !slices.Contains(p.removedTags, t) {
				p.removedTags = append(p.removedTags, t)
			}
		}
		p.req.DropletIDs = slices.Clone(fw.DropletIDs) // the operator's, if any
	}
	present := map[string]bool{}
	for _, r := range have.InboundRules {
		k := inboundKey(r)
		switch {
		case present[k]:
			continue
		case ownedShape(r) && want[k] == nil:
			p.removed = append(p.removed, r)
			continue
		case r.Sources == nil || targetCount(r.Sources.Addresses, r.Sources.Tags, r.Sources.DropletIDs, r.Sources.LoadBalancerUIDs, r.Sources.KubernetesIDs) == 0:
			p.skipped++
			continue
		}
		present[k] = true
		p.req.InboundRules = append(p.req.InboundRules, writable(r))
	}
	for _, k := range sortedKeys(want) {
		if !present[k] {
			p.added = append(p.added, want[k])
			p.req.InboundRules = append(p.req.InboundRules, want[k].rule)
		}
	}
	seenOut := map[string]bool{}
	for _, r := range have.OutboundRules {
		k := outboundKey(r)
		if seenOut[k] {
			continue
		}
		if d := r.Destinations; d == nil || targetCount(d.Addresses, d.Tags, d.DropletIDs, d.LoadBalancerUIDs, d.KubernetesIDs) == 0 {
			p.skipped++
			continue
		}
		seenOut[k] = true
		p.req.OutboundRules = append(p.req.OutboundRules, writableOut(r))
	}
	for _, r := range allowAllOutbound() {
		if !seenOut[outboundKey(r)] {
			p.outAdded = true
			p.req.OutboundRules = append(p.req.OutboundRules, r)
		}
	}
	slices.SortStableFunc(p.req.InboundRules, func(a, b godo.InboundRule) int {
		return cmpRule(a.Protocol, a.PortRange, inboundKey(a), b.Protocol, b.PortRange, inboundKey(b))
	})
	slices.SortStableFunc(p.req.OutboundRules, func(a, b godo.OutboundRule) int {
		return cmpRule(a.Protocol, a.PortRange, outboundKey(a), b.Protocol, b.PortRange, outboundKey(b))
	})
	return p
}

// leftOut is a Service whose rules do not fit in the firewall, with the
// rules of its that are left out (others it shares with older Services
// may be in).
type leftOut struct {
	svc   *v1.Service
	rules []godo.InboundRule
}

// fitRules keeps of want what fits in DigitalOcean's limit beside what the
// firewall keeps anyway (the operator's inbound rules, the outbound
// rules): Service by Service, the oldest first (then by namespace/name),
// each Service's rules all or none. A Service whose rules do not fit is
// left out and younger ones that fit still come in. Oldest first keeps the
// choice stable: a new Service never pushes out one already served. It
// returns what fits, the Services left out, and how many rules the
// Services may have.
func fitRules(fw *godo.Firewall, name string, tags []string, want map[string]*wantedRule) (map[string]*wantedRule, []leftOut, int) {
	base := planFirewall(fw, name, tags, nil)
	budget := max(0, maxFirewallRules-len(base.req.InboundRules)-len(base.req.OutboundRules))
	if len(want) <= budget {
		return want, nil, budget
	}
	svcs := map[types.UID]*v1.Service{}
	rulesOf := map[types.UID][]string{}
	for _, key := range sortedKeys(want) {
		for _, s := range want[key].services {
			svcs[s.UID] = s
			rulesOf[s.UID] = append(rulesOf[s.UID], key)
		}
	}
	order := make([]*v1.Service, 0, len(svcs))
	for _, s := range svcs {
		order = append(order, s)
	}
	slices.SortFunc(order, func(a, b *v1.Service) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time),
			cmp.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name), cmp.Compare(a.UID, b.UID))
	})
	chosen := map[string]bool{}
	left := map[types.UID]bool{}
	var out []leftOut
	for _, s := range order {
		var extra []string
		for _, key := range rulesOf[s.UID] {
			if !chosen[key] {
				extra = append(extra, key)
			}
		}
		if len(chosen)+len(extra) <= budget {
			for _, key := range extra {
				chosen[key] = true
			}
			continue
		}
		left[s.UID] = true
		lo := leftOut{svc: s}
		for _, key := range extra {
			lo.rules = append(lo.rules, want[key].rule)
		}
		out = append(out, lo)
	}
	fit := make(map[string]*wantedRule, len(chosen))
	for key := range chosen {
		w := *want[key]
		w.services = slices.DeleteFunc(slices.Clone(w.services), func(s *v1.Service) bool { return left[s.UID] })
		fit[key] = &w
	}
	return fit, out, budget
}

// cmpRule orders rules by protocol, then port (numerically), then the rest.
func cmpRule(pa, ra, ka, pb, rb, kb string) int {
	port := func(r string) int {
		lo, _, _ := strings.Cut(r, "-")
		n, _ := strconv.Atoi(lo)
		return n
	}
	return cmp.Or(cmp.Compare(pa, pb), cmp.Compare(port(ra), port(rb)), cmp.Compare(ka, kb))
}

// writable spells a rule read from the API as a request takes it: the API
// reports all ports as "0" and sends "0" for icmp, which carries none.
func writable(r godo.InboundRule) godo.InboundRule {
	r.PortRange = writablePorts(r.Protocol, r.PortRange)
	return r
}

func writableOut(r godo.OutboundRule) godo.OutboundRule {
	r.PortRange = writablePorts(r.Protocol, r.PortRange)
	return r
}

func writablePorts(proto, ports string) string {
	switch {
	case proto == "icmp":
		return ""
	case ports == "0" || ports == "":
		return "all"
	}
	return ports
}

func targetCount(addrs, tags []string, droplets []int, lbs, k8s []string) int {
	return len(addrs) + len(tags) + len(droplets) + len(lbs) + len(k8s)
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
