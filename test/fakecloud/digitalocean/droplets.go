package digitalocean

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Droplet statuses, as the API spells them.
const (
	StatusNew     = "new"
	StatusActive  = "active"
	StatusOff     = "off"
	StatusArchive = "archive"
)

// NoIP, as a droplet's PublicIPv4 or PrivateIPv4, makes AddDroplet leave it
// without that address instead of allocating one.
const NoIP = "none"

// First ids handed out, in the real API's ranges so they look plausible.
const (
	firstDropletID = 400000001
	firstActionID  = 2000000001
)

// Droplet is the fake's state for one droplet. The API renders it with the
// nested region, size and image objects built from the slugs.
type Droplet struct {
	ID       int
	Name     string
	Status   string // StatusNew, StatusActive, StatusOff or StatusArchive
	SizeSlug string
	Region   string // region slug
	Image    string // image slug
	Memory   int    // MiB
	VCPUs    int
	Disk     int // GiB
	// Addresses. A droplet reports them only once it has left "new", as a
	// freshly created one has none yet.
	PrivateIPv4 string
	PublicIPv4  string
	IPv6        string // "" = no IPv6
	VPCUUID     string
	Tags        []string
	CreatedAt   time.Time
}

func (d Droplet) clone() Droplet {
	d.Tags = slices.Clone(d.Tags)
	return d
}

func validStatus(s string) bool {
	switch s {
	case StatusNew, StatusActive, StatusOff, StatusArchive:
		return true
	}
	return false
}

// AddDroplet stores a droplet and returns it as stored. Unset fields get
// defaults: a fresh ID, status "active", size s-1vcpu-1gb (with its memory,
// vCPUs and disk), region nyc3, an Ubuntu image, the region's default VPC,
// newly allocated public and private IPv4 addresses (unless NoIP), and the
// current time. IPv6 stays as given. It panics if the ID is taken or the
// status invalid: both are mistakes in the calling test.
func (s *Server) AddDroplet(d Droplet) Droplet {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d.ID != 0 {
		if _, taken := s.droplets[d.ID]; taken {
			panic(fmt.Sprintf("digitalocean fake: droplet id %d already exists", d.ID))
		}
	}
	if d.Status == "" {
		d.Status = StatusActive
	}
	if !validStatus(d.Status) {
		panic(fmt.Sprintf("digitalocean fake: invalid droplet status %q", d.Status))
	}
	return s.addLocked(d)
}

// addLocked fills defaults and stores d; the caller has validated it.
func (s *Server) addLocked(d Droplet) Droplet {
	if d.ID == 0 {
		for s.droplets[s.nextDropletID] != nil {
			s.nextDropletID++
		}
		d.ID = s.nextDropletID
		s.nextDropletID++
	}
	if d.Name == "" {
		d.Name = fmt.Sprintf("droplet-%d", d.ID)
	}
	if d.SizeSlug == "" {
		d.SizeSlug = defaultSize
	}
	if sz, ok := findSize(d.SizeSlug); ok {
		d.Memory = cmp.Or(d.Memory, sz.memory)
		d.VCPUs = cmp.Or(d.VCPUs, sz.vcpus)
		d.Disk = cmp.Or(d.Disk, sz.disk)
	}
	d.Region = cmp.Or(d.Region, defaultRegion)
	d.Image = cmp.Or(d.Image, defaultImage)
	d.VPCUUID = cmp.Or(d.VPCUUID, defaultVPC(d.Region))
	if d.PublicIPv4 == "" || d.PrivateIPv4 == "" {
		public, private := allocIPv4(s.nextAddr)
		s.nextAddr++
		d.PublicIPv4 = cmp.Or(d.PublicIPv4, public)
		d.PrivateIPv4 = cmp.Or(d.PrivateIPv4, private)
	}
	if d.CreatedAt.IsZero() {
		d.CreatedAt = s.now()
	}
	d.CreatedAt = d.CreatedAt.UTC().Truncate(time.Second)
	if d.Tags == nil {
		d.Tags = []string{}
	}
	d = d.clone()
	s.droplets[d.ID] = &d
	return d.clone()
}

// Droplet returns the droplet with the given ID.
func (s *Server) Droplet(id int) (Droplet, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	d, ok := s.droplets[id]
	if !ok {
		return Droplet{}, false
	}
	return d.clone(), true
}

// Droplets returns every droplet, sorted by ID.
func (s *Server) Droplets() []Droplet {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	out := make([]Droplet, 0, len(s.droplets))
	for _, d := range s.sortedLocked() {
		out = append(out, d.clone())
	}
	return out
}

// SetDropletStatus sets a droplet's status directly, as if it changed
// outside the API (a crash, a console power-off).
func (s *Server) SetDropletStatus(id int, status string) error {
	if !validStatus(status) {
		return fmt.Errorf("digitalocean fake: invalid droplet status %q", status)
	}
	return s.UpdateDroplet(id, func(d *Droplet) { d.Status = status })
}

// UpdateDroplet changes a droplet in place. The ID cannot change.
func (s *Server) UpdateDroplet(id int, update func(*Droplet)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	d, ok := s.droplets[id]
	if !ok {
		return fmt.Errorf("digitalocean fake: no droplet %d", id)
	}
	c := d.clone()
	update(&c)
	if c.ID != id {
		return errors.New("digitalocean fake: UpdateDroplet cannot change the ID")
	}
	if !validStatus(c.Status) {
		return fmt.Errorf("digitalocean fake: invalid droplet status %q", c.Status)
	}
	*d = c
	return nil
}

// RemoveDroplet deletes a droplet, reporting whether it existed.
func (s *Server) RemoveDroplet(id int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.droplets[id]
	delete(s.droplets, id)
	if ok {
		s.forgetDropletLocked(id)
	}
	return ok
}

func (s *Server) sortedLocked() []*Droplet {
	out := make([]*Droplet, 0, len(s.droplets))
	for _, d := range s.droplets {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b *Droplet) int { return a.ID - b.ID })
	return out
}

func (s *Server) registerDroplets() {
	s.handle(http.MethodGet, "/v2/droplets", s.listDroplets)
	s.handle(http.MethodPost, "/v2/droplets", s.createDroplets)
	s.handle(http.MethodGet, "/v2/droplets/{id}", s.getDroplet)
	s.handle(http.MethodDelete, "/v2/droplets/{id}", s.deleteDroplet)
}

// listDroplets: GET /v2/droplets[?page&per_page&tag_name&name]. name is an
// exact, case-insensitive match, as godo documents for ListByName.
func (s *Server) listDroplets(r *http.Request, _ params) (int, any) {
	q := r.URL.Query()
	pg := parsePaging(q)
	tag, name := q.Get("tag_name"), q.Get("name")

	s.mu.Lock()
	s.settleLocked()
	var all []wireDroplet
	for _, d := range s.sortedLocked() {
		if tag != "" && !slices.Contains(d.Tags, tag) {
			continue
		}
		if name != "" && !strings.EqualFold(d.Name, name) {
			continue
		}
		all = append(all, wireDropletOf(d))
	}
	s.mu.Unlock()

	lo, hi := pg.window(len(all))
	page := all[lo:hi]
	if page == nil {
		page = []wireDroplet{}
	}
	return http.StatusOK, &dropletsRoot{
		Droplets: page,
		Links:    pg.links(r, len(all)),
		Meta:     wireMeta{Total: len(all)},
	}
}

// getDroplet: GET /v2/droplets/{id}.
func (s *Server) getDroplet(_ *http.Request, p params) (int, any) {
	id, ok := parseID(p["id"])
	if !ok {
		return errNotFound()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	d, ok := s.droplets[id]
	if !ok {
		return errNotFound()
	}
	return http.StatusOK, &dropletRoot{Droplet: wireDropletOf(d)}
}

// deleteDroplet: DELETE /v2/droplets/{id}, 204 without a body.
func (s *Server) deleteDroplet(_ *http.Request, p params) (int, any) {
	id, ok := parseID(p["id"])
	if !ok || !s.RemoveDroplet(id) {
		return errNotFound()
	}
	return http.StatusNoContent, nil
}

// createRequest is the body of POST /v2/droplets, single (name) or
// multiple (names) form. Fields the fake does not model are ignored.
type createRequest struct {
	Name    string          `json:"name"`
	Names   []string        `json:"names"`
	Region  string          `json:"region"`
	Size    string          `json:"size"`
	Image   json.RawMessage `json:"image"` // a slug or a numeric id
	IPv6    bool            `json:"ipv6"`
	Tags    []string        `json:"tags"`
	VPCUUID string          `json:"vpc_uuid"`
}

// maxMultiCreate is the API's limit on names in one request.
const maxMultiCreate = 10

// createDroplets: POST /v2/droplets. Answers 202 with the droplets in
// status "new" and a "create" action link each; they turn active after the
// activation delay.
func (s *Server) createDroplets(r *http.Request, _ params) (int, any) {
	var req createRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return errNotJSON(err)
	}
	multi := req.Names != nil
	names := req.Names
	if !multi {
		names = []string{req.Name}
	}
	if len(names) == 0 || slices.Contains(names, "") {
		return errUnprocessable("Name is required.")
	}
	if len(names) > maxMultiCreate {
		return errUnprocessable(fmt.Sprintf("A maximum of %d Droplets can be created at once.", maxMultiCreate))
	}
	// Messages as the real API words them for these mistakes.
	if _, ok := findRegion(req.Region); !ok {
		return errUnprocessable("You specified an invalid region for Droplet creation.")
	}
	size, ok := findSize(req.Size)
	if !ok {
		return errUnprocessable("You specified an invalid size for Droplet creation.")
	}
	image, ok := parseImage(req.Image)
	if !ok {
		return errUnprocessable("You specified an invalid image for Droplet creation.")
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	now := s.now()
	base := baseURL(r)
	created := make([]wireDroplet, 0, len(names))
	var links wireLinks
	for _, name := range names {
		d := Droplet{
			Name: name, Status: StatusNew, SizeSlug: size.slug, Region: req.Region,
			Image: image.slug, Memory: size.memory, VCPUs: size.vcpus, Disk: size.disk,
			VPCUUID: req.VPCUUID, Tags: slices.Clone(req.Tags), CreatedAt: now,
		}
		d = s.addLocked(d)
		if req.IPv6 {
			s.droplets[d.ID].IPv6 = allocIPv6(d.ID)
		}
		a := s.startActionLocked("create", s.droplets[d.ID], s.activationDelay)
		created = append(created, wireDropletOf(s.droplets[d.ID]))
		links.Actions = append(links.Actions, wireActionLink{
			ID: a.id, Rel: "create", HREF: base + "v2/actions/" + strconv.Itoa(a.id),
		})
	}
	// No settling here: the response shows the droplets as just created.
	if multi {
		return http.StatusAccepted, &createdDropletsRoot{Droplets: created, Links: links}
	}
	return http.StatusAccepted, &dropletRoot{Droplet: created[0], Links: &links}
}

func parseImage(raw json.RawMessage) (imageInfo, bool) {
	var slug string
	if err := json.Unmarshal(raw, &slug); err == nil {
		return findImageBySlug(slug)
	}
	var id int
	if err := json.Unmarshal(raw, &id); err == nil {
		return findImageByID(id)
	}
	return imageInfo{}, false
}

// parseID accepts only plain decimal ids: anything else names no droplet.
func parseID(s string) (int, bool) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	id, err := strconv.Atoi(s)
	return id, err == nil
}

// wireDropletOf renders a droplet as the API does.
func wireDropletOf(d *Droplet) wireDroplet {
	features := []string{}
	if d.PrivateIPv4 != "" && d.PrivateIPv4 != NoIP {
		features = append(features, "private_networking")
	}
	if d.IPv6 != "" {
		features = append(features, "ipv6")
	}
	return wireDroplet{
		ID:          d.ID,
		Name:        d.Name,
		Memory:      d.Memory,
		VCPUs:       d.VCPUs,
		Disk:        d.Disk,
		Status:      d.Status,
		CreatedAt:   d.CreatedAt.UTC().Format(time.RFC3339),
		Features:    features,
		BackupIDs:   []int{},
		SnapshotIDs: []int{},
		Image:       wireImageOf(d.Image, d.Region),
		VolumeIDs:   []string{},
		Size:        wireSizeOf(d),
		SizeSlug:    d.SizeSlug,
		Networks:    wireNetworksOf(d),
		Region:      wireRegionOf(d.Region),
		Tags:        slices.Clone(d.Tags),
		VPCUUID:     d.VPCUUID,
	}
}

func wireRegionOf(slug string) wireRegion {
	r, ok := findRegion(slug)
	if !ok {
		r = regionInfo{slug: slug, name: slug}
	}
	return wireRegion{
		Slug:      r.slug,
		Name:      r.name,
		Sizes:     sizeSlugs(),
		Available: true,
		Features:  slices.Clone(regionFeatures),
	}
}

func wireSizeOf(d *Droplet) wireSize {
	sz, ok := findSize(d.SizeSlug)
	if !ok {
		sz = sizeInfo{slug: d.SizeSlug, memory: d.Memory, vcpus: d.VCPUs, disk: d.Disk}
	}
	return wireSize{
		Slug:         sz.slug,
		Memory:       sz.memory,
		VCPUs:        sz.vcpus,
		Disk:         sz.disk,
		Transfer:     sz.transfer,
		PriceMonthly: sz.priceMonthly,
		PriceHourly:  sz.priceHourly,
		Regions:      regionSlugs(),
		Available:    true,
		Description:  sz.description,
	}
}

func wireImageOf(slug, region string) wireImage {
	img, ok := findImageBySlug(slug)
	if !ok {
		img = imageInfo{slug: slug, name: slug}
	}
	regs := regionSlugs()
	if !slices.Contains(regs, region) {
		regs = append(regs, region)
	}
	return wireImage{
		ID:            img.id,
		Name:          img.name,
		Distribution:  img.distribution,
		Slug:          img.slug,
		Public:        true,
		Regions:       regs,
		CreatedAt:     imagesCreated.Format(time.RFC3339),
		Type:          "base",
		MinDiskSize:   img.minDisk,
		SizeGigabytes: img.sizeGB,
		Description:   "",
		Tags:          []string{},
		Status:        "available",
		ErrorMessage:  "",
	}
}
