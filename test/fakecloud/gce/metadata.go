package gce

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/polyccm/polyccm/test/fakecloud/fakehttp"

	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

// Metadata is a fake GCE metadata server: GET /computeMetadata/v1/...,
// requiring the Metadata-Flavor: Google header (403 without it, or with
// X-Forwarded-For, as the real server refuses proxied requests) and
// answering with it. Values are text (Content-Type application/text);
// instance/tags and the token are JSON; a path ending in "/" lists its
// children; alt=json returns any value as JSON.
//
// Point cloud.google.com/go/compute/metadata at it with
// GCE_METADATA_HOST=Host(): the client takes the host (and port) from
// that variable and requests http://HOST/computeMetadata/v1/SUFFIX.
//
// Requests pass through a faults.Injector (Faults), counted by
// "GET /computeMetadata/v1/PATH".
type Metadata struct {
	srv *fakehttp.Server

	mu     sync.Mutex
	values map[string]string // path below /computeMetadata/v1/ -> value
	isJSON map[string]bool
}

// MetadataConfig is what the metadata server knows about its VM.
type MetadataConfig struct {
	ProjectID        string
	NumericProjectID uint64
	Zone             string
	InstanceName     string
	InstanceID       uint64
	// Hostname defaults to NAME.ZONE.c.PROJECT.internal.
	Hostname    string
	MachineType string // default DefaultMachineType
	// Network is the network name of nic0 (default DefaultNetwork);
	// NetworkIP and ExternalIP its addresses ("" leaves them out).
	Network    string
	NetworkIP  string
	ExternalIP string
	Tags       []string
	// ServiceAccountEmail defaults to the project's compute default
	// service account.
	ServiceAccountEmail string
	// Token is what instance/service-accounts/default/token hands out,
	// valid for TokenLifetime (default an hour).
	Token         string
	TokenLifetime time.Duration
	// Attributes are instance attributes (instance/attributes/KEY);
	// ProjectAttributes project ones.
	Attributes        map[string]string
	ProjectAttributes map[string]string
}

// MetadataFor builds the metadata of one of the fake's instances, with the
// fake's project, the instance's addresses and tags, and the fake's
// accepted token, so a client bootstrapping from the metadata server can
// then call the API.
func (s *Server) MetadataFor(zone, name string) (MetadataConfig, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.instances[s.zonalPath(zone, "instances", name)]
	if in == nil {
		return MetadataConfig{}, false
	}
	return MetadataConfig{
		ProjectID:        s.project,
		NumericProjectID: s.projectNumber,
		Zone:             in.Zone,
		InstanceName:     in.Name,
		InstanceID:       in.ID,
		MachineType:      in.MachineType,
		Network:          in.Network,
		NetworkIP:        in.NetworkIP,
		ExternalIP:       in.NatIP,
		Tags:             append([]string(nil), in.Tags...),
		Token:            s.token,
	}, true
}

// NewMetadata returns a metadata server for the VM cfg describes.
func NewMetadata(cfg MetadataConfig) *Metadata {
	m := &Metadata{srv: fakehttp.New("gce metadata fake"), values: map[string]string{}, isJSON: map[string]bool{}}
	cfg.ProjectID = cmp.Or(cfg.ProjectID, "test-project")
	cfg.NumericProjectID = cmp.Or(cfg.NumericProjectID, DefaultProjectNumber)
	cfg.Zone = cmp.Or(cfg.Zone, DefaultZone)
	cfg.InstanceName = cmp.Or(cfg.InstanceName, "test-instance")
	cfg.InstanceID = cmp.Or(cfg.InstanceID, firstID)
	cfg.Hostname = cmp.Or(cfg.Hostname, fmt.Sprintf("%s.%s.c.%s.internal", cfg.InstanceName, cfg.Zone, cfg.ProjectID))
	cfg.MachineType = cmp.Or(cfg.MachineType, DefaultMachineType)
	cfg.Network = cmp.Or(cfg.Network, DefaultNetwork)
	cfg.ServiceAccountEmail = cmp.Or(cfg.ServiceAccountEmail, fmt.Sprintf("%d-compute@developer.gserviceaccount.com", cfg.NumericProjectID))
	num := strconv.FormatUint(cfg.NumericProjectID, 10)

	m.values["project/project-id"] = cfg.ProjectID
	m.values["project/numeric-project-id"] = num
	m.values["instance/id"] = strconv.FormatUint(cfg.InstanceID, 10)
	m.values["instance/name"] = cfg.InstanceName
	m.values["instance/hostname"] = cfg.Hostname
	m.values["instance/zone"] = "projects/" + num + "/zones/" + cfg.Zone
	m.values["instance/machine-type"] = "projects/" + num + "/machineTypes/" + cfg.MachineType
	m.values["instance/network-interfaces/0/network"] = "projects/" + num + "/networks/" + cfg.Network
	if cfg.NetworkIP != "" {
		m.values["instance/network-interfaces/0/ip"] = cfg.NetworkIP
	}
	if cfg.ExternalIP != "" {
		m.values["instance/network-interfaces/0/access-configs/0/external-ip"] = cfg.ExternalIP
		m.values["instance/network-interfaces/0/access-configs/0/type"] = "ONE_TO_ONE_NAT"
	}
	tags := cfg.Tags
	if tags == nil {
		tags = []string{}
	}
	b, _ := json.Marshal(tags)
	m.values["instance/tags"], m.isJSON["instance/tags"] = string(b), true
	for _, sa := range []string{"default", cfg.ServiceAccountEmail} {
		m.values["instance/service-accounts/"+sa+"/email"] = cfg.ServiceAccountEmail
		m.values["instance/service-accounts/"+sa+"/scopes"] = "https://www.googleapis.com/auth/cloud-platform"
		m.values["instance/service-accounts/"+sa+"/aliases"] = "default"
	}
	for k, v := range cfg.Attributes {
		m.values["instance/attributes/"+k] = v
	}
	for k, v := range cfg.ProjectAttributes {
		m.values["project/attributes/"+k] = v
	}
	m.setTokenLocked(cfg.Token, cfg.ServiceAccountEmail, cmp.Or(cfg.TokenLifetime, time.Hour))
	return m
}

func (m *Metadata) setTokenLocked(token, email string, lifetime time.Duration) {
	b, _ := json.Marshal(struct {
		AccessToken string `json:"access_token"`
		ExpiresIn   int    `json:"expires_in"`
		TokenType   string `json:"token_type"`
	}{token, int(lifetime / time.Second), "Bearer"})
	for _, sa := range []string{"default", email} {
		p := "instance/service-accounts/" + sa + "/token"
		m.values[p], m.isJSON[p] = string(b), true
	}
}

// SetToken changes the access token the server hands out.
func (m *Metadata) SetToken(token string, lifetime time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setTokenLocked(token, m.values["instance/service-accounts/default/email"], lifetime)
}

// Set sets the value at a path below /computeMetadata/v1/ (text).
func (m *Metadata) Set(path, value string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	path = strings.Trim(path, "/")
	m.values[path] = value
	delete(m.isJSON, path)
}

// Delete removes a path, which then answers 404.
func (m *Metadata) Delete(path string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	path = strings.Trim(path, "/")
	delete(m.values, path)
	delete(m.isJSON, path)
}

// Start serves the metadata server on a free port of 127.0.0.1.
func (m *Metadata) Start() error { return m.srv.Start(m) }

// Host is the value for GCE_METADATA_HOST ("127.0.0.1:PORT"); "" before
// Start.
func (m *Metadata) Host() string { return strings.TrimPrefix(m.srv.URL(), "http://") }

// URL is the server's base URL ("http://127.0.0.1:PORT"); "" before Start.
func (m *Metadata) URL() string { return m.srv.URL() }

// Close stops the server.
func (m *Metadata) Close() { m.srv.Close() }

// Handler returns the metadata server as an http.Handler.
func (m *Metadata) Handler() http.Handler { return m }

// Faults returns the injector every request passes through.
func (m *Metadata) Faults() *faults.Injector { return m.srv.Faults() }

const metadataPrefix = "/computeMetadata/v1/"

// ServeHTTP answers metadata requests.
func (m *Metadata) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, metadataPrefix)
	known := strings.HasPrefix(r.URL.Path, metadataPrefix) && m.known(path)
	endpoint := r.Method + " " + metadataPrefix + "{unknown}"
	if known {
		endpoint = r.Method + " " + r.URL.Path
	}
	d, r, done := m.srv.Intercept(r, endpoint)
	defer done()
	m.srv.Record(endpoint, m.serve(w, r, d, path, known))
}

func (m *Metadata) known(path string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.values[path]; ok {
		return true
	}
	return strings.HasSuffix(path, "/") && len(m.childrenLocked(path)) > 0
}

func (m *Metadata) childrenLocked(dir string) []string {
	set := map[string]bool{}
	for k := range m.values {
		if rest, ok := strings.CutPrefix(k, dir); ok && rest != "" {
			if i := strings.Index(rest, "/"); i >= 0 {
				set[rest[:i+1]] = true
			} else {
				set[rest] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (m *Metadata) serve(w http.ResponseWriter, r *http.Request, d faults.Decision, path string, known bool) int {
	h := w.Header()
	h.Set("Metadata-Flavor", "Google")
	h.Set("Server", "Metadata Server for VM")
	h.Set("X-Xss-Protection", "0")
	h.Set("X-Frame-Options", "SAMEORIGIN")
	text := func(status int, body string) int {
		h.Set("Content-Type", "text/html; charset=UTF-8")
		w.WriteHeader(status)
		_, _ = fmt.Fprint(w, body)
		return status
	}
	switch {
	case d.Status != 0:
		return text(d.Status, http.StatusText(d.Status)+"\n")
	case r.Header.Get("Metadata-Flavor") != "Google" || r.Header.Get("X-Forwarded-For") != "":
		return text(http.StatusForbidden, "Your client does not have permission to get URL "+r.URL.Path+" from this server. Missing Metadata-Flavor:Google header.\n")
	case r.Method != http.MethodGet:
		return text(http.StatusMethodNotAllowed, "Method not allowed\n")
	case !known:
		return text(http.StatusNotFound, "The requested URL "+r.URL.Path+" was not found on this server.\n")
	}
	m.mu.Lock()
	var value string
	isJSON := false
	if strings.HasSuffix(path, "/") {
		value = strings.Join(m.childrenLocked(path), "\n") + "\n"
	} else {
		value, isJSON = m.values[path], m.isJSON[path]
	}
	m.mu.Unlock()
	if r.URL.Query().Get("alt") == "json" && !isJSON {
		b, _ := json.Marshal(value)
		value, isJSON = string(b), true
	}
	h.Set("Content-Type", "application/text")
	if isJSON {
		h.Set("Content-Type", "application/json")
	}
	h.Set("ETag", fingerprint(path, value)[:11])
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprint(w, value)
	return http.StatusOK
}
