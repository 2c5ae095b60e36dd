package hetzner

import (
	"cmp"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"maps"
	"math/big"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Certificate types and issuance states, as the API spells them.
const (
	CertUploaded = "uploaded"
	CertManaged  = "managed"

	IssuancePending   = "pending"
	IssuanceCompleted = "completed"
	IssuanceFailed    = "failed"
)

// Certificate is a TLS certificate as the fake holds it. The private key
// of an uploaded one is checked and dropped: the API never returns it.
type Certificate struct {
	ID          int64
	Name        string
	Type        string // CertUploaded or CertManaged
	Labels      map[string]string
	DomainNames []string
	// PEM, the validity and the fingerprint are empty while a managed
	// certificate's issuance is pending.
	PEM            string
	NotValidBefore time.Time
	NotValidAfter  time.Time
	Fingerprint    string
	// Issuance and Renewal are the status of managed certificates.
	Issuance, Renewal string
	IssuanceError     string // the error code of a failed issuance
	Created           time.Time
}

type certState = Certificate

func (c Certificate) clone() Certificate {
	c.Labels = maps.Clone(c.Labels)
	c.DomainNames = slices.Clone(c.DomainNames)
	return c
}

// Certificate returns a certificate by ID.
func (s *Server) Certificate(id int64) (Certificate, bool) {
	s.lock()
	defer s.mu.Unlock()
	c, ok := s.certs[id]
	if !ok {
		return Certificate{}, false
	}
	return c.clone(), true
}

// Certificates returns every certificate, by ID.
func (s *Server) Certificates() []Certificate {
	s.lock()
	defer s.mu.Unlock()
	var out []Certificate
	for _, c := range s.sortedCertsLocked() {
		out = append(out, c.clone())
	}
	return out
}

// AddUploadedCertificate stores a self-signed certificate for domains as
// if uploaded, and returns its ID. It panics on a taken name.
func (s *Server) AddUploadedCertificate(name string, domains ...string) int64 {
	certPEM, _ := SelfSigned(domains...)
	s.lock()
	defer s.mu.Unlock()
	if s.certNameTakenLocked(name, 0) {
		panic("hetzner fake: certificate name " + name + " is taken")
	}
	c := &Certificate{ID: s.newIDLocked("certificate"), Name: name, Type: CertUploaded, Labels: map[string]string{}, Created: s.now()}
	setPEM(c, certPEM)
	s.certs[c.ID] = c
	return c.ID
}

// SetCertificateLabels replaces a certificate's labels, as a user's PUT
// would; false if there is no such certificate. It panics on labels the
// API would refuse.
func (s *Server) SetCertificateLabels(id int64, labels map[string]string) bool {
	if st, body := validLabels(labels); st != 0 {
		panic(fmt.Sprintf("hetzner fake: certificate labels %v: %v", labels, body))
	}
	s.lock()
	defer s.mu.Unlock()
	c, ok := s.certs[id]
	if ok {
		c.Labels = maps.Clone(labels)
	}
	return ok
}

// SelfSigned makes a certificate for domains (valid from an hour ago for
// 90 days) and its key, both PEM, for tests that upload one.
func SelfSigned(domains ...string) (certPEM, keyPEM string) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: first(domains)},
		DNSNames: domains, NotBefore: time.Now().Add(-time.Hour).Truncate(time.Second),
		NotAfter: time.Now().Add(90 * 24 * time.Hour).Truncate(time.Second), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	kb, _ := x509.MarshalPKCS8PrivateKey(key)
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}))
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// setPEM fills a certificate's PEM, validity, domains and fingerprint
// from its first certificate; the PEM must parse.
func setPEM(c *Certificate, certPEM string) *x509.Certificate {
	b, _ := pem.Decode([]byte(certPEM))
	if b == nil || b.Type != "CERTIFICATE" {
		return nil
	}
	x, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return nil
	}
	sum := sha256.Sum256(x.Raw)
	hexed := hex.EncodeToString(sum[:])
	var parts []string
	for i := 0; i < len(hexed); i += 2 {
		parts = append(parts, hexed[i:i+2])
	}
	c.PEM, c.NotValidBefore, c.NotValidAfter, c.Fingerprint = certPEM, x.NotBefore, x.NotAfter, strings.Join(parts, ":")
	c.DomainNames = slices.Clone(x.DNSNames)
	if len(c.DomainNames) == 0 && x.Subject.CommonName != "" {
		c.DomainNames = []string{x.Subject.CommonName}
	}
	return x
}

// keyMatches says whether a PEM private key belongs to a certificate.
func keyMatches(x *x509.Certificate, keyPEM string) bool {
	b, _ := pem.Decode([]byte(keyPEM))
	if b == nil {
		return false
	}
	var key any
	var err error
	switch b.Type {
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(b.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(b.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(b.Bytes)
	}
	if err != nil {
		return false
	}
	signer, ok := key.(crypto.Signer)
	pub, ok2 := x.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ok2 && pub.Equal(signer.Public())
}

func (s *Server) certNameTakenLocked(name string, except int64) bool {
	for _, c := range s.certs {
		if c.Name == name && c.ID != except {
			return true
		}
	}
	return false
}

func (s *Server) sortedCertsLocked() []*certState {
	out := slices.Collect(maps.Values(s.certs))
	slices.SortFunc(out, func(a, b *certState) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

func (s *Server) registerCertificates() {
	s.handle(http.MethodGet, "/v1/certificates", s.listCerts)
	s.handle(http.MethodPost, "/v1/certificates", s.createCert)
	s.handle(http.MethodGet, "/v1/certificates/{id}", s.getCert)
	s.handle(http.MethodPut, "/v1/certificates/{id}", s.updateCert)
	s.handle(http.MethodDelete, "/v1/certificates/{id}", s.deleteCert)
}

// listCerts: GET /v1/certificates with name, label_selector and type.
func (s *Server) listCerts(r *http.Request, _ params) (int, any) {
	lq, st, body := parseList(r)
	if st != 0 {
		return st, body
	}
	types := r.URL.Query()["type"]
	s.lock()
	defer s.mu.Unlock()
	var out []*certState
	for _, c := range s.sortedCertsLocked() {
		if lq.keep(c.Name, c.Labels) && (len(types) == 0 || slices.Contains(types, c.Type)) {
			out = append(out, c)
		}
	}
	return page(r, lq, "certificates", out, s.wireCertLocked)
}

func (s *Server) findCertLocked(p params) (*certState, int, any) {
	id, ok := parseID(p["id"])
	c := s.certs[id]
	if !ok || c == nil {
		st, body := errNotFound("certificate with ID '" + p["id"] + "' not found")
		return nil, st, body
	}
	return c, 0, nil
}

func (s *Server) getCert(_ *http.Request, p params) (int, any) {
	s.lock()
	defer s.mu.Unlock()
	c, st, body := s.findCertLocked(p)
	if st != 0 {
		return st, body
	}
	return http.StatusOK, map[string]any{"certificate": s.wireCertLocked(c)}
}

// createCert: POST /v1/certificates. An uploaded certificate is there at
// once ("action": null); a managed one is "pending" while its
// create_certificate action runs, then "completed" with a certificate.
func (s *Server) createCert(r *http.Request, _ params) (int, any) {
	var req struct {
		Name        string             `json:"name"`
		Type        string             `json:"type"`
		Certificate string             `json:"certificate"`
		PrivateKey  string             `json:"private_key"`
		DomainNames []string           `json:"domain_names"`
		Labels      *map[string]string `json:"labels"`
	}
	if st, body := decode(r, &req); st != 0 {
		return st, body
	}
	req.Type = cmp.Or(req.Type, CertUploaded)
	switch {
	case req.Name == "":
		return errInvalid("name", "is required")
	case req.Type != CertUploaded && req.Type != CertManaged:
		return errInvalid("type", "must be one of uploaded, managed")
	case req.Type == CertManaged && len(req.DomainNames) == 0:
		return errInvalid("domain_names", "is required")
	case req.Type == CertUploaded && req.Certificate == "":
		return errInvalid("certificate", "is required")
	case req.Type == CertUploaded && req.PrivateKey == "":
		return errInvalid("private_key", "is required")
	}
	c := &Certificate{Name: req.Name, Type: req.Type, Labels: map[string]string{}}
	if req.Labels != nil {
		if st, body := validLabels(*req.Labels); st != 0 {
			return st, body
		}
		c.Labels = maps.Clone(*req.Labels)
	}
	if req.Type == CertUploaded {
		x := setPEM(c, req.Certificate)
		if x == nil {
			return errInvalid("certificate", "is not a valid PEM encoded certificate")
		}
		if !keyMatches(x, req.PrivateKey) {
			return errInvalid("private_key", "is not a valid private key for the certificate")
		}
	}
	s.lock()
	defer s.mu.Unlock()
	if s.certNameTakenLocked(req.Name, 0) {
		return errUniqueness("name", "name is already used")
	}
	c.ID, c.Created = s.newIDLocked("certificate"), s.now()
	s.certs[c.ID] = c
	if req.Type == CertUploaded {
		return http.StatusCreated, map[string]any{"certificate": s.wireCertLocked(c), "action": nil}
	}
	c.DomainNames, c.Issuance, c.Renewal = slices.Clone(req.DomainNames), IssuancePending, "unavailable"
	a := s.startActionLocked("create_certificate", s.certDelay, []resourceRef{{ID: c.ID, Type: "certificate"}},
		func() {
			certPEM, _ := SelfSigned(c.DomainNames...)
			setPEM(c, certPEM)
			c.DomainNames = slices.Clone(req.DomainNames)
			c.Issuance = IssuanceCompleted
		},
		func() { c.Issuance, c.IssuanceError = IssuanceFailed, "ca_dns_validation_failed" })
	return http.StatusCreated, map[string]any{"certificate": s.wireCertLocked(c), "action": s.wireActionOf(a)}
}

// updateCert: PUT /v1/certificates/{id} with name and labels.
func (s *Server) updateCert(r *http.Request, p params) (int, any) {
	var req struct {
		Name   *string            `json:"name"`
		Labels *map[string]string `json:"labels"`
	}
	if st, body := decode(r, &req); st != 0 {
		return st, body
	}
	s.lock()
	defer s.mu.Unlock()
	c, st, body := s.findCertLocked(p)
	if st != 0 {
		return st, body
	}
	if req.Name != nil && (*req.Name == "" || s.certNameTakenLocked(*req.Name, c.ID)) {
		return errUniqueness("name", "name is already used")
	}
	if req.Labels != nil {
		if st, body := validLabels(*req.Labels); st != 0 {
			return st, body
		}
		c.Labels = maps.Clone(*req.Labels)
	}
	if req.Name != nil {
		c.Name = *req.Name
	}
	return http.StatusOK, map[string]any{"certificate": s.wireCertLocked(c)}
}

// deleteCert: DELETE /v1/certificates/{id}, 204. A certificate a load
// balancer's service uses cannot go.
func (s *Server) deleteCert(_ *http.Request, p params) (int, any) {
	s.lock()
	defer s.mu.Unlock()
	c, st, body := s.findCertLocked(p)
	if st != 0 {
		return st, body
	}
	if st, body := s.lockedLocked(resourceRef{ID: c.ID, Type: "certificate"}); st != 0 {
		return st, body
	}
	if len(s.certUsersLocked(c.ID)) > 0 {
		return errCode(http.StatusConflict, "resource_in_use", "certificate is still used by a load balancer")
	}
	delete(s.certs, c.ID)
	return http.StatusNoContent, nil
}

type wireCert struct {
	ID             int64             `json:"id"`
	Name           string            `json:"name"`
	Labels         map[string]string `json:"labels"`
	Type           string            `json:"type"`
	Certificate    *string           `json:"certificate"`
	Created        string            `json:"created"`
	NotValidBefore *string           `json:"not_valid_before"`
	NotValidAfter  *string           `json:"not_valid_after"`
	DomainNames    []string          `json:"domain_names"`
	Fingerprint    *string           `json:"fingerprint"`
	Status         *wireCertStatus   `json:"status"`
	UsedBy         []resourceRef     `json:"used_by"`
}

type wireCertStatus struct {
	Issuance string    `json:"issuance"`
	Renewal  string    `json:"renewal"`
	Error    *apiError `json:"error"`
}

func (s *Server) wireCertLocked(c *certState) wireCert {
	w := wireCert{ID: c.ID, Name: c.Name, Labels: maps.Clone(c.Labels), Type: c.Type, Created: stamp(c.Created),
		NotValidBefore: stampPtr(c.NotValidBefore), NotValidAfter: stampPtr(c.NotValidAfter),
		DomainNames: append([]string{}, c.DomainNames...), UsedBy: []resourceRef{}}
	if c.PEM != "" {
		pemText, fp := c.PEM, c.Fingerprint
		w.Certificate, w.Fingerprint = &pemText, &fp
	}
	if c.Type == CertManaged {
		w.Status = &wireCertStatus{Issuance: c.Issuance, Renewal: c.Renewal}
		if c.IssuanceError != "" {
			w.Status.Error = &apiError{Code: c.IssuanceError, Message: "Certificate Authority: DNS validation failed", Details: map[string]any{}}
		}
	}
	for _, id := range s.certUsersLocked(c.ID) {
		w.UsedBy = append(w.UsedBy, resourceRef{ID: id, Type: "load_balancer"})
	}
	return w
}
