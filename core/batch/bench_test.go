package batch_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polyccm/polyccm/core/batch"
)

// BenchmarkBatcherGet measures many goroutines asking for distinct keys at
// once, as the node controllers' workers do. batches/1000gets is the
// number that matters for the cloud's rate limit; the fetch cost stands in
// for one cloud call's latency (0 isolates the batcher's own overhead).
func BenchmarkBatcherGet(b *testing.B) {
	for _, fetchCost := range []time.Duration{0, 100 * time.Microsecond} {
		for _, window := range []time.Duration{0, 200 * time.Microsecond} {
			name := fmt.Sprintf("fetch=%v/window=%v", fetchCost, window)
			b.Run(name, func(b *testing.B) {
				var calls, keys atomic.Int64
				fetch := func(_ context.Context, ks []int64) ([]int64, error) {
					calls.Add(1)
					keys.Add(int64(len(ks)))
					if fetchCost > 0 {
						time.Sleep(fetchCost)
					}
					return ks, nil
				}
				bt := batch.New(fetch, batch.Options{Window: window, MaxSize: 200})
				ctx := context.Background()
				var next atomic.Int64
				// 64 callers per CPU: far more callers than CPUs, like a
				// controller's worker pool blocked on cloud lookups.
				b.SetParallelism(64)
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						k := next.Add(1)
						v, err := bt.Get(ctx, k)
						if err != nil || v != k {
							b.Errorf("Get(%d) = %d, %v", k, v, err)
							return
						}
					}
				})
				b.StopTimer()
				if n := next.Load(); n > 0 {
					b.ReportMetric(float64(calls.Load())*1000/float64(n), "batches/1000gets")
				}
				if c := calls.Load(); c > 0 {
					b.ReportMetric(float64(keys.Load())/float64(c), "keys/batch")
				}
			})
		}
	}
}

// BenchmarkBatcherSameKey measures callers repeating one hot key, which
// should join the batch in flight rather than start new ones.
func BenchmarkBatcherSameKey(b *testing.B) {
	var calls atomic.Int64
	fetch := func(_ context.Context, ks []string) ([]string, error) {
		calls.Add(1)
		time.Sleep(50 * time.Microsecond)
		return ks, nil
	}
	bt := batch.New(fetch, batch.Options{Window: 100 * time.Microsecond, MaxSize: 200})
	ctx := context.Background()
	b.SetParallelism(64)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := bt.Get(ctx, "node-1"); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(calls.Load())*1000/float64(b.N), "batches/1000gets")
}

// BenchmarkCache measures the cache on its own: a hit, a miss, an expired
// entry and a Put, serially and (for Get) from every CPU at once.
func BenchmarkCache(b *testing.B) {
	const size = 5000 // a large cluster's node count
	fill := func(ttl time.Duration) *batch.Cache[string, int] {
		c := batch.NewCache[string, int](ttl)
		now := time.Now()
		for i := range size {
			c.Put(key(i), i, now)
		}
		return c
	}
	keys := make([]string, size)
	for i := range keys {
		keys[i] = key(i)
	}

	b.Run("GetHit", func(b *testing.B) {
		c := fill(time.Hour)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, ok := c.Get(keys[i%size]); !ok {
				b.Fatal("miss")
			}
		}
	})
	b.Run("GetHitParallel", func(b *testing.B) {
		c := fill(time.Hour)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				if _, ok := c.Get(keys[i%size]); !ok {
					b.Error("miss")
					return
				}
			}
		})
	})
	b.Run("GetMiss", func(b *testing.B) {
		c := fill(time.Hour)
		absent := "not-" + keys[0]
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := c.Get(absent); ok {
				b.Fatal("hit")
			}
		}
	})
	b.Run("GetExpired", func(b *testing.B) {
		c := batch.NewCache[string, int](time.Minute)
		for i := range size {
			c.Put(keys[i], i, time.Now().Add(-time.Hour))
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, ok := c.Get(keys[i%size]); ok {
				b.Fatal("hit on an expired entry")
			}
		}
	})
	b.Run("Put", func(b *testing.B) {
		c := fill(time.Hour)
		now := time.Now()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			c.Put(keys[i%size], i, now)
		}
	})
	b.Run("PutSweeping", func(b *testing.B) {
		// Each Put's time is a TTL past the last, so every Put sweeps the
		// whole map: the worst case of the janitor-free expiry.
		c := fill(time.Millisecond)
		now := time.Now()
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			now = now.Add(2 * time.Millisecond)
			c.Put(keys[i%size], i, now)
		}
	})
}

func key(i int) string { return fmt.Sprintf("i-%08x", i) }
