package config

import (
	"bytes"
	"fmt"
	"reflect"
	"sort"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/polyccm/polyccm/config/secret"
)

// Render returns the effective config as YAML, in the same shape and key
// order as the file, with every inline secret value replaced and
// credentials in other values (a URL's password or query token) masked.
// This is what `polyccm config show` prints.
func Render(c *Config) ([]byte, error) {
	root := node(reflect.ValueOf(*c))
	if len(c.Drivers) > 0 {
		drivers := &yaml.Node{Kind: yaml.MappingNode}
		names := make([]string, 0, len(c.Drivers))
		for n := range c.Drivers {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			drivers.Content = append(drivers.Content, scalar(n), node(reflect.ValueOf(c.Drivers[n])))
		}
		root.Content = append(root.Content, scalar("drivers"), drivers)
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(root); err != nil {
		return nil, fmt.Errorf("rendering config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: s} }

func node(v reflect.Value) *yaml.Node {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
		}
		v = v.Elem()
	}
	switch {
	case v.Type() == secretType:
		m := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		red := v.Interface().(secret.Secret).Redacted()
		for _, k := range []string{"file", "env", "credential", "value"} {
			if val, ok := red[k]; ok {
				// Tagged so a reference like "007" or "true" stays a string.
				m.Content = append(m.Content, scalar(k), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: val})
			}
		}
		return m
	case v.Type() == durationType:
		return scalar(v.Interface().(fmt.Stringer).String())
	}
	switch v.Kind() {
	case reflect.Struct:
		m := &yaml.Node{Kind: yaml.MappingNode}
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			tag := f.Tag.Get("koanf")
			if tag == "" || tag == "-" || !f.IsExported() {
				continue
			}
			m.Content = append(m.Content, scalar(tag), node(v.Field(i)))
		}
		return m
	case reflect.Slice:
		s := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for i := 0; i < v.Len(); i++ {
			s.Content = append(s.Content, node(v.Index(i)))
		}
		return s
	case reflect.String:
		// A URL's credentials are secrets outside the secret mechanism:
		// its userinfo, and a token in its query (?token=…), which the
		// log's rules (core/redact) mask as they mask it in log lines.
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: RedactURL(v.String())}
	case reflect.Bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v.Bool())}
	case reflect.Int, reflect.Int32, reflect.Int64:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(v.Int(), 10)}
	case reflect.Float32, reflect.Float64:
		// Untagged: a whole number (qps: 50) would otherwise print as
		// "!!float 50"; the decoder takes an integer for a float.
		return scalar(strconv.FormatFloat(v.Float(), 'g', -1, 64))
	}
	return scalar(fmt.Sprint(v.Interface()))
}
