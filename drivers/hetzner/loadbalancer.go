package hetzner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	"github.com/hetznercloud/hcloud-go/v2/hcloud/exp/deprecationutil"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/annotations"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// loadBalancers implements cloudprovider.LoadBalancer on Hetzner Cloud
// load balancers, one per Service, as hcloud CCM makes them.
type loadBalancers struct {
	c   *Cloud
	own *loadbalancers.Ownership

	certMu sync.Mutex
	// certsSaid are, by Service UID, the certificate IDs the last
	// CertificatesInUse event named.
	certsSaid map[string][]int64
}

var _ loadbalancers.Translator = (*loadBalancers)(nil)

// initLoadBalancers builds the load balancer part in New: the ownership
// rule must be made before the informers start.
func (c *Cloud) initLoadBalancers() {
	c.lb = c.newLoadBalancers()
}

func (c *Cloud) newLoadBalancers() *loadBalancers {
	return &loadBalancers{c: c, certsSaid: map[string][]int64{}, own: loadbalancers.NewOwnership(loadbalancers.Options{
		Cloud:         "Hetzner Cloud",
		Informers:     c.deps.Informers,
		Clients:       c.deps.ClientBuilder,
		Recorder:      c.deps.Recorder,
		AdoptUnmarked: c.deps.AdoptUnmarkedLoadBalancers,
		Asks:          asks,
		MarksOf: func(svc *v1.Service) string {
			return "labelled " + LabelServiceUID + "=" + string(svc.UID)
		},
	})}
}

func (c *Cloud) lbs() *loadBalancers { return c.lb }

// LoadBalancer returns the load balancer, run by core's sync.
func (c *Cloud) LoadBalancer() cloudprovider.LoadBalancer {
	return loadbalancers.Sync(c.lbs(), c.lb.own)
}

// Name is hcloud CCM's: the name annotation, else "a" + the Service UID
// without dashes.
func (l *loadBalancers) Name(svc *v1.Service) string { return lbName(svc) }

// Status reports the Service's load balancer (core reports it only if it
// is the Service's); exists is false only when it is definitively not
// there.
func (l *loadBalancers) Status(ctx context.Context, svc *v1.Service) (*v1.LoadBalancerStatus, *loadbalancers.Resource, bool, error) {
	lb, res, err := l.find(ctx, svc)
	if err != nil || lb == nil {
		return nil, nil, false, err
	}
	// Only the status settings are read; their problems are reported by
	// EnsureLoadBalancer.
	spec := parseSpec(svc, LBAnnotations.Parse(svc), l.c.cfg.LoadBalancer, 0, nil)
	return lbStatus(lb, spec), &res, true, nil
}

// observedSync is what Observe read for Plan.
type observedSync struct {
	spec *lbSpec
	obs  observed
}

// Observe reads the Service and the cloud for one sync. A node sync
// plans as EnsureLoadBalancer does, as hcloud CCM does on a node change;
// core's rules hand it the newest Service and refuse creates, so it never
// makes a load balancer.
func (l *loadBalancers) Observe(ctx context.Context, svc *v1.Service, nodes []*v1.Node, _ loadbalancers.SyncKind, _ any) (*loadbalancers.Observed, error) {
	netID, err := l.c.networkID(ctx)
	if err != nil {
		return nil, err
	}
	a := LBAnnotations.Parse(svc)
	spec := parseSpec(svc, a, l.c.cfg.LoadBalancer, netID, nodes)
	lb, res, err := l.find(ctx, svc)
	if err != nil {
		return nil, err
	}
	obs := observed{lb: lb, mayCreate: cloudapi.MayCreate(ctx)}
	if lb == nil && !obs.mayCreate {
		return nil, nil // the node sync: nothing to update
	}
	if lb == nil {
		if spec.location == "" && spec.networkZone == "" {
			a.Fail(AnnLocation, "a new load balancer needs a location or a network zone: set %s or %s, or drivers.hetzner.loadBalancer.location or .networkZone (hcloud CCM's HCLOUD_LOAD_BALANCERS_LOCATION or _NETWORK_ZONE)", AnnLocation, AnnNetworkZone)
		}
	} else {
		createOnly(a, spec, lb)
	}
	if obs.lbType, err = l.lbType(ctx, svc, a, spec, lb); err != nil {
		return nil, err
	}
	refused, err := l.c.resolveCertificates(ctx, svc, a, spec)
	if err != nil {
		return nil, err
	}
	if err := l.refuse(svc, a, refused); err != nil {
		return nil, err
	}
	o := &loadbalancers.Observed{LoadBalancer: spec.name, State: observedSync{spec, obs}}
	if lb != nil {
		o.Claims = []loadbalancers.Claim{loadbalancers.ResourceClaim(res)}
	}
	return o, nil
}

// Plan plans the sync Observe read; another's load balancer was refused
// before it.
func (l *loadBalancers) Plan(_ context.Context, svc *v1.Service, o *loadbalancers.Observed, _ *loadbalancers.Judgement) (*loadbalancers.SyncPlan, error) {
	st := o.State.(observedSync)
	spec, obs, lb := st.spec, st.obs, st.obs.lb
	l.reportNodes(svc, spec)

	ap := &lbApplier{c: l.c, svc: svc, lb: lb}
	p := planLB(spec, obs, ap)
	return &loadbalancers.SyncPlan{
		LoadBalancer: spec.name,
		Plan:         p.Plan,
		Failed:       func(err error) error { return busy(err, spec.name) },
		Status: func(ctx context.Context) (*v1.LoadBalancerStatus, error) {
			if len(p.overLimit) > 0 {
				l.event(svc, v1.EventTypeWarning, "MaxTargetsReached", fmt.Sprintf("load balancer %s takes no more targets (its type's limit); %d servers left out: %v. Choose a larger type with %s", spec.name, len(p.overLimit), p.overLimit, AnnType))
			}
			lb := ap.lb
			if !p.Empty() && lb != nil {
				// Read back: attaching gives it its private IP.
				var err error
				if lb, err = l.get(ctx, lb.ID); err != nil {
					return nil, err
				}
			}
			if lb == nil {
				return nil, nil // the node sync found nothing to update
			}
			if p.waitCert != "" {
				return nil, loadbalancers.Pending(actionRetryAfter, "%s; its services change once it is issued; checking again in %s", p.waitCert, actionRetryAfter)
			}
			l.reportCertificates(ctx, svc, lb, spec)
			return lbStatus(lb, spec), nil
		},
	}, nil
}

// busy turns "another action is running" (423 locked, after core's
// retries) into a wait: the load balancer is being changed already.
func busy(err error, name string) error {
	var pe *loadbalancers.PendingError
	if errors.As(err, &pe) || errors.Is(err, loadbalancers.ErrPlanned) || errors.Is(err, cloudapi.ErrCreateSkipped) {
		return err
	}
	if cloudapi.KindOf(err) == cloudapi.KindConflict {
		return loadbalancers.Pending(actionRetryAfter, "load balancer %s is busy with another action; checking again in %s (%v)", name, actionRetryAfter, err)
	}
	return err
}

// createOnly: location and network zone apply when a load balancer is
// made; hcloud CCM ignores a change, and a Normal event says so.
func createOnly(a *annotations.Values, spec *lbSpec, lb *hcloud.LoadBalancer) {
	if lb.Location == nil {
		return
	}
	if spec.location != "" && a.Has(AnnLocation) && spec.location != lb.Location.Name {
		a.NotApplied(AnnLocation, fmt.Sprintf("applies when a load balancer is made; %s stays in %s", lb.Name, lb.Location.Name))
	}
	if z := a.String(AnnNetworkZone, ""); z != "" && spec.location == "" && z != string(lb.Location.NetworkZone) {
		a.NotApplied(AnnNetworkZone, fmt.Sprintf("applies when a load balancer is made; %s stays in %s", lb.Name, lb.Location.NetworkZone))
	}
}

// lbType looks up the type a new load balancer gets or an existing one is
// changed to: one the API does not know, or no longer sells, is a problem
// with the Service (or the config); a deprecated one gets a Warning.
func (l *loadBalancers) lbType(ctx context.Context, svc *v1.Service, a *annotations.Values, spec *lbSpec, lb *hcloud.LoadBalancer) (*hcloud.LoadBalancerType, error) {
	name := spec.typ
	if lb == nil {
		name = cmp.Or(name, defaultLBType)
	} else if name == "" || (lb.LoadBalancerType != nil && lb.LoadBalancerType.Name == name) {
		return nil, nil
	}
	var t *hcloud.LoadBalancerType
	err := l.c.api.Do(ctx, "load_balancer_types.get", func(ctx context.Context) error {
		var err error
		t, _, err = l.c.client.LoadBalancerType.GetByName(ctx, name)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("looking up load balancer type %s: %w", name, err)
	}
	if t == nil {
		// The whole value: an event clips it (core/redact.Event) and the
		// log keeps it (TestHugeAnnotationMakesShortEvents).
		a.Fail(spec.typeKey, "Hetzner Cloud has no load balancer type %q: use e.g. lb11, lb21 or lb31", name)
		return nil, nil
	}
	if msg, gone := deprecationutil.LoadBalancerTypeMessage(t); gone {
		a.Fail(spec.typeKey, "%s: choose another type", msg)
	} else if msg != "" {
		l.event(svc, v1.EventTypeWarning, "LoadBalancerTypeDeprecated", msg) // hcloud CCM's reason
	}
	return t, nil
}

// reportNodes says which Nodes cannot be targets and which ports are
// left out, as hcloud CCM's events do.
func (l *loadBalancers) reportNodes(svc *v1.Service, spec *lbSpec) {
	if len(spec.unknownNodes) > 0 {
		l.event(svc, v1.EventTypeWarning, "UnknownProviderIDPrefix", fmt.Sprintf("Nodes %s are not Hetzner Cloud servers (their providerID is not hcloud://<id>) and cannot be load balancer targets", strings.Join(spec.unknownNodes, ", ")))
	}
	if len(spec.robotNodes) > 0 {
		klog.V(2).InfoS("Robot servers are not load balancer targets: polyccm serves Cloud servers only", "service", klog.KObj(svc), "nodes", spec.robotNodes)
	}
	if len(spec.unsupported) > 0 {
		l.event(svc, v1.EventTypeWarning, "UnsupportedProtocolConfigured", fmt.Sprintf("Hetzner Cloud load balancers serve TCP only; ports %s are left out", strings.Join(spec.unsupported, ", ")))
	}
}

func (l *loadBalancers) event(svc *v1.Service, kind, reason, msg string) {
	if r := l.c.deps.Recorder; r != nil {
		r.Event(svc, kind, reason, annotations.Clip(msg))
	}
}

// Deletion deletes the Service's load balancer. One
// already gone is deleted; any other doubt is an error, so the Service
// keeps its finalizer. A load balancer protected against deletion stays,
// as hcloud CCM leaves it; so does one that is not the Service's (core's
// guard). The managed certificate stays too, as hcloud CCM leaves it.
func (l *loadBalancers) Deletion(ctx context.Context, svc *v1.Service) (*loadbalancers.Deletion, error) {
	l.forgetCertificates(svc)
	lb, res, err := l.find(ctx, svc)
	if err != nil || lb == nil {
		return nil, err
	}
	return &loadbalancers.Deletion{Steps: []loadbalancers.DeleteStep{{
		Guard: &res, StopIfRefused: true,
		Run: func(ctx context.Context) error { return l.deleteLB(ctx, svc, lb) },
	}}}, nil
}

func (l *loadBalancers) deleteLB(ctx context.Context, svc *v1.Service, lb *hcloud.LoadBalancer) error {
	if lb.Protection.Delete {
		klog.InfoS("Not deleting a load balancer protected against deletion", "service", klog.KObj(svc), "loadBalancer", lb.ID)
		l.event(svc, v1.EventTypeNormal, "LoadBalancerDeletionProtected", fmt.Sprintf("load balancer %s (%d) is protected against deletion, so it stays, as with hcloud CCM; remove the protection to delete it", lb.Name, lb.ID))
		return nil
	}
	var p loadbalancers.Plan
	p.Add(loadbalancers.Change{Action: loadbalancers.Delete, Kind: kindLB, Name: lb.Name, Apply: func(ctx context.Context) error {
		// Since 2026-10-05 the API answers a delete with an action; the
		// load balancer is gone only when it succeeds.
		var res hcloud.LoadBalancerDeleteResult
		err := l.c.api.Do(ctx, "load_balancers.delete", func(ctx context.Context) error {
			var err error
			res, _, err = l.c.client.LoadBalancer.DeleteWithResult(ctx, lb)
			return err
		})
		if err == nil {
			err = l.c.wait(ctx, res.Action)
		}
		if err != nil && !cloudapi.IsNotFound(err) {
			return err
		}
		klog.InfoS("Deleted load balancer", "service", klog.KObj(svc), "loadBalancer", lb.ID, "name", lb.Name)
		return nil
	}})
	p.Log(svc)
	return busy(p.Apply(ctx), lb.Name)
}

// find returns the Service's load balancer as hcloud CCM finds it: by the
// label with the Service UID, else by name (one made before the label, or
// another way and named by the name annotation). (nil, _, nil) means
// definitively none. Finding is not owning: the caller checks the
// Resource with the ownership rule before using it.
func (l *loadBalancers) find(ctx context.Context, svc *v1.Service) (*hcloud.LoadBalancer, loadbalancers.Resource, error) {
	labelled, err := l.list(ctx, LabelServiceUID+"="+string(svc.UID), "")
	if err != nil {
		return nil, loadbalancers.Resource{}, err
	}
	switch len(labelled) {
	case 0:
	case 1:
		return labelled[0], lbResource(labelled[0], ""), nil
	default:
		return nil, loadbalancers.Resource{}, fmt.Errorf("%d load balancers are labelled %s=%s (%s); delete the extra ones", len(labelled), LabelServiceUID, svc.UID, lbIDs(labelled))
	}
	name := lbName(svc)
	named, err := l.list(ctx, "", name)
	if err != nil || len(named) == 0 {
		return nil, loadbalancers.Resource{}, err
	}
	via := ""
	if a := strings.TrimSpace(svc.Annotations[AnnName]); a != "" {
		via = "the annotation " + AnnName
	}
	return named[0], lbResource(named[0], via), nil
}

func lbIDs(lbs []*hcloud.LoadBalancer) string {
	ids := make([]string, len(lbs))
	for i, lb := range lbs {
		ids[i] = strconv.FormatInt(lb.ID, 10)
	}
	return strings.Join(ids, ", ")
}

// list pages through the load balancers with a label selector or a name
// (neither: all of them).
func (l *loadBalancers) list(ctx context.Context, selector, name string) ([]*hcloud.LoadBalancer, error) {
	var out []*hcloud.LoadBalancer
	seen := map[int64]bool{}
	_, err := pages(ctx, l.c, "load_balancers.list", func(ctx context.Context, o hcloud.ListOpts) ([]*hcloud.LoadBalancer, *hcloud.Response, error) {
		o.LabelSelector = selector
		return l.c.client.LoadBalancer.List(ctx, hcloud.LoadBalancerListOpts{ListOpts: o, Name: name})
	}, func(page []*hcloud.LoadBalancer) bool {
		for _, lb := range page {
			// Pages shift when load balancers come and go mid-listing.
			if !seen[lb.ID] {
				seen[lb.ID] = true
				out = append(out, lb)
			}
		}
		return true
	})
	return out, err
}

// get reads one load balancer; a definitive not-found is an error here,
// since it was there a moment ago.
func (l *loadBalancers) get(ctx context.Context, id int64) (*hcloud.LoadBalancer, error) {
	var lb *hcloud.LoadBalancer
	err := l.c.api.Do(ctx, "load_balancers.get", func(ctx context.Context) error {
		var err error
		lb, _, err = l.c.client.LoadBalancer.GetByID(ctx, id)
		return err
	})
	if err == nil && lb == nil {
		err = cloudapi.NotFound("load balancer %d is gone", id)
	}
	return lb, err
}

var uidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// lbResource is what the ownership rule knows of a load balancer: the
// Service UID in its label (or, unlabelled, in its name) and its
// addresses. Its labels carry no cluster mark.
func lbResource(lb *hcloud.LoadBalancer, via string) loadbalancers.Resource {
	r := loadbalancers.Resource{
		Kind:      "load balancer",
		ID:        strconv.FormatInt(lb.ID, 10),
		Name:      lb.Name,
		Addresses: lbAddresses(lb),
		Via:       via,
	}
	switch uid := lb.Labels[LabelServiceUID]; {
	case uidRE.MatchString(uid):
		r.UIDMark = strings.ReplaceAll(uid, "-", "")
	case uid != "":
		// Not a UID: it names no Service of this cluster.
		r.Service = "with UID " + uid
	default:
		r.UIDMark = loadbalancers.UIDMark(lb.Name)
	}
	return r
}

func lbAddresses(lb *hcloud.LoadBalancer) []string {
	var out []string
	for _, ip := range []string{ipString(lb.PublicNet.IPv4.IP), ipString(lb.PublicNet.IPv6.IP)} {
		if ip != "" {
			out = append(out, ip)
		}
	}
	for _, pn := range lb.PrivateNet {
		if pn.IP != nil {
			out = append(out, pn.IP.String())
		}
	}
	return out
}

// asks says which annotation of svc names r, for the ownership rule.
func asks(svc *v1.Service, r loadbalancers.Resource) string {
	if n := strings.TrimSpace(svc.Annotations[AnnName]); n != "" && n == r.Name {
		return "the annotation " + AnnName
	}
	return ""
}

// lbStatus is what the Service publishes, as hcloud CCM builds it: the
// hostname annotation alone, or the public IPv4 and (unless disabled)
// IPv6 while the public interface is on, then the private IPs unless
// private ingress is disabled; ipMode Proxy with the PROXY protocol.
func lbStatus(lb *hcloud.LoadBalancer, spec *lbSpec) *v1.LoadBalancerStatus {
	if spec.hostname != "" {
		return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{Hostname: spec.hostname}}}
	}
	mode := v1.LoadBalancerIPModeVIP
	if spec.proxyProtocol {
		mode = v1.LoadBalancerIPModeProxy
	}
	st := &v1.LoadBalancerStatus{}
	add := func(ip string) {
		if ip != "" {
			st.Ingress = append(st.Ingress, v1.LoadBalancerIngress{IP: ip, IPMode: &mode})
		}
	}
	if lb.PublicNet.Enabled {
		add(ipString(lb.PublicNet.IPv4.IP))
		if spec.ipv6 {
			add(ipString(lb.PublicNet.IPv6.IP))
		}
	}
	if spec.privateIngress {
		for _, pn := range lb.PrivateNet {
			add(ipString(pn.IP))
		}
	}
	return st
}
