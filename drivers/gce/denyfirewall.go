package gce

import (
	"context"
	"encoding/json"
	"sync"

	"cloud.google.com/go/compute/apiv1/computepb"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/loadbalancers"
)

// cloud-provider-gcp's opt-in L4 deny firewall (its flags
// --enable-l4-deny-firewall and --enable-l4-deny-firewall-rollback-cleanup;
// gce_loadbalancer_external.go ensureDenyNodeFirewall): an external load
// balancer gets a second rule, k8s-fw-<lb>-deny, that denies everything
// from anywhere to its address at priority 1000, and its allow rules (the
// traffic rule and its health check's, the nodes' shared one too) move to
// 999. GCE applies the lowest number first and a deny wins a tie, so an
// allow rule written back at 1000 while the deny rule is there drops the
// load balancer's traffic.
//
// drivers.gce.l4DenyFirewall says what upstream's flags said. Left empty,
// polyccm looks at each Service's deny rule instead: a live load balancer
// is taken over as it is (the rule kept, its allow rules above it), so a
// switch that forgets the setting changes nobody's traffic. Deleting a
// Service deletes its deny rule whatever the setting, as upstream does
// whenever the feature is or was on (the rollback cleanup it requires).

// The values of drivers.gce.l4DenyFirewall.
const (
	// DenyFirewallKeep (empty): a Service keeps what it has.
	DenyFirewallKeep = ""
	// DenyFirewallEnabled: every external load balancer has the deny rule
	// (upstream's --enable-l4-deny-firewall).
	DenyFirewallEnabled = "enabled"
	// DenyFirewallCleanup: none has (upstream's rollback cleanup without
	// --enable-l4-deny-firewall): the deny rules are deleted.
	DenyFirewallCleanup = "cleanup"
)

// Firewall priorities, upstream's firewallPriorityDefault,
// firewallPriorityDeny and firewallPriorityAllow.
const (
	priorityDefault int32 = 1000 // the API's default too
	priorityDeny          = priorityDefault
	priorityAllow         = priorityDefault - 1
)

// denyNoted: that polyccm keeps a deny rule it found, and how to choose,
// is logged once a process.
var denyNoted sync.Once

// denies reports whether the Service's load balancer has the deny rule
// once this sync is done.
func (l *loadBalancers) denies(spec *lbSpec, obs *observed) bool {
	if spec.internal {
		return false // upstream's deny rule is the external load balancers'
	}
	switch l.c.cfg.L4DenyFirewall {
	case DenyFirewallEnabled:
		return true
	case DenyFirewallCleanup:
		return false
	}
	return obs.deny != nil
}

// allowPriority is the priority of the Service's allow rule name, cur as
// GCE has it (nil: none yet), with or without the deny rule.
func (l *loadBalancers) allowPriority(spec *lbSpec, deny bool, name string, cur *computepb.Firewall) int32 {
	switch {
	case spec.internal:
		// Upstream makes an internal load balancer's rules without a
		// priority (the API's 1000) and patches them without one:
		// whatever priority a rule has stays.
		if cur != nil {
			return cur.GetPriority()
		}
		return priorityDefault
	case deny:
		return priorityAllow
	case cur != nil && spec.hcShared && name == spec.hcFirewallName() && l.c.cfg.L4DenyFirewall == DenyFirewallKeep:
		// The nodes' health-check rule serves every Service on the shared
		// check; another's deny rule may need it above 1000, so a Service
		// without one leaves its priority as it is.
		return cur.GetPriority()
	}
	return priorityDefault
}

// denyFirewallFor is the deny rule of the Service's address ip, as
// upstream's ensureDenyNodeFirewall writes it.
func denyFirewallFor(env *environment, spec *lbSpec, ip string) *computepb.Firewall {
	return &computepb.Firewall{
		Name: ptr(denyFirewallName(spec.base)), Description: ptr(firewallDescription(spec.service, ip)), Network: ptr(networkURL(env)),
		Direction: ptr("INGRESS"), Priority: ptr(priorityDeny), TargetTags: spec.targetTags,
		SourceRanges: []string{"0.0.0.0/0"}, DestinationRanges: []string{ip},
		Denied: []*computepb.Denied{{IPProtocol: ptr("all")}},
	}
}

// observeDeny reads the Service's deny rule, which must be the Service's
// by the ownership rule (its name carries the Service's UID; a
// description naming another Service refuses the sync): it is claimed,
// and core judges the claim before anything is planned.
func (l *loadBalancers) observeDeny(ctx context.Context, cl *clients, env *environment, spec *lbSpec, obs *observed, claims *[]loadbalancers.Claim) error {
	fw, err := l.getFirewall(ctx, cl, env, denyFirewallName(spec.base))
	if err != nil || fw == nil {
		return err
	}
	*claims = append(*claims, loadbalancers.ResourceClaim(denyResource(spec, fw)))
	obs.deny = fw
	return nil
}

// noteDeny logs, once a process, that polyccm keeps a deny rule it found
// (the claim on it passed), and how to choose.
func (l *loadBalancers) noteDeny(spec *lbSpec, fw *computepb.Firewall) {
	if l.c.cfg.L4DenyFirewall == DenyFirewallKeep && !spec.internal {
		denyNoted.Do(func() {
			klog.InfoS("A Service has cloud-provider-gcp's L4 deny firewall rule: kept, with its allow rules at priority 999; set drivers.gce.l4DenyFirewall to enabled (upstream's --enable-l4-deny-firewall) for every external load balancer to get one, or to cleanup to delete them",
				"service", spec.service, "firewall", fw.GetName())
		})
	}
}

// denyResource is what the ownership rule knows of a deny rule: named for
// the Service's UID, described with a Service's name.
func denyResource(spec *lbSpec, fw *computepb.Firewall) loadbalancers.Resource {
	var d map[string]string
	_ = json.Unmarshal([]byte(fw.GetDescription()), &d) // another tool's description names no Service
	return loadbalancers.Resource{Kind: kindFirewall, ID: fw.GetName(), Name: fw.GetName(), Addresses: fw.GetDestinationRanges(),
		Service: d["kubernetes.io/service-name"], UIDMark: loadbalancers.UIDMark(spec.base)}
}

// planDeny makes or updates the deny rule: after the allow rules, which
// it would otherwise override, and before the forwarding rule, so the
// load balancer never serves without it.
func (l *loadBalancers) planDeny(p *lbPlan, cl *clients, env *environment, spec *lbSpec, obs *observed) {
	want, cur := denyFirewallFor(env, spec, ipOr(p.ip)), obs.deny
	write := func(update bool) func(context.Context) error {
		return func(ctx context.Context) error {
			w := denyFirewallFor(env, spec, p.ip)
			if p.allowLeft {
				// An allow rule may still be below it: made now, the deny
				// rule would drop the traffic. The admin makes it too,
				// after the allow rules.
				cmd := gcloudFirewallCreate(env, w)
				if update {
					cmd = gcloudFirewallUpdate(env, w)
				}
				l.askAdmin(spec, cmd)
				return nil
			}
			var err error
			if update {
				_, err = l.updateFirewall(ctx, cl, env, spec, w)
			} else {
				_, err = l.insertFirewall(ctx, cl, env, spec, w)
			}
			return err
		}
	}
	createOrUpdate(p, kindFirewall, want.GetName(), cur != nil,
		func() []loadbalancers.Field {
			return loadbalancers.Diff(viewFirewall(cur, false), viewFirewall(want, false))
		},
		write(false), write(true))
}

// planDropDeny deletes the deny rule the load balancer no longer has.
func (l *loadBalancers) planDropDeny(p *lbPlan, cl *clients, env *environment, spec *lbSpec) {
	d := l.deleter(cl, env, spec)
	name := denyFirewallName(spec.base)
	p.Add(loadbalancers.Change{Action: loadbalancers.Delete, Kind: kindFirewall, Name: name,
		Apply: func(ctx context.Context) error { return d.firewall(ctx, name) }})
}

// denyDeletion is the deletion step of the Service's deny rule when it
// goes. It is read first, as upstream does (no delete of what is not
// there: no step), and one whose description names another Service
// stays, with core's Warning event; the deletion goes on without it.
func (l *loadBalancers) denyDeletion(ctx context.Context, cl *clients, env *environment, spec *lbSpec) (*loadbalancers.DeleteStep, error) {
	name := denyFirewallName(spec.base)
	fw, err := l.getFirewall(ctx, cl, env, name)
	if err != nil || fw == nil {
		return nil, err
	}
	r := denyResource(spec, fw)
	d := l.deleter(cl, env, spec)
	return &loadbalancers.DeleteStep{Guard: &r, Run: func(ctx context.Context) error { return d.firewall(ctx, name) }}, nil
}
