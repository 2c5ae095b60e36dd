package openstack

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
)

var (
	monitorTypes   = []string{"HTTP", "HTTPS", "PING", "TCP", "TLS-HELLO", "UDP-CONNECT", "SCTP"}
	monitorMethods = []string{"CONNECT", "DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT", "TRACE"}
	expectedCodes  = regexp.MustCompile(`^(\d{3}(\s*,\s*\d{3})*)$|^(\d{3}-\d{3})$`)
	urlPathRE      = regexp.MustCompile(`^/[^\s]*$`)
)

type monitorState struct {
	octBase
	pool                                       string
	typ                                        string
	delay, timeout, maxRetries, maxRetriesDown int
	httpMethod, urlPath, expectedCodes         *string
	httpVersion                                *float64
	domainName                                 *string
}

// monitorIn is a health monitor to create.
type monitorIn struct {
	v       wsVals
	name    string
	adminUp bool
	tags    []string
	typ     string
}

var (
	monitorCommon = wsType{"name": str(255), "delay": intIn(0, 1<<31-1), "timeout": intIn(0, 1<<31-1),
		"max_retries_down": intIn(1, 10), "max_retries": intIn(1, 10), "http_method": enumOf(monitorMethods...),
		"url_path": {kind: wsString, pattern: urlPathRE}, "expected_codes": {kind: wsString, pattern: expectedCodes},
		"admin_state_up": wsBoolAttr, "tags": wsTagsAttr, "http_version": {kind: wsFloat, floats: []float64{1.0, 1.1}},
		"domain_name": {kind: wsString, maxLen: 255}}
	monitorSingle = monitorCommon.with(wsType{"type": must(enumOf(monitorTypes...)), "delay": must(intIn(0, 1<<31-1)),
		"timeout": must(intIn(0, 1<<31-1)), "max_retries": must(intIn(1, 10))})
	monitorPOST = monitorSingle.with(wsType{"pool_id": must(wsUUIDAttr), "project_id": str(36), "tenant_id": str(36)})
	monitorPUT  = monitorCommon
)

var monitorFilters = []string{"id", "name", "provisioning_status", "operating_status", "admin_state_up",
	"project_id", "pool_id", "type", "delay", "timeout", "max_retries", "max_retries_down", "http_method", "url_path",
	"expected_codes", "http_version", "domain_name"}

func monitorInFrom(v wsVals) monitorIn {
	return monitorIn{v: v, name: v.str("name"), adminUp: v.boolOr("admin_state_up", true), tags: v.list("tags"),
		typ: v.str("type")}
}

func isHTTPMonitor(typ string) bool { return typ == "HTTP" || typ == "HTTPS" }

// checkMonitorIn is the monitor's checks against its type and its pool's
// protocol.
func checkMonitorIn(in monitorIn, poolProtocol string) (int, any) {
	if poolProtocol == "UDP" || poolProtocol == "SCTP" {
		if !slices.Contains([]string{"UDP-CONNECT", "SCTP", "TCP", "HTTP"}, in.typ) {
			return errOctaviaValidation(fmt.Sprintf("The associated pool protocol is %s, so only a "+
				"UDP-CONNECT/SCTP/TCP/HTTP health monitor is supported.", poolProtocol))
		}
		if in.typ == "UDP-CONNECT" && in.v.intOr("delay", 3) < 3 {
			return errOctaviaValidation(fmt.Sprintf("The request delay value %d should be larger than 3 for "+
				"UDP-CONNECT health monitor type.", in.v.intOr("delay", 0)))
		}
	} else if in.typ == "UDP-CONNECT" || in.typ == "SCTP" {
		return errOctaviaValidation("The " + in.typ + " type is only supported for pools of type UDP/SCTP.")
	}
	if !isHTTPMonitor(in.typ) {
		for _, k := range []string{"http_method", "url_path", "expected_codes"} {
			if in.v.str(k) != "" {
				return errInvalidOption(k, "health monitors of type "+in.typ)
			}
		}
	}
	return checkDomainName(in.v, in.v.floatPtr("http_version"))
}

func checkDomainName(v wsVals, version *float64) (int, any) {
	if v.str("domain_name") == "" {
		return 0, nil
	}
	if version == nil {
		return errOctaviaValidation("'http_version' must be specified when 'domain_name' is provided.")
	}
	if *version < 1.1 {
		return errInvalidOption("http_version "+strconv.FormatFloat(*version, 'f', -1, 64),
			"health monitors HTTP 1.1 domain name health check")
	}
	return 0, nil
}

// newMonitorLocked adds a monitor to a pool, PENDING_CREATE, with the
// HTTP defaults (GET /, expecting 200).
func (s *Server) newMonitorLocked(p *poolState, in monitorIn) *monitorState {
	hm := &monitorState{octBase: s.newBaseLocked(in.name, "", in.adminUp, in.tags), pool: p.ID, typ: in.typ,
		maxRetriesDown: 3}
	s.applyMonitorLocked(hm, in.v)
	s.oct.monitors[hm.ID] = hm
	p.monitor = hm.ID
	return hm
}

// applyMonitorLocked sets what a create or update gives; null puts the
// defaults back (_set_default_on_none).
func (s *Server) applyMonitorLocked(hm *monitorState, v wsVals) {
	for k, p := range map[string]*int{"delay": &hm.delay, "timeout": &hm.timeout, "max_retries": &hm.maxRetries} {
		if v.has(k) {
			*p = v.intOr(k, *p)
		}
	}
	if v.has("max_retries_down") {
		hm.maxRetriesDown = v.intOr("max_retries_down", 3)
	}
	for k, p := range map[string]**string{"http_method": &hm.httpMethod, "url_path": &hm.urlPath,
		"expected_codes": &hm.expectedCodes, "domain_name": &hm.domainName} {
		if v.has(k) {
			*p = v.strPtr(k)
		}
	}
	if v.has("http_version") {
		hm.httpVersion = v.floatPtr("http_version")
	}
	if isHTTPMonitor(hm.typ) {
		for p, def := range map[**string]string{&hm.httpMethod: "GET", &hm.urlPath: "/", &hm.expectedCodes: "200"} {
			if *p == nil || **p == "" {
				*p = strPtr(def)
			}
		}
	}
}

// monitorLocked finds a monitor of the call's region.
func (s *Server) monitorLocked(c *call, id string) *monitorState {
	hm := s.oct.monitors[id]
	if hm == nil || s.oct.lbs[s.oct.pools[hm.pool].lb].region != c.region {
		return nil
	}
	return hm
}

func (s *Server) listMonitors(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var items []octItem
	for _, hm := range s.oct.monitors {
		lb := s.oct.lbs[s.oct.pools[hm.pool].lb]
		if lb.region != c.region {
			continue
		}
		f := baseFields(&hm.octBase, lb.project)
		f["operating_status"], f["pool_id"], f["type"] = s.monitorOperatingLocked(hm), hm.pool, hm.typ
		f["delay"], f["timeout"], f["max_retries"] = itoa(hm.delay), itoa(hm.timeout), itoa(hm.maxRetries)
		f["max_retries_down"] = itoa(hm.maxRetriesDown)
		for k, p := range map[string]*string{"http_method": hm.httpMethod, "url_path": hm.urlPath,
			"expected_codes": hm.expectedCodes, "domain_name": hm.domainName} {
			if p != nil {
				f[k] = *p
			}
		}
		if hm.httpVersion != nil {
			f["http_version"] = strconv.FormatFloat(*hm.httpVersion, 'f', 1, 64)
		}
		items = append(items, octItem{id: hm.ID, created: hm.created, fields: f, tags: hm.Tags,
			render: func() any { return s.wireMonitorLocked(hm, false) }})
	}
	return octaviaPage(c, "healthmonitors", monitorFilters, items)
}

func (s *Server) getMonitor(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	hm := s.monitorLocked(c, c.p["id"])
	if hm == nil {
		return errOctaviaNotFound("Health Monitor", c.p["id"])
	}
	return http.StatusOK, map[string]any{"healthmonitor": s.wireMonitorLocked(hm, false)}
}

// createMonitor: POST /v2/lbaas/healthmonitors; a pool has one at most.
func (s *Server) createMonitor(c *call) (int, any) {
	v, st, body := readOctaviaBody(c, "healthmonitor", monitorPOST)
	if st != 0 {
		return st, body
	}
	in := monitorInFrom(v.obj("healthmonitor"))
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.poolLocked(c, in.v.str("pool_id"))
	if p == nil {
		return errOctaviaNotFound("Pool", in.v.str("pool_id"))
	}
	if st, body := checkMonitorIn(in, p.protocol); st != 0 {
		return st, body
	}
	if st, body := s.checkPoolMutableLocked(p); st != 0 {
		return st, body
	}
	if p.monitor != "" {
		return errWSME(http.StatusConflict, "This pool already has a health monitor")
	}
	hm := s.newMonitorLocked(p, in)
	s.markPoolChangeLocked(p, &hm.octBase, ProvisioningPendingCreate)
	return http.StatusCreated, map[string]any{"healthmonitor": s.wireMonitorLocked(hm, false)}
}

// updateMonitor: PUT /v2/lbaas/healthmonitors/{id}.
func (s *Server) updateMonitor(c *call) (int, any) {
	v, st, body := readOctaviaBody(c, "healthmonitor", monitorPUT)
	if st != 0 {
		return st, body
	}
	u := v.obj("healthmonitor")
	s.mu.Lock()
	defer s.mu.Unlock()
	hm := s.monitorLocked(c, c.p["id"])
	if hm == nil {
		return errOctaviaNotFound("Health Monitor", c.p["id"])
	}
	if !isHTTPMonitor(hm.typ) {
		for _, k := range []string{"http_method", "url_path", "expected_codes"} {
			if u.str(k) != "" {
				return errInvalidOption(k, "health monitors of type "+hm.typ)
			}
		}
	}
	for _, k := range []string{"delay", "timeout", "max_retries"} {
		if u.has(k) && u[k] == nil {
			return errInvalidOption("None", k)
		}
	}
	version := hm.httpVersion
	if u.has("http_version") {
		version = u.floatPtr("http_version")
	}
	if st, body := checkDomainName(u, version); st != 0 {
		return st, body
	}
	p := s.oct.pools[hm.pool]
	if st, body := s.checkPoolMutableLocked(p); st != 0 {
		return st, body
	}
	applyBase(&hm.octBase, u)
	s.applyMonitorLocked(hm, u)
	s.markPoolChangeLocked(p, &hm.octBase, ProvisioningPendingUpdate)
	return http.StatusOK, map[string]any{"healthmonitor": s.wireMonitorLocked(hm, false)}
}

// deleteMonitor: DELETE /v2/lbaas/healthmonitors/{id}.
func (s *Server) deleteMonitor(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	hm := s.monitorLocked(c, c.p["id"])
	if hm == nil {
		return errOctaviaNotFound("Health Monitor", c.p["id"])
	}
	p := s.oct.pools[hm.pool]
	if st, body := s.checkPoolMutableLocked(p); st != 0 {
		return st, body
	}
	s.markPoolChangeLocked(p, &hm.octBase, ProvisioningPendingDelete)
	return http.StatusNoContent, nil
}
