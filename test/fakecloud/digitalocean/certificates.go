package digitalocean

import (
	"crypto/sha1"
	"encoding/hex"
	"net/http"
	"slices"
	"time"
)

// Certificate is the fake's state for one TLS certificate. Only the
// metadata the API returns is modelled: there is no key material.
type Certificate struct {
	ID              string // a UUID
	Name            string
	DNSNames        []string
	NotAfter        time.Time
	SHA1Fingerprint string
	CreatedAt       time.Time
	State           string // "verified", as a usable certificate is
	Type            string // "custom" or "lets_encrypt"
}

type certState struct {
	Certificate
	seq int // creation order
}

// certValidity is how long added certificates claim to be valid.
const certValidity = 90 * 24 * time.Hour

// AddCertificate stores a verified custom certificate named name, valid for
// 90 days from now, and returns it; forwarding rules can then refer to its
// ID.
func (s *Server) AddCertificate(name string) Certificate {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now().UTC().Truncate(time.Second)
	id := newUUID()
	sum := sha1.Sum([]byte(id))
	s.certSeq++
	c := &certState{seq: s.certSeq, Certificate: Certificate{
		ID:              id,
		Name:            name,
		DNSNames:        []string{},
		NotAfter:        now.Add(certValidity),
		SHA1Fingerprint: hex.EncodeToString(sum[:]),
		CreatedAt:       now,
		State:           "verified",
		Type:            "custom",
	}}
	s.certs[id] = c
	return c.clone()
}

// AddLetsEncryptCertificate stores a Let's Encrypt certificate for
// domains, as DigitalOcean makes one (type lets_encrypt, verified).
func (s *Server) AddLetsEncryptCertificate(name string, domains ...string) Certificate {
	c := s.AddCertificate(name)
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.certs[c.ID]
	st.Type = "lets_encrypt"
	st.DNSNames = slices.Clone(domains)
	return st.clone()
}

// RenewLetsEncryptCertificate does what DigitalOcean does when a Let's
// Encrypt certificate nears expiry: a new certificate with the same name
// and a new ID replaces it, every load balancer rule that used the old ID
// uses the new one, and the old certificate is gone. It returns the new
// certificate; false if id is not a Let's Encrypt certificate.
func (s *Server) RenewLetsEncryptCertificate(id string) (Certificate, bool) {
	s.mu.Lock()
	old, ok := s.certs[id]
	s.mu.Unlock()
	if !ok || old.Type != "lets_encrypt" {
		return Certificate{}, false
	}
	c := s.AddLetsEncryptCertificate(old.Name, old.DNSNames...)
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.certs, id)
	for _, lb := range s.lbs {
		for i := range lb.ForwardingRules {
			if lb.ForwardingRules[i].CertificateID == id {
				lb.ForwardingRules[i].CertificateID = c.ID
			}
		}
	}
	return c, true
}

// RemoveCertificate deletes a certificate, reporting whether it existed.
// Load balancers keep referring to it, as they would after an expiry.
func (s *Server) RemoveCertificate(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.certs[id]
	delete(s.certs, id)
	return ok
}

func (c Certificate) clone() Certificate {
	c.DNSNames = slices.Clone(c.DNSNames)
	return c
}

func (s *Server) registerCertificates() {
	s.handle(http.MethodGet, "/v2/certificates", s.listCertificates)
	s.handle(http.MethodGet, "/v2/certificates/{id}", s.getCertificate)
}

// listCertificates: GET /v2/certificates[?page&per_page&name], oldest
// first. name is an exact match, as godo's ListByName sends it.
func (s *Server) listCertificates(r *http.Request, _ params) (int, any) {
	q := r.URL.Query()
	pg := parsePaging(q)
	name := q.Get("name")

	s.mu.Lock()
	certs := make([]*certState, 0, len(s.certs))
	for _, c := range s.certs {
		if name == "" || c.Name == name {
			certs = append(certs, c)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(certs, func(a, b *certState) int { return a.seq - b.seq })

	lo, hi := pg.window(len(certs))
	page := make([]wireCertificate, 0, hi-lo)
	for _, c := range certs[lo:hi] {
		page = append(page, wireCertificateOf(c.Certificate))
	}
	return http.StatusOK, &certificatesRoot{
		Certificates: page,
		Links:        pg.links(r, len(certs)),
		Meta:         wireMeta{Total: len(certs)},
	}
}

// getCertificate: GET /v2/certificates/{id}.
func (s *Server) getCertificate(_ *http.Request, p params) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.certs[p["id"]]
	if !ok {
		return errNotFound()
	}
	return http.StatusOK, &certificateRoot{Certificate: wireCertificateOf(c.Certificate)}
}

func wireCertificateOf(c Certificate) wireCertificate {
	return wireCertificate{
		ID:              c.ID,
		Name:            c.Name,
		NotAfter:        c.NotAfter.UTC().Format(time.RFC3339),
		SHA1Fingerprint: c.SHA1Fingerprint,
		CreatedAt:       c.CreatedAt.UTC().Format(time.RFC3339),
		DNSNames:        emptyIfNil(slices.Clone(c.DNSNames)),
		State:           c.State,
		Type:            c.Type,
	}
}
