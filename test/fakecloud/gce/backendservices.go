package gce

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
)

// Regional backend services (regions/{region}/backendServices): insert,
// get, list, delete, update (PUT) and patch, for passthrough load
// balancers: loadBalancingScheme INTERNAL or EXTERNAL (the default),
// protocol TCP (the default), UDP or UNSPECIFIED, unmanaged instance group
// backends in the region with balancingMode CONNECTION, and at most one
// health check (regional, or for INTERNAL ones also global). A group may
// back several backend services, but an instance may be in only one group
// that backs any (400 instanceInMultipleLoadBalancedIgs, as on
// instanceGroups.addInstances). The fingerprint is optimistic locking:
// an update must carry the current one and a patch that carries one must
// match, or the API answers 412 conditionNotMet.

// BackendServices returns every backend service, sorted by region and
// name.
func (s *Server) BackendServices() []BackendService {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	return sortedRender(s.backendServices, s.baseLocked(), BackendService.render)
}

var (
	bsProtocols  = []string{"TCP", "UDP", "UNSPECIFIED"}
	bsAffinities = []string{"NONE", "CLIENT_IP", "CLIENT_IP_PROTO", "CLIENT_IP_PORT_PROTO", "CLIENT_IP_NO_DESTINATION"}
)

// backendServiceRefLocked resolves a forwarding rule's backendService,
// which must be in region and of scheme.
func (s *Server) backendServiceRefLocked(ref, region, scheme string) (string, int, any) {
	rel, status, body := s.refLocked("resource.backendService", ref, shapeBackendSvc, s.regionalColl(region, "backendServices"))
	if status != 0 {
		return "", status, body
	}
	b := s.backendServices[rel]
	if seg(rel, 3) != region {
		status, body := errInvalidField("resource.backendService", ref, "The backend service must be in the forwarding rule's region.")
		return "", status, body
	}
	if b.LoadBalancingScheme != scheme {
		status, body := errInvalidField("resource.backendService", ref, fmt.Sprintf("The backend service's load balancing scheme is %s, not %s.", b.LoadBalancingScheme, scheme))
		return "", status, body
	}
	return rel, 0, nil
}

// healthCheckRefLocked resolves one of a backend service's healthChecks: a
// regional health check in its region (a bare name resolves there) or,
// for an INTERNAL one, a global health check, as internal passthrough
// load balancers allow and cloud-provider-gcp uses; external passthrough
// ones take regional health checks only.
func (s *Server) healthCheckRefLocked(field, ref, region, scheme string) (string, int, any) {
	rel, ok := s.parseRef(ref, shapeHealthCheck, s.regionalColl(region, "healthChecks"))
	if !ok {
		rel, ok = s.parseRef(ref, shapeGlobalHC, "")
	}
	if !ok {
		status, body := errInvalidField(field, ref, "The URL is malformed.")
		return "", status, body
	}
	if !s.existsLocked(rel) {
		status, body := errNotFound(rel)
		return "", status, body
	}
	var status int
	var body any
	switch {
	case seg(rel, 2) == "global" && scheme != "INTERNAL":
		status, body = errInvalidField(field, ref, fmt.Sprintf("A regional backend service with load balancing scheme %s needs a regional health check.", scheme))
	case seg(rel, 2) == "regions" && seg(rel, 3) != region:
		status, body = errInvalidField(field, ref, "The health check must be in the backend service's region.")
	}
	return rel, status, body
}

// normBackendServiceLocked fills a backend service's defaults and
// validates it; references are resolved to stored paths.
func (s *Server) normBackendServiceLocked(b *BackendService, region string) (int, any) {
	b.LoadBalancingScheme = cmp.Or(b.LoadBalancingScheme, "EXTERNAL")
	if b.LoadBalancingScheme != "INTERNAL" && b.LoadBalancingScheme != "EXTERNAL" {
		return errInvalidField("resource.loadBalancingScheme", b.LoadBalancingScheme, "The fake supports INTERNAL and EXTERNAL regional backend services.")
	}
	b.Protocol = cmp.Or(b.Protocol, "TCP")
	if !slices.Contains(bsProtocols, b.Protocol) {
		return errInvalidField("resource.protocol", b.Protocol, "Passthrough load balancers support TCP, UDP and UNSPECIFIED.")
	}
	b.SessionAffinity = cmp.Or(b.SessionAffinity, "NONE")
	if !slices.Contains(bsAffinities, b.SessionAffinity) {
		return errInvalidField("resource.sessionAffinity", b.SessionAffinity, "Unsupported session affinity for this load balancer.")
	}
	b.TimeoutSec = cmp.Or(b.TimeoutSec, 30)
	if b.ConnectionDraining == nil {
		b.ConnectionDraining = &ConnectionDraining{}
	}
	if len(b.HealthChecks) > 1 {
		return errInvalidField("resource.healthChecks", fmt.Sprint(len(b.HealthChecks)), "At most one health check can be specified.")
	}
	for k, hc := range b.HealthChecks {
		rel, status, body := s.healthCheckRefLocked(fmt.Sprintf("resource.healthChecks[%d]", k), hc, region, b.LoadBalancingScheme)
		if status != 0 {
			return status, body
		}
		b.HealthChecks[k] = rel
	}
	if len(b.Backends) > 0 && len(b.HealthChecks) == 0 {
		return errRequired("resource.healthChecks")
	}
	var groups []string
	for k, be := range b.Backends {
		field := fmt.Sprintf("resource.backends[%d]", k)
		rel, status, body := s.refLocked(field+".group", be.Group, shapeInstanceGroup, "")
		if status != 0 {
			return status, body
		}
		if z := s.zones[seg(rel, 3)]; z == nil || z.Region != region {
			return errInvalidField(field+".group", be.Group, "The instance group must be in the backend service's region.")
		}
		if slices.Contains(groups, rel) {
			return errInvalidField(field+".group", be.Group, "Duplicate backend group.")
		}
		groups = append(groups, rel)
		be.Group = rel
		be.BalancingMode = cmp.Or(be.BalancingMode, "CONNECTION")
		if be.BalancingMode != "CONNECTION" {
			return errInvalidField(field+".balancingMode", be.BalancingMode, fmt.Sprintf("Balancing mode must be CONNECTION for an %s backend service.", b.LoadBalancingScheme))
		}
		b.Backends[k] = be
	}
	if b.Network != "" {
		if b.LoadBalancingScheme != "INTERNAL" {
			return errInvalidField("resource.network", b.Network, "Only INTERNAL backend services belong to a network.")
		}
		rel, status, body := s.refLocked("resource.network", b.Network, shapeNetwork, s.globalColl("networks"))
		if status != 0 {
			return status, body
		}
		b.Network = rel
	}
	return 0, nil
}

func (s *Server) registerBackendServices() {
	const coll = "projects/{project}/regions/{region}/backendServices"
	pathOf := func(c *call) string { return s.regionalPath(c.p["region"], "backendServices", c.p["backendService"]) }

	s.handle("GET", coll, func(c *call) (int, any) {
		items := listOf(s.backendServices, s.regionalColl(c.p["region"], "backendServices")+"/", func(b *BackendService) listItem {
			return listItem{name: b.Name, created: parseTS(b.CreationTimestamp), doc: b.render(c.base)}
		})
		return s.listResponse(c, "compute#backendServiceList", s.regionalColl(c.p["region"], "backendServices"), items)
	})
	s.handle("GET", coll+"/{backendService}", func(c *call) (int, any) {
		b := s.backendServices[pathOf(c)]
		if b == nil {
			return errNotFound(pathOf(c))
		}
		return http.StatusOK, b.render(c.base)
	})
	s.handleOp("POST", coll, func(c *call) (int, any) {
		var in BackendService
		if _, status, body := readBody(c, "BackendService", &in); status != 0 {
			return status, body
		}
		if status, body := checkName(in.Name); status != 0 {
			return status, body
		}
		region := c.p["region"]
		if status, body := s.normBackendServiceLocked(&in, region); status != 0 {
			return status, body
		}
		if status, body := s.checkNewBackendsLocked("", in.Backends); status != 0 {
			return status, body
		}
		path := s.regionalPath(region, "backendServices", in.Name)
		b := in
		b.Kind, b.ID, b.CreationTimestamp, b.Region, b.SelfLink = "compute#backendService", s.newIDLocked(), timestamp(s.now()), s.regionPath(region), path
		b.Fingerprint = fingerprint(path, fmt.Sprint(b.ID))
		return s.insertLocked(c, "regions/"+region, "backendServices", path, b.ID, func() *opError {
			s.backendServices[path] = &b
			return nil
		})
	})
	s.handleOp("DELETE", coll+"/{backendService}", func(c *call) (int, any) {
		path := pathOf(c)
		var id uint64
		if b := s.backendServices[path]; b != nil {
			id = b.ID
		}
		return s.deleteLocked(c, "regions/"+c.p["region"], "backendServices", "backend_service", path, id, func() { delete(s.backendServices, path) })
	})
	change := func(opType string) handlerFunc {
		return func(c *call) (int, any) {
			path := pathOf(c)
			region := c.p["region"]
			cur := s.backendServices[path]
			var in BackendService
			d, status, body := readBody(c, "BackendService", &in)
			if status != 0 {
				return status, body
			}
			if cur == nil {
				return errNotFound(path)
			}
			switch {
			case opType == "update" && in.Fingerprint == "":
				return errConditionNotMet("Required field 'fingerprint' not specified; get the backend service for its current fingerprint.")
			case in.Fingerprint != "" && in.Fingerprint != cur.Fingerprint:
				return errConditionNotMet("Invalid fingerprint.")
			}
			next := in
			if opType == "patch" {
				next = cur.render("")
				for k := range next.Backends {
					next.Backends[k].Group = cur.Backends[k].Group
				}
				next.HealthChecks = slices.Clone(cur.HealthChecks)
				next.Network, next.Region, next.SelfLink = cur.Network, "", ""
				if err := mergePatch(&next, d); err != nil {
					return errParse(err.Error())
				}
			}
			if next.Name != "" && next.Name != cur.Name {
				return errInvalidField("resource.name", next.Name, "The name cannot be changed.")
			}
			if status, body := s.normBackendServiceLocked(&next, region); status != 0 {
				return status, body
			}
			if status, body := s.checkNewBackendsLocked(path, next.Backends); status != 0 {
				return status, body
			}
			next.Kind, next.ID, next.Name, next.CreationTimestamp, next.Region, next.SelfLink = cur.Kind, cur.ID, cur.Name, cur.CreationTimestamp, cur.Region, cur.SelfLink
			return s.changeLocked(c, "regions/"+region, "backendServices", opType, path, cur.ID, func() *opError {
				b := s.backendServices[path]
				next.Fingerprint = fingerprint(path, b.Fingerprint)
				*b = next
				return nil
			})
		}
	}
	s.handleOp("PUT", coll+"/{backendService}", change("update"))
	s.handleOp("PATCH", coll+"/{backendService}", change("patch"))
}
