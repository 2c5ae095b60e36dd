package digitalocean

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Tags live on the resources that bear them (Droplet.Tags, Volume.Tags,
// LoadBalancer.Tags); the fake keeps besides the set of tags that exist,
// since a tag outlives its last resource, and which resource was tagged
// last, for last_tagged_uri.

// Resource types of POST /v2/tags/{name}/resources the fake models, as
// godo names them. The reference also lists image, volume_snapshot and
// database, of which the fake has none.
const (
	ResourceDroplet      = "droplet"
	ResourceLoadBalancer = "load_balancer"
	ResourceVolume       = "volume"
)

var knownResourceTypes = []string{ResourceDroplet, ResourceLoadBalancer, ResourceVolume, "image", "volume_snapshot", "database"}

// tagName is the reference's pattern for tag names (models/tags.yml).
var tagName = regexp.MustCompile(`^[a-zA-Z0-9_\-:]+$`)

const (
	maxTagNameLen = 255
	tagNameRule   = "tags may contain letters, numbers, colons, dashes and underscores, up to 255 characters"
)

func validTagName(name string) bool {
	return len(name) <= maxTagNameLen && tagName.MatchString(name)
}

// checkTagNames is the message of a 422 for the first invalid name.
func checkTagNames(names []string) string {
	for _, n := range names {
		if !validTagName(n) {
			return fmt.Sprintf("tag %q is invalid: %s", n, tagNameRule)
		}
	}
	return ""
}

type tagState struct {
	// last holds the ID of the resource of each type tagged last, and under
	// "" the last of any type as "type/id". Once that resource is untagged
	// the newest bearer stands in.
	last map[string]string
}

// ensureTagsLocked creates the tags that do not exist yet.
func (s *Server) ensureTagsLocked(names []string) {
	for _, n := range names {
		if s.tags[n] == nil {
			s.tags[n] = &tagState{last: map[string]string{}}
		}
	}
}

// syncTagsLocked makes the tags resources bear exist, as the API creates
// the tags a droplet is created with. The droplet code does not tell this
// file, so it runs before tags are read.
func (s *Server) syncTagsLocked() {
	for _, d := range s.droplets {
		s.ensureTagsLocked(d.Tags)
	}
	for _, lb := range s.lbs {
		s.ensureTagsLocked(lb.Tags)
	}
	for _, v := range s.volumes {
		s.ensureTagsLocked(v.Tags)
	}
}

// taggedLocked lists the resources bearing tag by type: droplets by ID,
// load balancers and volumes by creation.
func (s *Server) taggedLocked(tag string) map[string][]string {
	out := map[string][]string{}
	for _, d := range s.sortedLocked() {
		if slices.Contains(d.Tags, tag) {
			out[ResourceDroplet] = append(out[ResourceDroplet], strconv.Itoa(d.ID))
		}
	}
	for _, lb := range s.sortedLBsLocked() {
		if slices.Contains(lb.Tags, tag) {
			out[ResourceLoadBalancer] = append(out[ResourceLoadBalancer], lb.ID)
		}
	}
	for _, v := range s.sortedVolumesLocked() {
		if slices.Contains(v.Tags, tag) {
			out[ResourceVolume] = append(out[ResourceVolume], v.ID)
		}
	}
	return out
}

// AddTag creates a tag, as POST /v2/tags does; an existing one is kept.
func (s *Server) AddTag(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ensureTagsLocked([]string{name})
}

// Tags returns every tag with the IDs of the resources bearing it:
// droplet IDs in decimal, then load balancer and volume UUIDs. A tag
// without resources maps to an empty slice.
func (s *Server) Tags() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.syncTagsLocked()
	out := make(map[string][]string, len(s.tags))
	for name := range s.tags {
		byType := s.taggedLocked(name)
		ids := []string{}
		for _, typ := range []string{ResourceDroplet, ResourceLoadBalancer, ResourceVolume} {
			ids = append(ids, byType[typ]...)
		}
		out[name] = ids
	}
	return out
}

// LoadBalancerTags returns the tags of a load balancer, given at creation
// or added through the tags API; nil if there is no such load balancer.
func (s *Server) LoadBalancerTags(id string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.lbs[id]
	if !ok {
		return nil
	}
	return slices.Clone(st.Tags)
}

func (s *Server) registerTags() {
	s.handle(http.MethodGet, "/v2/tags", s.listTags)
	s.handle(http.MethodPost, "/v2/tags", s.createTag)
	s.handle(http.MethodGet, "/v2/tags/{name}", s.getTag)
	s.handle(http.MethodDelete, "/v2/tags/{name}", s.deleteTag)
	s.handle(http.MethodPost, "/v2/tags/{name}/resources", s.tagResources)
	s.handle(http.MethodDelete, "/v2/tags/{name}/resources", s.untagResources)
}

// Tag documents (resources/tags/models/tags.yml, tags_metadata.yml). Every
// type the reference lists is present with its count, as in its examples;
// last_tagged_uri only once something was tagged. Load balancers, which
// the reference does not list but godo tags, count in the total only.
type wireTaggedType struct {
	Count         int    `json:"count"`
	LastTaggedURI string `json:"last_tagged_uri,omitempty"`
}

type wireTagResources struct {
	Count           int            `json:"count"`
	LastTaggedURI   string         `json:"last_tagged_uri,omitempty"`
	Droplets        wireTaggedType `json:"droplets"`
	Images          wireTaggedType `json:"images"`
	Volumes         wireTaggedType `json:"volumes"`
	VolumeSnapshots wireTaggedType `json:"volume_snapshots"`
	Databases       wireTaggedType `json:"databases"`
}

type wireTag struct {
	Name      string           `json:"name"`
	Resources wireTagResources `json:"resources"`
}

type tagsRoot struct {
	Tags  []wireTag `json:"tags"`
	Links wireLinks `json:"links"`
	Meta  wireMeta  `json:"meta"`
}

type tagRoot struct {
	Tag wireTag `json:"tag"`
}

// tagValidationError is the body of the reference's 400 for a bad tag
// name (responses/tags_bad_request.yml, error_with_root_causes.yml), not
// the usual id/message one.
type tagValidationError struct {
	Error      string   `json:"error"`
	Messages   []string `json:"messages"`
	RootCauses []string `json:"root_causes"`
}

// resourcePaths maps resource types to their API collections, for URIs.
var resourcePaths = map[string]string{
	ResourceDroplet: "droplets", ResourceLoadBalancer: "load_balancers", ResourceVolume: "volumes",
}

func (s *Server) wireTagLocked(r *http.Request, name string) wireTag {
	byType := s.taggedLocked(name)
	st := s.tags[name]
	uri := func(typ, id string) string { return baseURL(r) + "v2/" + resourcePaths[typ] + "/" + id }
	// lastOf is the last resource of typ tagged, if it still bears the
	// tag, else the newest that does.
	lastOf := func(typ string) string {
		ids := byType[typ]
		if len(ids) == 0 {
			return ""
		}
		if id := st.last[typ]; slices.Contains(ids, id) {
			return uri(typ, id)
		}
		return uri(typ, ids[len(ids)-1])
	}
	res := wireTagResources{
		Droplets: wireTaggedType{Count: len(byType[ResourceDroplet]), LastTaggedURI: lastOf(ResourceDroplet)},
		Volumes:  wireTaggedType{Count: len(byType[ResourceVolume]), LastTaggedURI: lastOf(ResourceVolume)},
	}
	types := []string{ResourceDroplet, ResourceLoadBalancer, ResourceVolume}
	for _, typ := range types {
		res.Count += len(byType[typ])
	}
	if typ, id, _ := strings.Cut(st.last[""], "/"); slices.Contains(byType[typ], id) {
		res.LastTaggedURI = uri(typ, id)
	}
	for _, typ := range types {
		res.LastTaggedURI = cmp.Or(res.LastTaggedURI, lastOf(typ))
	}
	return wireTag{Name: name, Resources: res}
}

// listTags: GET /v2/tags[?page&per_page], by name.
func (s *Server) listTags(r *http.Request, _ params) (int, any) {
	pg := parsePaging(r.URL.Query())
	s.mu.Lock()
	defer s.mu.Unlock()
	s.syncTagsLocked()
	names := make([]string, 0, len(s.tags))
	for n := range s.tags {
		names = append(names, n)
	}
	slices.Sort(names)
	lo, hi := pg.window(len(names))
	page := make([]wireTag, 0, hi-lo)
	for _, n := range names[lo:hi] {
		page = append(page, s.wireTagLocked(r, n))
	}
	return http.StatusOK, &tagsRoot{Tags: page, Links: pg.links(r, len(names)), Meta: wireMeta{Total: len(names)}}
}

// getTag: GET /v2/tags/{name}. Names are matched exactly: the reference
// says the API wants a tag's canonical capitalization.
func (s *Server) getTag(r *http.Request, p params) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.syncTagsLocked()
	if s.tags[p["name"]] == nil {
		return errNotFound()
	}
	return http.StatusOK, &tagRoot{Tag: s.wireTagLocked(r, p["name"])}
}

// createTag: POST /v2/tags {"name"}, 201. Creating a tag that exists
// answers 201 with it, under its canonical capitalization: the reference
// calls names "case stable", the first spelling being canonical.
func (s *Server) createTag(r *http.Request, _ params) (int, any) {
	var req struct {
		Name string `json:"name"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return errNotJSON(err)
	}
	if !validTagName(req.Name) {
		why := "contains invalid characters"
		switch {
		case req.Name == "":
			why = "is empty"
		case len(req.Name) > maxTagNameLen:
			why = fmt.Sprintf("is longer than %d characters", maxTagNameLen)
		}
		msg := fmt.Sprintf("Error validating resource tag: \"tag-name %q %s\"", req.Name, why)
		return http.StatusBadRequest, &tagValidationError{
			Error: msg, RootCauses: []string{"rpc error: code = InvalidArgument desc = " + msg},
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.syncTagsLocked()
	name := req.Name
	if s.tags[name] == nil {
		for n := range s.tags {
			if strings.EqualFold(n, name) {
				name = n
				break
			}
		}
	}
	s.ensureTagsLocked([]string{name})
	return http.StatusCreated, &tagRoot{Tag: s.wireTagLocked(r, name)}
}

// deleteTag: DELETE /v2/tags/{name}, 204. The reference: deleting a tag
// also untags every resource bearing it.
func (s *Server) deleteTag(_ *http.Request, p params) (int, any) {
	name := p["name"]
	s.mu.Lock()
	defer s.mu.Unlock()
	s.syncTagsLocked()
	if s.tags[name] == nil {
		return errNotFound()
	}
	delete(s.tags, name)
	drop := func(tags []string) []string {
		return slices.DeleteFunc(tags, func(t string) bool { return t == name })
	}
	for _, d := range s.droplets {
		d.Tags = drop(d.Tags)
	}
	for _, lb := range s.lbs {
		lb.Tags = drop(lb.Tags)
	}
	for _, v := range s.volumes {
		v.Tags = drop(v.Tags)
	}
	return http.StatusNoContent, nil
}

type tagResourcesRequest struct {
	Resources []struct {
		ID   string `json:"resource_id"`
		Type string `json:"resource_type"`
	} `json:"resources"`
}

// tagResources: POST /v2/tags/{name}/resources, 204. A missing tag is a
// 404 (the tag must exist first, as doctl#107 was told; DigitalOcean's CCM
// creates the tag and retries on that 404). All resources must exist, or
// none is tagged.
func (s *Server) tagResources(r *http.Request, p params) (int, any) {
	return s.changeTagResources(r, p, true)
}

// untagResources: DELETE /v2/tags/{name}/resources, 204. Resources not
// bearing the tag are ignored.
func (s *Server) untagResources(r *http.Request, p params) (int, any) {
	return s.changeTagResources(r, p, false)
}

func (s *Server) changeTagResources(r *http.Request, p params, add bool) (int, any) {
	var req tagResourcesRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return errNotJSON(err)
	}
	name := p["name"]
	s.mu.Lock()
	defer s.mu.Unlock()
	s.syncTagsLocked()
	st := s.tags[name]
	if st == nil {
		return errNotFound()
	}
	if len(req.Resources) == 0 {
		// The real API's answer (digitalocean/droplet_kit#136).
		return newError(http.StatusBadRequest, "parameter_missing", "param is missing or the value is empty: resources")
	}
	// Every resource is checked before any is changed.
	var changes []func()
	for _, res := range req.Resources {
		tags, msg := s.taggableLocked(res.Type, res.ID)
		if msg != "" {
			return errUnprocessable(msg)
		}
		typ, id := res.Type, res.ID
		changes = append(changes, func() {
			if !add {
				*tags = slices.DeleteFunc(*tags, func(t string) bool { return t == name })
				return
			}
			if !slices.Contains(*tags, name) {
				*tags = append(*tags, name)
			}
			st.last[typ] = id
			st.last[""] = typ + "/" + id
		})
	}
	for _, change := range changes {
		change()
	}
	return http.StatusNoContent, nil
}

// taggableLocked finds the tag list of a resource, or says why it cannot
// be tagged.
func (s *Server) taggableLocked(typ, id string) (*[]string, string) {
	switch typ {
	case ResourceDroplet:
		if n, ok := parseID(id); ok {
			if d, ok := s.droplets[n]; ok {
				return &d.Tags, ""
			}
		}
	case ResourceLoadBalancer:
		if lb, ok := s.lbs[id]; ok {
			return &lb.Tags, ""
		}
	case ResourceVolume:
		if v, ok := s.volumes[id]; ok {
			return &v.Tags, ""
		}
	default:
		if !slices.Contains(knownResourceTypes, typ) {
			return nil, oneOf("resource_type", typ, knownResourceTypes)
		}
	}
	return nil, fmt.Sprintf("%s %s not found", typ, id)
}
