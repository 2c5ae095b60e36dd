package gce

import (
	"fmt"
	"net/http"
	"sort"
	"time"
)

// Helpers shared by the API-created resources.

// existsLocked reports whether the resource at a relative path exists.
func (s *Server) existsLocked(path string) bool {
	switch seg(path, -2) {
	case "instances":
		return s.instances[path] != nil
	case "targetPools":
		return s.targetPools[path] != nil
	case "httpHealthChecks":
		return s.httpHealthChecks[path] != nil
	case "healthChecks":
		return s.healthChecks[path] != nil
	case "forwardingRules":
		return s.forwardingRules[path] != nil
	case "addresses":
		return s.addresses[path] != nil
	case "firewalls":
		return s.firewalls[path] != nil
	case "backendServices":
		return s.backendServices[path] != nil
	case "instanceGroups":
		return s.instanceGroups[path] != nil
	case "routes":
		return s.routesByPath[path] != nil
	case "networks":
		return s.networks[lastSeg(path)] != nil && seg(path, 1) == s.project
	case "subnetworks":
		return s.subnetByPathLocked(path) != nil
	}
	return false
}

// userOfLocked returns a resource that references path (so that it cannot
// be deleted), or "".
func (s *Server) userOfLocked(path string) string {
	var users []string
	for p, f := range s.forwardingRules {
		if f.Target == path || f.BackendService == path {
			users = append(users, p)
		}
	}
	for p, t := range s.targetPools {
		if t.BackupPool == path {
			users = append(users, p)
		}
		for _, hc := range t.HealthChecks {
			if hc == path {
				users = append(users, p)
			}
		}
	}
	for p, b := range s.backendServices {
		for _, hc := range b.HealthChecks {
			if hc == path {
				users = append(users, p)
			}
		}
		for _, be := range b.Backends {
			if be.Group == path {
				users = append(users, p)
			}
		}
	}
	for p, r := range s.routesByPath {
		if r.NextHopIlb == path {
			users = append(users, p)
		}
	}
	if a := s.addresses[path]; a != nil {
		// A static address one forwarding rule uses may go: the rule
		// keeps the IP as an ephemeral one (see the address delete).
		// An ephemeral IP has one holder, so one shared by several
		// rules may not.
		if au := s.addressUsersLocked(a); len(au) > 1 {
			users = append(users, au...)
		}
	}
	if len(users) == 0 {
		return ""
	}
	sort.Strings(users)
	return users[0]
}

// insertLocked starts an insert whose resource is stored (by store) when
// the operation completes, unless the name was taken meanwhile.
func (s *Server) insertLocked(c *call, scope, coll, path string, id uint64, store func() *opError) (int, any) {
	if status, body := s.checkBusyLocked(path, true); status != 0 {
		return status, body
	}
	if s.existsLocked(path) {
		return errAlreadyExists(path)
	}
	return s.startOpLocked(c, opSpec{scope: scope, opType: "insert", collection: coll, target: path, targetID: id,
		apply: func() *opError {
			if s.existsLocked(path) {
				return &opError{code: "RESOURCE_ALREADY_EXISTS", message: fmt.Sprintf("The resource '%s' already exists", path), http: http.StatusConflict}
			}
			if store != nil {
				if err := store(); err != nil {
					return err
				}
			}
			s.countCreateLocked(coll)
			return nil
		}})
}

// deleteLocked starts a delete of an existing resource, refusing one still
// in use; remove runs when the operation completes.
func (s *Server) deleteLocked(c *call, scope, coll, kind, path string, id uint64, remove func()) (int, any) {
	if status, body := s.checkBusyLocked(path, false); status != 0 {
		return status, body
	}
	if !s.existsLocked(path) {
		return errNotFound(path)
	}
	if user := s.userOfLocked(path); user != "" {
		return errInUse(kind, path, user)
	}
	return s.startOpLocked(c, opSpec{scope: scope, opType: "delete", collection: coll, target: path, targetID: id,
		apply: func() *opError {
			if !s.existsLocked(path) {
				return &opError{code: "RESOURCE_NOT_FOUND", message: fmt.Sprintf("The resource '%s' was not found", path), http: http.StatusNotFound}
			}
			if user := s.userOfLocked(path); user != "" {
				return &opError{code: "RESOURCE_IN_USE_BY_ANOTHER_RESOURCE", message: fmt.Sprintf("The %s resource '%s' is already being used by '%s'", kind, path, user), http: http.StatusBadRequest}
			}
			remove()
			s.countDeleteLocked(coll)
			return nil
		}})
}

// changeLocked starts an operation that changes an existing resource
// (opType "patch", "addInstance", ...); change runs when it completes.
func (s *Server) changeLocked(c *call, scope, coll, opType, path string, id uint64, change func() *opError) (int, any) {
	if status, body := s.checkBusyLocked(path, false); status != 0 {
		return status, body
	}
	if !s.existsLocked(path) {
		return errNotFound(path)
	}
	return s.startOpLocked(c, opSpec{scope: scope, opType: opType, collection: coll, target: path, targetID: id,
		apply: func() *opError {
			if !s.existsLocked(path) {
				return &opError{code: "RESOURCE_NOT_FOUND", message: fmt.Sprintf("The resource '%s' was not found", path), http: http.StatusNotFound}
			}
			return change()
		}})
}

// refLocked resolves a reference field of a request: it must be well
// formed and name an existing resource. field is for messages
// ("resource.target").
func (s *Server) refLocked(field, ref, shape, def string) (string, int, any) {
	rel, ok := s.parseRef(ref, shape, def)
	if !ok {
		status, body := errInvalidField(field, ref, "The URL is malformed.")
		return "", status, body
	}
	if !s.existsLocked(rel) {
		status, body := errNotFound(rel)
		return "", status, body
	}
	return rel, 0, nil
}

// listOf lists the resources of a map under a path prefix.
func listOf[T any](m map[string]*T, prefix string, item func(*T) listItem) []listItem {
	var out []listItem
	for p, v := range m {
		if len(p) > len(prefix) && p[:len(prefix)] == prefix {
			out = append(out, item(v))
		}
	}
	return out
}

// parseTS parses a stored creationTimestamp back, for ordering lists.
func parseTS(ts string) time.Time {
	t, _ := time.Parse(tsLayout, ts)
	return t
}
