package openstack

import (
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
)

// Octavia's protocols (octavia-lib) and what goes with what.
var (
	listenerProtocols = []string{"HTTP", "HTTPS", "TCP", "TERMINATED_HTTPS", "UDP", "SCTP", "PROMETHEUS"}
	// validPoolProtocols is VALID_LISTENER_POOL_PROTOCOL_MAP.
	validPoolProtocols = map[string][]string{
		"TCP": {"HTTP", "HTTPS", "PROXY", "PROXYV2", "TCP"}, "HTTP": {"HTTP", "PROXY", "PROXYV2"},
		"HTTPS": {"HTTPS", "PROXY", "PROXYV2", "TCP"}, "TERMINATED_HTTPS": {"HTTP", "PROXY", "PROXYV2"},
		"UDP": {"UDP"}, "SCTP": {"SCTP"}, "PROMETHEUS": {},
	}
	// l4Protocol is L4_PROTOCOL_MAP: listeners of one load balancer may
	// share a port only on different transports.
	l4Protocol = map[string]string{"TCP": "TCP", "HTTP": "TCP", "HTTPS": "TCP", "TERMINATED_HTTPS": "TCP",
		"PROXY": "TCP", "PROXYV2": "TCP", "PROMETHEUS": "TCP", "UDP": "UDP", "SCTP": "SCTP"}
	httpHeaders = []string{"X-Forwarded-For", "X-Forwarded-Port", "X-Forwarded-Proto"}
	sslHeaders  = []string{"X-SSL-Client-Verify", "X-SSL-Client-Has-Cert", "X-SSL-Client-DN", "X-SSL-Client-CN",
		"X-SSL-Issuer", "X-SSL-Client-SHA1", "X-SSL-Client-Not-Before", "X-SSL-Client-Not-After"}
)

// The defaults of [haproxy_amphora] and [api_settings] for listeners.
const (
	defaultTimeoutClientData    = 50000
	defaultTimeoutMemberConnect = 5000
	defaultTimeoutMemberData    = 50000
	defaultTimeoutTCPInspect    = 0
	defaultTLSCiphers           = "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:" +
		"ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:" +
		"ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:" +
		"DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:DHE-RSA-CHACHA20-POLY1305"
	maxTimeout = 24 * 24 * 60 * 60 * 1000
)

var (
	defaultTLSVersions = []string{"TLSv1.2", "TLSv1.3"}
	defaultALPN        = []string{"h2", "http/1.1", "http/1.0"}
)

type listenerState struct {
	octBase
	lb                                            string
	protocol                                      string
	port, connLimit                               int
	defaultPool                                   string
	allowedCIDRs                                  []string // nil: none (null)
	timeoutClientData, timeoutMemberConnect       int
	timeoutMemberData, timeoutTCPInspect          int
	insertHeaders                                 map[string]string
	tlsRef, clientCARef, clientCRLRef, tlsCiphers *string
	sniRefs, tlsVersions, alpn                    []string
	clientAuth                                    string
	hstsMaxAge                                    *int
	hstsSubdomains, hstsPreload                   bool
}

// listenerIn is a listener to create or the values of an update.
type listenerIn struct {
	v                 wsVals // what the request gave
	name, description string
	adminUp           bool
	tags              []string
	protocol          string
	port, connLimit   int
	defaultPoolID     string
	defaultPool       *poolIn // fully populated load balancers only
	allowedCIDRs      []string
}

var listenerCommon = wsType{
	"name": str(255), "description": str(255), "admin_state_up": wsBoolAttr, "connection_limit": intIn(-1, 1<<31-1),
	"default_tls_container_ref": str(255), "sni_container_refs": wsListAttr, "default_pool_id": wsUUIDAttr,
	"insert_headers": {kind: wsStringMap}, "timeout_client_data": intIn(0, maxTimeout),
	"timeout_member_connect": intIn(0, maxTimeout), "timeout_member_data": intIn(0, maxTimeout),
	"timeout_tcp_inspect": intIn(0, maxTimeout), "tags": wsTagsAttr, "client_ca_tls_container_ref": str(255),
	"client_authentication": enumOf("NONE", "OPTIONAL", "MANDATORY"), "client_crl_container_ref": str(255),
	"allowed_cidrs": {kind: wsCIDRList}, "tls_ciphers": str(2048), "tls_versions": wsListAttr,
	"alpn_protocols": wsListAttr, "hsts_max_age": intIn(0, 1<<31-1), "hsts_include_subdomains": wsBoolAttr,
	"hsts_preload": wsBoolAttr,
}

var (
	listenerSingle = listenerCommon.with(wsType{"protocol": must(enumOf(listenerProtocols...)),
		"protocol_port": must(intIn(1, 65535)), "default_pool": {kind: wsObject, sub: poolSingle},
		"l7policies": {kind: wsObjectList, sub: wsType{}}})
	listenerPOST = listenerSingle.with(wsType{"loadbalancer_id": must(wsUUIDAttr), "project_id": str(36),
		"tenant_id": str(36)})
	listenerPUT = listenerCommon
)

var listenerFilters = []string{"id", "name", "description", "provisioning_status", "operating_status", "admin_state_up",
	"project_id", "loadbalancer_id", "default_pool_id", "protocol", "protocol_port", "connection_limit",
	"timeout_client_data", "timeout_member_connect", "timeout_member_data", "timeout_tcp_inspect"}

func listenerInFrom(v wsVals) listenerIn {
	in := listenerIn{v: v, name: v.str("name"), description: v.str("description"), adminUp: v.boolOr("admin_state_up", true),
		tags: v.list("tags"), protocol: v.str("protocol"), port: v.intOr("protocol_port", 0),
		connLimit: v.intOr("connection_limit", -1), defaultPoolID: v.str("default_pool_id"),
		allowedCIDRs: v.list("allowed_cidrs")}
	if p := v.obj("default_pool"); p != nil {
		pin := poolInFrom(p)
		in.defaultPool = &pin
	}
	return in
}

// tlsRefs says whether the request names certificates.
func (in listenerIn) tlsRefs() bool {
	return in.v.str("default_tls_container_ref") != "" || in.v.str("client_ca_tls_container_ref") != "" ||
		len(in.v.list("sni_container_refs")) > 0
}

// checkListenerLocked is _validate_create_listener's checks, for a
// listener new to lb (others are listeners created with it). Certificate
// references are taken as given: Barbican is not modelled.
func (s *Server) checkListenerLocked(lb *lbState, in listenerIn, others []listenerIn) (int, any) {
	proto := in.protocol
	if h := in.v.strMap("insert_headers"); len(h) > 0 {
		if proto != "HTTP" && proto != "TERMINATED_HTTPS" {
			return errInvalidOption("insert-headers", "a "+proto+" protocol listener.")
		}
		for _, k := range slices.Sorted(maps.Keys(h)) {
			if !slices.Contains(httpHeaders, k) && !slices.Contains(sslHeaders, k) {
				return errInvalidOption(pyRepr(toAnyList(slices.Sorted(maps.Keys(h)))), "insert_headers")
			}
			if slices.Contains(sslHeaders, k) && proto != "TERMINATED_HTTPS" {
				return errInvalidOption(pyRepr([]any{k}), proto+" protocol listener.")
			}
		}
	}
	if (proto == "UDP" || proto == "SCTP") && (in.tlsRefs() || len(in.v.strMap("insert_headers")) > 0) {
		return errOctaviaValidation(proto + " protocol listener does not support TLS.")
	}
	if proto != "TERMINATED_HTTPS" && in.tlsRefs() {
		return errOctaviaValidation("Certificate container references are not allowed on " + proto + " protocol listeners.")
	}
	if proto == "TERMINATED_HTTPS" && in.v.str("default_tls_container_ref") == "" && len(in.v.list("sni_container_refs")) == 0 {
		return errOctaviaValidation("An SNI or default certificate container reference must be provided for " +
			"TERMINATED_HTTPS protocol listeners.")
	}
	if auth := in.v.strOr("client_authentication", "NONE"); auth != "NONE" && in.v.str("client_ca_tls_container_ref") == "" {
		return errOctaviaValidation("Client authentication setting " + auth + " requires a client CA container reference.")
	}
	taken := func(protocol string, port int) bool {
		return port == in.port && l4Protocol[protocol] == l4Protocol[proto]
	}
	for _, id := range lb.listeners {
		if l := s.oct.listeners[id]; taken(l.protocol, l.port) {
			return errWSME(http.StatusConflict, fmt.Sprintf("Another Listener on this Load Balancer is already using "+
				"protocol %s and protocol_port %d", l.protocol, in.port))
		}
	}
	for _, o := range others {
		if taken(o.protocol, o.port) {
			return errWSME(http.StatusConflict, fmt.Sprintf("Another Listener on this Load Balancer is already using "+
				"protocol %s and protocol_port %d", o.protocol, in.port))
		}
	}
	if st, body := checkCIDRsAgainstVIPs(lb, in.allowedCIDRs); st != 0 {
		return st, body
	}
	return checkHSTS(in.v, proto)
}

// checkCIDRsAgainstVIPs is _validate_cidr_compatible_with_vip: each
// allowed CIDR must be of the family of one of the VIPs.
func checkCIDRsAgainstVIPs(lb *lbState, cidrs []string) (int, any) {
	vips := []string{lb.vipAddress}
	for _, a := range lb.additional {
		vips = append(vips, a.IP)
	}
	for _, c := range cidrs {
		p := netip.MustParsePrefix(c)
		if !slices.ContainsFunc(vips, func(v string) bool { return netip.MustParseAddr(v).Is6() == p.Addr().Is6() }) {
			return errOctaviaValidation(fmt.Sprintf("CIDR %s IP version incompatible with all VIPs %s IP version.",
				c, pyRepr(toAnyList(vips))))
		}
	}
	return 0, nil
}

func checkHSTS(v wsVals, proto string) (int, any) {
	_, maxAge := v["hsts_max_age"].(int)
	if (v.boolOr("hsts_include_subdomains", false) || v.boolOr("hsts_preload", false)) && !maxAge {
		return errOctaviaValidation("HSTS configuration options hsts_include_subdomains and hsts_preload only make " +
			"sense if hsts_max_age is set as well.")
	}
	if maxAge && proto != "TERMINATED_HTTPS" {
		return errOctaviaValidation("The HSTS feature can only be used for listeners using the TERMINATED_HTTPS protocol.")
	}
	return 0, nil
}

func toAnyList(ss []string) []any {
	out := make([]any, 0, len(ss))
	for _, s := range ss {
		out = append(out, s)
	}
	return out
}

// newListenerLocked adds a listener to lb, PENDING_CREATE, with the
// defaults of db_prepare.create_listener.
func (s *Server) newListenerLocked(lb *lbState, in listenerIn) *listenerState {
	v := in.v
	l := &listenerState{octBase: s.newBaseLocked(in.name, in.description, in.adminUp, in.tags), lb: lb.ID,
		protocol: in.protocol, port: in.port, connLimit: in.connLimit, defaultPool: in.defaultPoolID,
		clientAuth: "NONE", timeoutClientData: defaultTimeoutClientData, timeoutMemberConnect: defaultTimeoutMemberConnect,
		timeoutMemberData: defaultTimeoutMemberData, timeoutTCPInspect: defaultTimeoutTCPInspect}
	s.applyListenerLocked(l, v)
	if l.protocol == "TERMINATED_HTTPS" {
		if l.tlsCiphers == nil {
			l.tlsCiphers = strPtr(defaultTLSCiphers)
		}
		if l.tlsVersions == nil {
			l.tlsVersions = slices.Clone(defaultTLSVersions)
		}
		if l.alpn == nil {
			l.alpn = slices.Clone(defaultALPN)
		}
	}
	s.oct.listeners[l.ID] = l
	lb.listeners = append(lb.listeners, l.ID)
	return l
}

// applyListenerLocked sets what a create or update gives; null sets the
// default back, as _set_default_on_none does.
func (s *Server) applyListenerLocked(l *listenerState, v wsVals) {
	orDefault := func(k string, cur, def int) int {
		if !v.has(k) {
			return cur
		}
		return v.intOr(k, def)
	}
	l.connLimit = orDefault("connection_limit", l.connLimit, -1)
	l.timeoutClientData = orDefault("timeout_client_data", l.timeoutClientData, defaultTimeoutClientData)
	l.timeoutMemberConnect = orDefault("timeout_member_connect", l.timeoutMemberConnect, defaultTimeoutMemberConnect)
	l.timeoutMemberData = orDefault("timeout_member_data", l.timeoutMemberData, defaultTimeoutMemberData)
	l.timeoutTCPInspect = orDefault("timeout_tcp_inspect", l.timeoutTCPInspect, defaultTimeoutTCPInspect)
	if v.has("allowed_cidrs") {
		l.allowedCIDRs = nil
		if cidrs := v.list("allowed_cidrs"); len(cidrs) > 0 {
			l.allowedCIDRs = slices.Clone(cidrs)
		}
	}
	if v.has("insert_headers") {
		l.insertHeaders = maps.Clone(v.strMap("insert_headers"))
	}
	if v.has("default_pool_id") {
		l.defaultPool = v.str("default_pool_id")
	}
	for k, p := range map[string]**string{"default_tls_container_ref": &l.tlsRef, "client_ca_tls_container_ref": &l.clientCARef,
		"client_crl_container_ref": &l.clientCRLRef, "tls_ciphers": &l.tlsCiphers} {
		if v.has(k) {
			*p = v.strPtr(k)
		}
	}
	for k, p := range map[string]*[]string{"sni_container_refs": &l.sniRefs, "tls_versions": &l.tlsVersions,
		"alpn_protocols": &l.alpn} {
		if v.has(k) {
			*p = slices.Clone(v.list(k))
		}
	}
	if v.has("client_authentication") {
		l.clientAuth = v.strOr("client_authentication", "NONE")
	}
	if v.has("hsts_max_age") {
		l.hstsMaxAge = v.intPtr("hsts_max_age")
	}
	l.hstsSubdomains = v.boolOr("hsts_include_subdomains", l.hstsSubdomains)
	l.hstsPreload = v.boolOr("hsts_preload", l.hstsPreload)
}

// listenerLocked finds a listener of the call's region.
func (s *Server) listenerLocked(c *call, id string) *listenerState {
	l := s.oct.listeners[id]
	if l == nil || s.oct.lbs[l.lb].region != c.region {
		return nil
	}
	return l
}

func (s *Server) listListeners(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var items []octItem
	for _, l := range s.oct.listeners {
		lb := s.oct.lbs[l.lb]
		if lb.region != c.region {
			continue
		}
		f := baseFields(&l.octBase, lb.project)
		f["operating_status"], f["loadbalancer_id"], f["default_pool_id"] = s.listenerOperatingLocked(l), l.lb, l.defaultPool
		f["protocol"], f["protocol_port"], f["connection_limit"] = l.protocol, itoa(l.port), itoa(l.connLimit)
		f["timeout_client_data"], f["timeout_member_connect"] = itoa(l.timeoutClientData), itoa(l.timeoutMemberConnect)
		f["timeout_member_data"], f["timeout_tcp_inspect"] = itoa(l.timeoutMemberData), itoa(l.timeoutTCPInspect)
		items = append(items, octItem{id: l.ID, created: l.created, fields: f, tags: l.Tags,
			render: func() any { return s.wireListenerLocked(l, false) }})
	}
	return octaviaPage(c, "listeners", listenerFilters, items)
}

func (s *Server) getListener(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.listenerLocked(c, c.p["id"])
	if l == nil {
		return errOctaviaNotFound("Listener", c.p["id"])
	}
	return http.StatusOK, map[string]any{"listener": s.wireListenerLocked(l, false)}
}

// checkDefaultPoolLocked is _validate_pool: the pool must be the load
// balancer's, and of a protocol the listener's takes.
func (s *Server) checkDefaultPoolLocked(lb *lbState, poolID, listenerProtocol string) (int, any) {
	p := s.oct.pools[poolID]
	if p == nil || p.lb != lb.ID {
		return errOctaviaNotFound("Pool", poolID)
	}
	return checkProtocols(listenerProtocol, p.protocol)
}

func checkProtocols(listenerProtocol, poolProtocol string) (int, any) {
	if !slices.Contains(validPoolProtocols[listenerProtocol], poolProtocol) {
		return errOctaviaValidation(fmt.Sprintf("The pool protocol '%s' is invalid while the listener protocol is '%s'.",
			poolProtocol, listenerProtocol))
	}
	return 0, nil
}

// createListener: POST /v2/lbaas/listeners.
func (s *Server) createListener(c *call) (int, any) {
	v, st, body := readOctaviaBody(c, "listener", listenerPOST)
	if st != 0 {
		return st, body
	}
	in := listenerInFrom(v.obj("listener"))
	s.mu.Lock()
	defer s.mu.Unlock()
	lb := s.lbLocked(c, in.v.str("loadbalancer_id"))
	if lb == nil {
		return errOctaviaNotFound("Load Balancer", in.v.str("loadbalancer_id"))
	}
	if in.defaultPool != nil {
		return errOctaviaValidation("openstack fake: default_pool is taken only in a fully populated load balancer")
	}
	if in.defaultPoolID != "" {
		if st, body := s.checkDefaultPoolLocked(lb, in.defaultPoolID, in.protocol); st != 0 {
			return st, body
		}
	}
	if st, body := checkLBMutableLocked(lb); st != 0 {
		return st, body
	}
	if st, body := s.checkListenerLocked(lb, in, nil); st != 0 {
		return st, body
	}
	l := s.newListenerLocked(lb, in)
	s.beginLocked(lb, ProvisioningPendingUpdate)
	return http.StatusCreated, map[string]any{"listener": s.wireListenerLocked(l, false)}
}

// updateListener: PUT /v2/lbaas/listeners/{id}: the new values at once,
// the listener and its load balancer PENDING_UPDATE.
func (s *Server) updateListener(c *call) (int, any) {
	v, st, body := readOctaviaBody(c, "listener", listenerPUT)
	if st != 0 {
		return st, body
	}
	u := v.obj("listener")
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.listenerLocked(c, c.p["id"])
	if l == nil {
		return errOctaviaNotFound("Listener", c.p["id"])
	}
	lb := s.oct.lbs[l.lb]
	if h := u.strMap("insert_headers"); len(h) > 0 && l.protocol != "HTTP" && l.protocol != "TERMINATED_HTTPS" {
		return errInvalidOption("insert-headers", "a "+l.protocol+" protocol listener.")
	}
	if u.has("allowed_cidrs") {
		if st, body := checkCIDRsAgainstVIPs(lb, u.list("allowed_cidrs")); st != 0 {
			return st, body
		}
	}
	if _, ok := u["hsts_max_age"].(int); ok && l.protocol != "TERMINATED_HTTPS" {
		return errOctaviaValidation("The HSTS feature can only be used for listeners using the TERMINATED_HTTPS protocol.")
	}
	if id := u.str("default_pool_id"); id != "" {
		if st, body := s.checkDefaultPoolLocked(lb, id, l.protocol); st != 0 {
			return st, body
		}
	}
	if st, body := checkLBMutableLocked(lb); st != 0 {
		return st, body
	}
	applyBase(&l.octBase, u)
	s.applyListenerLocked(l, u)
	s.mark(&l.octBase, ProvisioningPendingUpdate)
	s.beginLocked(lb, ProvisioningPendingUpdate)
	return http.StatusOK, map[string]any{"listener": s.wireListenerLocked(l, false)}
}

// deleteListener: DELETE /v2/lbaas/listeners/{id}; its default pool stays.
func (s *Server) deleteListener(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.listenerLocked(c, c.p["id"])
	if l == nil {
		return errOctaviaNotFound("Listener", c.p["id"])
	}
	lb := s.oct.lbs[l.lb]
	if st, body := checkLBMutableLocked(lb); st != 0 {
		return st, body
	}
	s.mark(&l.octBase, ProvisioningPendingDelete)
	s.beginLocked(lb, ProvisioningPendingUpdate)
	return http.StatusNoContent, nil
}
