package openstack

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// DefaultTokenLifetime is how long tokens last, Keystone's default
// ([token] expiration = 3600).
const DefaultTokenLifetime = time.Hour

// Account is the identity the fake's Keystone knows: one domain, one
// project and one user with the member role on it, the project being the
// user's default, as devstack sets users up. Zero fields get defaults.
type Account struct {
	Region      string // the first region; default "RegionOne"
	DomainID    string // default "default"
	DomainName  string // default "Default"
	ProjectID   string // default a random ID (32 hex digits)
	ProjectName string // default "demo"
	UserID      string // default a random ID
	UserName    string // default "demo"
	Password    string // default "secretsecret"
}

func (a Account) withDefaults() Account {
	a.Region = cmp.Or(a.Region, "RegionOne")
	a.DomainID = cmp.Or(a.DomainID, "default")
	a.DomainName = cmp.Or(a.DomainName, "Default")
	a.ProjectID = cmp.Or(a.ProjectID, newHexID())
	a.ProjectName = cmp.Or(a.ProjectName, "demo")
	a.UserID = cmp.Or(a.UserID, newHexID())
	a.UserName = cmp.Or(a.UserName, "demo")
	a.Password = cmp.Or(a.Password, "secretsecret")
	return a
}

// The roles the user has on the project.
var roles = []wireRole{{ID: roleID("member"), Name: "member"}, {ID: roleID("reader"), Name: "reader"}}

type appCredState struct {
	id, name, secret string
}

type tokenState struct {
	methods []string
	appCred *appCredState // the credential it was issued for, if any
	issued  time.Time
	expires time.Time
	auditID string
	revoked bool
}

// Account returns the identity, with its defaults filled in.
func (s *Server) Account() Account {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.account
}

// AddApplicationCredential makes an application credential of the user,
// for the project, and returns its ID. Clients authenticate with the ID
// and secret, or with the name, the user and secret.
func (s *Server) AddApplicationCredential(name, secret string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ac := range s.appCreds {
		if ac.name == name {
			panic("openstack fake: application credential name " + name + " is taken")
		}
	}
	id := newHexID()
	s.appCreds[id] = &appCredState{id: id, name: name, secret: secret}
	return id
}

// DeleteApplicationCredential deletes an application credential; the
// tokens issued for it are revoked with it, as Keystone revokes them.
func (s *Server) DeleteApplicationCredential(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ac, ok := s.appCreds[id]
	if !ok {
		return fmt.Errorf("openstack fake: no application credential %s", id)
	}
	delete(s.appCreds, id)
	for _, t := range s.tokens {
		if t.appCred == ac {
			t.revoked = true
		}
	}
	return nil
}

// RevokeCredentials refuses the user's password and application
// credentials from now on and revokes every token issued, as disabling
// the user does: authentication answers 401, and so does every service
// for the old tokens. RestoreCredentials undoes the first part.
func (s *Server) RevokeCredentials() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.disabled = true
	s.revokeTokensLocked()
}

// RestoreCredentials accepts the user's credentials again, as enabling
// the user does; the tokens revoked stay revoked.
func (s *Server) RestoreCredentials() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.disabled = false
}

// SetPassword changes the user's password and revokes the user's tokens,
// as Keystone does on a password change.
func (s *Server) SetPassword(password string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.account.Password = password
	s.revokeTokensLocked()
}

// RevokeTokens revokes every token issued so far; credentials still work,
// so clients that authenticate again carry on.
func (s *Server) RevokeTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revokeTokensLocked()
}

func (s *Server) revokeTokensLocked() {
	for _, t := range s.tokens {
		t.revoked = true
	}
}

// SetTokenLifetime sets how long tokens issued from now on last (default
// DefaultTokenLifetime). Expired tokens are refused like revoked ones.
func (s *Server) SetTokenLifetime(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokenLifetime = d
}

// authorized says whether a request carries a valid X-Auth-Token.
func (s *Server) authorized(r *http.Request) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.validTokenLocked(r.Header.Get("X-Auth-Token"))
	return ok
}

func (s *Server) validTokenLocked(id string) (*tokenState, bool) {
	t := s.tokens[id]
	if id == "" || t == nil || t.revoked || !s.now().Before(t.expires) {
		return nil, false
	}
	return t, true
}

func (s *Server) registerKeystone() {
	s.handlePublic(svcIdentity, http.MethodPost, "/identity/v3/auth/tokens", TokensCreate, s.issueToken)
	s.handle(svcIdentity, http.MethodGet, "/identity/v3/auth/tokens", TokensGet, s.validateToken)
	s.handle(svcIdentity, http.MethodHead, "/identity/v3/auth/tokens", TokensCheck, s.checkToken)
	s.handle(svcIdentity, http.MethodDelete, "/identity/v3/auth/tokens", TokensRevoke, s.revokeToken)
}

// The token request, as the Identity API v3 reference gives it.
type authRequest struct {
	Auth *struct {
		Identity *struct {
			Methods  []string `json:"methods"`
			Password *struct {
				User *authUser `json:"user"`
			} `json:"password"`
			Token *struct {
				ID string `json:"id"`
			} `json:"token"`
			ApplicationCredential *struct {
				ID     string    `json:"id"`
				Name   string    `json:"name"`
				Secret string    `json:"secret"`
				User   *authUser `json:"user"`
			} `json:"application_credential"`
		} `json:"identity"`
		Scope *authScope `json:"scope"`
	} `json:"auth"`
}

type authUser struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Password string   `json:"password"`
	Domain   *authRef `json:"domain"`
}

type authRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// authScope is the project asked for; other scopes (domain, system,
// trust) are for roles the user does not have, and answer 401.
type authScope struct {
	Project *struct {
		ID     string   `json:"id"`
		Name   string   `json:"name"`
		Domain *authRef `json:"domain"`
	} `json:"project"`
}

func errBadAuth(message string) (int, any) {
	return errKeystone(http.StatusBadRequest, "Invalid input for field 'identity': "+message)
}

// issueToken: POST /v3/auth/tokens. Any failure of the credentials or of
// the scope is the same 401, as Keystone words it outside debug mode.
func (s *Server) issueToken(c *call) (int, any) {
	var req authRequest
	if err := json.NewDecoder(c.r.Body).Decode(&req); err != nil {
		return errKeystone(http.StatusBadRequest, "Malformed request body: the body is not valid JSON.")
	}
	if req.Auth == nil {
		return errKeystone(http.StatusBadRequest, "Invalid input for field 'auth': 'auth' is a required property")
	}
	id := req.Auth.Identity
	if id == nil {
		return errKeystone(http.StatusBadRequest, "Invalid input for field 'auth': 'identity' is a required property")
	}
	if len(id.Methods) == 0 {
		return errBadAuth("'methods' is a required property")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &tokenState{}
	for _, m := range id.Methods {
		switch {
		case m == "password" && id.Password != nil && id.Password.User != nil:
			if st, body := s.checkUserLocked(id.Password.User, true); st != 0 {
				return st, body
			}
		case m == "token" && id.Token != nil:
			old, ok := s.validTokenLocked(id.Token.ID)
			if !ok || s.disabled {
				return errUnauthorized()
			}
			t.methods = append(t.methods, old.methods...)
			t.appCred = old.appCred
		case m == "application_credential" && id.ApplicationCredential != nil:
			ac := id.ApplicationCredential
			if ac.Secret == "" {
				return errBadAuth("'secret' is a required property")
			}
			found := s.appCreds[ac.ID]
			if ac.ID == "" {
				if ac.Name == "" || ac.User == nil {
					return errBadAuth("an application credential needs an id, or a name and a user")
				}
				if st, body := s.checkUserLocked(ac.User, false); st != 0 {
					return st, body
				}
				for _, cand := range s.appCreds {
					if cand.name == ac.Name {
						found = cand
					}
				}
			}
			if found == nil || found.secret != ac.Secret || s.disabled {
				return errUnauthorized()
			}
			if req.Auth.Scope != nil {
				return errKeystone(http.StatusUnauthorized, "Application credentials cannot request a scope.")
			}
			t.appCred = found
		case m == "password" || m == "token" || m == "application_credential":
			return errBadAuth(fmt.Sprintf("'%s' is a required property", m))
		default:
			return errKeystone(http.StatusUnauthorized, "Attempted to authenticate with an unsupported method.")
		}
		if !slices.Contains(t.methods, m) {
			t.methods = append(t.methods, m)
		}
	}
	if st, body := s.checkScopeLocked(req.Auth.Scope); st != 0 {
		return st, body
	}
	t.issued = s.now()
	t.expires = t.issued.Add(s.tokenLifetime)
	t.auditID = auditID()
	tok := fernetLike()
	s.tokens[tok] = t
	return http.StatusCreated, &headed{body: s.tokenDocLocked(c, t), header: http.Header{"X-Subject-Token": {tok}}}
}

// checkUserLocked checks a user reference (by ID, or by name in a domain)
// and, with password, the user's password.
func (s *Server) checkUserLocked(u *authUser, password bool) (int, any) {
	a := s.account
	if u.ID == "" && (u.Name == "" || u.Domain == nil || u.Domain.ID == "" && u.Domain.Name == "") {
		return errBadAuth("a user needs an id, or a name and a domain")
	}
	match := u.ID == a.UserID
	if u.ID == "" {
		match = u.Name == a.UserName && s.domainMatches(u.Domain)
	}
	if !match || s.disabled || password && u.Password != a.Password {
		return errUnauthorized()
	}
	return 0, nil
}

func (s *Server) domainMatches(d *authRef) bool {
	if d == nil {
		return false
	}
	if d.ID != "" {
		return d.ID == s.account.DomainID
	}
	return d.Name == s.account.DomainName
}

// checkScopeLocked allows the project scope, by ID or by name in a
// domain, and no scope (the user's default project). The user has no
// role on the domain, the system or any trust.
func (s *Server) checkScopeLocked(sc *authScope) (int, any) {
	if sc == nil {
		return 0, nil
	}
	p := sc.Project
	if p == nil {
		return errUnauthorized()
	}
	if p.ID == "" && (p.Name == "" || p.Domain == nil) {
		return errKeystone(http.StatusBadRequest, "Invalid input for field 'scope': a project needs an id, or a name and a domain")
	}
	if p.ID != "" && p.ID != s.account.ProjectID || p.ID == "" && (p.Name != s.account.ProjectName || !s.domainMatches(p.Domain)) {
		return errUnauthorized()
	}
	return 0, nil
}

// validateToken: GET /v3/auth/tokens, the token in X-Subject-Token.
func (s *Server) validateToken(c *call) (int, any) {
	id := c.r.Header.Get("X-Subject-Token")
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.validTokenLocked(id)
	if !ok {
		return errKeystone(http.StatusNotFound, "Could not find token: "+id+".")
	}
	return http.StatusOK, &headed{body: s.tokenDocLocked(c, t), header: http.Header{"X-Subject-Token": {id}}}
}

// checkToken: HEAD /v3/auth/tokens.
func (s *Server) checkToken(c *call) (int, any) {
	st, body := s.validateToken(c)
	if st != http.StatusOK {
		return st, body
	}
	return st, &headed{header: body.(*headed).header}
}

// revokeToken: DELETE /v3/auth/tokens.
func (s *Server) revokeToken(c *call) (int, any) {
	id := c.r.Header.Get("X-Subject-Token")
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.validTokenLocked(id)
	if !ok {
		return errKeystone(http.StatusNotFound, "Could not find token: "+id+".")
	}
	t.revoked = true
	return http.StatusNoContent, nil
}

// tokenDocLocked renders a token, with the catalog unless the request
// says nocatalog.
func (s *Server) tokenDocLocked(c *call, t *tokenState) map[string]any {
	a := s.account
	domain := wireRef{ID: a.DomainID, Name: a.DomainName}
	tok := wireToken{
		Methods:   slices.Clone(t.methods),
		User:      wireTokenUser{Domain: domain, ID: a.UserID, Name: a.UserName},
		AuditIDs:  []string{t.auditID},
		ExpiresAt: stampMicro(t.expires),
		IssuedAt:  stampMicro(t.issued),
		Project:   &wireTokenProject{Domain: domain, ID: a.ProjectID, Name: a.ProjectName},
		IsDomain:  false,
		Roles:     slices.Clone(roles),
	}
	if t.appCred != nil {
		tok.ApplicationCredential = &wireTokenAppCred{ID: t.appCred.id, Name: t.appCred.name, Restricted: true}
	}
	if !c.r.URL.Query().Has("nocatalog") {
		tok.Catalog = s.catalogLocked(c.host)
	}
	return map[string]any{"token": tok}
}

// catalogService is one entry of the catalog: the service's type and
// name as devstack registers them, and where each region serves it.
type catalogService struct {
	typ, name string
	path      func(prefix, project string) string
}

var catalogServices = []catalogService{
	// Keystone serves every region from one place.
	{"identity", "keystone", func(string, string) string { return "/identity" }},
	{"compute", "nova", func(p, _ string) string { return p + "/compute/v2.1" }},
	{"network", "neutron", func(p, _ string) string { return p + "/network" }},
	{"load-balancer", "octavia", func(p, _ string) string { return p + "/load-balancer" }},
	// Glance is in every cloud's catalog, and clients build its client
	// before a server listing (openstackclient does); its API is not
	// served: nothing polyccm does reads images.
	{"image", "glance", func(p, _ string) string { return p + "/image" }},
	// Cinder's endpoint carries the project, as devstack registers it
	// (".../v3/$(project_id)s") and clouds publish it.
	{"volumev3", "cinderv3", func(p, project string) string { return p + "/volume/v3/" + project }},
}

// catalogLocked lists every service in every region, each with a public
// and an internal endpoint: clients choose by region and interface.
func (s *Server) catalogLocked(host string) []wireCatalogEntry {
	var out []wireCatalogEntry
	for _, svc := range catalogServices {
		e := wireCatalogEntry{ID: stableID("service", svc.typ), Name: svc.name, Type: svc.typ}
		for _, region := range s.regions {
			url := host + svc.path(s.regionPrefixLocked(region), s.account.ProjectID)
			for _, iface := range []string{"public", "internal"} {
				e.Endpoints = append(e.Endpoints, wireEndpoint{ID: stableID("endpoint", svc.typ, region, iface),
					Interface: iface, Region: region, RegionID: region, URL: url})
			}
		}
		out = append(out, e)
	}
	return out
}

// stableID derives a Keystone-style ID from names, so the catalog's IDs
// stay the same from token to token.
func stableID(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p + "\x00"))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func roleID(name string) string { return stableID("role", name) }

// fernetLike makes a token ID that looks like Keystone's Fernet tokens:
// "gAAAAA", then URL-safe base64 without padding, 180-odd characters.
func fernetLike() string {
	var b [132]byte
	_, _ = rand.Read(b[:])
	return "gAAAAA" + base64.RawURLEncoding.EncodeToString(b[:])
}

// auditID is a token's audit ID: 16 random bytes, URL-safe base64.
func auditID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
