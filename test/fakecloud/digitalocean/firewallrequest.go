package digitalocean

import (
	"cmp"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Firewall request bodies and the API's checks on them.

type firewallRequest struct {
	Name          string             `json:"name"`
	InboundRules  []wireInboundRule  `json:"inbound_rules"`
	OutboundRules []wireOutboundRule `json:"outbound_rules"`
	DropletIDs    []int              `json:"droplet_ids"`
	Tags          []string           `json:"tags"`
}

type firewallRulesRequest struct {
	InboundRules  []wireInboundRule  `json:"inbound_rules"`
	OutboundRules []wireOutboundRule `json:"outbound_rules"`
}

// Limits from DigitalOcean's documentation (Firewalls › Limits).
const (
	maxFirewallRules    = 50
	maxFirewallDroplets = 10
	maxFirewallTags     = 5
	maxRuleTargets      = 1000
	maxFirewallNameLen  = 255
)

var (
	// The reference's pattern for names.
	firewallNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9.-]+$`)
	// Tags: letters, digits, ':', '-' and '_', at most 255.
	fwTagRE           = regexp.MustCompile(`^[A-Za-z0-9:_-]{1,255}$`)
	firewallProtocols = []string{"tcp", "udp", "icmp"}
	firewallActions   = []string{"allow", "deny"}
)

// firewallFromRequestLocked checks a create or update body and returns the
// firewall it describes, or the message of a 422.
func (s *Server) firewallFromRequestLocked(req *firewallRequest) (CloudFirewall, string) {
	fw := CloudFirewall{Name: req.Name}
	switch {
	case fw.Name == "":
		return fw, "name is required"
	case len(fw.Name) > maxFirewallNameLen || !firewallNameRE.MatchString(fw.Name):
		return fw, "name must be 2 to 255 characters, start with a letter or digit and contain only letters, digits, '.' and '-'"
	}
	in, out, msg := s.fwRulesFromRequestLocked(req.InboundRules, req.OutboundRules)
	if msg != "" {
		return fw, msg
	}
	switch n := len(in) + len(out); {
	case n == 0:
		return fw, "at least one inbound or outbound rule is required"
	case n > maxFirewallRules:
		return fw, fmt.Sprintf("a firewall can have at most %d rules; this would make %d", maxFirewallRules, n)
	}
	fw.InboundRules, fw.OutboundRules = in, out
	if fw.DropletIDs, msg = s.checkFirewallDropletsLocked(req.DropletIDs); msg != "" {
		return fw, msg
	}
	if fw.Tags, msg = checkFirewallTags(req.Tags); msg != "" {
		return fw, msg
	}
	return fw, ""
}

func (s *Server) fwRulesFromRequestLocked(in []wireInboundRule, out []wireOutboundRule) (inbound, outbound []FirewallRule, msg string) {
	inbound, outbound = []FirewallRule{}, []FirewallRule{}
	for i, w := range in {
		r, msg := s.fwRuleLocked(fmt.Sprintf("inbound rule %d", i+1), "sources", w.Protocol, w.Ports, w.Action, w.Sources)
		if msg != "" {
			return nil, nil, msg
		}
		inbound = append(inbound, r)
	}
	for i, w := range out {
		r, msg := s.fwRuleLocked(fmt.Sprintf("outbound rule %d", i+1), "destinations", w.Protocol, w.Ports, w.Action, w.Destinations)
		if msg != "" {
			return nil, nil, msg
		}
		outbound = append(outbound, r)
	}
	return inbound, outbound, ""
}

// fwRuleLocked checks one rule: its protocol, its ports (required for tcp
// and udp: a port, a range or "all"; ignored for icmp) and its targets,
// which must name at least one thing, and only things that exist.
func (s *Server) fwRuleLocked(where, field, protocol, ports, action string, w *wireFirewallTarget) (FirewallRule, string) {
	r := FirewallRule{Protocol: protocol, Action: cmp.Or(action, "allow")}
	if !slices.Contains(firewallProtocols, protocol) {
		return r, where + ": " + oneOf("protocol", protocol, firewallProtocols)
	}
	if !slices.Contains(firewallActions, r.Action) {
		return r, where + ": " + oneOf("action", r.Action, firewallActions)
	}
	var ok bool
	if r.Ports, ok = firewallPorts(protocol, ports); !ok {
		return r, fmt.Sprintf("%s: ports %q is invalid, use a port (1-65535), a range like 8000-9000, or all", where, ports)
	}
	if w == nil {
		return r, fmt.Sprintf("%s: %s are required", where, field)
	}
	t := FirewallTargets{
		Addresses: slices.Clone(w.Addresses), Tags: slices.Clone(w.Tags), DropletIDs: slices.Clone(w.DropletIDs),
		LoadBalancerUIDs: slices.Clone(w.LoadBalancerUIDs), KubernetesIDs: slices.Clone(w.KubernetesIDs),
	}
	switch n := t.size(); {
	case n == 0:
		return r, fmt.Sprintf("%s: %s must include at least one of addresses, tags, droplet_ids, load_balancer_uids or kubernetes_ids", where, field)
	case n > maxRuleTargets:
		return r, fmt.Sprintf("%s: %s can have at most %d entries", where, field, maxRuleTargets)
	}
	for _, a := range t.Addresses {
		if _, err := netip.ParsePrefix(a); err != nil {
			if _, err := netip.ParseAddr(a); err != nil {
				return r, fmt.Sprintf("%s: address %q is not an IP address or CIDR", where, a)
			}
		}
	}
	for _, tag := range t.Tags {
		if !fwTagRE.MatchString(tag) {
			return r, fmt.Sprintf("%s: tag %q is invalid", where, tag)
		}
	}
	for _, id := range t.DropletIDs {
		if s.droplets[id] == nil {
			return r, fmt.Sprintf("%s: droplet %d not found", where, id)
		}
	}
	for _, id := range t.LoadBalancerUIDs {
		if s.lbs[id] == nil {
			return r, fmt.Sprintf("%s: load balancer %s not found", where, id)
		}
	}
	for _, id := range t.KubernetesIDs {
		if id == "" {
			return r, fmt.Sprintf("%s: kubernetes_ids cannot hold an empty ID", where)
		}
	}
	r.Targets = t
	return r, ""
}

// firewallPorts checks ports and spells them as the API reports them.
func firewallPorts(protocol, ports string) (string, bool) {
	if protocol == "icmp" {
		return "0", true
	}
	if ports == "all" || ports == "0" {
		return "0", true
	}
	port := func(s string) (int, bool) {
		n, err := strconv.Atoi(s)
		return n, err == nil && n >= 1 && n <= 65535
	}
	lo, hi, isRange := strings.Cut(ports, "-")
	a, ok := port(lo)
	if !ok {
		return "", false
	}
	if !isRange {
		return strconv.Itoa(a), true
	}
	b, ok := port(hi)
	if !ok || b < a {
		return "", false
	}
	return fmt.Sprintf("%d-%d", a, b), true
}

func (s *Server) checkFirewallDropletsLocked(ids []int) ([]int, string) {
	out := []int{}
	for _, id := range ids {
		if s.droplets[id] == nil {
			return nil, fmt.Sprintf("droplet %d not found", id)
		}
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	if len(out) > maxFirewallDroplets {
		return nil, fmt.Sprintf("a firewall can apply to at most %d droplets; tag them and use the tag", maxFirewallDroplets)
	}
	return out, ""
}

func checkFirewallTags(tags []string) ([]string, string) {
	out := []string{}
	for _, t := range tags {
		if !fwTagRE.MatchString(t) {
			return nil, fmt.Sprintf("tag %q is invalid", t)
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	if len(out) > maxFirewallTags {
		return nil, fmt.Sprintf("a firewall can have at most %d tags", maxFirewallTags)
	}
	return out, ""
}

// sameFirewallRule compares rules as the API does when removing them: the
// targets as sets.
func sameFirewallRule(a, b FirewallRule) bool {
	set := func(t FirewallTargets) FirewallTargets {
		t = t.clone()
		slices.Sort(t.Addresses)
		slices.Sort(t.Tags)
		slices.Sort(t.DropletIDs)
		slices.Sort(t.LoadBalancerUIDs)
		slices.Sort(t.KubernetesIDs)
		return t
	}
	x, y := set(a.Targets), set(b.Targets)
	return a.Protocol == b.Protocol && a.Ports == b.Ports && a.Action == b.Action &&
		slices.Equal(x.Addresses, y.Addresses) && slices.Equal(x.Tags, y.Tags) &&
		slices.Equal(x.DropletIDs, y.DropletIDs) && slices.Equal(x.LoadBalancerUIDs, y.LoadBalancerUIDs) &&
		slices.Equal(x.KubernetesIDs, y.KubernetesIDs)
}
