package gce

import (
	"crypto/sha256"
	"encoding/base64"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// The JSON documents below follow the schemas of the compute v1 discovery
// document (compute-api.json, revision 20261007), field names and all:
// ids (uint64) are decimal strings, int64 sizes too, timestamps RFC 3339
// strings. They model the fields a cloud controller manager reads and
// writes; properties the schema has and these types do not are accepted in
// requests and dropped.
//
// The exported ones are the resources clients create, and what the
// Go-side helpers return for assertions, with links rendered as absolute
// URLs under the fake's base URL.

// TargetPool is a compute#targetPool.
type TargetPool struct {
	Kind              string   `json:"kind"`
	ID                uint64   `json:"id,string"`
	CreationTimestamp string   `json:"creationTimestamp"`
	Name              string   `json:"name"`
	Description       string   `json:"description,omitempty"`
	Region            string   `json:"region"`
	HealthChecks      []string `json:"healthChecks,omitempty"`
	Instances         []string `json:"instances,omitempty"`
	SessionAffinity   string   `json:"sessionAffinity"`
	BackupPool        string   `json:"backupPool,omitempty"`
	FailoverRatio     float64  `json:"failoverRatio,omitempty"`
	SecurityPolicy    string   `json:"securityPolicy,omitempty"`
	SelfLink          string   `json:"selfLink"`
}

func (t TargetPool) render(base string) TargetPool {
	t.Region = link(base, t.Region)
	t.HealthChecks = links(base, t.HealthChecks)
	t.Instances = links(base, t.Instances)
	t.BackupPool = link(base, t.BackupPool)
	t.SelfLink = link(base, t.SelfLink)
	return t
}

// HTTPHealthCheck is a legacy compute#httpHealthCheck (global).
type HTTPHealthCheck struct {
	Kind               string `json:"kind"`
	ID                 uint64 `json:"id,string"`
	CreationTimestamp  string `json:"creationTimestamp"`
	Name               string `json:"name"`
	Description        string `json:"description,omitempty"`
	Host               string `json:"host,omitempty"`
	RequestPath        string `json:"requestPath"`
	Port               int    `json:"port"`
	CheckIntervalSec   int    `json:"checkIntervalSec"`
	TimeoutSec         int    `json:"timeoutSec"`
	UnhealthyThreshold int    `json:"unhealthyThreshold"`
	HealthyThreshold   int    `json:"healthyThreshold"`
	SelfLink           string `json:"selfLink"`
}

func (h HTTPHealthCheck) render(base string) HTTPHealthCheck {
	h.SelfLink = link(base, h.SelfLink)
	return h
}

// HealthCheck is a compute#healthCheck, global or regional (a global one
// has no region). The fake supports the TCP, HTTP, HTTPS and HTTP2 types.
type HealthCheck struct {
	Kind               string           `json:"kind"`
	ID                 uint64           `json:"id,string"`
	CreationTimestamp  string           `json:"creationTimestamp"`
	Name               string           `json:"name"`
	Description        string           `json:"description,omitempty"`
	CheckIntervalSec   int              `json:"checkIntervalSec"`
	TimeoutSec         int              `json:"timeoutSec"`
	UnhealthyThreshold int              `json:"unhealthyThreshold"`
	HealthyThreshold   int              `json:"healthyThreshold"`
	Type               string           `json:"type"`
	TCPHealthCheck     *HealthCheckTCP  `json:"tcpHealthCheck,omitempty"`
	HTTPHealthCheck    *HealthCheckHTTP `json:"httpHealthCheck,omitempty"`
	HTTPSHealthCheck   *HealthCheckHTTP `json:"httpsHealthCheck,omitempty"`
	HTTP2HealthCheck   *HealthCheckHTTP `json:"http2HealthCheck,omitempty"`
	Region             string           `json:"region,omitempty"`
	SelfLink           string           `json:"selfLink"`
}

// HealthCheckTCP is a health check's tcpHealthCheck.
type HealthCheckTCP struct {
	Port              int    `json:"port,omitempty"`
	PortName          string `json:"portName,omitempty"`
	PortSpecification string `json:"portSpecification,omitempty"`
	Request           string `json:"request,omitempty"`
	Response          string `json:"response,omitempty"`
	ProxyHeader       string `json:"proxyHeader,omitempty"`
}

// HealthCheckHTTP is a health check's httpHealthCheck (also used for the
// https and http2 variants, which have the same fields).
type HealthCheckHTTP struct {
	Port              int    `json:"port,omitempty"`
	PortName          string `json:"portName,omitempty"`
	PortSpecification string `json:"portSpecification,omitempty"`
	Host              string `json:"host,omitempty"`
	RequestPath       string `json:"requestPath,omitempty"`
	Response          string `json:"response,omitempty"`
	ProxyHeader       string `json:"proxyHeader,omitempty"`
}

func (h HealthCheck) render(base string) HealthCheck {
	h.Region = link(base, h.Region)
	h.SelfLink = link(base, h.SelfLink)
	h.TCPHealthCheck = clonePtr(h.TCPHealthCheck)
	h.HTTPHealthCheck = clonePtr(h.HTTPHealthCheck)
	h.HTTPSHealthCheck = clonePtr(h.HTTPSHealthCheck)
	h.HTTP2HealthCheck = clonePtr(h.HTTP2HealthCheck)
	return h
}

// ForwardingRule is a regional compute#forwardingRule. IPAddress is always
// the address itself, as the API reports it whatever the client sent; for
// an IPV6 rule in GCE's form, the /96 with every group written out
// ("fd20:1:2:3:0:1:0:0/96"). Stored, it is netip's canonical form.
type ForwardingRule struct {
	Kind                string            `json:"kind"`
	ID                  uint64            `json:"id,string"`
	CreationTimestamp   string            `json:"creationTimestamp"`
	Name                string            `json:"name"`
	Description         string            `json:"description,omitempty"`
	Region              string            `json:"region"`
	IPAddress           string            `json:"IPAddress"`
	IPProtocol          string            `json:"IPProtocol"`
	PortRange           string            `json:"portRange,omitempty"`
	Ports               []string          `json:"ports,omitempty"`
	AllPorts            bool              `json:"allPorts,omitempty"`
	Target              string            `json:"target,omitempty"`
	BackendService      string            `json:"backendService,omitempty"`
	LoadBalancingScheme string            `json:"loadBalancingScheme"`
	Network             string            `json:"network,omitempty"`
	Subnetwork          string            `json:"subnetwork,omitempty"`
	NetworkTier         string            `json:"networkTier,omitempty"`
	AllowGlobalAccess   bool              `json:"allowGlobalAccess,omitempty"`
	IPVersion           string            `json:"ipVersion,omitempty"`
	SourceIPRanges      []string          `json:"sourceIpRanges,omitempty"`
	ServiceLabel        string            `json:"serviceLabel,omitempty"`
	Labels              map[string]string `json:"labels,omitempty"`
	LabelFingerprint    string            `json:"labelFingerprint"`
	Fingerprint         string            `json:"fingerprint"`
	SelfLink            string            `json:"selfLink"`
}

func (f ForwardingRule) render(base string) ForwardingRule {
	if f.IPVersion == "IPV6" {
		f.IPAddress = displayIP(f.IPAddress, true)
	}
	f.Region = link(base, f.Region)
	f.Target = link(base, f.Target)
	f.BackendService = link(base, f.BackendService)
	f.Network = link(base, f.Network)
	f.Subnetwork = link(base, f.Subnetwork)
	f.SelfLink = link(base, f.SelfLink)
	f.Ports = slices.Clone(f.Ports)
	f.SourceIPRanges = slices.Clone(f.SourceIPRanges)
	f.Labels = maps.Clone(f.Labels)
	return f
}

// Address is a regional compute#address (a static IP). Status and Users
// are worked out from the forwarding rules using the address. An IPV6
// address is rendered with every group written out, without its range
// (prefixLength has it); stored, it is netip's canonical form.
type Address struct {
	Kind              string            `json:"kind"`
	ID                uint64            `json:"id,string"`
	CreationTimestamp string            `json:"creationTimestamp"`
	Name              string            `json:"name"`
	Description       string            `json:"description,omitempty"`
	Address           string            `json:"address"`
	AddressType       string            `json:"addressType"`
	NetworkTier       string            `json:"networkTier,omitempty"`
	IPVersion         string            `json:"ipVersion,omitempty"`
	Purpose           string            `json:"purpose,omitempty"`
	Network           string            `json:"network,omitempty"`
	Subnetwork        string            `json:"subnetwork,omitempty"`
	PrefixLength      int               `json:"prefixLength,omitempty"`
	Status            string            `json:"status"`
	Users             []string          `json:"users,omitempty"`
	Region            string            `json:"region"`
	Labels            map[string]string `json:"labels,omitempty"`
	LabelFingerprint  string            `json:"labelFingerprint"`
	SelfLink          string            `json:"selfLink"`
}

func (a Address) render(base string) Address {
	if a.IPVersion == "IPV6" {
		a.Address = displayIP(a.Address, false)
	}
	a.Network = link(base, a.Network)
	a.Subnetwork = link(base, a.Subnetwork)
	a.Users = links(base, a.Users)
	a.Region = link(base, a.Region)
	a.SelfLink = link(base, a.SelfLink)
	a.Labels = maps.Clone(a.Labels)
	return a
}

// Firewall is a compute#firewall.
type Firewall struct {
	Kind                  string             `json:"kind"`
	ID                    uint64             `json:"id,string"`
	CreationTimestamp     string             `json:"creationTimestamp"`
	Name                  string             `json:"name"`
	Description           string             `json:"description,omitempty"`
	Network               string             `json:"network"`
	Priority              int                `json:"priority"`
	SourceRanges          []string           `json:"sourceRanges,omitempty"`
	DestinationRanges     []string           `json:"destinationRanges,omitempty"`
	SourceTags            []string           `json:"sourceTags,omitempty"`
	TargetTags            []string           `json:"targetTags,omitempty"`
	SourceServiceAccounts []string           `json:"sourceServiceAccounts,omitempty"`
	TargetServiceAccounts []string           `json:"targetServiceAccounts,omitempty"`
	Allowed               []FirewallRule     `json:"allowed,omitempty"`
	Denied                []FirewallRule     `json:"denied,omitempty"`
	Direction             string             `json:"direction"`
	Disabled              bool               `json:"disabled"`
	LogConfig             *FirewallLogConfig `json:"logConfig,omitempty"`
	SelfLink              string             `json:"selfLink"`
}

// FirewallRule is one entry of a firewall's allowed or denied list.
type FirewallRule struct {
	IPProtocol string   `json:"IPProtocol"`
	Ports      []string `json:"ports,omitempty"`
}

// FirewallLogConfig is a firewall's logConfig.
type FirewallLogConfig struct {
	Enable bool `json:"enable"`
}

func (f Firewall) render(base string) Firewall {
	f.Network = link(base, f.Network)
	f.SelfLink = link(base, f.SelfLink)
	f.SourceRanges = slices.Clone(f.SourceRanges)
	f.DestinationRanges = slices.Clone(f.DestinationRanges)
	f.SourceTags = slices.Clone(f.SourceTags)
	f.TargetTags = slices.Clone(f.TargetTags)
	f.Allowed = cloneRules(f.Allowed)
	f.Denied = cloneRules(f.Denied)
	f.LogConfig = clonePtr(f.LogConfig)
	return f
}

func cloneRules(rs []FirewallRule) []FirewallRule {
	if rs == nil {
		return nil
	}
	out := make([]FirewallRule, len(rs))
	for k, r := range rs {
		out[k] = FirewallRule{IPProtocol: r.IPProtocol, Ports: slices.Clone(r.Ports)}
	}
	return out
}

// BackendService is a regional compute#backendService.
type BackendService struct {
	Kind                string              `json:"kind"`
	ID                  uint64              `json:"id,string"`
	CreationTimestamp   string              `json:"creationTimestamp"`
	Name                string              `json:"name"`
	Description         string              `json:"description,omitempty"`
	Backends            []Backend           `json:"backends,omitempty"`
	HealthChecks        []string            `json:"healthChecks,omitempty"`
	TimeoutSec          int                 `json:"timeoutSec"`
	Port                int                 `json:"port,omitempty"`
	PortName            string              `json:"portName,omitempty"`
	Protocol            string              `json:"protocol"`
	Fingerprint         string              `json:"fingerprint"`
	SessionAffinity     string              `json:"sessionAffinity"`
	Region              string              `json:"region"`
	LoadBalancingScheme string              `json:"loadBalancingScheme"`
	ConnectionDraining  *ConnectionDraining `json:"connectionDraining,omitempty"`
	Network             string              `json:"network,omitempty"`
	SelfLink            string              `json:"selfLink"`
}

// Backend is one backend of a backend service.
type Backend struct {
	Group          string  `json:"group"`
	BalancingMode  string  `json:"balancingMode,omitempty"`
	CapacityScaler float64 `json:"capacityScaler,omitempty"`
	Description    string  `json:"description,omitempty"`
	Failover       bool    `json:"failover,omitempty"`
}

// ConnectionDraining is a backend service's connectionDraining.
type ConnectionDraining struct {
	DrainingTimeoutSec int `json:"drainingTimeoutSec"`
}

func (b BackendService) render(base string) BackendService {
	if b.Backends != nil {
		bs := make([]Backend, len(b.Backends))
		for k, be := range b.Backends {
			be.Group = link(base, be.Group)
			bs[k] = be
		}
		b.Backends = bs
	}
	b.HealthChecks = links(base, b.HealthChecks)
	b.Region = link(base, b.Region)
	b.Network = link(base, b.Network)
	b.SelfLink = link(base, b.SelfLink)
	b.ConnectionDraining = clonePtr(b.ConnectionDraining)
	return b
}

// InstanceGroup is an unmanaged zonal compute#instanceGroup.
type InstanceGroup struct {
	Kind              string      `json:"kind"`
	ID                uint64      `json:"id,string"`
	CreationTimestamp string      `json:"creationTimestamp"`
	Name              string      `json:"name"`
	Description       string      `json:"description,omitempty"`
	NamedPorts        []NamedPort `json:"namedPorts,omitempty"`
	Network           string      `json:"network,omitempty"`
	Subnetwork        string      `json:"subnetwork,omitempty"`
	Fingerprint       string      `json:"fingerprint"`
	Zone              string      `json:"zone"`
	Size              int         `json:"size"`
	SelfLink          string      `json:"selfLink"`
	// Members are the instances in the group, as instance URLs. The API
	// lists them with listInstances, not with the group.
	Members []string `json:"-"`
}

// NamedPort is an instance group's named port.
type NamedPort struct {
	Name string `json:"name"`
	Port int    `json:"port"`
}

func (g InstanceGroup) render(base string) InstanceGroup {
	g.NamedPorts = slices.Clone(g.NamedPorts)
	g.Network = link(base, g.Network)
	g.Subnetwork = link(base, g.Subnetwork)
	g.Zone = link(base, g.Zone)
	g.SelfLink = link(base, g.SelfLink)
	g.Members = links(base, g.Members)
	g.Size = len(g.Members)
	return g
}

// Route is a compute#route.
type Route struct {
	Kind              string    `json:"kind"`
	ID                uint64    `json:"id,string"`
	CreationTimestamp string    `json:"creationTimestamp"`
	Name              string    `json:"name"`
	Description       string    `json:"description,omitempty"`
	Network           string    `json:"network"`
	Tags              []string  `json:"tags,omitempty"`
	DestRange         string    `json:"destRange"`
	Priority          int       `json:"priority"`
	NextHopInstance   string    `json:"nextHopInstance,omitempty"`
	NextHopIP         string    `json:"nextHopIp,omitempty"`
	NextHopNetwork    string    `json:"nextHopNetwork,omitempty"`
	NextHopGateway    string    `json:"nextHopGateway,omitempty"`
	NextHopIlb        string    `json:"nextHopIlb,omitempty"`
	RouteType         string    `json:"routeType,omitempty"`
	Warnings          []warning `json:"warnings,omitempty"`
	SelfLink          string    `json:"selfLink"`
}

func (r Route) render(base string) Route {
	r.Network = link(base, r.Network)
	r.Tags = slices.Clone(r.Tags)
	r.NextHopInstance = link(base, r.NextHopInstance)
	r.NextHopNetwork = link(base, r.NextHopNetwork)
	r.NextHopGateway = link(base, r.NextHopGateway)
	if strings.HasPrefix(r.NextHopIlb, "projects/") {
		r.NextHopIlb = link(base, r.NextHopIlb) // else an IP address
	}
	r.Warnings = slices.Clone(r.Warnings)
	r.SelfLink = link(base, r.SelfLink)
	return r
}

// warning is the API's informational warning.
type warning struct {
	Code    string        `json:"code"`
	Message string        `json:"message"`
	Data    []warningData `json:"data,omitempty"`
}

type warningData struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// listJSON is every compute#xxxList.
type listJSON struct {
	Kind          string `json:"kind"`
	ID            string `json:"id"`
	Items         any    `json:"items,omitempty"`
	NextPageToken string `json:"nextPageToken,omitempty"`
	SelfLink      string `json:"selfLink"`
}

// aggregatedJSON is every compute#xxxAggregatedList: items maps a scope
// ("zones/us-central1-a") to a scoped list, {"instances": [...]} or
// {"warning": {...}} when the scope has nothing on this page.
type aggregatedJSON struct {
	Kind          string                    `json:"kind"`
	ID            string                    `json:"id"`
	Items         map[string]map[string]any `json:"items"`
	NextPageToken string                    `json:"nextPageToken,omitempty"`
	SelfLink      string                    `json:"selfLink"`
	Unreachables  []string                  `json:"unreachables,omitempty"`
}

// instanceRef is an InstanceReference; referencesJSON the bodies of
// targetPools.addInstance/removeInstance and instanceGroups.add/
// removeInstances.
type instanceRef struct {
	Instance string `json:"instance"`
}

type healthCheckRef struct {
	HealthCheck string `json:"healthCheck"`
}

// timestamp renders a time as the API does: RFC 3339 with milliseconds and
// the Pacific offset its servers report.
func timestamp(t time.Time) string {
	return t.In(pacific).Format(tsLayout)
}

const tsLayout = "2006-01-02T15:04:05.000-07:00"

var pacific = time.FixedZone("PDT", -7*60*60)

// fingerprint is a base64 hash of its inputs, the shape of the API's
// fingerprint fields.
func fingerprint(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return base64.StdEncoding.EncodeToString(h[:8])
}

// emptyLabelFingerprint is the labelFingerprint of a resource without
// labels, as the API reports it.
const emptyLabelFingerprint = "42WmSpB8rSM="

func labelFingerprint(labels map[string]string) string {
	if len(labels) == 0 {
		return emptyLabelFingerprint
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, 2*len(keys))
	for _, k := range keys {
		parts = append(parts, k, labels[k])
	}
	return fingerprint(parts...)
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}
