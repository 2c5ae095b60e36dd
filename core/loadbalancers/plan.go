package loadbalancers

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// A Service sync has three steps: observe (read the cloud's resources),
// plan (compute the changes that make them what the Service asks for),
// apply (make those changes). The Plan is the middle step as a value: it
// is logged at -v=2 and tested on its own, and applying it changes exactly
// what it lists.

// Action is what a Change does to a cloud resource.
type Action string

const (
	Create Action = "create"
	Update Action = "update"
	Delete Action = "delete"
)

// Field is one field of a resource that a Change sets, with the value the
// cloud has and the value it will have.
type Field struct {
	Name     string
	From, To string
}

// Change is one cloud resource to create, update or delete.
type Change struct {
	Action Action
	Kind   string // "load balancer", "target group", "forwarding rule"...
	Name   string // the cloud's name or ID
	// Fields lists what an update changes (what a create sets, where it
	// says so).
	Fields []Field
	// Apply makes the change. A driver whose resources refer to each
	// other (a listener to a target group created earlier in the same
	// plan) resolves those references when Apply runs, not when it plans.
	// Nil for a plan only shown (polyccm plan) or applied by the driver
	// itself.
	Apply func(ctx context.Context) error
}

func (c Change) String() string {
	s := fmt.Sprintf("%s %s %s", c.Action, c.Kind, c.Name)
	if len(c.Fields) == 0 {
		return s
	}
	parts := make([]string, len(c.Fields))
	for i, f := range c.Fields {
		parts[i] = fmt.Sprintf("%s %s -> %s", f.Name, f.From, f.To)
	}
	return s + " (" + strings.Join(parts, "; ") + ")"
}

// Plan is the list of changes one sync of one Service makes.
type Plan struct {
	Changes []Change
}

// Add appends a change; an update with no fields changes nothing and is
// left out.
func (p *Plan) Add(c Change) {
	if c.Action == Update && len(c.Fields) == 0 {
		return
	}
	p.Changes = append(p.Changes, c)
}

// Empty says the cloud already is what the Service asks for.
func (p *Plan) Empty() bool { return len(p.Changes) == 0 }

func (p *Plan) String() string {
	if p.Empty() {
		return "no changes"
	}
	parts := make([]string, len(p.Changes))
	for i, c := range p.Changes {
		parts[i] = c.String()
	}
	return strings.Join(parts, "; ")
}

// Apply makes the changes in order and stops at the first error, which
// names the change (unless the error names it already). What was applied
// stays: the next sync observes it and plans only what is left. Under a
// dry run (WithDryRun) it applies nothing and returns ErrPlanned.
func (p *Plan) Apply(ctx context.Context) error {
	if err := planned(ctx, p); err != nil {
		return err // a dry run: nothing is applied
	}
	for _, c := range p.Changes {
		if c.Apply == nil {
			continue
		}
		if err := c.Apply(ctx); err != nil {
			if strings.Contains(err.Error(), c.Name) {
				return err // it says what failed already
			}
			return fmt.Errorf("%s %s %s: %w", c.Action, c.Kind, c.Name, err)
		}
	}
	return nil
}

// Log writes the plan at -v=2: what a sync is about to change, and why
// (the differing fields), before any change is made.
func (p *Plan) Log(svc *v1.Service) {
	klog.V(2).InfoS("Load balancer plan", "service", klog.KObj(svc), "plan", p.String())
}

// Diff compares two values of one struct type field by field and returns
// the fields that differ, named by their JSON names (the cloud API's),
// with their values formatted. Pointers are followed; unexported fields
// are skipped.
func Diff(from, to any) []Field {
	a, b := reflect.Indirect(reflect.ValueOf(from)), reflect.Indirect(reflect.ValueOf(to))
	if a.Type() != b.Type() || a.Kind() != reflect.Struct {
		panic(fmt.Sprintf("loadbalancers.Diff: %T and %T are not the same struct type", from, to))
	}
	var out []Field
	for i := range a.NumField() {
		sf := a.Type().Field(i)
		if !sf.IsExported() {
			continue
		}
		x, y := a.Field(i).Interface(), b.Field(i).Interface()
		if reflect.DeepEqual(x, y) {
			continue
		}
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			name = sf.Name
		}
		out = append(out, Field{Name: name, From: show(a.Field(i)), To: show(b.Field(i))})
	}
	return out
}

// show formats a field's value for a plan: pointers followed, nil as
// "none".
func show(v reflect.Value) string {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return "none"
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Map:
		if v.Len() == 0 {
			return "none"
		}
	case reflect.String:
		if v.String() == "" {
			return `""`
		}
	}
	return fmt.Sprintf("%+v", v.Interface())
}
