//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/digitalocean/godo"
	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	computev1 "google.golang.org/api/compute/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	fakedo "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
	fakegce "github.com/polyccm/polyccm/test/fakecloud/gce"
	"github.com/polyccm/polyccm/test/harness"
)

// The switch back (issue 32, point 12): after polyccm has created,
// changed and deleted load balancers, the upstream CCM takes over again
// with no new load balancer and no changed address. Each test runs the
// real polyccm on the simulated cloud, stops it, then reads the cloud as
// the upstream CCM's next sync of every Service reads it, through the
// cloud's own client: how it finds each resource (names, the ID
// annotation, the service-uid label), the description, tags or labels
// it checks, what it would create or recreate, what it would change in
// place, and what it never looks at again and so would never fix (must
// already be what it would have made). In-place changes are allowed
// (logged), except those of what clients see: the address, and on GCE
// the traffic firewall rule. Then everything left in the cloud must be
// some live Service's by upstream's rules: what no Service's sync reads,
// upstream never deletes.
//
// Everything upstream-side is written from upstream's code at the
// versions the migration tests cite (gce_migration_test.go,
// digitalocean_migration_test.go, hetzner_migration_test.go), never from
// polyccm's; each check names the upstream function it comes from.

// upNext collects what an upstream CCM's next sync would do to the cloud
// polyccm left: bad is an error, update (in place, unseen by clients) is
// what upstream's syncs do anyway.
type upNext struct {
	t       *testing.T
	updates []string
}

// bad: the next sync would create, recreate or move an address, or finds
// something it would never fix made differently from what it makes.
func (n *upNext) bad(svc *v1.Service, format string, args ...any) {
	n.t.Helper()
	n.t.Errorf("upstream's next sync of %s/%s: "+format, append([]any{svc.Namespace, svc.Name}, args...)...)
}

// update: the next sync would change this in place, keeping the address.
func (n *upNext) update(svc *v1.Service, format string, args ...any) {
	n.t.Helper()
	msg := fmt.Sprintf("%s/%s: ", svc.Namespace, svc.Name) + fmt.Sprintf(format, args...)
	n.updates = append(n.updates, msg)
	n.t.Logf("upstream's next sync would update %s", msg)
}

// sameSet is upstream's equalStringSets (gce_util.go), also what the
// other clouds' comparisons of unordered lists come to.
func sameSet(a, b []string) bool {
	return slices.Equal(slices.Compact(slices.Sorted(slices.Values(a))), slices.Compact(slices.Sorted(slices.Values(b))))
}

// switchBackNS holds a test's Services. polyccm is stopped at the end, so
// nothing would release their finalizers: the cleanup does.
func switchBackNS(t *testing.T, ns string) string {
	t.Helper()
	ensureNamespace(t, ns)
	t.Cleanup(func() {
		ctx := context.Background()
		list, err := cp.Admin.CoreV1().Services(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return
		}
		for _, s := range list.Items {
			_ = cp.Admin.CoreV1().Services(ns).Delete(ctx, s.Name, metav1.DeleteOptions{})
			_, _ = cp.Admin.CoreV1().Services(ns).Patch(ctx, s.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		}
	})
	return ns
}

// waitNoCloudWrites waits until polyccm has written nothing to the cloud for 3 s
// (calls that are not reads counted by the fake), so that it is stopped
// between syncs, not in the middle of one.
func waitNoCloudWrites(t *testing.T, calls func() map[string]int, read func(endpoint string) bool) {
	t.Helper()
	writes := func() string {
		var out []string
		for ep, n := range calls() {
			if !read(ep) {
				out = append(out, fmt.Sprintf("%s=%d", ep, n))
			}
		}
		slices.Sort(out)
		return strings.Join(out, " ")
	}
	last, since := writes(), time.Now()
	eventually(t, 2*time.Minute, "polyccm done writing", func() (bool, string) {
		if now := writes(); now != last {
			last, since = now, time.Now()
		}
		return time.Since(since) >= 3*time.Second, "still writing"
	})
}

// changeService edits a Service as its user would (get, change, update,
// so its node ports stay) and waits until the service controller has
// ensured its load balancer since (its EnsuredLoadBalancer events count
// up): polyccm has applied the change.
func changeService(t *testing.T, ns, name string, edit func(*v1.Service)) {
	t.Helper()
	ensured := func() (n int32) {
		for _, c := range eventCounts(t, ns, name, v1.EventTypeNormal, "EnsuredLoadBalancer") {
			n += c
		}
		return n
	}
	// The first sync's event may still be on its way (events are sent
	// after the status): count from it.
	eventually(t, 30*time.Second, ns+"/"+name+"'s first EnsuredLoadBalancer event", func() (bool, string) {
		return ensured() > 0, fmt.Sprintf("events %q", serviceEvents(t, ns, name))
	})
	before := ensured()
	svc := nsSvc(t, ns, name)
	edit(svc)
	if _, err := cp.Admin.CoreV1().Services(ns).Update(context.Background(), svc, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating Service %s/%s: %v", ns, name, err)
	}
	eventually(t, 2*time.Minute, "polyccm ensuring "+ns+"/"+name+" after the change", func() (bool, string) {
		return ensured() > before, fmt.Sprintf("events %q", serviceEvents(t, ns, name))
	})
}

// stopForTheSwitchBack stops polyccm, as a switch back does, and frees
// the Lease for whatever runs next.
func stopForTheSwitchBack(t *testing.T, e *env) {
	t.Helper()
	if code, err := e.ccm.Stop(15 * time.Second); err != nil || code != 0 {
		t.Fatalf("stopping polyccm: exit %d, %v", code, err)
	}
	_ = cp.Admin.CoordinationV1().Leases("kube-system").Delete(context.Background(), "cloud-controller-manager", metav1.DeleteOptions{})
}

// ---------------------------------------------------------------------
// GCE: kubernetes/cloud-provider-gcp, providers/gce at 4e245312.

// gce_annotations.go.
const (
	// ServiceAnnotationILBAllowGlobalAccess.
	upGCEAnnGlobalAccess = "networking.gke.io/internal-load-balancer-allow-global-access"
	// NetworkTierAnnotationKey.
	upGCEAnnNetworkTier = "cloud.google.com/network-tier"
	// ServiceAnnotationILBBackendShare and its deprecated key.
	upGCEAnnBackendShare, upGCEAnnBackendShareOld = "alpha.cloud.google.com/load-balancer-backend-share", "cloud.google.com/load-balancer-backend-share"
)

// gceRel is a link's path under /compute/v1/. GCE answers with links on
// www.googleapis.com, which is where upstream builds the ones it compares
// them with (gce.go gceNetworkURL, gceSubnetworkURL); the fake answers on
// its own URL: links compare by path.
func gceRel(link string) string {
	if _, p, ok := strings.Cut(link, "/compute/v1/"); ok {
		return p
	}
	return link
}

// netSet is a list of CIDRs as utilnet.IPNetSet compares them (parsed,
// in no order): firewallNeedsUpdate's source ranges.
func netSet(cidrs []string) []string {
	var out []string
	for _, c := range cidrs {
		p, err := netip.ParsePrefix(strings.TrimSpace(c))
		if err != nil {
			out = append(out, "invalid "+c)
			continue
		}
		out = append(out, p.Masked().String())
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// upGCESourceRanges is servicehelpers.GetLoadBalancerSourceRanges
// (k8s.io/cloud-provider service/helpers): spec.loadBalancerSourceRanges,
// else the comma-separated service.beta.kubernetes.io/load-balancer-source-ranges
// annotation, else 0.0.0.0/0.
func upGCESourceRanges(svc *v1.Service) []string {
	if len(svc.Spec.LoadBalancerSourceRanges) > 0 {
		return netSet(svc.Spec.LoadBalancerSourceRanges)
	}
	if v := strings.TrimSpace(svc.Annotations[v1.AnnotationLoadBalancerSourceRangesKey]); v != "" {
		return netSet(strings.Split(v, ","))
	}
	return []string{"0.0.0.0/0"}
}

// upGCENodesHCFirewallDesc is ensureHTTPHealthCheckFirewall's description
// of the nodes' shared health check's firewall rule.
func upGCENodesHCFirewallDesc(cid string) string {
	return fmt.Sprintf(`{"kubernetes.io/cluster-id":"%s"}`, cid)
}

// gceUpstream reads the fake project as cloud-provider-gcp's next
// EnsureLoadBalancer of each Service would, through the discovery-based
// google.golang.org/api/compute/v1 client it uses.
type gceUpstream struct {
	upNext
	u     *upGCE
	c     *computev1.Service
	cid   string
	hosts []fakegce.Instance // the Nodes' instances, as the service controller passes them
	// read is every resource a live Service's sync reads, as
	// gceMigHoldings keys it.
	read map[string]bool
}

func (g *gceUpstream) found(kind, name string, err error) bool {
	g.t.Helper()
	if !g.u.found(kind+" "+name, err) {
		return false
	}
	g.read[kind+" "+name] = true
	return true
}

// gceLocal is servicehelpers.GetServiceHealthCheckPathPort: a Service
// with externalTrafficPolicy Local has kube-proxy's /healthz on its
// healthCheckNodePort.
func gceLocal(svc *v1.Service) (bool, int64) {
	local := svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal && svc.Spec.HealthCheckNodePort != 0
	return local, int64(svc.Spec.HealthCheckNodePort)
}

// external is ensureExternalLoadBalancer (gce_loadbalancer_external.go)
// for a Service whose load balancer exists.
func (g *gceUpstream) external(svc *v1.Service) {
	g.t.Helper()
	lb := cloudprovider.DefaultLoadBalancerName(svc) // GetLoadBalancerName
	nm := svc.Namespace + "/" + svc.Name
	_, _, proto := upGCEPorts(svc.Spec.Ports)

	// EnsureLoadBalancer: GetRegionForwardingRule(loadBalancerName).
	fr, err := g.c.ForwardingRules.Get(gceProject, gceRegion, lb).Do()
	if !g.found("forwardingRule", lb, err) {
		g.bad(svc, "create: no forwarding rule %s, so it makes a new load balancer on a new address", lb)
		return
	}
	if s := strings.ToUpper(fr.LoadBalancingScheme); s != "EXTERNAL" {
		g.bad(svc, "recreate: forwarding rule %s is %s, so it deletes that load balancer and makes an EXTERNAL one", lb, s)
		return
	}
	// shouldProcessNetLB, usesL4RBS: a rule to a backend service is
	// another controller's.
	if fr.BackendService != "" {
		g.bad(svc, "forwarding rule %s goes to backend service %s: upstream leaves the Service to another controller (usesL4RBS)", lb, fr.BackendService)
	}
	ip := fr.IPAddress
	// The status EnsureLoadBalancer returns: the rule's address.
	if got := ingressIPs(svc); !slices.Equal(got, []string{ip}) {
		g.bad(svc, "it publishes [%s], the Service shows %v", ip, got)
	}

	// forwardingRuleNeedsUpdate: a difference deletes and recreates the
	// rule.
	if req := svc.Spec.LoadBalancerIP; req != "" && req != ip {
		g.bad(svc, "recreate: forwarding rule %s has %s, spec.loadBalancerIP %s", lb, ip, req)
	}
	if want := upGCEPortRange(svc.Spec.Ports); fr.PortRange != want || fr.IPProtocol != proto {
		g.bad(svc, "recreate: forwarding rule %s is %s %s, it wants %s %s", lb, fr.IPProtocol, fr.PortRange, proto, want)
	}
	// createForwardingRule's fields no later sync looks at.
	if want := upGCEServiceDesc(nm); fr.Description != want {
		g.bad(svc, "forwarding rule %s is described %q, createForwardingRule writes %q (makeServiceDescription)", lb, fr.Description, want)
	}
	if want := "projects/" + gceProject + "/regions/" + gceRegion + "/targetPools/" + lb; gceRel(fr.Target) != want { // targetPoolURL
		g.bad(svc, "forwarding rule %s targets %s, createForwardingRule targets %s, and never changes it", lb, fr.Target, want)
	}
	// getServiceNetworkTier: the annotation's tier, else Premium. With
	// the annotation, deleteFWDRuleWithWrongTier deletes a rule of
	// another tier; without, the tier is never looked at.
	tierAnn, tierSet := svc.Annotations[upGCEAnnNetworkTier]
	tier := map[string]string{"Standard": "STANDARD"}[tierAnn] // NetworkTier.ToGCEValue
	tier = cmp.Or(tier, "PREMIUM")
	switch {
	case fr.NetworkTier != tier && tierSet:
		g.bad(svc, "recreate: forwarding rule %s is in tier %s, the annotation asks for %s", lb, fr.NetworkTier, tier)
	case fr.NetworkTier != tier:
		g.bad(svc, "forwarding rule %s is in tier %s, upstream makes %s and never changes it without the annotation", lb, fr.NetworkTier, tier)
	}

	if req := svc.Spec.LoadBalancerIP; req != "" {
		// verifyUserRequestedIP: an address reserved with that IP
		// (GetRegionAddressByIP) is the user's, used as it is, of the
		// Service's tier.
		list, err := g.c.Addresses.List(gceProject, gceRegion).Do()
		if err != nil {
			g.t.Fatal(err)
		}
		i := slices.IndexFunc(list.Items, func(a *computev1.Address) bool { return a.Address == req })
		switch {
		case i >= 0 && list.Items[i].NetworkTier != tier:
			g.bad(svc, "its sync fails: the requested address %s is %s, the Service's tier is %s", req, list.Items[i].NetworkTier, tier)
		case i >= 0:
			g.read["address "+list.Items[i].Name] = true
		case req != ip:
			g.bad(svc, "its sync fails: the requested address %s is neither reserved nor the rule's (%s)", req, ip)
		}
	}
	// ensureStaticIP (for an address not the user's) reserves the rule's
	// address under lb; finding it reserved already, it takes it for a
	// failed sync's and never releases it.
	if _, err := g.c.Addresses.Get(gceProject, gceRegion, lb).Do(); g.found("address", lb, err) {
		g.bad(svc, "address %s is reserved: ensureStaticIP takes it for a failed sync's and keeps it reserved", lb)
	}

	g.allowFirewall(svc, lb, nm, ip, ensureExternal)

	// targetPoolNeedsRecreation.
	tp, err := g.c.TargetPools.Get(gceProject, gceRegion, lb).Do()
	if !g.found("targetPool", lb, err) {
		g.bad(svc, "recreate: no target pool %s, so it makes one and recreates the forwarding rule", lb)
		return
	}
	affinity := map[v1.ServiceAffinity]string{v1.ServiceAffinityClientIP: "CLIENT_IP"}[svc.Spec.SessionAffinity] // translateAffinityType
	affinity = cmp.Or(affinity, "NONE")
	if tp.SessionAffinity != "" && tp.SessionAffinity != affinity {
		g.bad(svc, "recreate: target pool %s has session affinity %s, it wants %s", lb, tp.SessionAffinity, affinity)
	}
	if want := upGCEServiceDesc(nm); tp.Description != want { // createTargetPoolAndHealthCheck
		g.bad(svc, "target pool %s is described %q, upstream writes %q and never changes it", lb, tp.Description, want)
	}

	// The health check: the Service's own (named lb) for Local, the
	// nodes' otherwise; finding the other kind recreates the pool.
	local, hcnp := gceLocal(svc)
	_, err = g.c.HttpHealthChecks.Get(gceProject, lb).Do()
	if own := g.u.found("HTTP health check "+lb, err); own != local {
		g.bad(svc, "recreate: the Service's own health check %s exists: %v, externalTrafficPolicy %s: tpNeedsRecreation", lb, own, svc.Spec.ExternalTrafficPolicy)
	}
	hcName, hcPort := upGCENodesHCName(g.cid), int64(upGCENodesHCPort)
	hcFW, hcFWDesc := hcName+"-http-hc", upGCENodesHCFirewallDesc(g.cid) // MakeHealthCheckFirewallName
	if local {
		hcName, hcPort = lb, hcnp
		hcFW, hcFWDesc = "k8s-"+lb+"-http-hc", upGCEFirewallDesc(nm, ip)
	}

	// ensureTargetPoolAndHealthCheck with the pool kept: updateTargetPool
	// (makeComparableHostPath), ensureHTTPHealthCheck,
	// ensureHTTPHealthCheckFirewall.
	var have, want []string
	for _, l := range tp.Instances {
		have = append(have, instancePath(l))
	}
	for _, h := range g.hosts {
		want = append(want, h.Zone+"/"+h.Name)
	}
	if !sameSet(have, want) {
		g.update(svc, "target pool %s instances %v to %v", lb, have, want)
	}
	hc, err := g.c.HttpHealthChecks.Get(gceProject, hcName).Do()
	if !g.found("httpHealthCheck", hcName, err) {
		g.bad(svc, "create: no HTTP health check %s", hcName)
	} else {
		// needToUpdateHTTPHealthChecks.
		if want := upGCEServiceDesc(hcName); hc.Description != want { // makeHealthCheckDescription
			g.bad(svc, "HTTP health check %s is described %q, upstream's is %q", hcName, hc.Description, want)
		}
		if hc.Port != hcPort || hc.RequestPath != upGCENodesHCPath || hc.CheckIntervalSec < upGCEHCInterval || hc.TimeoutSec < upGCEHCTimeout ||
			hc.HealthyThreshold < upGCEHCHealthy || hc.UnhealthyThreshold < upGCEHCUnhealthy {
			g.update(svc, "HTTP health check %s (%d%s every %ds)", hcName, hc.Port, hc.RequestPath, hc.CheckIntervalSec)
		}
		// The pool's health check is set when the pool is made, never
		// after.
		if got := tp.HealthChecks; len(got) != 1 || gceRel(got[0]) != gceRel(hc.SelfLink) {
			g.bad(svc, "target pool %s checks %v, upstream's would check %s and it never changes a kept pool's", lb, got, hc.SelfLink)
		}
	}
	fw, err := g.c.Firewalls.Get(gceProject, hcFW).Do()
	if !g.found("firewall", hcFW, err) {
		g.bad(svc, "create: no health check firewall rule %s", hcFW)
		return
	}
	if fw.Description != hcFWDesc {
		g.bad(svc, "firewall rule %s is described %q, upstream's is %q", hcFW, fw.Description, hcFWDesc)
	}
	if len(fw.Allowed) != 1 || fw.Allowed[0].IPProtocol != "tcp" || !sameSet(fw.Allowed[0].Ports, []string{strconv.FormatInt(hcPort, 10)}) ||
		!sameSet(fw.SourceRanges, upGCEL4SrcRanges) || fw.Priority != upGCEPriorityDefault {
		g.update(svc, "firewall rule %s (%+v from %v at %d)", hcFW, fw.Allowed, fw.SourceRanges, fw.Priority)
	}
	g.untouched(svc, fw)
	g.t.Logf("upstream's next sync of %s finds EXTERNAL forwarding rule %s at %s (%s), its target pool, health check %s and firewall rules k8s-fw-%s, %s", nm, lb, ip, fr.NetworkTier, hcName, lb, hcFW)
}

// allowFirewall is the traffic rule k8s-fw-<lb>: ensureAllowNodeFirewall's
// firewallNeedsUpdate for an external load balancer, or
// ensureInternalFirewall's firewallRuleEqual for an internal one.
func (g *gceUpstream) allowFirewall(svc *v1.Service, lb, nm, ip string, scheme gceScheme) {
	g.t.Helper()
	name := "k8s-fw-" + lb // MakeFirewallName
	fw, err := g.c.Firewalls.Get(gceProject, name).Do()
	if !g.found("firewall", name, err) {
		g.bad(svc, "create: no firewall rule %s", name)
		return
	}
	if want := upGCEFirewallDesc(nm, ip); fw.Description != want { // makeFirewallDescription
		g.bad(svc, "firewall rule %s is described %q, upstream's is %q", name, fw.Description, want)
	}
	// What the rule lets through is what clients see: upstream would
	// update a difference in place, but the switch back would then
	// change who reaches the Service, which it must not.
	ports, ranges, proto := upGCEPorts(svc.Spec.Ports)
	proto = strings.ToLower(proto)
	src := upGCESourceRanges(svc)
	switch {
	case len(fw.Allowed) != 1 || fw.Allowed[0].IPProtocol != proto:
		g.bad(svc, "firewall rule %s allows %+v, upstream's %s: it changes who reaches the Service", name, fw.Allowed, proto)
	case scheme == ensureExternal && !sameSet(fw.Allowed[0].Ports, ports) && !sameSet(fw.Allowed[0].Ports, ranges),
		scheme == ensureInternal && !sameSet(fw.Allowed[0].Ports, ranges):
		g.bad(svc, "firewall rule %s opens ports %v, upstream's %v: it changes who reaches the Service", name, fw.Allowed[0].Ports, ranges)
	}
	if !slices.Equal(netSet(fw.SourceRanges), src) {
		g.bad(svc, "firewall rule %s admits %v, upstream's %v (GetLoadBalancerSourceRanges): it changes who reaches the Service", name, fw.SourceRanges, src)
	}
	if !slices.Equal(fw.DestinationRanges, []string{ip}) {
		g.bad(svc, "firewall rule %s is for %v, upstream's for %s: it changes who reaches the Service", name, fw.DestinationRanges, ip)
	}
	if scheme == ensureExternal && fw.Priority != upGCEPriorityDefault {
		g.update(svc, "firewall rule %s priority %d to %d", name, fw.Priority, upGCEPriorityDefault)
	}
	if scheme == ensureExternal {
		// firewallNeedsUpdate looks at neither the network nor the tags.
		g.untouched(svc, fw)
	} else {
		g.network(svc, fw)
		if !sameSet(fw.TargetTags, []string{gceNodeTag}) {
			g.bad(svc, "firewall rule %s targets tags %v, upstream's %v: it changes who reaches the Service", name, fw.TargetTags, []string{gceNodeTag})
		}
	}
}

type gceScheme int

const (
	ensureExternal gceScheme = iota
	ensureInternal
)

// untouched: what no comparison of upstream's looks at on an existing
// rule (firewallNeedsUpdate, ensureHTTPHealthCheckFirewall): the network
// and the node tags (node-tags in gce.conf) must be what firewallObject
// makes.
func (g *gceUpstream) untouched(svc *v1.Service, fw *computev1.Firewall) {
	g.t.Helper()
	g.network(svc, fw)
	if !slices.Equal(fw.TargetTags, []string{gceNodeTag}) {
		g.bad(svc, "firewall rule %s targets tags %v, upstream's firewallObject %v, and it never changes them", fw.Name, fw.TargetTags, []string{gceNodeTag})
	}
}

func (g *gceUpstream) network(svc *v1.Service, fw *computev1.Firewall) {
	g.t.Helper()
	if gceRel(fw.Network) != gceRel(upGCENetworkURL) {
		g.bad(svc, "firewall rule %s is in network %s, upstream's in %s, and a rule's network cannot change", fw.Name, fw.Network, upGCENetworkURL)
	}
}

// internal is ensureInternalLoadBalancer (gce_loadbalancer_internal.go)
// for a Service whose load balancer exists, in the configured subnetwork
// (no subnet annotation).
func (g *gceUpstream) internal(svc *v1.Service) {
	g.t.Helper()
	lb := cloudprovider.DefaultLoadBalancerName(svc)
	nm := svc.Namespace + "/" + svc.Name
	ports, _, proto := upGCEPorts(svc.Spec.Ports)

	fr, err := g.c.ForwardingRules.Get(gceProject, gceRegion, lb).Do()
	if !g.found("forwardingRule", lb, err) {
		g.bad(svc, "create: no forwarding rule %s, so it makes a new load balancer on a new address", lb)
		return
	}
	if s := strings.ToUpper(fr.LoadBalancingScheme); s != "INTERNAL" {
		g.bad(svc, "recreate: forwarding rule %s is %s, so it deletes that load balancer and makes an INTERNAL one", lb, s)
		return
	}
	if got := ingressIPs(svc); !slices.Equal(got, []string{fr.IPAddress}) {
		g.bad(svc, "it publishes [%s] (GetRegionForwardingRule's address), the Service shows %v", fr.IPAddress, got)
	}

	// ensureInternalInstanceGroups: a group named makeInstanceGroupName
	// in every zone with Nodes.
	group := "k8s-ig--" + g.cid
	byZone := map[string][]string{}
	for _, h := range g.hosts {
		byZone[h.Zone] = append(byZone[h.Zone], h.Name)
	}
	var igLinks []string
	for _, zone := range slices.Sorted(maps.Keys(byZone)) {
		ig, err := g.c.InstanceGroups.Get(gceProject, zone, group).Do()
		if !g.found("instanceGroup", zone+"/"+group, err) {
			g.bad(svc, "create: no instance group %s in %s: a second group for instances already in another load-balanced one", group, zone)
			continue
		}
		igLinks = append(igLinks, ig.SelfLink)
		list, err := g.c.InstanceGroups.ListInstances(gceProject, zone, group, &computev1.InstanceGroupsListInstancesRequest{InstanceState: "ALL"}).Do()
		if err != nil {
			g.t.Fatalf("listing %s/%s: %v", zone, group, err)
		}
		var have []string
		for _, in := range list.Items {
			have = append(have, in.Instance[strings.LastIndexByte(in.Instance, '/')+1:])
		}
		if !sameSet(have, byZone[zone]) {
			g.update(svc, "instance group %s/%s members %v to %v", zone, group, have, byZone[zone])
		}
	}

	// ensureInternalHealthCheck: global, shared (no description) unless
	// Local (newInternalLBHealthCheck).
	local, hcnp := gceLocal(svc)
	hcName, hcPort, hcDesc := upGCENodesHCName(g.cid), int64(upGCENodesHCPort), ""
	hcFW := "k8s-" + g.cid + "-node-hc" // makeHealthCheckFirewallName(shared)
	if local {
		hcName, hcPort, hcDesc = lb, hcnp, upGCEServiceDesc(nm)
		hcFW = lb + "-hc"
	}
	hcLink := ""
	if hc, err := g.c.HealthChecks.Get(gceProject, hcName).Do(); !g.found("healthCheck", hcName, err) {
		g.bad(svc, "create: no health check %s", hcName)
	} else {
		hcLink = hc.SelfLink
		if hc.Description != hcDesc {
			g.bad(svc, "health check %s is described %q, upstream's is %q", hcName, hc.Description, hcDesc)
		}
		// needToUpdateHealthChecks.
		if hc.HttpHealthCheck == nil || hc.HttpHealthCheck.Port != hcPort || hc.HttpHealthCheck.RequestPath != upGCENodesHCPath ||
			hc.CheckIntervalSec < upGCEHCInterval || hc.TimeoutSec < upGCEHCTimeout || hc.HealthyThreshold < upGCEHCHealthy || hc.UnhealthyThreshold < upGCEHCUnhealthy {
			g.update(svc, "health check %s (%+v)", hcName, hc.HttpHealthCheck)
		}
	}

	// ilbIPToUse, then forwardingRulesEqual against the rule it would
	// make: a difference deletes and recreates the rule.
	ipToUse := svc.Spec.LoadBalancerIP
	if ipToUse == "" && gceRel(fr.Subnetwork) == gceRel(upGCESubnetURL) {
		ipToUse = fr.IPAddress
	}
	wantPorts, allPorts := ports, false
	if len(ports) > 5 { // maxL4ILBPorts
		wantPorts, allPorts = nil, true
	}
	globalAccess := svc.Annotations[upGCEAnnGlobalAccess] == "true" // GetLoadBalancerAnnotationAllowGlobalAccess
	bsName, bsDesc := upGCEBackendService(svc, g.cid, lb, local)
	bsRel := "projects/" + gceProject + "/regions/" + gceRegion + "/backendServices/" + bsName // getBackendServiceLink
	var diff []string
	if ipToUse != "" && fr.IPAddress != ipToUse {
		diff = append(diff, "address "+fr.IPAddress+" to "+ipToUse)
	}
	if fr.IPProtocol != proto || !sameSet(fr.Ports, wantPorts) || fr.AllPorts != allPorts {
		diff = append(diff, fmt.Sprintf("%s %v (all %v) to %s %v (all %v)", fr.IPProtocol, fr.Ports, fr.AllPorts, proto, wantPorts, allPorts))
	}
	if gceRel(fr.BackendService) != bsRel {
		diff = append(diff, "backend service "+fr.BackendService+" to "+bsRel)
	}
	if fr.AllowGlobalAccess != globalAccess {
		diff = append(diff, fmt.Sprintf("global access %v to %v", fr.AllowGlobalAccess, globalAccess))
	}
	if gceRel(fr.Subnetwork) != gceRel(upGCESubnetURL) {
		diff = append(diff, "subnetwork "+fr.Subnetwork+" to "+upGCESubnetURL)
	}
	if len(diff) > 0 {
		g.bad(svc, "recreate: forwarding rule %s differs (%s)", lb, strings.Join(diff, "; "))
	}
	// Written when the rule is made, never compared.
	if desc, _ := json.Marshal(upGCEFwdRuleDesc{ServiceName: nm}); fr.Description != string(desc) {
		g.bad(svc, "forwarding rule %s is described %q, upstream's is %q (forwardingRuleDescription)", lb, fr.Description, desc)
	}
	if gceRel(fr.Network) != gceRel(upGCENetworkURL) {
		g.bad(svc, "forwarding rule %s is in network %s, upstream's in %s", lb, fr.Network, upGCENetworkURL)
	}

	// ensureInternalBackendService: backendSvcEqual.
	if bs, err := g.c.RegionBackendServices.Get(gceProject, gceRegion, bsName).Do(); !g.found("backendService", bsName, err) {
		g.bad(svc, "create: no backend service %s", bsName)
	} else {
		if bs.Description != bsDesc {
			g.bad(svc, "backend service %s is described %q, upstream's is %q", bsName, bs.Description, bsDesc)
		}
		affinity := cmp.Or(map[v1.ServiceAffinity]string{v1.ServiceAffinityClientIP: "CLIENT_IP"}[svc.Spec.SessionAffinity], "NONE")
		var groups []string
		for _, be := range bs.Backends {
			groups = append(groups, gceRel(be.Group))
		}
		var wantGroups []string
		for _, l := range igLinks {
			wantGroups = append(wantGroups, gceRel(l))
		}
		var checks []string
		for _, l := range bs.HealthChecks {
			checks = append(checks, gceRel(l))
		}
		if bs.Protocol != proto || bs.SessionAffinity != affinity || bs.LoadBalancingScheme != "INTERNAL" ||
			!sameSet(checks, []string{gceRel(hcLink)}) || !sameSet(groups, wantGroups) {
			g.update(svc, "backend service %s (%s %s %s, checks %v, groups %v)", bsName, bs.Protocol, bs.SessionAffinity, bs.LoadBalancingScheme, checks, groups)
		}
	}

	// ensureInternalFirewalls: the traffic rule, then the health check's
	// (no description, no destination, Google's health checkers).
	g.allowFirewall(svc, lb, nm, fr.IPAddress, ensureInternal)
	fw, err := g.c.Firewalls.Get(gceProject, hcFW).Do()
	if !g.found("firewall", hcFW, err) {
		g.bad(svc, "create: no health check firewall rule %s", hcFW)
	} else {
		if fw.Description != "" {
			g.bad(svc, "firewall rule %s is described %q, upstream's has no description", hcFW, fw.Description)
		}
		if len(fw.Allowed) != 1 || fw.Allowed[0].IPProtocol != "tcp" || !sameSet(fw.Allowed[0].Ports, []string{strconv.FormatInt(hcPort, 10)}) ||
			!sameSet(fw.SourceRanges, upGCEL4SrcRanges) || len(fw.DestinationRanges) != 0 || !sameSet(fw.TargetTags, []string{gceNodeTag}) {
			g.update(svc, "firewall rule %s (%+v from %v to %v)", hcFW, fw.Allowed, fw.SourceRanges, fw.DestinationRanges)
		}
		g.network(svc, fw)
	}
	// addressManager.HoldAddress reserves the rule's address under lb and
	// ReleaseAddress releases it: one left reserved is released then.
	if _, err := g.c.Addresses.Get(gceProject, gceRegion, lb).Do(); g.found("address", lb, err) {
		g.update(svc, "address %s released", lb)
	}
	g.t.Logf("upstream's next sync of %s finds INTERNAL forwarding rule %s at %s, backend service %s, health check %s, groups %s and firewall rules k8s-fw-%s, %s", nm, lb, fr.IPAddress, bsName, hcName, group, lb, hcFW)
}

// upGCEBackendService is makeBackendServiceName and
// makeBackendServiceDescription: with the backend-share annotation
// (shareBackendService: not for Local), one per protocol and session
// affinity, named for the cluster, without a description.
func upGCEBackendService(svc *v1.Service, cid, lb string, local bool) (name, desc string) {
	share := svc.Annotations[upGCEAnnBackendShare] == "true" || svc.Annotations[upGCEAnnBackendShareOld] == "true" // GetLoadBalancerAnnotationBackendShare
	if !share || local {
		return lb, upGCEServiceDesc(svc.Namespace + "/" + svc.Name)
	}
	_, _, proto := upGCEPorts(svc.Spec.Ports)
	h := sha1.Sum([]byte(svc.Spec.SessionAffinity))
	return fmt.Sprintf("k8s-%s-internal-%s-nmv1-%s", cid, strings.ToLower(proto), hex.EncodeToString(h[:])[:16]), ""
}

// upGCENodesHCName is MakeNodesHealthCheckName (and the shared
// makeHealthCheckName).
func upGCENodesHCName(cid string) string { return "k8s-" + cid + "-node" }

// A Service's load balancer as polyccm made it on GCE (External and
// Internal; Cluster and Local; source ranges in the spec, in the
// annotation or none; the Standard tier; a reserved address; a shared
// backend service), changed (ports; global access; the traffic policy
// both ways; the type both ways) or deleted, is found and kept by
// cloud-provider-gcp's next sync, which would create nothing, move no
// address and let the same clients through; nothing is left that no
// sync of upstream's reads.
func TestGCESwitchBackToCloudProviderGCP(t *testing.T) {
	ctx := context.Background()
	// polyccm makes the cluster ID ConfigMap, as upstream makes it when
	// there is none; another test's may be there.
	cms := cp.Admin.CoreV1().ConfigMaps("kube-system")
	if err := cms.Delete(ctx, "ingress-uid", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	e, hosts := gceLB(t, 3, nil)
	ns := switchBackNS(t, "gce-switchback")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the fake holds:\n%s", gceMigDump(e.fake))
		}
	})
	internal := map[string]string{upGCEAnnLBType: "Internal"}
	local := func(src ...string) func(*v1.Service) {
		return func(s *v1.Service) {
			s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
			s.Spec.LoadBalancerSourceRanges = src
		}
	}
	shared := map[string]string{upGCEAnnLBType: "Internal", upGCEAnnBackendShare: "true", v1.AnnotationLoadBalancerSourceRangesKey: "10.8.0.0/16,10.9.0.0/16"}
	// An address the user reserved, for spec.loadBalancerIP.
	u := newUpGCE(t, e, false)
	u.do("address sb-static")(u.addrs.Insert(ctx, &computepb.InsertAddressRequest{Project: gceProject, Region: gceRegion, AddressResource: &computepb.Address{
		Name: ptrTo("sb-static"), NetworkTier: ptrTo("PREMIUM"),
	}}))
	static, err := u.addrs.Get(ctx, &computepb.GetAddressRequest{Project: gceProject, Region: gceRegion, Address: "sb-static"})
	if err != nil {
		t.Fatal(err)
	}
	nsService(t, ns, "ext", nil, nil, tcp(80))
	nsService(t, ns, "ext-local", nil, local("203.0.113.0/24", "198.51.100.0/24"), tcp(8443))
	nsService(t, ns, "ext-std", map[string]string{upGCEAnnNetworkTier: "Standard"}, nil, udp(500), udp(4500))
	// Source ranges in the annotation servicehelpers reads when the
	// spec has none.
	annRanges := func(r string) map[string]string {
		return map[string]string{v1.AnnotationLoadBalancerSourceRangesKey: r}
	}
	nsService(t, ns, "ext-static", annRanges("192.0.2.0/24"), func(s *v1.Service) { s.Spec.LoadBalancerIP = static.GetAddress() }, tcp(80))
	nsService(t, ns, "ext-to-int", nil, local(), tcp(6000))
	nsService(t, ns, "int", maps.Clone(internal), nil, tcp(8080))
	nsService(t, ns, "int-local", maps.Clone(internal), local("10.0.0.0/8"), tcp(9000), tcp(9001))
	nsService(t, ns, "int-shared", maps.Clone(shared), nil, tcp(7000))
	nsService(t, ns, "int-to-ext", maps.Clone(internal), local(), tcp(6001))
	nsService(t, ns, "ext-gone", nil, local(), tcp(80))
	nsService(t, ns, "int-gone", maps.Clone(internal), local(), udp(53))
	nsService(t, ns, "int-shared-gone", maps.Clone(shared), nil, tcp(7001))
	names := []string{"ext", "ext-local", "ext-std", "ext-static", "ext-to-int", "int", "int-local", "int-shared", "int-to-ext", "ext-gone", "int-gone", "int-shared-gone"}
	live := names[:9]
	ips := map[string]string{}
	for _, n := range names {
		ips[n] = waitNSIngress(t, ns, n, 2*time.Minute).Status.LoadBalancer.Ingress[0].IP
	}

	// Changes. ext gains a port (the forwarding rule's range changes, so
	// polyccm replaces it on its address); int gets global access (a
	// forwarding rule cannot change that in place either); ext-local
	// goes to the nodes' health check, ext-std to its own (polyccm swaps
	// the pool's health check where upstream recreates the pool); two
	// switch scheme (a new load balancer, a new address, for upstream
	// too).
	changeService(t, ns, "ext", func(s *v1.Service) { s.Spec.Ports = append(s.Spec.Ports, tcp(443)) })
	changeService(t, ns, "int", func(s *v1.Service) { s.Annotations[upGCEAnnGlobalAccess] = "true" })
	changeService(t, ns, "ext-local", func(s *v1.Service) { s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyCluster })
	changeService(t, ns, "ext-std", func(s *v1.Service) { s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal })
	changeService(t, ns, "ext-to-int", func(s *v1.Service) { s.Annotations = map[string]string{upGCEAnnLBType: "Internal"} })
	changeService(t, ns, "int-to-ext", func(s *v1.Service) { delete(s.Annotations, upGCEAnnLBType) })
	moved := map[string]bool{"ext-to-int": true, "int-to-ext": true}
	rules := map[string]fakegce.ForwardingRule{} // by address, whatever polyccm named them
	for _, r := range e.fake.ForwardingRules() {
		rules[r.IPAddress] = r
	}
	if r := rules[ips["ext"]]; r.PortRange != "80-443" {
		t.Errorf("ext's forwarding rule at %s is for %q after the change, want 80-443", ips["ext"], r.PortRange)
	}
	if r := rules[ips["int"]]; !r.AllowGlobalAccess {
		t.Errorf("int's forwarding rule at %s has no global access after the change", ips["int"])
	}
	gone := map[string]*v1.Service{}
	for _, n := range names[len(live):] {
		gone[n] = nsSvc(t, ns, n)
		deleteNSServiceAndWait(t, ns, n, 2*time.Minute)
	}
	waitNoCloudWrites(t, e.fake.Faults().Calls, func(ep string) bool {
		return strings.HasPrefix(ep, "GET ") || strings.HasSuffix(ep, "/listInstances") || strings.HasSuffix(ep, "/getHealth")
	})
	for _, n := range live {
		if got := nsSvc(t, ns, n).Status.LoadBalancer.Ingress; !moved[n] && (len(got) != 1 || got[0].IP != ips[n]) {
			t.Errorf("%s moved from %s to %v while polyccm ran", n, ips[n], got)
		}
	}
	stopForTheSwitchBack(t, e.env)

	// Upstream's cluster ID: gce_clusterid.go GetID, the ConfigMap's
	// provider-uid, else its uid, which must be there (getOrInitialize
	// takes the map as it is).
	cm, err := cms.Get(ctx, "ingress-uid", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the cluster ID ConfigMap upstream reads: %v", err)
	}
	if cm.Data["uid"] == "" {
		t.Fatalf("ConfigMap kube-system/ingress-uid has no uid: upstream's GetID fails (%v)", cm.Data)
	}
	g := &gceUpstream{upNext: upNext{t: t}, u: u, cid: cmp.Or(cm.Data["provider-uid"], cm.Data["uid"]), hosts: hosts, read: map[string]bool{}}
	g.c = g.u.legacy
	for _, n := range live {
		// getSvcScheme: GetLoadBalancerAnnotationType's Internal (or
		// internal) under either key.
		svc := nsSvc(t, ns, n)
		if typ := cmp.Or(svc.Annotations[upGCEAnnLBType], svc.Annotations["cloud.google.com/load-balancer-type"]); typ == "Internal" || typ == "internal" {
			g.internal(svc)
		} else {
			g.external(svc)
		}
	}

	// What no live Service's sync reads, upstream never deletes: the
	// deleted Services' resources (their names carry their UIDs), and
	// shared ones nothing uses.
	for key := range gceMigHoldings(e.fake) {
		if g.read[key] || strings.HasPrefix(key, "route ") {
			continue
		}
		whose := "no live Service's"
		for n, svc := range gone {
			if strings.Contains(key, cloudprovider.DefaultLoadBalancerName(svc)) {
				whose = "deleted Service " + n + "'s"
			}
		}
		t.Errorf("%s is left: %s, which upstream would never delete", key, whose)
	}
	t.Logf("upstream's next sync: %d in-place updates, %d resources read", len(g.updates), len(g.read))
}

// ---------------------------------------------------------------------
// DigitalOcean: digitalocean-cloud-controller-manager v0.1.68,
// cloud-controller-manager/do/ at 70d527e3.

// upDONodes is buildLoadBalancerRequest's node state
// (filterAndClassifyNodes, classifyNode by ExternalIP families) and
// nodesToDropletIDs: the droplets of every Node (what an INTERNAL load
// balancer takes), of those an EXTERNAL one takes (a public IPv4; the
// private fallback of REGIONAL ones adds none for these Nodes), and
// whether those are all dual-stack (getNetworkStack).
func upDONodes(t *testing.T, names []string) (all, external []int, allDual bool) {
	t.Helper()
	allDual = true
	for _, name := range names {
		node, err := cp.Admin.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		id, err := strconv.Atoi(strings.TrimPrefix(node.Spec.ProviderID, "digitalocean://"))
		if err != nil {
			t.Fatalf("Node %s: providerID %q", name, node.Spec.ProviderID)
		}
		all = append(all, id)
		v4, v6 := false, false
		for _, a := range node.Status.Addresses {
			if a.Type == v1.NodeExternalIP {
				ip, err := netip.ParseAddr(a.Address)
				v6 = v6 || (err == nil && ip.Is6())
				v4 = v4 || (err == nil && ip.Is4())
			}
		}
		if v4 {
			allDual = allDual && v6
			external = append(external, id)
		}
	}
	return all, external, allDual && len(external) > 0
}

// upDOName is getLoadBalancerName: the name annotation, else
// getLoadBalancerLegacyName.
func upDOName(svc *v1.Service) string {
	return cmp.Or(svc.Annotations[upDOAnnPrefix+"name"], cloudprovider.DefaultLoadBalancerName(svc))
}

// upDOFind is retrieveLoadBalancer: by the ID annotation (a 404 is
// errLBNotFound), else findLoadBalancerByName over every load balancer.
func upDOFind(t *testing.T, c *godo.Client, svc *v1.Service, all []godo.LoadBalancer) (*godo.LoadBalancer, string) {
	t.Helper()
	if id := svc.Annotations[upDOAnnID]; id != "" {
		lb, resp, err := c.LoadBalancers.Get(context.Background(), id)
		if resp != nil && resp.StatusCode == http.StatusNotFound {
			return nil, "by the " + upDOAnnID + " annotation " + id
		}
		if err != nil {
			t.Fatalf("getting load balancer %s: %v", id, err)
		}
		return lb, "by the " + upDOAnnID + " annotation"
	}
	for _, cand := range slices.Compact([]string{upDOName(svc), cloudprovider.DefaultLoadBalancerName(svc)}) {
		for _, lb := range all {
			if lb.Name == cand {
				return &lb, "by name " + cand
			}
		}
	}
	return nil, "by name"
}

// A Service's load balancer as polyccm made it on DigitalOcean, with and
// without the name annotation, certificate-free, EXTERNAL and INTERNAL,
// changed (ports, the name annotation) and deleted, is found by the
// DigitalOcean CCM's next sync, which updates it in place on its
// addresses; no load balancer is left that no Service's sync finds.
func TestDigitalOceanSwitchBackToTheDigitalOceanCCM(t *testing.T) {
	ctx := context.Background()
	// The DigitalOcean CCM's defaults: REGIONAL_NETWORK (DEFAULT_LB_TYPE
	// unset), DO_CLUSTER_ID set as on DOKS, the region its droplets are
	// in (fra1: upstreamDORequest's, DO_REGION or the metadata's).
	e := newDOEnv(t, nil, func(s *harness.Settings) {
		s.DriverBlock = strings.Replace(s.DriverBlock, "\nloadBalancer:\n  defaultType: REGIONAL", "", 1)
		s.DriverBlock += "\nclusterID: " + upDOClusterID
		withServices(s)
	})
	var nodes []string
	for i := range 2 {
		d := e.fake.AddDroplet(fakedo.Droplet{Name: e.nodeName(i), Status: fakedo.StatusActive, SizeSlug: "s-2vcpu-4gb", Region: "fra1"})
		e.register(d.Name, "")
		nodes = append(nodes, d.Name)
	}
	e.waitInitialized(nodes, 30*time.Second)
	ns := switchBackNS(t, "do-switchback")
	nsService(t, ns, "plain", nil, nil, tcp(80))
	nsService(t, ns, "named", map[string]string{upDOAnnPrefix + "name": "sb-named", upDOAnnType: "REGIONAL"}, nil, tcp(443))
	nsService(t, ns, "internal", map[string]string{upDOAnnPrefix + "network": "INTERNAL"}, nil, tcp(5432))
	nsService(t, ns, "gone", nil, nil, udp(53))
	live := []string{"plain", "named", "internal"}
	ips := map[string][]string{}
	for _, n := range append(live, "gone") {
		ips[n] = ingressIPs(waitNSIngress(t, ns, n, 2*time.Minute))
	}

	// Changes: a port more; a new name (upstream's update renames the
	// load balancer it finds by ID).
	changeService(t, ns, "plain", func(s *v1.Service) { s.Spec.Ports = append(s.Spec.Ports, tcp(8080)) })
	changeService(t, ns, "named", func(s *v1.Service) { s.Annotations[upDOAnnPrefix+"name"] = "sb-renamed" })
	for _, lb := range e.fake.LoadBalancers() { // found by address, whatever polyccm named them
		switch lb.IP {
		case ips["plain"][0]:
			if len(lb.ForwardingRules) != 2 {
				t.Errorf("plain's load balancer has %d forwarding rules after the change, want 2", len(lb.ForwardingRules))
			}
		case ips["named"][0]:
			if lb.Name != "sb-renamed" {
				t.Errorf("named's load balancer is named %q after the change, want sb-renamed", lb.Name)
			}
		}
	}
	goneSvc := nsSvc(t, ns, "gone")
	deleteNSServiceAndWait(t, ns, "gone", 2*time.Minute)
	waitNoCloudWrites(t, e.fake.Faults().Calls, func(ep string) bool { return strings.HasPrefix(ep, "GET ") })
	stopForTheSwitchBack(t, e.env)

	n := &upNext{t: t}
	c := e.user
	all, _, err := c.LoadBalancers.List(ctx, &godo.ListOptions{PerPage: 200}) // allLoadBalancerList
	if err != nil {
		t.Fatal(err)
	}
	allDroplets, droplets, allDual := upDONodes(t, nodes)
	found := map[string]bool{}
	for _, name := range live {
		svc := nsSvc(t, ns, name)
		if svc.Annotations[upDOAnnID] == "" {
			// Upstream writes it once it has the load balancer
			// (updateServiceAnnotation) and looks by it first.
			n.bad(svc, "no %s annotation: found by name only", upDOAnnID)
		}
		lb, how := upDOFind(t, c, svc, all)
		if lb == nil {
			n.bad(svc, "create: no load balancer found %s", how)
			continue
		}
		found[lb.ID] = true
		if want := upDOName(svc); lb.Name != want {
			n.bad(svc, "load balancer %s is named %q, getLoadBalancerName is %q", lb.ID, lb.Name, want)
		}
		// retrieveAndAnnotateLoadBalancer records the type it finds; the
		// request's network and network stack must be the load
		// balancer's, which the API cannot change (getNetwork,
		// getNetworkStack).
		if svc.Annotations[upDOAnnType] != lb.Type {
			n.update(svc, "the %s annotation %q to %s", upDOAnnType, svc.Annotations[upDOAnnType], lb.Type)
		}
		network := cmp.Or(svc.Annotations[upDOAnnPrefix+"network"], "EXTERNAL")
		stack := "DUALSTACK"
		if network == "INTERNAL" || (lb.Type == "REGIONAL_NETWORK" && !allDual) {
			stack = "IPV4"
		}
		if lb.Network != network || lb.NetworkStack != stack || lb.Region == nil || lb.Region.Slug != "fra1" {
			n.bad(svc, "load balancer %s is %s %s in %v; upstream asks for %s %s in fra1, which an update cannot change", lb.ID, lb.Network, lb.NetworkStack, lb.Region, network, stack)
		}
		// buildLoadBalancerRequest tags it k8s:<DO_CLUSTER_ID>; an
		// update keeps the tags it had.
		if tags := e.fake.LoadBalancerTags(lb.ID); !slices.Contains(tags, "k8s:"+upDOClusterID) {
			n.bad(svc, "load balancer %s has tags %v, not upstream's k8s:%s", lb.ID, tags, upDOClusterID)
		}
		// EnsureLoadBalancer's status: IP, then IPv6.
		want := []string{lb.IP}
		if lb.IPv6 != "" {
			want = append(want, lb.IPv6)
		}
		if got := ingressIPs(svc); !slices.Equal(got, want) || !slices.Equal(got, ips[name]) {
			n.bad(svc, "it publishes %v, the Service shows %v (first %v)", want, got, ips[name])
		}
		// updateLoadBalancer: the whole request, as PUT. It must be
		// taken, on the same addresses.
		req := upstreamDORequest(svc, lb.Type, stack, droplets, "")
		req.Name, req.Network = upDOName(svc), network
		if network == "INTERNAL" {
			req.DropletIDs = allDroplets // filterAndClassifyNodes: every node
		}
		got, _, err := c.LoadBalancers.Update(ctx, lb.ID, req)
		switch {
		case err != nil:
			n.bad(svc, "its update of load balancer %s fails: %v", lb.ID, err)
		case got.IP != lb.IP || got.IPv6 != lb.IPv6:
			n.bad(svc, "its update moved load balancer %s from %s/%s to %s/%s", lb.ID, lb.IP, lb.IPv6, got.IP, got.IPv6)
		default:
			t.Logf("upstream's next sync of %s/%s finds load balancer %s (%s, %s %s) %s and updates it on %s %s", ns, name, lb.ID, lb.Name, lb.Type, lb.NetworkStack, how, got.IP, got.IPv6)
		}
	}
	if st := e.fake.LoadBalancerStats(); len(e.fake.LoadBalancers()) != len(live) {
		t.Errorf("%d load balancers after upstream's sync, want %d (%+v)", len(e.fake.LoadBalancers()), len(live), st)
	}
	// What no live Service's sync finds, upstream never deletes.
	for _, lb := range all {
		if found[lb.ID] {
			continue
		}
		whose := "no live Service's"
		if lb.ID == goneSvc.Annotations[upDOAnnID] || lb.Name == upDOName(goneSvc) {
			whose = "the deleted Service's"
		}
		t.Errorf("load balancer %s (%s) is left: %s, which upstream would never delete", lb.ID, lb.Name, whose)
	}
}

// ---------------------------------------------------------------------
// Hetzner Cloud: hcloud-cloud-controller-manager at 6485324f.

// upHZFind is EnsureLoadBalancer's lookup: GetByK8SServiceUID (the label
// selector hcloud-ccm/service-uid=<UID>; more than one is an error), else
// GetByName(GetLoadBalancerName).
func upHZFind(t *testing.T, c *hcloud.Client, svc *v1.Service) (*hcloud.LoadBalancer, string, error) {
	t.Helper()
	ctx := context.Background()
	lbs, err := c.LoadBalancer.AllWithOpts(ctx, hcloud.LoadBalancerListOpts{ListOpts: hcloud.ListOpts{LabelSelector: upHZLabelServiceUID + "=" + string(svc.UID)}})
	if err != nil {
		t.Fatal(err)
	}
	switch len(lbs) {
	case 1:
		return lbs[0], "by its label", nil
	case 0:
	default:
		return nil, "", fmt.Errorf("%d load balancers labelled %s=%s: GetByK8SServiceUID fails (ErrNonUniqueResult)", len(lbs), upHZLabelServiceUID, svc.UID)
	}
	name := cmp.Or(svc.Annotations[upHZAnn+"name"], cloudprovider.DefaultLoadBalancerName(svc)) // GetLoadBalancerName
	lb, _, err := c.LoadBalancer.GetByName(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	return lb, "by name " + name, nil
}

// managedCertificate is reconcileManagedCertificate and
// hclbServiceOptsBuilder's managed branch: upstream creates the
// certificate by its name on every sync (uniqueness_error: it exists),
// then uses the one certificate labelled with the Service UID
// (GetCertificateByLabel).
func (n *upNext) managedCertificate(t *testing.T, c *hcloud.Client, svc *v1.Service, lb *hcloud.LoadBalancer) {
	t.Helper()
	certs, err := c.Certificate.AllWithOpts(context.Background(), hcloud.CertificateListOpts{ListOpts: hcloud.ListOpts{LabelSelector: upHZLabelServiceUID + "=" + string(svc.UID)}})
	if err != nil {
		t.Fatal(err)
	}
	if len(certs) != 1 {
		n.bad(svc, "%d certificates labelled %s=%s: GetCertificateByLabel wants one", len(certs), upHZLabelServiceUID, svc.UID)
		return
	}
	cert := certs[0]
	if want := cmp.Or(svc.Annotations[upHZAnn+"http-managed-certificate-name"], "ccm-managed-certificate-"+string(svc.UID)); cert.Name != want || cert.Type != hcloud.CertificateTypeManaged {
		n.bad(svc, "certificate %d is %s %q: upstream creates a managed %q beside it, and then two carry the label", cert.ID, cert.Type, cert.Name, want)
	}
	for _, s := range lb.Services {
		if !slices.ContainsFunc(s.HTTP.Certificates, func(c *hcloud.Certificate) bool { return c.ID == cert.ID }) {
			n.update(svc, "load balancer %d's port %d to certificate %d", lb.ID, s.ListenPort, cert.ID)
		}
	}
	t.Logf("upstream's next sync of %s/%s uses managed certificate %s (%d)", svc.Namespace, svc.Name, cert.Name, cert.ID)
}

// A Service's load balancer as polyccm made it on Hetzner Cloud, in the
// cluster's Network, with and without the name annotation and private
// targets, with a managed certificate, at a private address of its own,
// changed (ports, the name annotation) and deleted, is found by hcloud
// CCM's next sync by its label, stays attached where it is and keeps its
// addresses; no load balancer is left that no Service's sync finds.
func TestHetznerSwitchBackToHcloudCCM(t *testing.T) {
	ctx := context.Background()
	// hcloud CCM with HCLOUD_NETWORK=k8s and
	// HCLOUD_LOAD_BALANCERS_LOCATION=fsn1, as polyccm's config says;
	// every other variable unset, as polyccm's other keys are.
	e, _ := newHZEnv(t, hzOptions{tweak: withServices})
	servers := e.nodeServers(3, "fsn1")
	ns := switchBackNS(t, "hz-switchback")
	nsService(t, ns, "web", nil, nil, tcp(80))
	nsService(t, ns, "named", map[string]string{upHZAnn + "name": "sb-shop", upHZAnn + "use-private-ip": "true"}, nil, tcp(8080))
	// hcloud CCM's managed certificate: a resource of its own, which it
	// finds by its label.
	nsService(t, ns, "tls", map[string]string{upHZAnn + "protocol": "https", upHZAnn + "certificate-type": "managed",
		upHZAnn + "http-managed-certificate-domains": "shop.example.com"}, nil, tcp(443))
	// A private address of its own; only the public IPv4 published.
	nsService(t, ns, "fixed", map[string]string{upHZAnn + "private-ipv4": "10.0.0.100", upHZAnn + "disable-private-ingress": "true",
		upHZAnn + "ipv6-disabled": "true"}, nil, tcp(9000))
	nsService(t, ns, "gone", nil, nil, tcp(5432))
	live := []string{"web", "named", "tls", "fixed"}
	ips := map[string][]string{}
	for _, n := range append(live, "gone") {
		ips[n] = ingressIPs(waitNSIngress(t, ns, n, 2*time.Minute))
	}

	changeService(t, ns, "web", func(s *v1.Service) { s.Spec.Ports = append(s.Spec.Ports, tcp(443)) })
	changeService(t, ns, "named", func(s *v1.Service) { s.Annotations[upHZAnn+"name"] = "sb-shop-2" })
	for _, lb := range e.fake.LoadBalancers() { // found by address, whatever polyccm labelled them
		switch lb.IPv4 {
		case ips["web"][0]:
			if len(lb.Services) != 2 {
				t.Errorf("web's load balancer has services %q after the change, want two", lbServices(lb))
			}
		case ips["named"][0]:
			if lb.Name != "sb-shop-2" {
				t.Errorf("named's load balancer is named %q after the change, want sb-shop-2", lb.Name)
			}
		}
	}
	goneSvc := nsSvc(t, ns, "gone")
	deleteNSServiceAndWait(t, ns, "gone", 2*time.Minute)
	waitNoCloudWrites(t, e.fake.Faults().Calls, func(ep string) bool { return strings.HasPrefix(ep, "GET ") })
	stopForTheSwitchBack(t, e.env)

	n := &upNext{t: t}
	found := map[int64]bool{}
	for _, name := range live {
		svc := nsSvc(t, ns, name)
		lb, how, err := upHZFind(t, e.user, svc)
		switch {
		case err != nil:
			n.bad(svc, "%v", err)
			continue
		case lb == nil:
			n.bad(svc, "create: no load balancer labelled %s=%s or named %s", upHZLabelServiceUID, svc.UID, cmp.Or(svc.Annotations[upHZAnn+"name"], cloudprovider.DefaultLoadBalancerName(svc)))
			continue
		case how != "by its label":
			// changeHCLBInfo labels one found by name: polyccm's own
			// creates carry the label, as upstream's Create does.
			n.bad(svc, "load balancer %d found %s only: it has no %s label", lb.ID, how, upHZLabelServiceUID)
		}
		found[lb.ID] = true
		// Create names it GetLoadBalancerName; changeHCLBInfo renames
		// it to the name annotation.
		if want := cmp.Or(svc.Annotations[upHZAnn+"name"], cloudprovider.DefaultLoadBalancerName(svc)); lb.Name != want {
			n.bad(svc, "load balancer %d is named %q, upstream's name for it is %q", lb.ID, lb.Name, want)
		}
		// What Create sets and ReconcileHCLB never changes with these
		// settings: the location, the type (changeType only for a set
		// type), the algorithm (changeAlgorithm only for a set one), the
		// public interface (togglePublicInterface only for a set one).
		if lb.Location == nil || lb.Location.Name != "fsn1" || lb.LoadBalancerType == nil || lb.LoadBalancerType.Name != "lb11" ||
			lb.Algorithm.Type != hcloud.LoadBalancerAlgorithmTypeRoundRobin || !lb.PublicNet.Enabled {
			n.bad(svc, "load balancer %d is %v in %v, %s, public %v; upstream makes lb11 in fsn1, round_robin, public, and changes none of that",
				lb.ID, lb.LoadBalancerType, lb.Location, lb.Algorithm.Type, lb.PublicNet.Enabled)
		}
		// detachFromNetwork detaches it from every network but
		// HCLOUD_NETWORK, and from that one at another address than the
		// private-ipv4 annotation's; attachToNetwork then attaches it:
		// either changes its private address.
		privateIP, fixed := svc.Annotations[upHZAnn+"private-ipv4"]
		if len(lb.PrivateNet) != 1 || lb.PrivateNet[0].Network == nil || lb.PrivateNet[0].Network.ID != e.network ||
			(fixed && lb.PrivateNet[0].IP.String() != privateIP) {
			n.bad(svc, "load balancer %d is in networks %+v: upstream detaches it and attaches it to %d (at %q), on a new private address", lb.ID, lb.PrivateNet, e.network, privateIP)
			continue
		}
		// buildLoadBalancerStatusIngress: the public IPv4, the IPv6
		// (getIPv6Enabled: unless ipv6-disabled), the private address
		// (getPrivateIngressEnabled: unless disable-private-ingress),
		// each VIP (no PROXY protocol).
		want := []string{lb.PublicNet.IPv4.IP.String()}
		if svc.Annotations[upHZAnn+"ipv6-disabled"] != "true" {
			want = append(want, lb.PublicNet.IPv6.IP.String())
		}
		if svc.Annotations[upHZAnn+"disable-private-ingress"] != "true" {
			want = append(want, lb.PrivateNet[0].IP.String())
		}
		got := ingressIPs(svc)
		if !slices.Equal(got, want) || !slices.Equal(got, ips[name]) {
			n.bad(svc, "it publishes %v, the Service shows %v (first %v)", want, got, ips[name])
		}
		t.Logf("upstream's next sync of %s/%s finds load balancer %d (%s) %s, in network %d, publishing %v", ns, name, lb.ID, lb.Name, how, e.network, want)
		for _, in := range svc.Status.LoadBalancer.Ingress {
			if in.IPMode == nil || *in.IPMode != v1.LoadBalancerIPModeVIP {
				n.update(svc, "%s's ipMode %v to VIP", in.IP, in.IPMode)
			}
		}
		// ReconcileHCLBTargets recreates a target whose use_private_ip
		// is not getPrivateIPEnabled's, and adds missing servers.
		private := svc.Annotations[upHZAnn+"use-private-ip"] == "true"
		var have []string
		for _, tg := range lb.Targets {
			if tg.Type == hcloud.LoadBalancerTargetTypeServer && tg.Server != nil && tg.Server.Server != nil {
				have = append(have, fmt.Sprintf("%d private=%v", tg.Server.Server.ID, tg.UsePrivateIP))
			}
		}
		var wantTargets []string
		for _, sv := range servers {
			wantTargets = append(wantTargets, fmt.Sprintf("%d private=%v", sv.ID, private))
		}
		if !sameSet(have, wantTargets) {
			n.update(svc, "load balancer %d targets %v to %v", lb.ID, have, wantTargets)
		}
		if svc.Annotations[upHZAnn+"certificate-type"] == "managed" {
			n.managedCertificate(t, e.user, svc, lb)
		}
		// ReconcileHCLBServices: one service per port, listening on it.
		var listen, ports []string
		for _, s := range lb.Services {
			listen = append(listen, strconv.Itoa(s.ListenPort))
		}
		for _, p := range svc.Spec.Ports {
			ports = append(ports, strconv.Itoa(int(p.Port)))
		}
		if !sameSet(listen, ports) {
			n.update(svc, "load balancer %d listens on %v, the Service's ports are %v", lb.ID, listen, ports)
		}
	}
	// What no live Service's sync finds, upstream never deletes.
	all, err := e.user.LoadBalancer.All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, lb := range all {
		if found[lb.ID] {
			continue
		}
		whose := "no live Service's"
		if lb.Labels[upHZLabelServiceUID] == string(goneSvc.UID) || lb.Name == cloudprovider.DefaultLoadBalancerName(goneSvc) {
			whose = "the deleted Service's"
		}
		t.Errorf("load balancer %d (%s) is left: %s, which upstream would never delete", lb.ID, lb.Name, whose)
	}
}
