package aws

import (
	"encoding/base64"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// EC2 filters: Filter.N.Name with Filter.N.Value.M. A resource matches
// when, for every filter, one of its values for the filter's name matches
// one of the filter's values; values may use the wildcards * and ?. Filter
// names are checked against what each action supports, as EC2 does.

// fieldsFunc returns a resource's values for a filter name.
type fieldsFunc func(name string) []string

// checkFilters rejects filter names an action does not support.
func checkFilters(fs []filter, known []string) *apiError {
	for _, f := range fs {
		if strings.HasPrefix(f.name, "tag:") && len(f.name) > len("tag:") {
			continue
		}
		if !slices.Contains(known, f.name) && f.name != "tag-key" && f.name != "tag-value" {
			return badRequest("InvalidParameterValue", "The filter '%s' is invalid", f.name)
		}
	}
	return nil
}

// matches reports whether a resource with the given fields and tags passes
// every filter.
func matches(fs []filter, fields fieldsFunc, tags map[string]string) bool {
	for _, f := range fs {
		var have []string
		switch {
		case strings.HasPrefix(f.name, "tag:"):
			if v, ok := tags[strings.TrimPrefix(f.name, "tag:")]; ok {
				have = []string{v}
			}
		case f.name == "tag-key":
			have = sortedKeys(tags)
		case f.name == "tag-value":
			for _, k := range sortedKeys(tags) {
				have = append(have, tags[k])
			}
		default:
			have = fields(f.name)
		}
		if !anyMatch(f.values, have) {
			return false
		}
	}
	return true
}

func anyMatch(patterns, values []string) bool {
	for _, p := range patterns {
		for _, v := range values {
			if globMatch(p, v) {
				return true
			}
		}
	}
	return false
}

// globMatch matches EC2 filter wildcards: * any run, ? any one character.
// A backslash escapes the next character.
func globMatch(pattern, s string) bool {
	if !strings.ContainsAny(pattern, `*?\`) {
		return pattern == s
	}
	// Iterative matcher with backtracking on the last star.
	p, i := 0, 0
	starP, starI := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '\\' && p+1 < len(pattern) && pattern[p+1] == s[i]:
			p += 2
			i++
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == s[i] && pattern[p] != '*' && pattern[p] != '\\'):
			p++
			i++
		case p < len(pattern) && pattern[p] == '*':
			starP, starI = p, i
			p++
		case starP >= 0:
			starI++
			p, i = starP+1, starI
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func boolStr(b bool) string { return strconv.FormatBool(b) }

// EC2 pagination: MaxResults (5..1000) and an opaque NextToken. The token
// names the creation sequence number of the last item returned, so items
// created or deleted between pages neither repeat nor shift the rest.

type ec2Paging struct {
	max   int // 0: everything
	after int // creation seq of the last item already returned
}

// parseEC2Paging reads MaxResults and NextToken. idsParam is the name EC2
// gives the id list in its error ("instancesSet"); when ids were given,
// MaxResults is refused as EC2 refuses it.
func parseEC2Paging(p params, idsGiven bool, idsParam string) (ec2Paging, *apiError) {
	var pg ec2Paging
	if mr := p.integer("MaxResults"); mr.sent {
		if idsGiven && idsParam != "" {
			return pg, badRequest("InvalidParameterCombination", "The parameter %s cannot be used with the parameter maxResults", idsParam)
		}
		switch {
		case !mr.ok:
			return pg, badRequest("InvalidParameterValue", "Invalid value '%s' for maxResults", mr.raw)
		case mr.n < 5:
			return pg, badRequest("InvalidParameterValue", "Value ( %d ) for parameter maxResults is invalid. Expecting a value greater than 5.", mr.n)
		case mr.n > 1000:
			return pg, badRequest("InvalidParameterValue", "Value ( %d ) for parameter maxResults is invalid. Expecting a value less than 1000.", mr.n)
		}
		pg.max = int(mr.n)
	}
	if tok, ok := p.str("NextToken"); ok {
		after, good := decodeToken(tok)
		if !good {
			return pg, badRequest("InvalidParameterValue", "Value ( %s ) for parameter NextToken is invalid. The token is invalid.", tok)
		}
		pg.after = after
	}
	return pg, nil
}

const tokenPrefix = "fake-aws-page:"

func encodeToken(seq int) string {
	return base64.StdEncoding.EncodeToString([]byte(tokenPrefix + strconv.Itoa(seq)))
}

func decodeToken(tok string) (int, bool) {
	b, err := base64.StdEncoding.DecodeString(tok)
	if err != nil {
		return 0, false
	}
	rest, ok := strings.CutPrefix(string(b), tokenPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n >= 0
}

// page cuts items (in creation order) into the page after pg.after. size
// says how much an item counts against MaxResults (a reservation counts
// its instances); an item is never split, so a page holds at least one.
func page[T any](pg ec2Paging, items []T, seq func(T) int, size func(T) int) ([]T, string) {
	start := 0
	for start < len(items) && seq(items[start]) <= pg.after {
		start++
	}
	items = items[start:]
	if pg.max == 0 {
		return items, ""
	}
	n, used := 0, 0
	for n < len(items) {
		sz := size(items[n])
		if n > 0 && used+sz > pg.max {
			break
		}
		used += sz
		n++
		if used >= pg.max {
			break
		}
	}
	if n < len(items) {
		return items[:n], encodeToken(seq(items[n-1]))
	}
	return items, ""
}

func one[T any](T) int { return 1 }

func itoa32(n int32) string { return strconv.Itoa(int(n)) }
