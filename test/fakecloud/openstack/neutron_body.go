package openstack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// neutronBody is a resource document of a POST or PUT after Neutron's
// body checks (prepare_request_body): its attributes, decoded as JSON.
type neutronBody map[string]any

// neutronAttrs says which attributes a resource takes: those a POST may
// set, those a PUT may, and the rest of those it shows (read-only).
type neutronAttrs struct {
	post, put, readOnly []string
	required            []string // POST only
}

// readNeutronBody reads {"<resource>": {...}} as Neutron's body hook does,
// in its order and words.
func (s *Server) readNeutronBody(c *call, resource string, attrs neutronAttrs, create bool) (neutronBody, int, any) {
	bad := func(msg string) (neutronBody, int, any) {
		st, body := errNeutron(http.StatusBadRequest, webobType(http.StatusBadRequest), msg)
		return nil, st, body
	}
	raw, err := io.ReadAll(c.r.Body)
	if err != nil || len(bytes.TrimSpace(raw)) == 0 {
		return bad("Resource body required")
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil || doc == nil {
		return bad("Body contains invalid data")
	}
	if _, ok := doc[resource+"s"]; ok && !strings.HasSuffix(resource, "s") {
		return bad("Bulk operation not supported")
	}
	res, ok := doc[resource]
	if !ok || string(bytes.TrimSpace(res)) == "null" {
		return bad("Unable to find '" + resource + "' in request body")
	}
	var b neutronBody
	if err := json.Unmarshal(res, &b); err != nil || b == nil {
		return bad("Object '" + resource + "' contains invalid data")
	}
	s.mu.Lock()
	pid := s.account.ProjectID
	s.mu.Unlock()
	for _, k := range []string{"project_id", "tenant_id"} {
		if v, ok := b[k]; ok && v != pid {
			return bad("Specifying 'project_id' or 'tenant_id' other than the authenticated project in request requires admin privileges")
		}
	}
	allowed := attrs.put
	if create {
		allowed = append(slices.Clone(attrs.post), "project_id", "tenant_id")
	}
	known := slices.Concat(attrs.post, attrs.put, attrs.readOnly, []string{"project_id", "tenant_id"})
	keys := slices.Sorted(maps.Keys(b))
	if unknown := slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return slices.Contains(known, k) }); len(unknown) > 0 {
		return bad("Unrecognized attribute(s) '" + strings.Join(unknown, ", ") + "'")
	}
	for _, k := range keys {
		switch {
		case slices.Contains(allowed, k):
		case create:
			return bad("Attribute '" + k + "' not allowed in POST")
		default:
			return bad("Cannot update read-only attribute " + k)
		}
	}
	if create {
		for _, k := range attrs.required {
			if _, ok := b[k]; !ok {
				return bad("Failed to parse request. Required attribute '" + k + "' not specified")
			}
		}
	}
	return b, 0, nil
}

// neutronInvalid is neutron-lib's message for a value its validator
// refuses.
func neutronInvalid(attr, reason string) (int, any) {
	return errNeutron(http.StatusBadRequest, webobType(http.StatusBadRequest),
		fmt.Sprintf("Invalid input for %s. Reason: %s.", attr, reason))
}

// str reads a string attribute: ok is false when it is there but not a
// string (null reads as "", ok).
func (b neutronBody) str(k string) (string, bool) {
	v, has := b[k]
	if !has || v == nil {
		return "", true
	}
	s, ok := v.(string)
	return s, ok
}

func (b neutronBody) has(k string) bool { _, ok := b[k]; return ok }

// checkString is neutron-lib's validate_string with a maximum length.
func (b neutronBody) checkString(k string, maxLen int) (int, any) {
	if !b.has(k) || b[k] == nil {
		return 0, nil
	}
	v, ok := b[k].(string)
	if !ok {
		return neutronInvalid(k, "'"+pyStr(b[k])+"' is not a valid string")
	}
	if len(v) > maxLen {
		return neutronInvalid(k, fmt.Sprintf("'%s' exceeds maximum length of %d", v, maxLen))
	}
	return 0, nil
}

// intAttr reads an integer attribute as convert_to_int_if_not_none does:
// nil for none.
func (b neutronBody) intAttr(k string) (*int, int, any) {
	v, ok := b[k]
	if !ok || v == nil {
		return nil, 0, nil
	}
	switch x := v.(type) {
	case float64:
		if x == float64(int(x)) {
			n := int(x)
			return &n, 0, nil
		}
	case string:
		if n, err := strconv.Atoi(x); err == nil {
			return &n, 0, nil
		}
	}
	st, body := errNeutron(http.StatusBadRequest, "InvalidInput",
		fmt.Sprintf("Invalid input for operation: '%s' is not an integer.", pyStr(v)))
	return nil, st, body
}

// tagsOf is a copy of tags, never nil.
func tagsOf(tags []string) []string { return append([]string{}, tags...) }
