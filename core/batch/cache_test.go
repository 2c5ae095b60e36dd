package batch_test

import (
	"testing"
	"time"

	"github.com/polyccm/polyccm/core/batch"
)

func TestCacheRemembersWithinTTL(t *testing.T) {
	c := batch.NewCache[string, *int](time.Hour)
	if _, ok := c.Get("a"); ok {
		t.Fatal("an empty cache answered")
	}
	one := 1
	c.Put("a", &one, time.Now())
	// A nil value is an answer too ("definitively absent").
	c.Put("gone", nil, time.Now())
	if v, ok := c.Get("a"); !ok || *v != 1 {
		t.Errorf("Get(a) = %v, %v", v, ok)
	}
	if v, ok := c.Get("gone"); !ok || v != nil {
		t.Errorf("Get(gone) = %v, %v; want a cached nil", v, ok)
	}
}

func TestCacheExpiresAndSweeps(t *testing.T) {
	c := batch.NewCache[string, int](time.Minute)
	old := time.Now().Add(-2 * time.Minute)
	c.Put("old", 1, old)
	if _, ok := c.Get("old"); ok {
		t.Error("an entry older than the TTL was returned")
	}
	// The next Put a TTL after the last sweep drops expired entries.
	c.Put("new", 2, time.Now())
	if n := c.Len(); n != 1 {
		t.Errorf("Len = %d after the sweep, want 1", n)
	}
}

func TestCacheOff(t *testing.T) {
	c := batch.NewCache[string, int](0)
	c.Put("a", 1, time.Now())
	if _, ok := c.Get("a"); ok || c.Len() != 0 {
		t.Error("a cache with TTL 0 stored an entry")
	}
}
