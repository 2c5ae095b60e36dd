package loadbalancers

import (
	"slices"
)

// Delta is what converging have to want takes: the members to add and
// the members to remove, each sorted by cmp so the calls are the same
// from one pass to the next.
func Delta[K comparable](want, have map[K]bool, cmp func(a, b K) int) (add, remove []K) {
	for k := range want {
		if !have[k] {
			add = append(add, k)
		}
	}
	for k := range have {
		if !want[k] {
			remove = append(remove, k)
		}
	}
	slices.SortFunc(add, cmp)
	slices.SortFunc(remove, cmp)
	return add, remove
}
