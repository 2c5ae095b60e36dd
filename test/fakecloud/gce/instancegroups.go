package gce

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
)

// Unmanaged instance groups (zones/{zone}/instanceGroups): insert, get,
// list, delete, addInstances, removeInstances and listInstances (a POST).
// Members must exist in the group's zone and network; adding a member
// twice fails with 400 memberAlreadyExists, removing a non-member is a
// no-op, and an instance may belong to only one instance group that
// backs a backend service (400 instanceInMultipleLoadBalancedIgs). A
// deleted instance leaves its groups.

// InstanceGroups returns every instance group, sorted by zone and name,
// with its Members.
func (s *Server) InstanceGroups() []InstanceGroup {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	return sortedRender(s.instanceGroups, s.baseLocked(), InstanceGroup.render)
}

// loadBalancedLocked reports whether a group backs a backend service.
func (s *Server) loadBalancedLocked(group string) bool {
	for _, b := range s.backendServices {
		for _, be := range b.Backends {
			if be.Group == group {
				return true
			}
		}
	}
	return false
}

// errMultipleLBGroups refuses to put an instance in a second load-balanced
// group, in the API's words.
func errMultipleLBGroups(instance string) (int, any) {
	return newError(http.StatusBadRequest, "instanceInMultipleLoadBalancedIgs",
		fmt.Sprintf("Validation failed for instance '%s': instance may belong to at most one load-balanced instance group.", instance))
}

// checkNewBackendsLocked checks a backend service's backends as they
// would be after an insert or change (self: the service's path, "" for an
// insert). A group that backs no service yet must not share an instance
// with a group that backs one afterwards, this service's other groups
// included. Groups that are backends already pass: load balancers may
// share them (upstream shares one group per zone among internal ones).
func (s *Server) checkNewBackendsLocked(self string, backends []Backend) (int, any) {
	after := map[string]bool{}
	for p, b := range s.backendServices {
		if p != self {
			for _, be := range b.Backends {
				after[be.Group] = true
			}
		}
	}
	for _, be := range backends {
		after[be.Group] = true
	}
	for _, be := range backends {
		g := s.instanceGroups[be.Group]
		if g == nil || s.loadBalancedLocked(be.Group) {
			continue
		}
		for _, m := range g.Members {
			for p, other := range s.instanceGroups {
				if p != be.Group && after[p] && slices.Contains(other.Members, m) {
					return errMultipleLBGroups(m)
				}
			}
		}
	}
	return 0, nil
}

func (s *Server) registerInstanceGroups() {
	const coll = "projects/{project}/zones/{zone}/instanceGroups"
	pathOf := func(c *call) string { return s.zonalPath(c.p["zone"], "instanceGroups", c.p["instanceGroup"]) }

	s.handle("GET", coll, func(c *call) (int, any) {
		items := listOf(s.instanceGroups, s.zonePath(c.p["zone"])+"/instanceGroups/", func(g *InstanceGroup) listItem {
			return listItem{name: g.Name, created: parseTS(g.CreationTimestamp), doc: g.render(c.base)}
		})
		return s.listResponse(c, "compute#instanceGroupList", s.zonePath(c.p["zone"])+"/instanceGroups", items)
	})
	s.handle("GET", "projects/{project}/aggregated/instanceGroups", func(c *call) (int, any) {
		var items []listItem
		for _, g := range s.instanceGroups {
			items = append(items, listItem{scope: "zones/" + lastSeg(g.Zone), name: g.Name, created: parseTS(g.CreationTimestamp), doc: g.render(c.base)})
		}
		return s.aggregatedResponse(c, "compute#instanceGroupAggregatedList", "instanceGroups", "instanceGroups", s.zoneScopesLocked(), items)
	})
	s.handle("GET", coll+"/{instanceGroup}", func(c *call) (int, any) {
		g := s.instanceGroups[pathOf(c)]
		if g == nil {
			return errNotFound(pathOf(c))
		}
		return http.StatusOK, g.render(c.base)
	})
	s.handleOp("POST", coll, func(c *call) (int, any) {
		var in InstanceGroup
		if _, status, body := readBody(c, "InstanceGroup", &in); status != 0 {
			return status, body
		}
		if status, body := checkName(in.Name); status != 0 {
			return status, body
		}
		zone := c.p["zone"]
		path := s.zonalPath(zone, "instanceGroups", in.Name)
		g := InstanceGroup{
			Kind:              "compute#instanceGroup",
			ID:                s.newIDLocked(),
			CreationTimestamp: timestamp(s.now()),
			Name:              in.Name,
			Description:       in.Description,
			NamedPorts:        slices.Clone(in.NamedPorts),
			Zone:              s.zonePath(zone),
			SelfLink:          path,
		}
		g.Fingerprint = fingerprint(path, fmt.Sprint(g.ID))
		for k, np := range g.NamedPorts {
			if status, body := checkPort(fmt.Sprintf("resource.namedPorts[%d].port", k), np.Port); status != 0 {
				return status, body
			}
		}
		if in.Network != "" {
			rel, status, body := s.refLocked("resource.network", in.Network, shapeNetwork, s.globalColl("networks"))
			if status != 0 {
				return status, body
			}
			g.Network = rel
		}
		if in.Subnetwork != "" {
			rel, status, body := s.refLocked("resource.subnetwork", in.Subnetwork, shapeSubnetwork, s.regionalColl(s.zones[zone].Region, "subnetworks"))
			if status != 0 {
				return status, body
			}
			g.Subnetwork = rel
			if g.Network == "" {
				g.Network = s.globalPath("networks", s.subnetByPathLocked(rel).Network)
			}
		}
		return s.insertLocked(c, "zones/"+zone, "instanceGroups", path, g.ID, func() *opError {
			s.instanceGroups[path] = &g
			return nil
		})
	})
	s.handleOp("DELETE", coll+"/{instanceGroup}", func(c *call) (int, any) {
		path := pathOf(c)
		var id uint64
		if g := s.instanceGroups[path]; g != nil {
			id = g.ID
		}
		return s.deleteLocked(c, "zones/"+c.p["zone"], "instanceGroups", "instance_group", path, id, func() { delete(s.instanceGroups, path) })
	})
	s.handleOp("POST", coll+"/{instanceGroup}/addInstances", func(c *call) (int, any) {
		return s.groupMembers(c, true)
	})
	s.handleOp("POST", coll+"/{instanceGroup}/removeInstances", func(c *call) (int, any) {
		return s.groupMembers(c, false)
	})
	s.handle("POST", coll+"/{instanceGroup}/listInstances", func(c *call) (int, any) {
		path := pathOf(c)
		req, status, body := readListInstancesBody(c)
		if status != 0 {
			return status, body
		}
		g := s.instanceGroups[path]
		if g == nil {
			return errNotFound(path)
		}
		state := cmp.Or(req.InstanceState, "ALL")
		if state != "ALL" && state != "RUNNING" {
			return errInvalidField("instanceState", state, "Must be ALL or RUNNING.")
		}
		var items []listItem
		for _, m := range g.Members {
			in := s.instances[m]
			if in == nil || (state == "RUNNING" && in.Status != StatusRunning) {
				continue
			}
			items = append(items, listItem{name: in.Name, created: in.CreationTimestamp, doc: instanceWithNamedPorts{
				Instance:   link(c.base, m),
				Status:     in.Status,
				NamedPorts: slices.Clone(g.NamedPorts),
			}})
		}
		return s.listResponse(c, "compute#instanceGroupsListInstances", path, items)
	})
}

type listInstancesRequest struct {
	InstanceState string `json:"instanceState"`
}

// listInstancesWrapper is the body the cloud.google.com/go/compute REST
// client (v1.75.0) actually sends to listInstances: the whole request
// message, with the InstanceGroupsListInstancesRequest under
// instanceGroupsListInstancesRequestResource, rather than that message
// alone as the discovery document describes. The fake accepts both.
type listInstancesWrapper struct {
	Resource *listInstancesRequest `json:"instanceGroupsListInstancesRequestResource"`
}

var listInstancesWrapperFields = []string{
	"filter", "instanceGroup", "instanceGroupsListInstancesRequestResource", "maxResults",
	"orderBy", "pageToken", "project", "returnPartialSuccess", "zone",
}

func readListInstancesBody(c *call) (listInstancesRequest, int, any) {
	var req listInstancesRequest
	raw, err := io.ReadAll(io.LimitReader(c.r.Body, maxBody))
	if err != nil {
		status, body := errParse(err.Error())
		return req, status, body
	}
	var d doc
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &d); err != nil {
			status, body := errParse(err.Error())
			return req, status, body
		}
	}
	if _, ok := d["instanceGroupsListInstancesRequestResource"]; !ok {
		c.r.Body = io.NopCloser(bytes.NewReader(raw))
		_, status, body := readBody(c, "InstanceGroupsListInstancesRequest", &req)
		return req, status, body
	}
	for k := range d {
		if !slices.Contains(listInstancesWrapperFields, k) {
			status, body := newError(http.StatusBadRequest, "invalid", fmt.Sprintf("Invalid JSON payload received. Unknown name %q: Cannot find field.", k))
			return req, status, body
		}
	}
	var w listInstancesWrapper
	if err := json.Unmarshal(raw, &w); err != nil {
		status, body := errParse(err.Error())
		return req, status, body
	}
	if w.Resource != nil {
		req = *w.Resource
	}
	return req, 0, nil
}

// instanceWithNamedPorts is an item of listInstances.
type instanceWithNamedPorts struct {
	Instance   string      `json:"instance"`
	Status     string      `json:"status"`
	NamedPorts []NamedPort `json:"namedPorts,omitempty"`
}

func (s *Server) groupMembers(c *call, add bool) (int, any) {
	zone := c.p["zone"]
	path := s.zonalPath(zone, "instanceGroups", c.p["instanceGroup"])
	schema, opType := "InstanceGroupsRemoveInstancesRequest", "compute.instanceGroups.removeInstances"
	if add {
		schema, opType = "InstanceGroupsAddInstancesRequest", "compute.instanceGroups.addInstances"
	}
	var req struct {
		Instances []instanceRef `json:"instances"`
	}
	if _, status, body := readBody(c, schema, &req); status != 0 {
		return status, body
	}
	g := s.instanceGroups[path]
	if g == nil {
		return errNotFound(path)
	}
	if len(req.Instances) == 0 {
		return errRequired("instances")
	}
	var refs []string
	network := g.Network
	for k, r := range req.Instances {
		field := fmt.Sprintf("instances[%d].instance", k)
		if !add {
			rel, ok := s.parseRef(r.Instance, shapeInstance, "")
			if !ok {
				return errInvalidField(field, r.Instance, "The URL is malformed.")
			}
			refs = append(refs, rel)
			continue
		}
		rel, status, body := s.refLocked(field, r.Instance, shapeInstance, s.zonePath(zone)+"/instances")
		if status != 0 {
			return status, body
		}
		in := s.instances[rel]
		switch {
		case in.Zone != zone:
			return errInvalidField(field, r.Instance, "The instance must be in the instance group's zone.")
		case slices.Contains(g.Members, rel) || slices.Contains(refs, rel):
			return newError(http.StatusBadRequest, "memberAlreadyExists", fmt.Sprintf("The resource '%s' is already a member of '%s'", rel, path))
		}
		net := s.globalPath("networks", in.Network)
		if network == "" {
			network = net
		} else if net != network {
			return errInvalidField(field, r.Instance, "The instance is not in the instance group's network.")
		}
		if s.loadBalancedLocked(path) {
			for p, other := range s.instanceGroups {
				if p != path && slices.Contains(other.Members, rel) && s.loadBalancedLocked(p) {
					return errMultipleLBGroups(rel)
				}
			}
		}
		refs = append(refs, rel)
	}
	return s.changeLocked(c, "zones/"+zone, "instanceGroups", opType, path, g.ID, func() *opError {
		g := s.instanceGroups[path]
		if add {
			for _, r := range refs {
				if !slices.Contains(g.Members, r) {
					g.Members = append(g.Members, r)
				}
			}
			if g.Network == "" {
				g.Network = network
			}
		} else {
			g.Members = slices.DeleteFunc(g.Members, func(m string) bool { return slices.Contains(refs, m) })
		}
		return nil
	})
}
