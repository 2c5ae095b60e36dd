package hetzner

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// A label key is an optional DNS-subdomain prefix and "/", then a name of
// up to 63 characters; a value is up to 63 such characters or empty.
var (
	labelName   = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9_.-]{0,61}[a-zA-Z0-9])?$`)
	labelPrefix = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$`)
	labelValue  = regexp.MustCompile(`^([a-zA-Z0-9]([a-zA-Z0-9_.-]{0,61}[a-zA-Z0-9])?)?$`)
	inTerm      = regexp.MustCompile(`^(\S+)\s+(in|notin)\s*\((.*)\)$`)
)

func validKey(k string) bool {
	prefix, name, ok := strings.Cut(k, "/")
	if !ok {
		return labelName.MatchString(k)
	}
	return labelPrefix.MatchString(prefix) && labelName.MatchString(name)
}

// validLabels checks labels as the API does; it returns the error answer
// or 0.
func validLabels(labels map[string]string) (int, any) {
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if !validKey(k) {
			return errInvalid("labels", fmt.Sprintf("label key %q is invalid", k))
		}
		if !labelValue.MatchString(labels[k]) {
			return errInvalid("labels", fmt.Sprintf("label value %q of key %q is invalid", labels[k], k))
		}
	}
	return 0, nil
}

// selector is a parsed label_selector: requirements that must all hold.
type selector []requirement

type requirement struct {
	key    string
	op     string // "=", "!=", "exists", "!exists", "in", "notin"
	values []string
}

// parseSelector reads the API's label selector language: comma-separated
// k=v (or k==v), k!=v, k, !k, "k in (a,b)" and "k notin (a,b)".
func parseSelector(s string) (selector, error) {
	var sel selector
	if strings.TrimSpace(s) == "" {
		return sel, nil
	}
	for _, term := range splitTerms(s) {
		term = strings.TrimSpace(term)
		var req requirement
		switch m := inTerm.FindStringSubmatch(term); {
		case term == "":
			return nil, fmt.Errorf("invalid label selector %q: empty expression", s)
		case m != nil:
			req = requirement{key: m[1], op: m[2]}
			for _, v := range strings.Split(m[3], ",") {
				req.values = append(req.values, strings.TrimSpace(v))
			}
		case strings.HasPrefix(term, "!") && !strings.Contains(term, "="):
			req = requirement{key: strings.TrimSpace(term[1:]), op: "!exists"}
		case strings.Contains(term, "!="):
			k, v, _ := strings.Cut(term, "!=")
			req = requirement{key: strings.TrimSpace(k), op: "!=", values: []string{strings.TrimSpace(v)}}
		case strings.Contains(term, "="):
			k, v, _ := strings.Cut(term, "=")
			v = strings.TrimPrefix(v, "=")
			req = requirement{key: strings.TrimSpace(k), op: "=", values: []string{strings.TrimSpace(v)}}
		default:
			req = requirement{key: term, op: "exists"}
		}
		if !validKey(req.key) {
			return nil, fmt.Errorf("invalid label selector %q: invalid key %q", s, req.key)
		}
		for _, v := range req.values {
			if !labelValue.MatchString(v) {
				return nil, fmt.Errorf("invalid label selector %q: invalid value %q", s, v)
			}
		}
		sel = append(sel, req)
	}
	return sel, nil
}

// splitTerms splits at commas outside parentheses.
func splitTerms(s string) []string {
	var terms []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				terms = append(terms, s[start:i])
				start = i + 1
			}
		}
	}
	return append(terms, s[start:])
}

// matches reports whether labels satisfy every requirement. As in
// Kubernetes, k!=v and notin also match labels without k.
func (sel selector) matches(labels map[string]string) bool {
	for _, r := range sel {
		v, ok := labels[r.key]
		var hit bool
		switch r.op {
		case "=":
			hit = ok && v == r.values[0]
		case "!=":
			hit = !ok || v != r.values[0]
		case "exists":
			hit = ok
		case "!exists":
			hit = !ok
		case "in":
			hit = ok && slices.Contains(r.values, v)
		case "notin":
			hit = !ok || !slices.Contains(r.values, v)
		}
		if !hit {
			return false
		}
	}
	return true
}
