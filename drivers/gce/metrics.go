package gce

import (
	"context"
	"errors"
	"sync"

	"github.com/googleapis/gax-go/v2/callctx"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// upstreamMetrics are cloud-provider-gcp's API metrics
// (providers/gce/metrics.go), written by core/cloudapi from polyccm's
// calls; docs/metrics.md has the table. Only the calls upstream wraps in
// a metric context are counted: its instance listings, for one, are not.
var upstreamMetrics = []cloudapi.UpstreamFamily{&cloudapi.GCEAPI{
	Requests: map[string]cloudapi.GCERequest{
		"addresses.get":    {Name: "address_get"},
		"addresses.insert": {Name: "address_reserve"},
		"addresses.delete": {Name: "address_delete"},
		"addresses.list":   {Name: "address_list"},

		"forwardingRules.get":    {Name: "forwardingrule_get"},
		"forwardingRules.insert": {Name: "forwardingrule_create"},
		"forwardingRules.delete": {Name: "forwardingrule_delete"},
		"forwardingRules.list":   {Name: "forwardingrule_list"},

		"targetPools.get":            {Name: "targetpool_get"},
		"targetPools.insert":         {Name: "targetpool_create"},
		"targetPools.delete":         {Name: "targetpool_delete"},
		"targetPools.addInstance":    {Name: "targetpool_add_instances"},
		"targetPools.removeInstance": {Name: "targetpool_remove_instances"},

		// Target pools' legacy HTTP health checks, and the internal load
		// balancers' health checks.
		"httpHealthChecks.get":    {Name: "healthcheck_get_legacy"},
		"httpHealthChecks.insert": {Name: "healthcheck_create_legacy"},
		"httpHealthChecks.update": {Name: "healthcheck_update_legacy"},
		"httpHealthChecks.delete": {Name: "healthcheck_delete_legacy"},
		"healthChecks.get":        {Name: "healthcheck_get"},
		"healthChecks.insert":     {Name: "healthcheck_create"},
		"healthChecks.update":     {Name: "healthcheck_update"},
		"healthChecks.delete":     {Name: "healthcheck_delete"},

		"regionBackendServices.get":    {Name: "backendservice_get"},
		"regionBackendServices.insert": {Name: "backendservice_create"},
		"regionBackendServices.update": {Name: "backendservice_update"},
		"regionBackendServices.delete": {Name: "backendservice_delete"},

		"firewalls.get":    {Name: "firewall_get"},
		"firewalls.insert": {Name: "firewall_create"},
		"firewalls.update": {Name: "firewall_update"},
		"firewalls.patch":  {Name: "firewall_Patch"}, // sic: upstream's capital P
		"firewalls.delete": {Name: "firewall_delete"},

		"instanceGroups.get":             {Name: "instancegroup_get"},
		"instanceGroups.insert":          {Name: "instancegroup_create"},
		"instanceGroups.delete":          {Name: "instancegroup_delete"},
		"instanceGroups.listInstances":   {Name: "instancegroup_list_instances"},
		"instanceGroups.addInstances":    {Name: "instancegroup_add_instances"},
		"instanceGroups.removeInstances": {Name: "instancegroup_remove_instances"},

		"instances.get": {Name: "instances_get"},

		"routes.list":   {Name: "routes_list"},
		"routes.insert": {Name: "routes_create"},
		"routes.delete": {Name: "routes_delete"},

		"disks.get":       {Name: "disk_get", ZoneRegion: true},
		"regionDisks.get": {Name: "disk_get"},
	},
	// The List methods of cloud.google.com/go/compute v1.75.0 send their
	// request without the caller's context but with its metadata headers.
	Tag: func(ctx context.Context, header, value string) context.Context {
		return callctx.SetHeaders(ctx, header, value)
	},
}}

// cloud-provider-gcp's L4 load balancer counts
// (providers/gce/gce_loadbalancer_metrics.go): how many internal load
// balancers (by feature) and external ones (by status) this controller
// keeps. Upstream recomputes them every ten minutes, the first time ten
// minutes after start; polyccm keeps them current.
var (
	l4ILBCount = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name:           "number_of_l4_ilbs",
		Help:           "Internal passthrough load balancers of LoadBalancer Services, by feature.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"feature"})
	l4NetLBCount = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Name: "number_of_l4_netlbs",
		Help: "External passthrough (target pool) load balancers of LoadBalancer Services, by status and deny firewall.",
	}, []string{"status", "deny_firewall"})
)

// The features and statuses upstream counts by.
const (
	l4ILBService      = "L4ILBService"
	l4ILBGlobalAccess = "L4ILBGlobalAccess"
	l4ILBCustomSubnet = "L4ILBCustomSubnet"
	l4ILBInSuccess    = "L4ILBInSuccess"
	l4ILBInError      = "L4ILBInError"

	l4StatusSuccess = "Success"
	l4StatusError   = "Error"
)

type ilbState struct{ ok, globalAccess, customSubnet bool }

type netLBState struct{ status, denyFirewall string }

// denyFirewallStatus is upstream's deny_firewall label for an external
// load balancer's sync: IPv4 once the deny rule is made (its
// --enable-l4-deny-firewall, drivers.gce.l4DenyFirewall: enabled),
// DISABLED under its rollback cleanup (cleanup), and empty otherwise,
// which is also polyccm's keep-what-each-Service-has default.
func denyFirewallStatus(mode string, ok bool) string {
	switch {
	case mode == DenyFirewallCleanup:
		return "DISABLED"
	case mode == DenyFirewallEnabled && ok:
		return "IPv4"
	}
	return ""
}

// l4State is the last sync's outcome per Service (namespace/name), as
// upstream's metrics collector keeps it.
var l4State = struct {
	sync.Mutex
	once  sync.Once
	ilb   map[string]ilbState
	netlb map[string]netLBState
}{ilb: map[string]ilbState{}, netlb: map[string]netLBState{}}

// l4Counted is the driver's load balancer with the L4 counts kept: the
// GCE driver's LoadBalancer() hands out this.
type l4Counted struct {
	cloudprovider.LoadBalancer
	c *Cloud
}

func withL4Counts(c *Cloud, l cloudprovider.LoadBalancer) l4Counted {
	l4State.once.Do(func() {
		legacyregistry.MustRegister(l4ILBCount, l4NetLBCount)
		l4State.Lock()
		exportL4()
		l4State.Unlock()
	})
	return l4Counted{LoadBalancer: l, c: c}
}

// EnsureLoadBalancer records the outcome of each full sync, as upstream
// records its ensure: a failed one counts as in error, a change GCE is
// still making leaves the Service as it was.
func (l l4Counted) EnsureLoadBalancer(ctx context.Context, cluster string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	st, err := l.LoadBalancer.EnsureLoadBalancer(ctx, cluster, svc, nodes)
	var pending *loadbalancers.PendingError
	if loadbalancers.DryRunFrom(ctx) != nil || errors.Is(err, cloudprovider.ImplementedElsewhere) || errors.As(err, &pending) {
		return st, err
	}
	key := svc.Namespace + "/" + svc.Name
	l4State.Lock()
	defer l4State.Unlock()
	if isInternal(svc) {
		a := LBAnnotations.Parse(svc)
		l4State.ilb[key] = ilbState{ok: err == nil, globalAccess: a.Bool(AnnAllowGlobalAccess, false),
			customSubnet: a.String(AnnInternalSubnet, "") != ""}
		delete(l4State.netlb, key)
	} else {
		st := netLBState{status: l4StatusSuccess, denyFirewall: denyFirewallStatus(l.c.cfg.L4DenyFirewall, err == nil)}
		if err != nil {
			st.status = l4StatusError
		}
		l4State.netlb[key] = st
		delete(l4State.ilb, key)
	}
	exportL4()
	return st, err
}

// EnsureLoadBalancerDeleted forgets the Service once its load balancer is
// gone.
func (l l4Counted) EnsureLoadBalancerDeleted(ctx context.Context, cluster string, svc *v1.Service) error {
	err := l.LoadBalancer.EnsureLoadBalancerDeleted(ctx, cluster, svc)
	if err != nil || loadbalancers.DryRunFrom(ctx) != nil {
		return err
	}
	key := svc.Namespace + "/" + svc.Name
	l4State.Lock()
	defer l4State.Unlock()
	delete(l4State.ilb, key)
	delete(l4State.netlb, key)
	exportL4()
	return nil
}

// exportL4 sets the gauges from the state; l4State is locked. Every ILB
// feature is set, zero or not; NetLB series exist only for statuses some
// Service has, as upstream's reset-and-count leaves them.
func exportL4() {
	ilb := map[string]int{l4ILBService: 0, l4ILBGlobalAccess: 0, l4ILBCustomSubnet: 0, l4ILBInSuccess: 0, l4ILBInError: 0}
	for _, s := range l4State.ilb {
		ilb[l4ILBService]++
		if !s.ok {
			// Upstream counts no feature of a Service in error.
			ilb[l4ILBInError]++
			continue
		}
		ilb[l4ILBInSuccess]++
		if s.globalAccess {
			ilb[l4ILBGlobalAccess]++
		}
		if s.customSubnet {
			ilb[l4ILBCustomSubnet]++
		}
	}
	for f, n := range ilb {
		l4ILBCount.WithLabelValues(f).Set(float64(n))
	}
	netlb := map[netLBState]int{}
	for _, st := range l4State.netlb {
		netlb[st]++
	}
	l4NetLBCount.Reset()
	for st, n := range netlb {
		l4NetLBCount.WithLabelValues(st.status, st.denyFirewall).Set(float64(n))
	}
}
