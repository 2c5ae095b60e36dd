package suggest_test

import (
	"math/rand/v2"
	"testing"

	"github.com/polyccm/polyccm/core/suggest"
)

func TestClosest(t *testing.T) {
	for _, tc := range []struct {
		name       string
		candidates []string
		max        int
		want       string
	}{
		{"concurentSyncs", []string{"concurrentSyncs", "monitorPeriod"}, 3, "concurrentSyncs"},
		{"QPS", []string{"qps", "burst"}, 3, "qps"},
		{"zzzzzz", []string{"qps", "burst"}, 3, ""},
		// Ties: "b" and "c" are one edit from "a"; the lexically first wins.
		{"a", []string{"c", "b"}, 1, "b"},
		{"do-loadbalancer-sizeunit", []string{"do-loadbalancer-size-unit", "do-loadbalancer-size-slug"}, 6, "do-loadbalancer-size-unit"},
	} {
		if got := suggest.Closest(tc.name, tc.candidates, tc.max); got != tc.want {
			t.Errorf("Closest(%q, %q) = %q, want %q", tc.name, tc.candidates, got, tc.want)
		}
	}
}

// The same mistake gets the same suggestion whatever order the candidates
// come in (they often come from a map).
func TestClosestIsDeterministicOnTies(t *testing.T) {
	candidates := []string{"tls-ports", "http-ports", "http2-ports", "tcp-ports", "udp-ports", "ssl-ports"}
	want := suggest.Closest("xyz-ports", candidates, 6)
	if want == "" {
		t.Fatal("no suggestion at all")
	}
	for i := range 200 {
		rand.Shuffle(len(candidates), func(a, b int) { candidates[a], candidates[b] = candidates[b], candidates[a] })
		if got := suggest.Closest("xyz-ports", candidates, 6); got != want {
			t.Fatalf("shuffle %d: %q, then %q", i, want, got)
		}
	}
}
