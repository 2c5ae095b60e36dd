package gce

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/annotations"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// IPv6 and dual-stack internal load balancers, as GKE makes them: the
// IPv6 forwarding rule is a second rule to the same backend service,
// named like the IPv4 one with "-ipv6", with its own firewall rules (a GCE
// firewall rule holds ranges of one family). GCE serves target pools over
// IPv4 only, so external load balancers of cloud-provider-gcp's kind stay
// IPv4.

const ipv6Suffix = "-ipv6"

// ipv6PrefixLength is the range GCE gives an IPv6 forwarding rule.
const ipv6PrefixLength = 96

// ipv6HealthCheckRanges are where Google's health checkers reach an IPv6
// internal load balancer's nodes from.
var ipv6HealthCheckRanges = []string{"2600:2d00:1:b029::/64"}

func ipv6Name(name string) string { return name + ipv6Suffix }

// families are the IP versions the load balancer serves, as
// spec.ipFamilies asks (none given: IPv4).
func families(svc *v1.Service, internal bool, a *annotations.Values) (v4, v6 bool) {
	fams := svc.Spec.IPFamilies
	if len(fams) == 0 {
		return true, false
	}
	v4, v6 = slices.Contains(fams, v1.IPv4Protocol), slices.Contains(fams, v1.IPv6Protocol)
	if v6 && !internal {
		a.Note("spec.ipFamilies", "an external load balancer of cloud-provider-gcp's kind is a target pool, which GCE serves over IPv4 only: this one serves IPv4 (IPv6 needs GKE's backend-service based load balancer, cloud.google.com/l4-rbs)")
		return true, false
	}
	return v4, v6
}

// sourceRanges splits the Service's client ranges by family; a family
// served with no range given is open to all. The ranges are
// spec.loadBalancerSourceRanges, else the comma-separated
// service.beta.kubernetes.io/load-balancer-source-ranges annotation, as
// cloud-provider-gcp reads them (servicehelpers.GetLoadBalancerSourceRanges).
// A Service that restricts its clients but lists none of a family it
// serves is refused: opening that family to all would not be what it
// asked for.
func sourceRanges(svc *v1.Service, s *lbSpec, a *annotations.Values) (v4, v6 []string) {
	key, ranges := loadbalancers.SourceRanges(svc)
	given := 0
	for _, r := range ranges {
		r = strings.TrimSpace(r)
		p, err := netip.ParsePrefix(r)
		if err != nil {
			a.Fail(key, "%s is not a CIDR", annotations.Quote(r))
			continue
		}
		given++
		if p.Addr().Is4() {
			v4 = append(v4, p.Masked().String())
		} else {
			v6 = append(v6, p.Masked().String())
		}
	}
	slices.Sort(v4)
	slices.Sort(v6)
	if given == 0 {
		return []string{"0.0.0.0/0"}, []string{"::/0"}
	}
	if s.v4 && len(v4) == 0 {
		a.Fail(key, "lists no IPv4 range, but the load balancer serves IPv4: add the IPv4 clients' ranges")
	}
	if s.v6 && len(v6) == 0 {
		a.Fail(key, "lists no IPv6 range, but the load balancer serves IPv6: add the IPv6 clients' ranges")
	}
	if !s.v6 && len(v6) > 0 {
		a.Note(key, "its IPv6 ranges are not used: this load balancer serves IPv4 only")
	}
	return v4, v6
}

// canonicalIP is an address as one string whichever way GCE wrote it: an
// IPv6 rule's address comes as a range with every group written out.
func canonicalIP(s string) string {
	s, _, _ = strings.Cut(s, "/")
	if a, err := netip.ParseAddr(s); err == nil {
		return a.String()
	}
	return s
}

// resolveStaticAddresses looks up the addresses AnnIPAddresses names: the
// IPv4 one becomes the rule's address in place of spec.loadBalancerIP, the
// IPv6 one the IPv6 rule's. A name the region lacks, or two of a family,
// is refused before anything changes: an *annotations.InvalidError,
// not yet recorded.
func (l *loadBalancers) resolveStaticAddresses(ctx context.Context, cl *clients, env *environment, svc *v1.Service, spec *lbSpec) error {
	var problems []annotations.Problem
	fail := func(format string, args ...any) {
		problems = append(problems, annotations.Problem{Key: AnnIPAddresses, Msg: fmt.Sprintf(format, args...)})
	}
	var ip4, ip6 string
	for _, name := range spec.staticNames {
		a, err := l.getAddress(ctx, cl, env, name)
		if err != nil {
			return err
		}
		switch {
		case a == nil:
			fail("no address %s is reserved in region %s: reserve it (gcloud compute addresses create %s --region %s) or remove it from the annotation", name, env.region, name, env.region)
		case a.GetIpVersion() == "IPV6":
			if ip6 != "" {
				fail("names two IPv6 addresses; name at most one")
			}
			ip6 = canonicalIP(a.GetAddress())
			if !spec.v6 {
				l.note(svc, "the IPv6 address %s is not used: this load balancer serves no IPv6", name)
			}
		default:
			if ip4 != "" {
				fail("names two IPv4 addresses; name at most one")
			}
			ip4 = a.GetAddress()
		}
	}
	if len(problems) > 0 {
		// Recorded by the caller (Plan, once the rules' claims passed).
		return &annotations.InvalidError{Service: spec.service, Problems: problems}
	}
	if ip4 != "" {
		if spec.ip != "" && spec.ip != ip4 {
			l.note(svc, "wins over spec.loadBalancerIP %s: the load balancer takes %s; consider removing spec.loadBalancerIP", spec.ip, ip4)
		}
		spec.ip = ip4
	}
	if spec.v6 {
		spec.ip6 = ip6
	}
	return nil
}

// note records a Normal event about AnnIPAddresses.
func (l *loadBalancers) note(svc *v1.Service, format string, args ...any) {
	if rec := l.c.deps.Recorder; rec != nil {
		rec.Event(svc, v1.EventTypeNormal, annotations.ReasonNotApplied, annotations.Clip(AnnIPAddresses+": "+fmt.Sprintf(format, args...)))
	}
}

// wantRule6 is the IPv6 rule: the IPv4 rule's twin, to the same backend
// service.
func wantRule6(env *environment, spec *lbSpec) *computepb.ForwardingRule {
	want := wantRule(env, spec)
	want.Name = ptr(ipv6Name(spec.base))
	want.IpVersion = ptr("IPV6")
	want.IPAddress = nil
	if spec.ip6 != "" {
		want.IPAddress = &spec.ip6
	}
	return want
}

// observeIPv6 reads the IPv6 rule's reservation and firewall rules, when
// the Service has or wants an IPv6 rule.
func (l *loadBalancers) observeIPv6(ctx context.Context, cl *clients, env *environment, spec *lbSpec, obs *observed) error {
	if !spec.v6 && obs.rule6 == nil {
		return nil
	}
	var err error
	if obs.addr6, err = l.getAddress(ctx, cl, env, ipv6Name(spec.base)); err != nil {
		return err
	}
	for _, name := range spec.firewallNames6() {
		fw, err := l.getFirewall(ctx, cl, env, name)
		if err != nil {
			return err
		}
		if fw != nil {
			obs.firewalls[name] = fw
		}
	}
	return nil
}

// firewallNames6 are the IPv6 rule's firewall rules: for clients, and for
// the health checkers.
func (s *lbSpec) firewallNames6() []string {
	return []string{ipv6Name(firewallName(s.base)), ipv6Name(s.hcFirewallName())}
}

// hcRanges are the health checkers' ranges of one family: the configured
// ones of that family, else Google's.
func hcRanges(env *environment, v6 bool) []string {
	var out []string
	for _, r := range env.hcRanges {
		if p, err := netip.ParsePrefix(r); err == nil && p.Addr().Is6() == v6 {
			out = append(out, r)
		}
	}
	switch {
	case len(out) > 0:
		return out
	case v6:
		return ipv6HealthCheckRanges
	}
	return healthCheckRanges
}

// destination is a firewall rule's destination for the load balancer's
// address: an IPv6 rule holds a range.
func destination(ip string, v6 bool) string {
	if v6 && ip != newAddress {
		return fmt.Sprintf("%s/%d", ip, ipv6PrefixLength)
	}
	return ip
}

// getRule6 reads the Service's IPv6 rule where one may be: when it wants
// one, has no IPv4 rule, or its status shows an IPv6 address (a family
// removed, a switch to external), so a load balancer that never served
// IPv6 costs no extra call.
func (l *loadBalancers) getRule6(ctx context.Context, cl *clients, env *environment, svc *v1.Service, spec *lbSpec, fr *computepb.ForwardingRule) (*computepb.ForwardingRule, error) {
	if !spec.v6 && fr != nil && !servedIPv6(svc) {
		return nil, nil
	}
	fr6, err := l.getForwardingRule(ctx, cl, env, ipv6Name(spec.base))
	if err != nil {
		return nil, err
	}
	if fr6 != nil && !strings.EqualFold(fr6.GetIpVersion(), "IPV6") {
		return nil, cloudapi.Invalid("forwarding rule %s is not an IPv6 rule: delete it, polyccm names the IPv6 rule of Service %s so", fr6.GetName(), spec.service)
	}
	return fr6, nil
}

// servedIPv6 reports whether the Service's status holds an IPv6 address.
func servedIPv6(svc *v1.Service) bool {
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if a, err := netip.ParseAddr(in.IP); err == nil && a.Is6() {
			return true
		}
	}
	return false
}

// ingress is the load balancer's status: its addresses in the order of
// the Service's families.
func ingress(svc *v1.Service, ip4, ip6 string) []v1.LoadBalancerIngress {
	var out []v1.LoadBalancerIngress
	for _, ip := range []string{ip4, ip6} {
		if ip != "" {
			out = append(out, v1.LoadBalancerIngress{IP: canonicalIP(ip)})
		}
	}
	if len(out) == 2 && len(svc.Spec.IPFamilies) > 0 && svc.Spec.IPFamilies[0] == v1.IPv6Protocol {
		out[0], out[1] = out[1], out[0]
	}
	return out
}
