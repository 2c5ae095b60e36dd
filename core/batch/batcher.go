// Package batch coalesces many concurrent single-key lookups into a few
// multi-key calls. The upstream node controllers ask about one node at a
// time from many workers; a Batcher turns N such questions arriving together
// into about N/MaxSize calls to the cloud.
package batch

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Fetch resolves keys in one call. The returned slice is aligned with keys.
// An error fails every key of the call.
type Fetch[K comparable, V any] func(ctx context.Context, keys []K) ([]V, error)

// Options shape batching.
type Options struct {
	// Window is how long a batch stays open for more keys after its first
	// key arrived. Longer windows mean bigger batches and more latency.
	Window time.Duration
	// MaxSize closes a batch early once it holds this many keys.
	MaxSize int
	// Timeout bounds a whole Fetch, retries included, as a last resort
	// (default 10 minutes). A Fetch's context is no caller's, because a
	// batch serves many; it ends when every caller waiting on it has given
	// up. How long one cloud call may take is the cloud client's business
	// (cloudAPI.timeout), not the batch's: bounding the batch by it cut
	// fetches that were retrying through throttling.
	Timeout time.Duration
	// MaxInFlight bounds concurrent Fetch calls. While every slot is
	// busy, a batch whose window has passed stays open and keeps taking
	// keys until a slot frees (or it is full), so a slow cloud gets fewer,
	// bigger batches rather than a queue of small ones. 0 means 4 (a
	// Lookup's default is 1).
	MaxInFlight int
	// Observe, if set, is told the size of each batch sent.
	Observe func(size int)
}

// Batcher coalesces lookups. It is safe for concurrent use.
type Batcher[K comparable, V any] struct {
	fetch Fetch[K, V]
	o     Options

	mu       sync.Mutex
	open     *round[K, V]       // collecting keys
	queue    []*round[K, V]     // closed (full), waiting for a slot
	running  int                // fetches under way
	inflight map[K]*round[K, V] // keys of closed batches, so repeats join
}

type round[K comparable, V any] struct {
	due     bool // its window has passed: fetch as soon as a slot frees
	keys    []K
	index   map[K]int
	timer   *time.Timer
	waiters int // callers waiting for it
	ctx     context.Context
	cancel  context.CancelFunc
	done    chan struct{}
	values  []V
	err     error
}

// New returns a Batcher calling fetch.
func New[K comparable, V any](fetch Fetch[K, V], o Options) *Batcher[K, V] {
	if o.MaxSize <= 0 {
		o.MaxSize = 100
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 4
	}
	return &Batcher[K, V]{
		fetch:    fetch,
		o:        o,
		inflight: map[K]*round[K, V]{},
	}
}

// errMisaligned reports a Fetch bug to every caller instead of panicking.
var errMisaligned = errors.New("batch: fetch returned a result slice of the wrong length")

// Get returns the value for key, sharing a Fetch with concurrent callers.
func (b *Batcher[K, V]) Get(ctx context.Context, key K) (V, error) {
	r, i := b.enqueue(key)
	select {
	case <-r.done:
	case <-ctx.Done():
		b.leave(r)
		var zero V
		return zero, ctx.Err()
	}
	if r.err != nil {
		var zero V
		return zero, r.err
	}
	return r.values[i], nil
}

func (b *Batcher[K, V]) enqueue(key K) (*round[K, V], int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r, ok := b.inflight[key]; ok {
		r.waiters++
		return r, r.index[key]
	}
	r := b.open
	if r == nil {
		r = &round[K, V]{index: map[K]int{}, done: make(chan struct{})}
		r.ctx, r.cancel = context.WithTimeout(context.Background(), b.o.Timeout)
		b.open = r
		if b.o.Window > 0 {
			r.timer = time.AfterFunc(b.o.Window, func() { b.windowPassed(r) })
		}
	}
	r.waiters++
	i, ok := r.index[key]
	if !ok {
		i = len(r.keys)
		r.index[key] = i
		r.keys = append(r.keys, key)
	}
	if len(r.keys) >= b.o.MaxSize || b.o.Window <= 0 {
		b.closeLocked(r)
	}
	return r, i
}

// leave is a caller of r giving up. When the last one does, r's fetch is
// cancelled (or never made) and its keys are forgotten, so a later caller
// starts afresh instead of joining a fetch that is ending.
func (b *Batcher[K, V]) leave(r *round[K, V]) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r.waiters--
	if r.waiters > 0 {
		return
	}
	r.cancel()
	for _, k := range r.keys {
		if b.inflight[k] == r {
			delete(b.inflight, k)
		}
	}
	if b.open == r {
		// Not closed yet: close it, so it does not take keys it will not
		// fetch; its run ends at once on the cancelled context.
		b.closeLocked(r)
		for _, k := range r.keys {
			delete(b.inflight, k)
		}
	}
}

// windowPassed closes r if a fetch slot is free; if not, r stays open
// for more keys until one frees.
func (b *Batcher[K, V]) windowPassed(r *round[K, V]) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open != r {
		return // already closed: it filled up
	}
	r.due = true
	b.dispatchLocked()
}

// closeLocked stops r taking keys and queues its fetch. b.mu is held.
func (b *Batcher[K, V]) closeLocked(r *round[K, V]) {
	if b.open != r {
		return // already closed by the other trigger
	}
	b.open = nil
	if r.timer != nil {
		r.timer.Stop()
	}
	for _, k := range r.keys {
		b.inflight[k] = r
	}
	b.queue = append(b.queue, r)
	b.dispatchLocked()
}

// dispatchLocked starts queued fetches while slots are free, then the open
// batch if its window has passed. b.mu is held.
func (b *Batcher[K, V]) dispatchLocked() {
	for b.running < b.o.MaxInFlight && len(b.queue) > 0 {
		r := b.queue[0]
		b.queue = b.queue[1:]
		b.running++
		go b.run(r, b.waitingLocked())
	}
	if r := b.open; r != nil && r.due && b.running < b.o.MaxInFlight {
		b.closeLocked(r)
	}
}

// waitingLocked counts the keys queued or collecting behind the batches
// running. b.mu is held.
func (b *Batcher[K, V]) waitingLocked() int {
	n := 0
	for _, q := range b.queue {
		n += len(q.keys)
	}
	if b.open != nil {
		n += len(b.open.keys)
	}
	return n
}

type waitingKey struct{}

// Waiting is, inside a Fetch, how many keys were waiting behind its batch
// when it started: a source pricing a full listing against filtered calls
// counts them too, since a listing answers them (through a cache) and
// filtered calls would be made for them next.
func Waiting(ctx context.Context) int {
	n, _ := ctx.Value(waitingKey{}).(int)
	return n
}

func (b *Batcher[K, V]) run(r *round[K, V], waiting int) {
	if b.o.Observe != nil {
		b.o.Observe(len(r.keys))
	}
	values, err := b.fetch(context.WithValue(r.ctx, waitingKey{}, waiting), r.keys)
	r.cancel()
	if err == nil && len(values) != len(r.keys) {
		err = errMisaligned
	}
	r.values, r.err = values, err

	b.mu.Lock()
	for _, k := range r.keys {
		if b.inflight[k] == r {
			delete(b.inflight, k)
		}
	}
	b.running--
	b.dispatchLocked()
	b.mu.Unlock()
	close(r.done)
}
