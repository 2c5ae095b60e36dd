package gce

import (
	"context"
	"fmt"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// An instance may be in one load-balanced instance group only, whichever
// call would make a second group load-balanced.
func TestOneLoadBalancedGroupPerInstance(t *testing.T) {
	s := start(t)
	wait := waiter(t)
	ctx := context.Background()
	for _, n := range []string{"n0", "n1"} {
		s.AddInstance(Instance{Name: n, NatIP: NoIP})
	}
	igs := client(t, s, compute.NewInstanceGroupsRESTClient)
	hcs := client(t, s, compute.NewRegionHealthChecksRESTClient)
	bss := client(t, s, compute.NewRegionBackendServicesRESTClient)
	wait(hcs.Insert(ctx, &computepb.InsertRegionHealthCheckRequest{Project: testProject, Region: region, HealthCheckResource: &computepb.HealthCheck{Name: proto.String("hc"), Type: proto.String("TCP")}}))
	group := func(name string, members ...string) string {
		wait(igs.Insert(ctx, &computepb.InsertInstanceGroupRequest{Project: testProject, Zone: zone, InstanceGroupResource: &computepb.InstanceGroup{Name: proto.String(name)}}))
		var urls []string
		for _, m := range members {
			urls = append(urls, instanceURL(s, zone, m))
		}
		wait(igs.AddInstances(ctx, &computepb.AddInstancesInstanceGroupRequest{Project: testProject, Zone: zone, InstanceGroup: name,
			InstanceGroupsAddInstancesRequestResource: &computepb.InstanceGroupsAddInstancesRequest{Instances: refs(urls...)}}))
		return "zones/" + zone + "/instanceGroups/" + name
	}
	bs := func(name string, groups ...string) *computepb.BackendService {
		b := &computepb.BackendService{Name: proto.String(name), LoadBalancingScheme: proto.String("INTERNAL"), HealthChecks: []string{"hc"}}
		for _, g := range groups {
			b.Backends = append(b.Backends, &computepb.Backend{Group: proto.String(g)})
		}
		return b
	}
	insert := func(b *computepb.BackendService) (*compute.Operation, error) {
		return bss.Insert(ctx, &computepb.InsertRegionBackendServiceRequest{Project: testProject, Region: region, BackendServiceResource: b})
	}
	get := func(name string) *computepb.BackendService {
		t.Helper()
		b, err := bss.Get(ctx, &computepb.GetRegionBackendServiceRequest{Project: testProject, Region: region, BackendService: name})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// Every refusal is the body instanceGroups.addInstances gives.
	want := fmt.Sprintf("Validation failed for instance 'projects/%s/zones/%s/instances/n0': instance may belong to at most one load-balanced instance group.", testProject, zone)
	refused := func(err error) {
		t.Helper()
		if e := apiErr(t, err, 400, "instanceInMultipleLoadBalancedIgs"); e.Message != want {
			t.Errorf("message = %q, want %q", e.Message, want)
		}
	}

	a, b := group("a", "n0", "n1"), group("b", "n0")
	wait(insert(bs("one", a)))
	// A shared group is fine: load balancers share one group per zone.
	wait(insert(bs("two", a)))

	// Insert: b would be a second load-balanced group of n0.
	_, err := insert(bs("three", b))
	refused(err)
	// Two new groups sharing an instance in one service.
	c, d := group("c", "n1"), group("d", "n1")
	_, err = insert(bs("four", c, d))
	if e := apiErr(t, err, 400, "instanceInMultipleLoadBalancedIgs"); e.Message != fmt.Sprintf("Validation failed for instance 'projects/%s/zones/%s/instances/n1': instance may belong to at most one load-balanced instance group.", testProject, zone) {
		t.Errorf("message = %q", e.Message)
	}

	// Update (PUT) and patch that add b are refused too.
	wait(insert(bs("empty")))
	cur := get("empty")
	cur.Backends = []*computepb.Backend{{Group: proto.String(b)}}
	_, err = bss.Update(ctx, &computepb.UpdateRegionBackendServiceRequest{Project: testProject, Region: region, BackendService: "empty", BackendServiceResource: cur})
	refused(err)
	_, err = bss.Patch(ctx, &computepb.PatchRegionBackendServiceRequest{Project: testProject, Region: region, BackendService: "empty", BackendServiceResource: bs("empty", b)})
	refused(err)
	// Adding the shared group by patch is fine.
	wait(bss.Patch(ctx, &computepb.PatchRegionBackendServiceRequest{Project: testProject, Region: region, BackendService: "empty", BackendServiceResource: bs("empty", a)}))
	if got := get("empty"); len(got.GetBackends()) != 1 {
		t.Errorf("patched = %v", got)
	}

	// Once a is no backend of anything else, a service may swap it for b:
	// the check is on the state after the change.
	for _, n := range []string{"two", "empty"} {
		wait(bss.Delete(ctx, &computepb.DeleteRegionBackendServiceRequest{Project: testProject, Region: region, BackendService: n}))
	}
	cur = get("one")
	cur.Backends = []*computepb.Backend{{Group: proto.String(b)}}
	wait(bss.Update(ctx, &computepb.UpdateRegionBackendServiceRequest{Project: testProject, Region: region, BackendService: "one", BackendServiceResource: cur}))
	// Now a cannot come back beside b.
	_, err = insert(bs("five", a))
	refused(err)
	// addInstances answers the same.
	wait(insert(bs("six", c)))
	_, err = igs.AddInstances(ctx, &computepb.AddInstancesInstanceGroupRequest{Project: testProject, Zone: zone, InstanceGroup: "c",
		InstanceGroupsAddInstancesRequestResource: &computepb.InstanceGroupsAddInstancesRequest{Instances: refs(instanceURL(s, zone, "n0"))}})
	refused(err)
}
