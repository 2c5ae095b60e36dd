// Package workers runs the worker goroutines of polyccm's own controllers
// over a rate-limited work queue, the way the upstream controllers do.
package workers

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
)

// Queue is a controller's work queue named name (its metrics' label),
// retrying a key with exponential backoff from base to max; a zero base or
// max takes the default given after it.
func Queue(name string, base, defBase, max, defMax time.Duration) workqueue.TypedRateLimitingInterface[string] {
	if base <= 0 {
		base = defBase
	}
	if max <= 0 {
		max = defMax
	}
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](base, max),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name})
}

// Sync handles one key; retry asks for it again after the queue's backoff.
type Sync func(ctx context.Context, key string) (retry bool)

// Run starts n workers taking keys from q and blocks until ctx is done;
// the caller shuts q down, which ends them. A key is never handled by two workers at once (the
// queue's guarantee); a key sync asks to retry comes back rate limited, one
// it is done with has its backoff forgotten.
func Run(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], n int, sync Sync) {
	for range n {
		go wait.UntilWithContext(ctx, func(ctx context.Context) {
			for next(ctx, q, sync) {
			}
		}, time.Second)
	}
	<-ctx.Done()
}

func next(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], sync Sync) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	if sync(ctx, key) {
		q.AddRateLimited(key)
	} else {
		q.Forget(key)
	}
	return true
}
