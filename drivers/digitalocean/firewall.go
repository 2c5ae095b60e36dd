package digitalocean

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"github.com/digitalocean/godo"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/annotations"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/controllers/workers"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// The public-access firewall (drivers.digitalocean.firewall, the
// DigitalOcean CCM's PUBLIC_ACCESS_FIREWALL_NAME and _TAGS): one Cloud
// Firewall on the nodes' tags, kept open for the NodePort Services and the
// EXTERNAL REGIONAL_NETWORK load balancers (whose traffic and health checks
// reach the nodes directly) that polyccm serves. Which rules polyccm owns
// is in firewall_rules.go; which Services get them, in
// firewall_services.go. Any Service change, and a resync that re-reads the
// firewall, queue one key; a steady state makes no write.

const (
	// FirewallTaskName names the task in logs.
	FirewallTaskName = "digitalocean-public-access-firewall"
	// ReasonFirewallRuleRestored is the Warning event on a Service whose
	// rule was removed from the firewall by hand and put back.
	ReasonFirewallRuleRestored = "FirewallRuleRestored"
	// ReasonInvalidFirewallManaged is the Warning event on a Service whose
	// firewall-managed annotation is not a bool.
	ReasonInvalidFirewallManaged = "InvalidFirewallManagedAnnotation"

	firewallKey = "firewall"
	// A sync is bounded, so a hung call cannot stall the loop for good.
	firewallSyncTimeout = 2 * time.Minute
)

// fwTiming is how often the firewall is re-read and how failed syncs back
// off: every 5 minutes and from 1s to 5m, as in the DigitalOcean CCM.
type fwTiming struct {
	resync, retryBase, retryMax time.Duration
}

var defaultFWTiming = fwTiming{resync: 5 * time.Minute, retryBase: time.Second, retryMax: 5 * time.Minute}

// firewallTask keeps the public-access firewall; off while
// drivers.digitalocean.firewall.name is empty, as in the DigitalOcean CCM.
func (c *Cloud) firewallTask() (driver.Task, bool) { return c.firewallTaskWith(defaultFWTiming) }

func (c *Cloud) firewallTaskWith(t fwTiming) (driver.Task, bool) {
	if c.cfg.Firewall.Name == "" {
		return driver.Task{}, false
	}
	return driver.Task{
		Name: FirewallTaskName,
		Run:  func(ctx context.Context) { newFirewallKeeper(c, t).run(ctx) },
		Plan: func(ctx context.Context) error { return newFirewallKeeper(c, t).plan(ctx) },
	}, true
}

// firewallKeeper is one run of the task. Only its single worker touches
// the cached firewall and what it remembers.
type firewallKeeper struct {
	c      *Cloud
	name   string
	tags   []string
	timing fwTiming
	rec    record.EventRecorder
	queue  workqueue.TypedRateLimitingInterface[string]
	svcs   corelisters.ServiceLister

	// stale asks the next sync to re-read the firewall (the resync).
	stale atomic.Bool
	// fw is the firewall as last read or written; nil with known means
	// there is none.
	fw    *godo.Firewall
	known bool
	// kept are the wanted rules the firewall held after the last sync: one
	// missing later was removed by hand, and is restored with an event.
	kept map[string]bool
	// warned remembers the invalid firewall-managed values already said;
	// notOpened and limited, the Services already told their rules are
	// left out (firewall_services.go), and why.
	warned, notOpened, limited map[types.UID]string
	// wrote: the current sync wrote the firewall (metrics.go).
	wrote bool
}

func newFirewallKeeper(c *Cloud, t fwTiming) *firewallKeeper {
	registerFirewallRemovals()
	return &firewallKeeper{
		c: c, name: c.cfg.Firewall.Name, tags: c.cfg.Firewall.Tags, timing: t, rec: c.lbs.deps.Recorder,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](t.retryBase, t.retryMax),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "digitalocean_firewall"}),
		kept:   map[string]bool{},
		warned: map[types.UID]string{}, notOpened: map[types.UID]string{}, limited: map[types.UID]string{},
	}
}

func (k *firewallKeeper) run(ctx context.Context) {
	defer k.queue.ShutDown()
	inf := k.c.lbs.deps.Informers
	if inf == nil {
		klog.ErrorS(nil, "No Service informer; the public-access firewall is not kept", "firewall", k.name)
		return
	}
	svcInf := inf.Core().V1().Services()
	k.svcs = svcInf.Lister()
	reg, err := svcInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { k.queue.Add(firewallKey) },
		DeleteFunc: func(any) { k.queue.Add(firewallKey) },
		UpdateFunc: func(old, cur any) {
			// Status updates (the load balancer's address) change no rule.
			o, ok1 := old.(*v1.Service)
			n, ok2 := cur.(*v1.Service)
			if ok1 && ok2 && reflect.DeepEqual(o.Spec, n.Spec) && reflect.DeepEqual(o.Annotations, n.Annotations) {
				return
			}
			k.queue.Add(firewallKey)
		},
	})
	if err != nil {
		klog.ErrorS(err, "Cannot watch Services; the public-access firewall is not kept", "firewall", k.name)
		return
	}
	defer func() { _ = svcInf.Informer().RemoveEventHandler(reg) }()
	klog.InfoS("Keeping the public-access firewall", "firewall", k.name, "tags", k.tags)
	if !cache.WaitForNamedCacheSync(FirewallTaskName, ctx.Done(), reg.HasSynced) {
		return
	}
	k.queue.Add(firewallKey)
	go k.resync(ctx)
	workers.Run(ctx, k.queue, 1, func(ctx context.Context, _ string) bool {
		ctx, cancel := context.WithTimeout(ctx, firewallSyncTimeout)
		defer cancel()
		if err := k.syncCounted(ctx); err != nil {
			klog.ErrorS(err, "Could not bring the public-access firewall up to date; will retry", "firewall", k.name)
			return true
		}
		return false
	})
}

// resync re-reads the firewall every so often, to undo changes made by
// hand and to find it again if it was deleted.
func (k *firewallKeeper) resync(ctx context.Context) {
	t := time.NewTicker(k.timing.resync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			k.stale.Store(true)
			k.queue.Add(firewallKey)
		}
	}
}

// sync makes the firewall what the Services polyccm serves want, keeping
// the operator's rules, within DigitalOcean's limit. It writes only after
// reading the firewall afresh, since an update replaces the whole
// firewall; a steady state makes no call at all between resyncs. Which
// Services polyccm serves takes a listing of the load balancers, made
// only with a fresh read (before a write, and at each resync).
func (k *firewallKeeper) sync(ctx context.Context) error {
	all, err := k.svcs.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("listing Services: %w", err)
	}
	want, bad := desiredInbound(all, k.c.cfg.defaultType())
	k.warnInvalid(bad)

	fresh := false
	if resync := k.stale.Swap(false); resync || !k.known {
		if err := k.readCounted(ctx, resync); err != nil {
			k.stale.Store(true)
			return err
		}
		fresh = true
	}
	fit, left, budget := fitRules(k.fw, k.name, k.tags, want)
	p := planFirewall(k.fw, k.name, k.tags, fit)
	if !p.empty() || fresh {
		if !fresh {
			if err := k.read(ctx); err != nil {
				return err
			}
		}
		served, err := k.screen(ctx, want)
		if err != nil {
			return err
		}
		fit, left, budget = fitRules(k.fw, k.name, k.tags, served)
		p = planFirewall(k.fw, k.name, k.tags, fit)
		k.noteLeftOut(left, budget)
	}
	if p.empty() {
		k.kept = keysOf(fit)
		klog.V(4).InfoS("Public-access firewall is up to date", "firewall", k.name)
		return nil
	}
	if n := len(p.req.InboundRules) + len(p.req.OutboundRules); n > maxFirewallRules {
		return fmt.Errorf("firewall %s would need %d rules with no Service's among them (its inbound rules polyccm does not own, and the outbound rules); DigitalOcean allows %d: remove rules of your own from it",
			k.name, n, maxFirewallRules)
	}
	// Under polyccm plan's dry run the change is shown, not made.
	c := k.change(p)
	c.Apply = func(ctx context.Context) error { return k.apply(ctx, p, fit) }
	plan := loadbalancers.Plan{Changes: []loadbalancers.Change{c}}
	if err := plan.Apply(ctx); err != nil {
		return err
	}
	k.kept = keysOf(fit)
	return nil
}

// plan is one sync of a keeper of its own under polyccm plan: with a dry
// run in ctx it reads the firewall and the load balancers, and its plan's
// Apply records the change and stops (ErrPlanned) instead of writing.
func (k *firewallKeeper) plan(ctx context.Context) error {
	inf := k.c.lbs.deps.Informers
	if inf == nil {
		return fmt.Errorf("no Service informer to plan firewall %s with", k.name)
	}
	svcInf := inf.Core().V1().Services()
	k.svcs = svcInf.Lister()
	if !cache.WaitForCacheSync(ctx.Done(), svcInf.Informer().HasSynced) {
		return fmt.Errorf("listing Services to plan firewall %s: %w", k.name, ctx.Err())
	}
	return k.sync(ctx)
}

// change is p as the plan of a load balancer sync shows its changes, each
// rule and tag a field, named as the API names them.
func (k *firewallKeeper) change(p *fwPlan) loadbalancers.Change {
	c := loadbalancers.Change{Action: loadbalancers.Create, Kind: "firewall", Name: k.name}
	if k.fw != nil {
		c.Action, c.Name = loadbalancers.Update, k.fw.ID
		if k.fw.Name != "" {
			c.Name = k.fw.Name + " (" + k.fw.ID + ")"
		}
	}
	add := func(name, from, to string) {
		c.Fields = append(c.Fields, loadbalancers.Field{Name: name, From: from, To: to})
	}
	for _, r := range p.removed {
		from := describeRule(r)
		if !k.kept[inboundKey(r)] {
			from += " (no Service polyccm serves asks for it)"
		}
		add("inbound_rules", from, "(removed)")
	}
	for _, w := range p.added {
		add("inbound_rules", "(none)", describeRule(w.rule)+" for "+strings.Join(serviceRefs(w.services), ", "))
	}
	if p.outAdded {
		add("outbound_rules", "(missing)", "tcp, udp and icmp to anywhere")
	}
	if p.renamed {
		add("name", k.fw.Name, k.name)
	}
	if p.retagged {
		add("tags", "["+strings.Join(k.fw.Tags, " ")+"]", "["+strings.Join(k.tags, " ")+"]")
	}
	return c
}

// read finds the firewall: by the ID known, else by name.
func (k *firewallKeeper) read(ctx context.Context) error {
	if k.fw != nil {
		var fw *godo.Firewall
		err := k.c.api.Do(ctx, "firewalls.get", func(ctx context.Context) error {
			var err error
			fw, _, err = k.c.client.Firewalls.Get(ctx, k.fw.ID)
			return err
		})
		if err == nil {
			k.fw, k.known = fw, true
			return nil
		}
		if !cloudapi.IsNotFound(err) {
			return fmt.Errorf("reading firewall %s (%s): %w", k.name, k.fw.ID, err)
		}
		klog.InfoS("The public-access firewall is gone; looking for it by name", "firewall", k.name, "id", k.fw.ID)
	}
	var match []godo.Firewall
	err := pages(ctx, k.c, "firewalls.list", k.c.client.Firewalls.List, func(page []godo.Firewall, _ *godo.Response) bool {
		for _, fw := range page {
			if fw.Name == k.name {
				match = append(match, fw)
			}
		}
		return true
	})
	if err != nil {
		return fmt.Errorf("listing firewalls to find %s: %w", k.name, err)
	}
	switch len(match) {
	case 0:
		k.fw = nil
	case 1:
		k.fw = &match[0]
	default:
		ids := make([]string, len(match))
		for i, m := range match {
			ids[i] = m.ID
		}
		return fmt.Errorf("%d firewalls are named %s (%s); polyccm keeps one: delete or rename the others (drivers.digitalocean.firewall.name)",
			len(match), k.name, strings.Join(ids, ", "))
	}
	k.known = true
	return nil
}

// apply writes the plan: an update of the firewall known, or a create when
// there is none (or it went since it was read). The firewall is never
// deleted.
func (k *firewallKeeper) apply(ctx context.Context, p *fwPlan, want map[string]*wantedRule) error {
	k.wrote = true
	if p.skipped > 0 {
		klog.InfoS("Leaving out firewall rules with nothing left to allow from or to", "firewall", k.name, "rules", p.skipped)
	}
	if k.fw != nil {
		var added, removed []string
		for _, w := range p.added {
			added = append(added, describeRule(w.rule))
		}
		for _, r := range p.removed {
			removed = append(removed, describeRule(r))
		}
		klog.InfoS("Updating the public-access firewall", "firewall", k.name, "id", k.fw.ID, "added", added, "removed", removed,
			"outboundAdded", p.outAdded, "renamed", p.renamed, "retagged", p.retagged)
		var fw *godo.Firewall
		err := k.c.api.Do(ctx, "firewalls.update", func(ctx context.Context) error {
			var err error
			fw, _, err = k.c.client.Firewalls.Update(ctx, k.fw.ID, p.req)
			return err
		})
		switch {
		case err == nil:
			k.restored(fw, p)
			k.reportRemovals(fw, p, want)
			k.fw = fw
			return nil
		case !cloudapi.IsNotFound(err):
			return fmt.Errorf("updating firewall %s (%s): %w", k.name, k.fw.ID, err)
		}
		klog.InfoS("The public-access firewall went while being updated; creating it again", "firewall", k.name, "id", k.fw.ID)
		k.fw = nil
		// The operator's rules went with it: only polyccm's are made.
		p = planFirewall(nil, k.name, k.tags, want)
	}
	klog.InfoS("Creating the public-access firewall", "firewall", k.name, "tags", k.tags, "inboundRules", len(p.req.InboundRules))
	var fw *godo.Firewall
	err := k.c.api.Do(ctx, "firewalls.create", func(ctx context.Context) error {
		var err error
		fw, _, err = k.c.client.Firewalls.Create(ctx, p.req)
		return err
	}, cloudapi.NotIdempotent())
	if err != nil {
		// An unknown outcome is not repeated blindly: the next sync lists
		// by name and finds the firewall if it was made.
		k.known = false
		return fmt.Errorf("creating firewall %s: %w", k.name, err)
	}
	klog.InfoS("Created the public-access firewall", "firewall", k.name, "id", fw.ID)
	k.fw, k.known = fw, true
	return nil
}

// restored says which of polyccm's rules it put back after someone removed
// them by hand: on each Service the rule is for, and in the log.
func (k *firewallKeeper) restored(fw *godo.Firewall, p *fwPlan) {
	for _, w := range p.added {
		if !k.kept[inboundKey(w.rule)] {
			continue
		}
		rule := describeRule(w.rule)
		klog.InfoS("Restored a firewall rule removed by hand", "firewall", k.name, "id", fw.ID, "rule", rule, "services", serviceRefs(w.services))
		if k.rec == nil {
			continue
		}
		for _, svc := range w.services {
			hint := ""
			if svc.Spec.Type == v1.ServiceTypeNodePort {
				hint = fmt.Sprintf("; to close this Service's node ports, annotate it %s: \"false\"", AnnFirewallManaged)
			}
			k.rec.Event(svc, v1.EventTypeWarning, ReasonFirewallRuleRestored, annotations.Clip(fmt.Sprintf(
				"The rule %s that this Service needs was missing from firewall %s (%s) and has been put back: polyccm keeps that firewall (drivers.digitalocean.firewall.name) open for the cluster's Services; add rules of your own beside it%s",
				rule, k.name, fw.ID, hint)))
		}
	}
}

// warnInvalid says once per value that a firewall-managed annotation is
// not a bool, and that the Service's ports stay open.
func (k *firewallKeeper) warnInvalid(bad []badManaged) {
	seen := map[types.UID]bool{}
	for _, b := range bad {
		seen[b.svc.UID] = true
		if v, ok := k.warned[b.svc.UID]; ok && v == b.value {
			continue
		}
		k.warned[b.svc.UID] = b.value
		klog.InfoS("Invalid firewall-managed annotation; the Service's node ports stay open", "service", klog.KObj(b.svc), "value", b.value)
		if k.rec != nil {
			k.rec.Event(b.svc, v1.EventTypeWarning, ReasonInvalidFirewallManaged, annotations.Clip(fmt.Sprintf(
				"%s: %s is not valid: want true or false; the Service's node ports are kept open in firewall %s, as when the annotation is absent",
				AnnFirewallManaged, annotations.Quote(b.value), k.name)))
		}
	}
	for uid := range k.warned {
		if !seen[uid] {
			delete(k.warned, uid)
		}
	}
}

func keysOf(want map[string]*wantedRule) map[string]bool {
	out := make(map[string]bool, len(want))
	for key := range want {
		out[key] = true
	}
	return out
}

func serviceRefs(svcs []*v1.Service) []string {
	out := make([]string, len(svcs))
	for i, s := range svcs {
		out[i] = s.Namespace + "/" + s.Name
	}
	return out
}
