package gce

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"sort"
)

// Target pools (regions/{region}/targetPools): insert, get, list, delete,
// addInstance, removeInstance, addHealthCheck, removeHealthCheck.
//
// Instances must exist and live in the pool's region; a pool has at most
// one (legacy HTTP) health check. Adding a member twice fails with 400
// memberAlreadyExists; removing a non-member is a no-op. The number of
// instances per insert and per add/remove call is limited (see
// SetTargetPoolLimits).

var sessionAffinities = []string{"NONE", "CLIENT_IP", "CLIENT_IP_PROTO", "CLIENT_IP_PORT_PROTO", "CLIENT_IP_NO_DESTINATION", "GENERATED_COOKIE", "HEADER_FIELD", "HTTP_COOKIE", "STRONG_COOKIE_AFFINITY"}

// TargetPools returns every target pool, sorted by region and name.
func (s *Server) TargetPools() []TargetPool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	return sortedRender(s.targetPools, s.baseLocked(), TargetPool.render)
}

// TargetPool returns one target pool.
func (s *Server) TargetPool(region, name string) (TargetPool, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	t := s.targetPools[s.regionalPath(region, "targetPools", name)]
	if t == nil {
		return TargetPool{}, false
	}
	return t.render(s.baseLocked()), true
}

// sortedRender renders a map's resources in path order.
func sortedRender[T any](m map[string]*T, base string, render func(T, string) T) []T {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]T, len(keys))
	for i, k := range keys {
		out[i] = render(*m[k], base)
	}
	return out
}

// instanceRefsLocked resolves a list of instance references, which must
// exist in region's zones; field names the list for messages.
func (s *Server) instanceRefsLocked(field, region string, refs []instanceRef) ([]string, int, any) {
	var out []string
	for k, r := range refs {
		f := fmt.Sprintf("%s[%d].instance", field, k)
		rel, status, body := s.refLocked(f, r.Instance, shapeInstance, "")
		if status != 0 {
			return nil, status, body
		}
		if z := s.zones[seg(rel, 3)]; z == nil || z.Region != region {
			status, body := errInvalidField(f, r.Instance, fmt.Sprintf("Instances must be in a zone of region '%s'.", region))
			return nil, status, body
		}
		if slices.Contains(out, rel) {
			status, body := errInvalidField(f, r.Instance, "Duplicate instance.")
			return nil, status, body
		}
		out = append(out, rel)
	}
	return out, 0, nil
}

func (s *Server) registerTargetPools() {
	const coll = "projects/{project}/regions/{region}/targetPools"
	pathOf := func(c *call) string { return s.regionalPath(c.p["region"], "targetPools", c.p["targetPool"]) }
	scopeOf := func(c *call) string { return "regions/" + c.p["region"] }

	s.handle("GET", coll, func(c *call) (int, any) {
		items := listOf(s.targetPools, s.regionalPath(c.p["region"], "targetPools", ""), func(t *TargetPool) listItem {
			return listItem{name: t.Name, created: parseTS(t.CreationTimestamp), doc: t.render(c.base)}
		})
		return s.listResponse(c, "compute#targetPoolList", "projects/"+s.project+"/regions/"+c.p["region"]+"/targetPools", items)
	})
	s.handle("GET", coll+"/{targetPool}", func(c *call) (int, any) {
		t := s.targetPools[pathOf(c)]
		if t == nil {
			return errNotFound(pathOf(c))
		}
		return http.StatusOK, t.render(c.base)
	})
	s.handleOp("POST", coll, func(c *call) (int, any) {
		var in TargetPool
		if _, status, body := readBody(c, "TargetPool", &in); status != 0 {
			return status, body
		}
		if status, body := checkName(in.Name); status != 0 {
			return status, body
		}
		region := c.p["region"]
		path := s.regionalPath(region, "targetPools", in.Name)
		t := TargetPool{
			Kind:              "compute#targetPool",
			ID:                s.newIDLocked(),
			CreationTimestamp: timestamp(s.now()),
			Name:              in.Name,
			Description:       in.Description,
			Region:            s.regionPath(region),
			SessionAffinity:   cmp.Or(in.SessionAffinity, "NONE"),
			FailoverRatio:     in.FailoverRatio,
			SelfLink:          path,
		}
		if !slices.Contains(sessionAffinities, t.SessionAffinity) {
			return errInvalidField("resource.sessionAffinity", t.SessionAffinity, "Unknown session affinity.")
		}
		if len(in.HealthChecks) > 1 {
			return errInvalidField("resource.healthChecks", fmt.Sprint(len(in.HealthChecks)), "A target pool can have at most one health check.")
		}
		for k, hc := range in.HealthChecks {
			rel, status, body := s.refLocked(fmt.Sprintf("resource.healthChecks[%d]", k), hc, shapeHTTPHC, s.globalColl("httpHealthChecks"))
			if status != 0 {
				return status, body
			}
			t.HealthChecks = append(t.HealthChecks, rel)
		}
		if n := len(in.Instances); n > s.tpInsertLimit {
			return errInvalidField("resource.instances", fmt.Sprint(n), fmt.Sprintf("A target pool can be created with at most %d instances.", s.tpInsertLimit))
		}
		refs := make([]instanceRef, len(in.Instances))
		for k, i := range in.Instances {
			refs[k] = instanceRef{Instance: i}
		}
		insts, status, body := s.instanceRefsLocked("resource.instances", region, refs)
		if status != 0 {
			return status, body
		}
		t.Instances = insts
		if in.BackupPool != "" {
			rel, status, body := s.refLocked("resource.backupPool", in.BackupPool, shapeTargetPool, "")
			if status != 0 {
				return status, body
			}
			t.BackupPool = rel
		}
		return s.insertLocked(c, scopeOf(c), "targetPools", path, t.ID, func() *opError {
			s.targetPools[path] = &t
			return nil
		})
	})
	s.handleOp("DELETE", coll+"/{targetPool}", func(c *call) (int, any) {
		path := pathOf(c)
		var id uint64
		if t := s.targetPools[path]; t != nil {
			id = t.ID
		}
		return s.deleteLocked(c, scopeOf(c), "targetPools", "target_pool", path, id, func() { delete(s.targetPools, path) })
	})
	s.handleOp("POST", coll+"/{targetPool}/addInstance", func(c *call) (int, any) {
		return s.targetPoolMembers(c, "addInstance", "TargetPoolsAddInstanceRequest")
	})
	s.handleOp("POST", coll+"/{targetPool}/removeInstance", func(c *call) (int, any) {
		return s.targetPoolMembers(c, "removeInstance", "TargetPoolsRemoveInstanceRequest")
	})
	s.handleOp("POST", coll+"/{targetPool}/addHealthCheck", func(c *call) (int, any) {
		return s.targetPoolHealthChecks(c, true)
	})
	s.handleOp("POST", coll+"/{targetPool}/removeHealthCheck", func(c *call) (int, any) {
		return s.targetPoolHealthChecks(c, false)
	})
}

func (s *Server) targetPoolMembers(c *call, opType, schema string) (int, any) {
	region := c.p["region"]
	path := s.regionalPath(region, "targetPools", c.p["targetPool"])
	var req struct {
		Instances []instanceRef `json:"instances"`
	}
	if _, status, body := readBody(c, schema, &req); status != 0 {
		return status, body
	}
	t := s.targetPools[path]
	if t == nil {
		return errNotFound(path)
	}
	if n := len(req.Instances); n > s.tpCallLimit {
		return errInvalidField("instances", fmt.Sprint(n), fmt.Sprintf("At most %d instances can be added or removed in one request.", s.tpCallLimit))
	}
	if len(req.Instances) == 0 {
		return errRequired("instances")
	}
	var refs []string
	if opType == "addInstance" {
		var status int
		var body any
		refs, status, body = s.instanceRefsLocked("instances", region, req.Instances)
		if status != 0 {
			return status, body
		}
		for _, r := range refs {
			if slices.Contains(t.Instances, r) {
				return newError(http.StatusBadRequest, "memberAlreadyExists",
					fmt.Sprintf("The resource '%s' is already a member of '%s'", r, path))
			}
		}
	} else {
		for k, r := range req.Instances {
			rel, ok := s.parseRef(r.Instance, shapeInstance, "")
			if !ok {
				return errInvalidField(fmt.Sprintf("instances[%d].instance", k), r.Instance, "The URL is malformed.")
			}
			refs = append(refs, rel)
		}
	}
	return s.changeLocked(c, "regions/"+region, "targetPools", opType, path, t.ID, func() *opError {
		t := s.targetPools[path]
		if opType == "addInstance" {
			for _, r := range refs {
				if !slices.Contains(t.Instances, r) {
					t.Instances = append(t.Instances, r)
				}
			}
		} else {
			t.Instances = slices.DeleteFunc(t.Instances, func(i string) bool { return slices.Contains(refs, i) })
		}
		return nil
	})
}

func (s *Server) targetPoolHealthChecks(c *call, add bool) (int, any) {
	region := c.p["region"]
	path := s.regionalPath(region, "targetPools", c.p["targetPool"])
	schema, opType := "TargetPoolsRemoveHealthCheckRequest", "removeHealthCheck"
	if add {
		schema, opType = "TargetPoolsAddHealthCheckRequest", "addHealthCheck"
	}
	var req struct {
		HealthChecks []healthCheckRef `json:"healthChecks"`
	}
	if _, status, body := readBody(c, schema, &req); status != 0 {
		return status, body
	}
	t := s.targetPools[path]
	if t == nil {
		return errNotFound(path)
	}
	if len(req.HealthChecks) == 0 {
		return errRequired("healthChecks")
	}
	var refs []string
	for k, r := range req.HealthChecks {
		field := fmt.Sprintf("healthChecks[%d].healthCheck", k)
		var rel string
		if add {
			var status int
			var body any
			rel, status, body = s.refLocked(field, r.HealthCheck, shapeHTTPHC, "")
			if status != 0 {
				return status, body
			}
		} else {
			var ok bool
			if rel, ok = s.parseRef(r.HealthCheck, shapeHTTPHC, ""); !ok {
				return errInvalidField(field, r.HealthCheck, "The URL is malformed.")
			}
		}
		refs = append(refs, rel)
	}
	if add {
		merged := slices.Clone(t.HealthChecks)
		for _, r := range refs {
			if !slices.Contains(merged, r) {
				merged = append(merged, r)
			}
		}
		if len(merged) > 1 {
			return errInvalidField("healthChecks", fmt.Sprint(len(merged)), "A target pool can have at most one health check.")
		}
	}
	return s.changeLocked(c, "regions/"+region, "targetPools", opType, path, t.ID, func() *opError {
		t := s.targetPools[path]
		if add {
			for _, r := range refs {
				if !slices.Contains(t.HealthChecks, r) {
					t.HealthChecks = append(t.HealthChecks, r)
				}
			}
		} else {
			t.HealthChecks = slices.DeleteFunc(t.HealthChecks, func(h string) bool { return slices.Contains(refs, h) })
		}
		return nil
	})
}
