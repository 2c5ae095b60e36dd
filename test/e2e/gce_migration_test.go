//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"golang.org/x/oauth2"
	computev1 "google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	fakegce "github.com/polyccm/polyccm/test/fakecloud/gce"
	"github.com/polyccm/polyccm/test/harness"
)

// The GCE migration test (issue 18): the fake project holds what
// kubernetes/cloud-provider-gcp (providers/gce, at commit 4e245312,
// 2026-08-19) builds for two external Services, an internal one and the
// routes of a routes-based cluster, made through the API calls it makes,
// in its order, then polyccm takes over. It must create no load balancer,
// change no address, delete nothing of upstream's, serve a new internal
// Service beside the old ones on the same instance groups, carry node
// churn to every load balancer and route, and leave nothing once the
// Services are deleted, none of them stuck in Terminating.
//
// TestGCEMigrationFromCloudProviderGCPDenyFirewall does the same from an
// upstream that ran with its opt-in L4 deny firewall
// (--enable-l4-deny-firewall, which needs
// --enable-l4-deny-firewall-rollback-cleanup): each external load
// balancer also has a rule denying all to its address, below its allow
// rules, which polyccm must neither override nor leave behind.
//
// Everything below is written from upstream's code, never polyccm's: each
// value names the upstream function it comes from.

const (
	upGCEClusterID   = "6c2f0e9a41b8d573" // gce_clusterid.go makeUID: UIDLengthBytes (8) random bytes, hex
	upGCEClusterName = "e2e"              // --cluster-name; polyccm's clusterName (harness.Settings' default)

	// gce_loadbalancer_external.go: firewallPriorityDefault, and with
	// --enable-l4-deny-firewall firewallPriorityAllow for the allow rules
	// and firewallPriorityDeny for the deny rule.
	upGCEPriorityDefault, upGCEPriorityAllow, upGCEPriorityDeny = 1000, 999, 1000
	// gce.go gceComputeAPIEndpoint: the base of gceNetworkURL and
	// gceSubnetworkURL.
	upGCEAPI = "https://www.googleapis.com/compute/v1/"
	// gce.go getProjectsBasePath(service.BasePath), the discovery
	// client's base: targetPoolURL, getBackendServiceLink, makeHostURL.
	upGCEProjects = "https://compute.googleapis.com/compute/v1/projects/"

	upGCENetworkURL = upGCEAPI + "projects/" + gceProject + "/global/networks/default"                       // gceNetworkURL
	upGCESubnetURL  = upGCEAPI + "projects/" + gceProject + "/regions/" + gceRegion + "/subnetworks/default" // gceSubnetworkURL (subnetwork-name)

	upGCENetLBFinalizer = "gke.networking.io/l4-netlb-v1"        // gce_util.go NetLBFinalizerV1
	upGCEILBFinalizer   = "gke.networking.io/l4-ilb-v1"          // gce_loadbalancer_internal.go ILBFinalizerV1
	upGCEAnnLBType      = "networking.gke.io/load-balancer-type" // gce_annotations.go ServiceAnnotationLoadBalancerType
	upGCENodesHCPort    = 10256                                  // gce_healthchecks.go lbNodesHealthCheckPort
	upGCENodesHCPath    = "/healthz"                             // gce_healthchecks.go nodesHealthCheckPath
	upGCERouteTag       = "k8s-node-route"                       // gce.go k8sNodeRouteTag

	// gce_loadbalancer_naming.go
	upGCENodesHC      = "k8s-" + upGCEClusterID + "-node"    // MakeNodesHealthCheckName, makeHealthCheckName(shared)
	upGCENodesHCFW    = upGCENodesHC + "-http-hc"            // MakeHealthCheckFirewallName(isNodesHealthCheck)
	upGCENodesILBHCFW = "k8s-" + upGCEClusterID + "-node-hc" // makeHealthCheckFirewallName(shared)
	upGCEGroup        = "k8s-ig--" + upGCEClusterID          // makeInstanceGroupName

	// gce.go gceHcCheckIntervalSeconds, gceHcTimeoutSeconds,
	// gceHcHealthyThreshold, gceHcUnhealthyThreshold.
	upGCEHCInterval, upGCEHCTimeout, upGCEHCHealthy, upGCEHCUnhealthy = 8, 1, 1, 3

	gceMigNS          = "gce-migration"
	gceMigClusterCIDR = "10.244.0.0/16"
)

// upGCEL4SrcRanges is gce_loadbalancer.go l4LbSrcRngsFlag's default: the
// L3/L4 health checkers' ranges (an IPNetSet, so in no set order).
var upGCEL4SrcRanges = []string{"130.211.0.0/22", "35.191.0.0/16", "209.85.152.0/22", "209.85.204.0/22"}

// upGCEServiceDesc is makeServiceDescription, makeHealthCheckDescription
// and makeBackendServiceDescription (not shared): the same JSON.
func upGCEServiceDesc(name string) string {
	return fmt.Sprintf(`{"kubernetes.io/service-name":"%s"}`, name)
}

// upGCEFirewallDesc is makeFirewallDescription: note the space.
func upGCEFirewallDesc(name, ip string) string {
	return fmt.Sprintf(`{"kubernetes.io/service-name":"%s", "kubernetes.io/service-ip":"%s"}`, name, ip)
}

// upGCEFwdRuleDesc is gce_loadbalancer_internal.go forwardingRuleDescription,
// marshalled by its marshal method.
type upGCEFwdRuleDesc struct {
	ServiceName string `json:"kubernetes.io/service-name"`
	APIVersion  string `json:"kubernetes.io/api-version,omitempty"`
}

// upGCEPorts is getPortsAndProtocol: the ports as strings, getPortRanges'
// runs of consecutive ports, and the first port's protocol.
func upGCEPorts(ps []v1.ServicePort) (ports, ranges []string, proto string) {
	var nums []int
	for _, p := range ps {
		ports = append(ports, strconv.Itoa(int(p.Port)))
		nums = append(nums, int(p.Port))
	}
	slices.Sort(nums)
	nums = slices.Compact(nums)
	for i := 0; i < len(nums); {
		j := i
		for j+1 < len(nums) && nums[j+1] == nums[j]+1 {
			j++
		}
		if i == j {
			ranges = append(ranges, strconv.Itoa(nums[i]))
		} else {
			ranges = append(ranges, fmt.Sprintf("%d-%d", nums[i], nums[j]))
		}
		i = j + 1
	}
	return ports, ranges, string(ps[0].Protocol)
}

// upGCEPortRange is loadBalancerPortRange: lowest to highest port.
func upGCEPortRange(ps []v1.ServicePort) string {
	lo, hi := ps[0].Port, ps[0].Port
	for _, p := range ps {
		lo, hi = min(lo, p.Port), max(hi, p.Port)
	}
	return fmt.Sprintf("%d-%d", lo, hi)
}

// upGCE makes what cloud-provider-gcp makes, through the Compute clients:
// cloud.google.com/go/compute, and the discovery-based
// google.golang.org/api/compute/v1 for the legacy HTTP health checks,
// which the former has no client for.
type upGCE struct {
	t   *testing.T
	ctx context.Context
	// deny: upstream runs with --enable-l4-deny-firewall
	// (enableL4DenyFirewallRule).
	deny   bool
	addrs  *compute.AddressesClient
	fws    *compute.FirewallsClient
	pools  *compute.TargetPoolsClient
	rules  *compute.ForwardingRulesClient
	hcs    *compute.HealthChecksClient
	bss    *compute.RegionBackendServicesClient
	igs    *compute.InstanceGroupsClient
	routes *compute.RoutesClient
	legacy *computev1.Service
}

func newUpGCE(t *testing.T, e *gceEnv, deny bool) *upGCE {
	t.Helper()
	ctx := context.Background()
	tok := option.WithTokenSource(oauth2.StaticTokenSource(&oauth2.Token{AccessToken: e.secret, TokenType: "Bearer"}))
	opts := []option.ClientOption{option.WithEndpoint(e.fake.URL()), tok}
	u := &upGCE{t: t, ctx: ctx, deny: deny}
	var errs []error
	keep := func(err error) { errs = append(errs, err) }
	var err error
	u.addrs, err = compute.NewAddressesRESTClient(ctx, opts...)
	keep(err)
	u.fws, err = compute.NewFirewallsRESTClient(ctx, opts...)
	keep(err)
	u.pools, err = compute.NewTargetPoolsRESTClient(ctx, opts...)
	keep(err)
	u.rules, err = compute.NewForwardingRulesRESTClient(ctx, opts...)
	keep(err)
	u.hcs, err = compute.NewHealthChecksRESTClient(ctx, opts...)
	keep(err)
	u.bss, err = compute.NewRegionBackendServicesRESTClient(ctx, opts...)
	keep(err)
	u.igs, err = compute.NewInstanceGroupsRESTClient(ctx, opts...)
	keep(err)
	u.routes, err = compute.NewRoutesRESTClient(ctx, opts...)
	keep(err)
	u.legacy, err = computev1.NewService(ctx, option.WithEndpoint(e.fake.URL()+"/compute/v1/"), tok)
	keep(err)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, c := range []interface{ Close() error }{u.addrs, u.fws, u.pools, u.rules, u.hcs, u.bss, u.igs, u.routes} {
			_ = c.Close()
		}
	})
	return u
}

// do waits for an operation and fails on its error:
// u.do(what)(client.Insert(...)).
func (u *upGCE) do(what string) func(*compute.Operation, error) {
	u.t.Helper()
	return func(op *compute.Operation, err error) {
		u.t.Helper()
		u.wait(what, op, err)
	}
}

func (u *upGCE) wait(what string, op *compute.Operation, err error) {
	u.t.Helper()
	if err == nil {
		err = op.Wait(u.ctx)
	}
	if err == nil {
		if e := op.Proto().GetError(); e != nil && len(e.GetErrors()) > 0 {
			err = fmt.Errorf("operation %s failed: %s: %s", op.Name(), e.GetErrors()[0].GetCode(), e.GetErrors()[0].GetMessage())
		}
	}
	if err != nil {
		u.t.Fatalf("upstream's %s: %v", what, err)
	}
}

// doLegacy is do for the discovery client's global operations.
func (u *upGCE) doLegacy(what string) func(*computev1.Operation, error) {
	u.t.Helper()
	return func(op *computev1.Operation, err error) {
		u.t.Helper()
		u.waitLegacy(what, op, err)
	}
}

func (u *upGCE) waitLegacy(what string, op *computev1.Operation, err error) {
	u.t.Helper()
	for err == nil && op.Status != "DONE" {
		op, err = u.legacy.GlobalOperations.Wait(gceProject, op.Name).Do()
	}
	if err == nil && op.Error != nil && len(op.Error.Errors) > 0 {
		err = fmt.Errorf("operation %s failed: %s: %s", op.Name, op.Error.Errors[0].Code, op.Error.Errors[0].Message)
	}
	if err != nil {
		u.t.Fatalf("upstream's %s: %v", what, err)
	}
}

// found tells a get that found the resource from a 404; anything else
// fails.
func (u *upGCE) found(what string, err error) bool {
	u.t.Helper()
	var ge *googleapi.Error
	switch {
	case err == nil:
		return true
	case errors.As(err, &ge) && ge.Code == http.StatusNotFound:
		return false
	}
	u.t.Fatalf("upstream's get of %s: %v", what, err)
	return false
}

// absent is a get upstream makes before creating a resource it has never
// made.
func (u *upGCE) absent(what string, err error) {
	u.t.Helper()
	if u.found(what, err) {
		u.t.Fatalf("upstream's get of %s found it, before anything was made", what)
	}
}

// addFinalizer is gce_util.go addFinalizer (and the service controller's
// own): the key appended to the Service's finalizers.
func (u *upGCE) addFinalizer(svc *v1.Service, key string) {
	u.t.Helper()
	cur := nsSvc(u.t, svc.Namespace, svc.Name)
	if slices.Contains(cur.Finalizers, key) {
		return
	}
	cur.Finalizers = append(cur.Finalizers, key)
	if _, err := cp.Admin.CoreV1().Services(cur.Namespace).Update(u.ctx, cur, metav1.UpdateOptions{}); err != nil {
		u.t.Fatal(err)
	}
}

// publish is the service controller's status patch after
// EnsureLoadBalancer: the forwarding rule's address.
func (u *upGCE) publish(svc *v1.Service, ip string) {
	u.t.Helper()
	cur := nsSvc(u.t, svc.Namespace, svc.Name)
	cur.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: ip}}
	if _, err := cp.Admin.CoreV1().Services(cur.Namespace).UpdateStatus(u.ctx, cur, metav1.UpdateOptions{}); err != nil {
		u.t.Fatal(err)
	}
}

func (u *upGCE) insertFirewall(fw *computepb.Firewall) {
	u.t.Helper()
	u.do("firewall " + fw.GetName())(u.fws.Insert(u.ctx, &computepb.InsertFirewallRequest{Project: gceProject, FirewallResource: fw}))
}

func (u *upGCE) getFirewall(name string) error {
	_, err := u.fws.Get(u.ctx, &computepb.GetFirewallRequest{Project: gceProject, Firewall: name})
	return err
}

// allowPriority is ensureAllowNodeFirewall's and
// ensureHTTPHealthCheckFirewall's allowPriority.
func (u *upGCE) allowPriority() *int32 {
	if u.deny {
		return ptrTo(int32(upGCEPriorityAllow))
	}
	return ptrTo(int32(upGCEPriorityDefault))
}

// external is ensureExternalLoadBalancer (gce_loadbalancer_external.go)
// for a Service it has not seen before, on hosts; it returns the address.
func (u *upGCE) external(svc *v1.Service, hosts []fakegce.Instance) string {
	u.t.Helper()
	ctx := u.ctx
	lb := cloudprovider.DefaultLoadBalancerName(svc) // GetLoadBalancerName
	nm := svc.Namespace + "/" + svc.Name
	_, ranges, proto := upGCEPorts(svc.Spec.Ports)

	// EnsureLoadBalancer looks for the forwarding rule to compare schemes.
	_, err := u.rules.Get(ctx, &computepb.GetForwardingRuleRequest{Project: gceProject, Region: gceRegion, ForwardingRule: lb})
	u.absent("forwarding rule "+lb, err)
	u.addFinalizer(svc, upGCENetLBFinalizer)

	// ensureStaticIP: no forwarding rule, so a new address named for the
	// load balancer, of the default tier (getServiceNetworkTier), read
	// back by name.
	u.do("address " + lb)(u.addrs.Insert(ctx, &computepb.InsertAddressRequest{Project: gceProject, Region: gceRegion, AddressResource: &computepb.Address{
		Name: ptrTo(lb), Description: ptrTo(upGCEServiceDesc(nm)), NetworkTier: ptrTo("PREMIUM"),
	}}))
	addr, err := u.addrs.Get(ctx, &computepb.GetAddressRequest{Project: gceProject, Region: gceRegion, Address: lb})
	if err != nil {
		u.t.Fatal(err)
	}
	ip := addr.GetAddress()

	// ensureAllowNodeFirewall: firewallNeedsUpdate finds none;
	// createFirewall with firewallObject.
	fw := "k8s-fw-" + lb // MakeFirewallName
	u.absent("firewall "+fw, u.getFirewall(fw))
	u.insertFirewall(&computepb.Firewall{
		Name:              ptrTo(fw),
		Description:       ptrTo(upGCEFirewallDesc(nm, ip)),
		Network:           ptrTo(upGCENetworkURL),
		SourceRanges:      []string{"0.0.0.0/0"}, // servicehelpers.GetLoadBalancerSourceRanges' default
		TargetTags:        []string{gceNodeTag},  // g.nodeTags (node-tags in gce.conf)
		Allowed:           []*computepb.Allowed{{IPProtocol: ptrTo(strings.ToLower(proto)), Ports: ranges}},
		Priority:          u.allowPriority(),
		DestinationRanges: []string{ip},
	})

	// targetPoolNeedsRecreation: no pool yet; GetHTTPHealthCheck(lb): no
	// local-traffic check yet.
	_, err = u.pools.Get(ctx, &computepb.GetTargetPoolRequest{Project: gceProject, Region: gceRegion, TargetPool: lb})
	u.absent("target pool "+lb, err)
	_, err = u.legacy.HttpHealthChecks.Get(gceProject, lb).Do()
	u.absent("HTTP health check "+lb, err)

	// hcToCreate: the nodes' check (makeHTTPHealthCheck(MakeNodesHealthCheckName,
	// GetNodesHealthCheckPath, GetNodesHealthCheckPort)), or, for
	// externalTrafficPolicy Local, the Service's own on its
	// healthCheckNodePort (servicehelpers.GetServiceHealthCheckPathPort).
	// ensureHTTPHealthCheckFirewall names and describes its firewall.
	hcName, hcPath, hcPort := upGCENodesHC, upGCENodesHCPath, int64(upGCENodesHCPort)
	hcFW, hcFWDesc := upGCENodesHCFW, fmt.Sprintf(`{"kubernetes.io/cluster-id":"%s"}`, upGCEClusterID)
	if svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal {
		hcName, hcPath, hcPort = lb, "/healthz", int64(svc.Spec.HealthCheckNodePort)
		hcFW, hcFWDesc = "k8s-"+lb+"-http-hc", upGCEFirewallDesc(nm, ip) // MakeHealthCheckFirewallName, makeFirewallDescription
	}

	// createTargetPoolAndHealthCheck: ensureHTTPHealthCheckFirewall (the
	// nodes' one is shared: made by the first Service that needs it),
	// then ensureHTTPHealthCheck, then CreateTargetPool.
	if !u.found("firewall "+hcFW, u.getFirewall(hcFW)) {
		u.insertFirewall(&computepb.Firewall{
			Name:         ptrTo(hcFW),
			Description:  ptrTo(hcFWDesc),
			Network:      ptrTo(upGCENetworkURL),
			SourceRanges: upGCEL4SrcRanges,
			TargetTags:   []string{gceNodeTag},
			Allowed:      []*computepb.Allowed{{IPProtocol: ptrTo("tcp"), Ports: []string{strconv.FormatInt(hcPort, 10)}}},
			Priority:     u.allowPriority(),
			// firewallObject's destinationIP: the address of the load
			// balancer that made it, even for the shared one.
			DestinationRanges: []string{ip},
		})
	}
	hc, err := u.legacy.HttpHealthChecks.Get(gceProject, hcName).Do()
	if !u.found("HTTP health check "+hcName, err) {
		u.doLegacy("HTTP health check " + hcName)(u.legacy.HttpHealthChecks.Insert(gceProject, &computev1.HttpHealthCheck{
			Name: hcName, Port: hcPort, RequestPath: hcPath,
			Description:      upGCEServiceDesc(hcName), // makeHealthCheckDescription(name)
			CheckIntervalSec: upGCEHCInterval, TimeoutSec: upGCEHCTimeout, HealthyThreshold: upGCEHCHealthy, UnhealthyThreshold: upGCEHCUnhealthy,
		}).Do())
		if hc, err = u.legacy.HttpHealthChecks.Get(gceProject, hcName).Do(); err != nil {
			u.t.Fatal(err)
		}
	}
	var instances []string
	for _, h := range hosts {
		instances = append(instances, "/zones/"+h.Zone+"/instances/"+h.Name) // makeComparableHostPath
	}
	u.do("target pool " + lb)(u.pools.Insert(ctx, &computepb.InsertTargetPoolRequest{Project: gceProject, Region: gceRegion, TargetPoolResource: &computepb.TargetPool{
		Name:            ptrTo(lb),
		Description:     ptrTo(upGCEServiceDesc(nm)),
		Instances:       instances,
		SessionAffinity: ptrTo("NONE"), // translateAffinityType(None)
		HealthChecks:    []string{hc.SelfLink},
	}}))

	// createForwardingRule, last: "if the forwarding rule exists, the LB
	// has been fully created".
	u.do("forwarding rule " + lb)(u.rules.Insert(ctx, &computepb.InsertForwardingRuleRequest{Project: gceProject, Region: gceRegion, ForwardingRuleResource: &computepb.ForwardingRule{
		Name:        ptrTo(lb),
		Description: ptrTo(upGCEServiceDesc(nm)),
		IPAddress:   ptrTo(ip),
		IPProtocol:  ptrTo(proto),                                                                       // getProtocol
		PortRange:   ptrTo(upGCEPortRange(svc.Spec.Ports)),                                              // loadBalancerPortRange
		Target:      ptrTo(upGCEProjects + gceProject + "/regions/" + gceRegion + "/targetPools/" + lb), // targetPoolURL
		NetworkTier: ptrTo("PREMIUM"),
	}}))

	// With the flag, ensureDenyNodeFirewall, once the allow rules are at
	// 999: no deny rule yet, so CreateFirewall with want.
	if u.deny {
		deny := "k8s-fw-" + lb + "-deny" // MakeFirewallDenyName
		u.absent("firewall "+deny, u.getFirewall(deny))
		u.insertFirewall(&computepb.Firewall{
			Name:              ptrTo(deny),
			Description:       ptrTo(upGCEFirewallDesc(nm, ip)),
			Network:           ptrTo(upGCENetworkURL),
			SourceRanges:      []string{"0.0.0.0/0"},
			DestinationRanges: []string{ip},
			TargetTags:        []string{gceNodeTag},
			Denied:            []*computepb.Denied{{IPProtocol: ptrTo("all")}},
			Priority:          ptrTo(int32(upGCEPriorityDeny)),
		})
	}

	// isSafeToReleaseIP: DeleteRegionAddress (deferred, so after the
	// deny rule), which demotes the address the forwarding rule now
	// holds to ephemeral.
	u.do("release of address " + lb + " (held by its forwarding rule)")(u.addrs.Delete(ctx, &computepb.DeleteAddressRequest{Project: gceProject, Region: gceRegion, Address: lb}))
	return ip
}

// internal is ensureInternalLoadBalancer (gce_loadbalancer_internal.go)
// for a Service it has not seen before, with externalTrafficPolicy
// Cluster (shared health check) and no backend-share annotation (its own
// backend service), on nodes; it returns the address.
func (u *upGCE) internal(svc *v1.Service, nodes []fakegce.Instance) string {
	u.t.Helper()
	ctx := u.ctx
	lb := cloudprovider.DefaultLoadBalancerName(svc)
	nm := svc.Namespace + "/" + svc.Name
	ports, ranges, proto := upGCEPorts(svc.Spec.Ports)

	_, err := u.rules.Get(ctx, &computepb.GetForwardingRuleRequest{Project: gceProject, Region: gceRegion, ForwardingRule: lb})
	u.absent("forwarding rule "+lb, err)
	u.addFinalizer(svc, upGCEILBFinalizer)

	// ensureInternalInstanceGroups: splitNodesByZone, then per zone
	// ensureInternalInstanceGroup: a group with nothing but its name,
	// then addInstances with the zone's nodes (sorted: sets.String.List)
	// as ToInstanceReferences' makeHostURL links. Upstream ranges over a
	// map; the zones go in order here.
	byZone := map[string][]string{}
	for _, n := range nodes {
		byZone[n.Zone] = append(byZone[n.Zone], n.Name)
	}
	var igLinks []string
	for _, zone := range slices.Sorted(maps.Keys(byZone)) {
		_, err := u.igs.Get(ctx, &computepb.GetInstanceGroupRequest{Project: gceProject, Zone: zone, InstanceGroup: upGCEGroup})
		u.absent("instance group "+zone+"/"+upGCEGroup, err)
		u.do("instance group " + zone + "/" + upGCEGroup)(u.igs.Insert(ctx, &computepb.InsertInstanceGroupRequest{Project: gceProject, Zone: zone, InstanceGroupResource: &computepb.InstanceGroup{Name: ptrTo(upGCEGroup)}}))
		ig, err := u.igs.Get(ctx, &computepb.GetInstanceGroupRequest{Project: gceProject, Zone: zone, InstanceGroup: upGCEGroup})
		if err != nil {
			u.t.Fatal(err)
		}
		var refs []*computepb.InstanceReference
		for _, name := range slices.Sorted(slices.Values(byZone[zone])) {
			refs = append(refs, &computepb.InstanceReference{Instance: ptrTo(upGCEProjects + gceProject + "/zones/" + zone + "/instances/" + name)})
		}
		u.do("addInstances to " + zone + "/" + upGCEGroup)(u.igs.AddInstances(ctx, &computepb.AddInstancesInstanceGroupRequest{
			Project: gceProject, Zone: zone, InstanceGroup: upGCEGroup,
			InstanceGroupsAddInstancesRequestResource: &computepb.InstanceGroupsAddInstancesRequest{Instances: refs},
		}))
		igLinks = append(igLinks, ig.GetSelfLink())
	}

	// ensureInternalHealthCheck: newInternalLBHealthCheck, shared, so with
	// no description; global (HealthChecks().Get(meta.GlobalKey)).
	hc, err := u.hcs.Get(ctx, &computepb.GetHealthCheckRequest{Project: gceProject, HealthCheck: upGCENodesHC})
	if !u.found("health check "+upGCENodesHC, err) {
		u.do("health check " + upGCENodesHC)(u.hcs.Insert(ctx, &computepb.InsertHealthCheckRequest{Project: gceProject, HealthCheckResource: &computepb.HealthCheck{
			Name:               ptrTo(upGCENodesHC),
			CheckIntervalSec:   ptrTo(int32(upGCEHCInterval)),
			TimeoutSec:         ptrTo(int32(upGCEHCTimeout)),
			HealthyThreshold:   ptrTo(int32(upGCEHCHealthy)),
			UnhealthyThreshold: ptrTo(int32(upGCEHCUnhealthy)),
			HttpHealthCheck:    &computepb.HTTPHealthCheck{Port: ptrTo(int32(upGCENodesHCPort)), RequestPath: ptrTo(upGCENodesHCPath)},
			Type:               ptrTo("HTTP"),
		}}))
		if hc, err = u.hcs.Get(ctx, &computepb.GetHealthCheckRequest{Project: gceProject, HealthCheck: upGCENodesHC}); err != nil {
			u.t.Fatal(err)
		}
	}

	// addressManager.HoldAddress (gce_address_manager.go): no address by
	// the load balancer's name, so ensureAddressReservation reserves a
	// new INTERNAL one in the subnetwork and reads it back.
	_, err = u.addrs.Get(ctx, &computepb.GetAddressRequest{Project: gceProject, Region: gceRegion, Address: lb})
	u.absent("address "+lb, err)
	u.do("address " + lb)(u.addrs.Insert(ctx, &computepb.InsertAddressRequest{Project: gceProject, Region: gceRegion, AddressResource: &computepb.Address{
		Name:        ptrTo(lb),
		Description: ptrTo(upGCEServiceDesc(nm)),
		AddressType: ptrTo("INTERNAL"),
		Subnetwork:  ptrTo(upGCESubnetURL),
	}}))
	addr, err := u.addrs.Get(ctx, &computepb.GetAddressRequest{Project: gceProject, Region: gceRegion, Address: lb})
	if err != nil {
		u.t.Fatal(err)
	}
	ip := addr.GetAddress()

	// ensureInternalBackendService: makeBackendServiceName (not shared:
	// the load balancer's name), backendsFromGroupLinks.
	_, err = u.bss.Get(ctx, &computepb.GetRegionBackendServiceRequest{Project: gceProject, Region: gceRegion, BackendService: lb})
	u.absent("backend service "+lb, err)
	var backends []*computepb.Backend
	for _, l := range igLinks {
		backends = append(backends, &computepb.Backend{Group: ptrTo(l)})
	}
	u.do("backend service " + lb)(u.bss.Insert(ctx, &computepb.InsertRegionBackendServiceRequest{Project: gceProject, Region: gceRegion, BackendServiceResource: &computepb.BackendService{
		Name:                ptrTo(lb),
		Protocol:            ptrTo(proto),
		Description:         ptrTo(upGCEServiceDesc(nm)),
		HealthChecks:        []string{hc.GetSelfLink()},
		Backends:            backends,
		SessionAffinity:     ptrTo("NONE"),
		LoadBalancingScheme: ptrTo("INTERNAL"),
	}}))

	// ensureInternalForwardingRule(nil, newFwdRule), then
	// GetRegionForwardingRule for the address.
	desc, err := json.Marshal(upGCEFwdRuleDesc{ServiceName: nm})
	if err != nil {
		u.t.Fatal(err)
	}
	u.do("forwarding rule " + lb)(u.rules.Insert(ctx, &computepb.InsertForwardingRuleRequest{Project: gceProject, Region: gceRegion, ForwardingRuleResource: &computepb.ForwardingRule{
		Name:                ptrTo(lb),
		Description:         ptrTo(string(desc)),
		IPAddress:           ptrTo(ip),
		BackendService:      ptrTo(upGCEProjects + gceProject + "/regions/" + gceRegion + "/backendServices/" + lb), // getBackendServiceLink
		Ports:               ports,
		IPProtocol:          ptrTo(proto),
		LoadBalancingScheme: ptrTo("INTERNAL"),
		Subnetwork:          ptrTo(upGCESubnetURL),
		Network:             ptrTo(upGCENetworkURL),
	}}))
	fr, err := u.rules.Get(ctx, &computepb.GetForwardingRuleRequest{Project: gceProject, Region: gceRegion, ForwardingRule: lb})
	if err != nil {
		u.t.Fatal(err)
	}
	ip = fr.GetIPAddress()

	// ensureInternalFirewalls: the traffic firewall (after a look for the
	// legacy one named as the load balancer), then the shared health
	// check firewall: ensureInternalFirewall sets no priority.
	fw := "k8s-fw-" + lb
	u.absent("firewall "+fw, u.getFirewall(fw))
	u.absent("legacy firewall "+lb, u.getFirewall(lb))
	u.insertFirewall(&computepb.Firewall{
		Name:              ptrTo(fw),
		Description:       ptrTo(upGCEFirewallDesc(nm, ip)),
		Network:           ptrTo(upGCENetworkURL),
		SourceRanges:      []string{"0.0.0.0/0"},
		TargetTags:        []string{gceNodeTag}, // GetNodeTags: g.nodeTags
		Allowed:           []*computepb.Allowed{{IPProtocol: ptrTo(strings.ToLower(proto)), Ports: ranges}},
		DestinationRanges: []string{ip},
	})
	if !u.found("firewall "+upGCENodesILBHCFW, u.getFirewall(upGCENodesILBHCFW)) {
		u.insertFirewall(&computepb.Firewall{
			Name:         ptrTo(upGCENodesILBHCFW),
			Network:      ptrTo(upGCENetworkURL),
			SourceRanges: upGCEL4SrcRanges, // L4LoadBalancerSrcRanges
			TargetTags:   []string{gceNodeTag},
			Allowed:      []*computepb.Allowed{{IPProtocol: ptrTo("tcp"), Ports: []string{strconv.Itoa(upGCENodesHCPort)}}},
		})
	}

	// The deferred addrMgr.ReleaseAddress: the forwarding rule keeps the
	// address, no longer reserved.
	u.do("release of address " + lb + " (held by its forwarding rule)")(u.addrs.Delete(ctx, &computepb.DeleteAddressRequest{Project: gceProject, Region: gceRegion, Address: lb}))
	return ip
}

// route is the route controller's reconcile for a node with a pod CIDR
// and no route: gce_routes.go CreateRoute with the Node's UID as name
// hint, then updateNetworkingCondition.
func (u *upGCE) route(node *v1.Node, in fakegce.Instance) {
	u.t.Helper()
	name := upGCEClusterName + "-" + string(node.UID) // truncateClusterName(clusterName) + "-" + nameHint
	u.do("route " + name)(u.routes.Insert(u.ctx, &computepb.InsertRouteRequest{Project: gceProject, RouteResource: &computepb.Route{
		Name:            ptrTo(name),
		DestRange:       ptrTo(node.Spec.PodCIDR),
		NextHopInstance: ptrTo("zones/" + in.Zone + "/instances/" + in.Name),
		Network:         ptrTo(upGCENetworkURL),
		Priority:        ptrTo(uint32(1000)),
		Description:     ptrTo(upGCERouteTag),
	}}))
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []v1.NodeCondition{{
		Type: v1.NodeNetworkUnavailable, Status: v1.ConditionFalse, Reason: "RouteCreated",
		Message: "RouteController created a route", LastTransitionTime: metav1.Now(),
	}}}})
	if _, err := cp.Admin.CoreV1().Nodes().Patch(u.ctx, node.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		u.t.Fatal(err)
	}
}

// gceMigHoldings is everything of load balancers and routes the fake
// holds, by kind and name, as JSON.
func gceMigHoldings(f *fakegce.Server) map[string]string {
	out := map[string]string{}
	add := func(kind, name string, v any) {
		b, _ := json.Marshal(v)
		out[kind+" "+name] = string(b)
	}
	for _, r := range f.ForwardingRules() {
		add("forwardingRule", r.Name, r)
	}
	for _, r := range f.Addresses() {
		add("address", r.Name, r)
	}
	for _, r := range f.TargetPools() {
		add("targetPool", r.Name, r)
	}
	for _, r := range f.HTTPHealthChecks() {
		add("httpHealthCheck", r.Name, r)
	}
	for _, r := range f.HealthChecks() {
		add("healthCheck", r.Name, r)
	}
	for _, r := range f.BackendServices() {
		add("backendService", r.Name, r)
	}
	for _, r := range f.InstanceGroups() {
		add("instanceGroup", r.Zone[strings.LastIndexByte(r.Zone, '/')+1:]+"/"+r.Name, struct {
			fakegce.InstanceGroup
			Members []string
		}{r, r.Members})
	}
	for _, r := range f.Firewalls() {
		add("firewall", r.Name, r)
	}
	for _, r := range f.Routes() {
		add("route", r.Name, r)
	}
	return out
}

func gceMigDump(f *fakegce.Server) string {
	h := gceMigHoldings(f)
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(h)) {
		fmt.Fprintf(&b, "  %s: %s\n", k, h[k])
	}
	return b.String()
}

// gceMigWait is eventually without the fatal end: it reports a timeout
// as an error and says whether cond came to hold.
func gceMigWait(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) bool {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, status := cond()
		if ok {
			return true
		}
		if time.Now().After(deadline) {
			t.Errorf("timed out after %s waiting for %s; last: %s", timeout, what, status)
			return false
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func ingressIPs(svc *v1.Service) []string {
	var out []string
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		out = append(out, ing.IP)
	}
	return out
}

// instancePath is "zone/name" of an instance URL.
func instancePath(link string) string {
	i := strings.Index(link, "/zones/")
	if i < 0 {
		return link
	}
	zone, name, _ := strings.Cut(link[i+len("/zones/"):], "/instances/")
	return zone + "/" + name
}

func TestGCEMigrationFromCloudProviderGCP(t *testing.T) {
	testGCEMigration(t, gceMigNS, false)
}

// The polyccm that takes over from the deny-firewall upstream runs without
// drivers.gce.l4DenyFirewall, as a switch that forgets it would: it finds
// the deny rules, keeps them and the allow rules above them, and deletes
// them with their Services.
func TestGCEMigrationFromCloudProviderGCPDenyFirewall(t *testing.T) {
	testGCEMigration(t, gceMigNS+"-deny", true)
}

// testGCEMigration is the migration test in namespace gceMigNS from an
// upstream with (deny) or without its L4 deny firewall.
func testGCEMigration(t *testing.T, gceMigNS string, deny bool) {
	ctx := context.Background()

	// The cluster ID as cloud-provider-gcp keeps it (gce_clusterid.go
	// getOrInitialize): both keys hold it. Another test's polyccm may
	// have left one with another ID.
	cms := cp.Admin.CoreV1().ConfigMaps("kube-system")
	if err := cms.Delete(ctx, "ingress-uid", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	clusterIDData := map[string]string{"uid": upGCEClusterID, "provider-uid": upGCEClusterID} // UIDCluster, UIDProvider
	if _, err := cms.Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ingress-uid", Namespace: "kube-system"}, Data: clusterIDData}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cms.Delete(context.Background(), "ingress-uid", metav1.DeleteOptions{}) })

	// polyccm first runs the nodes' controllers only: cloud-provider-gcp
	// still serves the Services and routes. Its config names no cluster
	// ID: it must read the ConfigMap.
	e := newGCEEnv(t, func(s *harness.Settings) {
		if strings.Contains(strings.ToLower(s.DriverBlock), "clusterid") {
			t.Fatalf("the GCE driver block sets a cluster ID:\n%s", s.DriverBlock)
		}
		s.Controllers = "nodes: true\nnodeLifecycle: true\nservices: false\nroutes: false"
		s.Extra = "routes:\n  clusterCIDR: " + gceMigClusterCIDR + "\n  reconcilePeriod: 1s"
	})
	u := newUpGCE(t, e, deny)

	// Nodes in two zones, with pod CIDRs from node IPAM: a routes-based
	// cluster.
	zones := []string{"us-central1-a", "us-central1-b"}
	instances := map[string]fakegce.Instance{} // by node name
	register := func(idx ...int) {
		t.Helper()
		var names []string
		for _, i := range idx {
			in := e.instance(i, zones[i%2])
			n := harness.UninitializedNode(in.Name, "")
			n.Spec.PodCIDR = fmt.Sprintf("10.244.%d.0/24", i)
			n.Spec.PodCIDRs = []string{n.Spec.PodCIDR}
			e.registerNode(n)
			instances[in.Name] = in
			names = append(names, in.Name)
		}
		e.waitInitialized(names, 60*time.Second)
	}
	register(0, 1, 2)
	hosts := func() []fakegce.Instance {
		var out []fakegce.Instance
		for _, name := range slices.Sorted(maps.Keys(instances)) {
			out = append(out, instances[name])
		}
		return out
	}
	for _, in := range hosts() {
		node, err := e.node(in.Name)
		if err != nil {
			t.Fatal(err)
		}
		u.route(node, in)
	}

	// The Services, as the service controller sees them first: its
	// finalizer, then EnsureLoadBalancer, then the status.
	extCluster := nsService(t, gceMigNS, "ext-cluster", nil, nil, tcp(80), tcp(443))
	extLocal := nsService(t, gceMigNS, "ext-local", nil, func(s *v1.Service) {
		s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
	}, tcp(80))
	internal := nsService(t, gceMigNS, "int", map[string]string{upGCEAnnLBType: "Internal"}, nil, tcp(8080))
	if extLocal.Spec.HealthCheckNodePort == 0 {
		t.Fatal("the apiserver gave ext-local no healthCheckNodePort")
	}
	t.Cleanup(func() {
		// Whatever happened, no Service of the test stays behind.
		c := context.Background()
		list, err := cp.Admin.CoreV1().Services(gceMigNS).List(c, metav1.ListOptions{})
		if err != nil {
			return
		}
		for _, s := range list.Items {
			_ = cp.Admin.CoreV1().Services(gceMigNS).Delete(c, s.Name, metav1.DeleteOptions{})
			_, _ = cp.Admin.CoreV1().Services(gceMigNS).Patch(c, s.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the fake holds:\n%s", gceMigDump(e.fake))
		}
	})

	type built struct {
		svc      *v1.Service
		lb, ip   string
		internal bool
	}
	var lbs []built
	for _, s := range []*v1.Service{extCluster, extLocal, internal} {
		u.addFinalizer(s, lbFinalizer) // the service controller's addFinalizer
		b := built{svc: s, lb: cloudprovider.DefaultLoadBalancerName(s), internal: s == internal}
		if b.internal {
			b.ip = u.internal(s, hosts())
		} else {
			b.ip = u.external(s, hosts())
		}
		u.publish(s, b.ip)
		lbs = append(lbs, b)
		t.Logf("upstream's %s: load balancer %s at %s", s.Name, b.lb, b.ip)
	}
	for _, b := range lbs {
		want := []string{lbFinalizer, upGCENetLBFinalizer}
		if b.internal {
			want[1] = upGCEILBFinalizer
		}
		if got := nsSvc(t, gceMigNS, b.svc.Name).Finalizers; !slices.Equal(got, want) {
			t.Fatalf("%s's finalizers are %v, want upstream's %v", b.svc.Name, got, want)
		}
	}
	before := gceMigHoldings(e.fake)
	for _, b := range lbs {
		deny := "firewall k8s-fw-" + b.lb + "-deny"
		if _, made := before[deny]; made != (u.deny && !b.internal) {
			t.Fatalf("upstream's %s: %s made %v, want %v", b.svc.Name, deny, made, u.deny && !b.internal)
		}
	}
	if n := e.fake.Stats()["addresses"].Live; n != 0 {
		t.Fatalf("%d addresses left reserved after upstream's ensure; it releases them all", n)
	}
	t.Logf("upstream's state: %d resources:\n%s", len(before), gceMigDump(e.fake))

	// The switch: the same polyccm with the service and route
	// controllers on.
	if _, err := e.ccm.Stop(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	_ = cp.Admin.CoordinationV1().Leases("kube-system").Delete(ctx, "cloud-controller-manager", metav1.DeleteOptions{})
	const off, on = "\n  services: false\n  routes: false\n", "\n  services: true\n  routes: true\n"
	if !strings.Contains(e.opts.Config, off) {
		t.Fatalf("could not turn the service and route controllers on in:\n%s", e.opts.Config)
	}
	e.opts.Config = strings.Replace(e.opts.Config, off, on, 1)
	// polyccm plan first (issue 20): upstream's load balancers are adopted
	// as they are, and the plan writes to neither the cloud nor the
	// cluster.
	planState, planCalls := clusterState(t), e.fake.Faults().Calls()
	var planSvcs []*v1.Service
	for _, b := range lbs {
		planSvcs = append(planSvcs, b.svc)
	}
	checkAdopted(t, e.plan(t, "plan", e.opts.Config), planSvcs)
	checkPlanReadOnly(t, planState, planCalls, e.fake.Faults().Calls(), func(ep string) bool {
		return !strings.HasPrefix(ep, "GET ") && !strings.HasSuffix(ep, "/listInstances") && !strings.HasSuffix(ep, "/getHealth")
	})

	statsBefore := e.fake.Stats()
	callsBefore := e.fake.Faults().Calls()
	e.restart()
	t.Log("polyccm runs the services and routes now")
	gceMigWait(t, 2*time.Minute, "polyccm to ensure every Service", func() (bool, string) {
		var pending []string
		for _, b := range lbs {
			evs := serviceEvents(t, gceMigNS, b.svc.Name)
			if !slices.ContainsFunc(evs, func(ev string) bool { return strings.HasPrefix(ev, "Normal EnsuredLoadBalancer") }) {
				pending = append(pending, fmt.Sprintf("%s: events %q", b.svc.Name, evs))
			}
		}
		return len(pending) == 0, strings.Join(pending, "; ")
	})
	// Settle: every Service keeps upstream's address throughout.
	settle := time.Now().Add(10 * time.Second)
	moved := map[string]bool{}
	for time.Now().Before(settle) {
		for _, b := range lbs {
			if got := ingressIPs(nsSvc(t, gceMigNS, b.svc.Name)); !moved[b.svc.Name] && !slices.Equal(got, []string{b.ip}) {
				moved[b.svc.Name] = true
				t.Errorf("%s publishes %v, want upstream's [%s]", b.svc.Name, got, b.ip)
			}
		}
		time.Sleep(500 * time.Millisecond)
	}

	// Nothing was made, changed or deleted; no write reached the cloud.
	statsNow := e.fake.Stats()
	for _, kind := range []string{"forwardingRules", "addresses", "instanceGroups", "targetPools", "backendServices"} {
		if n := statsNow[kind].Created - statsBefore[kind].Created; n != 0 {
			t.Errorf("polyccm created %d %s on taking over", n, kind)
		}
	}
	for kind, st := range statsNow {
		if n := st.Deleted - statsBefore[kind].Deleted; n != 0 && kind != "instances" {
			t.Errorf("polyccm deleted %d %s on taking over", n, kind)
		}
	}
	after := gceMigHoldings(e.fake)
	for _, k := range slices.Sorted(maps.Keys(before)) {
		switch now, ok := after[k]; {
		case !ok:
			t.Errorf("polyccm deleted upstream's %s", k)
		case now != before[k]:
			t.Errorf("polyccm changed upstream's %s:\n was %s\n now %s", k, before[k], now)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(after)) {
		if _, ok := before[k]; !ok {
			t.Errorf("polyccm made %s on taking over: %s", k, after[k])
		}
	}
	for ep, n := range e.fake.Faults().Calls() {
		write := !strings.HasPrefix(ep, "GET ") && !strings.HasSuffix(ep, "/listInstances") && !strings.HasSuffix(ep, "/wait")
		if write && n != callsBefore[ep] {
			t.Errorf("polyccm called %s %d times on taking over, want 0", ep, n-callsBefore[ep])
		}
	}
	for _, b := range lbs {
		for _, ev := range serviceEvents(t, gceMigNS, b.svc.Name) {
			if strings.HasPrefix(ev, "Warning") {
				t.Errorf("%s: %s", b.svc.Name, ev)
			}
		}
	}
	if cm, err := cms.Get(ctx, "ingress-uid", metav1.GetOptions{}); err != nil {
		t.Errorf("the cluster ID ConfigMap: %v", err)
	} else if !maps.Equal(cm.Data, clusterIDData) {
		t.Errorf("the cluster ID ConfigMap holds %v, want upstream's %v", cm.Data, clusterIDData)
	}
	if t.Failed() {
		t.Log("polyccm did not take over upstream's load balancers as they are; going on")
	} else {
		t.Log("polyccm took over without a change")
	}

	if deny {
		// A change of an external Service after the switch: its traffic
		// rule follows it and stays above the deny rule, which stays.
		b := lbs[0]
		cur := nsSvc(t, gceMigNS, b.svc.Name)
		cur.Spec.LoadBalancerSourceRanges = []string{"192.0.2.0/24"}
		if _, err := cp.Admin.CoreV1().Services(gceMigNS).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		fwName, denyName := "k8s-fw-"+b.lb, "k8s-fw-"+b.lb+"-deny"
		eventually(t, 90*time.Second, b.svc.Name+"'s traffic rule following its source ranges", func() (bool, string) {
			fw, ok := e.fake.Firewall(fwName)
			return ok && slices.Equal(fw.SourceRanges, cur.Spec.LoadBalancerSourceRanges), fmt.Sprintf("%+v (found %v)", fw, ok)
		})
		if fw, _ := e.fake.Firewall(fwName); fw.Priority != upGCEPriorityAllow {
			t.Errorf("%s at priority %d after the change, want %d: the deny rule overrides it", fwName, fw.Priority, upGCEPriorityAllow)
		}
		if fw, ok := e.fake.Firewall(denyName); !ok || fw.Priority != upGCEPriorityDeny || !slices.Equal(fw.DestinationRanges, []string{b.ip}) {
			t.Errorf("%s after the change: %+v (found %v), want upstream's kept", denyName, fw, ok)
		}
	}

	// A new internal Service beside the old ones: upstream's names, on the
	// shared instance groups.
	statsMid := e.fake.Stats()
	nsService(t, gceMigNS, "int-new", map[string]string{upGCEAnnLBType: "Internal"}, nil, tcp(9090))
	newSvc := waitNSIngress(t, gceMigNS, "int-new", 90*time.Second)
	newLB := cloudprovider.DefaultLoadBalancerName(newSvc)
	newIP := newSvc.Status.LoadBalancer.Ingress[0].IP
	lbs = append(lbs, built{svc: newSvc, lb: newLB, ip: newIP, internal: true})
	if newIP == lbs[2].ip {
		t.Errorf("int-new serves on int's address %s", newIP)
	}
	if fr, ok := e.fake.ForwardingRule(gceRegion, newLB); !ok || fr.IPAddress != newIP || fr.LoadBalancingScheme != "INTERNAL" || !strings.HasSuffix(fr.BackendService, "/backendServices/"+newLB) {
		t.Errorf("int-new's forwarding rule %s: %+v (found %v), want INTERNAL at %s to backend service %s", newLB, fr, ok, newIP, newLB)
	}
	var groupLinks []string
	for _, g := range e.fake.InstanceGroups() {
		groupLinks = append(groupLinks, g.SelfLink)
		if g.Name != upGCEGroup {
			t.Errorf("instance group %s beside upstream's %s", g.SelfLink, upGCEGroup)
		}
	}
	if n := e.fake.Stats()["instanceGroups"].Created - statsMid["instanceGroups"].Created; n != 0 || len(groupLinks) != len(zones) {
		t.Errorf("%d instance groups created for int-new, %d in all; want upstream's, one per zone (%d)", n, len(groupLinks), len(zones))
	}
	var bsGroups []string
	for _, bs := range e.fake.BackendServices() {
		if bs.Name == newLB {
			for _, be := range bs.Backends {
				bsGroups = append(bsGroups, be.Group)
			}
		}
	}
	if slices.Sort(bsGroups); !slices.Equal(bsGroups, slices.Sorted(slices.Values(groupLinks))) {
		t.Errorf("int-new's backend service %s sends to %v, want the shared groups %v", newLB, bsGroups, groupLinks)
	}
	t.Logf("int-new: load balancer %s at %s on %v", newLB, newIP, groupLinks)

	// Node churn reaches every load balancer and the routes.
	register(3)
	gone := hosts()[0]
	if !e.fake.RemoveInstance(gone.Zone, gone.Name) {
		t.Fatalf("no instance %s to remove", gone.Name)
	}
	if err := cp.Admin.CoreV1().Nodes().Delete(ctx, gone.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	delete(instances, gone.Name)
	t.Logf("added node %s, removed %s", e.nodeName(3), gone.Name)
	var wantHosts []string
	wantGroups := map[string][]string{}
	wantRoutes := map[string]string{}
	for _, in := range hosts() {
		wantHosts = append(wantHosts, in.Zone+"/"+in.Name)
		wantGroups[in.Zone] = append(wantGroups[in.Zone], in.Zone+"/"+in.Name)
		node, err := e.node(in.Name)
		if err != nil {
			t.Fatal(err)
		}
		wantRoutes[upGCEClusterName+"-"+string(node.UID)] = node.Spec.PodCIDR + " via " + in.Zone + "/" + in.Name
	}
	slices.Sort(wantHosts)
	for _, g := range wantGroups {
		slices.Sort(g)
	}
	eventually(t, 2*time.Minute, "every load balancer and route following the nodes", func() (bool, string) {
		var bad []string
		for _, b := range lbs {
			if b.internal {
				continue
			}
			pool, ok := e.fake.TargetPool(gceRegion, b.lb)
			var got []string
			for _, l := range pool.Instances {
				got = append(got, instancePath(l))
			}
			if slices.Sort(got); !ok || !slices.Equal(got, wantHosts) {
				bad = append(bad, fmt.Sprintf("%s's pool %s has %v (found %v), want %v", b.svc.Name, b.lb, got, ok, wantHosts))
			}
		}
		for _, g := range e.fake.InstanceGroups() {
			zone := g.Zone[strings.LastIndexByte(g.Zone, '/')+1:]
			var got []string
			for _, m := range g.Members {
				got = append(got, instancePath(m))
			}
			if slices.Sort(got); !slices.Equal(got, wantGroups[zone]) {
				bad = append(bad, fmt.Sprintf("group %s/%s has %v, want %v", zone, g.Name, got, wantGroups[zone]))
			}
		}
		gotRoutes := map[string]string{}
		for _, r := range e.fake.Routes() {
			gotRoutes[r.Name] = r.DestRange + " via " + instancePath(r.NextHopInstance)
		}
		if !maps.Equal(gotRoutes, wantRoutes) {
			bad = append(bad, fmt.Sprintf("routes %v, want %v", gotRoutes, wantRoutes))
		}
		return len(bad) == 0, strings.Join(bad, "; ")
	})
	t.Log("the pools, groups and routes follow the nodes")

	// Deleting every Service leaves nothing of them, and none hangs.
	for _, b := range lbs {
		if err := cp.Admin.CoreV1().Services(gceMigNS).Delete(ctx, b.svc.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	gceMigWait(t, 3*time.Minute, "every Service gone", func() (bool, string) {
		list, err := cp.Admin.CoreV1().Services(gceMigNS).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var left []string
		for _, s := range list.Items {
			left = append(left, fmt.Sprintf("%s (finalizers %v, deleting since %v)", s.Name, s.Finalizers, s.DeletionTimestamp))
		}
		return len(left) == 0, fmt.Sprintf("Terminating: %v", left)
	})
	gceMigWait(t, 30*time.Second, "no load balancer resource left", func() (bool, string) {
		live := e.live()
		delete(live, "routes")
		return len(live) == 0, fmt.Sprintf("live %v", live)
	})
	if got := len(e.fake.Routes()); got != len(wantRoutes) {
		t.Errorf("%d routes after the Services went, want the nodes' %d", got, len(wantRoutes))
	}
}
