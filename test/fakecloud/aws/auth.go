package aws

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// credential is an access key the fake accepts.
type credential struct {
	accessKey string
	secret    string
	// token is the session token of temporary credentials, which must
	// come with every request signed by them (X-Amz-Security-Token).
	token     string
	temporary bool
	expires   time.Time // temporary credentials only
	revoked   bool
	who       identity
}

// identity is who signed a request, as GetCallerIdentity reports it.
type identity struct {
	arn     string
	userID  string
	account string
}

type authState struct {
	keys    map[string]*credential
	userKey string // the current long-term key of the default user
	userID  string
	// denied holds IAM actions ("ec2:CreateRoute") every caller is denied.
	denied map[string]bool
	// externalIDs holds the ExternalId a role's trust policy requires.
	externalIDs map[string]string
	roleIDs     map[string]string // role ARN -> AROA... unique id
}

func (a *authState) init() {
	a.keys = map[string]*credential{}
	a.denied = map[string]bool{}
	a.externalIDs = map[string]string{}
	a.roleIDs = map[string]string{}
}

func (a *authState) setUserKey(accessKey, secret string) {
	if old := a.keys[a.userKey]; old != nil && a.userKey != accessKey {
		delete(a.keys, a.userKey)
	}
	a.userKey = accessKey
	a.keys[accessKey] = &credential{accessKey: accessKey, secret: secret}
}

// SetCredentials replaces the long-term access key of the fake's IAM user,
// as when a key is rotated: the old key stops working (InvalidClientTokenId
// on ELBv2 and STS, AuthFailure on EC2). Temporary credentials issued
// before stay valid until they expire, as on AWS; keys added with
// AddCredentials are untouched.
func (s *Server) SetCredentials(accessKey, secretKey string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.auth.setUserKey(accessKey, secretKey)
}

// AddCredentials adds another long-term access key of the fake's IAM user.
func (s *Server) AddCredentials(accessKey, secretKey string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.auth.keys[accessKey] = &credential{accessKey: accessKey, secret: secretKey}
}

// RevokeAll revokes every credential the fake has accepted so far,
// long-term and temporary (IMDS role credentials too): requests signed with
// them fail as if the keys never existed. SetCredentials or AddCredentials
// install working keys again; the IMDS role hands out fresh credentials.
func (s *Server) RevokeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.auth.keys {
		c.revoked = true
	}
}

// ExpireSessions makes every temporary credential (from AssumeRole or the
// IMDS role) expire now: requests signed with them get ExpiredToken (ELBv2,
// STS) or RequestExpired (EC2). The IMDS role hands out fresh credentials.
func (s *Server) ExpireSessions() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for _, c := range s.auth.keys {
		if c.temporary && c.expires.After(now) {
			c.expires = now.Add(-time.Second)
		}
	}
}

// Deny makes every caller lack permission for the given IAM actions, e.g.
// "ec2:CreateRoute", "elasticloadbalancing:CreateLoadBalancer",
// "sts:AssumeRole": EC2 answers UnauthorizedOperation, ELBv2 and STS
// AccessDenied, all with HTTP 403. A trailing "*" denies by prefix
// ("ec2:*"). sts:GetCallerIdentity cannot be denied, as on AWS.
func (s *Server) Deny(actions ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range actions {
		s.auth.denied[a] = true
	}
}

// Allow undoes Deny for the given actions (exactly as they were denied).
func (s *Server) Allow(actions ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range actions {
		delete(s.auth.denied, a)
	}
}

// SetRoleExternalID makes AssumeRole of roleARN require ExternalId
// externalID, as a trust policy with sts:ExternalId does; "" removes the
// requirement.
func (s *Server) SetRoleExternalID(roleARN, externalID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if externalID == "" {
		delete(s.auth.externalIDs, roleARN)
		return
	}
	s.auth.externalIDs[roleARN] = externalID
}

func (a *authState) deniedAction(iamAction string) bool {
	if a.denied[iamAction] {
		return true
	}
	for d := range a.denied {
		if p, ok := strings.CutSuffix(d, "*"); ok && strings.HasPrefix(iamAction, p) {
			return true
		}
	}
	return false
}

// userIdentity is the identity of the long-term keys.
func (s *Server) userIdentityLocked() identity {
	if s.auth.userID == "" {
		s.auth.userID = "AIDA" + s.alnum(upperAlnum, 17)
	}
	return identity{
		arn:     "arn:aws:iam::" + s.account + ":user/" + DefaultUserName,
		userID:  s.auth.userID,
		account: s.account,
	}
}

// issueSessionLocked creates temporary credentials for a session of the
// role roleName of account. Callers hold s.mu.
func (s *Server) issueSessionLocked(account, roleName, session string, d time.Duration) *credential {
	roleID := s.roleIDLocked("arn:aws:iam::" + account + ":role/" + roleName)
	c := &credential{
		accessKey: "ASIA" + s.alnum(upperAlnum, 16),
		secret:    s.alnum(base64Set, 40),
		token:     "IQoJb3JpZ2luX2VjE" + s.alnum(base64Set, 300),
		temporary: true,
		expires:   s.now().Add(d).Truncate(time.Second),
		who: identity{
			arn:     "arn:aws:sts::" + account + ":assumed-role/" + roleName + "/" + session,
			userID:  roleID + ":" + session,
			account: account,
		},
	}
	s.auth.keys[c.accessKey] = c
	return c
}

// authProblem is what is wrong with a request's authentication.
type authProblem int

const (
	authUnsigned authProblem = iota
	authIncomplete
	authUnknownKey
	authBadSignature
	authExpiredToken
	authWrongScope
	authStale
)

// authError is the error a service answers an authentication problem
// with: EC2 has its own codes and statuses, the AWS query services share
// theirs.
func (svc *service) authError(p authProblem, detail string) *apiError {
	if svc.ec2Style {
		switch p {
		case authUnsigned:
			return badRequest("MissingParameter", "The request must contain the parameter AWSAccessKeyId")
		case authIncomplete:
			return badRequest("IncompleteSignature", "%s", detail)
		case authExpiredToken, authStale:
			return badRequest("RequestExpired", "Request has expired.")
		case authWrongScope:
			return errorf(http.StatusUnauthorized, "AuthFailure", "%s", detail)
		default:
			return errorf(http.StatusUnauthorized, "AuthFailure", "AWS was not able to validate the provided access credentials")
		}
	}
	switch p {
	case authUnsigned:
		return errorf(http.StatusForbidden, "MissingAuthenticationToken", "Request is missing Authentication Token")
	case authIncomplete:
		return errorf(http.StatusForbidden, "IncompleteSignature", "%s", detail)
	case authUnknownKey:
		return errorf(http.StatusForbidden, "InvalidClientTokenId", "The security token included in the request is invalid.")
	case authExpiredToken:
		return errorf(http.StatusForbidden, "ExpiredToken", "The security token included in the request is expired")
	case authWrongScope, authStale:
		return errorf(http.StatusForbidden, "SignatureDoesNotMatch", "%s", detail)
	default:
		return errorf(http.StatusForbidden, "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.")
	}
}

// maxSkew is how far a request's signing time may be from the server's
// clock, on either side.
const maxSkew = 15 * time.Minute

const amzDateFormat = "20060102T150405Z"

// authenticate verifies a request's Signature Version 4 Authorization
// header against the known credentials and returns who signed it.
// Callers hold s.mu.
func (s *Server) authenticateLocked(r *http.Request, body []byte, svc *service) (*credential, *apiError) {
	authz := r.Header.Get("Authorization")
	if authz == "" {
		return nil, svc.authError(authUnsigned, "")
	}
	sig, err := parseAuthorization(authz)
	if err != "" {
		return nil, svc.authError(authIncomplete, err)
	}
	scope := strings.Split(sig.scope, "/")
	if len(scope) != 4 || scope[3] != "aws4_request" {
		return nil, svc.authError(authIncomplete, "Credential should be scoped with a valid terminator: 'aws4_request', not '"+sig.scope+"'.")
	}
	date, region, service := scope[0], scope[1], scope[2]
	if region != s.region {
		return nil, svc.authError(authWrongScope, "Credential should be scoped to a valid region. ")
	}
	if service != svc.signingName {
		return nil, svc.authError(authWrongScope, "Credential should be scoped to correct service: '"+svc.signingName+"'. ")
	}

	c := s.auth.keys[sig.accessKey]
	if c == nil || c.revoked {
		return nil, svc.authError(authUnknownKey, "")
	}
	token := r.Header.Get("X-Amz-Security-Token")
	if c.temporary != (token != "") || token != c.token {
		return nil, svc.authError(authUnknownKey, "")
	}

	amzDate := r.Header.Get("X-Amz-Date")
	if amzDate == "" {
		return nil, svc.authError(authIncomplete, "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header. Authorization="+authz)
	}
	signed, perr := time.Parse(amzDateFormat, amzDate)
	if perr != nil {
		return nil, svc.authError(authIncomplete, "Date must be in ISO-8601 'basic format'. Got '"+amzDate+"'. See http://en.wikipedia.org/wiki/ISO_8601")
	}
	if date != amzDate[:8] {
		return nil, svc.authError(authBadSignature, "")
	}
	// The signing time is checked against the wall clock the SDK signs
	// with, not the fake's (possibly moved) clock.
	wall := time.Now().UTC()
	switch {
	case signed.Before(wall.Add(-maxSkew)):
		return nil, svc.authError(authStale, "Signature expired: "+amzDate+" is now earlier than "+wall.Add(-maxSkew).Format(amzDateFormat)+" ("+wall.Format(amzDateFormat)+" - 15 min.)")
	case signed.After(wall.Add(maxSkew)):
		return nil, svc.authError(authStale, "Signature not yet current: "+amzDate+" is still later than "+wall.Add(maxSkew).Format(amzDateFormat)+" ("+wall.Format(amzDateFormat)+" + 15 min.)")
	}

	if !slices.Contains(sig.signedHeaders, "host") {
		return nil, svc.authError(authBadSignature, "")
	}
	want := signature(c.secret, date, region, service, stringToSign(amzDate, sig.scope, canonicalRequest(r, body, sig.signedHeaders)))
	if !hmac.Equal([]byte(want), []byte(sig.signature)) {
		return nil, svc.authError(authBadSignature, "")
	}
	// A good signature with an expired session token: the token is
	// checked last, so a bad signature never learns whether it expired.
	if c.temporary && !s.now().Before(c.expires) {
		return nil, svc.authError(authExpiredToken, "")
	}
	if c.who.arn == "" {
		c.who = s.userIdentityLocked()
	}
	return c, nil
}

type authorization struct {
	accessKey     string
	scope         string // date/region/service/aws4_request
	signedHeaders []string
	signature     string
}

// parseAuthorization reads "AWS4-HMAC-SHA256 Credential=AKID/scope,
// SignedHeaders=a;b, Signature=hex". It returns a message on failure.
func parseAuthorization(h string) (authorization, string) {
	var a authorization
	alg, rest, ok := strings.Cut(h, " ")
	if !ok || alg != "AWS4-HMAC-SHA256" {
		return a, "Unsupported AWS 'algorithm': '" + alg + "'"
	}
	for part := range strings.SplitSeq(rest, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "Credential":
			a.accessKey, a.scope, _ = strings.Cut(v, "/")
		case "SignedHeaders":
			a.signedHeaders = strings.Split(v, ";")
		case "Signature":
			a.signature = v
		}
	}
	switch {
	case a.accessKey == "" || a.scope == "":
		return a, "Authorization header requires 'Credential' parameter. Authorization=" + h
	case len(a.signedHeaders) == 0 || a.signedHeaders[0] == "":
		return a, "Authorization header requires 'SignedHeaders' parameter. Authorization=" + h
	case a.signature == "":
		return a, "Authorization header requires 'Signature' parameter. Authorization=" + h
	}
	return a, ""
}

// canonicalRequest builds the SigV4 canonical request from what the server
// received, the way the signer built it from what it sent.
func canonicalRequest(r *http.Request, body []byte, signedHeaders []string) string {
	var b strings.Builder
	b.WriteString(r.Method)
	b.WriteByte('\n')
	path := r.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	b.WriteString(escapeURIPath(path))
	b.WriteByte('\n')
	b.WriteString(canonicalQuery(r.URL.RawQuery))
	b.WriteByte('\n')
	for _, h := range signedHeaders {
		b.WriteString(h)
		b.WriteByte(':')
		switch h {
		case "host":
			b.WriteString(stripExcessSpaces(r.Host))
		case "content-length":
			v := r.Header.Get("Content-Length")
			if v == "" {
				v = strconv.FormatInt(r.ContentLength, 10)
			}
			b.WriteString(v)
		default:
			vals := r.Header.Values(h)
			for k, v := range vals {
				if k > 0 {
					b.WriteByte(',')
				}
				b.WriteString(strings.TrimSpace(stripExcessSpaces(v)))
			}
		}
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(strings.Join(signedHeaders, ";"))
	b.WriteByte('\n')
	if ph := r.Header.Get("X-Amz-Content-Sha256"); ph != "" {
		b.WriteString(ph)
	} else {
		sum := sha256.Sum256(body)
		b.WriteString(hex.EncodeToString(sum[:]))
	}
	return b.String()
}

func stringToSign(amzDate, scope, canonical string) string {
	sum := sha256.Sum256([]byte(canonical))
	return "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
}

func signature(secret, date, region, service, toSign string) string {
	k := hmacSHA256([]byte("AWS4"+secret), date)
	k = hmacSHA256(k, region)
	k = hmacSHA256(k, service)
	k = hmacSHA256(k, "aws4_request")
	return hex.EncodeToString(hmacSHA256(k, toSign))
}

func hmacSHA256(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}

// escapeURIPath escapes every byte but unreserved characters and '/', as
// SigV4 wants for services other than S3 (so an already escaped path is
// escaped twice).
func escapeURIPath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if isUnreserved(c) || c == '/' {
			b.WriteByte(c)
		} else {
			b.WriteString("%" + strings.ToUpper(hex.EncodeToString([]byte{c})))
		}
	}
	return b.String()
}

func escapeQueryComponent(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isUnreserved(c) {
			b.WriteByte(c)
		} else {
			b.WriteString("%" + strings.ToUpper(hex.EncodeToString([]byte{c})))
		}
	}
	return b.String()
}

func isUnreserved(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

func canonicalQuery(raw string) string {
	if raw == "" {
		return ""
	}
	type kv struct{ k, v string }
	var pairs []kv
	for part := range strings.SplitSeq(raw, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		k, v = unescapeQuery(k), unescapeQuery(v)
		pairs = append(pairs, kv{escapeQueryComponent(k), escapeQueryComponent(v)})
	}
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i].k != pairs[j].k {
			return pairs[i].k < pairs[j].k
		}
		return pairs[i].v < pairs[j].v
	})
	out := make([]string, len(pairs))
	for i, p := range pairs {
		out[i] = p.k + "=" + p.v
	}
	return strings.Join(out, "&")
}

// unescapeQuery decodes %XX escapes; unlike url.QueryUnescape it leaves '+'
// alone, as AWS does when canonicalizing.
func unescapeQuery(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := hex.DecodeString(s[i+1 : i+3]); err == nil {
				b.WriteByte(v[0])
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// stripExcessSpaces trims spaces and collapses inner runs to one, as the
// signer does to header values.
func stripExcessSpaces(s string) string {
	s = strings.Trim(s, " ")
	if !strings.Contains(s, "  ") {
		return s
	}
	var b strings.Builder
	space := false
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			if space {
				continue
			}
			space = true
		} else {
			space = false
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
