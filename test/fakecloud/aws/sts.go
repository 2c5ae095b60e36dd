package aws

import (
	"net/http"
	"regexp"
	"time"
)

func stsActions() map[string]actionFunc {
	return map[string]actionFunc{
		"AssumeRole":        (*Server).assumeRole,
		"GetCallerIdentity": (*Server).getCallerIdentity,
	}
}

var (
	roleARNPattern     = regexp.MustCompile(`^arn:aws[a-z-]*:iam::(\d{12}):role/(?:[\w+=,.@/-]*/)?([\w+=,.@-]{1,64})$`)
	sessionNamePattern = regexp.MustCompile(`^[\w+=,.@-]*$`)
)

// Session durations AssumeRole accepts: from 15 minutes up to the role's
// maximum session duration, one hour unless the role says otherwise.
const (
	minSessionDuration     = 15 * time.Minute
	defaultSessionDuration = time.Hour
	maxSessionDuration     = time.Hour
)

type xmlCredentials struct {
	AccessKeyID     string `xml:"AccessKeyId"`
	SecretAccessKey string `xml:"SecretAccessKey"`
	SessionToken    string `xml:"SessionToken"`
	Expiration      string `xml:"Expiration"`
}

type xmlAssumedRoleUser struct {
	AssumedRoleID string `xml:"AssumedRoleId"`
	Arn           string `xml:"Arn"`
}

type xmlAssumeRole struct {
	SourceIdentity  string             `xml:"SourceIdentity,omitempty"`
	AssumedRoleUser xmlAssumedRoleUser `xml:"AssumedRoleUser"`
	Credentials     xmlCredentials     `xml:"Credentials"`
}

type xmlCallerIdentity struct {
	Arn     string `xml:"Arn"`
	UserID  string `xml:"UserId"`
	Account string `xml:"Account"`
}

// roleIDLocked returns the stable unique id (AROA...) of a role.
func (s *Server) roleIDLocked(roleARN string) string {
	id := s.auth.roleIDs[roleARN]
	if id == "" {
		id = "AROA" + s.alnum(upperAlnum, 17)
		s.auth.roleIDs[roleARN] = id
	}
	return id
}

func (s *Server) assumeRole(c *call) (any, *apiError) {
	roleARN, ok := c.p.str("RoleArn")
	if !ok {
		return nil, missing("roleArn")
	}
	m := roleARNPattern.FindStringSubmatch(roleARN)
	if m == nil {
		return nil, validation("%s is invalid", roleARN)
	}
	roleName := m[2]
	session, ok := c.p.str("RoleSessionName")
	switch {
	case !ok:
		return nil, missing("roleSessionName")
	case len(session) < 2:
		return nil, validation("1 validation error detected: Value '%s' at 'roleSessionName' failed to satisfy constraint: Member must have length greater than or equal to 2", session)
	case len(session) > 64:
		return nil, validation("1 validation error detected: Value '%s' at 'roleSessionName' failed to satisfy constraint: Member must have length less than or equal to 64", session)
	case !sessionNamePattern.MatchString(session):
		return nil, validation("1 validation error detected: Value '%s' at 'roleSessionName' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\w+=,.@-]*", session)
	}
	d := defaultSessionDuration
	if ds := c.p.integer("DurationSeconds"); ds.sent {
		switch {
		case !ds.ok || time.Duration(ds.n)*time.Second < minSessionDuration:
			return nil, validation("1 validation error detected: Value '%s' at 'durationSeconds' failed to satisfy constraint: Member must have value greater than or equal to 900", ds.raw)
		case time.Duration(ds.n)*time.Second > maxSessionDuration:
			return nil, validation("The requested DurationSeconds exceeds the MaxSessionDuration set for this role.")
		}
		d = time.Duration(ds.n) * time.Second
	}
	if want, ok := s.auth.externalIDs[roleARN]; ok && c.p.get("ExternalId") != want {
		return nil, errorf(http.StatusForbidden, "AccessDenied", "User: %s is not authorized to perform: sts:AssumeRole on resource: %s", c.caller.who.arn, roleARN)
	}
	cred := s.issueSessionLocked(m[1], roleName, session, d)
	return &xmlAssumeRole{
		SourceIdentity:  c.p.get("SourceIdentity"),
		AssumedRoleUser: xmlAssumedRoleUser{AssumedRoleID: cred.who.userID, Arn: cred.who.arn},
		Credentials: xmlCredentials{
			AccessKeyID: cred.accessKey, SecretAccessKey: cred.secret, SessionToken: cred.token,
			Expiration: cred.expires.UTC().Format(time.RFC3339),
		},
	}, nil
}

func (s *Server) getCallerIdentity(c *call) (any, *apiError) {
	who := c.caller.who
	if who.arn == "" {
		who = s.userIdentityLocked()
	}
	return &xmlCallerIdentity{Arn: who.arn, UserID: who.userID, Account: who.account}, nil
}
