package batch

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Result answers one key of a batched cloud lookup. A zero Value with Err
// nil means the cloud says definitively that there is no such thing.
type Result[V any] struct {
	Value V
	Err   error
}

// Answer is a source's reply to a batch lookup.
type Answer[V any] struct {
	// Results is aligned with the keys asked for.
	Results []Result[V]
	// Seen lists other values the call happened to return (a listing
	// returns whole pages); they are cached under LookupOptions.Keys so
	// later lookups are free.
	Seen []V
}

// Source resolves many keys in as few cloud calls as it can. A returned
// error fails the whole batch and is ambiguous. A key the source cannot
// resolve for sure gets a Result with Err set, never a zero Value.
type Source[K comparable, V any] func(ctx context.Context, keys []K) (Answer[V], error)

// LookupOptions shape a Lookup.
type LookupOptions[K comparable, V any] struct {
	// Driver and Kind ("instance", "volume") name what is looked up in
	// error messages.
	Driver string
	Kind   string
	Batch  Options
	// CacheTTL is how long answers are remembered; 0 or less turns the
	// cache off.
	CacheTTL time.Duration
	// Keep is how long answers are kept for GetWithin, if longer than
	// CacheTTL.
	Keep time.Duration
	// IsNotFound says whether a per-key error means a definitive "does not
	// exist".
	IsNotFound func(error) bool
	// Keys are the keys a value is known by; a Seen value is cached under
	// each of them. It must cope with a zero V (a not-found answer).
	Keys func(V) []K
	// IndexAnswers also caches each answered value under Keys, so a value
	// first asked for by one of its names is found by the others too.
	IndexAnswers bool
	// CacheKey, if set, maps a key to the one it is cached under, for
	// keys that carry more than their identity (a Node's name next to
	// its provider ID).
	CacheKey func(K) K
	// Metrics, if set, is the metrics subsystem ("instances"): Gets are
	// counted by where the answer came from and batch sizes observed,
	// per Driver.
	Metrics string
	// OnHit and OnMiss, if set, are told whether each Get was answered
	// from the cache or went to the cloud.
	OnHit, OnMiss func()
}

// Lookup is a batched, cached lookup of one driver's cloud objects: Gets
// are answered from a short-lived cache or coalesced by a Batcher into
// calls to the Source, whose answers it checks and caches. It is safe for
// concurrent use.
type Lookup[K comparable, V any] struct {
	src     Source[K, V]
	o       LookupOptions[K, V]
	cache   *Cache[K, V]
	batcher *Batcher[K, Result[V]]
	misses  missLog
}

// missLog counts the keys that went to the source over the last cache TTL:
// the demand a source prices a full listing against. When a refresh of
// every Node comes round (the node controller's, a few keys at a time),
// its first batches show the rest are coming: the cache entries a listing
// made expire together.
type missLog struct {
	mu      sync.Mutex
	batches []missBatch
}

type missBatch struct {
	at   time.Time
	keys int
}

// record adds n keys missed at now and returns those missed in the ttl
// before.
func (m *missLog) record(now time.Time, ttl time.Duration, n int) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := 0
	for i < len(m.batches) && now.Sub(m.batches[i].at) > ttl {
		i++
	}
	m.batches = m.batches[i:]
	recent := 0
	for _, b := range m.batches {
		recent += b.keys
	}
	if ttl > 0 {
		m.batches = append(m.batches, missBatch{now, n})
	}
	return recent
}

type recentKey struct{}

// Expected is, inside a Source, how many other keys the batch's answer is
// likely to serve too: those waiting behind the batch (Waiting) and those
// that went to the source within the last cache TTL, whose neighbours a
// full listing would bring into the cache before they are asked for.
func Expected(ctx context.Context) int {
	n, _ := ctx.Value(recentKey{}).(int)
	return Waiting(ctx) + n
}

// NewLookup returns a Lookup over src.
func NewLookup[K comparable, V any](src Source[K, V], o LookupOptions[K, V]) *Lookup[K, V] {
	if o.CacheKey == nil {
		o.CacheKey = func(k K) K { return k }
	}
	if o.Metrics != "" {
		m := metricsFor(o.Metrics, o.Kind)
		hits, misses := m.lookups.WithLabelValues(o.Driver, "cache"), m.lookups.WithLabelValues(o.Driver, "cloud")
		sizes := m.batchSize.WithLabelValues(o.Driver)
		o.OnHit, o.OnMiss = chain(o.OnHit, hits.Inc), chain(o.OnMiss, misses.Inc)
		observe := o.Batch.Observe
		o.Batch.Observe = func(n int) {
			sizes.Observe(float64(n))
			if observe != nil {
				observe(n)
			}
		}
	}
	// One fetch at a time: a driver answers a batch with a full listing
	// when that is cheaper, and a listing answers for every key of the
	// batches queued behind it (fetch looks in the cache first). With
	// fetches in parallel, Nodes registering over a few seconds would
	// each start a listing of the whole cluster.
	if o.Batch.MaxInFlight == 0 {
		o.Batch.MaxInFlight = 1
	}
	l := &Lookup[K, V]{src: src, o: o, cache: NewCacheKeeping[K, V](o.CacheTTL, o.Keep)}
	l.batcher = New(l.fetch, o.Batch)
	return l
}

// fetch answers what the cache learnt since the batch closed (the fetch
// before it may have listed everything) and asks the source for the rest.
func (l *Lookup[K, V]) fetch(ctx context.Context, keys []K) ([]Result[V], error) {
	results := make([]Result[V], len(keys))
	var ask []K
	var at []int // results index of each key in ask
	for i, k := range keys {
		if v, ok := l.cache.Get(l.o.CacheKey(k)); ok {
			results[i].Value = v
			continue
		}
		ask = append(ask, k)
		at = append(at, i)
	}
	if len(ask) == 0 {
		return results, nil
	}
	recent := l.misses.record(time.Now(), l.o.CacheTTL, len(ask))
	fetched, err := l.fetchSource(context.WithValue(ctx, recentKey{}, recent), ask)
	if err != nil {
		return nil, err
	}
	for j, r := range fetched {
		results[at[j]] = r
	}
	return results, nil
}

func (l *Lookup[K, V]) fetchSource(ctx context.Context, keys []K) ([]Result[V], error) {
	ans, err := l.src(ctx, keys)
	if err != nil {
		if l.o.IsNotFound(err) {
			// A batch error is ambiguous for every key (see Source) even
			// when it says "not found" (say, a listing that 404ed): drop
			// the kind so nothing is taken for gone on it.
			return nil, fmt.Errorf("driver %s failed a batch of %d %s lookups: %v", l.o.Driver, len(keys), l.o.Kind, err)
		}
		return nil, err
	}
	if len(ans.Results) != len(keys) {
		return nil, fmt.Errorf("driver %s answered %d of %d %s lookups", l.o.Driver, len(ans.Results), len(keys), l.o.Kind)
	}
	now := time.Now()
	for _, v := range ans.Seen {
		l.putKeys(v, now)
	}
	for i := range ans.Results {
		r := &ans.Results[i]
		if r.Err != nil && l.o.IsNotFound(r.Err) {
			// A per-key not-found is as definitive as a zero value; one
			// form keeps every caller consistent.
			var zero V
			r.Value, r.Err = zero, nil
		}
		if r.Err != nil {
			continue
		}
		l.cache.Put(l.o.CacheKey(keys[i]), r.Value, now)
		if l.o.IndexAnswers {
			l.putKeys(r.Value, now)
		}
	}
	return ans.Results, nil
}

func (l *Lookup[K, V]) putKeys(v V, now time.Time) {
	for _, k := range l.o.Keys(v) {
		l.cache.Put(l.o.CacheKey(k), v, now)
	}
}

// Get returns the value behind key; a zero value with a nil error means it
// definitively does not exist.
func (l *Lookup[K, V]) Get(ctx context.Context, key K) (V, error) {
	return l.GetWithin(ctx, key, l.o.CacheTTL)
}

// GetWithin is Get for a caller that accepts an answer learnt within age
// (up to Keep), or asks for a fresher one than the TTL gives.
func (l *Lookup[K, V]) GetWithin(ctx context.Context, key K, age time.Duration) (V, error) {
	ck := l.o.CacheKey(key)
	if v, ok := l.cache.GetWithin(ck, age); ok {
		if l.o.OnHit != nil {
			l.o.OnHit()
		}
		return v, nil
	}
	if age < l.o.CacheTTL {
		// Fresher than the cache would give: the batch must not answer
		// it from there.
		l.cache.Forget(ck)
	}
	if l.o.OnMiss != nil {
		l.o.OnMiss()
	}
	r, err := l.batcher.Get(ctx, key)
	if err != nil {
		var zero V
		return zero, err
	}
	return r.Value, r.Err
}

// Forget drops the cached answer for key, for a caller that has reason to
// doubt it (the cloud refused a request naming the thing as if it were
// gone).
func (l *Lookup[K, V]) Forget(key K) { l.cache.Forget(l.o.CacheKey(key)) }

// chain calls f (if set) and then g.
func chain(f, g func()) func() {
	if f == nil {
		return g
	}
	return func() { f(); g() }
}

// AnswerOf builds an Answer from a source's own answer types (core's
// instances and volumes keep names of their own for drivers): n results,
// result(i) the i-th, and the values the call saw besides.
func AnswerOf[S any](n int, result func(i int) (*S, error), seen []S) Answer[*S] {
	out := Answer[*S]{Results: make([]Result[*S], n), Seen: make([]*S, len(seen))}
	for i := range n {
		v, err := result(i)
		out.Results[i] = Result[*S]{Value: v, Err: err}
	}
	for i := range seen {
		out.Seen[i] = &seen[i]
	}
	return out
}
