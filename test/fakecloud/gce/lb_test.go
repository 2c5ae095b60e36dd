package gce

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	computev1 "google.golang.org/api/compute/v1"
	"google.golang.org/api/option"
	"google.golang.org/protobuf/proto"
)

// legacy drives the legacy HTTP health checks. The cloud.google.com/go
// compute clients (v1.75.0) have no client for them, so this uses the
// discovery-based google.golang.org/api/compute/v1 service, as a driver
// would have to.
type legacy struct {
	t   *testing.T
	svc *computev1.Service
}

func legacyHealthChecks(t *testing.T, s *Server) legacy {
	t.Helper()
	o := opts(s, testToken)
	o[0] = option.WithEndpoint(s.URL() + "/compute/v1/")
	svc, err := computev1.NewService(context.Background(), o...)
	if err != nil {
		t.Fatal(err)
	}
	return legacy{t: t, svc: svc}
}

// wait waits for a global operation through operations.wait.
func (l legacy) wait(op *computev1.Operation, err error) {
	l.t.Helper()
	if err != nil {
		l.t.Fatal(err)
	}
	for op.Status != "DONE" {
		if op, err = l.svc.GlobalOperations.Wait(testProject, op.Name).Do(); err != nil {
			l.t.Fatal(err)
		}
	}
	if op.Error != nil {
		l.t.Fatalf("operation failed: %+v", op.Error.Errors[0])
	}
}

func (l legacy) insert(hc *computev1.HttpHealthCheck) *computev1.HttpHealthCheck {
	l.t.Helper()
	l.wait(l.svc.HttpHealthChecks.Insert(testProject, hc).Do())
	got, err := l.svc.HttpHealthChecks.Get(testProject, hc.Name).Do()
	if err != nil {
		l.t.Fatal(err)
	}
	return got
}

func instanceURL(s *Server, zone, name string) string {
	return s.URL() + "/compute/v1/projects/" + testProject + "/zones/" + zone + "/instances/" + name
}

func refs(urls ...string) []*computepb.InstanceReference {
	var out []*computepb.InstanceReference
	for _, u := range urls {
		out = append(out, &computepb.InstanceReference{Instance: proto.String(u)})
	}
	return out
}

func TestTargetPoolExternalLoadBalancer(t *testing.T) {
	s := start(t)
	wait := waiter(t)
	ctx := context.Background()
	for i := range 5 {
		s.AddInstance(Instance{Name: fmt.Sprintf("n%d", i)})
	}
	s.AddInstance(Instance{Name: "east", Zone: "us-east1-b"})
	hcs := legacyHealthChecks(t, s)
	tps := client(t, s, compute.NewTargetPoolsRESTClient)
	frs := client(t, s, compute.NewForwardingRulesRESTClient)

	hc := hcs.insert(&computev1.HttpHealthCheck{Name: "hc", Port: 10256, RequestPath: "/healthz", CheckIntervalSec: 8, TimeoutSec: 1})
	if hc.Port != 10256 || hc.HealthyThreshold != 2 || hc.UnhealthyThreshold != 2 || hc.Kind != "compute#httpHealthCheck" {
		t.Fatalf("hc = %+v", hc)
	}
	_, err := hcs.svc.HttpHealthChecks.Insert(testProject, &computev1.HttpHealthCheck{Name: "bad", CheckIntervalSec: 2, TimeoutSec: 5}).Do()
	if e := apiErr(t, err, 400, "invalid"); !strings.Contains(e.Message, "TimeoutSec should be less than checkIntervalSec") {
		t.Error(e.Message)
	}
	_, err = hcs.svc.HttpHealthChecks.Insert(testProject, &computev1.HttpHealthCheck{Name: "Bad_Name"}).Do()
	if e := apiErr(t, err, 400, "invalid"); !strings.Contains(e.Message, "Must be a match of regex") {
		t.Error(e.Message)
	}
	hcs.wait(hcs.svc.HttpHealthChecks.Patch(testProject, "hc", &computev1.HttpHealthCheck{UnhealthyThreshold: 5}).Do())
	if got := s.HTTPHealthChecks()[0]; got.UnhealthyThreshold != 5 || got.Port != 10256 || got.RequestPath != "/healthz" {
		t.Errorf("patched = %+v", got)
	}

	wait(tps.Insert(ctx, &computepb.InsertTargetPoolRequest{Project: testProject, Region: region, TargetPoolResource: &computepb.TargetPool{
		Name:            proto.String("pool"),
		HealthChecks:    []string{hc.SelfLink},
		Instances:       []string{instanceURL(s, zone, "n0"), "zones/" + zone + "/instances/n1"},
		SessionAffinity: proto.String("CLIENT_IP"),
	}}))
	pool, err := tps.Get(ctx, &computepb.GetTargetPoolRequest{Project: testProject, Region: region, TargetPool: "pool"})
	if err != nil || len(pool.GetInstances()) != 2 || pool.GetInstances()[1] != instanceURL(s, zone, "n1") || pool.GetSessionAffinity() != "CLIENT_IP" ||
		!strings.HasSuffix(pool.GetRegion(), "/regions/"+region) {
		t.Fatalf("pool = %v, %v", pool, err)
	}

	// Instances come and go; the per-call limit holds.
	wait(tps.AddInstance(ctx, &computepb.AddInstanceTargetPoolRequest{Project: testProject, Region: region, TargetPool: "pool",
		TargetPoolsAddInstanceRequestResource: &computepb.TargetPoolsAddInstanceRequest{Instances: refs(instanceURL(s, zone, "n2"), instanceURL(s, zone, "n3"))}}))
	wait(tps.RemoveInstance(ctx, &computepb.RemoveInstanceTargetPoolRequest{Project: testProject, Region: region, TargetPool: "pool",
		TargetPoolsRemoveInstanceRequestResource: &computepb.TargetPoolsRemoveInstanceRequest{Instances: refs(instanceURL(s, zone, "n0"))}}))
	if got, _ := s.TargetPool(region, "pool"); len(got.Instances) != 3 || got.Instances[0] != instanceURL(s, zone, "n1") {
		t.Errorf("members = %v", got.Instances)
	}
	_, err = tps.AddInstance(ctx, &computepb.AddInstanceTargetPoolRequest{Project: testProject, Region: region, TargetPool: "pool",
		TargetPoolsAddInstanceRequestResource: &computepb.TargetPoolsAddInstanceRequest{Instances: refs(instanceURL(s, zone, "n1"))}})
	apiErr(t, err, 400, "memberAlreadyExists")
	_, err = tps.AddInstance(ctx, &computepb.AddInstanceTargetPoolRequest{Project: testProject, Region: region, TargetPool: "pool",
		TargetPoolsAddInstanceRequestResource: &computepb.TargetPoolsAddInstanceRequest{Instances: refs(instanceURL(s, "us-east1-b", "east"))}})
	apiErr(t, err, 400, "invalid")
	_, err = tps.AddInstance(ctx, &computepb.AddInstanceTargetPoolRequest{Project: testProject, Region: region, TargetPool: "pool",
		TargetPoolsAddInstanceRequestResource: &computepb.TargetPoolsAddInstanceRequest{Instances: refs(instanceURL(s, zone, "ghost"))}})
	apiErr(t, err, 404, "notFound")
	s.SetTargetPoolLimits(0, 1)
	_, err = tps.AddInstance(ctx, &computepb.AddInstanceTargetPoolRequest{Project: testProject, Region: region, TargetPool: "pool",
		TargetPoolsAddInstanceRequestResource: &computepb.TargetPoolsAddInstanceRequest{Instances: refs(instanceURL(s, zone, "n4"), instanceURL(s, zone, "n0"))}})
	apiErr(t, err, 400, "invalid")

	// Health checks: one at most.
	wait(tps.RemoveHealthCheck(ctx, &computepb.RemoveHealthCheckTargetPoolRequest{Project: testProject, Region: region, TargetPool: "pool",
		TargetPoolsRemoveHealthCheckRequestResource: &computepb.TargetPoolsRemoveHealthCheckRequest{HealthChecks: []*computepb.HealthCheckReference{{HealthCheck: proto.String(hc.SelfLink)}}}}))
	wait(tps.AddHealthCheck(ctx, &computepb.AddHealthCheckTargetPoolRequest{Project: testProject, Region: region, TargetPool: "pool",
		TargetPoolsAddHealthCheckRequestResource: &computepb.TargetPoolsAddHealthCheckRequest{HealthChecks: []*computepb.HealthCheckReference{{HealthCheck: proto.String("global/httpHealthChecks/hc")}}}}))

	// An ephemeral external address.
	wait(frs.Insert(ctx, &computepb.InsertForwardingRuleRequest{Project: testProject, Region: region, ForwardingRuleResource: &computepb.ForwardingRule{
		Name: proto.String("fr"), IPProtocol: proto.String("TCP"), PortRange: proto.String("80"), Target: pool.SelfLink, Description: proto.String(`{"kubernetes.io/service-name":"default/web"}`),
	}}))
	fr, err := frs.Get(ctx, &computepb.GetForwardingRuleRequest{Project: testProject, Region: region, ForwardingRule: "fr"})
	if err != nil || !strings.HasPrefix(fr.GetIPAddress(), "203.0.113.") || fr.GetPortRange() != "80-80" || fr.GetTarget() != pool.GetSelfLink() ||
		fr.GetLoadBalancingScheme() != "EXTERNAL" || fr.GetNetworkTier() != "PREMIUM" || fr.GetDescription() == "" {
		t.Fatalf("fr = %v, %v", fr, err)
	}

	// In use: the pool and its health check cannot go first.
	_, err = tps.Delete(ctx, &computepb.DeleteTargetPoolRequest{Project: testProject, Region: region, TargetPool: "pool"})
	if e := apiErr(t, err, 400, "resourceInUseByAnotherResource"); !strings.Contains(e.Message, "forwardingRules/fr") {
		t.Error(e.Message)
	}
	_, err = hcs.svc.HttpHealthChecks.Delete(testProject, "hc").Do()
	apiErr(t, err, 400, "resourceInUseByAnotherResource")

	// setTarget moves the rule to another pool.
	wait(tps.Insert(ctx, &computepb.InsertTargetPoolRequest{Project: testProject, Region: region, TargetPoolResource: &computepb.TargetPool{Name: proto.String("pool2")}}))
	wait(frs.SetTarget(ctx, &computepb.SetTargetForwardingRuleRequest{Project: testProject, Region: region, ForwardingRule: "fr",
		TargetReferenceResource: &computepb.TargetReference{Target: proto.String("regions/" + region + "/targetPools/pool2")}}))
	if got, _ := s.ForwardingRule(region, "fr"); !strings.HasSuffix(got.Target, "/targetPools/pool2") || got.Fingerprint == fr.GetFingerprint() {
		t.Errorf("after setTarget = %+v", got)
	}

	// Tear down in order; nothing leaks.
	wait(frs.Delete(ctx, &computepb.DeleteForwardingRuleRequest{Project: testProject, Region: region, ForwardingRule: "fr"}))
	wait(tps.Delete(ctx, &computepb.DeleteTargetPoolRequest{Project: testProject, Region: region, TargetPool: "pool"}))
	wait(tps.Delete(ctx, &computepb.DeleteTargetPoolRequest{Project: testProject, Region: region, TargetPool: "pool2"}))
	hcs.wait(hcs.svc.HttpHealthChecks.Delete(testProject, "hc").Do())
	for _, kind := range []string{"forwardingRules", "targetPools", "httpHealthChecks"} {
		if st := s.Stats()[kind]; st.Live != 0 || st.Created != st.Deleted {
			t.Errorf("%s: %+v", kind, st)
		}
	}
	if st := s.Stats()["targetPools"]; st.Created != 2 || st.Peak != 2 {
		t.Errorf("target pools: %+v", s.Stats()["targetPools"])
	}
}

func TestTargetPoolInsertLimit(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	tps := client(t, s, compute.NewTargetPoolsRESTClient)
	var urls []string
	for i := range DefaultTargetPoolInsertLimit + 1 {
		s.AddInstance(Instance{Name: fmt.Sprintf("n%d", i), NatIP: NoIP})
		urls = append(urls, instanceURL(s, zone, fmt.Sprintf("n%d", i)))
	}
	_, err := tps.Insert(ctx, &computepb.InsertTargetPoolRequest{Project: testProject, Region: region, TargetPoolResource: &computepb.TargetPool{Name: proto.String("p"), Instances: urls}})
	apiErr(t, err, 400, "invalid")
	waiter(t)(tps.Insert(ctx, &computepb.InsertTargetPoolRequest{Project: testProject, Region: region, TargetPoolResource: &computepb.TargetPool{Name: proto.String("p"), Instances: urls[:DefaultTargetPoolInsertLimit]}}))
	waiter(t)(tps.AddInstance(ctx, &computepb.AddInstanceTargetPoolRequest{Project: testProject, Region: region, TargetPool: "p",
		TargetPoolsAddInstanceRequestResource: &computepb.TargetPoolsAddInstanceRequest{Instances: refs(urls[DefaultTargetPoolInsertLimit:]...)}}))
	if p, _ := s.TargetPool(region, "p"); len(p.Instances) != DefaultTargetPoolInsertLimit+1 {
		t.Errorf("%d members", len(p.Instances))
	}
}

func TestForwardingRuleWithReservedAddress(t *testing.T) {
	s := start(t)
	wait := waiter(t)
	ctx := context.Background()
	addrs := client(t, s, compute.NewAddressesRESTClient)
	tps := client(t, s, compute.NewTargetPoolsRESTClient)
	frs := client(t, s, compute.NewForwardingRulesRESTClient)
	wait(tps.Insert(ctx, &computepb.InsertTargetPoolRequest{Project: testProject, Region: region, TargetPoolResource: &computepb.TargetPool{Name: proto.String("pool")}}))

	wait(addrs.Insert(ctx, &computepb.InsertAddressRequest{Project: testProject, Region: region, AddressResource: &computepb.Address{Name: proto.String("static"), NetworkTier: proto.String("STANDARD")}}))
	a, err := addrs.Get(ctx, &computepb.GetAddressRequest{Project: testProject, Region: region, Address: "static"})
	if err != nil || a.GetStatus() != "RESERVED" || a.GetAddressType() != "EXTERNAL" || !strings.HasPrefix(a.GetAddress(), "203.0.113.") {
		t.Fatalf("address = %v, %v", a, err)
	}
	// A literal address must be reserved, and of the rule's tier.
	_, err = frs.Insert(ctx, &computepb.InsertForwardingRuleRequest{Project: testProject, Region: region, ForwardingRuleResource: &computepb.ForwardingRule{
		Name: proto.String("x"), IPAddress: proto.String("203.0.113.200"), Target: proto.String("regions/" + region + "/targetPools/pool")}})
	apiErr(t, err, 400, "invalid")
	_, err = frs.Insert(ctx, &computepb.InsertForwardingRuleRequest{Project: testProject, Region: region, ForwardingRuleResource: &computepb.ForwardingRule{
		Name: proto.String("x"), IPAddress: a.Address, Target: proto.String("regions/" + region + "/targetPools/pool")}})
	apiErr(t, err, 400, "invalid") // PREMIUM rule, STANDARD address

	for _, ports := range []string{"80", "443"} {
		wait(frs.Insert(ctx, &computepb.InsertForwardingRuleRequest{Project: testProject, Region: region, ForwardingRuleResource: &computepb.ForwardingRule{
			Name: proto.String("fr-" + ports), IPAddress: a.Address, PortRange: proto.String(ports), NetworkTier: proto.String("STANDARD"),
			Target: proto.String("regions/" + region + "/targetPools/pool")}}))
	}
	// Overlapping ports on the same address: the operation fails.
	op, err := frs.Insert(ctx, &computepb.InsertForwardingRuleRequest{Project: testProject, Region: region, ForwardingRuleResource: &computepb.ForwardingRule{
		Name: proto.String("clash"), IPAddress: proto.String(a.GetSelfLink()), PortRange: proto.String("1-100"), NetworkTier: proto.String("STANDARD"),
		Target: proto.String("regions/" + region + "/targetPools/pool")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Wait(ctx); err == nil || !strings.Contains(err.Error(), "IP_IN_USE_BY_ANOTHER_RESOURCE") {
		t.Errorf("clash: %v", err)
	}
	a, _ = addrs.Get(ctx, &computepb.GetAddressRequest{Project: testProject, Region: region, Address: "static"})
	if a.GetStatus() != "IN_USE" || len(a.GetUsers()) != 2 || !strings.HasSuffix(a.GetUsers()[0], "/forwardingRules/fr-443") {
		t.Errorf("address = %v", a)
	}
	_, err = addrs.Delete(ctx, &computepb.DeleteAddressRequest{Project: testProject, Region: region, Address: "static"})
	apiErr(t, err, 400, "resourceInUseByAnotherResource")
	for _, n := range []string{"fr-80", "fr-443"} {
		wait(frs.Delete(ctx, &computepb.DeleteForwardingRuleRequest{Project: testProject, Region: region, ForwardingRule: n}))
	}
	wait(addrs.Delete(ctx, &computepb.DeleteAddressRequest{Project: testProject, Region: region, Address: "static"}))

	// Lists.
	wait(addrs.Insert(ctx, &computepb.InsertAddressRequest{Project: testProject, Region: region, AddressResource: &computepb.Address{
		Name: proto.String("internal"), AddressType: proto.String("INTERNAL"), Subnetwork: proto.String("regions/" + region + "/subnetworks/default"), Address: proto.String("10.128.0.50")}}))
	var names []string
	for a, err := range addrs.List(ctx, &computepb.ListAddressesRequest{Project: testProject, Region: region}).All() {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, a.GetName()+"="+a.GetAddress())
	}
	if !slices.Equal(names, []string{"internal=10.128.0.50"}) {
		t.Errorf("addresses = %v", names)
	}
}

func TestInternalLoadBalancer(t *testing.T) {
	s := start(t)
	wait := waiter(t)
	ctx := context.Background()
	s.AddSubnetwork(Subnetwork{Name: "nodes", Region: region, IPCidrRange: "10.10.0.0/24"})
	for i := range 3 {
		s.AddInstance(Instance{Name: fmt.Sprintf("n%d", i), Subnetwork: "nodes", NatIP: NoIP})
	}
	s.AddInstance(Instance{Name: "b0", Zone: "us-central1-b", Subnetwork: "nodes", NatIP: NoIP, Status: StatusStopped})
	hcs := client(t, s, compute.NewRegionHealthChecksRESTClient)
	igs := client(t, s, compute.NewInstanceGroupsRESTClient)
	bss := client(t, s, compute.NewRegionBackendServicesRESTClient)
	frs := client(t, s, compute.NewForwardingRulesRESTClient)

	wait(hcs.Insert(ctx, &computepb.InsertRegionHealthCheckRequest{Project: testProject, Region: region, HealthCheckResource: &computepb.HealthCheck{
		Name: proto.String("ilb-hc"), Type: proto.String("HTTP"), HttpHealthCheck: &computepb.HTTPHealthCheck{Port: proto.Int32(10256), RequestPath: proto.String("/healthz")},
	}}))
	wait(hcs.Patch(ctx, &computepb.PatchRegionHealthCheckRequest{Project: testProject, Region: region, HealthCheck: "ilb-hc", HealthCheckResource: &computepb.HealthCheck{
		Type: proto.String("TCP"), TcpHealthCheck: &computepb.TCPHealthCheck{Port: proto.Int32(10256)},
	}}))
	hc, err := hcs.Get(ctx, &computepb.GetRegionHealthCheckRequest{Project: testProject, Region: region, HealthCheck: "ilb-hc"})
	if err != nil || hc.GetType() != "TCP" || hc.GetTcpHealthCheck().GetPort() != 10256 || hc.HttpHealthCheck != nil {
		t.Fatalf("hc = %v, %v", hc, err)
	}

	for _, z := range []string{zone, "us-central1-b"} {
		wait(igs.Insert(ctx, &computepb.InsertInstanceGroupRequest{Project: testProject, Zone: z, InstanceGroupResource: &computepb.InstanceGroup{Name: proto.String("k8s-ig")}}))
	}
	wait(igs.AddInstances(ctx, &computepb.AddInstancesInstanceGroupRequest{Project: testProject, Zone: zone, InstanceGroup: "k8s-ig",
		InstanceGroupsAddInstancesRequestResource: &computepb.InstanceGroupsAddInstancesRequest{Instances: refs(instanceURL(s, zone, "n0"), instanceURL(s, zone, "n1"), instanceURL(s, zone, "n2"))}}))
	wait(igs.AddInstances(ctx, &computepb.AddInstancesInstanceGroupRequest{Project: testProject, Zone: "us-central1-b", InstanceGroup: "k8s-ig",
		InstanceGroupsAddInstancesRequestResource: &computepb.InstanceGroupsAddInstancesRequest{Instances: refs(instanceURL(s, "us-central1-b", "b0"))}}))
	_, err = igs.AddInstances(ctx, &computepb.AddInstancesInstanceGroupRequest{Project: testProject, Zone: zone, InstanceGroup: "k8s-ig",
		InstanceGroupsAddInstancesRequestResource: &computepb.InstanceGroupsAddInstancesRequest{Instances: refs(instanceURL(s, "us-central1-b", "b0"))}})
	apiErr(t, err, 400, "invalid") // another zone
	wait(igs.RemoveInstances(ctx, &computepb.RemoveInstancesInstanceGroupRequest{Project: testProject, Zone: zone, InstanceGroup: "k8s-ig",
		InstanceGroupsRemoveInstancesRequestResource: &computepb.InstanceGroupsRemoveInstancesRequest{Instances: refs(instanceURL(s, zone, "n2"))}}))
	var members []string
	for m, err := range igs.ListInstances(ctx, &computepb.ListInstancesInstanceGroupsRequest{Project: testProject, Zone: zone, InstanceGroup: "k8s-ig",
		InstanceGroupsListInstancesRequestResource: &computepb.InstanceGroupsListInstancesRequest{InstanceState: proto.String("ALL")}, MaxResults: proto.Uint32(1)}).All() {
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, m.GetInstance()+" "+m.GetStatus())
	}
	if !slices.Equal(members, []string{instanceURL(s, zone, "n0") + " RUNNING", instanceURL(s, zone, "n1") + " RUNNING"}) {
		t.Errorf("members = %v", members)
	}
	g, err := igs.Get(ctx, &computepb.GetInstanceGroupRequest{Project: testProject, Zone: zone, InstanceGroup: "k8s-ig"})
	if err != nil || g.GetSize() != 2 || !strings.HasSuffix(g.GetNetwork(), "/global/networks/default") {
		t.Errorf("group = %v, %v", g, err)
	}

	bs := &computepb.BackendService{
		Name:                proto.String("ilb"),
		LoadBalancingScheme: proto.String("INTERNAL"),
		Protocol:            proto.String("TCP"),
		HealthChecks:        []string{hc.GetSelfLink()},
		Backends: []*computepb.Backend{
			{Group: proto.String(g.GetSelfLink()), BalancingMode: proto.String("CONNECTION")},
			{Group: proto.String("zones/us-central1-b/instanceGroups/k8s-ig")},
		},
	}
	wait(bss.Insert(ctx, &computepb.InsertRegionBackendServiceRequest{Project: testProject, Region: region, BackendServiceResource: bs}))
	got, err := bss.Get(ctx, &computepb.GetRegionBackendServiceRequest{Project: testProject, Region: region, BackendService: "ilb"})
	if err != nil || len(got.GetBackends()) != 2 || got.GetBackends()[1].GetBalancingMode() != "CONNECTION" || got.GetFingerprint() == "" || got.GetSessionAffinity() != "NONE" {
		t.Fatalf("backend service = %v, %v", got, err)
	}
	// Optimistic locking: a stale fingerprint is refused with 412.
	stale := proto.Clone(got).(*computepb.BackendService)
	got.SessionAffinity = proto.String("CLIENT_IP")
	wait(bss.Update(ctx, &computepb.UpdateRegionBackendServiceRequest{Project: testProject, Region: region, BackendService: "ilb", BackendServiceResource: got}))
	_, err = bss.Update(ctx, &computepb.UpdateRegionBackendServiceRequest{Project: testProject, Region: region, BackendService: "ilb", BackendServiceResource: stale})
	apiErr(t, err, http.StatusPreconditionFailed, "conditionNotMet")
	if b := s.BackendServices()[0]; b.SessionAffinity != "CLIENT_IP" || b.Fingerprint == got.GetFingerprint() {
		t.Errorf("updated = %+v", b)
	}

	// The internal rule takes an address from its subnetwork.
	wait(frs.Insert(ctx, &computepb.InsertForwardingRuleRequest{Project: testProject, Region: region, ForwardingRuleResource: &computepb.ForwardingRule{
		Name: proto.String("ilb-fr"), LoadBalancingScheme: proto.String("INTERNAL"), IPProtocol: proto.String("TCP"), Ports: []string{"80", "8080"},
		BackendService: got.SelfLink, Subnetwork: proto.String("regions/" + region + "/subnetworks/nodes"), AllowGlobalAccess: proto.Bool(true),
	}}))
	fr, err := frs.Get(ctx, &computepb.GetForwardingRuleRequest{Project: testProject, Region: region, ForwardingRule: "ilb-fr"})
	if err != nil || !strings.HasPrefix(fr.GetIPAddress(), "10.10.0.") || !fr.GetAllowGlobalAccess() || !slices.Equal(fr.GetPorts(), []string{"80", "8080"}) ||
		!strings.HasSuffix(fr.GetNetwork(), "/networks/default") || !strings.HasSuffix(fr.GetSubnetwork(), "/subnetworks/nodes") {
		t.Fatalf("fr = %v, %v", fr, err)
	}
	for _, in := range s.Instances() {
		if in.NetworkIP == fr.GetIPAddress() {
			t.Errorf("rule address %s is %s's", fr.GetIPAddress(), in.Name)
		}
	}
	// Wrong shapes are refused.
	_, err = frs.Insert(ctx, &computepb.InsertForwardingRuleRequest{Project: testProject, Region: region, ForwardingRuleResource: &computepb.ForwardingRule{
		Name: proto.String("bad"), LoadBalancingScheme: proto.String("INTERNAL"), BackendService: got.SelfLink}})
	apiErr(t, err, 400, "invalid") // no ports
	_, err = frs.Insert(ctx, &computepb.InsertForwardingRuleRequest{Project: testProject, Region: region, ForwardingRuleResource: &computepb.ForwardingRule{
		Name: proto.String("bad"), LoadBalancingScheme: proto.String("INTERNAL"), AllPorts: proto.Bool(true), BackendService: proto.String("regions/" + region + "/backendServices/nope")}})
	apiErr(t, err, 404, "notFound")

	// An instance in one load-balanced group cannot join another.
	wait(igs.Insert(ctx, &computepb.InsertInstanceGroupRequest{Project: testProject, Zone: zone, InstanceGroupResource: &computepb.InstanceGroup{Name: proto.String("other")}}))
	wait(bss.Insert(ctx, &computepb.InsertRegionBackendServiceRequest{Project: testProject, Region: region, BackendServiceResource: &computepb.BackendService{
		Name: proto.String("other"), LoadBalancingScheme: proto.String("INTERNAL"), HealthChecks: []string{hc.GetSelfLink()},
		Backends: []*computepb.Backend{{Group: proto.String("zones/" + zone + "/instanceGroups/other")}},
	}}))
	_, err = igs.AddInstances(ctx, &computepb.AddInstancesInstanceGroupRequest{Project: testProject, Zone: zone, InstanceGroup: "other",
		InstanceGroupsAddInstancesRequestResource: &computepb.InstanceGroupsAddInstancesRequest{Instances: refs(instanceURL(s, zone, "n0"))}})
	apiErr(t, err, 400, "instanceInMultipleLoadBalancedIgs")

	// Deleting in the wrong order is refused; in the right order it works.
	_, err = bss.Delete(ctx, &computepb.DeleteRegionBackendServiceRequest{Project: testProject, Region: region, BackendService: "ilb"})
	apiErr(t, err, 400, "resourceInUseByAnotherResource")
	_, err = igs.Delete(ctx, &computepb.DeleteInstanceGroupRequest{Project: testProject, Zone: zone, InstanceGroup: "k8s-ig"})
	apiErr(t, err, 400, "resourceInUseByAnotherResource")
	wait(frs.Delete(ctx, &computepb.DeleteForwardingRuleRequest{Project: testProject, Region: region, ForwardingRule: "ilb-fr"}))
	for _, b := range []string{"ilb", "other"} {
		wait(bss.Delete(ctx, &computepb.DeleteRegionBackendServiceRequest{Project: testProject, Region: region, BackendService: b}))
	}
	wait(hcs.Delete(ctx, &computepb.DeleteRegionHealthCheckRequest{Project: testProject, Region: region, HealthCheck: "ilb-hc"}))
	for _, z := range []string{zone, "us-central1-b"} {
		wait(igs.Delete(ctx, &computepb.DeleteInstanceGroupRequest{Project: testProject, Zone: z, InstanceGroup: "k8s-ig"}))
	}
	wait(igs.Delete(ctx, &computepb.DeleteInstanceGroupRequest{Project: testProject, Zone: zone, InstanceGroup: "other"}))
	for kind, st := range s.Stats() {
		if kind != "instances" && st.Live != 0 {
			t.Errorf("%s leaked: %+v", kind, st)
		}
	}
}
