package gce

import (
	"fmt"
	"testing"
)

// The tag cache forgets instances that are gone once it holds well over
// twice the nodes, and keeps the nodes'.
func TestTagCacheIsBounded(t *testing.T) {
	var c tagCache
	keep := map[string]bool{}
	for i := range 3000 {
		url := fmt.Sprintf("projects/p/zones/z/instances/n-%d", i)
		c.put(url, []string{"n"})
		if i < 100 {
			keep[url] = true
		}
	}
	c.retain(keep)
	if len(c.m) != len(keep) {
		t.Errorf("%d instances cached after pruning, want the %d nodes", len(c.m), len(keep))
	}
	if _, ok := c.get("projects/p/zones/z/instances/n-5"); !ok {
		t.Error("a node's tags were dropped")
	}
	c.put("projects/p/zones/z/instances/other", nil)
	c.retain(keep)
	if _, ok := c.get("projects/p/zones/z/instances/other"); !ok {
		t.Error("a cache within its bound was pruned")
	}
}
