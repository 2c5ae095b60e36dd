package config

import (
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/polyccm/polyccm/config/secret"
	"github.com/polyccm/polyccm/core/suggest"
)

var (
	durationType = reflect.TypeOf(time.Duration(0))
	secretType   = reflect.TypeOf(secret.Secret{})
)

// schema is every key path the config accepts, walked from the Go structs
// (koanf tags), so unknown keys and environment overrides are checked
// against the same truth the decoder uses.
type schema struct {
	leaves map[string]reflect.Type // canonical path -> value type
	groups map[string]bool         // canonical paths that hold mappings
	folded map[string]string       // folded path -> canonical path
}

func newSchema() *schema {
	return &schema{leaves: map[string]reflect.Type{}, groups: map[string]bool{}, folded: map[string]string{}}
}

func (s *schema) walk(prefix string, t reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("koanf")
		if tag == "" || tag == "-" || !f.IsExported() {
			continue
		}
		p := joinKey(prefix, tag)
		switch {
		case f.Type == secretType:
			s.addGroup(p)
			for _, sub := range []string{"file", "env", "credential", "value"} {
				s.addLeaf(p+"."+sub, reflect.TypeOf(""))
			}
		case f.Type.Kind() == reflect.Struct:
			s.addGroup(p)
			s.walk(p, f.Type)
		default:
			s.addLeaf(p, f.Type)
		}
	}
}

func (s *schema) addGroup(p string) {
	s.groups[p] = true
	s.folded[fold(p)] = p
}

func (s *schema) addLeaf(p string, t reflect.Type) {
	s.leaves[p] = t
	s.folded[fold(p)] = p
}

// fold makes the form environment variable names are matched in:
// case-insensitive, single underscores ignored.
func fold(p string) string {
	return strings.ReplaceAll(strings.ToLower(p), "_", "")
}

// children returns the keys directly under group.
func (s *schema) children(group string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		rest, ok := strings.CutPrefix(p, group+".")
		if group == "" {
			rest, ok = p, true
		}
		if !ok {
			return
		}
		first, _, _ := strings.Cut(rest, ".")
		if !seen[first] {
			seen[first] = true
			out = append(out, first)
		}
	}
	for p := range s.leaves {
		add(p)
	}
	for p := range s.groups {
		add(p)
	}
	sort.Strings(out)
	return out
}

// parent returns the longest known group that contains key ("" for top).
func (s *schema) parent(key string) string {
	for {
		i := strings.LastIndexByte(key, '.')
		if i < 0 {
			return ""
		}
		key = key[:i]
		if s.groups[key] {
			return key
		}
	}
}

// suggest returns the closest known sibling of an unknown key, or "".
func (s *schema) suggest(key string) string {
	group := s.parent(key)
	rest := strings.TrimPrefix(key, group+".")
	if group == "" {
		rest = key
	}
	name, _, _ := strings.Cut(rest, ".")
	best := suggest.Closest(name, s.children(group), 3)
	if best == "" {
		return ""
	}
	return joinKey(group, best)
}

// envPath turns an environment variable's dotted path into the form
// suggest expects: the longest prefix naming a known group in its canonical
// spelling (so a typo is matched among that group's keys), the rest folded.
func (s *schema) envPath(path string) string {
	parts := strings.Split(path, ".")
	for i := len(parts) - 1; i > 0; i-- {
		if g, ok := s.folded[fold(strings.Join(parts[:i], "."))]; ok && s.groups[g] {
			return g + "." + fold(strings.Join(parts[i:], "."))
		}
	}
	return fold(path)
}

// envValue converts an environment string to the leaf's type, so an
// override is typed exactly like the same value written in YAML. Numbers
// go through envNumber instead, for the file's range checks.
func envValue(t reflect.Type, v string) (any, error) {
	if t == durationType {
		return v, nil // the decoder's duration hook parses and reports it
	}
	switch t.Kind() {
	case reflect.String:
		return v, nil
	case reflect.Bool:
		return strconv.ParseBool(v)
	case reflect.Slice:
		if v == "" {
			return []any{}, nil
		}
		parts := strings.Split(v, ",")
		out := make([]any, len(parts))
		for i, p := range parts {
			out[i] = strings.TrimSpace(p)
		}
		return out, nil
	}
	return v, nil
}

// typeName is how a key's expected type is named in errors.
func typeName(t reflect.Type) string {
	if t == durationType {
		return "a duration (like 30s or 5m)"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean (true or false)"
	case reflect.Int, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "a comma-separated list"
	}
	return "a string"
}
