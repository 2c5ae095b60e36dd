// Package annotations validates the Service annotations a driver supports,
// the same way for every cloud: each annotation is declared once with its
// valid values and meaning (which also feed the docs). An invalid value is
// a problem: all problems are reported together, as Warning events on the
// Service, and nothing is changed in the cloud. An annotation under the
// driver's prefixes that the driver does not know is a warning, with a
// "did you mean", and is otherwise ignored, as the upstream CCMs ignore
// it: a key polyccm lacks must not freeze a Service that works upstream.
package annotations

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/redact"
	"github.com/polyccm/polyccm/core/suggest"
)

// Spec declares one supported annotation.
type Spec struct {
	Key string
	// Valid describes the accepted values, e.g. "true or false".
	Valid string
	// Default is what applies when the annotation is absent ("" = none).
	Default string
	// Doc says what it does, for the docs table.
	Doc   string
	parse func(string) (any, error)
}

// Bool accepts true or false.
func Bool(key, def, doc string) Spec {
	return Spec{Key: key, Valid: "true or false", Default: def, Doc: doc, parse: func(s string) (any, error) {
		return strconv.ParseBool(strings.TrimSpace(s))
	}}
}

// Int accepts an integer in [lo, hi].
func Int(key string, lo, hi int, def, doc string) Spec {
	return Spec{Key: key, Valid: fmt.Sprintf("an integer from %d to %d", lo, hi), Default: def, Doc: doc, parse: func(s string) (any, error) {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < lo || n > hi {
			return nil, fmt.Errorf("out of range")
		}
		return n, nil
	}}
}

// Enum accepts one of values, case-insensitively; the canonical spelling is
// returned.
func Enum(key string, values []string, def, doc string) Spec {
	return Spec{Key: key, Valid: oneOf(values), Default: def, Doc: doc, parse: func(s string) (any, error) {
		for _, v := range values {
			if strings.EqualFold(strings.TrimSpace(s), v) {
				return v, nil
			}
		}
		return nil, fmt.Errorf("not one of them")
	}}
}

// Ports accepts a comma-separated list of ports.
func Ports(key, doc string) Spec {
	return Spec{Key: key, Valid: "a comma-separated list of ports (1-65535), e.g. 443,8443", Doc: doc, parse: func(s string) (any, error) {
		var ports []int
		for _, p := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil || n < 1 || n > 65535 {
				return nil, fmt.Errorf("bad port %q", strings.TrimSpace(p))
			}
			ports = append(ports, n)
		}
		return ports, nil
	}}
}

// Present accepts any value, even an empty one: only whether the key is
// given counts, as for some upstream CCMs' switches.
func Present(key, doc string) Spec {
	return Spec{Key: key, Valid: "any value, even empty: the key's presence counts", Doc: doc, parse: func(string) (any, error) {
		return true, nil
	}}
}

// String accepts any value check allows (nil: any non-empty value).
func String(key, valid, def, doc string, check func(string) error) Spec {
	return Spec{Key: key, Valid: valid, Default: def, Doc: doc, parse: func(s string) (any, error) {
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, fmt.Errorf("empty")
		}
		if check != nil {
			if err := check(s); err != nil {
				return nil, err
			}
		}
		return s, nil
	}}
}

// List accepts a comma-separated list whose items check allows.
func List(key, valid, doc string, check func(string) error) Spec {
	return Spec{Key: key, Valid: valid, Doc: doc, parse: func(s string) (any, error) {
		var items []string
		for _, it := range strings.Split(s, ",") {
			it = strings.TrimSpace(it)
			if it == "" {
				continue
			}
			if err := check(it); err != nil {
				return nil, fmt.Errorf("%q: %v", it, err)
			}
			items = append(items, it)
		}
		return items, nil
	}}
}

// Map accepts comma-separated key=value pairs whose keys check allows.
func Map(key, valid, doc string, check func(k, v string) error) Spec {
	return Spec{Key: key, Valid: valid, Doc: doc, parse: func(s string) (any, error) {
		m := map[string]string{}
		for _, it := range strings.Split(s, ",") {
			it = strings.TrimSpace(it)
			if it == "" {
				continue
			}
			k, v, ok := strings.Cut(it, "=")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if !ok || k == "" {
				return nil, fmt.Errorf("%q is not key=value", it)
			}
			if check != nil {
				if err := check(k, v); err != nil {
					return nil, fmt.Errorf("%q: %v", it, err)
				}
			}
			m[k] = v
		}
		return m, nil
	}}
}

// CIDROrIP checks "ip:ADDRESS" or "cidr:PREFIX" firewall rule items.
func CIDROrIP(item string) error {
	kind, val, ok := strings.Cut(item, ":")
	switch {
	case !ok:
		return fmt.Errorf("want ip:ADDRESS or cidr:PREFIX")
	case kind == "ip" && net.ParseIP(val) != nil:
		return nil
	case kind == "cidr":
		if _, _, err := net.ParseCIDR(val); err == nil {
			return nil
		}
	}
	return fmt.Errorf("want ip:ADDRESS or cidr:PREFIX")
}

func oneOf(values []string) string {
	switch len(values) {
	case 1:
		return values[0]
	case 2:
		return values[0] + " or " + values[1]
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}

// Set is the annotations one driver supports.
type Set struct {
	prefixes []string
	specs    map[string]Spec
}

// NewSet declares the annotations under prefixes (e.g.
// "service.beta.kubernetes.io/do-loadbalancer-") that a driver owns. An
// annotation starting with a prefix but not declared is an error.
func NewSet(prefixes []string, specs ...Spec) *Set {
	s := &Set{prefixes: prefixes, specs: map[string]Spec{}}
	for _, sp := range specs {
		if sp.parse == nil {
			panic("annotations: spec " + sp.Key + " has no parser; build it with Bool, Int, Enum, ...")
		}
		if _, dup := s.specs[sp.Key]; dup {
			panic("annotations: " + sp.Key + " declared twice")
		}
		s.specs[sp.Key] = sp
	}
	return s
}

// Specs returns the declared annotations sorted by key, for docs.
func (s *Set) Specs() []Spec {
	out := make([]Spec, 0, len(s.specs))
	for _, sp := range s.specs {
		out = append(out, sp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Owns reports whether key falls under one of the set's prefixes.
func (s *Set) Owns(key string) bool {
	for _, p := range s.prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// Parse validates the annotations of svc. The Values it returns collect
// further, cross-annotation problems (Fail); call Err when done.
func (s *Set) Parse(svc *v1.Service) *Values {
	v := &Values{svc: svc, set: s, vals: map[string]any{}}
	keys := make([]string, 0, len(svc.Annotations))
	for k := range svc.Annotations {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		raw := svc.Annotations[k]
		sp, known := s.specs[k]
		if !known {
			if s.Owns(k) {
				msg := "unknown annotation, ignored"
				if near := suggest.Closest(k, s.keys(), 6); near != "" {
					msg += "; did you mean " + near + "?"
				}
				v.warnings = append(v.warnings, Problem{Key: k, Msg: msg})
			}
			continue
		}
		val, err := sp.parse(raw)
		if err != nil {
			v.problems = append(v.problems, Problem{Key: k, Msg: fmt.Sprintf("%s is not valid: want %s", Quote(raw), sp.Valid)})
			continue
		}
		v.vals[k] = val
	}
	return v
}

func (s *Set) keys() []string {
	out := make([]string, 0, len(s.specs))
	for k := range s.specs {
		out = append(out, k)
	}
	return out
}

// Values are the parsed annotations of one Service.
type Values struct {
	svc      *v1.Service
	set      *Set
	vals     map[string]any
	problems []Problem // the cloud's load balancer must not change
	warnings []Problem // said, and otherwise ignored
	notes    []Problem // ignored as the upstream CCM ignores them: said, not warned
}

// Warnings are the annotations ignored, each with why: keys under the
// driver's prefixes it does not know.
func (v *Values) Warnings() []Problem { return v.warnings }

// Notes are the annotations ignored by design, each with why.
func (v *Values) Notes() []Problem { return v.notes }

// ReasonIgnored is the event reason for an annotation that is ignored.
const ReasonIgnored = "UnknownLoadBalancerAnnotation"

// ReasonNotApplied is the (Normal) event reason for an annotation that is
// ignored by design, as the upstream CCM ignores it.
const ReasonNotApplied = "LoadBalancerAnnotationNotApplied"

// Report records a Warning event on the Service for each ignored
// annotation and for each problem, and returns Err: the one step every
// driver takes after building its desired load balancer and before any
// cloud call.
func (v *Values) Report(rec record.EventRecorder) error {
	if rec != nil {
		for _, w := range v.warnings {
			rec.Event(v.svc, v1.EventTypeWarning, ReasonIgnored, Clip(w.Key+": "+w.Msg))
		}
		for _, n := range v.notes {
			rec.Event(v.svc, v1.EventTypeNormal, ReasonNotApplied, Clip(n.Key+": "+n.Msg))
		}
	}
	err := v.Err()
	if inv, ok := err.(*InvalidError); ok {
		inv.Record(rec, v.svc)
	}
	return err
}

// Has reports whether key was given (and valid).
func (v *Values) Has(key string) bool { _, ok := v.vals[key]; return ok }

// Bool returns the value of a Bool annotation, or def.
func (v *Values) Bool(key string, def bool) bool {
	if b, ok := v.vals[key].(bool); ok {
		return b
	}
	return def
}

// Int returns the value of an Int annotation, or def.
func (v *Values) Int(key string, def int) int {
	if n, ok := v.vals[key].(int); ok {
		return n
	}
	return def
}

// String returns the value of an Enum or String annotation, or def.
func (v *Values) String(key, def string) string {
	if s, ok := v.vals[key].(string); ok {
		return s
	}
	return def
}

// Ports returns the value of a Ports annotation.
func (v *Values) Ports(key string) []int {
	p, _ := v.vals[key].([]int)
	return p
}

// List returns the value of a List annotation.
func (v *Values) List(key string) []string {
	l, _ := v.vals[key].([]string)
	return l
}

// Map returns the value of a Map annotation.
func (v *Values) Map(key string) map[string]string {
	m, _ := v.vals[key].(map[string]string)
	return m
}

// Ignore drops an annotation the Service gives but that does not apply to
// it (a key of another kind of load balancer): its value, valid or not, is
// neither used nor a problem, and a warning says why. Nothing if absent.
func (v *Values) Ignore(key, why string) {
	if v.drop(key) {
		v.warnings = append(v.warnings, Problem{Key: key, Msg: why + ", ignored"})
	}
}

// NotApplied drops an annotation as Ignore does, where ignoring it is what
// the upstream CCM does too (e.g. a health check path without the override
// that enables it): a Normal event says so, not a Warning.
func (v *Values) NotApplied(key, why string) {
	if v.drop(key) {
		v.notes = append(v.notes, Problem{Key: key, Msg: why + ", not applied"})
	}
}

// Note says something about an annotation that is applied, in a Normal
// event: e.g. that it means what the upstream CCM makes it mean, which may
// surprise.
func (v *Values) Note(key, msg string) {
	v.notes = append(v.notes, Problem{Key: key, Msg: msg})
}

// drop forgets key's value and its problems; false if it was not given.
func (v *Values) drop(key string) bool {
	if _, ok := v.svc.Annotations[key]; !ok {
		return false
	}
	delete(v.vals, key)
	kept := v.problems[:0]
	for _, p := range v.problems {
		if p.Key != key {
			kept = append(kept, p)
		}
	}
	v.problems = kept
	return true
}

// Fail records a problem found by the driver, e.g. two annotations that
// contradict each other.
func (v *Values) Fail(key, format string, args ...any) {
	v.problems = append(v.problems, Problem{Key: key, Msg: fmt.Sprintf(format, args...)})
}

// Err returns every problem found, or nil.
func (v *Values) Err() error {
	if len(v.problems) == 0 {
		return nil
	}
	return &InvalidError{Service: v.svc.Namespace + "/" + v.svc.Name, Problems: v.problems}
}

// Problem is one thing wrong with one annotation (or Service field).
type Problem struct {
	Key string
	Msg string
}

// InvalidError says a Service's load balancer settings are invalid and that
// nothing was changed in the cloud.
type InvalidError struct {
	Service  string
	Problems []Problem
}

func (e *InvalidError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Key + ": " + p.Msg
	}
	return fmt.Sprintf("Service %s: %s; nothing was changed in the cloud: fix the Service and polyccm will retry", e.Service, strings.Join(parts, "; "))
}

// Reason is the event reason for invalid settings.
const Reason = "InvalidLoadBalancerConfig"

// Record emits one Warning event per problem on svc.
func (e *InvalidError) Record(rec record.EventRecorder, svc *v1.Service) {
	if rec == nil {
		return
	}
	for _, p := range e.Problems {
		rec.Event(svc, v1.EventTypeWarning, Reason, Clip(fmt.Sprintf("%s: %s; the load balancer was not changed", p.Key, p.Msg)))
	}
}

// quoteRunes is how much of a value Quote shows.
const quoteRunes = 100

// Quote quotes a value from a Service for a message, cut to its first
// 100 characters: a 200 KB annotation must not make 200 KB events on every
// retry.
func Quote(s string) string {
	r := []rune(s)
	if len(r) <= quoteRunes {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(string(r[:quoteRunes])), len(s))
}

// Clip makes msg fit for an event (core/redact.Event: credentials masked,
// the clouds' request IDs left out, at most redact.MaxEvent bytes) and,
// when that changed it, logs it whole, as the event's tail promises. The
// recorder polyccm hands drivers does the same to every message; Clip is
// for messages recorded before they reach it, or through another.
func Clip(msg string) string {
	out := redact.Event(msg)
	if out != msg {
		klog.InfoS("Event message shortened; the whole message", "message", msg)
	}
	return out
}

// MarkdownTable renders the set as the table the docs carry (a test keeps
// the docs in step with the code).
func (s *Set) MarkdownTable() string {
	var b strings.Builder
	b.WriteString("| annotation | values | default | what it does |\n|---|---|---|---|\n")
	esc := func(s string) string { return strings.ReplaceAll(s, "|", "\\|") }
	for _, sp := range s.Specs() {
		def := sp.Default
		if def == "" {
			def = "—"
		} else {
			def = "`" + def + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", sp.Key, esc(sp.Valid), esc(def), esc(sp.Doc))
	}
	return b.String()
}
