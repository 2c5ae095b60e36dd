package gce

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	computev1 "google.golang.org/api/compute/v1"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/annotations"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/lbtargets"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// targetPoolChunk is how many instances one addInstance/removeInstance
// call carries.
const targetPoolChunk = 1000

// targetPoolInsertLimit is how many instances a target pool can be created
// with (kubernetes/kubernetes#27829); the rest are added after.
const targetPoolInsertLimit = 200

// loadBalancers implements cloudprovider.LoadBalancer with GCE passthrough
// load balancers. Every resource is named with the cluster prefix, and
// only such resources are changed or deleted.
type loadBalancers struct {
	c   *Cloud
	own *loadbalancers.Ownership
}

var _ cloudprovider.LoadBalancer = (*loadBalancers)(nil)

// LoadBalancer returns the load balancer implementation.
func (c *Cloud) LoadBalancer() cloudprovider.LoadBalancer { return c.lbs }

func (l *loadBalancers) GetLoadBalancerName(_ context.Context, _ string, svc *v1.Service) string {
	return l.c.lbName(svc)
}

// GetLoadBalancer reports the forwarding rule's address. Exists is true
// while anything made for the Service is left, because the service
// controller calls EnsureLoadBalancerDeleted only then: a half-deleted load
// balancer must still be cleaned up.
func (l *loadBalancers) GetLoadBalancer(ctx context.Context, _ string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	cl, env, err := l.setup(ctx)
	if err != nil {
		return nil, false, err
	}
	base := l.c.lbName(svc)
	fr, err := l.getForwardingRule(ctx, cl, env, base)
	if err != nil {
		return nil, false, err
	}
	if fr != nil {
		return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: fr.GetIPAddress()}}}, true, nil
	}
	left, err := l.leftovers(ctx, cl, env, base)
	if err != nil || !left {
		return nil, false, err
	}
	return &v1.LoadBalancerStatus{}, true, nil
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
			_, err := cl.regionHealth.Get(ctx, &computepb.GetRegionHealthCheckRequest{Project: env.project, Region: env.region, HealthCheck: base + "-hc"})
			return err
		},
		func(ctx context.Context) error {
			_, err := cl.httpHealth.Get(env.project, base+"-hc").Context(ctx).Do()
			return err
		},
		func(ctx context.Context) error {
			_, err := cl.firewalls.Get(ctx, &computepb.GetFirewallRequest{Project: env.project, Firewall: base + "-fw"})
			return err
		},
		func(ctx context.Context) error {
			_, err := cl.firewalls.Get(ctx, &computepb.GetFirewallRequest{Project: env.project, Firewall: base + "-hcfw"})
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

func (l *loadBalancers) setup(ctx context.Context) (*clients, *environment, error) {
	cl, err := l.c.client(ctx)
	if err != nil {
		return nil, nil, err
	}
	env, err := l.c.environ(ctx)
	if err != nil {
		return nil, nil, err
	}
	return cl, env, nil
}

// UpdateLoadBalancer follows node changes; it never creates a load
// balancer (the node sync may run while the Service is being deleted).
func (l *loadBalancers) UpdateLoadBalancer(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) error {
	if svc.DeletionTimestamp != nil {
		return nil
	}
	_, err := l.ensure(ctx, svc, nodes, true)
	return err
}

// EnsureLoadBalancer creates or converges the Service's load balancer.
// Invalid settings change nothing; a change GCE is still making returns a
// RetryError instead of holding the worker.
func (l *loadBalancers) EnsureLoadBalancer(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	return l.ensure(ctx, svc, nodes, false)
}

func (l *loadBalancers) ensure(ctx context.Context, svc *v1.Service, nodes []*v1.Node, update bool) (*v1.LoadBalancerStatus, error) {
	a := LBAnnotations.Parse(svc)
	spec := l.c.desiredLB(svc, a, l.c.cfg.Subnetwork)
	if err := a.Err(); err != nil {
		if inv, ok := errors.AsType[*annotations.InvalidError](err); ok {
			inv.Record(l.c.deps.Recorder, svc)
		}
		return nil, err
	}
	cl, env, err := l.setup(ctx)
	if err != nil {
		return nil, err
	}
	// One read of the rule serves the pass: it shows a scheme switch, and
	// ensureForwardingRule starts from it.
	fr, err := l.getForwardingRule(ctx, cl, env, spec.base)
	if err != nil {
		return nil, err
	}
	if fr != nil {
		if _, err := l.own.Check(ctx, svc, l.resource(fr.GetName(), fr.GetDescription(), fr.GetIPAddress())); err != nil {
			return nil, err
		}
	}
	if spec.ip != "" {
		if err := l.checkAddress(ctx, cl, env, svc, spec, fr); err != nil {
			return nil, err
		}
	}
	switched := fr == nil || !strings.EqualFold(fr.GetLoadBalancingScheme(), spec.scheme())
	// The cluster's instance groups are shared by its internal load
	// balancers, not part of this one: a node update makes the group of a
	// zone that gained its first node.
	groupCtx := ctx
	switch {
	case update && switched:
		// Nothing to update, or a switch EnsureLoadBalancer makes: here
		// the rule could be deleted but not made again.
		return nil, nil
	case update:
		ctx = cloudapi.WithoutCreates(ctx)
	case switched:
		if err := l.deleteOtherScheme(ctx, cl, env, spec, fr); err != nil {
			l.recordOperationError(svc, err)
			return nil, err
		}
		fr = nil
	}
	byZone, skipped := nodeInstances(nodes, env.project)
	if len(skipped) > 0 {
		klog.V(2).InfoS("Nodes without a GCE providerID are not load balancer backends yet", "service", klog.KObj(svc), "nodes", skipped)
	}
	var ip string
	if spec.internal {
		ip, err = l.ensureInternal(ctx, groupCtx, cl, env, spec, byZone, fr)
	} else {
		ip, err = l.ensureExternal(ctx, cl, env, spec, byZone, fr)
	}
	if errors.Is(err, cloudapi.ErrCreateSkipped) {
		return nil, nil // deleted meanwhile: nothing to update
	}
	if err != nil {
		l.recordOperationError(svc, err)
		return nil, err
	}
	return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{IP: ip}}}, nil
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
	refs, skipped := lbtargets.Collect(nodes, func(providerID string) (instanceRef, error) {
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

func networkURL(env *environment) string {
	return "projects/" + env.project + "/global/networks/" + env.network
}

// deleteOtherScheme deletes what only the other scheme's load balancer of
// the Service uses, so that a Service whose type changed leaves nothing
// behind. rule is the Service's forwarding rule, if any (then of the other
// scheme): it goes first, as GCE refuses to delete a target pool or backend
// service a rule uses. Without a rule the rest is deleted all the same, in
// case a pass stopped between the rule and the rest. The firewall rules
// are the same for both schemes and stay.
func (l *loadBalancers) deleteOtherScheme(ctx context.Context, cl *clients, env *environment, spec *lbSpec, rule *computepb.ForwardingRule) error {
	d := l.deleter(cl, env, spec.base)
	var steps []func(context.Context) error
	if rule != nil {
		klog.InfoS("Load balancer scheme changed: deleting the old load balancer", "service", spec.service, "from", rule.GetLoadBalancingScheme(), "to", spec.scheme())
		steps = append(steps, d.forwardingRule)
	}
	if spec.internal {
		steps = append(steps, d.targetPool, d.httpHealthCheck)
	} else {
		steps = append(steps, d.backendService, d.regionHealthCheck)
	}
	if err := runSteps(ctx, steps); err != nil {
		return err
	}
	if spec.internal {
		return nil
	}
	return l.pruneInstanceGroups(ctx, cl, env)
}

func (l *loadBalancers) ensureExternal(ctx context.Context, cl *clients, env *environment, spec *lbSpec, byZone map[string][]string, cur *computepb.ForwardingRule) (string, error) {
	hc, err := l.ensureHTTPHealthCheck(ctx, cl, env, spec)
	if err != nil {
		return "", err
	}
	pool, err := l.ensureTargetPool(ctx, cl, env, spec, hc, byZone)
	if err != nil {
		return "", err
	}
	if err := l.ensureFirewalls(ctx, cl, env, spec); err != nil {
		return "", err
	}
	want := &computepb.ForwardingRule{
		Name:                &spec.base,
		Description:         ptr(description(spec)),
		IPProtocol:          &spec.protocol,
		Target:              &pool,
		LoadBalancingScheme: ptr(spec.scheme()),
		NetworkTier:         &spec.tier,
	}
	return l.ensureForwardingRule(ctx, cl, env, spec, want, cur)
}

func description(spec *lbSpec) string {
	return fmt.Sprintf(`{"kubernetes.io/service-name":%q,"managed-by":"polyccm"}`, spec.service)
}

// resource is what the ownership rule knows of one of the Service's
// resources, found by the name polyccm derives from the cluster and the
// Service UID: the cluster prefix is this cluster's mark, and the
// description names the Service.
func (l *loadBalancers) resource(name, desc, ip string) loadbalancers.Resource {
	var d map[string]string
	_ = json.Unmarshal([]byte(desc), &d) // another tool's description names no Service
	return loadbalancers.Resource{
		Kind: "forwarding rule", ID: name, Name: name, Addresses: []string{ip},
		Marks: true, OurCluster: strings.HasPrefix(name, l.c.prefix),
		Service: d["kubernetes.io/service-name"],
		UIDMark: loadbalancers.UIDMark(strings.TrimPrefix(name, l.c.prefix)),
	}
}

// checkAddress refuses spec.loadBalancerIP when another Service's load
// balancer has that address (its status shows it), or when the reserved
// address is used by forwarding rules that are not this Service's (another
// cluster's, or made by hand): GCE lets rules on different ports share a
// static address, so the Service would serve on someone else's address.
func (l *loadBalancers) checkAddress(ctx context.Context, cl *clients, env *environment, svc *v1.Service, spec *lbSpec, cur *computepb.ForwardingRule) error {
	if err := l.own.CheckAddresses(ctx, svc, "spec.loadBalancerIP", []string{spec.ip}, loadbalancers.StatusAddresses); err != nil {
		return err
	}
	if cur != nil && cur.GetIPAddress() == spec.ip {
		return nil // already the rule's own
	}
	addrs, err := pages(ctx, l.c, "addresses.list", func(ctx context.Context, token string) ([]*computepb.Address, string, error) {
		it := cl.addresses.List(ctx, &computepb.ListAddressesRequest{Project: env.project, Region: env.region, Filter: ptr(fmt.Sprintf("address = %q", spec.ip))})
		return nextPage[*computepb.Address](it, token)
	})
	if err != nil {
		return err
	}
	for _, a := range addrs {
		for _, u := range a.GetUsers() {
			name := lastSegment(u)
			if name == spec.base {
				continue
			}
			// A rule of a Service of the same namespace may share it (a TCP
			// and a UDP Service on one address); anything else may not.
			if strings.HasPrefix(name, l.c.prefix) {
				o, err := l.own.ServiceByUIDMark(ctx, loadbalancers.UIDMark(strings.TrimPrefix(name, l.c.prefix)))
				if err != nil {
					return err
				}
				if o != nil && o.Namespace == svc.Namespace {
					continue
				}
			}
			return l.own.Refuse(svc, "GCE address "+spec.ip, fmt.Sprintf("the reserved address %s is used by forwarding rule %s, which is not this Service's", a.GetName(), name), "change spec.loadBalancerIP to an address no other load balancer uses")
		}
	}
	return nil
}

// ensureHTTPHealthCheck keeps the legacy HTTP health check a target pool
// uses on kube-proxy's health port.
func (l *loadBalancers) ensureHTTPHealthCheck(ctx context.Context, cl *clients, env *environment, spec *lbSpec) (string, error) {
	name := spec.base + "-hc"
	want := &computev1.HttpHealthCheck{
		Name: name, Description: description(spec), Port: int64(spec.hcPort), RequestPath: spec.hcPath,
		CheckIntervalSec: 8, TimeoutSec: 1, HealthyThreshold: 1, UnhealthyThreshold: 3,
	}
	cur, err := call(ctx, l.c, "httpHealthChecks.get", func(ctx context.Context) (*computev1.HttpHealthCheck, error) {
		return cl.httpHealth.Get(env.project, name).Context(ctx).Do()
	})
	switch {
	case cloudapi.IsNotFound(err):
		rid := newRequestID()
		op, err := call(ctx, l.c, "httpHealthChecks.insert", func(ctx context.Context) (*computev1.Operation, error) {
			return cl.httpHealth.Insert(env.project, want).RequestId(rid).Context(ctx).Do()
		}, cloudapi.Creates())
		if err != nil && cloudapi.KindOf(err) != cloudapi.KindExists {
			return "", fmt.Errorf("creating health check %s: %w", name, err)
		}
		if err == nil {
			if err := l.c.wait(ctx, cl, globalOperation(env.project, op.Name), "creating health check "+name); err != nil {
				return "", err
			}
		}
	case err != nil:
		return "", err
	case cur.Port != want.Port || cur.RequestPath != want.RequestPath:
		rid := newRequestID()
		op, err := call(ctx, l.c, "httpHealthChecks.update", func(ctx context.Context) (*computev1.Operation, error) {
			return cl.httpHealth.Update(env.project, name, want).RequestId(rid).Context(ctx).Do()
		})
		if err != nil {
			return "", fmt.Errorf("updating health check %s: %w", name, err)
		}
		if err := l.c.wait(ctx, cl, globalOperation(env.project, op.Name), "updating health check "+name); err != nil {
			return "", err
		}
	}
	return "projects/" + env.project + "/global/httpHealthChecks/" + name, nil
}

// ensureTargetPool keeps the pool of node instances, changing membership
// in chunks (the API limits instances per call).
func (l *loadBalancers) ensureTargetPool(ctx context.Context, cl *clients, env *environment, spec *lbSpec, hc string, byZone map[string][]string) (string, error) {
	want := map[string]bool{}
	for zone, names := range byZone {
		for _, n := range names {
			want[instanceURL(env.project, zone, n)] = true
		}
	}
	url := "projects/" + env.project + "/regions/" + env.region + "/targetPools/" + spec.base
	get := func(ctx context.Context) (*computepb.TargetPool, error) {
		return cl.targetPools.Get(ctx, &computepb.GetTargetPoolRequest{Project: env.project, Region: env.region, TargetPool: spec.base})
	}
	cur, err := call(ctx, l.c, "targetPools.get", get)
	if cloudapi.IsNotFound(err) {
		members := slices.Sorted(maps.Keys(want))
		pool := &computepb.TargetPool{Name: &spec.base, Description: ptr(description(spec)), HealthChecks: []string{hc},
			Instances: members[:min(len(members), targetPoolInsertLimit)]}
		if err := l.c.change(ctx, cl, "targetPools.insert", "creating target pool "+spec.base, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.targetPools.Insert(ctx, &computepb.InsertTargetPoolRequest{RequestId: rid, Project: env.project, Region: env.region, TargetPoolResource: pool})
		}); err != nil {
			return "", err
		}
		if len(members) <= targetPoolInsertLimit {
			return url, nil
		}
		// The other members are added like any new ones.
		cur, err = call(ctx, l.c, "targetPools.get", get)
	}
	if err != nil {
		return "", err
	}
	have := map[string]bool{}
	for _, u := range cur.GetInstances() {
		have[shortURL(u)] = true
	}
	var add, remove []string
	for u := range want {
		if !have[u] {
			add = append(add, u)
		}
	}
	for u := range have {
		if !want[u] {
			remove = append(remove, u)
		}
	}
	sort.Strings(add)
	sort.Strings(remove)
	for chunk := range slices.Chunk(add, targetPoolChunk) {
		refs := refsOf(chunk)
		if err := l.c.change(ctx, cl, "targetPools.addInstance", "adding instances to target pool "+spec.base, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.targetPools.AddInstance(ctx, &computepb.AddInstanceTargetPoolRequest{RequestId: rid, Project: env.project, Region: env.region, TargetPool: spec.base,
				TargetPoolsAddInstanceRequestResource: &computepb.TargetPoolsAddInstanceRequest{Instances: refs}})
		}); err != nil {
			return "", err
		}
	}
	for chunk := range slices.Chunk(remove, targetPoolChunk) {
		refs := refsOf(chunk)
		if err := l.c.change(ctx, cl, "targetPools.removeInstance", "removing instances from target pool "+spec.base, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.targetPools.RemoveInstance(ctx, &computepb.RemoveInstanceTargetPoolRequest{RequestId: rid, Project: env.project, Region: env.region, TargetPool: spec.base,
				TargetPoolsRemoveInstanceRequestResource: &computepb.TargetPoolsRemoveInstanceRequest{Instances: refs}})
		}); err != nil {
			return "", err
		}
	}
	if !slices.ContainsFunc(cur.GetHealthChecks(), func(h string) bool { return shortURL(h) == hc }) {
		if err := l.c.change(ctx, cl, "targetPools.addHealthCheck", "attaching the health check to target pool "+spec.base, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.targetPools.AddHealthCheck(ctx, &computepb.AddHealthCheckTargetPoolRequest{RequestId: rid, Project: env.project, Region: env.region, TargetPool: spec.base,
				TargetPoolsAddHealthCheckRequestResource: &computepb.TargetPoolsAddHealthCheckRequest{HealthChecks: []*computepb.HealthCheckReference{{HealthCheck: &hc}}}})
		}); err != nil {
			return "", err
		}
	}
	return url, nil
}

func refsOf(urls []string) []*computepb.InstanceReference {
	out := make([]*computepb.InstanceReference, len(urls))
	for i, u := range urls {
		out[i] = &computepb.InstanceReference{Instance: ptr(u)}
	}
	return out
}

// ensureFirewalls opens the Service ports to its source ranges and the
// health-check port to Google's health checkers, on the nodes' tags.
func (l *loadBalancers) ensureFirewalls(ctx context.Context, cl *clients, env *environment, spec *lbSpec) error {
	if len(env.nodeTags) == 0 {
		return errors.New("gce: the nodes' network tags are unknown; set drivers.gce.nodeTags so firewall rules reach them")
	}
	proto := strings.ToLower(spec.protocol)
	rules := []*computepb.Firewall{
		{
			Name: ptr(spec.base + "-fw"), Description: ptr(description(spec)), Network: ptr(networkURL(env)),
			Direction: ptr("INGRESS"), Priority: ptr(int32(1000)), SourceRanges: spec.sources, TargetTags: env.nodeTags,
			Allowed: []*computepb.Allowed{{IPProtocol: &proto, Ports: spec.firewallPorts()}},
		},
		{
			Name: ptr(spec.base + "-hcfw"), Description: ptr(description(spec)), Network: ptr(networkURL(env)),
			Direction: ptr("INGRESS"), Priority: ptr(int32(1000)), SourceRanges: healthCheckRanges, TargetTags: env.nodeTags,
			Allowed: []*computepb.Allowed{{IPProtocol: ptr("tcp"), Ports: []string{strconv.Itoa(int(spec.hcPort))}}},
		},
	}
	for _, want := range rules {
		cur, err := call(ctx, l.c, "firewalls.get", func(ctx context.Context) (*computepb.Firewall, error) {
			return cl.firewalls.Get(ctx, &computepb.GetFirewallRequest{Project: env.project, Firewall: want.GetName()})
		})
		switch {
		case cloudapi.IsNotFound(err):
			if err := l.c.change(ctx, cl, "firewalls.insert", "creating firewall rule "+want.GetName(), func(ctx context.Context, rid *string) (*compute.Operation, error) {
				return cl.firewalls.Insert(ctx, &computepb.InsertFirewallRequest{RequestId: rid, Project: env.project, FirewallResource: want})
			}); err != nil {
				return err
			}
		case err != nil:
			return err
		case !sameFirewall(cur, want):
			if err := l.c.change(ctx, cl, "firewalls.update", "updating firewall rule "+want.GetName(), func(ctx context.Context, rid *string) (*compute.Operation, error) {
				return cl.firewalls.Update(ctx, &computepb.UpdateFirewallRequest{RequestId: rid, Project: env.project, Firewall: want.GetName(), FirewallResource: want})
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

func sameFirewall(cur, want *computepb.Firewall) bool {
	sortedEq := func(a, b []string) bool {
		a, b = slices.Clone(a), slices.Clone(b)
		slices.Sort(a)
		slices.Sort(b)
		return slices.Equal(a, b)
	}
	if !sortedEq(cur.GetSourceRanges(), want.GetSourceRanges()) || !sortedEq(cur.GetTargetTags(), want.GetTargetTags()) || len(cur.GetAllowed()) != len(want.GetAllowed()) {
		return false
	}
	for i := range want.GetAllowed() {
		c, w := cur.GetAllowed()[i], want.GetAllowed()[i]
		if !strings.EqualFold(c.GetIPProtocol(), w.GetIPProtocol()) || !sortedEq(c.GetPorts(), w.GetPorts()) {
			return false
		}
	}
	return true
}

func (l *loadBalancers) getForwardingRule(ctx context.Context, cl *clients, env *environment, name string) (*computepb.ForwardingRule, error) {
	fr, err := call(ctx, l.c, "forwardingRules.get", func(ctx context.Context) (*computepb.ForwardingRule, error) {
		return cl.forwardingRules.Get(ctx, &computepb.GetForwardingRuleRequest{Project: env.project, Region: env.region, ForwardingRule: name})
	})
	if cloudapi.IsNotFound(err) {
		return nil, nil
	}
	return fr, err
}

// ensureForwardingRule creates the rule, or recreates it when something
// it cannot change in place differs; cur is the rule as the pass began,
// nil if there was none. It returns the rule's address.
func (l *loadBalancers) ensureForwardingRule(ctx context.Context, cl *clients, env *environment, spec *lbSpec, want, cur *computepb.ForwardingRule) (string, error) {
	ports, portRange, all := spec.forwardingPorts()
	want.Ports, want.AllPorts = ports, nil
	if portRange != "" {
		want.PortRange = &portRange
	}
	if all {
		want.AllPorts = ptr(true)
	}
	if spec.ip != "" {
		want.IPAddress = &spec.ip
	}
	var err error
	if cur != nil && !sameForwardingRule(cur, want) {
		klog.InfoS("Recreating forwarding rule", "service", spec.service, "name", spec.base)
		if err := l.deleter(cl, env, spec.base).forwardingRule(ctx); err != nil {
			return "", err
		}
		cur = nil
	}
	if cur == nil {
		if err := l.c.change(ctx, cl, "forwardingRules.insert", "creating forwarding rule "+spec.base, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.forwardingRules.Insert(ctx, &computepb.InsertForwardingRuleRequest{RequestId: rid, Project: env.project, Region: env.region, ForwardingRuleResource: want})
		}); err != nil {
			return "", err
		}
		if cur, err = l.getForwardingRule(ctx, cl, env, spec.base); err != nil {
			return "", err
		}
		if cur == nil {
			return "", fmt.Errorf("forwarding rule %s was created but is not there yet", spec.base)
		}
		klog.InfoS("Created forwarding rule", "service", spec.service, "name", spec.base, "ip", cur.GetIPAddress())
	}
	return cur.GetIPAddress(), nil
}

func sameForwardingRule(cur, want *computepb.ForwardingRule) bool {
	if want.IPAddress != nil && cur.GetIPAddress() != want.GetIPAddress() {
		return false
	}
	tier := func(s string) string {
		if s == "" {
			return "PREMIUM"
		}
		return s
	}
	return cur.GetIPProtocol() == want.GetIPProtocol() &&
		portsOf(cur) == portsOf(want) &&
		shortURL(cur.GetTarget()) == shortURL(want.GetTarget()) &&
		shortURL(cur.GetBackendService()) == shortURL(want.GetBackendService()) &&
		strings.EqualFold(cur.GetLoadBalancingScheme(), want.GetLoadBalancingScheme()) &&
		(want.NetworkTier == nil || tier(cur.GetNetworkTier()) == want.GetNetworkTier()) &&
		lastSegment(cur.GetSubnetwork()) == lastSegment(want.GetSubnetwork()) &&
		cur.GetAllowGlobalAccess() == want.GetAllowGlobalAccess()
}

// portsOf describes a rule's ports whichever way they were given: a list,
// a range ("80-80" is port 80) or all ports.
func portsOf(fr *computepb.ForwardingRule) string {
	switch {
	case fr.GetAllPorts():
		return "all"
	case len(fr.GetPorts()) > 0:
		ps := slices.Clone(fr.GetPorts())
		slices.Sort(ps)
		return strings.Join(ps, ",")
	}
	lo, hi, ok := strings.Cut(fr.GetPortRange(), "-")
	if !ok || lo == hi {
		return lo
	}
	return lo + "-" + hi
}

// ensureInternal: a regional health check, one unmanaged instance group
// per zone (shared by the cluster's internal load balancers, since an
// instance can be in only one load-balanced group), a backend service and
// an internal forwarding rule in the subnetwork.
func (l *loadBalancers) ensureInternal(ctx, groupCtx context.Context, cl *clients, env *environment, spec *lbSpec, byZone map[string][]string, cur *computepb.ForwardingRule) (string, error) {
	hc, err := l.ensureRegionHealthCheck(ctx, cl, env, spec)
	if err != nil {
		return "", err
	}
	var groups []string
	for _, zone := range slices.Sorted(maps.Keys(byZone)) {
		g, err := l.ensureInstanceGroup(groupCtx, cl, env, zone, byZone[zone])
		if err != nil {
			return "", err
		}
		groups = append(groups, g)
	}
	bs, err := l.ensureBackendService(ctx, cl, env, spec, hc, groups)
	if err != nil {
		return "", err
	}
	if err := l.ensureFirewalls(ctx, cl, env, spec); err != nil {
		return "", err
	}
	want := &computepb.ForwardingRule{
		Name:                &spec.base,
		Description:         ptr(description(spec)),
		IPProtocol:          &spec.protocol,
		BackendService:      &bs,
		LoadBalancingScheme: ptr(spec.scheme()),
		Network:             ptr(networkURL(env)),
		Subnetwork:          ptr("projects/" + env.project + "/regions/" + env.region + "/subnetworks/" + spec.subnetwork),
	}
	if spec.globalAccess {
		want.AllowGlobalAccess = ptr(true)
	}
	return l.ensureForwardingRule(ctx, cl, env, spec, want, cur)
}

func (l *loadBalancers) ensureRegionHealthCheck(ctx context.Context, cl *clients, env *environment, spec *lbSpec) (string, error) {
	name := spec.base + "-hc"
	want := &computepb.HealthCheck{
		Name: &name, Description: ptr(description(spec)), Type: ptr("HTTP"),
		CheckIntervalSec: ptr(int32(8)), TimeoutSec: ptr(int32(1)), HealthyThreshold: ptr(int32(1)), UnhealthyThreshold: ptr(int32(3)),
		HttpHealthCheck: &computepb.HTTPHealthCheck{Port: &spec.hcPort, RequestPath: &spec.hcPath},
	}
	cur, err := call(ctx, l.c, "regionHealthChecks.get", func(ctx context.Context) (*computepb.HealthCheck, error) {
		return cl.regionHealth.Get(ctx, &computepb.GetRegionHealthCheckRequest{Project: env.project, Region: env.region, HealthCheck: name})
	})
	switch {
	case cloudapi.IsNotFound(err):
		err = l.c.change(ctx, cl, "regionHealthChecks.insert", "creating health check "+name, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.regionHealth.Insert(ctx, &computepb.InsertRegionHealthCheckRequest{RequestId: rid, Project: env.project, Region: env.region, HealthCheckResource: want})
		})
	case err == nil && (cur.GetHttpHealthCheck().GetPort() != spec.hcPort || cur.GetHttpHealthCheck().GetRequestPath() != spec.hcPath):
		err = l.c.change(ctx, cl, "regionHealthChecks.update", "updating health check "+name, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.regionHealth.Update(ctx, &computepb.UpdateRegionHealthCheckRequest{RequestId: rid, Project: env.project, Region: env.region, HealthCheck: name, HealthCheckResource: want})
		})
	}
	if err != nil {
		return "", err
	}
	return "projects/" + env.project + "/regions/" + env.region + "/healthChecks/" + name, nil
}

func (c *Cloud) instanceGroupName() string { return c.prefix + "ig" }

func (l *loadBalancers) ensureInstanceGroup(ctx context.Context, cl *clients, env *environment, zone string, names []string) (string, error) {
	name := l.c.instanceGroupName()
	_, err := call(ctx, l.c, "instanceGroups.get", func(ctx context.Context) (*computepb.InstanceGroup, error) {
		return cl.instanceGroups.Get(ctx, &computepb.GetInstanceGroupRequest{Project: env.project, Zone: zone, InstanceGroup: name})
	})
	if cloudapi.IsNotFound(err) {
		g := &computepb.InstanceGroup{Name: &name, Description: ptr(`{"managed-by":"polyccm"}`), Network: ptr(networkURL(env))}
		err = l.c.change(ctx, cl, "instanceGroups.insert", "creating instance group "+name+" in "+zone, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.instanceGroups.Insert(ctx, &computepb.InsertInstanceGroupRequest{RequestId: rid, Project: env.project, Zone: zone, InstanceGroupResource: g})
		})
	}
	if err != nil {
		return "", err
	}
	have, err := pages(ctx, l.c, "instanceGroups.listInstances", func(ctx context.Context, token string) ([]*computepb.InstanceWithNamedPorts, string, error) {
		it := cl.instanceGroups.ListInstances(ctx, &computepb.ListInstancesInstanceGroupsRequest{Project: env.project, Zone: zone, InstanceGroup: name,
			InstanceGroupsListInstancesRequestResource: &computepb.InstanceGroupsListInstancesRequest{}})
		return nextPage[*computepb.InstanceWithNamedPorts](it, token)
	})
	if err != nil {
		return "", err
	}
	haveSet := map[string]bool{}
	for _, h := range have {
		haveSet[shortURL(h.GetInstance())] = true
	}
	var add, remove []string
	wantSet := map[string]bool{}
	for _, n := range names {
		u := instanceURL(env.project, zone, n)
		wantSet[u] = true
		if !haveSet[u] {
			add = append(add, u)
		}
	}
	for u := range haveSet {
		if !wantSet[u] {
			remove = append(remove, u)
		}
	}
	sort.Strings(remove)
	for chunk := range slices.Chunk(add, targetPoolChunk) {
		refs := refsOf(chunk)
		if err := l.c.change(ctx, cl, "instanceGroups.addInstances", "adding instances to "+name+" in "+zone, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.instanceGroups.AddInstances(ctx, &computepb.AddInstancesInstanceGroupRequest{RequestId: rid, Project: env.project, Zone: zone, InstanceGroup: name,
				InstanceGroupsAddInstancesRequestResource: &computepb.InstanceGroupsAddInstancesRequest{Instances: refs}})
		}); err != nil {
			return "", err
		}
	}
	for chunk := range slices.Chunk(remove, targetPoolChunk) {
		refs := refsOf(chunk)
		if err := l.c.change(ctx, cl, "instanceGroups.removeInstances", "removing instances from "+name+" in "+zone, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.instanceGroups.RemoveInstances(ctx, &computepb.RemoveInstancesInstanceGroupRequest{RequestId: rid, Project: env.project, Zone: zone, InstanceGroup: name,
				InstanceGroupsRemoveInstancesRequestResource: &computepb.InstanceGroupsRemoveInstancesRequest{Instances: refs}})
		}); err != nil {
			return "", err
		}
	}
	return "projects/" + env.project + "/zones/" + zone + "/instanceGroups/" + name, nil
}

func (l *loadBalancers) ensureBackendService(ctx context.Context, cl *clients, env *environment, spec *lbSpec, hc string, groups []string) (string, error) {
	var backends []*computepb.Backend
	for _, g := range groups {
		backends = append(backends, &computepb.Backend{Group: ptr(g), BalancingMode: ptr("CONNECTION")})
	}
	want := &computepb.BackendService{
		Name: &spec.base, Description: ptr(description(spec)), LoadBalancingScheme: ptr("INTERNAL"),
		Protocol: &spec.protocol, HealthChecks: []string{hc}, Backends: backends,
	}
	cur, err := call(ctx, l.c, "regionBackendServices.get", func(ctx context.Context) (*computepb.BackendService, error) {
		return cl.backendServices.Get(ctx, &computepb.GetRegionBackendServiceRequest{Project: env.project, Region: env.region, BackendService: spec.base})
	})
	switch {
	case cloudapi.IsNotFound(err):
		err = l.c.change(ctx, cl, "regionBackendServices.insert", "creating backend service "+spec.base, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.backendServices.Insert(ctx, &computepb.InsertRegionBackendServiceRequest{RequestId: rid, Project: env.project, Region: env.region, BackendServiceResource: want})
		})
	case err == nil && !sameBackends(cur, want):
		// Updates need the current fingerprint (optimistic locking).
		want.Fingerprint = cur.Fingerprint
		err = l.c.change(ctx, cl, "regionBackendServices.update", "updating backend service "+spec.base, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return cl.backendServices.Update(ctx, &computepb.UpdateRegionBackendServiceRequest{RequestId: rid, Project: env.project, Region: env.region, BackendService: spec.base, BackendServiceResource: want})
		})
	}
	if err != nil {
		return "", err
	}
	return "projects/" + env.project + "/regions/" + env.region + "/backendServices/" + spec.base, nil
}

func sameBackends(cur, want *computepb.BackendService) bool {
	groups := func(bs *computepb.BackendService) []string {
		var out []string
		for _, b := range bs.GetBackends() {
			out = append(out, shortURL(b.GetGroup()))
		}
		slices.Sort(out)
		return out
	}
	return cur.GetProtocol() == want.GetProtocol() && slices.Equal(groups(cur), groups(want)) &&
		len(cur.GetHealthChecks()) == 1 && shortURL(cur.GetHealthChecks()[0]) == want.GetHealthChecks()[0]
}

// EnsureLoadBalancerDeleted deletes everything made for the Service, in
// dependency order; a resource already gone counts as deleted, and any
// other doubt keeps the finalizer.
func (l *loadBalancers) EnsureLoadBalancerDeleted(ctx context.Context, _ string, svc *v1.Service) error {
	cl, env, err := l.setup(ctx)
	if err != nil {
		return err
	}
	base := l.c.lbName(svc)
	fr, err := l.getForwardingRule(ctx, cl, env, base)
	if err != nil {
		return err
	}
	if fr != nil {
		// A rule another Service's marks name stays, with what shares
		// its name.
		if ok, err := l.own.CheckDelete(ctx, svc, l.resource(fr.GetName(), fr.GetDescription(), fr.GetIPAddress())); err != nil || !ok {
			return err
		}
	}
	d := l.deleter(cl, env, base)
	steps := []func(context.Context) error{d.forwardingRule, d.targetPool, d.backendService, d.regionHealthCheck, d.firewalls, d.httpHealthCheck}
	if err := runSteps(ctx, steps); err != nil {
		l.recordOperationError(svc, err)
		return err
	}
	return l.pruneInstanceGroups(ctx, cl, env)
}

// runSteps runs deletions in order, stopping at the first failure.
func runSteps(ctx context.Context, steps []func(context.Context) error) error {
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return nil
}

// lbDeleter deletes the resources of the load balancer named base, a kind
// a method, for EnsureLoadBalancerDeleted and for a scheme switch. Each
// returns nil once its resource is gone, already or now.
type lbDeleter struct {
	l    *loadBalancers
	cl   *clients
	env  *environment
	base string
}

func (l *loadBalancers) deleter(cl *clients, env *environment, base string) lbDeleter {
	return lbDeleter{l: l, cl: cl, env: env, base: base}
}

// del runs one delete through change; only a definitive not-found counts
// as done.
func (d lbDeleter) del(ctx context.Context, op, what string, fn func(ctx context.Context, rid *string) (*compute.Operation, error)) error {
	if err := d.l.c.change(ctx, d.cl, op, what, fn); err != nil && !cloudapi.IsNotFound(err) {
		return err
	}
	return nil
}

func (d lbDeleter) forwardingRule(ctx context.Context) error {
	return d.del(ctx, "forwardingRules.delete", "deleting forwarding rule "+d.base, func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return d.cl.forwardingRules.Delete(ctx, &computepb.DeleteForwardingRuleRequest{RequestId: rid, Project: d.env.project, Region: d.env.region, ForwardingRule: d.base})
	})
}

func (d lbDeleter) targetPool(ctx context.Context) error {
	return d.del(ctx, "targetPools.delete", "deleting target pool "+d.base, func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return d.cl.targetPools.Delete(ctx, &computepb.DeleteTargetPoolRequest{RequestId: rid, Project: d.env.project, Region: d.env.region, TargetPool: d.base})
	})
}

func (d lbDeleter) backendService(ctx context.Context) error {
	return d.del(ctx, "regionBackendServices.delete", "deleting backend service "+d.base, func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return d.cl.backendServices.Delete(ctx, &computepb.DeleteRegionBackendServiceRequest{RequestId: rid, Project: d.env.project, Region: d.env.region, BackendService: d.base})
	})
}

func (d lbDeleter) regionHealthCheck(ctx context.Context) error {
	name := d.base + "-hc"
	return d.del(ctx, "regionHealthChecks.delete", "deleting health check "+name, func(ctx context.Context, rid *string) (*compute.Operation, error) {
		return d.cl.regionHealth.Delete(ctx, &computepb.DeleteRegionHealthCheckRequest{RequestId: rid, Project: d.env.project, Region: d.env.region, HealthCheck: name})
	})
}

func (d lbDeleter) firewalls(ctx context.Context) error {
	for _, name := range []string{d.base + "-fw", d.base + "-hcfw"} {
		if err := d.del(ctx, "firewalls.delete", "deleting firewall rule "+name, func(ctx context.Context, rid *string) (*compute.Operation, error) {
			return d.cl.firewalls.Delete(ctx, &computepb.DeleteFirewallRequest{RequestId: rid, Project: d.env.project, Firewall: name})
		}); err != nil {
			return err
		}
	}
	return nil
}

// httpHealthCheck deletes the legacy health check, which comes from the
// discovery-based client.
func (d lbDeleter) httpHealthCheck(ctx context.Context) error {
	name := d.base + "-hc"
	rid := newRequestID()
	op, err := call(ctx, d.l.c, "httpHealthChecks.delete", func(ctx context.Context) (*computev1.Operation, error) {
		return d.cl.httpHealth.Delete(d.env.project, name).RequestId(rid).Context(ctx).Do()
	})
	switch {
	case cloudapi.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("deleting health check %s: %w", name, err)
	}
	return d.l.c.wait(ctx, d.cl, globalOperation(d.env.project, op.Name), "deleting health check "+name)
}

// pruneInstanceGroups deletes the cluster's shared instance groups once no
// internal load balancer of the cluster uses them.
func (l *loadBalancers) pruneInstanceGroups(ctx context.Context, cl *clients, env *environment) error {
	services, err := pages(ctx, l.c, "regionBackendServices.list", func(ctx context.Context, token string) ([]*computepb.BackendService, string, error) {
		it := cl.backendServices.List(ctx, &computepb.ListRegionBackendServicesRequest{Project: env.project, Region: env.region})
		return nextPage[*computepb.BackendService](it, token)
	})
	if err != nil {
		return err
	}
	for _, bs := range services {
		if strings.HasPrefix(bs.GetName(), l.c.prefix) {
			return nil // still in use
		}
	}
	groups, err := pages(ctx, l.c, "instanceGroups.aggregatedList", func(ctx context.Context, token string) ([]compute.InstanceGroupsScopedListPair, string, error) {
		it := cl.instanceGroups.AggregatedList(ctx, &computepb.AggregatedListInstanceGroupsRequest{Project: env.project, Filter: ptr(nameFilter([]string{l.c.instanceGroupName()}))})
		return nextPage[compute.InstanceGroupsScopedListPair](it, token)
	})
	if err != nil {
		return err
	}
	for _, p := range groups {
		zone := strings.TrimPrefix(p.Key, "zones/")
		for _, g := range p.Value.GetInstanceGroups() {
			if g.GetName() != l.c.instanceGroupName() {
				continue
			}
			err := l.c.change(ctx, cl, "instanceGroups.delete", "deleting instance group "+g.GetName()+" in "+zone, func(ctx context.Context, rid *string) (*compute.Operation, error) {
				return cl.instanceGroups.Delete(ctx, &computepb.DeleteInstanceGroupRequest{RequestId: rid, Project: env.project, Zone: zone, InstanceGroup: g.GetName()})
			})
			if err != nil && !cloudapi.IsNotFound(err) {
				return err
			}
		}
	}
	return nil
}
