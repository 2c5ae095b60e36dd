package hetzner

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/annotations"
)

// Event reasons of certificate use.
const (
	// ReasonCertificatesInUse (Normal) names the certificates a Service's
	// load balancer serves: when they change, and on the first sync after
	// polyccm starts (so a load balancer taken over is reported too), not
	// on every sync.
	ReasonCertificatesInUse = "CertificatesInUse"
	// ReasonCertificateNotAllowed (Warning): certificateNamespaceLabel does
	// not let the Service's namespace use a certificate it names.
	ReasonCertificateNotAllowed = "CertificateNotAllowed"
)

// resolveCertificates fills in the certificates of the http and https
// services: http-certificates by ID or name, or the managed certificate
// found by its label. A name that names no certificate is a problem with
// the Service; a managed certificate whose issuance failed is an error.
// With drivers.hetzner.loadBalancer.certificateNamespaceLabel set, an
// uploaded certificate whose label does not list the Service's namespace
// is refused: the refusals are returned, and the caller changes nothing.
func (c *Cloud) resolveCertificates(ctx context.Context, svc *v1.Service, a *annotations.Values, spec *lbSpec) ([]annotations.Problem, error) {
	h := spec.svc.http
	if h == nil || !h.certsSet {
		return nil, nil
	}
	spec.certNames = map[int64]string{}
	if m := spec.managed; m != nil {
		// The Service's own (labelled with its UID): always allowed.
		cert, err := c.managedCertificate(ctx, spec.uid)
		if err != nil || cert == nil {
			return nil, err
		}
		m.have = cert
		if cert.Status != nil && cert.Status.Issuance == hcloud.CertificateStatusTypeFailed {
			why := "no reason given"
			if cert.Status.Error != nil {
				why = cert.Status.Error.Error()
			}
			return nil, fmt.Errorf("managed certificate %s (%d) could not be issued: %s; fix the domains' DNS, then delete the certificate and polyccm makes a new one", cert.Name, cert.ID, why)
		}
		if r := c.deps.Recorder; r != nil && !sameDomains(cert.DomainNames, m.domains) {
			// As hcloud CCM: a managed certificate is made once.
			r.Event(svc, v1.EventTypeNormal, "ManagedCertificateKept", annotations.Clip(fmt.Sprintf("managed certificate %s (%d) is for %s, not %s: a managed certificate is made once, as in hcloud CCM; delete it to have one made for the domains asked for",
				cert.Name, cert.ID, strings.Join(cert.DomainNames, ","), strings.Join(m.domains, ","))))
		}
		h.certs = []int64{cert.ID}
		spec.certNames[cert.ID] = cert.Name
		return nil, nil
	}
	label := c.cfg.LoadBalancer.CertificateNamespaceLabel
	var refused []annotations.Problem
	for _, ref := range spec.certRefs {
		// A number is an ID, used as given, as hcloud CCM does, unless
		// the certificate's labels must be read.
		id, err := strconv.ParseInt(ref, 10, 64)
		byID := err == nil
		if byID && label == "" {
			h.certs = append(h.certs, id)
			continue
		}
		var cert *hcloud.Certificate
		if byID {
			cert, err = c.certificateByID(ctx, id)
		} else {
			err = c.api.Do(ctx, "certificates.get", func(ctx context.Context) error {
				var err error
				cert, _, err = c.client.Certificate.GetByName(ctx, ref)
				return err
			})
		}
		if err != nil {
			return nil, fmt.Errorf("looking up certificate %q: %w", ref, err)
		}
		switch {
		case cert == nil && byID:
			a.Fail(AnnHTTPCertificates, "the project has no certificate with ID %d: give the name or ID of an uploaded certificate (hcloud certificate list)", id)
			continue
		case cert == nil:
			a.Fail(AnnHTTPCertificates, "the project has no certificate named %q: give the name or ID of an uploaded certificate (hcloud certificate list)", ref)
			continue
		}
		spec.certNames[cert.ID] = cert.Name
		if label != "" && !namespaceListed(cert.Labels[label], svc.Namespace) {
			// The label's value is not quoted: it would tell this
			// namespace which others use the certificate.
			refused = append(refused, annotations.Problem{Key: AnnHTTPCertificates, Msg: fmt.Sprintf(
				"certificate %s (%d) is not allowed in namespace %s: %s limits a Service to the certificates whose label %s lists its namespace; to allow it, add %s to that label on the certificate (namespaces separated by dots, e.g. %s=%s or %s=<others>.%s)",
				cert.Name, cert.ID, svc.Namespace, cfgKey("certificateNamespaceLabel"), label, svc.Namespace, label, svc.Namespace, label, svc.Namespace)})
			continue
		}
		h.certs = append(h.certs, cert.ID)
	}
	return refused, nil
}

// namespaceListed says whether a certificateNamespaceLabel value lists
// ns: namespaces separated by dots, which no namespace name contains.
func namespaceListed(value, ns string) bool {
	return ns != "" && slices.Contains(strings.Split(value, "."), ns)
}

// certificateByID reads one certificate; nil if there is none.
func (c *Cloud) certificateByID(ctx context.Context, id int64) (*hcloud.Certificate, error) {
	var cert *hcloud.Certificate
	err := c.api.Do(ctx, "certificates.get", func(ctx context.Context) error {
		var err error
		cert, _, err = c.client.Certificate.GetByID(ctx, id)
		return err
	})
	return cert, err
}

// refuse reports the annotations' problems and the refused certificates
// (each a Warning CertificateNotAllowed event) and returns them all as
// one error, or nil: the sync then changes nothing.
func (l *loadBalancers) refuse(svc *v1.Service, a *annotations.Values, refused []annotations.Problem) error {
	for _, p := range refused {
		l.event(svc, v1.EventTypeWarning, ReasonCertificateNotAllowed, p.Key+": "+p.Msg+"; the load balancer was not changed")
	}
	err := a.Report(l.c.deps.Recorder)
	if len(refused) == 0 {
		return err
	}
	inv, ok := err.(*annotations.InvalidError)
	if !ok {
		inv = &annotations.InvalidError{Service: svc.Namespace + "/" + svc.Name}
	}
	inv.Problems = append(inv.Problems, refused...)
	return inv
}

// reportCertificates says which certificates lb serves for svc, in a
// Normal CertificatesInUse event, when that set differs from the one
// last said for the Service (none after a start), so an operator sees
// who uses what without an event on every sync.
func (l *loadBalancers) reportCertificates(ctx context.Context, svc *v1.Service, lb *hcloud.LoadBalancer, spec *lbSpec) {
	ids, ports := servedCertificates(lb)
	uid := string(svc.UID)
	l.certMu.Lock()
	last, said := l.certsSaid[uid]
	if len(ids) == 0 {
		delete(l.certsSaid, uid)
	}
	l.certMu.Unlock()
	if len(ids) == 0 || said && slices.Equal(last, ids) {
		return
	}
	names := make([]string, len(ids))
	for i, id := range ids {
		name, ok := spec.certNames[id]
		if !ok {
			// Given by ID, or attached before: the name is for the
			// event only, so a failed read leaves the ID alone.
			cert, err := l.c.certificateByID(ctx, id)
			if err != nil {
				klog.V(2).InfoS("Could not read a certificate's name for the event", "service", klog.KObj(svc), "certificate", id, "err", err)
			} else if cert != nil {
				name = cert.Name
			}
		}
		names[i] = strconv.FormatInt(id, 10)
		if name != "" {
			names[i] = fmt.Sprintf("%s (%d)", name, id)
		}
	}
	l.event(svc, v1.EventTypeNormal, ReasonCertificatesInUse, fmt.Sprintf("load balancer %s (%d) serves %s %s on %s %s",
		lb.Name, lb.ID, plural(len(ids), "certificate"), strings.Join(names, ", "), plural(len(ports), "port"), strings.Join(ports, ", ")))
	l.certMu.Lock()
	l.certsSaid[uid] = ids
	l.certMu.Unlock()
}

// forgetCertificates drops what was said of a Service whose load
// balancer is being deleted.
func (l *loadBalancers) forgetCertificates(svc *v1.Service) {
	l.certMu.Lock()
	delete(l.certsSaid, string(svc.UID))
	l.certMu.Unlock()
}

// servedCertificates are the IDs of the certificates lb's services use,
// sorted, and the ports of those services.
func servedCertificates(lb *hcloud.LoadBalancer) ([]int64, []string) {
	var ids []int64
	var ports []int
	for _, s := range lb.Services {
		for _, c := range s.HTTP.Certificates {
			if c != nil && !slices.Contains(ids, c.ID) {
				ids = append(ids, c.ID)
			}
		}
		if len(s.HTTP.Certificates) > 0 {
			ports = append(ports, s.ListenPort)
		}
	}
	slices.Sort(ids)
	slices.Sort(ports)
	out := make([]string, len(ports))
	for i, p := range ports {
		out[i] = strconv.Itoa(p)
	}
	return ids, out
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
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
