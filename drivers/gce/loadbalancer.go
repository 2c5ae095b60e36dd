package gce

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"cloud.google.com/go/compute/apiv1/computepb"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/annotations"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// loadBalancers implements cloudprovider.LoadBalancer with GCE passthrough
// load balancers, named and described as cloud-provider-gcp names them,
// so a cluster switching from it keeps its load balancers and addresses.
type loadBalancers struct {
	c   *Cloud
	own *loadbalancers.Ownership
	// shared guards what Services share (the nodes' health check and its
	// firewall rule, shared backend services, instance groups): a sync
	// that uses them holds it for reading, the delete of one for writing,
	// so nothing is deleted between another sync's making it and using it.
	shared sync.RWMutex
	// groups are what the node-only syncs of internal load balancers
	// know of the shared instance groups (internal_nodes.go).
	groups groupMemo
}

var _ loadbalancers.Translator = (*loadBalancers)(nil)

// The finalizers cloud-provider-gcp puts on the Services whose load
// balancers it makes, and those of GKE's other load-balancer controllers,
// which mean the Service is theirs.
const (
	FinalizerNetLBv1 = "gke.networking.io/l4-netlb-v1"
	FinalizerILBv1   = "gke.networking.io/l4-ilb-v1"
	finalizerNetLBv2 = "gke.networking.io/l4-netlb-v2"
	finalizerNetLBv3 = "gke.networking.io/l4-netlb-v3"
	finalizerILBv2   = "gke.networking.io/l4-ilb-v2"
	// AnnRBS asks GKE's controller for a backend-service based external
	// load balancer ("enabled").
	AnnRBS = "cloud.google.com/l4-rbs"
)

// elsewhere reports whether another controller serves the Service's load
// balancer, as upstream decides: GKE's backend-service based external
// load balancers (the l4-rbs annotation, their finalizers) and its
// subsetting internal ones (the l4-ilb-v2 finalizer), unless the rule or
// upstream's own finalizer shows the load balancer is of the kind polyccm
// makes.
func elsewhere(svc *v1.Service, fr *computepb.ForwardingRule) bool {
	has := func(f string) bool { return slices.Contains(svc.Finalizers, f) }
	internal := isInternal(svc)
	if !internal {
		if has(FinalizerNetLBv1) || (fr != nil && fr.GetTarget() != "") {
			return false
		}
		return svc.Annotations[AnnRBS] == "enabled" || has(finalizerNetLBv2) || has(finalizerNetLBv3)
	}
	return fr == nil && !has(FinalizerILBv1) && has(finalizerILBv2)
}

// isInternal is the scheme the annotations ask for, valid or not.
func isInternal(svc *v1.Service) bool {
	for _, k := range []string{AnnLoadBalancerType, AnnLegacyLoadBalancerType} {
		if v, ok := svc.Annotations[k]; ok {
			return strings.EqualFold(strings.TrimSpace(v), "Internal")
		}
	}
	return false
}

// LoadBalancer returns the load balancer implementation.
func (c *Cloud) LoadBalancer() cloudprovider.LoadBalancer {
	return withL4Counts(c, loadbalancers.Sync(c.lbs, c.lbs.own))
}

// Name is cloud-provider-gcp's: "a" + the Service UID without dashes.
func (l *loadBalancers) Name(svc *v1.Service) string { return lbName(svc) }

// Status reports the forwarding rule's address. Exists is true
// while anything made for the Service is left, or upstream's finalizer is
// on it, because the service controller calls EnsureLoadBalancerDeleted
// only then: a half-deleted load balancer must still be cleaned up. The
// rules are named for the Service's UID, so no resource is handed to the
// ownership rule here.
func (l *loadBalancers) Status(ctx context.Context, svc *v1.Service) (*v1.LoadBalancerStatus, *loadbalancers.Resource, bool, error) {
	cl, env, _, err := l.setup(ctx)
	if err != nil {
		return nil, nil, false, err
	}
	base := lbName(svc)
	fr, err := l.getForwardingRule(ctx, cl, env, base)
	if err != nil {
		return nil, nil, false, err
	}
	var fr6 *computepb.ForwardingRule
	if fr == nil || (isInternal(svc) && slices.Contains(svc.Spec.IPFamilies, v1.IPv6Protocol)) {
		if fr6, err = l.getForwardingRule(ctx, cl, env, ipv6Name(base)); err != nil {
			return nil, nil, false, err
		}
	}
	if fr != nil || fr6 != nil {
		return &v1.LoadBalancerStatus{Ingress: ingress(svc, fr.GetIPAddress(), fr6.GetIPAddress())}, nil, true, nil
	}
	if slices.Contains(svc.Finalizers, FinalizerNetLBv1) || slices.Contains(svc.Finalizers, FinalizerILBv1) {
		return &v1.LoadBalancerStatus{}, nil, true, nil
	}
	left, err := l.leftovers(ctx, cl, env, base)
	if err != nil || !left {
		return nil, nil, false, err
	}
	return &v1.LoadBalancerStatus{}, nil, true, nil
}

// leftovers reports whether any other resource of the Service remains.
func (l *loadBalancers) leftovers(ctx context.Context, cl *clients, env *environment, base string) (bool, error) {
	checks := []func(ctx context.Context) error{
		func(ctx context.Context) error {
			_, err := cl.targetPools.Get(ctx, &computepb.GetTargetPoolRequest{Project: env.project, Region: env.region, TargetPool: base})
			return err
		},
		func(ctx context.Context) error {
			_, err := cl.backendServices.Get(ctx, &computepb.GetRegionBackendServiceRequest{Project: env.project, Region: env.region, BackendService: base})
			return err
		},
		func(ctx context.Context) error {
			_, err := cl.firewalls.Get(ctx, &computepb.GetFirewallRequest{Project: env.networkProject, Firewall: firewallName(base)})
			return err
		},
		func(ctx context.Context) error {
			_, err := cl.addresses.Get(ctx, &computepb.GetAddressRequest{Project: env.project, Region: env.region, Address: base})
			return err
		},
	}
	for _, check := range checks {
		_, err := call(ctx, l.c, "leftovers.get", func(ctx context.Context) (struct{}, error) { return struct{}{}, check(ctx) })
		switch {
		case err == nil:
			return true, nil
		case !cloudapi.IsNotFound(err):
			return false, err
		}
	}
	return false, nil
}

func (l *loadBalancers) setup(ctx context.Context) (*clients, *environment, string, error) {
	cl, err := l.c.client(ctx)
	if err != nil {
		return nil, nil, "", err
	}
	env, err := l.c.environ(ctx)
	if err != nil {
		return nil, nil, "", err
	}
	cid, err := l.c.cid.get(ctx)
	if err != nil {
		return nil, nil, "", err
	}
	return cl, env, cid, nil
}

// releaseFinalizers removes upstream's finalizers from the Service once
// its load balancer is gone, as upstream does; a Service already gone
// needs nothing.
func (l *loadBalancers) releaseFinalizers(ctx context.Context, svc *v1.Service) error {
	if !slices.Contains(svc.Finalizers, FinalizerNetLBv1) && !slices.Contains(svc.Finalizers, FinalizerILBv1) {
		return nil
	}
	if l.c.deps.ClientBuilder == nil {
		return fmt.Errorf("no Kubernetes client to remove %s and %s from Service %s/%s", FinalizerNetLBv1, FinalizerILBv1, svc.Namespace, svc.Name)
	}
	kube, err := l.c.deps.ClientBuilder.Client("polyccm-gce-finalizers")
	if err != nil {
		return err
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := kube.CoreV1().Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
		if err != nil || cur.UID != svc.UID {
			return err
		}
		keep := slices.DeleteFunc(slices.Clone(cur.Finalizers), func(f string) bool { return f == FinalizerNetLBv1 || f == FinalizerILBv1 })
		if len(keep) == len(cur.Finalizers) {
			return nil
		}
		cur.Finalizers = keep
		_, err = kube.CoreV1().Services(svc.Namespace).Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("removing cloud-provider-gcp's finalizer from Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	klog.InfoS("Removed cloud-provider-gcp's load balancer finalizer", "service", klog.KObj(svc))
	return nil
}

// nodeSync is a node-only sync (lbnodes.go), planned while observing: it
// claims nothing, so core always hands it to Plan, and Sync calls its
// Hold, which releases what planning took.
type nodeSync struct{ p *loadbalancers.SyncPlan }

// fullSync is what a full sync observed, for Plan.
type fullSync struct {
	cl     *clients
	env    *environment
	spec   *lbSpec
	view   lbSpec // the spec before observing filled parts in
	byZone map[string][]string
	obs    *observed
}

// Observe reads one sync; it changes nothing. Invalid settings are
// refused here; another's forwarding rule, address or deny rule are
// claims, which core refuses before Plan. A node sync (run without
// creates: it never makes a load balancer) reads and plans only the
// members where the node-only sync can (lbnodes.go); otherwise it reads
// what the full sync needs.
func (l *loadBalancers) Observe(ctx context.Context, svc *v1.Service, nodes []*v1.Node, kind loadbalancers.SyncKind, base any) (*loadbalancers.Observed, error) {
	if b, ok := base.(*syncBase); ok && kind == loadbalancers.NodeSync {
		if p, done, err := l.planNodes(ctx, svc, nodes, b); done {
			if err != nil {
				l.recordOperationError(svc, err)
				return nil, err
			}
			if p == nil {
				return nil, nil
			}
			return &loadbalancers.Observed{LoadBalancer: p.LoadBalancer, State: nodeSync{p}}, nil
		}
	} else if kind == loadbalancers.NodeSync {
		fallBack(svc, "no full sync of the Service in this process yet")
	}
	return l.observeFull(ctx, svc, nodes)
}

// Plan plans the sync Observe read, once core let its claims pass. A
// change GCE is still making returns a RetryError when applied instead of
// holding the worker.
func (l *loadBalancers) Plan(ctx context.Context, svc *v1.Service, o *loadbalancers.Observed, _ *loadbalancers.Judgement) (*loadbalancers.SyncPlan, error) {
	switch st := o.State.(type) {
	case nodeSync:
		return st.p, nil
	case *fullSync:
		return l.planFull(ctx, svc, st)
	}
	return nil, fmt.Errorf("gce: nothing observed to plan from (%T)", o.State)
}

// planFull plans a full sync from what observeFull read.
func (l *loadBalancers) planFull(ctx context.Context, svc *v1.Service, st *fullSync) (*loadbalancers.SyncPlan, error) {
	spec, obs := st.spec, st.obs
	if obs.deny != nil {
		l.noteDeny(spec, obs.deny)
	}
	if err := checkRequestedIP(st.env, spec, obs); err != nil {
		return nil, err
	}
	p := l.plan(st.cl, st.env, spec, st.byZone, obs)
	p.base = &syncBase{spec: st.view, tags: spec.targetTags, zones: slices.Sorted(maps.Keys(st.byZone))}
	if !cloudapi.MayCreate(ctx) {
		// A node sync changes membership only; anything it would have
		// to make again (a rule replaced, a resource gone) waits for the
		// Service's own sync, rather than be deleted and not remade.
		for _, c := range p.Changes {
			if c.Action == loadbalancers.Create && c.Kind != kindGroup {
				return nil, cloudapi.ErrCreateSkipped
			}
		}
	}
	return &loadbalancers.SyncPlan{
		LoadBalancer: spec.base,
		Plan:         p.Plan,
		Base:         p.base,
		// Shared resources are not deleted while a sync uses them; the
		// sync's own deletions of them run under this hold.
		Hold: func(ctx context.Context) (context.Context, func(bool)) {
			l.shared.RLock()
			return context.WithValue(ctx, syncKey{}, true), func(bool) { l.shared.RUnlock() }
		},
		Failed: l.failed(svc),
		Status: func(context.Context) (*v1.LoadBalancerStatus, error) {
			return &v1.LoadBalancerStatus{Ingress: ingress(svc, p.ip, p.ip6)}, nil
		},
	}, nil
}

// failed reports a failed GCE Operation on the Service.
func (l *loadBalancers) failed(svc *v1.Service) func(error) error {
	return func(err error) error {
		l.recordOperationError(svc, err)
		return err
	}
}

// observeFull reads the Service's resources for a full sync. Invalid
// annotations are refused before any claim.
func (l *loadBalancers) observeFull(ctx context.Context, svc *v1.Service, nodes []*v1.Node) (*loadbalancers.Observed, error) {
	cl, env, cid, err := l.setup(ctx)
	if err != nil {
		return nil, err
	}
	a := LBAnnotations.Parse(svc)
	spec := desiredLB(svc, a, l.c.cfg.Subnetwork, cid)
	view := spec.view() // before observing fills parts in
	// Invalid settings are refused before any call, unless the Service
	// may be another controller's: then the rule decides first (a rule to
	// a target pool keeps it polyccm's).
	maybeElsewhere := elsewhere(svc, nil)
	if !maybeElsewhere {
		if err := a.Report(l.c.deps.Recorder); err != nil {
			return nil, err
		}
	}
	// The rule is read first: it is what ownership is claimed on, and it
	// shows a scheme switch, which decides what else is read.
	fr, err := l.getForwardingRule(ctx, cl, env, spec.base)
	if err != nil {
		return nil, err
	}
	if maybeElsewhere {
		if elsewhere(svc, fr) {
			return nil, cloudprovider.ImplementedElsewhere
		}
		if err := a.Report(l.c.deps.Recorder); err != nil {
			return nil, err
		}
	}
	fr6, err := l.getRule6(ctx, cl, env, svc, spec, fr)
	if err != nil {
		return nil, err
	}
	st := &fullSync{cl: cl, env: env, spec: spec, view: view}
	o := &loadbalancers.Observed{LoadBalancer: spec.base, State: st}
	for _, r := range []*computepb.ForwardingRule{fr, fr6} {
		if r != nil {
			o.Claims = append(o.Claims, loadbalancers.ResourceClaim(l.resource(r.GetName(), r.GetDescription(), r.GetIPAddress())))
		}
	}
	// A failure met after a claim comes once core let the claims before
	// it pass, as when the checks ran in line: a refusal comes first.
	if report, err := l.observeClaimed(ctx, svc, nodes, st, o, fr, fr6); err != nil {
		o.Halt = func() error {
			if report != nil {
				report()
			}
			return err
		}
	}
	return o, nil
}

// observeClaimed reads the rest of a full sync from the rules fr and fr6
// (nil: none), adding the claims it meets in the order their checks ran:
// the address asked for, then the deny rule. A failure comes with what
// records its events (invalid static address names), for when it is
// given.
func (l *loadBalancers) observeClaimed(ctx context.Context, svc *v1.Service, nodes []*v1.Node, st *fullSync, o *loadbalancers.Observed, fr, fr6 *computepb.ForwardingRule) (report func(), _ error) {
	cl, env, spec := st.cl, st.env, st.spec
	if len(spec.staticNames) > 0 {
		if err := l.resolveStaticAddresses(ctx, cl, env, svc, spec); err != nil {
			if ie, ok := errors.AsType[*annotations.InvalidError](err); ok {
				return func() { ie.Record(l.c.deps.Recorder, svc) }, err
			}
			return nil, err
		}
	}
	if spec.ip != "" {
		c, err := l.addressClaim(ctx, cl, env, spec, fr)
		o.Claims = append(o.Claims, loadbalancers.Claim{Address: c})
		if err != nil {
			return nil, err
		}
	}
	switched := fr != nil && !strings.EqualFold(fr.GetLoadBalancingScheme(), spec.scheme())
	if !cloudapi.MayCreate(ctx) && ((fr == nil && fr6 == nil) || switched) {
		// A node sync with nothing to update, or a switch
		// EnsureLoadBalancer makes: here the rule could be deleted but
		// not made again.
		return nil, cloudapi.ErrCreateSkipped
	}
	byZone, skipped := nodeInstances(nodes, env.project)
	if len(skipped) > 0 {
		klog.V(2).InfoS("Nodes without a GCE providerID are not load balancer backends yet", "service", klog.KObj(svc), "nodes", skipped)
	}
	st.byZone = byZone
	var err error
	st.obs, err = l.observe(ctx, cl, env, spec, byZone, fr, fr6, switched, &o.Claims)
	return nil, err
}

// checkRequestedIP refuses an external spec.loadBalancerIP that is
// neither an address the project reserved nor the rule's own, as upstream
// does: GCE gives out no other.
func checkRequestedIP(env *environment, spec *lbSpec, obs *observed) error {
	if spec.ip == "" || spec.internal || obs.userIP || (obs.rule != nil && obs.rule.GetIPAddress() == spec.ip) || (obs.addr != nil && obs.addr.GetAddress() == spec.ip) {
		return nil
	}
	return cloudapi.Invalid("spec.loadBalancerIP %s of Service %s is neither a reserved address of region %s nor its load balancer's: reserve it first (gcloud compute addresses create NAME --region %s --addresses %s) or remove spec.loadBalancerIP",
		spec.ip, spec.service, env.region, env.region, spec.ip)
}

// recordOperationError surfaces a failed GCE Operation as an event on the
// Service, with GCE's own error code and message.
func (l *loadBalancers) recordOperationError(svc *v1.Service, err error) {
	if oe, ok := errors.AsType[*operationError](err); ok && l.c.deps.Recorder != nil {
		l.c.deps.Recorder.Eventf(svc, v1.EventTypeWarning, "GCEOperationFailed", "%s: %s: %s", oe.what, oe.code, oe.detail)
	}
}

// nodeInstances groups the nodes' instances of the project by zone.
func nodeInstances(nodes []*v1.Node, project string) (map[string][]string, []string) {
	refs, skipped := loadbalancers.Collect(nodes, func(providerID string) (instanceRef, error) {
		ref, err := parseProviderID(providerID)
		if err == nil && ref.project != project {
			err = fmt.Errorf("instance %s is in project %s, not %s", ref.name, ref.project, project)
		}
		return ref, err
	})
	byZone := map[string][]string{}
	for _, ref := range refs {
		byZone[ref.zone] = append(byZone[ref.zone], ref.name)
	}
	for z := range byZone {
		sort.Strings(byZone[z])
	}
	return byZone, skipped
}

func instanceURL(project, zone, name string) string {
	return "projects/" + project + "/zones/" + zone + "/instances/" + name
}

// shortURL reduces any resource URL to its "projects/..." path, so URLs
// from the API compare with those polyccm writes.
func shortURL(u string) string {
	if i := strings.Index(u, "projects/"); i >= 0 {
		return u[i:]
	}
	return u
}

// networkURL is the cluster network, in its (Shared VPC host) project.
func networkURL(env *environment) string {
	return "projects/" + env.networkProject + "/global/networks/" + env.network
}

// subnetworkURL is a subnetwork of the network in the region.
func subnetworkURL(env *environment, name string) string {
	return "projects/" + env.networkProject + "/regions/" + env.region + "/subnetworks/" + name
}
