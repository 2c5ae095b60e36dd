package instances_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/instances"
)

// guard turns a hang into a failure; it never measures speed.
const guard = 20 * time.Second

// fakeSource counts calls, records the keys asked for and answers with
// answer (by default: every key absent).
type fakeSource struct {
	mu     sync.Mutex
	calls  int
	keys   [][]instances.Key
	answer func(keys []instances.Key) (instances.Answer, error)
}

func (f *fakeSource) LookupInstances(_ context.Context, keys []instances.Key) (instances.Answer, error) {
	f.mu.Lock()
	f.calls++
	f.keys = append(f.keys, slices.Clone(keys))
	answer := f.answer
	f.mu.Unlock()
	if answer == nil {
		return instances.Answer{Results: make([]instances.Result, len(keys))}, nil
	}
	return answer(keys)
}

func (f *fakeSource) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *fakeSource) setAnswer(a func(keys []instances.Key) (instances.Answer, error)) {
	f.mu.Lock()
	f.answer = a
	f.mu.Unlock()
}

// each answers every key with r(key).
func each(r func(instances.Key) instances.Result) func([]instances.Key) (instances.Answer, error) {
	return func(keys []instances.Key) (instances.Answer, error) {
		out := make([]instances.Result, len(keys))
		for i, k := range keys {
			out[i] = r(k)
		}
		return instances.Answer{Results: out}, nil
	}
}

func always(r instances.Result) func([]instances.Key) (instances.Answer, error) {
	return each(func(instances.Key) instances.Result { return r })
}

func batchError(err error) func([]instances.Key) (instances.Answer, error) {
	return func([]instances.Key) (instances.Answer, error) { return instances.Answer{}, err }
}

func node(name, providerID string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: providerID}}
}

// newInstances batches nothing (window 0) unless the test asks for more, so
// a lookup is answered without waiting.
func newInstances(t testing.TB, src instances.Source, ttl time.Duration) *instances.Instances {
	return instances.New(src, instances.Options{Driver: driverName(t), CacheTTL: ttl, Timeout: guard})
}

var runs atomic.Int64

// driverName labels this test's metrics apart from every other test's and
// from this test's own earlier runs (-count), as the registry is global.
func driverName(t testing.TB) string { return fmt.Sprintf("%s#%d", t.Name(), runs.Add(1)) }

func TestInstanceExists(t *testing.T) {
	unavailable := &cloudapi.Error{Driver: "fake", Op: "get", Kind: cloudapi.KindUnavailable, Status: 503, Err: errors.New("503")}
	notFoundFromClient := &cloudapi.Error{Driver: "fake", Op: "get", Kind: cloudapi.KindNotFound, Status: 404, Err: errors.New("404")}
	tests := []struct {
		name    string
		answer  func([]instances.Key) (instances.Answer, error)
		want    bool
		wantErr bool
	}{
		{"found", always(instances.Result{Instance: &instances.Instance{ProviderID: "fake://1"}}), true, false},
		{"definitively absent", always(instances.Result{}), false, false},
		{"result NotFound helper", always(instances.Result{Err: cloudapi.NotFound("no instance")}), false, false},
		{"result NotFound from client", always(instances.Result{Err: notFoundFromClient}), false, false},
		{"result NotFound wrapped", always(instances.Result{Err: fmt.Errorf("get: %w", notFoundFromClient)}), false, false},
		{"result plain error", always(instances.Result{Err: errors.New("timeout")}), false, true},
		{"result unavailable", always(instances.Result{Err: unavailable}), false, true},
		{"result invalid", always(instances.Result{Err: cloudapi.Invalid("bad provider ID")}), false, true},
		{"result unauthorized", always(instances.Result{Err: &cloudapi.Error{Kind: cloudapi.KindUnauthorized, Status: 401, Err: errors.New("401")}}), false, true},
		{"result error and instance", always(instances.Result{Instance: &instances.Instance{}, Err: errors.New("partial")}), false, true},
		{"batch error", batchError(errors.New("list failed")), false, true},
		{"batch deadline", batchError(context.DeadlineExceeded), false, true},
		{"batch unavailable", batchError(unavailable), false, true},
		// A batch error is ambiguous for every key, whatever it says: a
		// listing that 404s does not prove each node's instance is gone.
		{"batch NotFound", batchError(cloudapi.NotFound("project not found")), false, true},
		{"batch NotFound from client", batchError(notFoundFromClient), false, true},
		{"batch InstanceNotFound", batchError(cloudprovider.InstanceNotFound), false, true},
		{"too few results", func([]instances.Key) (instances.Answer, error) { return instances.Answer{}, nil }, false, true},
		{"too many results", func(k []instances.Key) (instances.Answer, error) {
			return instances.Answer{Results: make([]instances.Result, len(k)+1)}, nil
		}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &fakeSource{answer: tt.answer}
			in := newInstances(t, src, time.Hour)
			exists, err := in.InstanceExists(context.Background(), node("n1", "fake://1"))
			if tt.wantErr {
				// The rule the node lifecycle controller relies on: any
				// doubt is an error, never (false, nil), which deletes
				// the Node.
				if err == nil {
					t.Fatalf("InstanceExists = %v, nil; want an error", exists)
				}
				if cloudapi.IsNotFound(err) || instances.IsNotFound(err) {
					t.Errorf("ambiguous error %v reads as not-found", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("InstanceExists: %v", err)
			}
			if exists != tt.want {
				t.Errorf("InstanceExists = %v, want %v", exists, tt.want)
			}
		})
	}
}

func TestInstanceShutdown(t *testing.T) {
	tests := []struct {
		name         string
		answer       func([]instances.Key) (instances.Answer, error)
		want         bool
		wantErr      bool
		wantNotFound bool
	}{
		{"running", always(instances.Result{Instance: &instances.Instance{}}), false, false, false},
		{"shut down", always(instances.Result{Instance: &instances.Instance{Shutdown: true}}), true, false, false},
		{"absent", always(instances.Result{}), false, true, true},
		{"error", always(instances.Result{Err: errors.New("timeout")}), false, true, false},
		{"batch error", batchError(errors.New("list failed")), false, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := newInstances(t, &fakeSource{answer: tt.answer}, 0)
			got, err := in.InstanceShutdown(context.Background(), node("n1", "fake://1"))
			if (err != nil) != tt.wantErr {
				t.Fatalf("InstanceShutdown error = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("InstanceShutdown = %v, want %v", got, tt.want)
			}
			if errors.Is(err, cloudprovider.InstanceNotFound) != tt.wantNotFound {
				t.Errorf("error %v: errors.Is InstanceNotFound = %v, want %v", err, !tt.wantNotFound, tt.wantNotFound)
			}
		})
	}
}

func TestInstanceMetadataMapsEveryField(t *testing.T) {
	inst := instances.Instance{
		ProviderID:   "fake://42",
		Name:         "n1",
		InstanceType: "s-2vcpu",
		Zone:         "fra1-a",
		Region:       "fra1",
		Addresses: []v1.NodeAddress{
			{Type: v1.NodeInternalIP, Address: "10.0.0.2"},
			{Type: v1.NodeExternalIP, Address: "203.0.113.7"},
			{Type: v1.NodeHostName, Address: "n1"},
		},
		Labels: map[string]string{"example.com/pool": "blue"},
	}
	src := &fakeSource{answer: always(instances.Result{Instance: &inst})}
	in := newInstances(t, src, time.Hour)
	md, err := in.InstanceMetadata(context.Background(), node("n1", ""))
	if err != nil {
		t.Fatalf("InstanceMetadata: %v", err)
	}
	want := &cloudprovider.InstanceMetadata{
		ProviderID:       "fake://42",
		InstanceType:     "s-2vcpu",
		NodeAddresses:    inst.Addresses,
		Zone:             "fra1-a",
		Region:           "fra1",
		AdditionalLabels: map[string]string{"example.com/pool": "blue"},
	}
	if !reflect.DeepEqual(md, want) {
		t.Errorf("InstanceMetadata =\n%+v\nwant\n%+v", md, want)
	}
	// The addresses are the caller's to change; the cached instance keeps
	// its own.
	md.NodeAddresses[0].Address = "mutated"
	again, err := in.InstanceMetadata(context.Background(), node("n1", ""))
	if err != nil {
		t.Fatal(err)
	}
	if again.NodeAddresses[0].Address != "10.0.0.2" {
		t.Errorf("changing one answer's addresses changed the cache: %v", again.NodeAddresses)
	}
	if n := src.callCount(); n != 1 {
		t.Errorf("%d Source calls, want 1 (second answer from cache)", n)
	}
}

func TestInstanceMetadataNotFound(t *testing.T) {
	in := newInstances(t, &fakeSource{answer: always(instances.Result{})}, 0)
	md, err := in.InstanceMetadata(context.Background(), node("n1", "fake://1"))
	if !errors.Is(err, cloudprovider.InstanceNotFound) {
		t.Fatalf("InstanceMetadata = %v, %v; want an error wrapping cloudprovider.InstanceNotFound", md, err)
	}
	if !instances.IsNotFound(err) {
		t.Errorf("instances.IsNotFound(%v) = false", err)
	}
}

func TestCacheWithinTTLSkipsSource(t *testing.T) {
	src := &fakeSource{answer: always(instances.Result{Instance: &instances.Instance{ProviderID: "fake://1"}})}
	in := newInstances(t, src, time.Hour)
	for range 3 {
		if ok, err := in.InstanceExists(context.Background(), node("n1", "fake://1")); !ok || err != nil {
			t.Fatalf("InstanceExists = %v, %v", ok, err)
		}
	}
	if n := src.callCount(); n != 1 {
		t.Errorf("%d Source calls, want 1", n)
	}
}

func TestCacheExpires(t *testing.T) {
	const ttl = 50 * time.Millisecond
	src := &fakeSource{answer: always(instances.Result{Instance: &instances.Instance{ProviderID: "fake://1"}})}
	in := newInstances(t, src, ttl)
	lookup := func() {
		t.Helper()
		if inst, err := in.Lookup(context.Background(), instances.Key{ProviderID: "fake://1"}); inst == nil || err != nil {
			t.Fatalf("Lookup = %v, %v", inst, err)
		}
	}
	lookup()
	// The entry was stamped before Lookup returned, so sleeping past the
	// TTL guarantees expiry however loaded the machine is.
	time.Sleep(2 * ttl)
	lookup()
	if n := src.callCount(); n != 2 {
		t.Errorf("%d Source calls, want 2 (entry expired)", n)
	}
}

func TestCacheTTLZeroDisablesCache(t *testing.T) {
	src := &fakeSource{answer: always(instances.Result{Instance: &instances.Instance{ProviderID: "fake://1", Name: "n1"}})}
	in := newInstances(t, src, 0)
	for range 3 {
		if _, err := in.InstanceExists(context.Background(), node("n1", "fake://1")); err != nil {
			t.Fatal(err)
		}
	}
	if n := src.callCount(); n != 3 {
		t.Errorf("%d Source calls, want 3", n)
	}
}

// A definitive absence, as a nil instance or as a per-key not-found error,
// is remembered like a found instance.
func TestCacheRemembersAbsence(t *testing.T) {
	for name, r := range map[string]instances.Result{
		"nil instance":             {},
		"not-found error":          {Err: cloudapi.NotFound("gone")},
		"wrapped InstanceNotFound": {Err: fmt.Errorf("droplet: %w", cloudprovider.InstanceNotFound)},
	} {
		t.Run(name, func(t *testing.T) {
			src := &fakeSource{answer: always(r)}
			in := newInstances(t, src, time.Hour)
			for range 2 {
				if ok, err := in.InstanceExists(context.Background(), node("n1", "fake://1")); ok || err != nil {
					t.Fatalf("InstanceExists = %v, %v; want false, nil", ok, err)
				}
			}
			if n := src.callCount(); n != 1 {
				t.Errorf("%d Source calls, want 1", n)
			}
		})
	}
}

func TestErrorsAreNotCached(t *testing.T) {
	tests := []struct {
		name  string
		first func([]instances.Key) (instances.Answer, error)
	}{
		{"result error", always(instances.Result{Err: errors.New("timeout")})},
		{"batch error", batchError(errors.New("list failed"))},
		{"misaligned", func([]instances.Key) (instances.Answer, error) { return instances.Answer{}, nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &fakeSource{answer: tt.first}
			in := newInstances(t, src, time.Hour)
			n := node("n1", "fake://1")
			_, _ = in.InstanceExists(context.Background(), n)
			src.setAnswer(always(instances.Result{Instance: &instances.Instance{ProviderID: "fake://1"}}))
			ok, err := in.InstanceExists(context.Background(), n)
			if !ok || err != nil {
				t.Errorf("after the cloud recovered, InstanceExists = %v, %v", ok, err)
			}
			if c := src.callCount(); c != 2 {
				t.Errorf("%d Source calls, want 2", c)
			}
		})
	}
}

func TestSeenInstancesAreCached(t *testing.T) {
	src := &fakeSource{answer: func(keys []instances.Key) (instances.Answer, error) {
		return instances.Answer{
			Results: []instances.Result{{Instance: &instances.Instance{ProviderID: "fake://1", Name: "n1"}}},
			Seen: []instances.Instance{
				{ProviderID: "fake://2", Name: "n2", Zone: "z2"},
				{ProviderID: "fake://3", Name: "n3", Zone: "z3"},
			},
		}, nil
	}}
	in := newInstances(t, src, time.Hour)
	if _, err := in.InstanceExists(context.Background(), node("n1", "fake://1")); err != nil {
		t.Fatal(err)
	}
	src.setAnswer(batchError(errors.New("the Source must not be asked again")))
	for _, tc := range []struct {
		node *v1.Node
		zone string
	}{
		{node("n2", "fake://2"), "z2"}, // by provider ID
		{node("n3", ""), "z3"},         // by name
	} {
		md, err := in.InstanceMetadata(context.Background(), tc.node)
		if err != nil {
			t.Fatalf("InstanceMetadata(%s): %v", tc.node.Name, err)
		}
		if md.Zone != tc.zone {
			t.Errorf("InstanceMetadata(%s).Zone = %q, want %q", tc.node.Name, md.Zone, tc.zone)
		}
	}
	if n := src.callCount(); n != 1 {
		t.Errorf("%d Source calls, want 1", n)
	}
}

func TestNameLookupCachesProviderID(t *testing.T) {
	src := &fakeSource{answer: each(func(k instances.Key) instances.Result {
		if k.ProviderID != "" || k.NodeName != "n1" {
			return instances.Result{Err: fmt.Errorf("unexpected key %v", k)}
		}
		return instances.Result{Instance: &instances.Instance{ProviderID: "fake://7", Name: "cloud-n1", InstanceType: "big"}}
	})}
	in := newInstances(t, src, time.Hour)
	// A new Node has no provider ID yet: looked up by name.
	md, err := in.InstanceMetadata(context.Background(), node("n1", ""))
	if err != nil || md.ProviderID != "fake://7" {
		t.Fatalf("InstanceMetadata by name = %+v, %v", md, err)
	}
	// Once the controller set it, the provider ID is answered from cache.
	md, err = in.InstanceMetadata(context.Background(), node("n1", "fake://7"))
	if err != nil || md.InstanceType != "big" {
		t.Fatalf("InstanceMetadata by provider ID = %+v, %v", md, err)
	}
	if n := src.callCount(); n != 1 {
		t.Errorf("%d Source calls, want 1", n)
	}
}

func TestKeysPassedToSource(t *testing.T) {
	src := &fakeSource{}
	in := newInstances(t, src, 0)
	_, _ = in.InstanceExists(context.Background(), node("n1", "fake://1"))
	_, _ = in.InstanceExists(context.Background(), node("n2", ""))
	src.mu.Lock()
	got := slices.Clone(src.keys)
	src.mu.Unlock()
	want := [][]instances.Key{{{ProviderID: "fake://1", NodeName: "n1"}}, {{NodeName: "n2"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Source got keys %v, want %v", got, want)
	}
}

func TestConcurrentLookupsAreBatched(t *testing.T) {
	const (
		nodes     = 200
		batchSize = 50
		slack     = 3
	)
	src := &fakeSource{answer: each(func(k instances.Key) instances.Result {
		return instances.Result{Instance: &instances.Instance{ProviderID: k.ProviderID}}
	})}
	in := instances.New(src, instances.Options{
		Driver:      driverName(t),
		BatchWindow: 250 * time.Millisecond,
		BatchSize:   batchSize,
		CacheTTL:    time.Hour,
		Timeout:     guard,
	})
	start := make(chan struct{})
	errs := make(chan error, nodes)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() {
			<-start
			pid := fmt.Sprintf("fake://%d", i)
			md, err := in.InstanceMetadata(context.Background(), node(fmt.Sprint("n", i), pid))
			switch {
			case err != nil:
				errs <- err
			case md.ProviderID != pid:
				errs <- fmt.Errorf("node %d got instance %s", i, md.ProviderID)
			}
		})
	}
	close(start)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(guard):
		t.Fatal("lookups did not finish")
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n, limit := src.callCount(), nodes/batchSize+slack; n > limit {
		t.Errorf("%d Source calls for %d nodes, want at most %d", n, nodes, limit)
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	seen := map[instances.Key]bool{}
	for _, ks := range src.keys {
		for _, k := range ks {
			if seen[k] {
				t.Errorf("key %v asked for twice", k)
			}
			seen[k] = true
		}
	}
	if len(seen) != nodes {
		t.Errorf("Source was asked for %d keys, want %d", len(seen), nodes)
	}
}

func TestLookupMetrics(t *testing.T) {
	src := &fakeSource{answer: always(instances.Result{Instance: &instances.Instance{ProviderID: "fake://1"}})}
	name := driverName(t)
	in := instances.New(src, instances.Options{Driver: name, CacheTTL: time.Hour, Timeout: guard})
	for range 3 {
		if _, err := in.InstanceExists(context.Background(), node("n1", "fake://1")); err != nil {
			t.Fatal(err)
		}
	}
	got, err := testutil.GetCounterValuesFromGatherer(legacyregistry.DefaultGatherer,
		"polyccm_instances_lookups_total", map[string]string{"driver": name}, "source")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]float64{"cloud": 1, "cache": 2}; !maps.Equal(got, want) {
		t.Errorf("lookups by source = %v, want %v", got, want)
	}
}

func TestIsNotFound(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("x"), false},
		{cloudprovider.InstanceNotFound, true},
		{fmt.Errorf("node: %w", cloudprovider.InstanceNotFound), true},
		{cloudapi.NotFound("gone"), true},
		{fmt.Errorf("wrapped: %w", &cloudapi.Error{Kind: cloudapi.KindNotFound}), true},
		{&cloudapi.Error{Kind: cloudapi.KindUnavailable}, false},
	}
	for _, tt := range tests {
		if got := instances.IsNotFound(tt.err); got != tt.want {
			t.Errorf("IsNotFound(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

func BenchmarkInstancesCacheHit(b *testing.B) {
	src := &fakeSource{answer: each(func(k instances.Key) instances.Result {
		return instances.Result{Instance: &instances.Instance{ProviderID: k.ProviderID}}
	})}
	in := newInstances(b, src, time.Hour)
	const n = 64
	nodes := make([]*v1.Node, n)
	for i := range nodes {
		nodes[i] = node(fmt.Sprint("n", i), fmt.Sprintf("fake://%d", i))
		if _, err := in.InstanceExists(context.Background(), nodes[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		i := 0
		for pb.Next() {
			if ok, err := in.InstanceExists(ctx, nodes[i%n]); !ok || err != nil {
				b.Errorf("InstanceExists = %v, %v", ok, err)
				return
			}
			i++
		}
	})
	b.StopTimer()
	if c := src.callCount(); c != n {
		b.Errorf("%d Source calls, want %d (all hits)", c, n)
	}
}

// withReady gives n a Ready condition of status s that changed at t.
func withReady(n *v1.Node, s v1.ConditionStatus, t time.Time) *v1.Node {
	n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: s, LastTransitionTime: metav1.NewTime(t)}}
	return n
}

// The lifecycle controller's questions about a NotReady Node: the first
// after the Node stopped being Ready goes to the cloud whatever the cache
// holds; later ones are answered from that answer past the cache TTL (up
// to NotReadyRecheck), while a Ready Node's answers expire with the TTL.
func TestNotReadyNodesAreRecheckedOnTransition(t *testing.T) {
	const ttl = 50 * time.Millisecond
	src := &fakeSource{answer: always(instances.Result{Instance: &instances.Instance{ProviderID: "fake://1"}})}
	in := newInstances(t, src, ttl)
	ctx := context.Background()
	exists := func(n *v1.Node) {
		t.Helper()
		if ok, err := in.InstanceExists(ctx, n); !ok || err != nil {
			t.Fatalf("InstanceExists = %v, %v", ok, err)
		}
	}
	exists(node("a", "fake://1")) // cached now
	// The Node went NotReady after that answer: asked again.
	exists(withReady(node("a", "fake://1"), v1.ConditionFalse, time.Now()))
	if n := src.callCount(); n != 2 {
		t.Fatalf("%d Source calls, want 2: the answer before the Node went NotReady is not used", n)
	}
	// Past the TTL, the NotReady Node's answer (learnt after it went
	// NotReady) still serves; a Ready Node's does not.
	went := time.Now().Add(-time.Second)
	time.Sleep(2 * ttl)
	exists(withReady(node("a", "fake://1"), v1.ConditionUnknown, went))
	if n := src.callCount(); n != 2 {
		t.Errorf("%d Source calls, want 2: a NotReady Node is rechecked every %s, not every TTL", n, instances.NotReadyRecheck)
	}
	exists(withReady(node("a", "fake://1"), v1.ConditionTrue, went))
	if n := src.callCount(); n != 3 {
		t.Errorf("%d Source calls, want 3: a Ready Node's answer expires with the TTL", n)
	}
}
