package openstack

import (
	"fmt"
	"net/http"
)

// The version documents clients discover APIs by. They need no token, as
// on the real services. Clients fetch them when the catalog's URL carries
// no version (Neutron's and Octavia's), or to learn Nova's microversions.

func (s *Server) registerVersions() {
	both := func(service, pattern, name string, h handlerFunc) {
		rt := s.handle(service, http.MethodGet, pattern, name, h)
		rt.public, rt.slash = true, true
	}
	both(svcIdentity, "/identity", IdentityVersions, s.identityVersions)
	both(svcIdentity, "/identity/v3", IdentityVersion, s.identityVersion)
	both(svcCompute, "/compute", ComputeVersions, s.computeVersions)
	both(svcCompute, "/compute/v2.1", ComputeVersion, s.computeVersion)
	both(svcNetwork, "/network", NetworkVersions, networkVersions)
	both(svcLoadBalancer, "/load-balancer", LoadBalancerVersions, loadBalancerVersions)
	both(svcVolume, "/volume", VolumeVersions, volumeVersions)
	both(svcImage, "/image", ImageVersions, imageVersions)
}

func strPtr(v string) *string { return &v }

func identityV3(c *call) wireVersion {
	return wireVersion{ID: "v3.14", Status: "stable", Updated: "2020-04-07T00:00:00Z",
		Links:      []wireLink{{Rel: "self", Href: c.host + "/identity/v3/"}},
		MediaTypes: []wireMediaType{{Base: "application/json", Type: "application/vnd.openstack.identity-v3+json"}}}
}

// identityVersions: Keystone answers its root with 300 Multiple Choices.
func (s *Server) identityVersions(c *call) (int, any) {
	return http.StatusMultipleChoices, map[string]any{"versions": map[string]any{"values": []wireVersion{identityV3(c)}}}
}

func (s *Server) identityVersion(c *call) (int, any) {
	return http.StatusOK, map[string]any{"version": identityV3(c)}
}

func (s *Server) computeV21(c *call) wireVersion {
	s.mu.Lock()
	hi := s.maxMicro
	s.mu.Unlock()
	return wireVersion{ID: "v2.1", Status: "CURRENT", Version: strPtr(hi.String()), MinVersion: strPtr(minMicroversion.String()),
		Updated: "2013-07-23T11:33:21Z",
		Links: []wireLink{{Rel: "self", Href: c.root + "/compute/v2.1/"},
			{Rel: "describedby", Type: "text/html", Href: "http://docs.openstack.org/"}},
		MediaTypes: []wireMediaType{{Base: "application/json", Type: "application/vnd.openstack.compute+json;version=2.1"}}}
}

// computeVersions lists v2.1 and the legacy v2.0, which Nova still
// advertises (the fake does not serve it).
func (s *Server) computeVersions(c *call) (int, any) {
	v21 := s.computeV21(c)
	v21.MediaTypes = nil
	v21.Links = v21.Links[:1]
	legacy := wireVersion{ID: "v2.0", Status: "SUPPORTED", Version: strPtr(""), MinVersion: strPtr(""),
		Updated: "2011-01-21T11:33:21Z", Links: []wireLink{{Rel: "self", Href: c.root + "/compute/v2/"}}}
	return http.StatusOK, map[string]any{"versions": []wireVersion{legacy, v21}}
}

func (s *Server) computeVersion(c *call) (int, any) {
	return http.StatusOK, map[string]any{"version": s.computeV21(c)}
}

func networkVersions(c *call) (int, any) {
	return http.StatusOK, map[string]any{"versions": []wireVersion{{ID: "v2.0", Status: "CURRENT",
		Links: []wireLink{{Rel: "self", Href: c.root + "/network/v2.0/"}}}}}
}

// loadBalancerVersions lists Octavia's minor versions, each SUPPORTED but
// the last: 2.27 (2023.1), whose attributes the fake's documents carry.
func loadBalancerVersions(c *call) (int, any) {
	const latest = 27
	var vs []wireVersion
	for m := 0; m <= latest; m++ {
		status := "SUPPORTED"
		if m == latest {
			status = "CURRENT"
		}
		vs = append(vs, wireVersion{ID: fmt.Sprintf("v2.%d", m), Status: status, Updated: "2016-12-11T00:00:00Z",
			Links: []wireLink{{Rel: "self", Href: c.root + "/load-balancer/v2"}}})
	}
	return http.StatusOK, map[string]any{"versions": vs}
}

// volumeVersions: Cinder answers its root with 300 Multiple Choices.
// imageVersions is Glance's version document, which clients discover
// before anything else of a cloud (openstackclient does before a server
// listing); the images API itself is not served.
func imageVersions(c *call) (int, any) {
	return http.StatusMultipleChoices, map[string]any{"versions": []wireVersion{{ID: "v2.16", Status: "CURRENT",
		Links: []wireLink{{Rel: "self", Href: c.root + "/image/v2/"}}}}}
}

func volumeVersions(c *call) (int, any) {
	return http.StatusMultipleChoices, map[string]any{"versions": []wireVersion{{ID: "v3.0", Status: "CURRENT",
		Version: strPtr(maxVolumeMicroversion.String()), MinVersion: strPtr(minVolumeMicroversion.String()), Updated: "2023-08-31T00:00:00Z",
		Links:      []wireLink{{Rel: "self", Href: c.root + "/volume/v3/"}},
		MediaTypes: []wireMediaType{{Base: "application/json", Type: "application/vnd.openstack.volume+json;version=3"}}}}}
}
