package aws

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// IMDS: the instance metadata service of the instance SetIMDSInstance
// picks, IMDSv2 style. PUT /latest/api/token with
// X-aws-ec2-metadata-token-ttl-seconds (1..21600) returns a token; GETs
// must carry it in X-aws-ec2-metadata-token (a missing, unknown or expired
// token gets 401) unless SetIMDSTokenRequired(false) allows IMDSv1. The
// role set with SetIMDSRole serves credentials under
// /latest/meta-data/iam/security-credentials/ROLE that the fake's other
// APIs accept.

type imdsState struct {
	instanceID  string
	role        string
	tokens      map[string]time.Time // token -> expiry
	optional    bool                 // IMDSv1 allowed
	creds       *credential
	credsIssued time.Time
	profileID   string
}

func (m *imdsState) init() {
	m.tokens = map[string]time.Time{}
}

// SetIMDSInstance picks the instance the metadata service describes; ""
// makes every metadata path 404.
func (s *Server) SetIMDSInstance(instanceID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if instanceID != "" && s.ec2.instances[instanceID] == nil {
		return fmt.Errorf("aws fake: no instance %s", instanceID)
	}
	s.imds.instanceID = instanceID
	s.imds.creds = nil
	return nil
}

// SetIMDSRole attaches an instance profile with the named role to the
// metadata instance; "" detaches it.
func (s *Server) SetIMDSRole(role string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.imds.role = role
	s.imds.creds = nil
}

// SetIMDSTokenRequired says whether GETs need a session token (IMDSv2
// only, the default) or may come without one (IMDSv1 allowed).
func (s *Server) SetIMDSTokenRequired(required bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.imds.optional = !required
}

// IMDSCredentials returns the access key the IMDS role currently hands
// out, "" if none has been fetched.
func (s *Server) IMDSCredentials() (accessKey string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.imds.creds == nil {
		return ""
	}
	return s.imds.creds.accessKey
}

const (
	imdsTokenHeader = "X-Aws-Ec2-Metadata-Token"
	imdsTTLHeader   = "X-Aws-Ec2-Metadata-Token-Ttl-Seconds"
	imdsMaxTTL      = 21600
)

// imdsReply is an IMDS answer; kept as a value so an AfterCommit fault can
// discard it.
type imdsReply struct {
	status int
	body   string
	header http.Header
}

func (s *Server) serveIMDS(w http.ResponseWriter, r *http.Request) {
	endpoint := "imds " + r.Method + " " + imdsPattern(r.URL.Path)
	d, r, done := s.srv.Intercept(r, endpoint)
	defer done()
	var rep imdsReply
	switch {
	case d.Status != 0:
		if d.AfterCommit {
			s.imdsAnswer(r)
		}
		st := d.Status
		if d.Throttled {
			st = http.StatusTooManyRequests
		}
		rep = imdsError(st)
	default:
		rep = s.imdsAnswer(r)
	}
	h := w.Header()
	for k, v := range rep.header {
		h[k] = v
	}
	h.Set("Server", "EC2ws")
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "text/plain")
	}
	h.Set("Content-Length", strconv.Itoa(len(rep.body)))
	w.WriteHeader(rep.status)
	if r.Method != http.MethodHead {
		_, _ = w.Write([]byte(rep.body))
	}
	s.srv.Record(endpoint, rep.status)
}

// imdsPattern names a metadata path for counting, with the MAC and role
// replaced by placeholders.
func imdsPattern(path string) string {
	parts := strings.Split(path, "/")
	for k := range parts {
		if k > 0 && parts[k-1] == "macs" && parts[k] != "" {
			parts[k] = "{mac}"
		}
		if k > 0 && parts[k-1] == "security-credentials" && parts[k] != "" {
			parts[k] = "{role}"
		}
	}
	return strings.Join(parts, "/")
}

func imdsError(status int) imdsReply {
	text := fmt.Sprintf("%d - %s", status, http.StatusText(status))
	body := `<?xml version="1.0" encoding="iso-8859-1"?>
<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Transitional//EN"
	"http://www.w3.org/TR/xhtml1/DTD/xhtml1-transitional.dtd">
<html xmlns="http://www.w3.org/1999/xhtml" xml:lang="en" lang="en">
 <head>
  <title>` + text + `</title>
 </head>
 <body>
  <h1>` + text + `</h1>
 </body>
</html>
`
	return imdsReply{status: status, body: body, header: http.Header{"Content-Type": {"text/html"}}}
}

func imdsText(body string) imdsReply { return imdsReply{status: http.StatusOK, body: body} }

func (s *Server) imdsAnswer(r *http.Request) imdsReply {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if r.Header.Get("X-Forwarded-For") != "" {
		return imdsError(http.StatusForbidden)
	}
	if r.URL.Path == "/latest/api/token" {
		if r.Method != http.MethodPut {
			return imdsError(http.StatusMethodNotAllowed)
		}
		ttl, err := strconv.Atoi(r.Header.Get(imdsTTLHeader))
		if err != nil || ttl < 1 || ttl > imdsMaxTTL {
			return imdsError(http.StatusBadRequest)
		}
		tok := s.alnum(base64Set[:62], 56) + "=="
		s.imds.tokens[tok] = now.Add(time.Duration(ttl) * time.Second)
		return imdsReply{status: http.StatusOK, body: tok, header: http.Header{imdsTTLHeader: {strconv.Itoa(ttl)}}}
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return imdsError(http.StatusMethodNotAllowed)
	}
	if tok := r.Header.Get(imdsTokenHeader); tok != "" {
		exp, ok := s.imds.tokens[tok]
		if !ok || !now.Before(exp) {
			return imdsError(http.StatusUnauthorized)
		}
	} else if !s.imds.optional {
		return imdsError(http.StatusUnauthorized)
	}
	return s.imdsGetLocked(r.URL.Path, now)
}

func listing(items ...string) imdsReply {
	var out []string
	for _, i := range items {
		if i != "" {
			out = append(out, i)
		}
	}
	return imdsText(strings.Join(out, "\n"))
}

func (s *Server) imdsGetLocked(path string, now time.Time) imdsReply {
	if path == "/latest" || path == "/latest/" {
		return listing("dynamic", "meta-data")
	}
	inst := s.ec2.instances[s.imds.instanceID]
	if inst == nil {
		return imdsError(http.StatusNotFound)
	}
	sub := s.ec2.subnets[inst.SubnetID]
	vpc := s.ec2.vpcs[inst.VPCID]
	zone, _ := s.zoneLocked(inst.AvailabilityZone)
	ifPublic := func(v string) string {
		if inst.PublicIP == "" {
			return ""
		}
		return v
	}
	ifRole := func(v string) string {
		if s.imds.role == "" {
			return ""
		}
		return v
	}
	macBase := "/latest/meta-data/network/interfaces/macs/" + inst.MACAddress + "/"
	macLeaves := map[string]string{
		"device-number":      "0",
		"interface-id":       inst.NetworkInterfaceID,
		"local-hostname":     inst.PrivateDNSName,
		"local-ipv4s":        inst.PrivateIP,
		"mac":                inst.MACAddress,
		"owner-id":           s.account,
		"security-group-ids": strings.Join(inst.SecurityGroupIDs, "\n"),
		"subnet-id":          inst.SubnetID,
		"vpc-id":             inst.VPCID,
	}
	if sub != nil {
		macLeaves["subnet-ipv4-cidr-block"] = sub.CIDRBlock
	}
	if vpc != nil {
		macLeaves["vpc-ipv4-cidr-block"] = vpc.CIDRBlock
		macLeaves["vpc-ipv4-cidr-blocks"] = vpc.CIDRBlock
	}
	if len(inst.IPv6Addresses) > 0 {
		macLeaves["ipv6s"] = strings.Join(inst.IPv6Addresses, "\n")
	}
	if inst.PublicIP != "" {
		macLeaves["public-ipv4s"] = inst.PublicIP
		macLeaves["public-hostname"] = inst.PublicDNSName
	}
	if v, ok := strings.CutPrefix(path, macBase); ok {
		if v == "" {
			return listing(sortedKeys(macLeaves)...)
		}
		if leaf, ok := macLeaves[v]; ok {
			return imdsText(leaf)
		}
		return imdsError(http.StatusNotFound)
	}
	credsBase := "/latest/meta-data/iam/security-credentials/"
	if role, ok := strings.CutPrefix(path, credsBase); ok && role != "" && s.imds.role != "" {
		if strings.TrimSuffix(role, "/") != s.imds.role {
			return imdsError(http.StatusNotFound)
		}
		return s.imdsCredentialsLocked(now)
	}
	switch path {
	case "/latest/meta-data", "/latest/meta-data/":
		return listing("ami-id", "hostname", ifRole("iam/"), "instance-id", "instance-type", "local-hostname",
			"local-ipv4", "mac", "network/", "placement/", ifPublic("public-hostname"), ifPublic("public-ipv4"), "services/")
	case "/latest/meta-data/ami-id":
		return imdsText(inst.ImageID)
	case "/latest/meta-data/instance-id":
		return imdsText(inst.ID)
	case "/latest/meta-data/instance-type":
		return imdsText(inst.InstanceType)
	case "/latest/meta-data/hostname", "/latest/meta-data/local-hostname":
		return imdsText(inst.PrivateDNSName)
	case "/latest/meta-data/local-ipv4":
		return imdsText(inst.PrivateIP)
	case "/latest/meta-data/mac":
		return imdsText(inst.MACAddress)
	case "/latest/meta-data/public-ipv4":
		if inst.PublicIP != "" {
			return imdsText(inst.PublicIP)
		}
	case "/latest/meta-data/public-hostname":
		if inst.PublicIP != "" {
			return imdsText(inst.PublicDNSName)
		}
	case "/latest/meta-data/placement/":
		return listing("availability-zone", "availability-zone-id", "region")
	case "/latest/meta-data/placement/availability-zone":
		return imdsText(inst.AvailabilityZone)
	case "/latest/meta-data/placement/availability-zone-id":
		return imdsText(zone.ID)
	case "/latest/meta-data/placement/region":
		return imdsText(s.region)
	case "/latest/meta-data/network/":
		return listing("interfaces/")
	case "/latest/meta-data/network/interfaces/":
		return listing("macs/")
	case "/latest/meta-data/network/interfaces/macs/":
		return listing(inst.MACAddress + "/")
	case "/latest/meta-data/services/":
		return listing("domain", "partition")
	case "/latest/meta-data/services/domain":
		return imdsText("amazonaws.com")
	case "/latest/meta-data/services/partition":
		return imdsText("aws")
	case "/latest/meta-data/iam/":
		if s.imds.role != "" {
			return listing("info", "security-credentials/")
		}
	case "/latest/meta-data/iam/info":
		if s.imds.role != "" {
			if s.imds.profileID == "" {
				s.imds.profileID = "AIPA" + s.alnum(upperAlnum, 17)
			}
			return imdsJSON(struct {
				Code               string
				LastUpdated        string
				InstanceProfileArn string
				InstanceProfileId  string
			}{"Success", now.UTC().Format(time.RFC3339), "arn:aws:iam::" + s.account + ":instance-profile/" + s.imds.role, s.imds.profileID})
		}
	case credsBase:
		if s.imds.role != "" {
			return imdsText(s.imds.role)
		}
	case "/latest/dynamic", "/latest/dynamic/":
		return listing("instance-identity/")
	case "/latest/dynamic/instance-identity/":
		return listing("document")
	case "/latest/dynamic/instance-identity/document":
		return imdsJSON(struct {
			AccountID               string   `json:"accountId"`
			Architecture            string   `json:"architecture"`
			AvailabilityZone        string   `json:"availabilityZone"`
			BillingProducts         []string `json:"billingProducts"`
			DevpayProductCodes      []string `json:"devpayProductCodes"`
			MarketplaceProductCodes []string `json:"marketplaceProductCodes"`
			ImageID                 string   `json:"imageId"`
			InstanceID              string   `json:"instanceId"`
			InstanceType            string   `json:"instanceType"`
			KernelID                *string  `json:"kernelId"`
			PendingTime             string   `json:"pendingTime"`
			PrivateIP               string   `json:"privateIp"`
			RamdiskID               *string  `json:"ramdiskId"`
			Region                  string   `json:"region"`
			Version                 string   `json:"version"`
		}{
			AccountID: s.account, Architecture: inst.Architecture, AvailabilityZone: inst.AvailabilityZone,
			ImageID: inst.ImageID, InstanceID: inst.ID, InstanceType: inst.InstanceType,
			PendingTime: inst.LaunchTime.UTC().Format(time.RFC3339), PrivateIP: inst.PrivateIP,
			Region: s.region, Version: "2017-09-30",
		})
	}
	return imdsError(http.StatusNotFound)
}

// imdsCredentialsLocked hands out the role's temporary credentials,
// issuing new ones when there are none yet, they were revoked, or they
// expire within five minutes (as IMDS rotates them well before expiry).
func (s *Server) imdsCredentialsLocked(now time.Time) imdsReply {
	c := s.imds.creds
	if c == nil || c.revoked || !now.Add(5*time.Minute).Before(c.expires) {
		c = s.issueSessionLocked(s.account, s.imds.role, s.imds.instanceID, 6*time.Hour)
		s.imds.creds, s.imds.credsIssued = c, now
	}
	return imdsJSON(struct {
		Code            string
		LastUpdated     string
		Type            string
		AccessKeyID     string `json:"AccessKeyId"`
		SecretAccessKey string
		Token           string
		Expiration      string
	}{"Success", s.imds.credsIssued.UTC().Format(time.RFC3339), "AWS-HMAC", c.accessKey, c.secret, c.token, c.expires.UTC().Format(time.RFC3339)})
}

func imdsJSON(v any) imdsReply {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(fmt.Sprintf("aws fake: encoding %T: %v", v, err))
	}
	return imdsText(string(b))
}
