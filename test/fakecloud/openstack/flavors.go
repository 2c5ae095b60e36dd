package openstack

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// Flavor is a Nova flavor: a server's size.
type Flavor struct {
	ID          string
	Name        string
	VCPUs       int
	RAM         int // MiB
	Disk        int // GiB
	Ephemeral   int // GiB
	Swap        int // MiB
	ExtraSpecs  map[string]string
	Description string
}

func (f Flavor) clone() Flavor {
	f.ExtraSpecs = maps.Clone(f.ExtraSpecs)
	if f.ExtraSpecs == nil {
		f.ExtraSpecs = map[string]string{}
	}
	return f
}

// defaultFlavors are devstack's.
var defaultFlavors = []Flavor{
	{ID: "1", Name: "m1.tiny", VCPUs: 1, RAM: 512, Disk: 1},
	{ID: "2", Name: "m1.small", VCPUs: 1, RAM: 2048, Disk: 20},
	{ID: "3", Name: "m1.medium", VCPUs: 2, RAM: 4096, Disk: 40},
	{ID: "4", Name: "m1.large", VCPUs: 4, RAM: 8192, Disk: 80},
	{ID: "5", Name: "m1.xlarge", VCPUs: 8, RAM: 16384, Disk: 160},
	{ID: "42", Name: "m1.nano", VCPUs: 1, RAM: 128, Disk: 1},
	{ID: "84", Name: "m1.micro", VCPUs: 1, RAM: 192, Disk: 1},
}

// AddFlavor adds a flavor, shared by every region. It panics on an empty
// or taken ID: a mistake in the calling test. Names may repeat, as in
// Nova, but are best kept unique: AddServer finds flavors by them.
func (s *Server) AddFlavor(f Flavor) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.ID == "" || s.flavors[f.ID] != nil {
		panic(fmt.Sprintf("openstack fake: flavor ID %q is empty or taken", f.ID))
	}
	f = f.clone()
	s.flavors[f.ID] = &f
}

// DeleteFlavor deletes a flavor. Servers of it keep their copy, which
// Nova shows from 2.47, but GET /flavors/{id} answers 404 for it.
func (s *Server) DeleteFlavor(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.flavors[id] == nil {
		return fmt.Errorf("openstack fake: no flavor %s", id)
	}
	delete(s.flavors, id)
	return nil
}

// Flavors returns every flavor, by ID as Nova sorts them.
func (s *Server) Flavors() []Flavor {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Flavor
	for _, f := range s.sortedFlavorsLocked() {
		out = append(out, f.clone())
	}
	return out
}

func (s *Server) sortedFlavorsLocked() []*Flavor {
	fs := slices.Collect(maps.Values(s.flavors))
	slices.SortFunc(fs, func(a, b *Flavor) int { return strings.Compare(a.ID, b.ID) })
	return fs
}

// flavorByRefLocked finds a flavor by ID, else by name.
func (s *Server) flavorByRefLocked(ref string) *Flavor {
	if f := s.flavors[ref]; f != nil {
		return f
	}
	for _, f := range s.sortedFlavorsLocked() {
		if f.Name == ref {
			return f
		}
	}
	return nil
}

func (s *Server) registerFlavors() {
	s.handle(svcCompute, http.MethodGet, "/compute/v2.1/flavors/detail", FlavorsList, s.listFlavors)
	s.handle(svcCompute, http.MethodGet, "/compute/v2.1/flavors/{id}", FlavorsGet, s.getFlavor)
}

// listFlavors: GET /flavors/detail, paged by limit and marker, with the
// minRam and minDisk filters.
func (s *Server) listFlavors(c *call) (int, any) {
	q := c.r.URL.Query()
	minRAM, minDisk := nonNegative(q.Get("minRam")), nonNegative(q.Get("minDisk"))
	if minRAM < 0 {
		return errNova(http.StatusBadRequest, "Invalid minRam filter ["+q.Get("minRam")+"]")
	}
	if minDisk < 0 {
		return errNova(http.StatusBadRequest, "Invalid minDisk filter ["+q.Get("minDisk")+"]")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	page, links, st, body := novaPage(c, "flavors/detail", s.sortedFlavorsLocked(),
		func(f *Flavor) string { return f.ID },
		func(f *Flavor) bool { return f.RAM >= minRAM && f.Disk >= minDisk })
	if st != 0 {
		return st, body
	}
	out := make([]wireFlavor, 0, len(page))
	for _, f := range page {
		out = append(out, wireFlavorOf(c, f))
	}
	doc := map[string]any{"flavors": out}
	if links != nil {
		doc["flavors_links"] = links
	}
	return http.StatusOK, doc
}

// nonNegative reads a non-negative filter value; "" is 0 and anything else
// that is not a number -1.
func nonNegative(v string) int {
	if v == "" {
		return 0
	}
	n := 0
	for _, r := range v {
		if r < '0' || r > '9' {
			return -1
		}
		n = n*10 + int(r-'0')
	}
	return n
}

func (s *Server) getFlavor(c *call) (int, any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.flavors[c.p["id"]]
	if f == nil {
		return errNova(http.StatusNotFound, "Flavor "+c.p["id"]+" could not be found.")
	}
	return http.StatusOK, map[string]any{"flavor": wireFlavorOf(c, f)}
}

func wireFlavorOf(c *call, f *Flavor) wireFlavor {
	w := wireFlavor{ID: f.ID, Name: f.Name, RAM: f.RAM, Disk: f.Disk, Swap: f.Swap, Ephemeral: f.Ephemeral,
		VCPUs: f.VCPUs, IsPublic: true, RxTxFactor: 1.0, Links: novaLinks(c, "flavors", f.ID)}
	if f.Swap == 0 && !c.mv.atLeast(75) {
		w.Swap = ""
	}
	if c.mv.atLeast(55) {
		w.Description = (*string)(nil)
		if f.Description != "" {
			w.Description = f.Description
		}
	}
	if c.mv.atLeast(61) {
		w.ExtraSpecs = f.clone().ExtraSpecs
	}
	return w
}

// novaLinks are a resource's self link (versioned) and bookmark link (not).
func novaLinks(c *call, collection, id string) []wireLink {
	return []wireLink{
		{Rel: "self", Href: c.root + "/compute/v2.1/" + collection + "/" + id},
		{Rel: "bookmark", Href: c.root + "/compute/" + collection + "/" + id},
	}
}
