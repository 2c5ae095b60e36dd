package hetzner

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"

	"github.com/polyccm/polyccm/test/fakecloud/fakehttp/wiretest"
)

const testToken = "hcloud-test-token-0123456789abcdef"

// start runs a fake for the test and returns it with an hcloud-go client.
func start(t *testing.T) (*Server, *hcloud.Client) {
	t.Helper()
	s := New(testToken)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, client(s, testToken)
}

// client is a real, unmodified hcloud-go client for the fake, without
// retries so every fault is visible, polling actions every 5ms.
func client(s *Server, token string) *hcloud.Client {
	return hcloud.NewClient(hcloud.WithEndpoint(s.Endpoint()), hcloud.WithToken(token),
		hcloud.WithRetryOpts(hcloud.RetryOpts{MaxRetries: 0}),
		hcloud.WithPollOpts(hcloud.PollOpts{BackoffFunc: hcloud.ConstantBackoff(5 * time.Millisecond)}))
}

// apiErr asserts err is an hcloud-go API error with code and status.
func apiErr(t *testing.T, err error, code hcloud.ErrorCode, status int) hcloud.Error {
	t.Helper()
	var e hcloud.Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want hcloud.Error %s", err, err, code)
	}
	if e.Code != code {
		t.Fatalf("code = %s, want %s (%v)", e.Code, code, err)
	}
	if got := e.Response().StatusCode; got != status {
		t.Fatalf("status = %d, want %d (%v)", got, status, err)
	}
	return e
}

// raw sends a request with the test token and returns the response with
// its body read.
func raw(t *testing.T, s *Server, method, path, body string) (*http.Response, []byte) {
	t.Helper()
	return wiretest.Do(t, s.URL(), testToken, method, path, body)
}

func doc(t *testing.T, b []byte) map[string]any {
	t.Helper()
	return wiretest.Decode(t, b)
}

// clock is a settable clock for SetClock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(s *Server) *clock {
	c := &clock{t: time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)}
	s.SetClock(c.now)
	return c
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// cluster is a network "k8s" (10.0.0.0/8, subnet 10.0.0.0/16) with n
// servers on it in fsn1.
func cluster(s *Server, n int) (network int64, servers []int64) {
	network = s.AddNetwork("k8s", "10.0.0.0/8", Subnet{IPRange: "10.0.0.0/16"})
	for range n {
		servers = append(servers, s.AddServer(ServerSpec{Network: network}))
	}
	return network, servers
}

// keys lists a JSON object's keys.
func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func stringsReader(s string) io.Reader { return strings.NewReader(s) }

func readAll(t *testing.T, r *http.Response) []byte {
	t.Helper()
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
