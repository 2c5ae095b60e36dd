package openstack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	gos "github.com/gophercloud/gophercloud/v2/openstack"

	"github.com/polyccm/polyccm/test/fakecloud/fakehttp/wiretest"
)

// start runs a fake for the test.
func start(t *testing.T) *Server {
	t.Helper()
	s := New(Account{})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// passwordOpts are the options upstream's CCM builds from its config:
// user and project by name in the user's domain, reauthentication on.
func passwordOpts(s *Server) gophercloud.AuthOptions {
	a := s.Account()
	return gophercloud.AuthOptions{IdentityEndpoint: s.AuthURL(), Username: a.UserName, Password: a.Password,
		DomainName: a.DomainName, Scope: &gophercloud.AuthScope{ProjectName: a.ProjectName, DomainName: a.DomainName},
		AllowReauth: true}
}

// provider is a real, unmodified gophercloud client authenticated with
// the user's password.
func provider(t *testing.T, s *Server) *gophercloud.ProviderClient {
	t.Helper()
	p, err := gos.AuthenticatedClient(context.Background(), passwordOpts(s))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// clients returns Nova and Neutron clients of the first region.
func clients(t *testing.T, s *Server) (compute, network *gophercloud.ServiceClient) {
	t.Helper()
	return regionClients(t, provider(t, s), s.Regions()[0])
}

func regionClients(t *testing.T, p *gophercloud.ProviderClient, region string) (compute, network *gophercloud.ServiceClient) {
	t.Helper()
	eo := gophercloud.EndpointOpts{Region: region}
	compute, err := gos.NewComputeV2(p, eo)
	if err != nil {
		t.Fatal(err)
	}
	network, err = gos.NewNetworkV2(p, eo)
	if err != nil {
		t.Fatal(err)
	}
	return compute, network
}

// token issues a token with a raw password request.
func token(t *testing.T, s *Server) string {
	t.Helper()
	r, b := raw(t, s, "", http.MethodPost, "/identity/v3/auth/tokens", passwordBody(s, s.Account().Password), nil)
	if r.StatusCode != http.StatusCreated {
		t.Fatalf("token: %d %s", r.StatusCode, b)
	}
	return r.Header.Get("X-Subject-Token")
}

// passwordBody is a password authentication scoped to the project by
// name, as the Identity API reference gives it.
func passwordBody(s *Server, password string) string {
	a := s.Account()
	return `{"auth": {"identity": {"methods": ["password"], "password": {"user": {"name": "` + a.UserName +
		`", "domain": {"name": "` + a.DomainName + `"}, "password": "` + password + `"}}},
	"scope": {"project": {"name": "` + a.ProjectName + `", "domain": {"id": "` + a.DomainID + `"}}}}}`
}

// raw sends a request with an X-Auth-Token (if any) and extra headers,
// and returns the response with its body read.
func raw(t *testing.T, s *Server, tok, method, path, body string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, s.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if tok != "" {
		req.Header.Set("X-Auth-Token", tok)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

func doc(t *testing.T, b []byte) map[string]any {
	t.Helper()
	return wiretest.Decode(t, b)
}

// jsonEq compares a body with the JSON document want, ignoring layout.
func jsonEq(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("body %q: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Errorf("body = %s, want %s", gb, wb)
	}
}

// cluster makes the network "private" (10.0.0.0/24 and fd00::/64) and n
// ACTIVE servers on it, node-0..node-(n-1), and returns their IDs.
func cluster(s *Server, n int) (network string, servers []string) {
	network = s.AddNetwork(NetworkSpec{Name: "private", Subnets: []SubnetSpec{{Name: "v4", CIDR: "10.0.0.0/24"}, {Name: "v6", CIDR: "fd00::/64"}}})
	for i := range n {
		servers = append(servers, s.AddServer(ServerSpec{Name: fmt.Sprintf("node-%d", i), Ports: []PortSpec{{Network: "private"}}}))
	}
	return network, servers
}
