package gce

import (
	"cmp"
	"fmt"
	"net/http"
)

// Legacy HTTP health checks (global/httpHealthChecks) and regional health
// checks (regions/{region}/healthChecks): insert, get, list, delete,
// update (PUT, replacing) and patch (JSON merge patch). Unset numbers get
// the API's defaults: port 80, request path "/", 5 s interval and timeout,
// thresholds of 2.

// HTTPHealthChecks returns every legacy HTTP health check, sorted by name.
func (s *Server) HTTPHealthChecks() []HTTPHealthCheck {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	return sortedRender(s.httpHealthChecks, s.baseLocked(), HTTPHealthCheck.render)
}

// HealthChecks returns every regional health check, sorted by region and
// name.
func (s *Server) HealthChecks() []HealthCheck {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	return sortedRender(s.healthChecks, s.baseLocked(), HealthCheck.render)
}

func checkTiming(interval, timeout, healthy, unhealthy int) (int, any) {
	switch {
	case interval < 1 || interval > 300:
		return errInvalidField("resource.checkIntervalSec", fmt.Sprint(interval), "Must be between 1 and 300.")
	case timeout < 1 || timeout > 300:
		return errInvalidField("resource.timeoutSec", fmt.Sprint(timeout), "Must be between 1 and 300.")
	case timeout > interval:
		return errInvalidField("resource.timeoutSec", fmt.Sprint(timeout), "TimeoutSec should be less than checkIntervalSec.")
	case healthy < 1 || healthy > 10:
		return errInvalidField("resource.healthyThreshold", fmt.Sprint(healthy), "Must be between 1 and 10.")
	case unhealthy < 1 || unhealthy > 10:
		return errInvalidField("resource.unhealthyThreshold", fmt.Sprint(unhealthy), "Must be between 1 and 10.")
	}
	return 0, nil
}

func checkPort(field string, port int) (int, any) {
	if port < 1 || port > 65535 {
		return errInvalidField(field, fmt.Sprint(port), "Must be between 1 and 65535.")
	}
	return 0, nil
}

// normLegacy fills an HTTP health check's defaults and validates it.
func normLegacy(h *HTTPHealthCheck) (int, any) {
	h.Port = cmp.Or(h.Port, 80)
	h.RequestPath = cmp.Or(h.RequestPath, "/")
	h.CheckIntervalSec = cmp.Or(h.CheckIntervalSec, 5)
	h.TimeoutSec = cmp.Or(h.TimeoutSec, 5)
	h.HealthyThreshold = cmp.Or(h.HealthyThreshold, 2)
	h.UnhealthyThreshold = cmp.Or(h.UnhealthyThreshold, 2)
	if status, body := checkPort("resource.port", h.Port); status != 0 {
		return status, body
	}
	return checkTiming(h.CheckIntervalSec, h.TimeoutSec, h.HealthyThreshold, h.UnhealthyThreshold)
}

// normHC fills a health check's defaults and validates its type and
// protocol block.
func normHC(h *HealthCheck) (int, any) {
	h.CheckIntervalSec = cmp.Or(h.CheckIntervalSec, 5)
	h.TimeoutSec = cmp.Or(h.TimeoutSec, 5)
	h.HealthyThreshold = cmp.Or(h.HealthyThreshold, 2)
	h.UnhealthyThreshold = cmp.Or(h.UnhealthyThreshold, 2)
	if status, body := checkTiming(h.CheckIntervalSec, h.TimeoutSec, h.HealthyThreshold, h.UnhealthyThreshold); status != 0 {
		return status, body
	}
	blocks := map[string]bool{
		"TCP":   h.TCPHealthCheck != nil,
		"HTTP":  h.HTTPHealthCheck != nil,
		"HTTPS": h.HTTPSHealthCheck != nil,
		"HTTP2": h.HTTP2HealthCheck != nil,
	}
	if h.Type == "" {
		for t, set := range blocks {
			if set {
				h.Type = t
			}
		}
	}
	if _, ok := blocks[h.Type]; !ok {
		if h.Type == "" {
			return errRequired("resource.type")
		}
		return errInvalidField("resource.type", h.Type, "The fake supports TCP, HTTP, HTTPS and HTTP2 health checks.")
	}
	for t, set := range blocks {
		if set && t != h.Type {
			return errInvalidField("resource.type", h.Type, fmt.Sprintf("The health check's %s settings do not match its type.", t))
		}
	}
	switch h.Type {
	case "TCP":
		if h.TCPHealthCheck == nil {
			h.TCPHealthCheck = &HealthCheckTCP{}
		}
		t := h.TCPHealthCheck
		t.PortSpecification = cmp.Or(t.PortSpecification, "USE_FIXED_PORT")
		t.ProxyHeader = cmp.Or(t.ProxyHeader, "NONE")
		if t.PortSpecification == "USE_FIXED_PORT" {
			t.Port = cmp.Or(t.Port, 80)
			return checkPort("resource.tcpHealthCheck.port", t.Port)
		}
	default:
		p := map[string]**HealthCheckHTTP{"HTTP": &h.HTTPHealthCheck, "HTTPS": &h.HTTPSHealthCheck, "HTTP2": &h.HTTP2HealthCheck}[h.Type]
		if *p == nil {
			*p = &HealthCheckHTTP{}
		}
		t := *p
		t.PortSpecification = cmp.Or(t.PortSpecification, "USE_FIXED_PORT")
		t.ProxyHeader = cmp.Or(t.ProxyHeader, "NONE")
		t.RequestPath = cmp.Or(t.RequestPath, "/")
		if t.PortSpecification == "USE_FIXED_PORT" {
			def := 80
			if h.Type != "HTTP" {
				def = 443
			}
			t.Port = cmp.Or(t.Port, def)
			return checkPort("resource.port", t.Port)
		}
	}
	return 0, nil
}

func (s *Server) registerHealthChecks() {
	s.registerLegacyHealthChecks()
	s.registerRegionalHealthChecks()
}

func (s *Server) registerLegacyHealthChecks() {
	const coll = "projects/{project}/global/httpHealthChecks"
	pathOf := func(c *call) string { return s.globalPath("httpHealthChecks", c.p["httpHealthCheck"]) }

	s.handle("GET", coll, func(c *call) (int, any) {
		items := listOf(s.httpHealthChecks, s.globalColl("httpHealthChecks")+"/", func(h *HTTPHealthCheck) listItem {
			return listItem{name: h.Name, created: parseTS(h.CreationTimestamp), doc: h.render(c.base)}
		})
		return s.listResponse(c, "compute#httpHealthCheckList", s.globalColl("httpHealthChecks"), items)
	})
	s.handle("GET", coll+"/{httpHealthCheck}", func(c *call) (int, any) {
		h := s.httpHealthChecks[pathOf(c)]
		if h == nil {
			return errNotFound(pathOf(c))
		}
		return http.StatusOK, h.render(c.base)
	})
	s.handleOp("POST", coll, func(c *call) (int, any) {
		var in HTTPHealthCheck
		if _, status, body := readBody(c, "HttpHealthCheck", &in); status != 0 {
			return status, body
		}
		if status, body := checkName(in.Name); status != 0 {
			return status, body
		}
		if status, body := normLegacy(&in); status != 0 {
			return status, body
		}
		path := s.globalPath("httpHealthChecks", in.Name)
		h := in
		h.Kind, h.ID, h.CreationTimestamp, h.SelfLink = "compute#httpHealthCheck", s.newIDLocked(), timestamp(s.now()), path
		return s.insertLocked(c, "global", "httpHealthChecks", path, h.ID, func() *opError {
			s.httpHealthChecks[path] = &h
			return nil
		})
	})
	s.handleOp("DELETE", coll+"/{httpHealthCheck}", func(c *call) (int, any) {
		path := pathOf(c)
		var id uint64
		if h := s.httpHealthChecks[path]; h != nil {
			id = h.ID
		}
		return s.deleteLocked(c, "global", "httpHealthChecks", "http_health_check", path, id, func() { delete(s.httpHealthChecks, path) })
	})
	change := func(opType string) handlerFunc {
		return func(c *call) (int, any) {
			path := pathOf(c)
			cur := s.httpHealthChecks[path]
			var in HTTPHealthCheck
			d, status, body := readBody(c, "HttpHealthCheck", &in)
			if status != 0 {
				return status, body
			}
			if cur == nil {
				return errNotFound(path)
			}
			next := in
			if opType == "patch" {
				next = *cur
				if err := mergePatch(&next, d); err != nil {
					return errParse(err.Error())
				}
			}
			if next.Name != "" && next.Name != cur.Name {
				return errInvalidField("resource.name", next.Name, "The name cannot be changed.")
			}
			if status, body := normLegacy(&next); status != 0 {
				return status, body
			}
			next.Kind, next.ID, next.Name, next.CreationTimestamp, next.SelfLink = cur.Kind, cur.ID, cur.Name, cur.CreationTimestamp, cur.SelfLink
			return s.changeLocked(c, "global", "httpHealthChecks", opType, path, cur.ID, func() *opError {
				*s.httpHealthChecks[path] = next
				return nil
			})
		}
	}
	s.handleOp("PUT", coll+"/{httpHealthCheck}", change("update"))
	s.handleOp("PATCH", coll+"/{httpHealthCheck}", change("patch"))
}

func (s *Server) registerRegionalHealthChecks() {
	const coll = "projects/{project}/regions/{region}/healthChecks"
	pathOf := func(c *call) string { return s.regionalPath(c.p["region"], "healthChecks", c.p["healthCheck"]) }

	s.handle("GET", coll, func(c *call) (int, any) {
		items := listOf(s.healthChecks, s.regionalColl(c.p["region"], "healthChecks")+"/", func(h *HealthCheck) listItem {
			return listItem{name: h.Name, created: parseTS(h.CreationTimestamp), doc: h.render(c.base)}
		})
		return s.listResponse(c, "compute#healthCheckList", s.regionalColl(c.p["region"], "healthChecks"), items)
	})
	s.handle("GET", coll+"/{healthCheck}", func(c *call) (int, any) {
		h := s.healthChecks[pathOf(c)]
		if h == nil {
			return errNotFound(pathOf(c))
		}
		return http.StatusOK, h.render(c.base)
	})
	s.handleOp("POST", coll, func(c *call) (int, any) {
		var in HealthCheck
		if _, status, body := readBody(c, "HealthCheck", &in); status != 0 {
			return status, body
		}
		if status, body := checkName(in.Name); status != 0 {
			return status, body
		}
		if status, body := normHC(&in); status != 0 {
			return status, body
		}
		region := c.p["region"]
		path := s.regionalPath(region, "healthChecks", in.Name)
		h := in
		h.Kind, h.ID, h.CreationTimestamp, h.Region, h.SelfLink = "compute#healthCheck", s.newIDLocked(), timestamp(s.now()), s.regionPath(region), path
		return s.insertLocked(c, "regions/"+region, "healthChecks", path, h.ID, func() *opError {
			s.healthChecks[path] = &h
			return nil
		})
	})
	s.handleOp("DELETE", coll+"/{healthCheck}", func(c *call) (int, any) {
		path := pathOf(c)
		var id uint64
		if h := s.healthChecks[path]; h != nil {
			id = h.ID
		}
		return s.deleteLocked(c, "regions/"+c.p["region"], "healthChecks", "health_check", path, id, func() { delete(s.healthChecks, path) })
	})
	change := func(opType string) handlerFunc {
		return func(c *call) (int, any) {
			path := pathOf(c)
			cur := s.healthChecks[path]
			var in HealthCheck
			d, status, body := readBody(c, "HealthCheck", &in)
			if status != 0 {
				return status, body
			}
			if cur == nil {
				return errNotFound(path)
			}
			next := in
			if opType == "patch" {
				next = cur.render("")
				next.Region, next.SelfLink = "", ""
				if d.has("type") {
					// A new type brings its own settings block.
					if !d.has("tcpHealthCheck") {
						next.TCPHealthCheck = nil
					}
					if !d.has("httpHealthCheck") {
						next.HTTPHealthCheck = nil
					}
					if !d.has("httpsHealthCheck") {
						next.HTTPSHealthCheck = nil
					}
					if !d.has("http2HealthCheck") {
						next.HTTP2HealthCheck = nil
					}
				}
				if err := mergePatch(&next, d); err != nil {
					return errParse(err.Error())
				}
			}
			if next.Name != "" && next.Name != cur.Name {
				return errInvalidField("resource.name", next.Name, "The name cannot be changed.")
			}
			if status, body := normHC(&next); status != 0 {
				return status, body
			}
			next.Kind, next.ID, next.Name, next.CreationTimestamp, next.Region, next.SelfLink = cur.Kind, cur.ID, cur.Name, cur.CreationTimestamp, cur.Region, cur.SelfLink
			return s.changeLocked(c, "regions/"+c.p["region"], "healthChecks", opType, path, cur.ID, func() *opError {
				*s.healthChecks[path] = next
				return nil
			})
		}
	}
	s.handleOp("PUT", coll+"/{healthCheck}", change("update"))
	s.handleOp("PATCH", coll+"/{healthCheck}", change("patch"))
}
