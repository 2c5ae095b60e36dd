package batch

import (
	"sync"
	"time"
)

// Cache remembers the answers of batched lookups for a short TTL, found
// and not found alike, so a burst of questions about the same keys (a
// controller's resync, an object updated twice) costs one cloud call. A
// TTL of 0 or less turns it off.
type Cache[K comparable, V any] struct {
	ttl time.Duration
	// keep is how long entries are kept for GetWithin: at least ttl.
	keep time.Duration

	mu        sync.RWMutex
	entries   map[K]cached[V]
	lastSweep time.Time
}

type cached[V any] struct {
	v  V
	at time.Time
}

// NewCache returns a cache whose entries live for ttl.
func NewCache[K comparable, V any](ttl time.Duration) *Cache[K, V] {
	return NewCacheKeeping[K, V](ttl, ttl)
}

// NewCacheKeeping returns a cache whose entries live for ttl, and are kept
// for keep (no less than ttl) for the callers of GetWithin that accept
// older answers. A ttl of 0 or less turns it off.
func NewCacheKeeping[K comparable, V any](ttl, keep time.Duration) *Cache[K, V] {
	return &Cache[K, V]{ttl: ttl, keep: max(ttl, keep), entries: map[K]cached[V]{}}
}

// Get returns the value stored for k within the TTL.
func (c *Cache[K, V]) Get(k K) (V, bool) { return c.GetWithin(k, c.ttl) }

// GetWithin returns the value stored for k if it was learnt within age
// (at most the cache's keep).
func (c *Cache[K, V]) GetWithin(k K, age time.Duration) (V, bool) {
	var zero V
	if c.ttl <= 0 {
		return zero, false
	}
	c.mu.RLock()
	e, ok := c.entries[k]
	c.mu.RUnlock()
	if !ok || time.Since(e.at) > min(age, c.keep) {
		return zero, false
	}
	return e.v, true
}

// Put stores v for k as learnt at now.
func (c *Cache[K, V]) Put(k K, v V, now time.Time) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[k] = cached[V]{v: v, at: now}
	// Drop expired entries at most once per TTL, so memory tracks the
	// live set without a janitor goroutine.
	if now.Sub(c.lastSweep) < c.ttl {
		return
	}
	c.lastSweep = now
	for k, e := range c.entries {
		if now.Sub(e.at) > c.keep {
			delete(c.entries, k)
		}
	}
}

// Forget drops what the cache knows about k, so the next lookup asks the
// cloud.
func (c *Cache[K, V]) Forget(k K) {
	c.mu.Lock()
	delete(c.entries, k)
	c.mu.Unlock()
}

// Len is how many entries the cache holds, expired ones not yet swept
// included.
func (c *Cache[K, V]) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}
