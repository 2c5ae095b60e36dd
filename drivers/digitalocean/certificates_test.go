package digitalocean_test

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/drivers/digitalocean"
	fake "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
)

// When DigitalOcean renews a Let's Encrypt certificate it gives it a new
// ID and moves the load balancer to it. The next sync keeps the new one on
// the load balancer (no update) and writes it into the Service's
// certificate-id, as the DigitalOcean CCM does; then the Service's ID and
// the load balancer agree again.
func TestLetsEncryptRenewalIsRecorded(t *testing.T) {
	e := newLBEnv(t)
	le := e.fake.AddLetsEncryptCertificate("shop", "shop.example.com")
	lb, svc := e.created(e.service(map[string]string{digitalocean.AnnCertificateID: le.ID}, lbTCP(443, 30443)))
	e.active(svc)
	lbEvents(e.rec)
	renewed, ok := e.fake.RenewLetsEncryptCertificate(le.ID)
	if !ok {
		t.Fatal("the fake did not renew the certificate")
	}
	puts := e.calls(lbPut)
	e.active(svc)
	if n := e.calls(lbPut) - puts; n != 0 {
		t.Errorf("%d updates after a renewal, want 0: the load balancer already uses the new certificate", n)
	}
	after, _ := e.fake.LoadBalancer(lb.ID)
	if got := after.ForwardingRules[0].CertificateID; got != renewed.ID {
		t.Errorf("the load balancer uses %s, want the renewed %s", got, renewed.ID)
	}
	svc = e.reload(svc)
	if got := svc.Annotations[digitalocean.AnnCertificateID]; got != renewed.ID {
		t.Errorf("%s = %s, want the renewed %s", digitalocean.AnnCertificateID, got, renewed.ID)
	}
	if ev := lbEvents(e.rec); len(ev) != 1 || !strings.HasPrefix(ev[0], v1.EventTypeNormal+" LoadBalancerCertificateRenewed ") {
		t.Errorf("events %q, want one saying the certificate was renewed", ev)
	}
	e.active(svc)
	if n := e.calls(lbPut) - puts; n != 0 {
		t.Errorf("%d updates once the Service names the renewed certificate, want 0", n)
	}
}

// A certificate changed on the load balancer by hand is not a renewal:
// a custom certificate, or a Let's Encrypt one of another name, is put
// back to the one the Service names, and the Service is left as it is.
func TestCertificateChangedByHandIsReverted(t *testing.T) {
	for _, c := range []struct {
		name  string
		other func(e *lbEnv) string
	}{
		{"custom", func(e *lbEnv) string { return e.fake.AddCertificate("shop").ID }},
		{"Let's Encrypt of another name", func(e *lbEnv) string { return e.fake.AddLetsEncryptCertificate("blog", "blog.example.com").ID }},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newLBEnv(t)
			mine := e.fake.AddLetsEncryptCertificate("shop", "shop.example.com")
			lb, svc := e.created(e.service(map[string]string{digitalocean.AnnCertificateID: mine.ID}, lbTCP(443, 30443)))
			e.active(svc)
			other := c.other(e)
			if err := e.fake.UpdateLoadBalancer(lb.ID, func(lb *fake.LoadBalancer) { lb.ForwardingRules[0].CertificateID = other }); err != nil {
				t.Fatal(err)
			}
			e.active(svc)
			after, _ := e.fake.LoadBalancer(lb.ID)
			if got := after.ForwardingRules[0].CertificateID; got != mine.ID {
				t.Errorf("the load balancer uses %s, want the Service's %s back", got, mine.ID)
			}
			if got := e.reload(svc).Annotations[digitalocean.AnnCertificateID]; got != mine.ID {
				t.Errorf("%s = %s, want it untouched", digitalocean.AnnCertificateID, got)
			}
		})
	}
}
