package gce

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// TokenPath is where the fake's OAuth 2.0 token endpoint answers, the
// token_uri of the service-account keys it issues.
const TokenPath = "/token"

const jwtBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer"

// serviceAccounts are keys the fake issued: the public half checks the
// signed JWTs clients exchange for access tokens, as Google's token
// endpoint does.
type serviceAccounts struct {
	mu   sync.Mutex
	keys map[string]*rsa.PublicKey // private_key_id -> key
	mail map[string]string         // private_key_id -> client_email
}

func (s *Server) accounts() *serviceAccounts {
	s.saOnce.Do(func() {
		s.sa = &serviceAccounts{keys: map[string]*rsa.PublicKey{}, mail: map[string]string{}}
	})
	return s.sa
}

// ServiceAccountKey makes a service-account key file (JSON, as the IAM API
// returns it) whose token_uri is this fake: a client using it signs a JWT,
// exchanges it here, and receives the API's current token. Start the
// server first.
func (s *Server) ServiceAccountKey(email string) ([]byte, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	var idb [20]byte
	if _, err := rand.Read(idb[:]); err != nil {
		return nil, err
	}
	id := hex.EncodeToString(idb[:])
	a := s.accounts()
	a.mu.Lock()
	a.keys[id] = &key.PublicKey
	a.mail[id] = email
	a.mu.Unlock()
	return json.MarshalIndent(map[string]string{
		"type":                        "service_account",
		"project_id":                  s.Project(),
		"private_key_id":              id,
		"private_key":                 string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":                email,
		"client_id":                   "1" + id[:20],
		"auth_uri":                    "https://accounts.google.com/o/oauth2/auth",
		"token_uri":                   s.URL() + TokenPath,
		"auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
		"universe_domain":             "googleapis.com",
	}, "", "  ")
}

// serveToken answers the JWT-bearer grant of RFC 7523 like Google's token
// endpoint: the assertion must be signed (RS256) by a key this fake issued,
// name that key's account as issuer, this endpoint as audience, and not be
// expired.
func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	fail := func(code, desc string) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
	}
	if r.Method != http.MethodPost {
		fail("invalid_request", "Only POST is supported.")
		return
	}
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != jwtBearerGrant {
		fail("unsupported_grant_type", "Invalid grant_type: "+r.PostForm.Get("grant_type"))
		return
	}
	parts := strings.Split(r.PostForm.Get("assertion"), ".")
	if len(parts) != 3 {
		fail("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.")
		return
	}
	var hdr struct{ Alg, Kid string }
	var claims struct {
		Iss   string `json:"iss"`
		Aud   string `json:"aud"`
		Exp   int64  `json:"exp"`
		Iat   int64  `json:"iat"`
		Scope string `json:"scope"`
	}
	if err := decodeSegment(parts[0], &hdr); err != nil || hdr.Alg != "RS256" {
		fail("invalid_grant", "Invalid JWT header.")
		return
	}
	if err := decodeSegment(parts[1], &claims); err != nil {
		fail("invalid_grant", "Invalid JWT payload.")
		return
	}
	a := s.accounts()
	a.mu.Lock()
	pub, email := a.keys[hdr.Kid], a.mail[hdr.Kid]
	a.mu.Unlock()
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if pub == nil || err != nil || rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig) != nil {
		fail("invalid_grant", "Invalid JWT Signature.")
		return
	}
	now := time.Now().Unix()
	switch {
	case claims.Iss != email:
		fail("invalid_grant", "Invalid JWT: issuer does not match the key's account.")
		return
	case claims.Aud != s.URL()+TokenPath:
		fail("invalid_grant", fmt.Sprintf("Invalid JWT: audience %q is not %s.", claims.Aud, s.URL()+TokenPath))
		return
	case claims.Exp < now || claims.Iat > now+300:
		fail("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim.")
		return
	}
	s.mu.Lock()
	tok := s.token
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "expires_in": 3599, "token_type": "Bearer"})
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
