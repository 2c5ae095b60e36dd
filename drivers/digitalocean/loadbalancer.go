package digitalocean

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/digitalocean/godo"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/annotations"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// activePollInterval is how soon a Service whose LB is still being built
// is looked at again. The worker is released meanwhile.
const activePollInterval = 5 * time.Second

// loadBalancers implements cloudprovider.LoadBalancer on DigitalOcean load
// balancers, one per Service.
type loadBalancers struct {
	c       *Cloud
	deps    driver.Deps
	kubeMu  sync.Mutex
	kube    kubernetes.Interface
	cluster string
	own     *loadbalancers.Ownership
}

var _ loadbalancers.Translator = (*loadBalancers)(nil)

// LoadBalancer returns the load balancer, run by core's sync.
func (c *Cloud) LoadBalancer() cloudprovider.LoadBalancer {
	return loadbalancers.Sync(c.lbs, c.lbs.own)
}

func (l *loadBalancers) client() (kubernetes.Interface, error) {
	l.kubeMu.Lock()
	defer l.kubeMu.Unlock()
	if l.kube == nil {
		if l.deps.ClientBuilder == nil {
			return nil, errors.New("digitalocean: no Kubernetes client to record the load balancer ID on the Service")
		}
		k, err := l.deps.ClientBuilder.Client("polyccm-digitalocean")
		if err != nil {
			return nil, err
		}
		l.kube = k
	}
	return l.kube, nil
}

// Name is the LB's name in DigitalOcean.
func (l *loadBalancers) Name(svc *v1.Service) string { return lbName(svc) }

// Status reports the LB (core reports it only if it is the Service's);
// exists is false only when it is definitively not there.
func (l *loadBalancers) Status(ctx context.Context, svc *v1.Service) (*v1.LoadBalancerStatus, *loadbalancers.Resource, bool, error) {
	lb, res, err := l.find(ctx, svc)
	if err != nil || lb == nil {
		return nil, nil, false, err
	}
	return status(svc, lb), &res, true, nil
}

// observedSync is what Observe read for Plan.
type observedSync struct {
	a      *annotations.Values
	update bool
	disown bool
	lb     *godo.LoadBalancer
	req    *godo.LoadBalancerRequest
}

// Observe reads one sync of the Service's LB. A Service that disowns its
// LB only reports it, if it is the Service's: a Service must not publish
// another's address by disowning it. A node sync changes the droplets
// only; core's rules run it without creates: it never makes a load
// balancer.
func (l *loadBalancers) Observe(ctx context.Context, svc *v1.Service, nodes []*v1.Node, sync loadbalancers.SyncKind, _ any) (*loadbalancers.Observed, error) {
	update := sync == loadbalancers.NodeSync
	a := LBAnnotations.Parse(svc)
	if a.Bool(AnnDisown, false) {
		lb, res, err := l.find(ctx, svc)
		if err != nil {
			return nil, err
		}
		o := &loadbalancers.Observed{State: observedSync{disown: true, lb: lb}}
		if lb != nil {
			o.Claims = []loadbalancers.Claim{{Resource: &res, ReadOnly: true}}
		}
		return o, nil
	}
	region, err := l.region(nodes)
	if err != nil {
		a.Fail("drivers.digitalocean.region", "%v", err)
	}
	local := inRegion(nodes, region)
	if region != "" && len(nodes) > 0 && len(local) == 0 {
		a.Fail("drivers.digitalocean.region", "no node is in region %s, so the load balancer would have no targets; fix drivers.digitalocean.region", region)
	}
	// Observe first: a Service that names no type keeps its load
	// balancer's, whatever the default is now.
	lb, res, err := l.find(ctx, svc)
	if err != nil {
		return nil, err
	}
	if lb == nil && update {
		return nil, nil
	}
	typ := l.c.cfg.defaultType()
	if lb != nil {
		typ = cmp.Or(lb.Type, typeRegional)
	}
	stacks := classifyNodes(local, a.String(AnnType, typ), a.String(AnnNetwork, "EXTERNAL"))
	ids, skipped := dropletIDsOf(stacks.ready)
	if len(skipped) > 0 {
		klog.V(2).InfoS("Nodes without a DigitalOcean providerID are not load balancer targets yet", "service", klog.KObj(svc), "nodes", skipped)
	}
	if n := len(local) - len(stacks.ready); n > 0 {
		klog.V(2).InfoS("Nodes left out of the load balancer for want of a usable address", "service", klog.KObj(svc), "noPublicAddress", stacks.noPublic, "ipv6Only", stacks.v6Only)
	}
	in := lbInputs{
		region:     region,
		vpcID:      l.c.cfg.VPCID,
		dropletIDs: ids,
		typ:        typ,
		nodes:      stacks,
		tags:       l.tags(),
		certID:     func(name string) (string, error) { return l.certificateID(ctx, name) },
	}
	req := desiredLB(svc, a, in)
	if lb != nil {
		createOnly(a, lb, req)
	}
	if err := a.Report(l.deps.Recorder); err != nil {
		return nil, err
	}
	o := &loadbalancers.Observed{LoadBalancer: req.Name, State: observedSync{a: a, update: update, lb: lb, req: req}}
	if lb != nil {
		o.Claims = []loadbalancers.Claim{loadbalancers.ResourceClaim(res)}
	}
	return o, nil
}

// Plan plans one sync of the Service's LB: created or updated as a whole
// (the API takes the whole request either way); another's LB was refused
// before anything more is read or said of it. It never blocks waiting
// for a new LB to become active: its status is a wait (RetryError) and
// the service controller comes back.
func (l *loadBalancers) Plan(ctx context.Context, svc *v1.Service, o *loadbalancers.Observed, j *loadbalancers.Judgement) (*loadbalancers.SyncPlan, error) {
	st := o.State.(observedSync)
	if st.disown {
		lb := st.lb
		return &loadbalancers.SyncPlan{Status: func(context.Context) (*v1.LoadBalancerStatus, error) {
			if lb == nil {
				return &v1.LoadBalancerStatus{}, nil
			}
			return status(svc, lb), nil
		}}, nil
	}
	a, update, lb, req := st.a, st.update, st.lb, st.req
	var err error

	// Plan: one load balancer, created or updated as a whole (the API
	// takes the whole request either way).
	if update && lb != nil {
		// The node sync changes targets only. It may hold an older copy
		// of the Service than the last EnsureLoadBalancer did (the
		// service controller runs both at once), so everything else is
		// kept as the load balancer has it, never reverted.
		cur := lb.AsRequest()
		if lb.Region != nil {
			cur.Region = lb.Region.Slug
		}
		cur.DropletIDs = req.DropletIDs
		req = cur
	}
	if lb != nil {
		keepNetworkStack(l.deps.Recorder, svc, a, lb, req)
	}
	// A Let's Encrypt certificate DigitalOcean renewed has a new ID, which
	// the load balancer already uses: follow it rather than put back the
	// ID the Service names, which no longer exists.
	renewed := ""
	if lb != nil && !update {
		if renewed, err = l.renewedCertificate(ctx, a, lb); err != nil {
			return nil, err
		}
		useCertificate(req, a.String(AnnCertificateID, ""), renewed)
	}
	var plan loadbalancers.Plan
	if lb == nil {
		plan.Add(loadbalancers.Change{Action: loadbalancers.Create, Kind: "load balancer", Name: req.Name, Apply: func(ctx context.Context) error {
			// The name is recorded first, so that if the create's outcome
			// is unknown the next pass knows the load balancer by that
			// name as this Service's own. A name derived from the UID says
			// so itself.
			if loadbalancers.UIDMark(req.Name) == "" {
				if err := j.Record(ctx, loadbalancers.Resource{Kind: "load balancer", Name: req.Name}); err != nil {
					return err
				}
			}
			made, err := l.create(ctx, svc, req)
			if err != nil {
				return err
			}
			if _, err := j.Found(ctx, resource(made, "")); err != nil {
				return err
			}
			lb = made
			return nil
		}})
	} else if lb.Status != "new" && lb.Status != "errored" {
		plan.Add(loadbalancers.Change{Action: loadbalancers.Update, Kind: "load balancer", Name: lb.ID, Fields: diffLB(lb, req), Apply: func(ctx context.Context) error {
			if err := immutableChanged(lb, req); err != nil {
				return err
			}
			updated, err := l.update(ctx, lb.ID, req)
			if err != nil {
				return err
			}
			lb = updated
			return nil
		}})
	}
	name := req.Name
	if lb != nil {
		name = lb.ID
	}
	return &loadbalancers.SyncPlan{LoadBalancer: name, Plan: plan, Status: func(ctx context.Context) (*v1.LoadBalancerStatus, error) {
		if err := l.record(ctx, svc, lb); err != nil {
			return nil, err
		}
		if renewed != "" {
			if err := l.recordCertificate(ctx, svc, renewed); err != nil {
				return nil, err
			}
		}
		if lb.Status == "new" {
			// DigitalOcean refuses changes until the LB is built.
			return nil, loadbalancers.Pending(activePollInterval, "load balancer %s (%s) is being created; checking again in %s", lb.Name, lb.ID, activePollInterval)
		}
		if lb.Status == "errored" {
			return nil, fmt.Errorf("load balancer %s (%s) is in state errored at DigitalOcean; check it in the control panel (doctl compute load-balancer get %s)", lb.Name, lb.ID, lb.ID)
		}
		if err := immutableChanged(lb, req); err != nil {
			return nil, err
		}
		if lb.Status != "active" || lb.IP == "" {
			return nil, loadbalancers.Pending(activePollInterval, "load balancer %s (%s) is %s; checking again in %s", lb.Name, lb.ID, lb.Status, activePollInterval)
		}
		return status(svc, lb), nil
	}}, nil
}

// Deletion deletes the LB. An LB already gone is deleted;
// any other doubt is an error, so the service controller keeps the
// finalizer and retries. Another's load balancer stays (core's guard,
// with an event saying why); the Service may go.
func (l *loadBalancers) Deletion(ctx context.Context, svc *v1.Service) (*loadbalancers.Deletion, error) {
	// Invalid annotations never block a deletion; only disown does, and a
	// disown value we cannot read is treated as a possible "true".
	a := LBAnnotations.Parse(svc)
	if raw, ok := svc.Annotations[AnnDisown]; ok && !a.Has(AnnDisown) {
		return nil, fmt.Errorf("Service %s/%s: %s is %q, not true or false; not deleting a load balancer that may be disowned: fix the annotation", svc.Namespace, svc.Name, AnnDisown, raw)
	}
	if a.Bool(AnnDisown, false) {
		klog.InfoS("Not deleting a disowned load balancer", "service", klog.KObj(svc))
		return nil, nil
	}
	lb, res, err := l.find(ctx, svc)
	if err != nil || lb == nil {
		return nil, err
	}
	return &loadbalancers.Deletion{Steps: []loadbalancers.DeleteStep{{Guard: &res, StopIfRefused: true, Run: func(ctx context.Context) error {
		err := l.c.api.Do(ctx, "load_balancers.delete", func(ctx context.Context) error {
			_, err := l.c.client.LoadBalancers.Delete(ctx, lb.ID)
			return err
		})
		if err != nil && !cloudapi.IsNotFound(err) {
			return fmt.Errorf("deleting load balancer %s (%s): %w", lb.Name, lb.ID, err)
		}
		klog.InfoS("Deleted load balancer", "service", klog.KObj(svc), "loadBalancer", lb.ID)
		return nil
	}}}}, nil
}

// find returns the LB the Service asks for, by the ID recorded on the
// Service, else by name, with what the ownership rule needs to know of it.
// (nil, _, nil) means definitively none. Finding is not owning: the
// caller checks the Resource with l.own before using it.
func (l *loadBalancers) find(ctx context.Context, svc *v1.Service) (*godo.LoadBalancer, loadbalancers.Resource, error) {
	if id := svc.Annotations[AnnLoadBalancerID]; id != "" {
		var lb *godo.LoadBalancer
		err := l.c.api.Do(ctx, "load_balancers.get", func(ctx context.Context) error {
			var err error
			lb, _, err = l.c.client.LoadBalancers.Get(ctx, id)
			return err
		})
		if err == nil {
			return lb, resource(lb, "the annotation "+AnnLoadBalancerID), nil
		}
		if !cloudapi.IsNotFound(err) {
			return nil, loadbalancers.Resource{}, err
		}
		// The recorded LB is gone: look for one by name before concluding.
	}
	name := lbName(svc)
	all, err := l.list(ctx)
	if err != nil {
		return nil, loadbalancers.Resource{}, err
	}
	var match []godo.LoadBalancer
	for _, lb := range all {
		if lb.Name == name {
			match = append(match, lb)
		}
	}
	switch len(match) {
	case 0:
		return nil, loadbalancers.Resource{}, nil
	case 1:
		via := ""
		if name != loadbalancers.DefaultName(svc) {
			via = "the annotation " + AnnName
		}
		return &match[0], resource(&match[0], via), nil
	}
	ids := make([]string, len(match))
	for i, m := range match {
		ids[i] = m.ID
	}
	return nil, loadbalancers.Resource{}, fmt.Errorf("%d load balancers are named %s (%s); set the annotation %s on Service %s/%s to the one it owns",
		len(match), name, strings.Join(ids, ", "), AnnLoadBalancerID, svc.Namespace, svc.Name)
}

// resource is what the ownership rule knows of a DigitalOcean LB: its
// name (derived from a Service's UID, or not) and addresses. The API does
// not return its tags, so it shows no cluster mark.
func resource(lb *godo.LoadBalancer, via string) loadbalancers.Resource {
	return loadbalancers.Resource{
		Kind:      "load balancer",
		ID:        lb.ID,
		Name:      lb.Name,
		Addresses: []string{lb.IP, lb.IPv6},
		UIDMark:   loadbalancers.UIDMark(lb.Name),
		Via:       via,
	}
}

// asks says which annotation of svc, if any, names r: the Services that
// ask for a load balancer, for the ownership rule.
func asks(svc *v1.Service, r loadbalancers.Resource) string {
	switch {
	case r.ID != "" && svc.Annotations[AnnLoadBalancerID] == r.ID:
		return "the annotation " + AnnLoadBalancerID
	case r.Name != "" && strings.TrimSpace(svc.Annotations[AnnName]) == r.Name:
		return "the annotation " + AnnName
	}
	return ""
}

func (l *loadBalancers) list(ctx context.Context) ([]godo.LoadBalancer, error) {
	var all []godo.LoadBalancer
	err := pages(ctx, l.c, "load_balancers.list", l.c.client.LoadBalancers.List, func(page []godo.LoadBalancer, _ *godo.Response) bool {
		all = append(all, page...)
		return true
	})
	return all, err
}

// create makes the LB once: a create whose outcome is unknown (5xx) is not
// repeated; the next reconciliation finds the LB by name if it was made.
func (l *loadBalancers) create(ctx context.Context, svc *v1.Service, req *godo.LoadBalancerRequest) (*godo.LoadBalancer, error) {
	var lb *godo.LoadBalancer
	err := l.c.api.Do(ctx, "load_balancers.create", func(ctx context.Context) error {
		var err error
		lb, _, err = l.c.client.LoadBalancers.Create(ctx, req)
		return err
	}, cloudapi.NotIdempotent())
	if err != nil {
		return nil, fmt.Errorf("creating load balancer %s: %w", req.Name, err)
	}
	klog.InfoS("Created load balancer", "service", klog.KObj(svc), "loadBalancer", lb.ID, "name", lb.Name)
	return lb, nil
}

func (l *loadBalancers) update(ctx context.Context, id string, req *godo.LoadBalancerRequest) (*godo.LoadBalancer, error) {
	var lb *godo.LoadBalancer
	err := l.c.api.Do(ctx, "load_balancers.update", func(ctx context.Context) error {
		var err error
		lb, _, err = l.c.client.LoadBalancers.Update(ctx, id, req)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("updating load balancer %s: %w", id, err)
	}
	return lb, nil
}

// record puts the LB's ID and type on the Service, as the DigitalOcean
// CCM does: found by ID even if renamed, and the type never changes under
// the Service when the default does.
func (l *loadBalancers) record(ctx context.Context, svc *v1.Service, lb *godo.LoadBalancer) error {
	want := map[string]string{}
	if svc.Annotations[AnnLoadBalancerID] != lb.ID {
		want[AnnLoadBalancerID] = lb.ID
	}
	if t := cmp.Or(lb.Type, typeRegional); svc.Annotations[AnnType] != t {
		want[AnnType] = t
	}
	if len(want) == 0 {
		return nil
	}
	if err := l.annotate(ctx, svc, want); err != nil {
		return fmt.Errorf("recording load balancer %s on Service %s/%s: %w", lb.ID, svc.Namespace, svc.Name, err)
	}
	return nil
}

// annotate sets annotations on the Service (a merge patch: nothing else
// on it is touched).
func (l *loadBalancers) annotate(ctx context.Context, svc *v1.Service, kv map[string]string) error {
	kube, err := l.client()
	if err != nil {
		return err
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": kv}})
	_, err = kube.CoreV1().Services(svc.Namespace).Patch(ctx, svc.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "polyccm"})
	return err
}

// region is where the LB lives: the config's region if set, else the one
// region the nodes are in. DigitalOcean load balancers are regional.
func (l *loadBalancers) region(nodes []*v1.Node) (string, error) {
	if l.c.cfg.Region != "" {
		return l.c.cfg.Region, nil
	}
	seen := map[string]bool{}
	var regions []string
	for _, n := range nodes {
		if r := n.Labels[v1.LabelTopologyRegion]; r != "" && !seen[r] {
			seen[r] = true
			regions = append(regions, r)
		}
	}
	sort.Strings(regions)
	switch len(regions) {
	case 0:
		return "", errors.New("no node has a topology.kubernetes.io/region label yet; set drivers.digitalocean.region")
	case 1:
		return regions[0], nil
	}
	return "", fmt.Errorf("the nodes are in regions %s and a load balancer serves one region; set drivers.digitalocean.region", strings.Join(regions, ", "))
}

// inRegion drops nodes labelled with another region: a load balancer
// cannot target droplets outside its own.
func inRegion(nodes []*v1.Node, region string) []*v1.Node {
	var out []*v1.Node
	for _, n := range nodes {
		if r := n.Labels[v1.LabelTopologyRegion]; r == "" || r == region {
			out = append(out, n)
		}
	}
	return out
}

// tags are the DigitalOcean CCM's cluster tag, k8s:<clusterID>, when a
// cluster ID is configured. The API takes tags only when a load balancer
// is made; the tag task (tags.go) puts the tag on older ones.
func (l *loadBalancers) tags() []string {
	if l.c.cfg.ClusterID == "" {
		return nil
	}
	return []string{clusterTag(l.c.cfg.ClusterID)}
}

// clusterTag is the DigitalOcean CCM's buildK8sTag.
func clusterTag(id string) string { return "k8s:" + id }
