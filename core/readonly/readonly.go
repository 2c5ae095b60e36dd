// Package readonly holds the HTTP transports that make `polyccm plan`
// read-only whatever the driver code under it tries: the cloud transport
// refuses every call that could change the cloud, and the Kubernetes
// transport sends only reads, recording each write instead of making it.
// They sit below the drivers and the SDKs, so no code path, known or
// forgotten, can write through them.
package readonly

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/polyccm/polyccm/core/cloudapi"
)

// Cloud guards the transports of a driver's cloud API clients. Reads
// pass: GET and HEAD (the REST APIs of DigitalOcean and Compute Engine),
// and the AWS Query API's POSTs whose Action is a Describe, Get or List.
// Everything else is refused with an error wrapping cloudapi.ErrReadOnly,
// without reaching the cloud.
type Cloud struct {
	allowed atomic.Int64
	mu      sync.Mutex
	refused []string
}

// NewCloud returns a guard; Wrap puts it over each client's transport.
func NewCloud() *Cloud { return &Cloud{} }

// Wrap is for driver.Deps.Transport.
func (c *Cloud) Wrap(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &cloudTransport{c: c, base: base}
}

type cloudTransport struct {
	c    *Cloud
	base http.RoundTripper
}

func (t *cloudTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	what, read, err := classify(r)
	if err != nil {
		return nil, err
	}
	if !read {
		t.c.mu.Lock()
		t.c.refused = append(t.c.refused, what)
		t.c.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", what, cloudapi.ErrReadOnly)
	}
	t.c.allowed.Add(1)
	return t.base.RoundTrip(r)
}

// Refused lists the calls refused so far ("POST /v2/load_balancers",
// "ec2 CreateSecurityGroup").
func (c *Cloud) Refused() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.refused...)
}

// Reads counts the calls let through.
func (c *Cloud) Reads() int64 { return c.allowed.Load() }

// classify names a request and says whether it only reads. An AWS Query
// request's body is read to find its Action, then put back.
func classify(r *http.Request) (what string, read bool, err error) {
	what = r.Method + " " + r.URL.Path
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		return what, true, nil
	case http.MethodPost:
	default:
		return what, false, nil
	}
	// Compute Engine reads that are POSTs: an instance group's members,
	// a backend's health.
	if strings.HasSuffix(r.URL.Path, "/listInstances") || strings.HasSuffix(r.URL.Path, "/getHealth") {
		return what, true, nil
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") || r.Body == nil {
		return what, false, nil
	}
	body, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		return what, false, fmt.Errorf("reading a request to classify it: %w", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return what, false, nil
	}
	action := form.Get("Action")
	if action == "" {
		return what, false, nil
	}
	what = hostService(r.URL.Host) + action
	for _, p := range []string{"Describe", "Get", "List"} {
		if strings.HasPrefix(action, p) {
			return what, true, nil
		}
	}
	return what, false, nil
}

// hostService names the AWS service from its endpoint host
// ("ec2.eu-west-1.amazonaws.com" -> "ec2 "), for messages.
func hostService(host string) string {
	name, _, _ := strings.Cut(host, ".")
	if name == "" || strings.ContainsAny(name, ":0123456789") {
		return ""
	}
	return name + " "
}
