package gce

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"slices"
)

// maxBody bounds request documents; the real API's limit is larger than
// anything a controller sends.
const maxBody = 8 << 20

// doc is a request document's top-level properties, for presence checks
// (a priority of 0 differs from no priority).
type doc map[string]json.RawMessage

func (d doc) has(key string) bool {
	v, ok := d[key]
	return ok && string(v) != "null"
}

// readBody decodes a request document of the discovery schema into v,
// refusing properties the schema does not have, as the real API does.
// status is 0 on success; otherwise status and body are the error to
// answer with.
func readBody(c *call, schema string, v any) (d doc, status int, body any) {
	raw, err := io.ReadAll(io.LimitReader(c.r.Body, maxBody))
	if err != nil {
		status, body = errParse(err.Error())
		return nil, status, body
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		status, body = errParse(err.Error())
		return nil, status, body
	}
	if fields, ok := schemaFields[schema]; ok {
		for k := range d {
			if !slices.Contains(fields, k) {
				status, body = newError(http.StatusBadRequest, "invalid",
					fmt.Sprintf("Invalid JSON payload received. Unknown name %q at 'resource': Cannot find field.", k))
				return nil, status, body
			}
		}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		status, body = errParse(err.Error())
		return nil, status, body
	}
	return d, 0, nil
}

func errParse(detail string) (int, any) {
	return newError(http.StatusBadRequest, "parseError", "Invalid JSON payload received. "+detail)
}

// mergePatch applies a JSON merge patch (RFC 7396), the semantics of the
// API's PATCH methods, to dst, a pointer to a wire struct.
func mergePatch(dst any, patch doc) error {
	cur, err := json.Marshal(dst)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(cur, &m); err != nil {
		return err
	}
	for k, raw := range patch {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		m[k] = mergeValue(m[k], v)
		if m[k] == nil {
			delete(m, k)
		}
	}
	merged, err := json.Marshal(m)
	if err != nil {
		return err
	}
	// Decode into a zeroed value so removed fields stay removed.
	zeroOf(dst)
	return json.Unmarshal(merged, dst)
}

func mergeValue(cur, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	cm, ok := cur.(map[string]any)
	if !ok {
		cm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(cm, k)
			continue
		}
		cm[k] = mergeValue(cm[k], v)
	}
	return cm
}

// nameRE is the API's pattern for resource names (RFC 1035 labels).
var nameRE = regexp.MustCompile(`^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$`)

// checkName validates a new resource's name in the API's words.
func checkName(name string) (int, any) {
	if name == "" {
		return errRequired("resource.name")
	}
	if !nameRE.MatchString(name) {
		return errInvalidField("resource.name", name, "Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'")
	}
	return 0, nil
}

// zeroOf zeroes what the pointer p points to.
func zeroOf(p any) {
	v := reflect.ValueOf(p).Elem()
	v.Set(reflect.Zero(v.Type()))
}
