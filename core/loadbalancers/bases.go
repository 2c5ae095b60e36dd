package loadbalancers

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// BaseMaxAge is how long a full sync stands in for the reads a node-only
// sync skips; after it, the next node change runs a full sync again, so
// drift the node-only read cannot see is healed within about that long.
const BaseMaxAge = 30 * time.Minute

// Bases remembers, per Service, what its last successful full sync left
// (T is the driver's: the spec it asked for, the resources it found), so
// that UpdateLoadBalancer, called for every Service on every change of
// the node set, can change only the targets. A driver's node-only sync
// uses a base only while the Service asks for exactly what it asked then
// and the one read it makes shows nothing else changed; otherwise, or
// with no base (after a restart, past BaseMaxAge), it runs the full sync.
type Bases[T any] struct {
	mu sync.Mutex
	m  map[types.UID]base[T]
}

type base[T any] struct {
	v  T
	at time.Time
}

// Get returns the Service's base, if there is one younger than BaseMaxAge.
func (b *Bases[T]) Get(uid types.UID) (T, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.m[uid]
	if ok && time.Since(e.at) > BaseMaxAge {
		delete(b.m, uid)
		ok = false
	}
	return e.v, ok
}

// Remember keeps what a full sync that succeeded left, unless it ran as a
// dry run (which changed nothing).
func (b *Bases[T]) Remember(ctx context.Context, uid types.UID, v T) {
	if DryRunFrom(ctx) != nil {
		return
	}
	b.set(uid, v, time.Now())
}

func (b *Bases[T]) set(uid types.UID, v T, at time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[types.UID]base[T]{}
	}
	b.m[uid] = base[T]{v: v, at: at}
}

// Forget drops a Service's base: a full sync starting (which may fail
// half done) or the Service's load balancer being deleted.
func (b *Bases[T]) Forget(uid types.UID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, uid)
}
