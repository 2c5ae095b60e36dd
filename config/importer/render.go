package importer

// render.go writes the collected keys as YAML, in the order of polyccm's
// config structs (the order ccm.example.yaml and `config show` use), each
// with a comment naming the upstream setting it came from.

import (
	"bytes"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/polyccm/polyccm/config"
	"github.com/polyccm/polyccm/config/secret"
)

func (b *builder) render() ([]byte, error) {
	rank := map[string]int{}
	walkKeys("", reflect.TypeOf(config.Config{}), rank)
	if d, ok := b.in.Registry.Lookup(b.driver); ok {
		walkKeys("drivers."+b.driver, reflect.TypeOf(d.NewConfig()), rank)
	}
	keys := sortedKeys(b.vals)
	sort.SliceStable(keys, func(i, j int) bool {
		ri, iok := rank[keys[i]]
		rj, jok := rank[keys[j]]
		switch {
		case iok && jok:
			return ri < rj
		case iok != jok:
			return iok // keys the structs do not know (none, if the mapping is right) go last
		}
		return keys[i] < keys[j]
	})

	root := &yaml.Node{Kind: yaml.MappingNode}
	for _, k := range keys {
		s := b.vals[k]
		parent := root
		parts := strings.Split(k, ".")
		for _, p := range parts[:len(parts)-1] {
			parent = child(parent, p)
		}
		v, err := valueNode(s.value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		kn := &yaml.Node{Kind: yaml.ScalarNode, Value: parts[len(parts)-1]}
		if s.from != "" {
			v.LineComment = "# " + s.from
		}
		parent.Content = append(parent.Content, kn, v)
	}

	var head strings.Builder
	fmt.Fprintf(&head, "polyccm config imported from %s's settings\n", b.imp.upstream())
	fmt.Fprintf(&head, "by `polyccm config import --from %s`. Each key's comment names the\n", b.driver)
	head.WriteString("upstream setting it came from; what is not here is polyccm's default\n")
	head.WriteString("(see ccm.example.yaml). Check it with `polyccm config validate`, then\n")
	head.WriteString("run `polyccm plan` (docs/switching.md).")
	if len(b.unmapped) > 0 {
		head.WriteString("\n\nNot carried over (written with --allow-unmapped):")
		for _, u := range b.unmapped {
			head.WriteString("\n  " + u.String())
		}
	}
	doc := &yaml.Node{Kind: yaml.DocumentNode, HeadComment: head.String(), Content: []*yaml.Node{root}}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("writing the config: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// child returns the mapping under key in m, adding it if missing.
func child(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	c := &yaml.Node{Kind: yaml.MappingNode}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, c)
	return c
}

// walkKeys numbers every key path of t in field order.
func walkKeys(prefix string, t reflect.Type, rank map[string]int) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("koanf")
		if tag == "" || tag == "-" || !f.IsExported() {
			continue
		}
		p := tag
		if prefix != "" {
			p = prefix + "." + tag
		}
		rank[p] = len(rank)
		if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(secret.Secret{}) && f.Type != reflect.TypeOf(time.Duration(0)) {
			walkKeys(p, f.Type, rank)
		}
	}
}

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func valueNode(v any) (*yaml.Node, error) {
	switch x := v.(type) {
	case string:
		return str(x), nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(x)}, nil
	case int:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(x)}, nil
	case float64:
		return &yaml.Node{Kind: yaml.ScalarNode, Value: strconv.FormatFloat(x, 'g', -1, 64)}, nil
	case time.Duration:
		return &yaml.Node{Kind: yaml.ScalarNode, Value: shortDuration(x)}, nil
	case []string:
		n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, s := range x {
			n.Content = append(n.Content, str(s))
		}
		return n, nil
	case secret.Secret:
		// References only: the builder never holds a value.
		n := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		switch {
		case x.File != "" && x.Env == "" && x.Credential == "" && x.Value == "":
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "file"}, str(x.File))
		case x.Env != "" && x.File == "" && x.Credential == "" && x.Value == "":
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "env"}, str(x.Env))
		default:
			return nil, fmt.Errorf("a secret must be one reference, {file:} or {env:}")
		}
		return n, nil
	}
	return nil, fmt.Errorf("cannot write a %T", v)
}

// shortDuration writes 5m rather than time's 5m0s.
func shortDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}
