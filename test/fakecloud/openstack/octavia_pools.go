package openstack

import (
	"net/http"
	"slices"
)

var (
	poolProtocols  = []string{"HTTP", "HTTPS", "PROXY", "PROXYV2", "TCP", "UDP", "SCTP"}
	lbAlgorithms   = []string{"LEAST_CONNECTIONS", "ROUND_ROBIN", "SOURCE_IP", "SOURCE_IP_PORT"}
	persistenceTyp = []string{"SOURCE_IP", "HTTP_COOKIE", "APP_COOKIE"}
)

type sessionPersistence struct {
	typ                     string
	cookieName, granularity *string
	timeout                 *int
}

type poolState struct {
	octBase
	lb                 string
	protocol           string
	algorithm          string
	persistence        *sessionPersistence
	members            []string // in creation order
	monitor            string
	tlsEnabled         bool
	tlsRef, caRef      *string
	crlRef, tlsCiphers *string
	tlsVersions, alpn  []string
}

// poolIn is a pool to create, with its members and monitor.
type poolIn struct {
	v                 wsVals
	name, description string
	adminUp           bool
	tags              []string
	protocol          string
	algorithm         string
	members           []memberIn
	monitor           *monitorIn
}

var persistencePOST = wsType{"type": must(enumOf(persistenceTyp...)), "cookie_name": str(255),
	"persistence_timeout": {kind: wsInt}, "persistence_granularity": wsIPAttr}

var poolCommon = wsType{
	"name": str(255), "description": str(255), "admin_state_up": wsBoolAttr, "lb_algorithm": enumOf(lbAlgorithms...),
	"session_persistence": {kind: wsObject, sub: persistencePOST}, "tags": wsTagsAttr, "tls_container_ref": str(255),
	"ca_tls_container_ref": str(255), "crl_container_ref": str(255), "tls_enabled": wsBoolAttr,
	"tls_ciphers": str(2048), "tls_versions": wsListAttr, "alpn_protocols": wsListAttr,
}

var (
	poolSingle = poolCommon.with(wsType{"protocol": enumOf(poolProtocols...),
		"healthmonitor": {kind: wsObject, sub: monitorSingle}, "members": {kind: wsObjectList, sub: memberSingle}})
	poolPOST = poolSingle.with(wsType{"protocol": must(enumOf(poolProtocols...)), "lb_algorithm": must(enumOf(lbAlgorithms...)),
		"listener_id": wsUUIDAttr, "loadbalancer_id": wsUUIDAttr, "project_id": str(36), "tenant_id": str(36)})
	poolPUT = poolCommon.with(wsType{"session_persistence": {kind: wsObject, sub: persistencePOST.with(
		wsType{"type": enumOf(persistenceTyp...)})}})
)

var poolFilters = []string{"id", "name", "description", "provisioning_status", "operating_status", "admin_state_up",
	"project_id", "loadbalancer_id", "protocol", "lb_algorithm", "tls_enabled"}

func poolInFrom(v wsVals) poolIn {
	in := poolIn{v: v, name: v.str("name"), description: v.str("description"), adminUp: v.boolOr("admin_state_up", true),
		tags: v.list("tags"), protocol: v.str("protocol"), algorithm: v.str("lb_algorithm")}
	for _, m := range v.objs("members") {
		in.members = append(in.members, memberInFrom(m))
	}
	if hm := v.obj("healthmonitor"); hm != nil {
		min := monitorInFrom(hm)
		in.monitor = &min
	}
	return in
}

// nameOnly says whether a listener's default_pool only names a pool
// defined with the load balancer's pools.
func (in poolIn) nameOnly() bool {
	for k := range in.v {
		if k != "name" && k != "admin_state_up" && k != "tls_enabled" {
			return false
		}
	}
	return true
}

// checkPoolLocked is the pool's own checks (session persistence, TLS),
// then its members' and monitor's.
func (s *Server) checkPoolLocked(in poolIn) (int, any) {
	if sp := in.v.obj("session_persistence"); sp != nil {
		if st, body := checkPersistence(in.protocol, sp); st != 0 {
			return st, body
		}
	}
	if in.v.str("crl_container_ref") != "" && in.v.str("ca_tls_container_ref") == "" {
		return errOctaviaValidation("A CA certificate reference is required to specify a revocation list.")
	}
	var seen []memberIn
	for _, m := range in.members {
		if st, body := checkMemberIn(m, seen); st != 0 {
			return st, body
		}
		seen = append(seen, m)
	}
	if in.monitor != nil {
		return checkMonitorIn(*in.monitor, in.protocol)
	}
	return 0, nil
}

func checkPersistence(protocol string, sp wsVals) (int, any) {
	typ, cookie := sp.str("type"), sp.str("cookie_name")
	if protocol == "UDP" || protocol == "SCTP" {
		switch {
		case cookie != "":
			return errOctaviaValidation("Cookie names are not supported for UDP/SCTP pools.")
		case typ == "HTTP_COOKIE" || typ == "APP_COOKIE":
			return errOctaviaValidation("Session persistence of type " + typ + " is not supported for UDP/SCTP protocol pools.")
		}
		return 0, nil
	}
	if sp.has("persistence_timeout") && sp["persistence_timeout"] != nil ||
		sp.has("persistence_granularity") && sp["persistence_granularity"] != nil {
		return errOctaviaValidation("persistence_timeout and persistence_granularity is only for UDP and SCTP protocol pools.")
	}
	if cookie != "" && typ != "APP_COOKIE" {
		return errOctaviaValidation(`Field "cookie_name" can only be specified with session persistence of type "APP_COOKIE".`)
	}
	if typ == "APP_COOKIE" && cookie == "" {
		return errOctaviaValidation(`Field "cookie_name" must be specified when using the "APP_COOKIE" session persistence type.`)
	}
	return 0, nil
}

func persistenceFrom(sp wsVals) *sessionPersistence {
	if sp == nil {
		return nil
	}
	return &sessionPersistence{typ: sp.str("type"), cookieName: sp.strPtr("cookie_name"),
		granularity: sp.strPtr("persistence_granularity"), timeout: sp.intPtr("persistence_timeout")}
}

// newPoolLocked adds a pool to lb, PENDING_CREATE, with its members and
// monitor.
func (s *Server) newPoolLocked(lb *lbState, in poolIn) *poolState {
	v := in.v
	p := &poolState{octBase: s.newBaseLocked(in.name, in.description, in.adminUp, in.tags), lb: lb.ID,
		protocol: in.protocol, algorithm: in.algorithm, persistence: persistenceFrom(v.obj("session_persistence")),
		tlsEnabled: v.boolOr("tls_enabled", false), tlsRef: v.strPtr("tls_container_ref"),
		caRef: v.strPtr("ca_tls_container_ref"), crlRef: v.strPtr("crl_container_ref"), tlsCiphers: v.strPtr("tls_ciphers"),
		tlsVersions: v.list("tls_versions"), alpn: v.list("alpn_protocols")}
	if p.tlsEnabled {
		if p.tlsCiphers == nil {
			p.tlsCiphers = strPtr(defaultTLSCiphers)
		}
		if p.tlsVersions == nil {
			p.tlsVersions = slices.Clone(defaultTLSVersions)
		}
		if p.alpn == nil {
			p.alpn = []string{"http/1.1", "http/1.0"}
		}
	}
	s.oct.pools[p.ID] = p
	lb.pools = append(lb.pools, p.ID)
	if in.monitor != nil {
		s.newMonitorLocked(p, *in.monitor)
	}
	for _, m := range in.members {
		s.newMemberLocked(p, m)
	}
	return p
}

// poolLocked finds a pool of the call's region.
func (s *Server) poolLocked(c *call, id string) *poolState {
	p := s.oct.pools[id]
	if p == nil || s.oct.lbs[p.lb].region != c.region {
		return nil
	}
	return p
}

func (s *Server) listPools(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var items []octItem
	for _, p := range s.oct.pools {
		lb := s.oct.lbs[p.lb]
		if lb.region != c.region {
			continue
		}
		f := baseFields(&p.octBase, lb.project)
		f["operating_status"], f["loadbalancer_id"] = s.poolOperatingLocked(p), p.lb
		f["protocol"], f["lb_algorithm"], f["tls_enabled"] = p.protocol, p.algorithm, boolText(p.tlsEnabled)
		items = append(items, octItem{id: p.ID, created: p.created, fields: f, tags: p.Tags,
			render: func() any { return s.wirePoolLocked(p, false) }})
	}
	return octaviaPage(c, "pools", poolFilters, items)
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func (s *Server) getPool(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.poolLocked(c, c.p["id"])
	if p == nil {
		return errOctaviaNotFound("Pool", c.p["id"])
	}
	return http.StatusOK, map[string]any{"pool": s.wirePoolLocked(p, false)}
}

// createPool: POST /v2/lbaas/pools, on a load balancer, or on a listener
// whose default pool it becomes.
func (s *Server) createPool(c *call) (int, any) {
	v, st, body := readOctaviaBody(c, "pool", poolPOST)
	if st != 0 {
		return st, body
	}
	in := poolInFrom(v.obj("pool"))
	s.mu.Lock()
	defer s.mu.Unlock()
	var lb *lbState
	var l *listenerState
	if id := in.v.str("listener_id"); id != "" {
		if l = s.listenerLocked(c, id); l == nil {
			return errOctaviaNotFound("Listener", id)
		}
		lb = s.oct.lbs[l.lb]
	}
	switch id := in.v.str("loadbalancer_id"); {
	case id != "":
		if lb = s.lbLocked(c, id); lb == nil || l != nil && l.lb != id {
			return errOctaviaNotFound("Load Balancer", id)
		}
	case l == nil:
		return errOctaviaValidation("Must provide at least one of: loadbalancer_id, listener_id")
	}
	if l != nil {
		if st, body := checkProtocols(l.protocol, in.protocol); st != 0 {
			return st, body
		}
	}
	if st, body := s.checkPoolLocked(in); st != 0 {
		return st, body
	}
	if l != nil && l.defaultPool != "" {
		return errWSME(http.StatusConflict, "This listener already has a default pool")
	}
	if st, body := checkLBMutableLocked(lb); st != 0 {
		return st, body
	}
	p := s.newPoolLocked(lb, in)
	if l != nil {
		l.defaultPool = p.ID
		s.mark(&l.octBase, ProvisioningPendingUpdate)
	}
	s.beginLocked(lb, ProvisioningPendingUpdate)
	return http.StatusCreated, map[string]any{"pool": s.wirePoolLocked(p, false)}
}

// updatePool: PUT /v2/lbaas/pools/{id}; session_persistence null removes
// it.
func (s *Server) updatePool(c *call) (int, any) {
	v, st, body := readOctaviaBody(c, "pool", poolPUT)
	if st != 0 {
		return st, body
	}
	u := v.obj("pool")
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.poolLocked(c, c.p["id"])
	if p == nil {
		return errOctaviaNotFound("Pool", c.p["id"])
	}
	if sp := u.obj("session_persistence"); sp != nil {
		if sp.str("type") == "" && p.persistence != nil {
			sp["type"] = p.persistence.typ
		}
		if st, body := checkPersistence(p.protocol, sp); st != 0 {
			return st, body
		}
	}
	lb := s.oct.lbs[p.lb]
	if st, body := checkLBMutableLocked(lb); st != 0 {
		return st, body
	}
	applyBase(&p.octBase, u)
	if u.has("lb_algorithm") && u.str("lb_algorithm") != "" {
		p.algorithm = u.str("lb_algorithm")
	}
	if u.has("session_persistence") {
		p.persistence = persistenceFrom(u.obj("session_persistence"))
	}
	if u.has("tls_enabled") {
		p.tlsEnabled = u.boolOr("tls_enabled", false)
	}
	for k, ptr := range map[string]**string{"tls_container_ref": &p.tlsRef, "ca_tls_container_ref": &p.caRef,
		"crl_container_ref": &p.crlRef, "tls_ciphers": &p.tlsCiphers} {
		if u.has(k) {
			*ptr = u.strPtr(k)
		}
	}
	for k, ptr := range map[string]*[]string{"tls_versions": &p.tlsVersions, "alpn_protocols": &p.alpn} {
		if u.has(k) {
			*ptr = slices.Clone(u.list(k))
		}
	}
	s.markPoolChangeLocked(p, &p.octBase, ProvisioningPendingUpdate)
	return http.StatusOK, map[string]any{"pool": s.wirePoolLocked(p, false)}
}

// markPoolChangeLocked starts an operation on a pool or one of its
// children: the object (b) in status, the pool and its listeners
// PENDING_UPDATE, as test_and_set_lb_and_listeners_prov_status leaves
// them.
func (s *Server) markPoolChangeLocked(p *poolState, b *octBase, status string) {
	for _, id := range s.poolListenersLocked(p) {
		s.mark(&s.oct.listeners[id].octBase, ProvisioningPendingUpdate)
	}
	if b != &p.octBase {
		s.mark(&p.octBase, ProvisioningPendingUpdate)
	}
	s.mark(b, status)
	s.beginLocked(s.oct.lbs[p.lb], ProvisioningPendingUpdate)
}

// deletePool: DELETE /v2/lbaas/pools/{id}, with its members and monitor;
// listeners whose default pool it was have none after.
func (s *Server) deletePool(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.poolLocked(c, c.p["id"])
	if p == nil {
		return errOctaviaNotFound("Pool", c.p["id"])
	}
	if st, body := checkLBMutableLocked(s.oct.lbs[p.lb]); st != 0 {
		return st, body
	}
	s.markPoolChangeLocked(p, &p.octBase, ProvisioningPendingDelete)
	return http.StatusNoContent, nil
}

// checkPoolMutableLocked is the members' and monitors' check: the pool
// must be ACTIVE, then its load balancer.
func (s *Server) checkPoolMutableLocked(p *poolState) (int, any) {
	if p.prov != ProvisioningActive {
		return errImmutable("Pool", p.ID)
	}
	return checkLBMutableLocked(s.oct.lbs[p.lb])
}
