package readonly

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/polyccm/polyccm/core/loadbalancers"
)

// Kube guards a Kubernetes client's transport. Reads reach the API server;
// a write never does. It is recorded (in Writes, and in the dry run of the
// request's context, so a plan says which Service's sync made it) and
// answered as if it changed nothing: a create with the object sent, any
// other write with the object as the server has it now. The code that
// wrote goes on as it would after a write that changed nothing.
type Kube struct {
	base   http.RoundTripper
	mu     sync.Mutex
	writes []string
}

// NewKube returns a guard; Wrap puts it over a client's transport.
func NewKube() *Kube { return &Kube{} }

// Wrap is for rest.Config.Wrap.
func (k *Kube) Wrap(base http.RoundTripper) http.RoundTripper {
	return &kubeTransport{k: k, base: base}
}

// Writes lists the writes refused so far ("PATCH services default/web
// status").
func (k *Kube) Writes() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.writes...)
}

type kubeTransport struct {
	k    *Kube
	base http.RoundTripper
}

func (t *kubeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return t.base.RoundTrip(r)
	}
	what := describeKube(r)
	t.k.mu.Lock()
	t.k.writes = append(t.k.writes, what)
	t.k.mu.Unlock()
	if d := loadbalancers.DryRunFrom(r.Context()); d != nil {
		d.Wrote(what)
	}
	if r.Method == http.MethodPost {
		var body []byte
		if r.Body != nil {
			body, _ = io.ReadAll(r.Body)
			_ = r.Body.Close()
		}
		return &http.Response{
			StatusCode: http.StatusCreated, Status: "201 Created", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{"Content-Type": []string{r.Header.Get("Content-Type")}},
			Body:   io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: r,
		}, nil
	}
	if r.Body != nil {
		_ = r.Body.Close()
	}
	// The object itself, not its subresource: a CCM may patch
	// services/status without being allowed to get it.
	u := *r.URL
	u.RawQuery = ""
	if p, sub, ok := cutSubresource(u.Path); ok && sub != "" {
		u.Path, u.RawPath = p, ""
	}
	get, err := http.NewRequestWithContext(r.Context(), http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	for _, h := range []string{"Accept", "User-Agent", "Authorization"} {
		if v := r.Header.Get(h); v != "" {
			get.Header.Set(h, v)
		}
	}
	return t.base.RoundTrip(get)
}

// describeKube names a write by verb, resource, object and subresource:
// "PATCH services default/web status".
func describeKube(r *http.Request) string {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	// /api/v1/... or /apis/<group>/<version>/...
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return r.Method + " " + r.URL.Path
	}
	ns := ""
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) > 2 {
		ns, parts = parts[1], parts[2:]
	}
	out := r.Method
	if len(parts) > 0 {
		out += " " + parts[0]
	}
	if len(parts) > 1 {
		name := parts[1]
		if ns != "" {
			name = ns + "/" + name
		}
		out += " " + name
	} else if ns != "" {
		out += " in " + ns
	}
	if len(parts) > 2 {
		out += " " + strings.Join(parts[2:], "/")
	}
	return out
}

// cutSubresource splits ".../namespaces/<ns>/<resource>/<name>/<sub>" (or
// the cluster-scoped form) into the object's path and the subresource.
func cutSubresource(path string) (obj, sub string, ok bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var rest int // index of the resource
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = 2
	case len(parts) >= 3 && parts[0] == "apis":
		rest = 3
	default:
		return path, "", false
	}
	if len(parts) > rest+2 && parts[rest] == "namespaces" {
		rest += 2
	}
	if len(parts) <= rest+2 {
		return path, "", true
	}
	return "/" + strings.Join(parts[:rest+2], "/"), strings.Join(parts[rest+2:], "/"), true
}
