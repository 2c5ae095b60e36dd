package digitalocean

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/digitalocean/godo"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/annotations"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// Which Services get rules in the public-access firewall, beyond what
// they ask for: only those polyccm serves (screen), and only as many as
// DigitalOcean's limit lets in (fitRules); each Service left out is told
// why, once.

const (
	// ReasonFirewallRulesNotOpened is the Warning event on a Service whose
	// ports the firewall does not open because polyccm does not serve it.
	ReasonFirewallRulesNotOpened = "FirewallRulesNotOpened"
	// ReasonFirewallRuleLimit is the Warning event on a Service whose
	// rules do not fit in the firewall's 50.
	ReasonFirewallRuleLimit = "FirewallRuleLimitReached"
	// ReasonFirewallRuleRemoved is the Warning event on the firewall's
	// Services when a sync removed a rule or tag polyccm had not put there.
	ReasonFirewallRuleRemoved = "FirewallRuleRemoved"
)

// lbIndex is one listing of the account's load balancers.
type lbIndex struct {
	byID   map[string]*godo.LoadBalancer
	byName map[string][]*godo.LoadBalancer
}

// screen leaves out of want the rules of the Services polyccm does not
// serve: a LoadBalancer Service whose load balancer the ownership rule
// refuses (another's, asked for by annotation), or that has none and
// invalid annotations (none will be made while they are). Health check
// rules from load balancers that are gone go too, since DigitalOcean
// refuses a firewall naming one. One listing of the load balancers, and
// none without a LoadBalancer Service among want's.
func (k *firewallKeeper) screen(ctx context.Context, want map[string]*wantedRule) (map[string]*wantedRule, error) {
	lbSvcs := map[types.UID]*v1.Service{}
	for _, w := range want {
		for _, s := range w.services {
			if s.Spec.Type == v1.ServiceTypeLoadBalancer {
				lbSvcs[s.UID] = s
			}
		}
	}
	if len(lbSvcs) == 0 {
		k.noteNotOpened(nil)
		return want, nil
	}
	idx := lbIndex{byID: map[string]*godo.LoadBalancer{}, byName: map[string][]*godo.LoadBalancer{}}
	err := pages(ctx, k.c, "load_balancers.list", k.c.client.LoadBalancers.List, func(page []godo.LoadBalancer, _ *godo.Response) bool {
		for i := range page {
			lb := &page[i]
			idx.byID[lb.ID] = lb
			idx.byName[lb.Name] = append(idx.byName[lb.Name], lb)
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("listing load balancers for the firewall's rules: %w", err)
	}
	order := make([]*v1.Service, 0, len(lbSvcs))
	for _, s := range lbSvcs {
		order = append(order, s)
	}
	slices.SortFunc(order, func(a, b *v1.Service) int { return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name) })
	out := map[types.UID]notOpened{}
	for _, s := range order {
		why, err := k.notServed(ctx, s, idx)
		if err != nil {
			return nil, err
		}
		if why != "" {
			out[s.UID] = notOpened{svc: s, why: why}
		}
	}
	k.noteNotOpened(out)

	kept := make(map[string]*wantedRule, len(want))
	for key, w := range want {
		if src := w.rule.Sources; src != nil && len(src.LoadBalancerUIDs) > 0 && idx.byID[src.LoadBalancerUIDs[0]] == nil {
			klog.InfoS("Not opening a health check port to a load balancer that does not exist", "firewall", k.name,
				"loadBalancer", src.LoadBalancerUIDs[0], "services", serviceRefs(w.services))
			continue
		}
		svcs := slices.DeleteFunc(slices.Clone(w.services), func(s *v1.Service) bool { _, no := out[s.UID]; return no })
		if len(svcs) == 0 {
			continue
		}
		nw := *w
		nw.services = svcs
		kept[key] = &nw
	}
	return kept, nil
}

// notServed says why polyccm does not serve svc, or "": the load balancer
// it asks for is found as the load balancer sync finds it (by the ID
// annotation, else by name) and judged by the same ownership rule, without
// its side effects. A Service whose load balancer is yet to be made is
// served: its ports open before the load balancer exists, as in the
// DigitalOcean CCM.
func (k *firewallKeeper) notServed(ctx context.Context, svc *v1.Service, idx lbIndex) (string, error) {
	var lb *godo.LoadBalancer
	via := ""
	if id := svc.Annotations[AnnLoadBalancerID]; id != "" {
		if lb = idx.byID[id]; lb != nil {
			via = "the annotation " + AnnLoadBalancerID
		}
	}
	if lb == nil {
		name := lbName(svc)
		switch m := idx.byName[name]; len(m) {
		case 0:
			if LBAnnotations.Parse(svc).Err() != nil {
				return "its load balancer annotations are invalid (see the events naming them), so polyccm makes no load balancer for it", nil
			}
			return "", nil
		case 1:
			lb = m[0]
			if name != loadbalancers.DefaultName(svc) {
				via = "the annotation " + AnnName
			}
		default:
			// Ambiguous: the load balancer sync says so; its rules stay.
			return "", nil
		}
	}
	owns, err := k.c.lbs.own.Owns(ctx, svc, resource(lb, via))
	if err != nil {
		return "", fmt.Errorf("checking whose load balancer %s (%s) is, which Service %s/%s asks for: %w", lb.Name, lb.ID, svc.Namespace, svc.Name, err)
	}
	if owns {
		return "", nil
	}
	return fmt.Sprintf("the load balancer it asks for, %s (%s), is not its own (see its %s event)", lb.Name, lb.ID, loadbalancers.ReasonNotOwned), nil
}

// notOpened is a Service screen left out, and why.
type notOpened struct {
	svc *v1.Service
	why string
}

// noteNotOpened says once per Service and reason that its ports are not
// opened, and forgets the Services served again.
func (k *firewallKeeper) noteNotOpened(now map[types.UID]notOpened) {
	for uid, n := range now {
		if k.notOpened[uid] == n.why {
			continue
		}
		k.notOpened[uid] = n.why
		klog.InfoS("Not opening the ports of a Service polyccm does not serve", "firewall", k.name, "service", klog.KObj(n.svc), "why", n.why)
		if k.rec != nil {
			k.rec.Event(n.svc, v1.EventTypeWarning, ReasonFirewallRulesNotOpened, annotations.Clip(fmt.Sprintf(
				"Firewall %s (drivers.digitalocean.firewall) does not open this Service's ports: %s. polyccm opens ports only for the Services it serves",
				k.name, n.why)))
		}
	}
	for uid := range k.notOpened {
		if _, ok := now[uid]; !ok {
			delete(k.notOpened, uid)
		}
	}
}

// noteLeftOut says once per Service and set of rules that its rules do
// not fit, and forgets the Services that fit again.
func (k *firewallKeeper) noteLeftOut(left []leftOut, budget int) {
	seen := map[types.UID]bool{}
	for _, lo := range left {
		seen[lo.svc.UID] = true
		rules := make([]string, len(lo.rules))
		for i, r := range lo.rules {
			rules[i] = shortRule(r)
		}
		sig := strings.Join(rules, "; ")
		if k.limited[lo.svc.UID] == sig {
			continue
		}
		k.limited[lo.svc.UID] = sig
		klog.InfoS("A Service's rules do not fit in the public-access firewall; left out", "firewall", k.name, "service", klog.KObj(lo.svc),
			"rules", rules, "limit", maxFirewallRules, "forServices", budget)
		if k.rec == nil {
			continue
		}
		hint := ""
		if lo.svc.Spec.Type == v1.ServiceTypeNodePort {
			hint = fmt.Sprintf(", or annotate this Service %s: \"false\" if it needs no public access", AnnFirewallManaged)
		}
		k.rec.Event(lo.svc, v1.EventTypeWarning, ReasonFirewallRuleLimit, annotations.Clip(fmt.Sprintf(
			"Firewall %s (drivers.digitalocean.firewall) does not open %d of this Service's rules: DigitalOcean allows %d rules in a firewall (inbound and outbound together), "+
				"the firewall's own rules leave %d for the Services, and older Services' rules take them (polyccm fills it oldest Service first). "+
				"Make room by removing rules of your own from the firewall or Services that no longer need public access%s. Left out: %s",
			k.name, len(rules), maxFirewallRules, budget, hint, strings.Join(rules, ", "))))
	}
	for uid := range k.limited {
		if !seen[uid] {
			delete(k.limited, uid)
		}
	}
}

// reportRemovals makes visible what an update took away that polyccm had
// not put there in this process's life: rules of its shape no Service it
// serves asks for (an operator's, or one left by a Service deleted while
// polyccm was not running) and tags not configured. Each is counted, and
// said in a Warning event on every Service whose rules the firewall holds.
func (k *firewallKeeper) reportRemovals(fw *godo.Firewall, p *fwPlan, want map[string]*wantedRule) {
	var gone []string
	for _, r := range p.removed {
		if k.kept[inboundKey(r)] {
			continue
		}
		gone = append(gone, "the rule "+describeRule(r))
		fwRemovals.WithLabelValues("inbound_rule").Inc()
	}
	for _, t := range p.removedTags {
		gone = append(gone, "the tag "+t)
		fwRemovals.WithLabelValues("tag").Inc()
	}
	if len(gone) == 0 {
		return
	}
	svcs := servicesOf(want)
	klog.InfoS("Removed from the public-access firewall what no Service polyccm serves asks for", "firewall", k.name, "id", fw.ID,
		"removed", gone, "services", serviceRefs(svcs))
	if k.rec == nil {
		return
	}
	msg := annotations.Clip(fmt.Sprintf(
		"Removed from firewall %s (%s), whose rules this Service's ports use, what no Service polyccm serves asks for: %s. "+
			"polyccm keeps that firewall (drivers.digitalocean.firewall) as the DigitalOcean CCM does: it removes inbound rules of the shape it writes "+
			"(allow, tcp or udp, one port, from exactly 0.0.0.0/0 and ::/0 or from one load balancer) that no Service needs, and tags other than "+
			"drivers.digitalocean.firewall.tags. Keep rules and tags of your own in another firewall, or give such a rule other sources",
		k.name, fw.ID, strings.Join(gone, ", ")))
	for _, s := range svcs {
		k.rec.Event(s, v1.EventTypeWarning, ReasonFirewallRuleRemoved, msg)
	}
}

// shortRule is describeRule without "from anywhere", for lists.
func shortRule(r godo.InboundRule) string {
	if s := r.Sources; s != nil && len(s.LoadBalancerUIDs) > 0 {
		return fmt.Sprintf("%s %s from load balancer %s", r.Protocol, r.PortRange, strings.Join(s.LoadBalancerUIDs, ", "))
	}
	return r.Protocol + " " + r.PortRange
}

// servicesOf lists the Services want's rules are for, once each, by
// namespace/name.
func servicesOf(want map[string]*wantedRule) []*v1.Service {
	seen := map[types.UID]bool{}
	var out []*v1.Service
	for _, key := range sortedKeys(want) {
		for _, s := range want[key].services {
			if !seen[s.UID] {
				seen[s.UID] = true
				out = append(out, s)
			}
		}
	}
	slices.SortFunc(out, func(a, b *v1.Service) int { return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name) })
	return out
}
