// Package suggest finds the closest known name to a misspelt one, for
// "did you mean ...?" in config and annotation errors.
package suggest

import "strings"

// Closest returns the candidate nearest to name (case-insensitive edit
// distance), or "" if none is within maxDistance edits. Of candidates at
// the same distance it picks the first in lexical order, so the answer does
// not depend on the order they come in (map order, say): the same mistake
// always gets the same suggestion.
func Closest(name string, candidates []string, maxDistance int) string {
	best, bestD := "", maxDistance+1
	lname := strings.ToLower(name)
	for _, c := range candidates {
		d := Distance(lname, strings.ToLower(c))
		if d < bestD || d == bestD && c < best {
			best, bestD = c, d
		}
	}
	return best
}

// Distance is the Levenshtein edit distance between a and b.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
