package loadbalancers

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
)

// replacing is a driver whose load balancer is written whole, as a
// DigitalOcean PUT is: each call observes it, may block, then writes
// everything it wants. It counts the calls inside it at once.
type replacing struct {
	cloudprovider.LoadBalancer
	mu      sync.Mutex
	ports   int
	nodes   int
	in, max int
	entered chan string      // a call came in
	release chan struct{}    // a call may write
	got     map[string][]int // the Node counts each call was given, by call
}

func (d *replacing) write(call string, svc *v1.Service, nodes []*v1.Node) {
	d.mu.Lock()
	d.in++
	d.max = max(d.max, d.in)
	d.got[call] = append(d.got[call], len(nodes))
	d.mu.Unlock()
	d.entered <- call
	<-d.release
	d.mu.Lock()
	d.ports, d.nodes = len(svc.Spec.Ports), len(nodes)
	d.in--
	d.mu.Unlock()
}

func (d *replacing) EnsureLoadBalancer(_ context.Context, _ string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	d.write("ensure", svc, nodes)
	return &v1.LoadBalancerStatus{}, nil
}

func (d *replacing) UpdateLoadBalancer(_ context.Context, _ string, svc *v1.Service, nodes []*v1.Node) error {
	d.write("update", svc, nodes)
	return nil
}

// next waits for the next call to come into the driver. A call that
// never comes means a deadlock; a minute is far beyond any scheduling
// delay, so it fails the test rather than hanging it.
func (d *replacing) next(t *testing.T) string {
	t.Helper()
	select {
	case c := <-d.entered:
		return c
	case <-time.After(time.Minute):
		t.Fatal("no call came into the driver")
		return ""
	}
}

// let lets the oldest call inside the driver write.
func (d *replacing) let(t *testing.T) {
	t.Helper()
	select {
	case d.release <- struct{}{}:
	case <-time.After(time.Minute):
		t.Fatal("no call was inside the driver to let write")
	}
}

// settle waits for every call to return.
func settle(t *testing.T, wg *sync.WaitGroup) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("calls are still inside the driver, waiting for a turn that never comes")
	}
}

func someNodes(n int) []*v1.Node {
	var out []*v1.Node
	for i := range n {
		out = append(out, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("n", i)}})
	}
	return out
}

// waiting blocks until n calls for svc have come to Rules (running or
// waiting for their turn).
func waiting(t *testing.T, lb cloudprovider.LoadBalancer, svc *v1.Service, n int) {
	t.Helper()
	ts := &lb.(*rules).turns
	for deadline := time.Now().Add(time.Minute); ; {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls for %s never came", n, svc.Name)
		}
		ts.mu.Lock()
		t := ts.m[svc.Namespace+"/"+svc.Name]
		ok := t != nil && t.users >= n
		ts.mu.Unlock()
		if ok {
			return
		}
		runtime.Gosched()
	}
}

// The service controller runs EnsureLoadBalancer and the node sync's
// UpdateLoadBalancer for one Service at once. Under Rules they take turns:
// the second observes what the first wrote instead of overwriting it with
// a write built before it. Another Service's calls are not held up.
func TestOneServiceTakesTurns(t *testing.T) {
	d := &replacing{entered: make(chan string), release: make(chan struct{}), got: map[string][]int{}}
	lb := Rules(d, RuleOptions{})
	ctx := context.Background()
	svc := lbService("u1", 80, 443)

	var wg sync.WaitGroup
	wg.Go(func() { _, _ = lb.EnsureLoadBalancer(ctx, "c", svc, someNodes(10)) })
	d.next(t)
	wg.Go(func() { _ = lb.UpdateLoadBalancer(ctx, "c", svc, someNodes(11)) })
	waiting(t, lb, svc, 2)
	other := lbService("u2", 80)
	other.Name = "other"
	wg.Go(func() { _ = lb.UpdateLoadBalancer(ctx, "c", other, someNodes(3)) })
	if got := d.next(t); got != "update" {
		t.Fatalf("next call in was %q, want the other Service's update", got)
	}
	d.let(t)
	d.let(t)
	d.next(t)
	d.let(t)
	settle(t, &wg)
	if d.max != 2 {
		t.Errorf("%d calls were inside the driver at once; want 2, one per Service", d.max)
	}
	if d.nodes != 11 || d.ports != 2 {
		t.Errorf("the load balancer ended with %d Nodes and %d ports, want 11 and 2", d.nodes, d.ports)
	}
}

// Each call lists the Nodes just before it comes, so the one that came
// last carries the newest list. A call that waited for its turn uses that
// list, not the older one it brought: otherwise a Service sync that read
// the Nodes before a join, and ran after the node sync that added it,
// would take the new Node out again.
func TestWaitingCallsUseTheNewestNodes(t *testing.T) {
	d := &replacing{entered: make(chan string), release: make(chan struct{}), got: map[string][]int{}}
	lb := Rules(d, RuleOptions{})
	ctx := context.Background()
	svc := lbService("u1", 80)

	var wg sync.WaitGroup
	wg.Go(func() { _ = lb.UpdateLoadBalancer(ctx, "c", svc, someNodes(10)) })
	d.next(t)
	wg.Go(func() { _, _ = lb.EnsureLoadBalancer(ctx, "c", svc, someNodes(11)) })
	waiting(t, lb, svc, 2)
	wg.Go(func() { _ = lb.UpdateLoadBalancer(ctx, "c", svc, someNodes(12)) })
	waiting(t, lb, svc, 3)
	for range 2 {
		d.let(t)
		d.next(t)
	}
	d.let(t)
	settle(t, &wg)
	if d.nodes != 12 {
		t.Errorf("the load balancer ended with %d Nodes, want 12", d.nodes)
	}
	if !slices.Equal(d.got["ensure"], []int{12}) {
		t.Errorf("the waiting Ensure got Node lists of %v, want the newest (12)", d.got["ensure"])
	}
}

// A call waiting for its turn gives up when its context ends, and the
// turn is dropped once no call holds or wants it.
func TestTurnWaitEndsWithTheContext(t *testing.T) {
	d := &replacing{entered: make(chan string), release: make(chan struct{}), got: map[string][]int{}}
	lb := Rules(d, RuleOptions{})
	svc := lbService("u1", 80)
	var wg sync.WaitGroup
	wg.Go(func() { _ = lb.UpdateLoadBalancer(context.Background(), "c", svc, nil) })
	d.next(t)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := lb.EnsureLoadBalancer(ctx, "c", svc, nil); errc <- err }()
	waiting(t, lb, svc, 2)
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("a cancelled wait returned %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a cancelled wait did not return")
	}
	d.let(t)
	settle(t, &wg)
	if n := len(lb.(*rules).turns.m); n != 0 {
		t.Errorf("%d turns left after every call ended", n)
	}
}
