package digitalocean

import (
	"context"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/digitalocean/godo"
)

func TestCertificatesListAndGet(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	s.SetClock(func() time.Time { return now })
	var want []string
	for _, name := range []string{"web", "api", "web"} {
		cert := s.AddCertificate(name)
		if cert.Name != name || !uuidRE.MatchString(cert.ID) || len(cert.SHA1Fingerprint) != 40 ||
			cert.State != "verified" || cert.Type != "custom" || !cert.CreatedAt.Equal(now) {
			t.Errorf("AddCertificate = %+v", cert)
		}
		want = append(want, cert.ID)
	}

	var got []string
	opt := &godo.ListOptions{PerPage: 2, Page: 1}
	for {
		certs, resp, err := c.Certificates.List(ctx, opt)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Meta == nil || resp.Meta.Total != 3 {
			t.Fatalf("meta = %+v", resp.Meta)
		}
		for _, cert := range certs {
			got = append(got, cert.ID)
		}
		if resp.Links.IsLastPage() {
			break
		}
		opt.Page++
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("listed %v, want %v", got, want)
	}

	cert, _, err := c.Certificates.Get(ctx, want[1])
	if err != nil {
		t.Fatal(err)
	}
	wantCert := godo.Certificate{
		ID: want[1], Name: "api", DNSNames: []string{}, NotAfter: "2025-05-30T12:00:00Z", Created: "2025-03-01T12:00:00Z",
		State: "verified", Type: "custom", SHA1Fingerprint: cert.SHA1Fingerprint,
	}
	if !reflect.DeepEqual(*cert, wantCert) {
		t.Errorf("Get = %+v, want %+v", *cert, wantCert)
	}

	// Tests resolve certificate names the way clients do.
	byName, _, err := c.Certificates.ListByName(ctx, "web", nil)
	if err != nil || len(byName) != 2 || byName[0].ID != want[0] || byName[1].ID != want[2] {
		t.Errorf("ListByName = %+v, %v", byName, err)
	}

	_, _, err = c.Certificates.Get(ctx, "00000000-0000-4000-8000-000000000000")
	apiErr(t, err, http.StatusNotFound)
	if !s.RemoveCertificate(want[0]) || s.RemoveCertificate(want[0]) {
		t.Error("RemoveCertificate")
	}
	_, _, err = c.Certificates.Get(ctx, want[0])
	apiErr(t, err, http.StatusNotFound)
}

func TestCertificateWireShape(t *testing.T) {
	s, _ := start(t)
	cert := s.AddCertificate("web-cert-01")
	_, body := raw(t, s, "GET", "/v2/certificates", "")
	root := decode(t, body)
	if links, ok := root["links"].(map[string]any); !ok || len(links) != 0 || root["meta"].(map[string]any)["total"] != float64(1) {
		t.Errorf("list = %s", body)
	}
	w := root["certificates"].([]any)[0].(map[string]any)
	for _, key := range []string{"id", "name", "not_after", "sha1_fingerprint", "created_at", "dns_names", "state", "type"} {
		if _, ok := w[key]; !ok {
			t.Errorf("certificate lacks %s", key)
		}
	}
	if names, ok := w["dns_names"].([]any); !ok || len(names) != 0 || w["id"] != cert.ID {
		t.Errorf("certificate = %v", w)
	}
	_, body = raw(t, s, "GET", "/v2/certificates/"+cert.ID, "")
	if decode(t, body)["certificate"].(map[string]any)["name"] != "web-cert-01" {
		t.Errorf("get = %s", body)
	}
	// Empty listings are [] rather than null.
	_, body = raw(t, s, "GET", "/v2/certificates?name=none", "")
	if certs, ok := decode(t, body)["certificates"].([]any); !ok || len(certs) != 0 {
		t.Errorf("empty list = %s", body)
	}
}

// A Let's Encrypt renewal, as DigitalOcean does it: same name, new ID, the
// old ID gone (404), and the load balancer's rules moved to the new one.
func TestLetsEncryptRenewal(t *testing.T) {
	s, c := start(t)
	var got *godo.Certificate
	ctx := context.Background()
	le := s.AddLetsEncryptCertificate("shop", "shop.example.com")
	lb := s.AddLoadBalancer(LoadBalancer{Name: "a", ForwardingRules: []ForwardingRule{
		{EntryProtocol: "https", EntryPort: 443, TargetProtocol: "http", TargetPort: 30443, CertificateID: le.ID},
		{EntryProtocol: "tcp", EntryPort: 80, TargetProtocol: "tcp", TargetPort: 30080},
	}})
	if _, ok := s.RenewLetsEncryptCertificate(s.AddCertificate("custom").ID); ok {
		t.Error("a custom certificate was renewed")
	}
	renewed, ok := s.RenewLetsEncryptCertificate(le.ID)
	if !ok || renewed.ID == le.ID || renewed.Name != "shop" || renewed.Type != "lets_encrypt" {
		t.Fatalf("renewal = %+v, %v", renewed, ok)
	}
	_, _, err := c.Certificates.Get(ctx, le.ID)
	apiErr(t, err, http.StatusNotFound)
	got, _, err = c.Certificates.Get(ctx, renewed.ID)
	if err != nil || got.Type != "lets_encrypt" || !reflect.DeepEqual(got.DNSNames, []string{"shop.example.com"}) {
		t.Errorf("the new certificate: %+v, %v", got, err)
	}
	after, _, err := c.LoadBalancers.Get(ctx, lb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.ForwardingRules[0].CertificateID != renewed.ID || after.ForwardingRules[1].CertificateID != "" {
		t.Errorf("rules after the renewal: %+v", after.ForwardingRules)
	}
}
