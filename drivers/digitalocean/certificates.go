package digitalocean

import (
	"context"
	"fmt"

	"github.com/digitalocean/godo"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/annotations"
	"github.com/polyccm/polyccm/core/cloudapi"
)

// certificateID resolves a certificate name.
func (l *loadBalancers) certificateID(ctx context.Context, name string) (string, error) {
	id := ""
	err := pages(ctx, l.c, "certificates.list", l.c.client.Certificates.List, func(page []godo.Certificate, _ *godo.Response) bool {
		for _, c := range page {
			if c.Name == name {
				id = c.ID
				return false
			}
		}
		return true
	})
	switch {
	case err != nil:
		return "", fmt.Errorf("looking up certificate %q: %w", name, err)
	case id == "":
		return "", fmt.Errorf("no certificate named %q (doctl compute certificate list)", name)
	}
	return id, nil
}

// renewedCertificate returns the ID of the certificate the load balancer
// uses when it is the Let's Encrypt renewal of the one the Service's
// certificate-id names, else "". DigitalOcean renews a Let's Encrypt
// certificate as a new certificate with the same name and a new ID, moves
// the load balancer to it and deletes the old one. As the DigitalOcean
// CCM: the load balancer's certificate must be of type lets_encrypt, and
// the Service's either gone or of the same name (a different name means
// the Service was pointed at another certificate on purpose).
func (l *loadBalancers) renewedCertificate(ctx context.Context, a *annotations.Values, lb *godo.LoadBalancer) (string, error) {
	want := a.String(AnnCertificateID, "")
	have := ""
	for _, r := range lb.ForwardingRules {
		if r.CertificateID != "" {
			have = r.CertificateID
			break
		}
	}
	if want == "" || have == "" || want == have {
		return "", nil
	}
	cur, found, err := l.certificate(ctx, have)
	if err != nil || !found || cur.Type != "lets_encrypt" {
		return "", err
	}
	named, found, err := l.certificate(ctx, want)
	if err != nil || (found && named.Name != cur.Name) {
		return "", err
	}
	return have, nil
}

// certificate gets one certificate; found is false only on a definitive
// not-found.
func (l *loadBalancers) certificate(ctx context.Context, id string) (*godo.Certificate, bool, error) {
	var c *godo.Certificate
	err := l.c.api.Do(ctx, "certificates.get", func(ctx context.Context) error {
		var err error
		c, _, err = l.c.client.Certificates.Get(ctx, id)
		return err
	})
	switch {
	case cloudapi.IsNotFound(err):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("reading certificate %s: %w", id, err)
	}
	return c, true, nil
}

// useCertificate points the rules that use certificate old at renewed.
func useCertificate(req *godo.LoadBalancerRequest, old, renewed string) {
	if renewed == "" {
		return
	}
	for i := range req.ForwardingRules {
		if req.ForwardingRules[i].CertificateID == old {
			req.ForwardingRules[i].CertificateID = renewed
		}
	}
}

// recordCertificate writes the renewed certificate's ID into the Service's
// certificate-id annotation, as the DigitalOcean CCM does, so the Service
// names the certificate in use.
func (l *loadBalancers) recordCertificate(ctx context.Context, svc *v1.Service, id string) error {
	if err := l.annotate(ctx, svc, map[string]string{AnnCertificateID: id}); err != nil {
		return fmt.Errorf("recording the renewed certificate %s on Service %s/%s: %w", id, svc.Namespace, svc.Name, err)
	}
	klog.InfoS("Let's Encrypt certificate renewed; recorded its new ID on the Service", "service", klog.KObj(svc), "annotation", AnnCertificateID, "certificate", id)
	if l.deps.Recorder != nil {
		l.deps.Recorder.Eventf(svc, v1.EventTypeNormal, "LoadBalancerCertificateRenewed", "DigitalOcean renewed the Let's Encrypt certificate; %s is now %s", AnnCertificateID, id)
	}
	return nil
}
