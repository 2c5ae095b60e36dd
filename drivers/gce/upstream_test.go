package gce_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/polyccm/polyccm/drivers/gce"
	fakegce "github.com/polyccm/polyccm/test/fakecloud/gce"
)

// What a switch from cloud-provider-gcp meets beyond names: its cluster ID
// in a ConfigMap, its finalizers on the Services, the Services GKE's other
// controllers serve, and addresses kept when a rule is replaced.

// TestClusterIDFromTheConfigMap: without drivers.gce.clusterID the shared
// resources are named for the ConfigMap's provider-uid (else uid), and a
// cluster without the ConfigMap gets one, as upstream makes it.
func TestClusterIDFromTheConfigMap(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(func(c *gce.Config) { c.ClusterID = "" }))
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: gce.ClusterIDNamespace, Name: gce.ClusterIDConfigMap},
		Data: map[string]string{"uid": "1111222233334444", "provider-uid": "5555666677778888"}}
	if _, err := e.kube.CoreV1().ConfigMaps(cm.Namespace).Create(ctx(t), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nodes := e.nodes("n", 1, testZone)
	e.mustEnsure(service(internalLB), nodes)
	e.healthCheck("k8s-5555666677778888-node")
	e.firewall("k8s-5555666677778888-node-hc")
	if g := e.instanceGroups()[testZone]; g.Name != "k8s-ig--5555666677778888" {
		t.Errorf("instance group %s, want upstream's k8s-ig--<provider-uid>", g.Name)
	}

	fresh := newEnv(t, withConfig(func(c *gce.Config) { c.ClusterID = "" }))
	fresh.mustEnsure(service(nil), fresh.nodes("n", 1, testZone))
	got, err := fresh.kube.CoreV1().ConfigMaps(gce.ClusterIDNamespace).Get(ctx(t), gce.ClusterIDConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("no ConfigMap made for the cluster ID: %v", err)
	}
	id := got.Data["provider-uid"]
	if len(id) != 16 || got.Data["uid"] != id {
		t.Errorf("ConfigMap data %v, want uid and provider-uid one 16-digit ID", got.Data)
	}
	fresh.httpHealthCheck("k8s-" + id + "-node")
}

// TestUpstreamFinalizersAreReleased: a Service cloud-provider-gcp made a
// load balancer for carries its finalizer; it counts as a load balancer to
// clean up, and goes once the cleanup is done, so the Service does not
// hang in Terminating.
func TestUpstreamFinalizersAreReleased(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := e.nodes("n", 1, testZone)
	for _, c := range []struct {
		ann       map[string]string
		finalizer string
	}{{nil, gce.FinalizerNetLBv1}, {internalLB, gce.FinalizerILBv1}} {
		svc := service(c.ann)
		svc.Finalizers = []string{"service.kubernetes.io/load-balancer-cleanup", c.finalizer}
		if _, err := e.kube.CoreV1().Services(svc.Namespace).Create(ctx(t), svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, exists := e.get(svc); !exists {
			t.Errorf("%s: GetLoadBalancer says nothing exists while %s is on the Service", c.finalizer, c.finalizer)
		}
		e.mustEnsure(svc, nodes)
		e.mustDelete(svc)
		got, err := e.kube.CoreV1().Services(svc.Namespace).Get(ctx(t), svc.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"service.kubernetes.io/load-balancer-cleanup"}; !slices.Equal(got.Finalizers, want) {
			t.Errorf("finalizers %v after the cleanup, want %v (the service controller removes its own)", got.Finalizers, want)
		}
		if err := e.kube.CoreV1().Services(svc.Namespace).Delete(ctx(t), svc.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if live := e.live(); len(live) != 0 {
		t.Errorf("left: %v", live)
	}
}

// TestOtherControllersServicesAreLeftAlone: GKE's backend-service based
// external load balancers and its subsetting internal ones are another
// controller's, as upstream decides; a Service upstream's own finalizer
// marks stays polyccm's.
func TestOtherControllersServicesAreLeftAlone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := e.nodes("n", 1, testZone)
	rbs := service(map[string]string{gce.AnnRBS: "enabled"})
	ilbv2 := service(internalLB)
	ilbv2.Finalizers = []string{"gke.networking.io/l4-ilb-v2"}
	netlbv2 := service(nil)
	netlbv2.Finalizers = []string{"gke.networking.io/l4-netlb-v2"}
	for _, svc := range []*v1.Service{rbs, ilbv2, netlbv2} {
		if _, err := e.lb.EnsureLoadBalancer(ctx(t), "kubernetes", svc, nodes); !errors.Is(err, cloudprovider.ImplementedElsewhere) {
			t.Errorf("Ensure %v: %v, want ImplementedElsewhere", svc.Finalizers, err)
		}
		if err := e.lb.UpdateLoadBalancer(ctx(t), "kubernetes", svc, nodes); !errors.Is(err, cloudprovider.ImplementedElsewhere) {
			t.Errorf("Update %v: %v, want ImplementedElsewhere", svc.Finalizers, err)
		}
		if err := e.lb.EnsureLoadBalancerDeleted(ctx(t), "kubernetes", svc); !errors.Is(err, cloudprovider.ImplementedElsewhere) {
			t.Errorf("Delete %v: %v, want ImplementedElsewhere", svc.Finalizers, err)
		}
	}
	if n := e.mutations(); n != 0 {
		t.Errorf("%d changing calls for other controllers' Services: %v", n, e.fake.Faults().Calls())
	}
	mine := service(map[string]string{gce.AnnRBS: "enabled"})
	mine.Finalizers = []string{gce.FinalizerNetLBv1}
	e.mustEnsure(mine, nodes)
}

// TestReplacedRuleKeepsItsAddress: a rule GCE cannot change in place is
// replaced on the address it had, reserved first and demoted back to
// ephemeral after, as upstream does; no reservation is left.
func TestReplacedRuleKeepsItsAddress(t *testing.T) {
	t.Parallel()
	for _, ann := range []map[string]string{nil, internalLB} {
		e := newEnv(t)
		nodes := e.nodes("n", 1, testZone)
		svc := service(ann)
		ip := e.mustEnsure(svc, nodes).Ingress[0].IP
		svc.Spec.Ports = append(svc.Spec.Ports, tcp(443, 30443))
		if got := e.mustEnsure(svc, nodes).Ingress[0].IP; got != ip {
			t.Errorf("%v: address %s after the rule was replaced, want %s kept", ann, got, ip)
		}
		if fr := e.forwardingRule(e.lbName(svc)); fr.IPAddress != ip {
			t.Errorf("%v: rule on %s, want %s", ann, fr.IPAddress, ip)
		}
		if st := e.fake.Stats()["forwardingRules"]; st.Created != 2 {
			t.Errorf("%v: forwarding rules %+v, want one replacement", ann, st)
		}
		if st := e.fake.Stats()["addresses"]; st.Created != 2 || st.Live != 0 {
			t.Errorf("%v: addresses %+v, want one reservation per rule made, none left", ann, st)
		}
	}
}

// TestBackendSharing: internal Services asking to share get one backend
// service per protocol and affinity, named as upstream names it, which
// stays while a rule uses it and goes with the last.
func TestBackendSharing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := append(e.nodes("a", 1, testZone), e.nodes("b", 1, testZone2)...)
	shared := map[string]string{gce.AnnLoadBalancerType: "Internal", gce.AnnBackendShare: "true"}
	one, two := service(shared), service(shared)
	two.Name, two.UID = "api", "11111111-2222-4333-8444-555555555555"
	// What the API server defaults, and upstream hashes.
	one.Spec.SessionAffinity, two.Spec.SessionAffinity = v1.ServiceAffinityNone, v1.ServiceAffinityNone
	e.mustEnsure(one, nodes)
	e.mustEnsure(two, nodes)
	// sha1("None") starts 6eef6648406c333a (upstream's makeBackendServiceName).
	name := "k8s-" + testCluster + "-internal-tcp-nmv1-6eef6648406c333a"
	bs := e.backendService(name)
	if bs.Description != "" || len(e.fake.BackendServices()) != 1 {
		t.Errorf("backend services %v, want the one shared %s without a description", e.live()["backendServices"], name)
	}
	for _, svc := range []*v1.Service{one, two} {
		if fr := e.forwardingRule(e.lbName(svc)); lastSeg(fr.BackendService) != name {
			t.Errorf("rule of %s to %s, want %s", svc.Name, fr.BackendService, name)
		}
	}
	e.mustDelete(one)
	e.backendService(name)
	e.mustDelete(two)
	if live := e.live(); len(live) != 0 {
		t.Errorf("left: %v", live)
	}
}

// TestIPv6FamiliesGetANote: upstream's load balancers are IPv4 whatever
// the Service's families; polyccm makes the same and says so.
func TestIPv6FamiliesGetANote(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	svc := service(nil)
	svc.Spec.IPFamilies = []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}
	e.mustEnsure(svc, e.nodes("n", 1, testZone))
	found, events := false, e.events()
	for _, ev := range events {
		found = found || (strings.HasPrefix(ev, "Normal") && strings.Contains(ev, "spec.ipFamilies"))
	}
	if !found {
		t.Errorf("events %q, want a Normal one on spec.ipFamilies", events)
	}
}

// TestNodeTagsFoundFromInstances: without drivers.gce.nodeTags the
// firewall rules target each node's longest tag its name starts with, as
// upstream's computeHostTags; a node without one is an error naming the
// instance and the key, before anything is made.
func TestNodeTagsFoundFromInstances(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(func(c *gce.Config) { c.NodeTags = nil }))
	var nodes []*v1.Node
	for i, tags := range [][]string{{"gke-pool", "gke-pool-a1", "http-server"}, {"gke-pool"}} {
		in := e.fake.AddInstance(fakegce.Instance{Name: fmt.Sprintf("gke-pool-a1-%d", i), Zone: testZone, MachineType: "e2-standard-4", Tags: tags})
		nodes = append(nodes, node(in.Name, providerID(in)))
	}
	svc := service(nil)
	e.mustEnsure(svc, nodes)
	fw := e.firewall("k8s-fw-" + e.lbName(svc))
	if want := []string{"gke-pool", "gke-pool-a1"}; !slices.Equal(sorted(fw.TargetTags), want) {
		t.Errorf("firewall targets %v, want %v", fw.TargetTags, want)
	}

	odd := e.fake.AddInstance(fakegce.Instance{Name: "worker-7", Zone: testZone, MachineType: "e2-standard-4", Tags: []string{"http-server"}})
	before := e.mutations()
	_, err := e.ensure(svc, append(nodes, node(odd.Name, providerID(odd))))
	if err == nil || !strings.Contains(err.Error(), "worker-7") || !strings.Contains(err.Error(), "drivers.gce.nodeTags") {
		t.Errorf("Ensure with an untagged node: %v, want an error naming it and drivers.gce.nodeTags", err)
	}
	if d := e.mutations() - before; d != 0 {
		t.Errorf("%d changing calls before the error", d)
	}
}

// TestPartlyDeletedByHandConverges: a load balancer whose firewall rules
// someone deleted (GCE refuses to delete what a rule or pool still uses)
// gets them back under the same names; nothing else is made twice and the
// address stays.
func TestPartlyDeletedByHandConverges(t *testing.T) {
	t.Parallel()
	for _, ann := range []map[string]string{nil, internalLB} {
		e := newEnv(t)
		nodes := e.nodes("n", 2, testZone)
		svc := service(ann)
		ip := e.mustEnsure(svc, nodes).Ingress[0].IP
		fws := e.live()["firewalls"]
		c := ctx(t)
		client, err := compute.NewFirewallsRESTClient(c, e.userClient()...)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range fws {
			op, err := client.Delete(c, &computepb.DeleteFirewallRequest{Project: testProject, Firewall: name})
			if err == nil {
				err = op.Wait(c)
			}
			if err != nil {
				t.Fatalf("deleting %s by hand: %v", name, err)
			}
		}
		client.Close()
		before := e.fake.Stats()
		if got := e.mustEnsure(svc, nodes).Ingress[0].IP; got != ip {
			t.Errorf("%v: address %s, want %s kept", ann, got, ip)
		}
		if got := e.live()["firewalls"]; !slices.Equal(got, fws) {
			t.Errorf("%v: firewall rules %v, want %v back", ann, got, fws)
		}
		after := e.fake.Stats()
		for kind, st := range after {
			if kind != "firewalls" && st.Created != before[kind].Created {
				t.Errorf("%v: %s created again: %+v", ann, kind, st)
			}
		}
	}
}
