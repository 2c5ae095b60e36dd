package loadbalancers

import (
	"context"
	"testing"
	"time"
)

func TestBases(t *testing.T) {
	var b Bases[string]
	b.Remember(context.Background(), "a", "left by a")
	if v, ok := b.Get("a"); !ok || v != "left by a" {
		t.Errorf("Get(a) = %q, %v", v, ok)
	}
	b.Forget("a")
	if _, ok := b.Get("a"); ok {
		t.Error("a forgotten base is still used")
	}
	// A base older than BaseMaxAge no longer stands in for a full sync.
	b.set("old", "stale", time.Now().Add(-BaseMaxAge-time.Minute))
	if _, ok := b.Get("old"); ok {
		t.Error("a base older than BaseMaxAge is still used")
	}
	// A dry run changed nothing: nothing to remember.
	ctx, _ := WithDryRun(context.Background())
	b.Remember(ctx, "dry", "planned")
	if _, ok := b.Get("dry"); ok {
		t.Error("a dry run's sync was remembered")
	}
}
