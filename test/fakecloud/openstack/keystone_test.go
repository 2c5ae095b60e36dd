package openstack

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	gos "github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/identity/v3/tokens"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
)

func TestPasswordAuth(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	a := s.Account()
	cases := map[string]gophercloud.AuthOptions{
		"names":   passwordOpts(s),
		"user ID": {IdentityEndpoint: s.AuthURL(), UserID: a.UserID, Password: a.Password, TenantID: a.ProjectID},
		"domain ID": {IdentityEndpoint: s.AuthURL(), Username: a.UserName, Password: a.Password, DomainID: a.DomainID,
			TenantName: a.ProjectName},
		// No scope: Keystone scopes the token to the user's default project.
		"default project": {IdentityEndpoint: s.AuthURL(), Username: a.UserName, Password: a.Password, DomainName: a.DomainName},
		// A versionless auth URL makes the client discover v3 at the root.
		"versionless": {IdentityEndpoint: s.URL() + "/identity", Username: a.UserName, Password: a.Password,
			DomainName: a.DomainName, TenantName: a.ProjectName},
	}
	for name, opts := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := gos.AuthenticatedClient(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(p.TokenID, "gAAAAA") {
				t.Errorf("token %q", p.TokenID)
			}
			project, err := p.GetAuthResult().(tokens.CreateResult).ExtractProject()
			if err != nil || project.ID != a.ProjectID || project.Name != a.ProjectName || project.Domain.ID != a.DomainID {
				t.Errorf("project %+v %v", project, err)
			}
			compute, network := regionClients(t, p, "RegionOne")
			if compute.Endpoint != s.URL()+"/compute/v2.1/" || network.ResourceBase != s.URL()+"/network/v2.0/" {
				t.Errorf("endpoints %s %s", compute.Endpoint, network.ResourceBase)
			}
			if _, err := networks.List(network, nil).AllPages(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	if got := s.Faults().CallCount(IdentityVersions); got != 1 {
		t.Errorf("version discovery calls = %d", got)
	}
	// Neutron's catalog URL has no version: each client found it at the root.
	if got := s.Faults().CallCount(NetworkVersions); got != len(cases) {
		t.Errorf("network discovery calls = %d", got)
	}
}

func TestApplicationCredentialAuth(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	a := s.Account()
	id := s.AddApplicationCredential("ccm", "s3cr3t")
	cases := map[string]gophercloud.AuthOptions{
		"id":                {ApplicationCredentialID: id, ApplicationCredentialSecret: "s3cr3t"},
		"name and user":     {ApplicationCredentialName: "ccm", Username: a.UserName, DomainName: a.DomainName, ApplicationCredentialSecret: "s3cr3t"},
		"name and user ID":  {ApplicationCredentialName: "ccm", UserID: a.UserID, ApplicationCredentialSecret: "s3cr3t"},
		"name and domainID": {ApplicationCredentialName: "ccm", Username: a.UserName, DomainID: a.DomainID, ApplicationCredentialSecret: "s3cr3t"},
	}
	for name, opts := range cases {
		t.Run(name, func(t *testing.T) {
			opts.IdentityEndpoint = s.AuthURL()
			p, err := gos.AuthenticatedClient(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			compute, _ := regionClients(t, p, "")
			if _, err := servers.List(compute, nil).AllPages(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	// The token says which credential it came from, and its project.
	tok := token(t, s)
	r, b := raw(t, s, "", http.MethodPost, "/identity/v3/auth/tokens",
		`{"auth": {"identity": {"methods": ["application_credential"], "application_credential": {"id": "`+id+`", "secret": "s3cr3t"}}}}`, nil)
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("%d %s", r.StatusCode, b)
	}
	body := doc(t, b)["token"].(map[string]any)
	if ac := body["application_credential"].(map[string]any); ac["id"] != id || ac["name"] != "ccm" || ac["restricted"] != true {
		t.Errorf("application_credential = %v", ac)
	}
	if body["methods"].([]any)[0] != "application_credential" || body["project"].(map[string]any)["id"] != a.ProjectID {
		t.Errorf("token = %v", body)
	}
	// Application credentials carry their scope; asking for one is refused.
	r, b = raw(t, s, "", http.MethodPost, "/identity/v3/auth/tokens",
		`{"auth": {"identity": {"methods": ["application_credential"], "application_credential": {"id": "`+id+`", "secret": "s3cr3t"}},
		"scope": {"project": {"id": "`+a.ProjectID+`"}}}}`, nil)
	if r.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), "cannot request a scope") {
		t.Errorf("scoped: %d %s", r.StatusCode, b)
	}
	// A wrong secret, and a deleted credential, are 401; deleting it
	// revokes its tokens and no other.
	_, err := gos.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: s.AuthURL(), ApplicationCredentialID: id, ApplicationCredentialSecret: "nope"})
	if !gophercloud.ResponseCodeIs(err, http.StatusUnauthorized) {
		t.Errorf("wrong secret: %v", err)
	}
	r, _ = raw(t, s, "", http.MethodPost, "/identity/v3/auth/tokens",
		`{"auth": {"identity": {"methods": ["application_credential"], "application_credential": {"id": "`+id+`", "secret": "s3cr3t"}}}}`, nil)
	credTok := r.Header.Get("X-Subject-Token")
	if err := s.DeleteApplicationCredential(id); err != nil {
		t.Fatal(err)
	}
	if r, _ := raw(t, s, credTok, http.MethodGet, "/compute/v2.1/servers/detail", "", nil); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("token of a deleted credential: %d", r.StatusCode)
	}
	if r, _ := raw(t, s, tok, http.MethodGet, "/compute/v2.1/servers/detail", "", nil); r.StatusCode != http.StatusOK {
		t.Errorf("password token after the deletion: %d", r.StatusCode)
	}
	_, err = gos.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: s.AuthURL(), ApplicationCredentialID: id, ApplicationCredentialSecret: "s3cr3t"})
	if !gophercloud.ResponseCodeIs(err, http.StatusUnauthorized) {
		t.Errorf("deleted credential: %v", err)
	}
}

func TestWrongCredentials(t *testing.T) {
	s := start(t)
	opts := passwordOpts(s)
	opts.Password = "wrong"
	_, err := gos.AuthenticatedClient(context.Background(), opts)
	if !gophercloud.ResponseCodeIs(err, http.StatusUnauthorized) {
		t.Fatalf("err = %v", err)
	}
	r, b := raw(t, s, "", http.MethodPost, "/identity/v3/auth/tokens", passwordBody(s, "wrong"), nil)
	if r.StatusCode != http.StatusUnauthorized || r.Header.Get("X-Subject-Token") != "" {
		t.Errorf("status %d, token %q", r.StatusCode, r.Header.Get("X-Subject-Token"))
	}
	jsonEq(t, b, `{"error": {"code": 401, "message": "The request you have made requires authentication.", "title": "Unauthorized"}}`)
	if got := r.Header.Get("WWW-Authenticate"); got != `Keystone uri="`+s.URL()+`/identity"` {
		t.Errorf("WWW-Authenticate = %q", got)
	}
	// Another project is refused alike; a malformed body is 400.
	a := s.Account()
	other := strings.Replace(passwordBody(s, a.Password), `"name": "`+a.ProjectName+`"`, `"name": "other"`, 1)
	if r, _ := raw(t, s, "", http.MethodPost, "/identity/v3/auth/tokens", other, nil); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("other project: %d", r.StatusCode)
	}
	r, b = raw(t, s, "", http.MethodPost, "/identity/v3/auth/tokens", `{"auth": {}}`, nil)
	if e := doc(t, b)["error"].(map[string]any); r.StatusCode != http.StatusBadRequest || e["title"] != "Bad Request" || e["code"] != 400.0 {
		t.Errorf("no identity: %d %s", r.StatusCode, b)
	}
}

func TestTokenWire(t *testing.T) {
	s := start(t)
	s.AddRegion("RegionTwo")
	a := s.Account()
	r, b := raw(t, s, "", http.MethodPost, "/identity/v3/auth/tokens", passwordBody(s, a.Password), nil)
	if r.StatusCode != http.StatusCreated || r.Header.Get("Content-Type") != "application/json" ||
		!strings.HasPrefix(r.Header.Get("X-Openstack-Request-Id"), "req-") {
		t.Fatalf("%d %v", r.StatusCode, r.Header)
	}
	tok := r.Header.Get("X-Subject-Token")
	body := doc(t, b)["token"].(map[string]any)
	stampRE := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)
	exp, _ := body["expires_at"].(string)
	if !stampRE.MatchString(exp) || !stampRE.MatchString(body["issued_at"].(string)) {
		t.Errorf("times %v %v", body["expires_at"], body["issued_at"])
	}
	if e, _ := time.Parse(time.RFC3339, exp); time.Until(e) < 59*time.Minute || time.Until(e) > time.Hour {
		t.Errorf("expires_at %s", exp)
	}
	user := body["user"].(map[string]any)
	if user["id"] != a.UserID || user["name"] != a.UserName || user["domain"].(map[string]any)["name"] != a.DomainName {
		t.Errorf("user %v", user)
	}
	if p := body["project"].(map[string]any); p["id"] != a.ProjectID || p["name"] != a.ProjectName {
		t.Errorf("project %v", p)
	}
	// Every service in every region, public and internal.
	want := map[string]string{"identity": "/identity", "compute": "/compute/v2.1", "network": "/network",
		"load-balancer": "/load-balancer", "volumev3": "/volume/v3/" + a.ProjectID, "image": "/image"}
	for _, e := range body["catalog"].([]any) {
		e := e.(map[string]any)
		path, ok := want[e["type"].(string)]
		if !ok {
			t.Errorf("catalog entry %v", e)
			continue
		}
		delete(want, e["type"].(string))
		eps := e["endpoints"].([]any)
		if len(eps) != 4 {
			t.Errorf("%s: %d endpoints", e["type"], len(eps))
		}
		for _, ep := range eps {
			ep := ep.(map[string]any)
			url := s.URL() + path
			if ep["region"] == "RegionTwo" && e["type"] != "identity" {
				url = s.URL() + "/regions/1" + path
			}
			if ep["region"] != ep["region_id"] || ep["url"] != url || ep["interface"] != "public" && ep["interface"] != "internal" {
				t.Errorf("%s endpoint %v", e["type"], ep)
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("catalog lacks %v", want)
	}
	// Validation answers the same token; nocatalog leaves the catalog out.
	r, b = raw(t, s, tok, http.MethodGet, "/identity/v3/auth/tokens?nocatalog", "", map[string]string{"X-Subject-Token": tok})
	if r.StatusCode != http.StatusOK || r.Header.Get("X-Subject-Token") != tok || doc(t, b)["token"].(map[string]any)["catalog"] != nil {
		t.Errorf("validate: %d %s", r.StatusCode, b)
	}
	r, b = raw(t, s, tok, http.MethodGet, "/identity/v3/auth/tokens", "", map[string]string{"X-Subject-Token": "gAAAAAnope"})
	jsonEq(t, b, `{"error": {"code": 404, "message": "Could not find token: gAAAAAnope.", "title": "Not Found"}}`)
	// Validating needs a token of one's own.
	if r, _ := raw(t, s, "", http.MethodGet, "/identity/v3/auth/tokens", "", map[string]string{"X-Subject-Token": tok}); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("validate without a token: %d", r.StatusCode)
	}
	// A revoked token is gone.
	if r, _ := raw(t, s, tok, http.MethodDelete, "/identity/v3/auth/tokens", "", map[string]string{"X-Subject-Token": tok}); r.StatusCode != http.StatusNoContent {
		t.Errorf("revoke: %d", r.StatusCode)
	}
	if r, _ := raw(t, s, tok, http.MethodGet, "/compute/v2.1/servers/detail", "", nil); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("revoked token: %d", r.StatusCode)
	}
}

func TestRegions(t *testing.T) {
	s := start(t)
	s.AddRegion("RegionTwo")
	ctx := context.Background()
	cluster(s, 1)
	s.AddNetwork(NetworkSpec{Name: "private", Region: "RegionTwo", Subnets: []SubnetSpec{{CIDR: "10.1.0.0/24"}}})
	far := s.AddServer(ServerSpec{Name: "far", Region: "RegionTwo", Ports: []PortSpec{{Network: "private"}}})
	p := provider(t, s)
	c1, _ := regionClients(t, p, "RegionOne")
	c2, n2 := regionClients(t, p, "RegionTwo")
	if c2.Endpoint != s.URL()+"/regions/1/compute/v2.1/" {
		t.Errorf("RegionTwo compute at %s", c2.Endpoint)
	}
	names := func(c *gophercloud.ServiceClient) []string {
		pages, err := servers.List(c, nil).AllPages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		all, _ := servers.ExtractServers(pages)
		var out []string
		for _, sv := range all {
			out = append(out, sv.Name)
		}
		return out
	}
	if got := names(c1); len(got) != 1 || got[0] != "node-0" {
		t.Errorf("RegionOne servers %v", got)
	}
	if got := names(c2); len(got) != 1 || got[0] != "far" {
		t.Errorf("RegionTwo servers %v", got)
	}
	if _, err := servers.Get(ctx, c1, far).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("RegionTwo's server from RegionOne: %v", err)
	}
	if sv, err := servers.Get(ctx, c2, far).Extract(); err != nil || sv.Addresses["private"] == nil {
		t.Errorf("far: %+v %v", sv, err)
	}
	if pages, err := networks.List(n2, networks.ListOpts{Name: "private"}).AllPages(ctx); err != nil {
		t.Error(err)
	} else if ns, _ := networks.ExtractNetworks(pages); len(ns) != 1 || ns[0].Subnets == nil {
		t.Errorf("RegionTwo networks %+v", ns)
	}
	// The client picks endpoints by region; there is none for a region
	// the catalog does not list.
	_, err := gos.NewComputeV2(p, gophercloud.EndpointOpts{Region: "RegionThree"})
	var nf *gophercloud.ErrEndpointNotFound
	if !errors.As(err, &nf) {
		t.Errorf("RegionThree: %v", err)
	}
	// Internal endpoints are listed too.
	if c, err := gos.NewComputeV2(p, gophercloud.EndpointOpts{Region: "RegionTwo", Availability: gophercloud.AvailabilityInternal}); err != nil || c.Endpoint != c2.Endpoint {
		t.Errorf("internal: %v %v", c, err)
	}
	// An index past the regions is no path.
	if r, _ := raw(t, s, token(t, s), http.MethodGet, "/regions/2/compute/v2.1/servers/detail", "", nil); r.StatusCode != http.StatusNotFound {
		t.Errorf("unknown region: %d", r.StatusCode)
	}
}

func TestRevokeCredentials(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	_, ids := cluster(s, 1)
	appCred := s.AddApplicationCredential("ccm", "s3cr3t")
	compute, network := clients(t, s)
	if _, err := servers.Get(ctx, compute, ids[0]).Extract(); err != nil {
		t.Fatal(err)
	}
	old := token(t, s)
	creates := s.Faults().CallCount(TokensCreate)

	s.RevokeCredentials()
	// The client's token is refused, its reauthentication too.
	_, err := servers.Get(ctx, compute, ids[0]).Extract()
	var reauth *gophercloud.ErrUnableToReauthenticate
	if !errors.As(err, &reauth) || !gophercloud.ResponseCodeIs(reauth.ErrOriginal, http.StatusUnauthorized) ||
		!gophercloud.ResponseCodeIs(reauth.ErrReauth, http.StatusUnauthorized) {
		t.Fatalf("err = %v", err)
	}
	if got := s.Faults().CallCount(TokensCreate); got != creates+1 {
		t.Errorf("token requests %d, want %d", got, creates+1)
	}
	// Everywhere, in keystonemiddleware's words.
	for _, path := range []string{"/compute/v2.1/servers/detail", "/compute/v2.1/flavors/1", "/network/v2.0/ports",
		"/network/v2.0/networks", "/compute/v2.1/nowhere"} {
		r, b := raw(t, s, old, http.MethodGet, path, "", nil)
		if r.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: %d", path, r.StatusCode)
			continue
		}
		jsonEq(t, b, `{"error": {"code": 401, "title": "Unauthorized", "message": "The request you have made requires authentication."}}`)
	}
	_, err = gos.AuthenticatedClient(ctx, gophercloud.AuthOptions{IdentityEndpoint: s.AuthURL(), ApplicationCredentialID: appCred, ApplicationCredentialSecret: "s3cr3t"})
	if !gophercloud.ResponseCodeIs(err, http.StatusUnauthorized) {
		t.Errorf("application credential: %v", err)
	}
	// Restored, a client logs in again; the old tokens stay revoked.
	s.RestoreCredentials()
	if _, err := servers.Get(ctx, compute, ids[0]).Extract(); err != nil {
		t.Errorf("after restore: %v", err)
	}
	if r, _ := raw(t, s, old, http.MethodGet, "/network/v2.0/ports", "", nil); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("old token after restore: %d", r.StatusCode)
	}
	// Revoked tokens alone: the client reauthenticates by itself.
	s.RevokeTokens()
	if _, err := networks.List(network, nil).AllPages(ctx); err != nil {
		t.Errorf("after RevokeTokens: %v", err)
	}
	// A changed password revokes the tokens and refuses the old one.
	s.SetPassword("changed")
	if _, err := servers.Get(ctx, compute, ids[0]).Extract(); !errors.As(err, &reauth) {
		t.Errorf("after SetPassword: %v", err)
	}
}

func TestTokenExpiry(t *testing.T) {
	s := start(t)
	var mu sync.Mutex
	now := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	s.SetClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return now })
	s.SetTokenLifetime(10 * time.Minute)
	ctx := context.Background()
	compute, _ := clients(t, s)
	if _, err := servers.List(compute, nil).AllPages(ctx); err != nil {
		t.Fatal(err)
	}
	tok := compute.TokenID
	mu.Lock()
	now = now.Add(10 * time.Minute)
	mu.Unlock()
	if r, _ := raw(t, s, tok, http.MethodGet, "/compute/v2.1/servers/detail", "", nil); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("expired token: %d", r.StatusCode)
	}
	// gophercloud gets a 401 and logs in again.
	if _, err := servers.List(compute, nil).AllPages(ctx); err != nil || compute.TokenID == tok {
		t.Errorf("after expiry: %v", err)
	}
}

func TestVersionDocuments(t *testing.T) {
	s := start(t)
	r, b := raw(t, s, "", http.MethodGet, "/compute/v2.1/", "", nil)
	v := doc(t, b)["version"].(map[string]any)
	if r.StatusCode != http.StatusOK || v["id"] != "v2.1" || v["version"] != "2.96" || v["min_version"] != "2.1" {
		t.Errorf("compute: %d %s", r.StatusCode, b)
	}
	r, b = raw(t, s, "", http.MethodGet, "/network/", "", nil)
	jsonEq(t, b, `{"versions": [{"id": "v2.0", "status": "CURRENT", "links": [{"href": "`+s.URL()+`/network/v2.0/", "rel": "self"}]}]}`)
	if r.StatusCode != http.StatusOK {
		t.Errorf("network: %d", r.StatusCode)
	}
	if r, b := raw(t, s, "", http.MethodGet, "/identity", "", nil); r.StatusCode != http.StatusMultipleChoices ||
		doc(t, b)["versions"].(map[string]any)["values"].([]any)[0].(map[string]any)["id"] != "v3.14" {
		t.Errorf("identity: %d %s", r.StatusCode, b)
	}
	// gophercloud finds Octavia's endpoint, a placeholder, and Cinder's.
	p := provider(t, s)
	if lb, err := gos.NewLoadBalancerV2(p, gophercloud.EndpointOpts{}); err != nil || lb.ResourceBase != s.URL()+"/load-balancer/v2.0/" {
		t.Errorf("load-balancer: %v %v", lb, err)
	}
	if bs, err := gos.NewBlockStorageV3(p, gophercloud.EndpointOpts{}); err != nil || bs.Endpoint != s.URL()+"/volume/v3/"+s.Account().ProjectID+"/" {
		t.Errorf("block storage: %v %v", bs, err)
	}
	// The microversion range follows the knob.
	s.SetMaxMicroversion("2.46")
	_, b = raw(t, s, "", http.MethodGet, "/compute/v2.1", "", nil)
	if doc(t, b)["version"].(map[string]any)["version"] != "2.46" {
		t.Errorf("after SetMaxMicroversion: %s", b)
	}
}
