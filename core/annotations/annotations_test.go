package annotations_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"github.com/polyccm/polyccm/core/annotations"
)

const pfx = "example.com/lb-"

// testSet declares one annotation of every kind.
func testSet() *annotations.Set {
	return annotations.NewSet([]string{pfx, "other.example.com/lb-"},
		annotations.Bool(pfx+"enabled", "false", "Turns it on."),
		annotations.Int(pfx+"count", 1, 10, "1", "How many."),
		annotations.Enum(pfx+"protocol", []string{"tcp", "http", "https"}, "tcp", "Protocol."),
		annotations.Enum(pfx+"one", []string{"only"}, "only", "One value."),
		annotations.Enum(pfx+"two", []string{"a", "b"}, "a", "Two values."),
		annotations.Ports(pfx+"ports", "Ports."),
		annotations.String(pfx+"name", "a name", "", "Name.", nil),
		annotations.String(pfx+"path", "an absolute path", "/", "Path.", func(s string) error {
			if !strings.HasPrefix(s, "/") {
				return errors.New("not absolute")
			}
			return nil
		}),
		annotations.List(pfx+"rules", "comma-separated ip:ADDRESS or cidr:PREFIX", "Rules.", annotations.CIDROrIP),
		annotations.Bool("other.example.com/lb-flag", "false", "Under the second prefix."),
	)
}

func service(ann map[string]string) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: ann}}
}

// problems returns the problems of v as "key: msg", or nil.
func problems(t *testing.T, v *annotations.Values) []string {
	t.Helper()
	err := v.Err()
	if err == nil {
		return nil
	}
	var inv *annotations.InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("Err() = %T (%v), want *annotations.InvalidError", err, err)
	}
	var out []string
	for _, p := range inv.Problems {
		out = append(out, p.Key+": "+p.Msg)
	}
	return out
}

func parse(t *testing.T, key, value string) (*annotations.Values, []string) {
	t.Helper()
	v := testSet().Parse(service(map[string]string{key: value}))
	return v, problems(t, v)
}

func TestBool(t *testing.T) {
	key := pfx + "enabled"
	for _, c := range []struct {
		in   string
		want bool
	}{{"true", true}, {"false", false}, {" True ", true}, {"1", true}, {"0", false}} {
		v, p := parse(t, key, c.in)
		if p != nil || !v.Has(key) || v.Bool(key, !c.want) != c.want {
			t.Errorf("%q: Bool = %v, problems %q; want %v", c.in, v.Bool(key, !c.want), p, c.want)
		}
	}
	v, p := parse(t, key, "yes")
	if v.Has(key) || v.Bool(key, true) != true {
		t.Errorf("an invalid value must not count as given")
	}
	want := []string{key + `: "yes" is not valid: want true or false`}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("problems = %q, want %q", p, want)
	}
	// Absent: the default.
	v = testSet().Parse(service(nil))
	if v.Has(key) || v.Bool(key, true) != true || v.Bool(key, false) != false {
		t.Errorf("absent Bool must give the default")
	}
}

func TestInt(t *testing.T) {
	key := pfx + "count"
	for _, c := range []struct {
		in   string
		want int
	}{{"1", 1}, {"10", 10}, {" 5 ", 5}} {
		v, p := parse(t, key, c.in)
		if p != nil || v.Int(key, -1) != c.want {
			t.Errorf("%q: Int = %d, problems %q; want %d", c.in, v.Int(key, -1), p, c.want)
		}
	}
	for _, bad := range []string{"0", "11", "-1", "abc", "", "2.5"} {
		v, p := parse(t, key, bad)
		want := []string{fmt.Sprintf("%s: %q is not valid: want an integer from 1 to 10", key, bad)}
		if !reflect.DeepEqual(p, want) {
			t.Errorf("%q: problems = %q, want %q", bad, p, want)
		}
		if v.Int(key, 7) != 7 {
			t.Errorf("%q: an invalid Int must give the default", bad)
		}
	}
}

func TestEnum(t *testing.T) {
	key := pfx + "protocol"
	for _, c := range []struct{ in, want string }{{"tcp", "tcp"}, {"HTTP", "http"}, {" Https ", "https"}} {
		v, p := parse(t, key, c.in)
		if p != nil || v.String(key, "def") != c.want {
			t.Errorf("%q: String = %q, problems %q; want canonical %q", c.in, v.String(key, "def"), p, c.want)
		}
	}
	_, p := parse(t, key, "udp")
	if want := []string{key + `: "udp" is not valid: want tcp, http or https`}; !reflect.DeepEqual(p, want) {
		t.Errorf("problems = %q, want %q", p, want)
	}
	// The "valid values" wording for one and two values.
	_, p = parse(t, pfx+"one", "x")
	if want := []string{pfx + `one: "x" is not valid: want only`}; !reflect.DeepEqual(p, want) {
		t.Errorf("problems = %q, want %q", p, want)
	}
	_, p = parse(t, pfx+"two", "x")
	if want := []string{pfx + `two: "x" is not valid: want a or b`}; !reflect.DeepEqual(p, want) {
		t.Errorf("problems = %q, want %q", p, want)
	}
}

func TestPorts(t *testing.T) {
	key := pfx + "ports"
	v, p := parse(t, key, "443, 8443,1,65535")
	if p != nil || !reflect.DeepEqual(v.Ports(key), []int{443, 8443, 1, 65535}) {
		t.Errorf("Ports = %v, problems %q", v.Ports(key), p)
	}
	for _, bad := range []string{"0", "65536", "80,abc", "", "80,,443", "-1"} {
		v, p := parse(t, key, bad)
		want := []string{fmt.Sprintf("%s: %q is not valid: want a comma-separated list of ports (1-65535), e.g. 443,8443", key, bad)}
		if !reflect.DeepEqual(p, want) {
			t.Errorf("%q: problems = %q, want %q", bad, p, want)
		}
		if v.Ports(key) != nil {
			t.Errorf("%q: Ports = %v, want nil", bad, v.Ports(key))
		}
	}
}

func TestString(t *testing.T) {
	name, path := pfx+"name", pfx+"path"
	v, p := parse(t, name, "  anything goes ")
	if p != nil || v.String(name, "") != "anything goes" {
		t.Errorf("String = %q, problems %q; want it trimmed", v.String(name, ""), p)
	}
	_, p = parse(t, name, "   ")
	if want := []string{name + `: "   " is not valid: want a name`}; !reflect.DeepEqual(p, want) {
		t.Errorf("empty: problems = %q, want %q", p, want)
	}
	v, p = parse(t, path, "/healthz")
	if p != nil || v.String(path, "/") != "/healthz" {
		t.Errorf("String = %q, problems %q", v.String(path, "/"), p)
	}
	v, p = parse(t, path, "healthz")
	if want := []string{path + `: "healthz" is not valid: want an absolute path`}; !reflect.DeepEqual(p, want) {
		t.Errorf("check: problems = %q, want %q", p, want)
	}
	if v.String(path, "/") != "/" {
		t.Errorf("an invalid String must give the default")
	}
}

func TestList(t *testing.T) {
	key := pfx + "rules"
	v, p := parse(t, key, "ip:1.2.3.4, cidr:10.0.0.0/8,,ip:2001:db8::1")
	want := []string{"ip:1.2.3.4", "cidr:10.0.0.0/8", "ip:2001:db8::1"}
	if p != nil || !reflect.DeepEqual(v.List(key), want) {
		t.Errorf("List = %q, problems %q; want %q", v.List(key), p, want)
	}
	v, p = parse(t, key, "ip:1.2.3.4,10.0.0.0/8")
	if wantP := []string{key + `: "ip:1.2.3.4,10.0.0.0/8" is not valid: want comma-separated ip:ADDRESS or cidr:PREFIX`}; !reflect.DeepEqual(p, wantP) {
		t.Errorf("problems = %q, want %q", p, wantP)
	}
	if v.List(key) != nil || v.Has(key) {
		t.Errorf("an invalid List must not count as given")
	}
}

func TestCIDROrIP(t *testing.T) {
	for _, ok := range []string{"ip:1.2.3.4", "ip:2001:db8::1", "cidr:10.0.0.0/8", "cidr:2001:db8::/32", "cidr:1.2.3.4/32"} {
		if err := annotations.CIDROrIP(ok); err != nil {
			t.Errorf("CIDROrIP(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"1.2.3.4", "10.0.0.0/8", "ip:", "ip:300.1.2.3", "ip:10.0.0.0/8", "cidr:10.0.0.0", "cidr:10.0.0.0/33", "net:10.0.0.0/8", "IP:1.2.3.4", ""} {
		err := annotations.CIDROrIP(bad)
		if err == nil || !strings.Contains(err.Error(), "want ip:ADDRESS or cidr:PREFIX") {
			t.Errorf("CIDROrIP(%q) = %v, want the expected forms", bad, err)
		}
	}
}

func TestUnknownAnnotations(t *testing.T) {
	v := testSet().Parse(service(map[string]string{
		pfx + "protocl":                  "http",  // near miss
		pfx + "something-else-entirely!": "x",     // far
		"other.example.com/lb-flgs":      "true",  // near miss under the second prefix
		"example.com/unrelated":          "1",     // not under a prefix
		"kubernetes.io/description":      "hi",    // not under a prefix
		"example.com/lb":                 "short", // not under the prefix either (no dash)
	}))
	// Unknown keys under the prefixes are warnings, never problems: the
	// upstream CCMs ignore them, and a key polyccm lacks must not freeze a
	// Service that works upstream.
	if err := v.Err(); err != nil {
		t.Errorf("Err() = %v, want nil: unknown annotations are not problems", err)
	}
	var got []string
	for _, w := range v.Warnings() {
		got = append(got, w.Key+": "+w.Msg)
	}
	want := []string{
		pfx + "protocl: unknown annotation, ignored; did you mean " + pfx + "protocol?",
		pfx + "something-else-entirely!: unknown annotation, ignored",
		"other.example.com/lb-flgs: unknown annotation, ignored; did you mean other.example.com/lb-flag?",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("warnings =\n%q\nwant\n%q", got, want)
	}
}

// Report says every warning and every problem, and returns the problems
// only.
func TestReport(t *testing.T) {
	svc := service(map[string]string{pfx + "protocl": "x"})
	rec := record.NewFakeRecorder(10)
	if err := testSet().Parse(svc).Report(rec); err != nil {
		t.Errorf("Report = %v with only an unknown key", err)
	}
	svc = service(map[string]string{pfx + "protocl": "x", pfx + "count": "0"})
	if err := testSet().Parse(svc).Report(rec); err == nil {
		t.Error("Report = nil with an invalid value")
	}
	close(rec.Events)
	var events []string
	for e := range rec.Events {
		events = append(events, e)
	}
	want := []string{
		"Warning " + annotations.ReasonIgnored + " " + pfx + "protocl: unknown annotation, ignored; did you mean " + pfx + "protocol?",
		"Warning " + annotations.ReasonIgnored + " " + pfx + "protocl: unknown annotation, ignored; did you mean " + pfx + "protocol?",
		"Warning " + annotations.Reason + " " + pfx + `count: "0" is not valid: want an integer from 1 to 10; the load balancer was not changed`,
	}
	if !reflect.DeepEqual(events, want) {
		t.Errorf("events =\n%q\nwant\n%q", events, want)
	}
}

func TestForeignAnnotationsIgnored(t *testing.T) {
	v := testSet().Parse(service(map[string]string{
		"example.com/other": "whatever",
		"kubectl.kubernetes.io/last-applied-configuration": "{}",
		"service.beta.kubernetes.io/aws-load-balancer-x":   "y",
	}))
	if err := v.Err(); err != nil {
		t.Errorf("Err() = %v, want nil", err)
	}
	s := testSet()
	if !s.Owns(pfx+"x") || !s.Owns("other.example.com/lb-y") || s.Owns("example.com/other") {
		t.Errorf("Owns does not follow the prefixes")
	}
}

func TestFailAndErr(t *testing.T) {
	v := testSet().Parse(service(map[string]string{pfx + "count": "99", pfx + "enabled": "true"}))
	v.Fail(pfx+"enabled", "needs %s too", "something")
	v.Fail("spec.ports", "port %d is odd", 7)
	err := v.Err()
	var inv *annotations.InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("Err() = %T %v", err, err)
	}
	if inv.Service != "shop/web" || len(inv.Problems) != 3 {
		t.Fatalf("InvalidError = %+v", inv)
	}
	msg := err.Error()
	for _, frag := range []string{
		"Service shop/web: ",
		pfx + `count: "99" is not valid: want an integer from 1 to 10`,
		pfx + "enabled: needs something too",
		"spec.ports: port 7 is odd",
		"nothing was changed in the cloud",
	} {
		if !strings.Contains(msg, frag) {
			t.Errorf("error %q lacks %q", msg, frag)
		}
	}
	if testSet().Parse(service(nil)).Err() != nil {
		t.Errorf("no annotations: Err() must be nil")
	}
}

func TestRecord(t *testing.T) {
	svc := service(map[string]string{pfx + "count": "0", pfx + "path": "x"})
	v := testSet().Parse(svc)
	v.Fail("spec.ports", "bad")
	var inv *annotations.InvalidError
	if !errors.As(v.Err(), &inv) {
		t.Fatal("want an InvalidError")
	}
	rec := record.NewFakeRecorder(100)
	inv.Record(rec, svc)
	close(rec.Events)
	var events []string
	for e := range rec.Events {
		events = append(events, e)
	}
	if len(events) != 3 {
		t.Fatalf("%d events, want one per problem: %q", len(events), events)
	}
	for i, p := range inv.Problems {
		want := "Warning " + annotations.Reason + " " + p.Key + ": " + p.Msg + "; the load balancer was not changed"
		if events[i] != want {
			t.Errorf("event %d = %q, want %q", i, events[i], want)
		}
	}
	if annotations.Reason != "InvalidLoadBalancerConfig" {
		t.Errorf("Reason = %q", annotations.Reason)
	}
	inv.Record(nil, svc) // no recorder: no panic
}

func TestNewSetPanics(t *testing.T) {
	mustPanic := func(name, want string, f func()) {
		t.Helper()
		defer func() {
			r := recover()
			if r == nil || !strings.Contains(fmt.Sprint(r), want) {
				t.Errorf("%s: panic = %v, want one mentioning %q", name, r, want)
			}
		}()
		f()
	}
	mustPanic("duplicate", pfx+"a declared twice", func() {
		annotations.NewSet([]string{pfx}, annotations.Bool(pfx+"a", "", ""), annotations.Int(pfx+"a", 1, 2, "", ""))
	})
	mustPanic("no parser", "has no parser", func() {
		annotations.NewSet([]string{pfx}, annotations.Spec{Key: pfx + "raw"})
	})
}

func TestSpecsSorted(t *testing.T) {
	specs := testSet().Specs()
	var keys []string
	for _, s := range specs {
		keys = append(keys, s.Key)
	}
	want := []string{
		pfx + "count", pfx + "enabled", pfx + "name", pfx + "one", pfx + "path",
		pfx + "ports", pfx + "protocol", pfx + "rules", pfx + "two", "other.example.com/lb-flag",
	}
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("Specs keys = %q, want %q", keys, want)
	}
	for _, s := range specs {
		if s.Valid == "" || s.Doc == "" {
			t.Errorf("spec %s lacks Valid or Doc: %+v", s.Key, s)
		}
	}
	if specs[0].Default != "1" || specs[0].Valid != "an integer from 1 to 10" {
		t.Errorf("count spec = %+v", specs[0])
	}
}

func TestMarkdownTable(t *testing.T) {
	s := annotations.NewSet([]string{pfx},
		annotations.Enum(pfx+"b", []string{"x", "y"}, "x", "Pick | one."),
		annotations.Ports(pfx+"a", "Ports."),
	)
	want := "| annotation | values | default | what it does |\n|---|---|---|---|\n" +
		"| `" + pfx + "a` | a comma-separated list of ports (1-65535), e.g. 443,8443 | — | Ports. |\n" +
		"| `" + pfx + "b` | x or y | `x` | Pick \\| one. |\n"
	if got := s.MarkdownTable(); got != want {
		t.Errorf("MarkdownTable =\n%s\nwant\n%s", got, want)
	}
}

// A huge annotation value is quoted short in events: 200 KB must not make
// 200 KB events on every retry.
func TestLongValuesAreCutInEvents(t *testing.T) {
	huge := strings.Repeat("9", 200_000)
	err := testSet().Parse(service(map[string]string{pfx + "count": huge, pfx + "protocol": "udp"})).Err()
	var inv *annotations.InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("Err() = %v", err)
	}
	rec := record.NewFakeRecorder(10)
	inv.Record(rec, service(nil))
	close(rec.Events)
	n := 0
	for ev := range rec.Events {
		n++
		if len(ev) > 1100 {
			t.Errorf("event of %d bytes", len(ev))
		}
		if strings.Contains(ev, pfx+"count") && !strings.Contains(ev, "(200000 bytes)") {
			t.Errorf("event %q does not say how long the value was", ev)
		}
	}
	if n != 2 {
		t.Errorf("%d events, want 2", n)
	}
	if got := annotations.Quote("short"); got != `"short"` {
		t.Errorf("Quote(short) = %s", got)
	}
	long := annotations.Clip(strings.Repeat("é", 2000))
	if len(long) > 1024 || !strings.HasSuffix(long, "bytes more; see polyccm's log)") || !utf8.ValidString(long) {
		t.Errorf("Clip gave %d bytes, valid UTF-8 %v", len(long), utf8.ValidString(long))
	}
}

// Ignore drops a given key, valid or not, with one warning; an absent key
// says nothing.
func TestIgnore(t *testing.T) {
	s := annotations.NewSet([]string{pfx}, annotations.Int(pfx+"n", 1, 9, "1", "N."), annotations.Bool(pfx+"b", "false", "B."))
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{pfx + "n": "not a number", pfx + "b": "true"}}}
	v := s.Parse(svc)
	v.Ignore(pfx+"n", "not for this kind")
	v.Ignore(pfx+"absent", "never said")
	if err := v.Err(); err != nil {
		t.Errorf("Err = %v, want the ignored key's problem gone", err)
	}
	if w := v.Warnings(); len(w) != 1 || w[0].Key != pfx+"n" || w[0].Msg != "not for this kind, ignored" {
		t.Errorf("warnings %+v", w)
	}
	if !v.Bool(pfx+"b", false) {
		t.Error("the other key was lost")
	}
}

// NotApplied drops a key as Ignore does, but says so in a Normal event,
// not a Warning: the upstream CCM ignores it too.
func TestNotApplied(t *testing.T) {
	s := annotations.NewSet([]string{pfx}, annotations.Int(pfx+"n", 1, 9, "1", "N."))
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{pfx + "n": "not a number"}}}
	v := s.Parse(svc)
	v.NotApplied(pfx+"n", "only with the override")
	v.NotApplied(pfx+"absent", "never said")
	rec := record.NewFakeRecorder(10)
	if err := v.Report(rec); err != nil {
		t.Errorf("Report = %v, want the key's problem gone", err)
	}
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	want := "Normal " + annotations.ReasonNotApplied + " " + pfx + "n: only with the override, not applied"
	if len(got) != 1 || got[0] != want {
		t.Errorf("events %q, want [%q]", got, want)
	}
	if len(v.Warnings()) != 0 || len(v.Notes()) != 1 {
		t.Errorf("warnings %+v, notes %+v", v.Warnings(), v.Notes())
	}
}
