package workers_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"

	"github.com/polyccm/polyccm/core/controllers/workers"
)

func TestRunRetriesUntilDone(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, 10*time.Millisecond))
	defer q.ShutDown()
	var mu sync.Mutex
	seen := map[string]int{}
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		workers.Run(ctx, q, 3, func(_ context.Context, key string) bool {
			mu.Lock()
			defer mu.Unlock()
			seen[key]++
			// "a" needs three tries; "b" one.
			if key == "a" && seen[key] < 3 {
				return true
			}
			if seen["a"] == 3 && seen["b"] == 1 {
				close(done)
			}
			return false
		})
	}()
	q.Add("a")
	q.Add("b")
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("tries %v, want a:3 b:1", seen)
	}
	// The worker forgets a's backoff once its last sync has returned.
	for deadline := time.Now().Add(10 * time.Second); q.NumRequeues("a") != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a has %d requeues after it was done, want its backoff forgotten", q.NumRequeues("a"))
		}
	}
}

func TestRunReturnsWhenContextEnds(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer q.ShutDown()
	ctx, cancel := context.WithCancel(context.Background())
	returned := make(chan struct{})
	go func() {
		workers.Run(ctx, q, 2, func(context.Context, string) bool { return false })
		close(returned)
	}()
	cancel()
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}
