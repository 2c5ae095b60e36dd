package hetzner

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
)

func TestUploadedCertificate(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	certPEM, keyPEM := SelfSigned("example.com", "www.example.com")
	cert, _, err := c.Certificate.Create(ctx, hcloud.CertificateCreateOpts{Name: "web", Certificate: certPEM, PrivateKey: keyPEM,
		Labels: map[string]string{"app": "web"}})
	if err != nil {
		t.Fatal(err)
	}
	if cert.Type != hcloud.CertificateTypeUploaded || len(cert.DomainNames) != 2 || cert.DomainNames[1] != "www.example.com" ||
		cert.NotValidAfter.Before(time.Now().Add(80*24*time.Hour)) || len(cert.Fingerprint) != 95 || cert.Certificate != certPEM {
		t.Errorf("cert = %+v", cert)
	}
	_, b := raw(t, s, "GET", fmt.Sprintf("/v1/certificates/%d", cert.ID), "")
	if strings.Contains(string(b), "PRIVATE KEY") || strings.Contains(string(b), "private_key") {
		t.Errorf("the private key came back: %s", b)
	}
	m := doc(t, b)["certificate"].(map[string]any)
	sameKeys(t, "certificate", m, "id", "name", "labels", "type", "certificate", "created", "not_valid_before",
		"not_valid_after", "domain_names", "fingerprint", "status", "used_by")
	if m["status"] != nil {
		t.Errorf("uploaded status = %v", m["status"])
	}

	_, otherKey := SelfSigned("other.example.com")
	_, _, err = c.Certificate.Create(ctx, hcloud.CertificateCreateOpts{Name: "bad", Certificate: certPEM, PrivateKey: otherKey})
	apiErr(t, err, hcloud.ErrorCodeInvalidInput, http.StatusBadRequest)
	_, _, err = c.Certificate.Create(ctx, hcloud.CertificateCreateOpts{Name: "web", Certificate: certPEM, PrivateKey: keyPEM})
	apiErr(t, err, hcloud.ErrorCodeUniquenessError, http.StatusConflict)

	// In use by an https service, it cannot be deleted.
	res, _, err := c.LoadBalancer.Create(ctx, hcloud.LoadBalancerCreateOpts{Name: "lb", Location: &hcloud.Location{Name: "fsn1"},
		LoadBalancerType: &hcloud.LoadBalancerType{Name: "lb11"}})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.LoadBalancer.AddService(ctx, res.LoadBalancer, hcloud.LoadBalancerAddServiceOpts{Protocol: hcloud.LoadBalancerServiceProtocolHTTPS,
		HTTP: &hcloud.LoadBalancerAddServiceOptsHTTP{Certificates: []*hcloud.Certificate{cert}, RedirectHTTP: hcloud.Ptr(true)}})
	if err != nil {
		t.Fatal(err)
	}
	got, _, _ := c.Certificate.GetByID(ctx, cert.ID)
	if len(got.UsedBy) != 1 || got.UsedBy[0].ID != res.LoadBalancer.ID {
		t.Errorf("used_by = %+v", got.UsedBy)
	}
	_, err = c.Certificate.Delete(ctx, cert)
	apiErr(t, err, "resource_in_use", http.StatusConflict)
	lb, _, _ := c.LoadBalancer.GetByID(ctx, res.LoadBalancer.ID)
	if _, _, err := c.LoadBalancer.DeleteService(ctx, lb, 443); err != nil {
		t.Fatal(err)
	}
	if resp, err := c.Certificate.Delete(ctx, cert); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatal(err)
	}
	if gone, _, err := c.Certificate.GetByID(ctx, cert.ID); gone != nil || err != nil {
		t.Errorf("deleted: %v %v", gone, err)
	}
}

func TestManagedCertificate(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	s.SetCertificateIssueDelay(20 * time.Millisecond)
	res, _, err := c.Certificate.CreateCertificate(ctx, hcloud.CertificateCreateOpts{Name: "managed", Type: hcloud.CertificateTypeManaged,
		DomainNames: []string{"app.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Action == nil || res.Action.Command != "create_certificate" || res.Certificate.Status.Issuance != hcloud.CertificateStatusTypePending ||
		res.Certificate.Certificate != "" {
		t.Fatalf("created = %+v %+v", res.Certificate, res.Action)
	}
	_, pending := raw(t, s, "GET", fmt.Sprintf("/v1/certificates/%d", res.Certificate.ID), "")
	m := doc(t, pending)["certificate"].(map[string]any)
	if m["certificate"] != nil || m["fingerprint"] != nil || m["not_valid_after"] != nil {
		t.Errorf("pending certificate = %v", m)
	}
	if err := c.Action.WaitFor(ctx, res.Action); err != nil {
		t.Fatal(err)
	}
	cert, _, _ := c.Certificate.GetByID(ctx, res.Certificate.ID)
	if cert.Status.Issuance != hcloud.CertificateStatusTypeCompleted || !strings.HasPrefix(cert.Certificate, "-----BEGIN CERTIFICATE") ||
		cert.DomainNames[0] != "app.example.com" {
		t.Errorf("issued = %+v", cert)
	}
	managed, err := c.Certificate.AllWithOpts(ctx, hcloud.CertificateListOpts{Name: "managed"})
	if err != nil || len(managed) != 1 || len(s.Certificates()) != 1 {
		t.Errorf("list = %v %v", managed, err)
	}

	s.FailNextAction("create_certificate", "ca_dns_validation_failed", "Certificate Authority: DNS validation failed")
	res, _, err = c.Certificate.CreateCertificate(ctx, hcloud.CertificateCreateOpts{Name: "fails", Type: hcloud.CertificateTypeManaged,
		DomainNames: []string{"nope.example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Action.WaitFor(ctx, res.Action); err == nil {
		t.Error("a failed issuance succeeded")
	}
	failed, _ := s.Certificate(res.Certificate.ID)
	if failed.Issuance != IssuanceFailed {
		t.Errorf("issuance = %s", failed.Issuance)
	}
	// hcloud-go checks this itself; the API too.
	r, b := raw(t, s, "POST", "/v1/certificates", `{"name":"x","type":"managed"}`)
	if r.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"domain_names"`) {
		t.Errorf("no domains: %d %s", r.StatusCode, b)
	}
}

// The labels a test sets are what the API serves and selects on.
func TestSetCertificateLabels(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	id := s.AddUploadedCertificate("web", "example.com")
	if !s.SetCertificateLabels(id, map[string]string{"polyccm.io/namespaces": "shop.blog"}) {
		t.Fatal("no such certificate")
	}
	if s.SetCertificateLabels(id+1000, map[string]string{}) {
		t.Error("labelled a certificate that does not exist")
	}
	got, _, err := c.Certificate.GetByID(ctx, id)
	if err != nil || got.Labels["polyccm.io/namespaces"] != "shop.blog" {
		t.Fatalf("certificate %+v, %v", got, err)
	}
	list, err := c.Certificate.AllWithOpts(ctx, hcloud.CertificateListOpts{ListOpts: hcloud.ListOpts{LabelSelector: "polyccm.io/namespaces=shop.blog"}})
	if err != nil || len(list) != 1 || list[0].ID != id {
		t.Errorf("selected %+v, %v", list, err)
	}
	defer func() {
		if recover() == nil {
			t.Error("a label value with a comma was taken")
		}
	}()
	s.SetCertificateLabels(id, map[string]string{"polyccm.io/namespaces": "shop,blog"})
}
