package loadbalancers

import (
	"slices"
	"strings"
	"testing"
)

func TestDelta(t *testing.T) {
	set := func(ks ...string) map[string]bool {
		m := map[string]bool{}
		for _, k := range ks {
			m[k] = true
		}
		return m
	}
	add, remove := Delta(set("c", "a", "b"), set("b", "d", "e"), strings.Compare)
	if !slices.Equal(add, []string{"a", "c"}) || !slices.Equal(remove, []string{"d", "e"}) {
		t.Fatalf("Delta = add %v, remove %v", add, remove)
	}
	if add, remove := Delta(set("a"), set("a"), strings.Compare); add != nil || remove != nil {
		t.Fatalf("Delta of equal sets = %v, %v", add, remove)
	}
}
