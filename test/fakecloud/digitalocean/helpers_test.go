package digitalocean

import (
	"errors"
	"net/http"
	"testing"

	"github.com/polyccm/polyccm/test/fakecloud/fakehttp/wiretest"

	"github.com/digitalocean/godo"
)

const testToken = "dop_v1_test"

// bearer adds the token the way godo's oauth2 transport would.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// start runs a fake for the test and returns it with a godo client.
func start(t *testing.T) (*Server, *godo.Client) {
	t.Helper()
	s := New(testToken)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, client(t, s, testToken)
}

// client is a real, unmodified godo client for the fake, without retries so
// every fault is visible.
func client(t *testing.T, s *Server, token string) *godo.Client {
	t.Helper()
	hc := &http.Client{Transport: bearer{token: token, base: http.DefaultTransport}}
	c, err := godo.New(hc, godo.SetBaseURL(s.URL()))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// apiErr asserts err is a godo API error with the given status.
func apiErr(t *testing.T, err error, status int) *godo.ErrorResponse {
	t.Helper()
	var e *godo.ErrorResponse
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want *godo.ErrorResponse", err, err)
	}
	if e.Response.StatusCode != status {
		t.Fatalf("status = %d, want %d (%v)", e.Response.StatusCode, status, err)
	}
	return e
}

// raw sends a request with the test token and returns the response with
// its body read.
func raw(t *testing.T, s *Server, method, path, body string) (*http.Response, []byte) {
	t.Helper()
	return wiretest.Do(t, s.URL(), testToken, method, path, body)
}

// decode parses a JSON document into generic maps.
func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	return wiretest.Decode(t, b)
}

func addN(s *Server, n int, d Droplet) []Droplet {
	out := make([]Droplet, n)
	for k := range out {
		out[k] = s.AddDroplet(d)
	}
	return out
}
