// Package drivertest is the contract every driver passes, run by each
// driver's tests against its fake cloud: instance lookup semantics (answers
// aligned with keys; a per-key not-found is definitive, a batch-wide error
// ambiguous; throttling, 5xx and timeouts never mean "gone"), error
// classification, the load balancer lifecycle (create, change ports, nodes
// join and leave, restart in the middle, delete leaves nothing), routes
// and disk lookups where the driver has them. A new driver passes it
// before anything else.
//
// A driver's test supplies a Fake, which knows the driver's name and config
// and the fake cloud behind it; the suite builds the driver through the
// registry, as polyccm does, and drives it only through the contracts in
// core.
package drivertest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/polyccm/polyccm/core/assembly"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/instances"
)

// Fault is a failure the fake injects into the calls the driver makes to
// look instances up.
type Fault struct {
	// Status fails each call with that HTTP status (429, 500, 503, 401).
	Status int
	// Hang holds each call until the client gives up.
	Hang bool
}

// Fake is a driver's fake cloud as the suite sees it.
type Fake interface {
	// Driver is the registered driver's name.
	Driver() string
	// Config is the driver's decoded config pointing at the fake.
	Config(t *testing.T) any
	// ClusterName is the cluster the driver works for.
	ClusterName() string
	// AddInstance starts a running instance and returns the Node its
	// kubelet registers (name and provider ID).
	AddInstance(t *testing.T) *v1.Node
	// RemoveInstance deletes the instance behind node from the cloud.
	RemoveInstance(t *testing.T, node *v1.Node)
	// MissingProviderID is a well-formed provider ID no instance has.
	MissingProviderID() string
	// InjectLookupFault makes every instance lookup call fail as f says,
	// until the returned function is called.
	InjectLookupFault(f Fault) (clear func())
}

// LoadBalancerFake is a Fake whose driver manages load balancers.
type LoadBalancerFake interface {
	Fake
	// Service is a Service of type LoadBalancer with ports, as this cloud
	// takes it (with whatever annotations it needs).
	Service(name string, ports ...int32) *v1.Service
	// Targets lists the Node names the Service's load balancer sends
	// traffic to, sorted; nil if it has none.
	Targets(t *testing.T, svc *v1.Service) []string
	// Ports lists the ports the Service's load balancer listens on,
	// sorted (all of a range it listens on).
	Ports(t *testing.T, svc *v1.Service) []int32
	// Resources lists every load-balancer resource in the cloud (load
	// balancers, pools, rules, groups...), to count what is created and
	// what is left behind.
	Resources(t *testing.T) []string
}

// clients hands the driver the test's cluster.
type clients struct{ kube kubernetes.Interface }

// Clients is a ControllerClientBuilder that hands out kube, as the
// runner's hands out the real cluster's client.
func Clients(kube kubernetes.Interface) cloudprovider.ControllerClientBuilder { return clients{kube} }

func (b clients) Config(string) (*restclient.Config, error)   { return &restclient.Config{}, nil }
func (b clients) ConfigOrDie(string) *restclient.Config       { return &restclient.Config{} }
func (b clients) Client(string) (kubernetes.Interface, error) { return b.kube, nil }
func (b clients) ClientOrDie(string) kubernetes.Interface     { return b.kube }

// Cloud builds the driver through the registry against the fake, as
// `polyccm run` builds it (core/assembly: core's lookups, the load
// balancer rules and progress, routes and volumes around the driver's
// cloud), with a cloud client that retries quickly, as a fresh polyccm
// process would. kube is the cluster it sees (nil: an empty one).
func Cloud(t *testing.T, f Fake, kube kubernetes.Interface) *assembly.Cloud {
	c, _ := build(t, f, kube)
	return c
}

// build is Cloud, with the informers the driver and core's rules read.
func build(t *testing.T, f Fake, kube kubernetes.Interface) (*assembly.Cloud, informers.SharedInformerFactory) {
	t.Helper()
	if kube == nil {
		kube = k8sfake.NewClientset()
	}
	d, ok := driver.Default().Lookup(f.Driver())
	if !ok {
		t.Fatalf("driver %q is not registered (build tag missing?)", f.Driver())
	}
	inf := informers.NewSharedInformerFactory(kube, 0)
	cloud, err := assembly.New(assembly.Options{
		Driver: d, Config: f.Config(t), ClusterName: f.ClusterName(),
		CloudAPI: cloudapi.Options{
			// Backoffs as in production but shorter: the fakes throttle at
			// the clouds' rates, and a client that hammers them fails.
			QPS: 1000, Burst: 1000, Timeout: time.Second,
			BaseBackoff: 50 * time.Millisecond, MaxBackoff: time.Second, MaxAttempts: 4,
		},
		Instances:     instances.Options{BatchWindow: time.Millisecond, Timeout: 20 * time.Second},
		ClientBuilder: clients{kube: kube},
		Informers:     inf,
		Recorder:      record.NewFakeRecorder(1000),
	})
	if err != nil {
		t.Fatalf("%s: %v", f.Driver(), err)
	}
	// The informers the driver and core asked for, started as the runner
	// does.
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	inf.Start(stop)
	inf.WaitForCacheSync(stop)
	return cloud, inf
}

// listed waits until the informer holds svc as it is now: the rules hand
// the driver the informer's copy.
func listed(t *testing.T, inf informers.SharedInformerFactory, svc *v1.Service) {
	t.Helper()
	lister := inf.Core().V1().Services().Lister()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := lister.Services(svc.Namespace).Get(svc.Name)
		// The fake clientset leaves resourceVersion empty on every
		// write, so the version alone cannot tell an old copy from a
		// new one: compare what the drivers read too.
		if err == nil && got.ResourceVersion == svc.ResourceVersion &&
			equality.Semantic.DeepEqual(got.Spec, svc.Spec) &&
			equality.Semantic.DeepEqual(got.Annotations, svc.Annotations) &&
			equality.Semantic.DeepEqual(got.Status, svc.Status) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the informer does not show Service %s/%s at resourceVersion %s", svc.Namespace, svc.Name, svc.ResourceVersion)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Run runs the whole contract: instances always; load balancers, routes
// and volumes when the driver has them. A driver with load balancers or
// volumes whose Fake cannot set them up fails: every capability is held
// to its contract.
func Run(t *testing.T, f Fake) {
	t.Run("Instances", func(t *testing.T) { RunInstances(t, f) })
	c := Cloud(t, f, nil)
	if _, ok := c.LoadBalancer(); ok {
		lf, ok := f.(LoadBalancerFake)
		if !ok {
			t.Fatalf("driver %s has load balancers; its Fake must be a LoadBalancerFake", f.Driver())
		}
		t.Run("LoadBalancers", func(t *testing.T) { RunLoadBalancers(t, lf) })
	}
	if _, ok := c.Routes(); ok {
		t.Run("Routes", func(t *testing.T) { RunRoutes(t, f) })
	}
	if c.Volumes() != nil {
		vf, ok := f.(VolumeFake)
		if !ok {
			t.Fatalf("driver %s has volumes; its Fake must be a VolumeFake", f.Driver())
		}
		t.Run("Volumes", func(t *testing.T) { RunVolumes(t, vf) })
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// RunInstances checks the lookup contract of instances.Source.
func RunInstances(t *testing.T, f Fake) {
	src := Cloud(t, f, nil).Driver().Instances()
	a, b := f.AddInstance(t), f.AddInstance(t)
	gone := f.AddInstance(t)
	f.RemoveInstance(t, gone)

	t.Run("answers are aligned with keys", func(t *testing.T) {
		keys := []instances.Key{
			{ProviderID: b.Spec.ProviderID, NodeName: b.Name},
			{ProviderID: f.MissingProviderID(), NodeName: "missing"},
			{ProviderID: a.Spec.ProviderID, NodeName: a.Name},
			{ProviderID: gone.Spec.ProviderID, NodeName: gone.Name},
		}
		ans, err := src.LookupInstances(ctx(t), keys)
		if err != nil {
			t.Fatal(err)
		}
		if len(ans.Results) != len(keys) {
			t.Fatalf("%d results for %d keys", len(ans.Results), len(keys))
		}
		for i, want := range []*v1.Node{b, nil, a, nil} {
			r := ans.Results[i]
			switch {
			case r.Err != nil:
				t.Errorf("key %v: %v, want a definitive answer", keys[i], r.Err)
			case want == nil && r.Instance != nil:
				t.Errorf("key %v: found %+v, want definitively not found", keys[i], r.Instance)
			case want != nil && (r.Instance == nil || r.Instance.ProviderID != want.Spec.ProviderID):
				t.Errorf("key %v: got %+v, want the instance of %s", keys[i], r.Instance, want.Name)
			}
		}
	})

	t.Run("a failed call is never gone", func(t *testing.T) {
		keys := []instances.Key{{ProviderID: a.Spec.ProviderID, NodeName: a.Name}, {ProviderID: f.MissingProviderID(), NodeName: "missing"}}
		neverGone(t, []Fault{{Status: 429}, {Status: 500}, {Status: 503}, {Status: 401}, {Hang: true}}, f.InjectLookupFault,
			func(c context.Context) ([]error, error) {
				ans, err := src.LookupInstances(c, keys)
				return resultErrs(ans.Results, func(r instances.Result) error { return r.Err }), err
			}, len(keys))
	})

	t.Run("InstancesV2 over the source", func(t *testing.T) {
		in := instances.New(src, instances.Options{Driver: f.Driver(), BatchWindow: time.Millisecond, Timeout: 20 * time.Second})
		if ok, err := in.InstanceExists(ctx(t), a); !ok || err != nil {
			t.Errorf("InstanceExists(%s) = %v, %v", a.Name, ok, err)
		}
		if ok, err := in.InstanceExists(ctx(t), gone); ok || err != nil {
			t.Errorf("InstanceExists(removed %s) = %v, %v; want false, nil", gone.Name, ok, err)
		}
		md, err := in.InstanceMetadata(ctx(t), a)
		if err != nil || md.ProviderID != a.Spec.ProviderID {
			t.Errorf("InstanceMetadata(%s) = %+v, %v", a.Name, md, err)
		}
		// The registry's declaration is what the Node gets: a driver that
		// says Zones gives a zone label, one that does not gives none
		// (DigitalOcean: regions only, as its CCM).
		if d, _ := driver.Default().Lookup(f.Driver()); err == nil && d.Has(driver.Zones) != (md.Zone != "") {
			t.Errorf("driver %s declares %s: %v, but InstanceMetadata(%s) has zone %q", f.Driver(), driver.Zones, d.Has(driver.Zones), a.Name, md.Zone)
		}
		clear := f.InjectLookupFault(Fault{Status: 503})
		defer clear()
		in = instances.New(src, instances.Options{Driver: f.Driver(), BatchWindow: time.Millisecond, Timeout: 5 * time.Second})
		if ok, err := in.InstanceExists(ctx(t), a); err == nil {
			t.Errorf("InstanceExists during an outage = %v, nil; want an error (a Node is deleted on false)", ok)
		}
	})
}

func faultName(f Fault) string {
	if f.Hang {
		return "timeout"
	}
	return fmt.Sprint(f.Status)
}

// neverGone makes a lookup of n keys under each fault (injected through
// inject) and checks the answer is never definitive: a batch-wide error, or
// an error for every key, classified as the fault. lookup returns each
// key's error and the batch's.
func neverGone(t *testing.T, faults []Fault, inject func(Fault) func(), lookup func(context.Context) ([]error, error), n int) {
	for _, fault := range faults {
		t.Run(faultName(fault), func(t *testing.T) {
			clear := inject(fault)
			defer clear()
			c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			errs, err := lookup(c)
			if err != nil {
				checkKind(t, fault, err)
				return // a batch-wide error: ambiguous for every key
			}
			if len(errs) != n {
				t.Fatalf("%d results for %d keys", len(errs), n)
			}
			for i, err := range errs {
				if err == nil {
					t.Errorf("key %d answered while every call failed; want an error, never a definitive answer", i)
					continue
				}
				checkKind(t, fault, err)
			}
		})
	}
}

// resultErrs is each result's error.
func resultErrs[R any](rs []R, errOf func(R) error) []error {
	out := make([]error, len(rs))
	for i, r := range rs {
		out[i] = errOf(r)
	}
	return out
}

// checkKind checks a failed lookup's error is classified as what it was.
func checkKind(t *testing.T, f Fault, err error) {
	t.Helper()
	want := map[int]cloudapi.Kind{429: cloudapi.KindThrottled, 500: cloudapi.KindUnavailable, 503: cloudapi.KindUnavailable, 401: cloudapi.KindUnauthorized}[f.Status]
	if f.Hang {
		want = cloudapi.KindUnavailable
	}
	got := cloudapi.KindOf(err)
	if got == cloudapi.KindNotFound {
		t.Fatalf("%s classified as not found: %v", faultName(f), err)
	}
	if got != want && !(f.Hang && errors.Is(err, context.DeadlineExceeded)) {
		t.Errorf("%s classified as %v, want %v: %v", faultName(f), got, want, err)
	}
}

// settle repeats op while the driver asks to be called again (a load
// balancer provisioning, a resource not yet consistent), as the service
// controller does, with the waits shortened.
func settle(t *testing.T, what string, op func() error) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		err := op()
		if err == nil {
			return
		}
		wait := 200 * time.Millisecond
		var retry interface{ RetryAfter() time.Duration }
		switch {
		case time.Now().After(deadline):
			t.Fatalf("%s: still failing after 90s: %v", what, err)
		case errors.As(err, &retry):
			wait = min(retry.RetryAfter(), wait)
		case cloudapi.KindOf(err) == cloudapi.KindThrottled:
			// The service controller retries too, with backoff; the
			// cloud's bucket refills meanwhile.
			wait = time.Second
		default:
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(wait)
	}
}

// RunLoadBalancers checks the load balancer lifecycle.
func RunLoadBalancers(t *testing.T, f LoadBalancerFake) {
	kube := k8sfake.NewClientset()
	assembled, inf := build(t, f, kube)
	lbs, _ := assembled.LoadBalancer()
	cluster := f.ClusterName()
	n1, n2, n3 := f.AddInstance(t), f.AddInstance(t), f.AddInstance(t)
	svc, err := kube.CoreV1().Services("default").Create(ctx(t), f.Service("contract", 80), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	listed(t, inf, svc)
	before := f.Resources(t)
	// refresh takes in what the driver wrote on the Service (annotations,
	// its record), as the informer would hand it the next time.
	refresh := func() {
		t.Helper()
		got, err := kube.CoreV1().Services(svc.Namespace).Get(ctx(t), svc.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got.Spec.Ports, got.Status.LoadBalancer = svc.Spec.Ports, svc.Status.LoadBalancer
		svc = got
	}

	ensure := func(lbs cloudprovider.LoadBalancer, nodes ...*v1.Node) *v1.LoadBalancerStatus {
		t.Helper()
		var st *v1.LoadBalancerStatus
		settle(t, "EnsureLoadBalancer", func() (err error) {
			refresh()
			st, err = lbs.EnsureLoadBalancer(ctx(t), cluster, svc, nodes)
			return err
		})
		if st == nil || len(st.Ingress) == 0 {
			t.Fatalf("EnsureLoadBalancer returned %+v, want an ingress", st)
		}
		svc.Status.LoadBalancer = *st
		updated, err := kube.CoreV1().Services(svc.Namespace).UpdateStatus(ctx(t), svc, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// As the service controller leaves it, ports included: the node
		// sync reads the informer's copy.
		updated.Spec.Ports = svc.Spec.Ports
		if updated, err = kube.CoreV1().Services(svc.Namespace).Update(ctx(t), updated, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		svc = updated
		listed(t, inf, svc)
		return st
	}
	wantTargets := func(nodes ...*v1.Node) {
		t.Helper()
		var want []string
		for _, n := range nodes {
			want = append(want, n.Name)
		}
		slices.Sort(want)
		if got := f.Targets(t, svc); !slices.Equal(got, want) {
			t.Fatalf("targets %v, want %v", got, want)
		}
	}

	if _, exists, err := lbs.GetLoadBalancer(ctx(t), cluster, svc); exists || err != nil {
		t.Fatalf("GetLoadBalancer before create = %v, %v", exists, err)
	}
	st := ensure(lbs, n1, n2)
	wantTargets(n1, n2)
	created := f.Resources(t)
	if len(created) <= len(before) {
		t.Fatalf("resources %v after create, as many as before", created)
	}
	if got, exists, err := lbs.GetLoadBalancer(ctx(t), cluster, svc); !exists || err != nil || len(got.Ingress) == 0 {
		t.Fatalf("GetLoadBalancer after create = %+v, %v, %v", got, exists, err)
	}

	t.Log("change ports")
	svc.Spec.Ports = f.Service("contract", 80, 443).Spec.Ports
	if again := ensure(lbs, n1, n2); !sameAddress(again, st) {
		t.Errorf("ingress moved on a port change: %+v -> %+v", st.Ingress, again.Ingress)
	}
	// Contained, not equal: some load balancers listen on a range
	// (GCE's target-pool forwarding rules take lowest to highest port).
	if got := f.Ports(t, svc); !slices.Contains(got, 80) || !slices.Contains(got, 443) {
		t.Errorf("ports %v, want 80 and 443 among them", got)
	}

	t.Log("nodes join and leave")
	settle(t, "UpdateLoadBalancer", func() error { return lbs.UpdateLoadBalancer(ctx(t), cluster, svc, []*v1.Node{n1, n2, n3}) })
	wantTargets(n1, n2, n3)
	settle(t, "UpdateLoadBalancer", func() error { return lbs.UpdateLoadBalancer(ctx(t), cluster, svc, []*v1.Node{n3}) })
	wantTargets(n3)

	t.Log("restart: a new process finds what the old one made")
	restarted, _ := Cloud(t, f, kube).LoadBalancer()
	resources := f.Resources(t)
	if again := ensure(restarted, n2, n3); !sameAddress(again, st) {
		t.Errorf("ingress moved across a restart: %+v -> %+v", st.Ingress, again.Ingress)
	}
	wantTargets(n2, n3)
	if after := f.Resources(t); len(after) != len(resources) {
		t.Errorf("a restarted driver changed the resource count: %v -> %v", resources, after)
	}

	t.Log("delete leaves nothing")
	refresh()
	settle(t, "EnsureLoadBalancerDeleted", func() error { return restarted.EnsureLoadBalancerDeleted(ctx(t), cluster, svc) })
	if after := f.Resources(t); !slices.Equal(after, before) {
		t.Errorf("left behind after delete: %v (before create: %v)", after, before)
	}
	if _, exists, err := lbs.GetLoadBalancer(ctx(t), cluster, svc); exists || err != nil {
		t.Errorf("GetLoadBalancer after delete = %v, %v", exists, err)
	}
	settle(t, "EnsureLoadBalancerDeleted again", func() error { return lbs.EnsureLoadBalancerDeleted(ctx(t), cluster, svc) })
}

// RunRoutes checks routes: create, list, delete, each idempotent.
func RunRoutes(t *testing.T, f Fake) {
	n := f.AddInstance(t)
	kube := k8sfake.NewClientset(n)
	routes, _ := Cloud(t, f, kube).Routes()
	cluster := f.ClusterName()
	r := &cloudprovider.Route{Name: "contract", TargetNode: types.NodeName(n.Name), DestinationCIDR: "10.244.7.0/24"}
	// find lists the routes and returns ours as listed: the route
	// controller deletes what ListRoutes returned, names included.
	find := func() *cloudprovider.Route {
		t.Helper()
		rs, err := routes.ListRoutes(ctx(t), cluster)
		if err != nil {
			t.Fatal(err)
		}
		for _, got := range rs {
			if got.TargetNode == r.TargetNode && got.DestinationCIDR == r.DestinationCIDR {
				return got
			}
		}
		return nil
	}
	hint := n.UID
	if hint == "" {
		hint = uuid.NewUUID()
	}
	for range 2 {
		// The route controller's name hint is the Node's UID.
		settle(t, "CreateRoute", func() error { return routes.CreateRoute(ctx(t), cluster, string(hint), r) })
	}
	listed := find()
	if listed == nil {
		t.Fatalf("route to %s for %s not listed after CreateRoute", r.DestinationCIDR, r.TargetNode)
	}
	for range 2 {
		settle(t, "DeleteRoute", func() error { return routes.DeleteRoute(ctx(t), cluster, listed) })
	}
	if find() != nil {
		t.Fatalf("route to %s for %s still listed after DeleteRoute", r.DestinationCIDR, r.TargetNode)
	}
}

func sameAddress(a, b *v1.LoadBalancerStatus) bool {
	return a.Ingress[0].IP == b.Ingress[0].IP && a.Ingress[0].Hostname == b.Ingress[0].Hostname
}
