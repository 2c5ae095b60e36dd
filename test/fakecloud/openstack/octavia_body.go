package openstack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Octavia reads its bodies with WSME: each attribute of a request type
// has a kind, mandatory ones must be there, unknown ones are refused, and
// a value of the wrong kind is "Invalid input for field/attribute ...".
// wsType describes a request type the way Octavia's types/*.py do, for
// the attributes of API 2.27 (the version the fake advertises).

type wsKind int

const (
	wsString wsKind = iota
	wsBool
	wsInt
	wsFloat
	wsUUID
	wsIP
	wsStringList
	wsCIDRList
	wsStringMap
	wsObject
	wsObjectList
)

// wsAttr is one attribute of a request type.
type wsAttr struct {
	kind      wsKind
	mandatory bool
	enum      []string
	floats    []float64 // the values a float attribute may take (http_version)
	ranged    bool      // min and max apply (IntegerType's bounds)
	min, max  int
	maxLen    int            // 0: no limit
	pattern   *regexp.Regexp // StringType's pattern
	sub       wsType         // the type of an object or a list's items
}

type wsType map[string]wsAttr

// wsVals is a decoded object: every attribute given, null as nil. Values
// are string, bool, int, float64, []string, map[string]string, wsVals or
// []wsVals.
type wsVals map[string]any

func str(maxLen int) wsAttr { return wsAttr{kind: wsString, maxLen: maxLen} }
func intIn(lo, hi int) wsAttr {
	return wsAttr{kind: wsInt, ranged: true, min: lo, max: hi}
}
func enumOf(values ...string) wsAttr { return wsAttr{kind: wsString, enum: values} }
func must(a wsAttr) wsAttr           { a.mandatory = true; return a }

var (
	wsUUIDAttr  = wsAttr{kind: wsUUID}
	wsIPAttr    = wsAttr{kind: wsIP}
	wsBoolAttr  = wsAttr{kind: wsBool}
	wsTagsAttr  = wsAttr{kind: wsStringList, maxLen: 255}
	wsListAttr  = wsAttr{kind: wsStringList}
	uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$`)
)

// invalidInput is wsme.exc.InvalidInput's faultstring.
func invalidInput(field string, value any, msg string) string {
	return fmt.Sprintf("Invalid input for field/attribute %s. Value: '%s'. %s", field, pyStr(value), msg)
}

// readOctaviaBody reads {root: {...}} of type t, as WSME reads a body
// argument. It answers 400 with WSME's faultstring when the body does not
// fit.
func readOctaviaBody(c *call, root string, t wsType) (wsVals, int, any) {
	raw, err := io.ReadAll(c.r.Body)
	if err != nil {
		st, body := errWSME(http.StatusBadRequest, "Unable to read the request body")
		return nil, st, body
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil || doc == nil {
		st, body := errWSME(http.StatusBadRequest, fmt.Sprintf("Invalid data: %s", strings.TrimSpace(string(raw))))
		return nil, st, body
	}
	outer := wsType{root: {kind: wsObject, mandatory: true, sub: t}}
	if root == "members" {
		outer = wsType{root: {kind: wsObjectList, mandatory: true, sub: t}}
	}
	v, msg := decodeObject(outer, doc, root)
	if msg != "" {
		st, body := errWSME(http.StatusBadRequest, msg)
		return nil, st, body
	}
	return v, 0, nil
}

func decodeObject(t wsType, doc map[string]json.RawMessage, argName string) (wsVals, string) {
	var unknown []string
	for k := range doc {
		if _, ok := t[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		word := "attribute"
		if len(unknown) > 1 {
			word = "attributes"
		}
		return nil, fmt.Sprintf("Unknown %s for argument %s: %s", word, argName, strings.Join(unknown, ", "))
	}
	out := wsVals{}
	names := make([]string, 0, len(t))
	for k := range t {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, name := range names {
		a := t[name]
		raw, ok := doc[name]
		if !ok {
			if a.mandatory {
				return nil, invalidInput(name, nil, "Mandatory field missing.")
			}
			continue
		}
		if string(bytes.TrimSpace(raw)) == "null" {
			if a.mandatory {
				return nil, invalidInput(name, nil, "Mandatory field missing.")
			}
			out[name] = nil
			continue
		}
		v, msg := decodeAttr(name, a, raw)
		if msg != "" {
			return nil, msg
		}
		out[name] = v
	}
	return out, ""
}

func decodeAttr(name string, a wsAttr, raw json.RawMessage) (any, string) {
	var generic any
	_ = json.Unmarshal(raw, &generic)
	wrong := func(want string) (any, string) {
		return nil, invalidInput(name, generic, fmt.Sprintf("Wrong type. Expected '%s', got '%s'", want, pyType(generic)))
	}
	switch a.kind {
	case wsString, wsUUID, wsIP:
		s, ok := generic.(string)
		if !ok {
			return wrong("<class 'str'>")
		}
		return checkString(name, a, s)
	case wsBool:
		switch v := generic.(type) {
		case bool:
			return v, ""
		case string:
			if b, err := strconv.ParseBool(v); err == nil {
				return b, ""
			}
		}
		return wrong("<class 'bool'>")
	case wsInt:
		f, ok := generic.(float64)
		if !ok || f != float64(int(f)) {
			return wrong("<class 'int'>")
		}
		n := int(f)
		if a.ranged && n < a.min {
			return nil, invalidInput(name, n, fmt.Sprintf("Value should be greater or equal to %d", a.min))
		}
		if a.ranged && n > a.max {
			return nil, invalidInput(name, n, fmt.Sprintf("Value should be lower or equal to %d", a.max))
		}
		return n, ""
	case wsFloat:
		f, ok := generic.(float64)
		if !ok {
			return wrong("<class 'float'>")
		}
		if len(a.floats) > 0 && !slices.Contains(a.floats, f) {
			var vs []string
			for _, x := range a.floats {
				vs = append(vs, strconv.FormatFloat(x, 'f', 1, 64))
			}
			return nil, invalidInput(name, f, "Value should be one of: "+strings.Join(vs, ", "))
		}
		return f, ""
	case wsStringList, wsCIDRList:
		items, ok := generic.([]any)
		if !ok {
			return wrong("list")
		}
		out := []string{}
		for _, it := range items {
			s, ok := it.(string)
			if !ok {
				return wrong("<class 'str'>")
			}
			if a.kind == wsCIDRList {
				if _, err := netip.ParsePrefix(s); err != nil {
					return nil, invalidInput(name, s, "Value should be IPv4 or IPv6 CIDR format")
				}
			} else if a.maxLen > 0 && len(s) > a.maxLen {
				return nil, invalidInput(name, s, fmt.Sprintf("Value should have a maximum character requirement of %d", a.maxLen))
			}
			out = append(out, s)
		}
		return out, ""
	case wsStringMap:
		m, ok := generic.(map[string]any)
		if !ok {
			return wrong("dict")
		}
		out := map[string]string{}
		for k, v := range m {
			s, ok := v.(string)
			if !ok {
				return wrong("<class 'str'>")
			}
			out[k] = s
		}
		return out, ""
	case wsObject:
		var doc map[string]json.RawMessage
		if json.Unmarshal(raw, &doc) != nil {
			return wrong("dict")
		}
		return decodeObject(a.sub, doc, name)
	case wsObjectList:
		var docs []map[string]json.RawMessage
		if json.Unmarshal(raw, &docs) != nil {
			return wrong("list")
		}
		out := []wsVals{}
		for _, d := range docs {
			v, msg := decodeObject(a.sub, d, name)
			if msg != "" {
				return nil, msg
			}
			out = append(out, v)
		}
		return out, ""
	}
	return nil, ""
}

func checkString(name string, a wsAttr, s string) (any, string) {
	switch {
	case a.kind == wsUUID && !uuidPattern.MatchString(s):
		return nil, invalidInput(name, s, "Value should be UUID format")
	case a.kind == wsIP:
		if _, err := netip.ParseAddr(s); err != nil {
			return nil, invalidInput(name, s, "Value should be IPv4 or IPv6 format")
		}
	case len(a.enum) > 0 && !slices.Contains(a.enum, s):
		vs := slices.Sorted(slices.Values(a.enum))
		return nil, invalidInput(name, s, "Value should be one of: "+strings.Join(vs, ", "))
	case a.maxLen > 0 && len(s) > a.maxLen:
		return nil, invalidInput(name, s, fmt.Sprintf("Value should have a maximum character requirement of %d", a.maxLen))
	case a.pattern != nil && !a.pattern.MatchString(s):
		return nil, invalidInput(name, s, "Value should match the pattern "+a.pattern.String())
	}
	return s, ""
}

// pyType is Python's type() of a decoded JSON value, for WSME's messages.
func pyType(v any) string {
	switch v.(type) {
	case string:
		return "<class 'str'>"
	case float64:
		return "<class 'int'>"
	case bool:
		return "<class 'bool'>"
	case []any:
		return "<class 'list'>"
	case map[string]any:
		return "<class 'dict'>"
	}
	return "<class 'NoneType'>"
}

func (v wsVals) has(k string) bool { _, ok := v[k]; return ok }

func (v wsVals) str(k string) string { s, _ := v[k].(string); return s }

func (v wsVals) strOr(k, def string) string {
	if s, ok := v[k].(string); ok {
		return s
	}
	return def
}

// strPtr is a nullable string attribute: nil when absent or null.
func (v wsVals) strPtr(k string) *string {
	if s, ok := v[k].(string); ok {
		return &s
	}
	return nil
}

func (v wsVals) boolOr(k string, def bool) bool {
	if b, ok := v[k].(bool); ok {
		return b
	}
	return def
}

func (v wsVals) intOr(k string, def int) int {
	if n, ok := v[k].(int); ok {
		return n
	}
	return def
}

func (v wsVals) intPtr(k string) *int {
	if n, ok := v[k].(int); ok {
		return &n
	}
	return nil
}

func (v wsVals) floatPtr(k string) *float64 {
	if f, ok := v[k].(float64); ok {
		return &f
	}
	return nil
}

func (v wsVals) list(k string) []string { l, _ := v[k].([]string); return l }

func (v wsVals) strMap(k string) map[string]string { m, _ := v[k].(map[string]string); return m }

func (v wsVals) obj(k string) wsVals { o, _ := v[k].(wsVals); return o }

func (v wsVals) objs(k string) []wsVals { l, _ := v[k].([]wsVals); return l }

// with returns the type with more attributes.
func (t wsType) with(more wsType) wsType {
	out := wsType{}
	for k, a := range t {
		out[k] = a
	}
	for k, a := range more {
		out[k] = a
	}
	return out
}
