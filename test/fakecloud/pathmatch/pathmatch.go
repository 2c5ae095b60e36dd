// Package pathmatch routes the fake clouds' REST paths the way the real
// APIs document them: "/v2/droplets/{id}", a {param} per segment. Both
// fakes count calls and inject faults by these patterns, so an endpoint
// has one name whatever IDs a request carries.
package pathmatch

import (
	"slices"
	"sort"
	"strings"
)

// Routes holds the routes of one API, each carrying the fake's own value.
type Routes[T any] struct {
	list []entry[T]
}

type entry[T any] struct {
	method, pattern string
	segs            []string
	val             T
}

// Add registers v for method and pattern, and returns it in place so the
// caller may still set flags on it (before serving starts).
func (r *Routes[T]) Add(method, pattern string, v T) *T {
	r.list = append(r.list, entry[T]{method: method, pattern: pattern, segs: strings.Split(strings.Trim(pattern, "/"), "/"), val: v})
	return &r.list[len(r.list)-1].val
}

// Match finds the route for a request. Among the routes whose pattern
// fits the path it prefers the one with the most literal segments, so a
// static path beats a {param}. When the path fits but no route has the
// method, allowed lists the methods that would do (for a 405) and pattern
// is the path's pattern, so the 405 is still counted by pattern.
func (r *Routes[T]) Match(method, path string) (v *T, params map[string]string, allowed []string, pattern string) {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	var hit *entry[T]
	best, bestOther := -1, -1
	for k := range r.list {
		e := &r.list[k]
		lit, ok := fit(e.segs, segs)
		switch {
		case !ok:
		case e.method != method:
			allowed = append(allowed, e.method)
			if lit > bestOther {
				pattern, bestOther = e.pattern, lit
			}
		case lit > best:
			hit, best = e, lit
		}
	}
	if hit == nil {
		sort.Strings(allowed)
		return nil, nil, slices.Compact(allowed), pattern
	}
	params = map[string]string{}
	for k, seg := range hit.segs {
		if isParam(seg) {
			params[seg[1:len(seg)-1]] = segs[k]
		}
	}
	return &hit.val, params, nil, hit.pattern
}

// fit reports whether path segments fit a pattern, and how many literal
// segments matched. Empty segments never fit a parameter, so a trailing
// slash is a different path, as on the real APIs.
func fit(pattern, segs []string) (literals int, ok bool) {
	if len(pattern) != len(segs) {
		return 0, false
	}
	for k, p := range pattern {
		switch {
		case isParam(p):
			if segs[k] == "" {
				return 0, false
			}
		case p == segs[k]:
			literals++
		default:
			return 0, false
		}
	}
	return literals, true
}

func isParam(seg string) bool {
	return strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}")
}
