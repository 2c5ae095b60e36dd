package gce

import (
	"cmp"
	"fmt"
	"net/http"
)

// Legacy HTTP health checks (global/httpHealthChecks), and global
// (global/healthChecks) and regional (regions/{region}/healthChecks)
// health checks: insert, get, list, delete, update (PUT, replacing) and
// patch (JSON merge patch); aggregatedList lists the last two. Unset
// numbers get the API's defaults: port 80, request path "/", 5 s interval
// and timeout, thresholds of 2.

// HTTPHealthChecks returns every legacy HTTP health check, sorted by name.
func (s *Server) HTTPHealthChecks() []HTTPHealthCheck {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	return sortedRender(s.httpHealthChecks, s.baseLocked(), HTTPHealthCheck.render)
}

// HealthChecks returns every health check, global and regional: global
// ones first (their Region is empty and their SelfLink under
// /global/healthChecks/), by name, then regional ones by region and name.
// Returning both keeps leak checks that list HealthChecks complete.
func (s *Server) HealthChecks() []HealthCheck {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	return sortedRender(s.healthChecks, s.baseLocked(), HealthCheck.render)
}

// GlobalHealthChecks returns the global health checks only, sorted by
// name.
func (s *Server) GlobalHealthChecks() []HealthCheck {
	var out []HealthCheck
	for _, h := range s.HealthChecks() {
		if h.Region == "" {
			out = append(out, h)
		}
	}
	return out
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
	s.registerHealthCheckColl(false)
	s.registerHealthCheckColl(true)
	s.handle("GET", "projects/{project}/aggregated/healthChecks", func(c *call) (int, any) {
		var items []listItem
		for _, h := range s.healthChecks {
			scope := "global"
			if h.Region != "" {
				scope = "regions/" + lastSeg(h.Region)
			}
			items = append(items, listItem{scope: scope, name: h.Name, created: parseTS(h.CreationTimestamp), doc: h.render(c.base)})
		}
		scopes := append([]string{"global"}, s.regionScopesLocked()...)
		return s.aggregatedResponse(c, "compute#healthChecksAggregatedList", "healthChecks", "healthChecks", scopes, items)
	})
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

// registerHealthCheckColl serves one collection of compute#healthCheck:
// the global one or, with regional, the regional ones. Both hold the
// same document, stored in s.healthChecks under their paths; a global
// one has no region.
func (s *Server) registerHealthCheckColl(regional bool) {
	coll := "projects/{project}/global/healthChecks"
	if regional {
		coll = "projects/{project}/regions/{region}/healthChecks"
	}
	// where gives a call's collection path, operation scope and region
	// ("" for global).
	where := func(c *call) (collPath, scope, region string) {
		if !regional {
			return s.globalColl("healthChecks"), "global", ""
		}
		region = c.p["region"]
		return s.regionalColl(region, "healthChecks"), "regions/" + region, region
	}
	pathOf := func(c *call) string {
		collPath, _, _ := where(c)
		return collPath + "/" + c.p["healthCheck"]
	}

	s.handle("GET", coll, func(c *call) (int, any) {
		collPath, _, _ := where(c)
		items := listOf(s.healthChecks, collPath+"/", func(h *HealthCheck) listItem {
			return listItem{name: h.Name, created: parseTS(h.CreationTimestamp), doc: h.render(c.base)}
		})
		return s.listResponse(c, "compute#healthCheckList", collPath, items)
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
		collPath, scope, region := where(c)
		path := collPath + "/" + in.Name
		h := in
		h.Kind, h.ID, h.CreationTimestamp, h.Region, h.SelfLink = "compute#healthCheck", s.newIDLocked(), timestamp(s.now()), "", path
		if region != "" {
			h.Region = s.regionPath(region)
		}
		return s.insertLocked(c, scope, "healthChecks", path, h.ID, func() *opError {
			s.healthChecks[path] = &h
			return nil
		})
	})
	s.handleOp("DELETE", coll+"/{healthCheck}", func(c *call) (int, any) {
		path := pathOf(c)
		_, scope, _ := where(c)
		var id uint64
		if h := s.healthChecks[path]; h != nil {
			id = h.ID
		}
		return s.deleteLocked(c, scope, "healthChecks", "health_check", path, id, func() { delete(s.healthChecks, path) })
	})
	change := func(opType string) handlerFunc {
		return func(c *call) (int, any) {
			path := pathOf(c)
			_, scope, _ := where(c)
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
			return s.changeLocked(c, scope, "healthChecks", opType, path, cur.ID, func() *opError {
				*s.healthChecks[path] = next
				return nil
			})
		}
	}
	s.handleOp("PUT", coll+"/{healthCheck}", change("update"))
	s.handleOp("PATCH", coll+"/{healthCheck}", change("patch"))
}
