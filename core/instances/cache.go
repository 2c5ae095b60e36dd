package instances

import (
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// cache remembers answers, found and not found, for a short TTL. Entries are
// indexed by provider ID and by cloud name, so a Node first looked up by
// name is found by its provider ID afterwards.
type cache struct {
	ttl time.Duration

	mu        sync.RWMutex
	entries   map[string]entry
	lastSweep time.Time
}

type entry struct {
	inst *Instance // nil: definitively absent
	at   time.Time
}

func newCache(ttl time.Duration) *cache {
	return &cache{ttl: ttl, entries: map[string]entry{}}
}

func idKey(providerID string) string { return "id:" + providerID }
func nameKey(name string) string     { return "name:" + name }

func cacheKey(k Key) string {
	if k.ProviderID != "" {
		return idKey(k.ProviderID)
	}
	return nameKey(k.NodeName)
}

func (c *cache) get(k Key) (*Instance, bool) {
	if c.ttl <= 0 {
		return nil, false
	}
	c.mu.RLock()
	e, ok := c.entries[cacheKey(k)]
	c.mu.RUnlock()
	if !ok || time.Since(e.at) > c.ttl {
		return nil, false
	}
	return e.inst, true
}

// put records the answer for k, and the instance under its own identities.
func (c *cache) put(k Key, inst *Instance, now time.Time) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[cacheKey(k)] = entry{inst: inst, at: now}
	if inst != nil {
		c.putLocked(inst, now)
	}
	c.sweepLocked(now)
}

func (c *cache) putInstance(inst *Instance, now time.Time) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(inst, now)
}

func (c *cache) putLocked(inst *Instance, now time.Time) {
	if inst.ProviderID != "" {
		c.entries[idKey(inst.ProviderID)] = entry{inst: inst, at: now}
	}
	if inst.Name != "" {
		c.entries[nameKey(inst.Name)] = entry{inst: inst, at: now}
	}
}

// sweepLocked drops expired entries at most once per TTL, so memory tracks
// the live set without a janitor goroutine.
func (c *cache) sweepLocked(now time.Time) {
	if now.Sub(c.lastSweep) < c.ttl {
		return
	}
	c.lastSweep = now
	for k, e := range c.entries {
		if now.Sub(e.at) > c.ttl {
			delete(c.entries, k)
		}
	}
}

func (c *cache) len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}

var (
	lookups = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "polyccm",
		Subsystem:      "instances",
		Name:           "lookups_total",
		Help:           "Instance lookups from the node controllers, by where the answer came from (cache or cloud).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"driver", "source"})

	batchSize = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace:      "polyccm",
		Subsystem:      "instances",
		Name:           "batch_size",
		Help:           "Keys per batched instance lookup sent to the driver.",
		Buckets:        []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000},
		StabilityLevel: metrics.ALPHA,
	}, []string{"driver"})

	metricsOnce sync.Once
)

func registerMetrics() {
	metricsOnce.Do(func() { legacyregistry.MustRegister(lookups, batchSize) })
}
