package gce_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/drivers/gce"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
	fakegce "github.com/polyccm/polyccm/test/fakecloud/gce"
)

// reserveAddress reserves a regional external address through the API, as
// a user would before naming it in spec.loadBalancerIP.
func (e *env) reserveAddress(name, tier string) string {
	e.t.Helper()
	c := ctx(e.t)
	ac, err := compute.NewAddressesRESTClient(c, e.userClient()...)
	if err != nil {
		e.t.Fatal(err)
	}
	defer ac.Close()
	op, err := ac.Insert(c, &computepb.InsertAddressRequest{Project: testProject, Region: testRegion,
		AddressResource: &computepb.Address{Name: &name, NetworkTier: &tier}})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := op.Wait(c); err != nil {
		e.t.Fatal(err)
	}
	a, err := ac.Get(c, &computepb.GetAddressRequest{Project: testProject, Region: testRegion, Address: name})
	if err != nil {
		e.t.Fatal(err)
	}
	return a.GetAddress()
}

func (e *env) address(name string) fakegce.Address {
	e.t.Helper()
	for _, a := range e.fake.Addresses() {
		if a.Name == name {
			return a
		}
	}
	e.t.Fatalf("no address %s", name)
	return fakegce.Address{}
}

// checkExternal asserts the fake holds exactly the external load balancer
// for svc with the given members, and returns its forwarding rule.
func (e *env) checkExternal(svc *v1.Service, members []*v1.Node) fakegce.ForwardingRule {
	e.t.Helper()
	base := e.lbName(svc)
	hcName := e.hcNameOf(svc)
	hcPath := "projects/" + testProject + "/global/httpHealthChecks/" + hcName
	hc := e.httpHealthCheck(hcName)
	// Upstream's timing, or longer where someone set it so.
	if hc.Port != healthPort(svc) || hc.RequestPath != "/healthz" || hc.CheckIntervalSec < 8 || hc.TimeoutSec < 1 || hc.HealthyThreshold < 1 || hc.UnhealthyThreshold < 3 {
		e.t.Errorf("health check %+v, want port %d /healthz every 8s", hc, healthPort(svc))
	}
	tp := e.targetPool(base)
	if got, want := shortURLs(tp.Instances), instancePaths(members); !slices.Equal(got, want) {
		e.t.Errorf("target pool members %v, want %v", got, want)
	}
	if got := shortURLs(tp.HealthChecks); !slices.Equal(got, []string{hcPath}) {
		e.t.Errorf("target pool health checks %v, want %s", got, hcPath)
	}
	fr := e.forwardingRule(base)
	if fr.LoadBalancingScheme != "EXTERNAL" || shortURL(fr.Target) != shortURL(tp.SelfLink) || fr.IPProtocol != "TCP" {
		e.t.Errorf("forwarding rule %+v, want an EXTERNAL TCP one to %s", fr, tp.SelfLink)
	}
	want := `{"kubernetes.io/service-name":"` + svc.Namespace + "/" + svc.Name + `"}`
	for _, d := range []string{fr.Description, tp.Description} {
		if d != want {
			e.t.Errorf("description %q, want upstream's %s", d, want)
		}
	}
	if want := `{"kubernetes.io/service-name":"` + hcName + `"}`; hc.Description != want {
		e.t.Errorf("health check description %q, want upstream's %s", hc.Description, want)
	}
	fw := e.firewall("k8s-fw-" + base)
	if want := `{"kubernetes.io/service-name":"` + svc.Namespace + "/" + svc.Name + `", "kubernetes.io/service-ip":"` + fr.IPAddress + `"}`; fw.Description != want || !slices.Equal(fw.DestinationRanges, []string{fr.IPAddress}) {
		e.t.Errorf("firewall %s: description %q to %v, want %s to the address", fw.Name, fw.Description, fw.DestinationRanges, want)
	}
	if hcName == e.nodesHC() {
		e.firewall(e.nodesHC() + "-http-hc")
	} else {
		e.firewall("k8s-" + base + "-http-hc")
	}
	return fr
}

// healthPort is where the load balancer's health checks go: kube-proxy's
// health port, or the Service's own health check node port when it keeps
// traffic local.
func healthPort(svc *v1.Service) int {
	if svc.Spec.ExternalTrafficPolicy == v1.ServiceExternalTrafficPolicyLocal && svc.Spec.HealthCheckNodePort != 0 {
		return int(svc.Spec.HealthCheckNodePort)
	}
	return 10256
}

func TestExternalLoadBalancerLifecycle(t *testing.T) {
	t.Parallel()
	// Operations answer RUNNING here, so the driver follows each one.
	e := newEnv(t, withPolling())
	nodes := append(e.nodes("a", 2, testZone), e.nodes("b", 1, testZone2)...)
	svc := service(nil)

	if st, exists := e.get(svc); exists || st != nil {
		t.Fatalf("GetLoadBalancer before Ensure = %+v, %v; want none", st, exists)
	}
	st := e.mustEnsure(svc, nodes)
	fr := e.checkExternal(svc, nodes)
	if st.Ingress[0].IP != fr.IPAddress {
		t.Errorf("status IP %s, forwarding rule %s", st.Ingress[0].IP, fr.IPAddress)
	}
	got, exists := e.get(svc)
	if !exists || len(got.Ingress) != 1 || got.Ingress[0].IP != fr.IPAddress {
		t.Errorf("GetLoadBalancer = %+v, %v; want %s", got, exists, fr.IPAddress)
	}
	for _, op := range e.fake.Operations() {
		if op.Status != fakegce.OpDone || op.Error != nil {
			t.Errorf("operation %s %s is %s (%+v)", op.OperationType, op.TargetLink, op.Status, op.Error)
		}
	}

	e.mustDelete(svc)
	if live := e.live(); len(live) != 0 {
		t.Errorf("left after EnsureLoadBalancerDeleted: %v", live)
	}
	if _, exists := e.get(svc); exists {
		t.Error("GetLoadBalancer still finds the load balancer")
	}
	for _, kind := range []string{"forwardingRules", "targetPools", "httpHealthChecks", "firewalls"} {
		if st := e.fake.Stats()[kind]; st.Created == 0 || st.Created != st.Deleted || st.Live != 0 {
			t.Errorf("%s: %+v, want all created deleted", kind, st)
		}
	}
	// Deleting again is a no-op that succeeds.
	ops := len(e.fake.Operations())
	e.mustDelete(svc)
	if n := len(e.fake.Operations()); n != ops {
		t.Errorf("a second delete started %d operations", n-ops)
	}
}

func TestDeleteWithoutLoadBalancer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustDelete(service(nil))
	if n := len(e.fake.Operations()); n != 0 {
		t.Errorf("deleting nothing started %d operations", n)
	}
}

func TestEnsureIsIdempotent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := e.nodes("n", 3, testZone)
	svc := service(nil)
	ip := e.mustEnsure(svc, nodes).Ingress[0].IP
	before := e.mutations()
	if got := e.mustEnsure(svc, nodes).Ingress[0].IP; got != ip {
		t.Errorf("second Ensure reports %s, first %s", got, ip)
	}
	if err := e.lb.UpdateLoadBalancer(ctx(t), "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if d := e.mutations() - before; d != 0 {
		t.Errorf("%d changing calls on an unchanged Service: %v", d, e.fake.Faults().Calls())
	}
	for kind, want := range map[string]int{"forwardingRules": 1, "targetPools": 1, "httpHealthChecks": 1, "firewalls": 2} {
		if st := e.fake.Stats()[kind]; st.Created != want || st.Live != want {
			t.Errorf("%s: %+v, want %d created and live", kind, st, want)
		}
	}
}

func TestUpdateLoadBalancerMembership(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	all := e.nodes("n", 4, testZone)
	svc := service(nil)
	e.mustEnsure(svc, all[:2])
	e.checkExternal(svc, all[:2])

	// n-1 stays, n-0 leaves, n-2 and n-3 join; nodes the load balancer
	// must not use are left out.
	excluded := node("excluded", providerID(e.instance("excluded", testZone)))
	excluded.Labels = map[string]string{v1.LabelNodeExcludeBalancers: "true"}
	included := node("included", providerID(e.instance("included", testZone)))
	included.Labels = map[string]string{v1.LabelNodeExcludeBalancers: "false"}
	noID := node("no-provider-id", "")
	foreign := node("foreign", gce.ProviderID("other-project", testZone, "foreign"))
	next := []*v1.Node{all[1], all[2], all[3], excluded, included, noID, foreign}
	adds, removes := e.calls(epTPAdd), e.calls(epTPRemove)
	if err := e.lb.UpdateLoadBalancer(ctx(t), "kubernetes", svc, next); err != nil {
		t.Fatalf("UpdateLoadBalancer: %v", err)
	}
	e.checkExternal(svc, []*v1.Node{all[1], all[2], all[3], included})
	if a, r := e.calls(epTPAdd)-adds, e.calls(epTPRemove)-removes; a != 1 || r != 1 {
		t.Errorf("%d addInstance and %d removeInstance calls, want one of each", a, r)
	}

	// Every node leaving empties the pool but keeps the load balancer.
	if err := e.lb.UpdateLoadBalancer(ctx(t), "kubernetes", svc, nil); err != nil {
		t.Fatal(err)
	}
	e.checkExternal(svc, nil)
}

func TestUpdateLoadBalancerNeverCreates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := e.nodes("n", 2, testZone)
	svc := service(nil)
	if err := e.lb.UpdateLoadBalancer(ctx(t), "kubernetes", svc, nodes); err != nil {
		t.Fatalf("UpdateLoadBalancer without a load balancer: %v", err)
	}
	// A Service being deleted is not updated at all.
	e.mustEnsure(svc, nodes[:1])
	now := metav1.Now()
	deleting := svc.DeepCopy()
	deleting.DeletionTimestamp = &now
	before := e.fake.Faults().Total()
	if err := e.lb.UpdateLoadBalancer(ctx(t), "kubernetes", deleting, nodes); err != nil {
		t.Fatal(err)
	}
	if n := e.fake.Faults().Total() - before; n != 0 {
		t.Errorf("%d calls to update a Service being deleted", n)
	}
	e.checkExternal(svc, nodes[:1])

	// Once the forwarding rule is gone (a deletion under way), an update
	// brings nothing back.
	e.mustDelete(svc)
	if err := e.lb.UpdateLoadBalancer(ctx(t), "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if live := e.live(); len(live) != 0 {
		t.Errorf("UpdateLoadBalancer created %v", live)
	}
}

// TestUpdateSkipsWhatADeletionRemoved: a node sync racing a deletion that
// already removed the pool must not recreate it.
func TestUpdateSkipsWhatADeletionRemoved(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := e.nodes("n", 2, testZone)
	svc := service(nil)
	e.mustEnsure(svc, nodes[:1])
	// The deletion stops after the forwarding rule and the pool.
	id := e.fake.Faults().AddRule(faults.Rule{Match: epFWDelete, Status: 500})
	if err := e.lb.EnsureLoadBalancerDeleted(ctx(t), "kubernetes", svc); err == nil {
		t.Fatal("delete succeeded through firewall failures")
	}
	e.fake.Faults().RemoveRule(id)
	if err := e.lb.UpdateLoadBalancer(ctx(t), "kubernetes", svc, nodes); err != nil {
		t.Fatal(err)
	}
	if st := e.fake.Stats()["targetPools"]; st.Created != 1 || st.Live != 0 {
		t.Errorf("target pools %+v: an update brought the pool back", st)
	}
}

func TestTargetPoolBeyondPerCallLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// The fake keeps the API's limits: 200 instances when a pool is
	// created, 1000 per addInstance/removeInstance.
	zones := []string{"us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f"}
	var nodes []*v1.Node
	for z, zone := range zones {
		nodes = append(nodes, e.nodes(fmt.Sprintf("z%d", z), 330, zone)...)
	}
	slices.SortFunc(nodes, func(a, b *v1.Node) int { return strings.Compare(a.Name, b.Name) })
	svc := service(nil)

	// Created with 250 nodes: more than a pool insert may carry.
	e.mustEnsure(svc, nodes[:250])
	e.checkExternal(svc, nodes[:250])

	// 1320 nodes: 1070 to add, more than one call carries.
	adds := e.calls(epTPAdd)
	if err := e.lb.UpdateLoadBalancer(ctx(t), "kubernetes", svc, nodes); err != nil {
		t.Fatalf("UpdateLoadBalancer: %v", err)
	}
	e.checkExternal(svc, nodes)
	if n := e.calls(epTPAdd) - adds; n != 2 {
		t.Errorf("%d addInstance calls for 1070 instances, want 2", n)
	}

	// Down to 20: 1300 to remove.
	removes := e.calls(epTPRemove)
	if err := e.lb.UpdateLoadBalancer(ctx(t), "kubernetes", svc, nodes[:20]); err != nil {
		t.Fatalf("UpdateLoadBalancer: %v", err)
	}
	e.checkExternal(svc, nodes[:20])
	if n := e.calls(epTPRemove) - removes; n != 2 {
		t.Errorf("%d removeInstance calls for 1300 instances, want 2", n)
	}
}

func TestStaticIP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := e.nodes("n", 2, testZone)
	ip1 := e.reserveAddress("web-ip", "PREMIUM")
	ip2 := e.reserveAddress("web-ip-2", "PREMIUM")
	svc := service(nil)
	svc.Spec.LoadBalancerIP = ip1

	if st := e.mustEnsure(svc, nodes); st.Ingress[0].IP != ip1 {
		t.Errorf("status IP %s, want the reserved %s", st.Ingress[0].IP, ip1)
	}
	if fr := e.checkExternal(svc, nodes); fr.IPAddress != ip1 {
		t.Errorf("forwarding rule address %s, want %s", fr.IPAddress, ip1)
	}
	if a := e.address("web-ip"); a.Status != "IN_USE" {
		t.Errorf("reserved address is %s, want IN_USE", a.Status)
	}
	// A steady sync does not look the address up: the rule holds it.
	lists := e.calls(epAddrList)
	e.mustEnsure(svc, nodes)
	if n := e.calls(epAddrList) - lists; n != 0 {
		t.Errorf("%d addresses.list calls in a steady sync, want none", n)
	}

	// A new address replaces the forwarding rule.
	svc.Spec.LoadBalancerIP = ip2
	if st := e.mustEnsure(svc, nodes); st.Ingress[0].IP != ip2 {
		t.Errorf("status IP %s, want %s", st.Ingress[0].IP, ip2)
	}
	if fr := e.forwardingRule(e.lbName(svc)); fr.IPAddress != ip2 {
		t.Errorf("forwarding rule address %s, want %s", fr.IPAddress, ip2)
	}
	if st := e.fake.Stats()["forwardingRules"]; st.Created != 2 || st.Deleted != 1 {
		t.Errorf("forwarding rules %+v, want the first replaced", st)
	}
	if a := e.address("web-ip"); a.Status != "RESERVED" {
		t.Errorf("the released address is %s", a.Status)
	}

	// Deleting the load balancer keeps the user's addresses.
	e.mustDelete(svc)
	if got := e.live(); len(got) != 1 || len(got["addresses"]) != 2 {
		t.Errorf("after delete: %v, want only the two reserved addresses", got)
	}
}

func TestStaticIPNotReserved(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := e.nodes("n", 1, testZone)
	svc := service(nil)
	svc.Spec.LoadBalancerIP = "203.0.113.77"
	_, err := e.ensure(svc, nodes)
	if err == nil {
		t.Fatal("Ensure succeeded with an address nobody reserved")
	}
	if k := kind(err); k != cloudapi.KindInvalid {
		t.Errorf("kind %v (%v), want invalid", k, err)
	}
	if live := e.live(); len(live) != 0 {
		t.Errorf("made before the address was refused: %v", live)
	}
	e.mustDelete(svc)
	if live := e.live(); len(live) != 0 {
		t.Errorf("left: %v", live)
	}
}

func TestEnsureConvergesOnChanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := e.nodes("n", 2, testZone)
	svc := service(nil)
	e.mustEnsure(svc, nodes)
	base := e.lbName(svc)

	// New ports: the forwarding rule is replaced, the firewall updated.
	svc.Spec.Ports = []v1.ServicePort{tcp(443, 30443), tcp(8443, 30843)}
	e.mustEnsure(svc, nodes)
	if fr := e.forwardingRule(base); fr.PortRange != "443-8443" {
		t.Errorf("port range %s, want 443-8443", fr.PortRange)
	}
	if fw := e.firewall("k8s-fw-" + base); !slices.Equal(sorted(fw.Allowed[0].Ports), []string{"443", "8443"}) {
		t.Errorf("firewall ports %v", fw.Allowed[0].Ports)
	}

	// New source ranges: the firewall follows.
	svc.Spec.LoadBalancerSourceRanges = []string{"198.51.100.0/24"}
	e.mustEnsure(svc, nodes)
	if fw := e.firewall("k8s-fw-" + base); !slices.Equal(fw.SourceRanges, []string{"198.51.100.0/24"}) {
		t.Errorf("firewall sources %v", fw.SourceRanges)
	}

	// Local traffic policy: the health check moves to the node port.
	svc.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
	svc.Spec.HealthCheckNodePort = 31999
	e.mustEnsure(svc, nodes)
	if hc := e.httpHealthCheck(base); hc.Port != 31999 {
		t.Errorf("health check port %d, want 31999", hc.Port)
	}
	if fw := e.firewall("k8s-" + base + "-http-hc"); !slices.Equal(fw.Allowed[0].Ports, []string{"31999"}) {
		t.Errorf("health-check firewall ports %v", fw.Allowed[0].Ports)
	}

	// Standard tier: the forwarding rule is replaced.
	svc.Annotations = map[string]string{gce.AnnNetworkTier: "Standard"}
	e.mustEnsure(svc, nodes)
	if fr := e.forwardingRule(base); fr.NetworkTier != "STANDARD" || fr.PortRange != "443-8443" {
		t.Errorf("forwarding rule %+v, want STANDARD 443-8443", fr)
	}
	if st := e.fake.Stats()["forwardingRules"]; st.Created != 3 || st.Live != 1 {
		t.Errorf("forwarding rules %+v, want two replacements", st)
	}
	if st := e.fake.Stats()["firewalls"]; st.Created != 3 || st.Live != 2 {
		t.Errorf("firewalls %+v: updated in place, not recreated; the nodes' health check's gone with it", st)
	}
	if _, ok := e.live()["httpHealthChecks"]; len(e.live()["httpHealthChecks"]) != 1 || !ok {
		t.Errorf("health checks %v, want only the Service's own", e.live()["httpHealthChecks"])
	}
	e.checkExternal(svc, nodes)
}

// TestHalfDeletedLoadBalancerStillExists: while anything of a Service's
// load balancer is left, GetLoadBalancer says it exists, so the service
// controller keeps calling EnsureLoadBalancerDeleted.
func TestHalfDeletedLoadBalancerStillExists(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := e.nodes("n", 1, testZone)
	svc := service(nil)
	e.mustEnsure(svc, nodes)
	base := e.lbName(svc)

	id := e.fake.Faults().AddRule(faults.Rule{Match: "DELETE /compute/v1/projects/{project}/regions/{region}/targetPools/{targetPool}", Status: 503})
	err := e.lb.EnsureLoadBalancerDeleted(ctx(t), "kubernetes", svc)
	if err == nil {
		t.Fatal("EnsureLoadBalancerDeleted reported success while the pool could not be deleted")
	}
	if k := kind(err); k != cloudapi.KindUnavailable {
		t.Errorf("kind %v (%v), want unavailable", k, err)
	}
	if _, ok := e.fake.ForwardingRule(testRegion, base); ok {
		t.Error("the forwarding rule, deleted first, is still there")
	}
	e.targetPool(base)
	st, exists := e.get(svc)
	if !exists || len(st.Ingress) != 0 {
		t.Errorf("GetLoadBalancer = %+v, %v; want it to exist without an address", st, exists)
	}

	e.fake.Faults().RemoveRule(id)
	e.mustDelete(svc)
	if _, exists := e.get(svc); exists {
		t.Error("still exists after the delete went through")
	}
	if live := e.live(); len(live) != 0 {
		t.Errorf("left: %v", live)
	}
}

// TestClustersDoNotTouchEachOther: two clusters in one project share no
// resource: what their load balancers share is named for their cluster
// IDs, and deleting one's leaves the other's.
func TestClustersDoNotTouchEachOther(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := newEnv(t, withFake(e.fake), withCluster("other-cluster"))
	nodes := e.nodes("n", 2, testZone)
	for i, ann := range []map[string]string{nil, {gce.AnnLoadBalancerType: "Internal"}} {
		svc, theirs := service(ann), service(ann)
		theirs.UID = types.UID(fmt.Sprintf("9999999%d-1d2c-4e5f-8a9b-7c6d5e4f3a2b", i))
		// The other cluster's load balancer, with a node of its own (an
		// instance is in one load-balanced group).
		otherNodes := other.nodes("other-"+fmt.Sprint(i), 1, testZone)
		other.mustEnsure(theirs, otherNodes)
		mine := len(e.fake.ForwardingRules())
		e.mustEnsure(svc, nodes)
		if n := len(e.fake.ForwardingRules()); n != mine+1 {
			t.Fatalf("%d forwarding rules, want %d", n, mine+1)
		}
		e.mustDelete(svc)
		if _, exists := other.get(theirs); !exists {
			t.Errorf("deleting this cluster's load balancer deleted the other's")
		}
		if ann != nil {
			other.checkInternal(theirs, otherNodes)
		} else {
			other.checkExternal(theirs, otherNodes)
		}
		other.mustDelete(theirs)
	}
	if live := e.live(); len(live) != 0 {
		t.Errorf("left: %v", live)
	}
}

func TestServiceUIDsNameLoadBalancers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a, b := service(nil), service(nil)
	b.UID = types.UID("99999999-1d2c-4e5f-8a9b-7c6d5e4f3a2b")
	na, nb := e.lbName(a), e.lbName(b)
	// cloudprovider's default name, as cloud-provider-gcp's.
	if want := "a0c6b1f0e1d2c4e5f8a9b7c6d5e4f3a2"; na != want || nb != "a999999991d2c4e5f8a9b7c6d5e4f3a2" {
		t.Errorf("names %s and %s, want %s and upstream's for the other", na, nb, want)
	}
}
