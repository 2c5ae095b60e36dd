package loadbalancers_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// instances answers from truth, per providerID: "live", "gone" or "doubt"
// (the lookup fails); cached answers instead until forgotten.
type instances struct {
	mu     sync.Mutex
	truth  map[string]string
	cached map[string]string
	asked  int
}

func (f *instances) InstanceExists(_ context.Context, n *v1.Node) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked++
	state, ok := f.cached[n.Spec.ProviderID]
	if !ok {
		state = f.truth[n.Spec.ProviderID]
	}
	switch state {
	case "gone":
		return false, nil
	case "doubt":
		return false, errors.New("timeout")
	}
	return true, nil
}

func (f *instances) Forget(n *v1.Node) {
	f.mu.Lock()
	delete(f.cached, n.Spec.ProviderID)
	f.mu.Unlock()
}

// lb records the Nodes of each call and answers with refuse's verdict.
type lb struct {
	cloudprovider.LoadBalancer // unused methods panic
	calls                      [][]string
	refuse                     func(nodes []string) error
}

func (l *lb) call(nodes []*v1.Node) error {
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	l.calls = append(l.calls, names)
	if l.refuse != nil {
		return l.refuse(names)
	}
	return nil
}

func (l *lb) EnsureLoadBalancer(_ context.Context, _ string, _ *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	if err := l.call(nodes); err != nil {
		return nil, err
	}
	return &v1.LoadBalancerStatus{}, nil
}

func (l *lb) UpdateLoadBalancer(_ context.Context, _ string, _ *v1.Service, nodes []*v1.Node) error {
	return l.call(nodes)
}

var svc = &v1.Service{Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer}}

func nodes() []*v1.Node {
	return []*v1.Node{
		node("a", "fake://a", nil),
		node("b", "fake://b", nil),
		node("c", "fake://c", nil),
		node("d", "", nil), // not initialized: the driver decides
		node("e", "fake://e", nil),
	}
}

func TestLeaveOutGoneKeepsNodesInDoubt(t *testing.T) {
	in := &instances{truth: map[string]string{"fake://b": "gone", "fake://c": "doubt", "fake://e": "gone"}}
	l := &lb{}
	w := loadbalancers.Rules(l, loadbalancers.RuleOptions{Instances: in})
	ctx := context.Background()
	if _, err := w.EnsureLoadBalancer(ctx, "k", svc, nodes()); err != nil {
		t.Fatal(err)
	}
	if err := w.UpdateLoadBalancer(ctx, "k", svc, nodes()); err != nil {
		t.Fatal(err)
	}
	want := []string{"a", "c", "d"}
	for i, got := range l.calls {
		if !slices.Equal(got, want) {
			t.Errorf("call %d got Nodes %v, want %v (gone instances left out, doubtful and uninitialized kept)", i, got, want)
		}
	}
	if len(l.calls) != 2 {
		t.Errorf("%d load balancer calls, want 2", len(l.calls))
	}
}

// refuseMissing is a cloud that refuses any request naming b, as
// DigitalOcean refuses an unknown droplet with 422.
func refuseMissing(kind cloudapi.Kind) func([]string) error {
	return func(names []string) error {
		if slices.Contains(names, "b") {
			return &cloudapi.Error{Driver: "fake", Op: "UpdateLB", Kind: kind, Status: 422, Err: errors.New("droplet b not found")}
		}
		return nil
	}
}

func TestLeaveOutGoneLooksAgainWhenTheCloudRefuses(t *testing.T) {
	// The cache still thinks b exists.
	in := &instances{truth: map[string]string{"fake://b": "gone"}, cached: map[string]string{"fake://b": "live"}}
	l := &lb{refuse: refuseMissing(cloudapi.KindInvalid)}
	w := loadbalancers.Rules(l, loadbalancers.RuleOptions{Instances: in})
	if err := w.UpdateLoadBalancer(context.Background(), "k", svc, nodes()); err != nil {
		t.Fatalf("UpdateLoadBalancer = %v; want it to succeed once b is found gone", err)
	}
	want := [][]string{{"a", "b", "c", "d", "e"}, {"a", "c", "d", "e"}}
	if !slices.EqualFunc(l.calls, want, slices.Equal) {
		t.Errorf("calls %v, want %v", l.calls, want)
	}
}

func TestLeaveOutGoneTriesOnceMore(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		truth string
		calls int
	}{
		// Throttling says nothing about the Nodes: no fresh lookups.
		{"throttled", &cloudapi.Error{Kind: cloudapi.KindThrottled, Err: errors.New("slow down")}, "gone", 1},
		// A request the driver refused to send says nothing either.
		{"driver refused", cloudapi.Invalid("bad annotation"), "gone", 1},
		// The cloud refused, but every Node still exists: the error stands.
		{"nothing gone", &cloudapi.Error{Kind: cloudapi.KindInvalid, Err: errors.New("bad port")}, "live", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &instances{truth: map[string]string{"fake://b": tc.truth}, cached: map[string]string{"fake://b": "live"}}
			l := &lb{refuse: func([]string) error { return tc.err }}
			w := loadbalancers.Rules(l, loadbalancers.RuleOptions{Instances: in})
			_, err := w.EnsureLoadBalancer(context.Background(), "k", svc, nodes())
			if !errors.Is(err, tc.err) {
				t.Errorf("EnsureLoadBalancer = %v, want %v", err, tc.err)
			}
			if len(l.calls) != tc.calls {
				t.Errorf("%d load balancer calls, want %d: %v", len(l.calls), tc.calls, l.calls)
			}
		})
	}
}

func TestLeaveOutGoneManyNodes(t *testing.T) {
	in := &instances{truth: map[string]string{}}
	var ns []*v1.Node
	var want []string
	for i := range 2000 {
		name := "n" + strconv.Itoa(i)
		ns = append(ns, node(name, "fake://"+name, nil))
		if i%7 == 0 {
			in.truth["fake://"+name] = "gone"
			continue
		}
		want = append(want, name)
	}
	l := &lb{}
	if err := loadbalancers.Rules(l, loadbalancers.RuleOptions{Instances: in}).UpdateLoadBalancer(context.Background(), "k", svc, ns); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l.calls[0], want) {
		t.Errorf("got %d Nodes, want %d in their order", len(l.calls[0]), len(want))
	}
	if in.asked != len(ns) {
		t.Errorf("%d lookups for %d Nodes", in.asked, len(ns))
	}
}
