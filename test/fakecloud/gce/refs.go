package gce

import (
	"net/url"
	"strings"
)

// Resources are stored under their path relative to /compute/v1/
// ("projects/p/zones/z/instances/x") and rendered with absolute links
// under the base URL the client used.

func (s *Server) globalPath(coll, name string) string {
	return "projects/" + s.project + "/global/" + coll + "/" + name
}

func (s *Server) regionalPath(region, coll, name string) string {
	return "projects/" + s.project + "/regions/" + region + "/" + coll + "/" + name
}

func (s *Server) zonalPath(zone, coll, name string) string {
	return "projects/" + s.project + "/zones/" + zone + "/" + coll + "/" + name
}

// globalColl and regionalColl are collections' paths, under which bare
// names in references resolve.
func (s *Server) globalColl(coll string) string { return "projects/" + s.project + "/global/" + coll }

func (s *Server) regionalColl(region, coll string) string {
	return "projects/" + s.project + "/regions/" + region + "/" + coll
}

func (s *Server) zonePath(zone string) string { return "projects/" + s.project + "/zones/" + zone }

func (s *Server) regionPath(region string) string {
	return "projects/" + s.project + "/regions/" + region
}

// link renders a stored relative path as an absolute URL.
func link(base, rel string) string {
	if rel == "" {
		return ""
	}
	return base + apiPrefix + rel
}

func links(base string, rels []string) []string {
	if rels == nil {
		return nil
	}
	out := make([]string, len(rels))
	for k, r := range rels {
		out[k] = link(base, r)
	}
	return out
}

// parseRef normalises a reference a client sent (a full URL on any host,
// "projects/p/...", a partial "zones/z/..." or "global/...", or, when def
// is given, a bare name resolved under def) to a stored relative path. It
// fails unless the result has the shape of want, a path pattern with "*"
// for each variable segment ("projects/*/zones/*/instances/*").
func (s *Server) parseRef(ref, want, def string) (string, bool) {
	rel := strings.TrimSpace(ref)
	if rel == "" {
		return "", false
	}
	if strings.Contains(rel, "://") {
		u, err := url.Parse(rel)
		if err != nil {
			return "", false
		}
		rel = u.Path
		found := false
		for _, v := range []string{"/compute/v1/", "/compute/beta/", "/compute/alpha/"} {
			if i := strings.Index(rel, v); i >= 0 {
				rel, found = rel[i+len(v):], true
				break
			}
		}
		if !found {
			return "", false
		}
	}
	rel = strings.TrimPrefix(rel, "/")
	switch {
	case strings.HasPrefix(rel, "projects/"):
	case strings.HasPrefix(rel, "zones/"), strings.HasPrefix(rel, "regions/"), strings.HasPrefix(rel, "global/"):
		rel = "projects/" + s.project + "/" + rel
	case def != "" && !strings.Contains(rel, "/"):
		rel = def + "/" + rel
	default:
		return "", false
	}
	if !shaped(rel, want) {
		return "", false
	}
	return rel, true
}

// shaped reports whether a relative path fits a pattern with "*" segments.
func shaped(rel, want string) bool {
	a, b := strings.Split(rel, "/"), strings.Split(want, "/")
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if a[k] == "" || (b[k] != "*" && a[k] != b[k]) {
			return false
		}
	}
	return true
}

// seg returns the n-th segment of a relative path (negative from the end).
func seg(rel string, n int) string {
	parts := strings.Split(rel, "/")
	if n < 0 {
		n += len(parts)
	}
	if n < 0 || n >= len(parts) {
		return ""
	}
	return parts[n]
}

// lastSeg is a path's final segment: a resource's name.
func lastSeg(rel string) string { return seg(rel, -1) }

// Reference shapes.
const (
	shapeInstance      = "projects/*/zones/*/instances/*"
	shapeInstanceGroup = "projects/*/zones/*/instanceGroups/*"
	shapeNetwork       = "projects/*/global/networks/*"
	shapeSubnetwork    = "projects/*/regions/*/subnetworks/*"
	shapeTargetPool    = "projects/*/regions/*/targetPools/*"
	shapeHTTPHC        = "projects/*/global/httpHealthChecks/*"
	shapeHealthCheck   = "projects/*/regions/*/healthChecks/*"
	shapeGlobalHC      = "projects/*/global/healthChecks/*"
	shapeBackendSvc    = "projects/*/regions/*/backendServices/*"
	shapeAddress       = "projects/*/regions/*/addresses/*"
	shapeGateway       = "projects/*/global/gateways/*"
	shapeForwardingRl  = "projects/*/regions/*/forwardingRules/*"
)
