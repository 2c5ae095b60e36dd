package openstack

import (
	"maps"
	"slices"
	"time"
)

// Octavia's documents (octavia/api/v2/types), as API 2.27 shows them:
// WSME writes every attribute, None as null; timestamps are the
// database's, to the second and without a zone, updated_at null until
// the first change. Every type with project_id also has tenant_id, its
// alias. Full responses (a load balancer's create, with its listeners
// and pools inline) leave out the back references.

type wireIDOnly struct {
	ID string `json:"id"`
}

type wireLoadBalancer struct {
	ID                 string       `json:"id"`
	Name               string       `json:"name"`
	Description        string       `json:"description"`
	ProvisioningStatus string       `json:"provisioning_status"`
	OperatingStatus    string       `json:"operating_status"`
	AdminStateUp       bool         `json:"admin_state_up"`
	ProjectID          string       `json:"project_id"`
	TenantID           string       `json:"tenant_id"`
	CreatedAt          string       `json:"created_at"`
	UpdatedAt          *string      `json:"updated_at"`
	VipAddress         string       `json:"vip_address"`
	VipPortID          string       `json:"vip_port_id"`
	VipSubnetID        string       `json:"vip_subnet_id"`
	VipNetworkID       string       `json:"vip_network_id"`
	AdditionalVips     []wireAddVIP `json:"additional_vips"`
	Listeners          any          `json:"listeners"` // IDs, or whole listeners in a full response
	Pools              any          `json:"pools"`
	Provider           string       `json:"provider"`
	FlavorID           *string      `json:"flavor_id"`
	VipQosPolicyID     *string      `json:"vip_qos_policy_id"`
	Tags               []string     `json:"tags"`
	AvailabilityZone   *string      `json:"availability_zone"`
}

type wireAddVIP struct {
	SubnetID  string `json:"subnet_id"`
	IPAddress string `json:"ip_address"`
	PortID    string `json:"port_id"`
}

type wireListener struct {
	ID                      string            `json:"id"`
	Name                    string            `json:"name"`
	Description             string            `json:"description"`
	ProvisioningStatus      string            `json:"provisioning_status"`
	OperatingStatus         string            `json:"operating_status"`
	AdminStateUp            bool              `json:"admin_state_up"`
	Protocol                string            `json:"protocol"`
	ProtocolPort            int               `json:"protocol_port"`
	ConnectionLimit         int               `json:"connection_limit"`
	DefaultTLSContainerRef  *string           `json:"default_tls_container_ref"`
	SniContainerRefs        []string          `json:"sni_container_refs"`
	ProjectID               string            `json:"project_id"`
	TenantID                string            `json:"tenant_id"`
	DefaultPoolID           *string           `json:"default_pool_id"`
	L7Policies              []any             `json:"l7policies"`
	InsertHeaders           map[string]string `json:"insert_headers"`
	CreatedAt               string            `json:"created_at"`
	UpdatedAt               *string           `json:"updated_at"`
	Loadbalancers           *[]wireIDOnly     `json:"loadbalancers,omitempty"` // not in full responses
	TimeoutClientData       int               `json:"timeout_client_data"`
	TimeoutMemberConnect    int               `json:"timeout_member_connect"`
	TimeoutMemberData       int               `json:"timeout_member_data"`
	TimeoutTCPInspect       int               `json:"timeout_tcp_inspect"`
	Tags                    []string          `json:"tags"`
	ClientCATLSContainerRef *string           `json:"client_ca_tls_container_ref"`
	ClientAuthentication    string            `json:"client_authentication"`
	ClientCRLContainerRef   *string           `json:"client_crl_container_ref"`
	AllowedCIDRs            []string          `json:"allowed_cidrs"` // null when none
	TLSCiphers              *string           `json:"tls_ciphers"`
	TLSVersions             []string          `json:"tls_versions"`
	ALPNProtocols           []string          `json:"alpn_protocols"`
	HSTSMaxAge              *int              `json:"hsts_max_age"`
	HSTSIncludeSubdomains   bool              `json:"hsts_include_subdomains"`
	HSTSPreload             bool              `json:"hsts_preload"`
}

type wireSessionPersistence struct {
	Type                   string  `json:"type"`
	CookieName             *string `json:"cookie_name"`
	PersistenceTimeout     *int    `json:"persistence_timeout"`
	PersistenceGranularity *string `json:"persistence_granularity"`
}

type wirePool struct {
	ID                 string                  `json:"id"`
	Name               string                  `json:"name"`
	Description        string                  `json:"description"`
	ProvisioningStatus string                  `json:"provisioning_status"`
	OperatingStatus    string                  `json:"operating_status"`
	AdminStateUp       bool                    `json:"admin_state_up"`
	Protocol           string                  `json:"protocol"`
	LBAlgorithm        string                  `json:"lb_algorithm"`
	SessionPersistence *wireSessionPersistence `json:"session_persistence"`
	ProjectID          string                  `json:"project_id"`
	TenantID           string                  `json:"tenant_id"`
	Loadbalancers      *[]wireIDOnly           `json:"loadbalancers,omitempty"` // not in full responses
	Listeners          []wireIDOnly            `json:"listeners"`
	CreatedAt          string                  `json:"created_at"`
	UpdatedAt          *string                 `json:"updated_at"`
	HealthmonitorID    *string                 `json:"healthmonitor_id"`
	Members            any                     `json:"members"` // IDs, or whole members in a full response
	Healthmonitor      *wireMonitor            `json:"healthmonitor,omitempty"`
	Tags               []string                `json:"tags"`
	TLSContainerRef    *string                 `json:"tls_container_ref"`
	CATLSContainerRef  *string                 `json:"ca_tls_container_ref"`
	CRLContainerRef    *string                 `json:"crl_container_ref"`
	TLSEnabled         bool                    `json:"tls_enabled"`
	TLSCiphers         *string                 `json:"tls_ciphers"`
	TLSVersions        []string                `json:"tls_versions"`
	ALPNProtocols      []string                `json:"alpn_protocols"`
}

type wireMember struct {
	ID                 string   `json:"id"`
	Name               string   `json:"name"`
	OperatingStatus    string   `json:"operating_status"`
	ProvisioningStatus string   `json:"provisioning_status"`
	AdminStateUp       bool     `json:"admin_state_up"`
	Address            string   `json:"address"`
	ProtocolPort       int      `json:"protocol_port"`
	Weight             int      `json:"weight"`
	Backup             bool     `json:"backup"`
	SubnetID           *string  `json:"subnet_id"`
	ProjectID          string   `json:"project_id"`
	TenantID           string   `json:"tenant_id"`
	CreatedAt          string   `json:"created_at"`
	UpdatedAt          *string  `json:"updated_at"`
	MonitorAddress     *string  `json:"monitor_address"`
	MonitorPort        *int     `json:"monitor_port"`
	Tags               []string `json:"tags"`
}

type wireMonitor struct {
	ID                 string        `json:"id"`
	Name               string        `json:"name"`
	Type               string        `json:"type"`
	Delay              int           `json:"delay"`
	Timeout            int           `json:"timeout"`
	MaxRetries         int           `json:"max_retries"`
	MaxRetriesDown     int           `json:"max_retries_down"`
	HTTPMethod         *string       `json:"http_method"`
	URLPath            *string       `json:"url_path"`
	ExpectedCodes      *string       `json:"expected_codes"`
	AdminStateUp       bool          `json:"admin_state_up"`
	ProjectID          string        `json:"project_id"`
	TenantID           string        `json:"tenant_id"`
	Pools              *[]wireIDOnly `json:"pools,omitempty"` // not in full responses
	ProvisioningStatus string        `json:"provisioning_status"`
	OperatingStatus    string        `json:"operating_status"`
	CreatedAt          string        `json:"created_at"`
	UpdatedAt          *string       `json:"updated_at"`
	Tags               []string      `json:"tags"`
	HTTPVersion        *float64      `json:"http_version"`
	DomainName         *string       `json:"domain_name"`
}

// The status tree (GET .../loadbalancers/{id}/status): names and
// statuses only, listeners holding their pools; the pools' monitor is
// under "health_monitor" there.

type wireStatusLB struct {
	ID                 string               `json:"id"`
	Name               string               `json:"name"`
	OperatingStatus    string               `json:"operating_status"`
	ProvisioningStatus string               `json:"provisioning_status"`
	Listeners          []wireStatusListener `json:"listeners"`
}

type wireStatusListener struct {
	ID                 string           `json:"id"`
	Name               string           `json:"name"`
	OperatingStatus    string           `json:"operating_status"`
	ProvisioningStatus string           `json:"provisioning_status"`
	Pools              []wireStatusPool `json:"pools"`
}

type wireStatusPool struct {
	ID                 string             `json:"id"`
	Name               string             `json:"name"`
	ProvisioningStatus string             `json:"provisioning_status"`
	OperatingStatus    string             `json:"operating_status"`
	HealthMonitor      *wireStatusMonitor `json:"health_monitor,omitempty"`
	Members            []wireStatusMember `json:"members"`
}

type wireStatusMonitor struct {
	ID                 string `json:"id"`
	Name               string `json:"name"`
	Type               string `json:"type"`
	ProvisioningStatus string `json:"provisioning_status"`
	OperatingStatus    string `json:"operating_status"`
}

type wireStatusMember struct {
	ID                 string `json:"id"`
	Name               string `json:"name"`
	OperatingStatus    string `json:"operating_status"`
	ProvisioningStatus string `json:"provisioning_status"`
	Address            string `json:"address"`
	ProtocolPort       int    `json:"protocol_port"`
}

// octStamp is a time as Octavia's database gives it back.
func octStamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05") }

func octUpdated(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	return strPtr(octStamp(t))
}

func idsOf(ids []string) []wireIDOnly {
	out := []wireIDOnly{}
	for _, id := range ids {
		out = append(out, wireIDOnly{ID: id})
	}
	return out
}

func (s *Server) wireLBLocked(lb *lbState, full bool) wireLoadBalancer {
	w := wireLoadBalancer{ID: lb.ID, Name: lb.Name, Description: lb.Description, ProvisioningStatus: lb.prov,
		OperatingStatus: s.lbOperatingLocked(lb), AdminStateUp: lb.AdminUp, ProjectID: lb.project, TenantID: lb.project,
		CreatedAt: octStamp(lb.created), UpdatedAt: octUpdated(lb.updated), VipAddress: lb.vipAddress, VipPortID: lb.vipPortID,
		VipSubnetID: lb.vipSubnetID, VipNetworkID: lb.vipNetworkID, AdditionalVips: []wireAddVIP{}, Provider: lb.provider,
		Tags: slices.Clone(lb.Tags)}
	for _, a := range lb.additional {
		w.AdditionalVips = append(w.AdditionalVips, wireAddVIP{SubnetID: a.SubnetID, IPAddress: a.IP, PortID: lb.vipPortID})
	}
	if lb.flavorID != "" {
		w.FlavorID = strPtr(lb.flavorID)
	}
	if lb.az != "" {
		w.AvailabilityZone = strPtr(lb.az)
	}
	if !full {
		w.Listeners, w.Pools = idsOf(lb.listeners), idsOf(lb.pools)
		return w
	}
	ls, ps := []wireListener{}, []wirePool{}
	for _, id := range lb.listeners {
		ls = append(ls, s.wireListenerLocked(s.oct.listeners[id], true))
	}
	for _, id := range lb.pools {
		ps = append(ps, s.wirePoolLocked(s.oct.pools[id], true))
	}
	w.Listeners, w.Pools = ls, ps
	return w
}

func (s *Server) wireListenerLocked(l *listenerState, full bool) wireListener {
	project := s.oct.lbs[l.lb].project
	w := wireListener{ID: l.ID, Name: l.Name, Description: l.Description, ProvisioningStatus: l.prov,
		OperatingStatus: s.listenerOperatingLocked(l), AdminStateUp: l.AdminUp, Protocol: l.protocol, ProtocolPort: l.port,
		ConnectionLimit: l.connLimit, DefaultTLSContainerRef: l.tlsRef, SniContainerRefs: append([]string{}, l.sniRefs...),
		ProjectID: project, TenantID: project, L7Policies: []any{}, InsertHeaders: maps.Clone(l.insertHeaders),
		CreatedAt: octStamp(l.created), UpdatedAt: octUpdated(l.updated), TimeoutClientData: l.timeoutClientData,
		TimeoutMemberConnect: l.timeoutMemberConnect, TimeoutMemberData: l.timeoutMemberData,
		TimeoutTCPInspect: l.timeoutTCPInspect, Tags: slices.Clone(l.Tags), ClientCATLSContainerRef: l.clientCARef,
		ClientAuthentication: l.clientAuth, ClientCRLContainerRef: l.clientCRLRef, AllowedCIDRs: slices.Clone(l.allowedCIDRs),
		TLSCiphers: l.tlsCiphers, TLSVersions: slices.Clone(l.tlsVersions), ALPNProtocols: slices.Clone(l.alpn),
		HSTSMaxAge: l.hstsMaxAge, HSTSIncludeSubdomains: l.hstsSubdomains, HSTSPreload: l.hstsPreload}
	if w.InsertHeaders == nil {
		w.InsertHeaders = map[string]string{}
	}
	if l.defaultPool != "" {
		w.DefaultPoolID = strPtr(l.defaultPool)
	}
	if !full {
		lbs := []wireIDOnly{{ID: l.lb}}
		w.Loadbalancers = &lbs
	}
	return w
}

func (s *Server) wirePoolLocked(p *poolState, full bool) wirePool {
	project := s.oct.lbs[p.lb].project
	w := wirePool{ID: p.ID, Name: p.Name, Description: p.Description, ProvisioningStatus: p.prov,
		OperatingStatus: s.poolOperatingLocked(p), AdminStateUp: p.AdminUp, Protocol: p.protocol, LBAlgorithm: p.algorithm,
		ProjectID: project, TenantID: project, Listeners: idsOf(s.poolListenersLocked(p)), CreatedAt: octStamp(p.created),
		UpdatedAt: octUpdated(p.updated), Tags: slices.Clone(p.Tags), TLSContainerRef: p.tlsRef, CATLSContainerRef: p.caRef,
		CRLContainerRef: p.crlRef, TLSEnabled: p.tlsEnabled, TLSCiphers: p.tlsCiphers, TLSVersions: slices.Clone(p.tlsVersions),
		ALPNProtocols: slices.Clone(p.alpn)}
	if sp := p.persistence; sp != nil {
		w.SessionPersistence = &wireSessionPersistence{Type: sp.typ, CookieName: sp.cookieName,
			PersistenceTimeout: sp.timeout, PersistenceGranularity: sp.granularity}
	}
	hm := s.oct.monitors[p.monitor]
	if hm != nil {
		w.HealthmonitorID = strPtr(hm.ID)
	}
	if !full {
		lbs := []wireIDOnly{{ID: p.lb}}
		w.Loadbalancers, w.Members = &lbs, idsOf(p.members)
		return w
	}
	ms := []wireMember{}
	for _, id := range p.members {
		ms = append(ms, s.wireMemberLocked(s.oct.members[id]))
	}
	w.Members = ms
	if hm != nil {
		whm := s.wireMonitorLocked(hm, true)
		w.Healthmonitor = &whm
	}
	return w
}

func (s *Server) wireMemberLocked(m *memberState) wireMember {
	project := s.oct.lbs[s.oct.pools[m.pool].lb].project
	return wireMember{ID: m.ID, Name: m.Name, OperatingStatus: s.memberOperatingLocked(m), ProvisioningStatus: m.prov,
		AdminStateUp: m.AdminUp, Address: m.address, ProtocolPort: m.port, Weight: m.weight, Backup: m.backup,
		SubnetID: m.subnetID, ProjectID: project, TenantID: project, CreatedAt: octStamp(m.created),
		UpdatedAt: octUpdated(m.updated), MonitorAddress: m.monitorAddress, MonitorPort: m.monitorPort,
		Tags: slices.Clone(m.Tags)}
}

func (s *Server) wireMonitorLocked(hm *monitorState, full bool) wireMonitor {
	project := s.oct.lbs[s.oct.pools[hm.pool].lb].project
	w := wireMonitor{ID: hm.ID, Name: hm.Name, Type: hm.typ, Delay: hm.delay, Timeout: hm.timeout,
		MaxRetries: hm.maxRetries, MaxRetriesDown: hm.maxRetriesDown, HTTPMethod: hm.httpMethod, URLPath: hm.urlPath,
		ExpectedCodes: hm.expectedCodes, AdminStateUp: hm.AdminUp, ProjectID: project, TenantID: project,
		ProvisioningStatus: hm.prov, OperatingStatus: s.monitorOperatingLocked(hm), CreatedAt: octStamp(hm.created),
		UpdatedAt: octUpdated(hm.updated), Tags: slices.Clone(hm.Tags), HTTPVersion: hm.httpVersion, DomainName: hm.domainName}
	if !full {
		pools := []wireIDOnly{{ID: hm.pool}}
		w.Pools = &pools
	}
	return w
}

// The operating statuses, as the amphorae's health reports set them: an
// object not yet ACTIVE once is OFFLINE (a member NO_MONITOR, or OFFLINE
// under a monitor), one disabled is OFFLINE; members report their health
// (SetMemberOperatingStatus) when the pool has a monitor, NO_MONITOR
// otherwise; a pool is ERROR when every member is, DEGRADED when some
// are; listeners and the load balancer are DEGRADED above such a pool.

func (s *Server) memberOperatingLocked(m *memberState) string {
	p := s.oct.pools[m.pool]
	hm := s.oct.monitors[p.monitor]
	switch {
	case !m.live && hm != nil:
		return OperatingOffline
	case !m.live || hm == nil:
		return OperatingNoMonitor
	case !m.AdminUp:
		return OperatingOffline
	}
	return m.health
}

func (s *Server) monitorOperatingLocked(hm *monitorState) string {
	if !hm.live || !hm.AdminUp {
		return OperatingOffline
	}
	return OperatingOnline
}

func (s *Server) poolOperatingLocked(p *poolState) string {
	if !p.live || !p.AdminUp {
		return OperatingOffline
	}
	up, down := 0, 0
	for _, id := range p.members {
		switch s.memberOperatingLocked(s.oct.members[id]) {
		case OperatingError:
			down++
		case OperatingOnline, OperatingNoMonitor, OperatingDraining:
			up++
		}
	}
	switch {
	case down > 0 && up == 0:
		return OperatingError
	case down > 0:
		return OperatingDegraded
	}
	return OperatingOnline
}

func (s *Server) listenerOperatingLocked(l *listenerState) string {
	if !l.live || !l.AdminUp {
		return OperatingOffline
	}
	if p := s.oct.pools[l.defaultPool]; p != nil {
		if st := s.poolOperatingLocked(p); st == OperatingError || st == OperatingDegraded {
			return OperatingDegraded
		}
	}
	return OperatingOnline
}

func (s *Server) lbOperatingLocked(lb *lbState) string {
	if !lb.live || !lb.AdminUp {
		return OperatingOffline
	}
	for _, id := range lb.listeners {
		if s.listenerOperatingLocked(s.oct.listeners[id]) == OperatingDegraded {
			return OperatingDegraded
		}
	}
	for _, id := range lb.pools {
		if st := s.poolOperatingLocked(s.oct.pools[id]); st == OperatingError || st == OperatingDegraded {
			return OperatingDegraded
		}
	}
	return OperatingOnline
}

// poolListenersLocked are the listeners whose default pool p is.
func (s *Server) poolListenersLocked(p *poolState) []string {
	var out []string
	for _, id := range s.oct.lbs[p.lb].listeners {
		if s.oct.listeners[id].defaultPool == p.ID {
			out = append(out, id)
		}
	}
	return out
}
