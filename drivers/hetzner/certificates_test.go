package hetzner

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/polyccm/polyccm/core/annotations"
	hfake "github.com/polyccm/polyccm/test/fakecloud/hetzner"
)

const nsLabel = "polyccm.io/namespaces"

func TestNamespaceListed(t *testing.T) {
	for _, tc := range []struct {
		value, ns string
		want      bool
	}{
		{"shop", "shop", true},
		{"blog.shop", "shop", true},
		{"shop.blog", "blog", true},
		{"shopping", "shop", false},
		{"myshop.blog", "shop", false},
		{"", "shop", false},
		{"", "", false},
	} {
		if got := namespaceListed(tc.value, tc.ns); got != tc.want {
			t.Errorf("namespaceListed(%q, %q) = %v, want %v", tc.value, tc.ns, got, tc.want)
		}
	}
}

// certEnv is the fake with four uploaded certificates, labelled for the
// test Service's namespace (shop), for it and another, for another only,
// and not at all.
type certEnv struct {
	*lbEnv
	mine, shared, theirs, bare int64
}

func newCertEnv(t *testing.T, label string) *certEnv {
	e := &certEnv{lbEnv: newLBEnvWith(t, func(c *LoadBalancerConfig) { c.CertificateNamespaceLabel = label })}
	add := func(name, namespaces string) int64 {
		id := e.fake.AddUploadedCertificate(name, name+".example.com")
		labels := map[string]string{"team": "web"}
		if namespaces != "" {
			labels[nsLabel] = namespaces
		}
		e.fake.SetCertificateLabels(id, labels)
		return id
	}
	e.mine, e.shared, e.theirs, e.bare = add("mine", "shop"), add("shared", "blog.shop"), add("theirs", "blog"), add("bare", "")
	return e
}

func https(certs string) map[string]string {
	return map[string]string{AnnProtocol: "https", AnnHTTPCertificates: certs}
}

// events returns the recorded events of a reason, as "Type message".
func (e *lbEnv) events(reason string) []string {
	var out []string
	for ev := range drain(e.rec) {
		typ, rest, _ := strings.Cut(ev, " ")
		if r, msg, ok := strings.Cut(rest, " "); ok && r == reason {
			out = append(out, typ+" "+msg)
		}
	}
	slices.Sort(out)
	return out
}

func (e *lbEnv) lbCerts() []int64 {
	e.t.Helper()
	var out []int64
	for _, s := range e.only().Services {
		if s.HTTP != nil {
			out = append(out, s.HTTP.Certificates...)
		}
	}
	slices.Sort(out)
	return out
}

// With certificateNamespaceLabel set, a Service uses only certificates
// labelled for its namespace; any other, by name or ID, is refused with a
// Warning naming it, and the load balancer is not changed at all.
func TestFakeCertificatesLimitedToTheNamespace(t *testing.T) {
	e := newCertEnv(t, nsLabel)
	id := func(v int64) string { return strconv.FormatInt(v, 10) }

	for _, tc := range []struct{ name, refs, refused string }{
		{"by name", "theirs", fmt.Sprintf("theirs (%d)", e.theirs)},
		{"by ID", id(e.bare), fmt.Sprintf("bare (%d)", e.bare)},
		{"one of two", "mine," + id(e.theirs), fmt.Sprintf("theirs (%d)", e.theirs)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := testService(https(tc.refs), tcpPort(443, 30443))
			_, err := e.ensure(svc)
			var inv *annotations.InvalidError
			if !errors.As(err, &inv) || len(e.fake.LoadBalancers()) != 0 || len(e.writes()) != 0 {
				t.Fatalf("EnsureLoadBalancer = %v with %d load balancers and writes %v; want a refusal and nothing made", err, len(e.fake.LoadBalancers()), e.writes())
			}
			evs := e.events(ReasonCertificateNotAllowed)
			want := "Warning " + AnnHTTPCertificates + ": certificate " + tc.refused + " is not allowed in namespace shop"
			if len(evs) != 1 || !strings.HasPrefix(evs[0], want) || !strings.Contains(evs[0], "add shop to that label") ||
				!strings.Contains(evs[0], nsLabel+"=shop") || !strings.HasSuffix(evs[0], "the load balancer was not changed") {
				t.Errorf("events %q, want one starting %q and saying what to set", evs, want)
			}
			// Which namespaces may use it is not told to this one.
			if strings.Contains(evs[0], "blog") {
				t.Errorf("the refusal quotes the certificate's label: %q", evs[0])
			}
		})
	}

	// An ID that names nothing is an invalid setting (its labels cannot
	// be read), not a refusal.
	_, err := e.ensure(testService(https("999999"), tcpPort(443, 30443)))
	if evs := e.events(annotations.Reason); err == nil || len(evs) != 1 || !strings.Contains(evs[0], "no certificate with ID 999999") {
		t.Errorf("an unknown ID: %v, events %q", err, evs)
	}

	// An existing load balancer stays exactly as it is.
	svc := e.service("", nil, tcpPort(443, 30443))
	e.mustEnsure(svc)
	before, writes := e.only(), e.writes()
	svc.Annotations = https("mine,theirs")
	if _, err := e.ensure(svc); err == nil {
		t.Fatal("a refused certificate was used")
	}
	if got := e.only(); !reflect.DeepEqual(got, before) || !sameCounts(e.writes(), writes) {
		t.Errorf("the load balancer changed on a refusal:\n%+v\nwas\n%+v; writes %v, were %v", got, before, e.writes(), writes)
	}
	if evs := e.events(ReasonCertificateNotAllowed); len(evs) != 1 {
		t.Errorf("refusal events %q, want one", evs)
	}

	// Those labelled for the namespace are used, by name or ID.
	svc.Annotations = https("mine," + id(e.shared))
	e.mustEnsure(svc)
	if got, want := e.lbCerts(), []int64{e.mine, e.shared}; !slices.Equal(got, want) {
		t.Errorf("certificates %v, want %v", got, want)
	}
}

// Every set of certificates a load balancer serves is named once in a
// Normal event: on the first sync, when it changes, and again after a
// restart (a load balancer taken over), never on a sync that changes
// nothing.
func TestFakeCertificatesInUseEvent(t *testing.T) {
	e := newCertEnv(t, "")
	lb := func() string { l := e.only(); return fmt.Sprintf("%s (%d)", l.Name, l.ID) }

	// By default any certificate goes, as with hcloud CCM; one given by
	// ID is named too.
	svc := e.service("", https("mine,"+strconv.FormatInt(e.theirs, 10)), tcpPort(443, 30443), tcpPort(8443, 30843))
	e.mustEnsure(svc)
	want := []string{fmt.Sprintf("Normal load balancer %s serves certificates mine (%d), theirs (%d) on ports 443, 8443", lb(), e.mine, e.theirs)}
	if got := e.events(ReasonCertificatesInUse); !slices.Equal(got, want) {
		t.Errorf("first sync: events %q, want %q", got, want)
	}
	e.mustEnsure(svc)
	if got := e.events(ReasonCertificatesInUse); len(got) != 0 {
		t.Errorf("a sync that changed nothing: events %q, want none", got)
	}

	svc.Annotations = https("bare")
	e.mustEnsure(svc)
	want = []string{fmt.Sprintf("Normal load balancer %s serves certificate bare (%d) on ports 443, 8443", lb(), e.bare)}
	if got := e.events(ReasonCertificatesInUse); !slices.Equal(got, want) {
		t.Errorf("after a change: events %q, want %q", got, want)
	}

	// A new process says it once more, without a write.
	e.lbs = e.restart(nil)
	writes := e.writes()
	e.mustEnsure(svc)
	e.mustEnsure(svc)
	if got := e.events(ReasonCertificatesInUse); !slices.Equal(got, want) || !sameCounts(e.writes(), writes) {
		t.Errorf("after a restart: events %q, want %q; writes %v, were %v", got, want, e.writes(), writes)
	}

	// No certificates, no event; using one again is said again.
	svc.Annotations = nil
	e.mustEnsure(svc)
	if got := e.events(ReasonCertificatesInUse); len(got) != 0 {
		t.Errorf("tcp again: events %q", got)
	}
	svc.Annotations = https("bare")
	e.mustEnsure(svc)
	if got := e.events(ReasonCertificatesInUse); !slices.Equal(got, want) {
		t.Errorf("https again: events %q, want %q", got, want)
	}
}

// A Service's own managed certificate is always allowed: polyccm made it
// for the Service, labelled with its UID.
func TestFakeManagedCertificateIsTheServicesOwn(t *testing.T) {
	e := newCertEnv(t, nsLabel)
	svc := e.service("", map[string]string{AnnProtocol: "https", AnnCertificateType: "managed", AnnManagedCertDomains: "shop.example.com"}, tcpPort(443, 30443))
	if _, err := e.ensure(svc); err == nil {
		t.Fatal("the first pass did not wait for the certificate")
	}
	e.mustEnsure(svc)
	var managed hfake.Certificate
	for _, c := range e.fake.Certificates() {
		if c.Labels[LabelServiceUID] == testUID {
			managed = c
		}
	}
	if managed.ID == 0 || managed.Labels[nsLabel] != "" {
		t.Fatalf("managed certificate %+v, want one labelled with the Service UID only", managed)
	}
	if got := e.lbCerts(); !slices.Equal(got, []int64{managed.ID}) {
		t.Errorf("certificates %v, want the managed one %d", got, managed.ID)
	}
	evs := e.events(ReasonCertificatesInUse)
	if len(evs) != 1 || !strings.Contains(evs[0], fmt.Sprintf("certificate %s (%d)", managed.Name, managed.ID)) {
		t.Errorf("events %q, want one naming %s (%d)", evs, managed.Name, managed.ID)
	}
	if evs := e.events(ReasonCertificateNotAllowed); len(evs) != 0 {
		t.Errorf("refusals %q", evs)
	}
}
