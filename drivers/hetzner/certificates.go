package hetzner

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/annotations"
)

// resolveCertificates fills in the certificates of the http and https
// services: http-certificates by ID or name, or the managed certificate
// found by its label. A name that names no certificate is a problem with
// the Service; a managed certificate whose issuance failed is an error.
func (c *Cloud) resolveCertificates(ctx context.Context, svc *v1.Service, a *annotations.Values, spec *lbSpec) error {
	h := spec.svc.http
	if h == nil || !h.certsSet {
		return nil
	}
	if m := spec.managed; m != nil {
		cert, err := c.managedCertificate(ctx, spec.uid)
		if err != nil || cert == nil {
			return err
		}
		m.have = cert
		if cert.Status != nil && cert.Status.Issuance == hcloud.CertificateStatusTypeFailed {
			why := "no reason given"
			if cert.Status.Error != nil {
				why = cert.Status.Error.Error()
			}
			return fmt.Errorf("managed certificate %s (%d) could not be issued: %s; fix the domains' DNS, then delete the certificate and polyccm makes a new one", cert.Name, cert.ID, why)
		}
		if r := c.deps.Recorder; r != nil && !sameDomains(cert.DomainNames, m.domains) {
			// As hcloud CCM: a managed certificate is made once.
			r.Event(svc, v1.EventTypeNormal, "ManagedCertificateKept", annotations.Clip(fmt.Sprintf("managed certificate %s (%d) is for %s, not %s: a managed certificate is made once, as in hcloud CCM; delete it to have one made for the domains asked for",
				cert.Name, cert.ID, strings.Join(cert.DomainNames, ","), strings.Join(m.domains, ","))))
		}
		h.certs = []int64{cert.ID}
		return nil
	}
	for _, ref := range spec.certRefs {
		// A number is an ID, used as given, as hcloud CCM does.
		if id, err := strconv.ParseInt(ref, 10, 64); err == nil {
			h.certs = append(h.certs, id)
			continue
		}
		var cert *hcloud.Certificate
		err := c.api.Do(ctx, "certificates.get", func(ctx context.Context) error {
			var err error
			cert, _, err = c.client.Certificate.GetByName(ctx, ref)
			return err
		})
		if err != nil {
			return fmt.Errorf("looking up certificate %q: %w", ref, err)
		}
		if cert == nil {
			a.Fail(AnnHTTPCertificates, "the project has no certificate named %q: give the name or ID of an uploaded certificate (hcloud certificate list)", ref)
			continue
		}
		h.certs = append(h.certs, cert.ID)
	}
	return nil
}

// managedCertificate is the certificate labelled with the Service UID,
// as hcloud CCM finds it; nil if there is none.
func (c *Cloud) managedCertificate(ctx context.Context, uid string) (*hcloud.Certificate, error) {
	var found []*hcloud.Certificate
	_, err := pages(ctx, c, "certificates.list", func(ctx context.Context, o hcloud.ListOpts) ([]*hcloud.Certificate, *hcloud.Response, error) {
		o.LabelSelector = LabelServiceUID + "=" + uid
		return c.client.Certificate.List(ctx, hcloud.CertificateListOpts{ListOpts: o})
	}, func(page []*hcloud.Certificate) bool {
		found = append(found, page...)
		return true
	})
	switch {
	case err != nil:
		return nil, fmt.Errorf("looking up the managed certificate: %w", err)
	case len(found) == 0:
		return nil, nil
	case len(found) > 1:
		names := make([]string, len(found))
		for i, f := range found {
			names[i] = fmt.Sprintf("%s (%d)", f.Name, f.ID)
		}
		return nil, fmt.Errorf("%d certificates are labelled %s=%s (%s); keep one", len(found), LabelServiceUID, uid, strings.Join(names, ", "))
	}
	return found[0], nil
}

func sameDomains(a, b []string) bool {
	return slices.Equal(sortedStrings(a), sortedStrings(b))
}
