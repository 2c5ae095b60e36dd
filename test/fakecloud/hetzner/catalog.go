package hetzner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// The catalogue: the real locations, their (legacy) datacenters, a few
// server types and the load balancer types, with the API's IDs.

type location struct {
	ID          int64   `json:"id"`
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Country     string  `json:"country"`
	City        string  `json:"city"`
	Latitude    float64 `json:"latitude"`
	Longitude   float64 `json:"longitude"`
	NetworkZone string  `json:"network_zone"`
}

var locations = []location{
	{1, "fsn1", "Falkenstein DC Park 1", "DE", "Falkenstein", 50.47612, 12.370071, "eu-central"},
	{2, "nbg1", "Nuremberg DC Park 1", "DE", "Nuremberg", 49.452102, 11.076665, "eu-central"},
	{3, "hel1", "Helsinki DC Park 1", "FI", "Helsinki", 60.169855, 24.938379, "eu-central"},
	{4, "ash", "Ashburn, VA", "US", "Ashburn, VA", 39.045821, -77.487073, "us-east"},
	{5, "hil", "Hillsboro, OR", "US", "Hillsboro, OR", 45.54222, -122.951924, "us-west"},
	{6, "sin", "Singapore", "SG", "Singapore", 1.283333, 103.833333, "ap-southeast"},
}

// datacenterNames are the legacy datacenters, by location: hcloud CCM's
// zone label still uses them.
var datacenterNames = map[string]struct {
	id   int64
	name string
	desc string
}{
	"fsn1": {4, "fsn1-dc14", "Falkenstein 1 virtual DC 14"},
	"nbg1": {2, "nbg1-dc3", "Nuremberg 1 virtual DC 3"},
	"hel1": {3, "hel1-dc2", "Helsinki 1 virtual DC 2"},
	"ash":  {5, "ash-dc1", "Ashburn virtual DC 1"},
	"hil":  {6, "hil-dc1", "Hillsboro virtual DC 1"},
	"sin":  {7, "sin-dc1", "Singapore virtual DC 1"},
}

// DatacenterName is the legacy datacenter of a location ("fsn1-dc14"), or
// "" for an unknown location.
func DatacenterName(loc string) string { return datacenterNames[loc].name }

func findLocation(idOrName string) (location, bool) {
	for _, l := range locations {
		if l.Name == idOrName || strconv.FormatInt(l.ID, 10) == idOrName {
			return l, true
		}
	}
	return location{}, false
}

type price struct {
	Net   string `json:"net"`
	Gross string `json:"gross"`
}

type wirePrice struct {
	Location          string `json:"location"`
	PriceHourly       price  `json:"price_hourly"`
	PriceMonthly      price  `json:"price_monthly"`
	IncludedTraffic   uint64 `json:"included_traffic"`
	PricePerTBTraffic price  `json:"price_per_tb_traffic"`
}

// prices gives every location the monthly net price (VAT 19%), with the
// traffic each region includes.
func prices(monthly float64) []wirePrice {
	p := func(net float64) price {
		return price{Net: fmt.Sprintf("%.10f", net), Gross: fmt.Sprintf("%.16f", net*1.19)}
	}
	out := make([]wirePrice, 0, len(locations))
	for _, l := range locations {
		traffic := uint64(20) << 40
		switch l.NetworkZone {
		case "us-east", "us-west":
			traffic = 1 << 40
		case "ap-southeast":
			traffic = 1 << 39
		}
		out = append(out, wirePrice{Location: l.Name, PriceHourly: p(monthly / 720), PriceMonthly: p(monthly),
			IncludedTraffic: traffic, PricePerTBTraffic: p(1)})
	}
	return out
}

type wireServerTypeLocation struct {
	ID          int64  `json:"id"`
	Name        string `json:"name"`
	Deprecation any    `json:"deprecation"`
	Available   bool   `json:"available"`
	Recommended bool   `json:"recommended"`
}

type wireServerType struct {
	ID              int64                    `json:"id"`
	Name            string                   `json:"name"`
	Description     string                   `json:"description"`
	Category        string                   `json:"category"`
	Cores           int                      `json:"cores"`
	Memory          float64                  `json:"memory"`
	Disk            int                      `json:"disk"`
	Deprecated      bool                     `json:"deprecated"`
	Deprecation     any                      `json:"deprecation"`
	Prices          []wirePrice              `json:"prices"`
	StorageType     string                   `json:"storage_type"`
	CPUType         string                   `json:"cpu_type"`
	Architecture    string                   `json:"architecture"`
	IncludedTraffic int64                    `json:"included_traffic"`
	Locations       []wireServerTypeLocation `json:"locations"`
}

func serverType(id int64, name, category string, cores int, mem float64, disk int, cpu, arch string, monthly float64) wireServerType {
	t := wireServerType{ID: id, Name: name, Description: strings.ToUpper(name), Category: category,
		Cores: cores, Memory: mem, Disk: disk, Prices: prices(monthly), StorageType: "local", CPUType: cpu, Architecture: arch}
	for _, l := range locations {
		t.Locations = append(t.Locations, wireServerTypeLocation{ID: l.ID, Name: l.Name, Available: true, Recommended: true})
	}
	return t
}

var serverTypes = []wireServerType{
	serverType(22, "cpx11", "regular_purpose", 2, 2, 40, "shared", "x86", 4.35),
	serverType(23, "cpx21", "regular_purpose", 3, 4, 80, "shared", "x86", 7.55),
	serverType(45, "cax11", "cost_optimized", 2, 4, 40, "shared", "arm", 3.79),
	serverType(96, "ccx13", "general_purpose", 2, 8, 80, "dedicated", "x86", 12.49),
	serverType(104, "cx22", "cost_optimized", 2, 4, 40, "shared", "x86", 3.79),
	serverType(105, "cx32", "cost_optimized", 4, 8, 80, "shared", "x86", 6.80),
}

func findServerType(idOrName string) (wireServerType, bool) {
	for _, t := range serverTypes {
		if t.Name == idOrName || strconv.FormatInt(t.ID, 10) == idOrName {
			return t, true
		}
	}
	return wireServerType{}, false
}

// lbType is a load balancer type with the limits the API enforces.
type lbType struct {
	ID                      int64       `json:"id"`
	Name                    string      `json:"name"`
	Description             string      `json:"description"`
	MaxConnections          int         `json:"max_connections"`
	MaxServices             int         `json:"max_services"`
	MaxTargets              int         `json:"max_targets"`
	MaxAssignedCertificates int         `json:"max_assigned_certificates"`
	Deprecated              *string     `json:"deprecated"`
	Deprecation             any         `json:"deprecation"`
	Prices                  []wirePrice `json:"prices"`
}

var lbTypes = []lbType{
	{ID: 1, Name: "lb11", Description: "LB11", MaxConnections: 10000, MaxServices: 5, MaxTargets: 25, MaxAssignedCertificates: 10, Prices: prices(5.39)},
	{ID: 2, Name: "lb21", Description: "LB21", MaxConnections: 20000, MaxServices: 15, MaxTargets: 75, MaxAssignedCertificates: 25, Prices: prices(16.40)},
	{ID: 3, Name: "lb31", Description: "LB31", MaxConnections: 40000, MaxServices: 30, MaxTargets: 150, MaxAssignedCertificates: 50, Prices: prices(32.90)},
}

func findLBType(idOrName string) (lbType, bool) {
	for _, t := range lbTypes {
		if t.Name == idOrName || strconv.FormatInt(t.ID, 10) == idOrName {
			return t, true
		}
	}
	return lbType{}, false
}

// idOrName is a request field that names a resource by ID (a number or
// a numeric string) or by name, as load_balancer_type does.
type idOrName string

func (v *idOrName) UnmarshalJSON(b []byte) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var x any
	if err := d.Decode(&x); err != nil {
		return err
	}
	switch t := x.(type) {
	case string:
		*v = idOrName(t)
	case json.Number:
		*v = idOrName(t.String())
	case nil:
		*v = ""
	default:
		return &json.UnmarshalTypeError{Value: string(b), Type: reflect.TypeFor[idOrName]()}
	}
	return nil
}

// The image every server runs, as the API renders a system image.
type wireImage struct {
	ID           int64             `json:"id"`
	Type         string            `json:"type"`
	Status       string            `json:"status"`
	Name         string            `json:"name"`
	Description  string            `json:"description"`
	ImageSize    *float64          `json:"image_size"`
	DiskSize     float64           `json:"disk_size"`
	Created      string            `json:"created"`
	CreatedFrom  any               `json:"created_from"`
	BoundTo      *int64            `json:"bound_to"`
	OSFlavor     string            `json:"os_flavor"`
	OSVersion    string            `json:"os_version"`
	RapidDeploy  bool              `json:"rapid_deploy"`
	Protection   wireProtection    `json:"protection"`
	Deprecated   *string           `json:"deprecated"`
	Deprecation  any               `json:"deprecation"`
	Deleted      *string           `json:"deleted"`
	Labels       map[string]string `json:"labels"`
	Architecture string            `json:"architecture"`
}

func imageFor(arch string) wireImage {
	id := int64(161547269)
	if arch == "arm" {
		id = 161547270
	}
	return wireImage{ID: id, Type: "system", Status: "available", Name: "ubuntu-24.04", Description: "Ubuntu 24.04",
		DiskSize: 5, Created: stamp(time.Date(2024, 4, 25, 12, 0, 0, 0, time.UTC)), OSFlavor: "ubuntu", OSVersion: "24.04",
		RapidDeploy: true, Labels: map[string]string{}, Architecture: arch}
}

type wireDatacenter struct {
	ID          int64    `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Location    location `json:"location"`
	ServerTypes struct {
		Supported             []int64 `json:"supported"`
		Available             []int64 `json:"available"`
		AvailableForMigration []int64 `json:"available_for_migration"`
	} `json:"server_types"`
}

func datacenters() []wireDatacenter {
	var ids []int64
	for _, t := range serverTypes {
		ids = append(ids, t.ID)
	}
	var out []wireDatacenter
	for _, l := range locations {
		dc := datacenterNames[l.Name]
		w := wireDatacenter{ID: dc.id, Name: dc.name, Description: dc.desc, Location: l}
		w.ServerTypes.Supported, w.ServerTypes.Available, w.ServerTypes.AvailableForMigration = ids, ids, ids
		out = append(out, w)
	}
	return out
}

// datacentersGone is the changelog entry of the datacenters' removal.
const datacentersGone = "https://docs.hetzner.cloud/changelog#2026-06-02-datacenters-deprecated"

func (s *Server) registerCatalog() {
	catalog(s, "locations", "location", func() []location { return locations }, func(l location) (int64, string) { return l.ID, l.Name })
	catalog(s, "server_types", "server_type", func() []wireServerType { return serverTypes },
		func(t wireServerType) (int64, string) { return t.ID, t.Name })
	catalog(s, "load_balancer_types", "load_balancer_type", func() []lbType { return lbTypes },
		func(t lbType) (int64, string) { return t.ID, t.Name })
	catalog(s, "datacenters", "datacenter", datacenters, func(d wireDatacenter) (int64, string) { return d.ID, d.Name })
}

// catalog registers the list and get routes of a read-only collection.
// The datacenters answer 410 unless ServeDatacenters turned them back on.
func catalog[T any](s *Server, plural, singular string, all func() []T, key func(T) (int64, string)) {
	gone := func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return plural == "datacenters" && !s.datacenters
	}
	s.handle(http.MethodGet, "/v1/"+plural, func(r *http.Request, _ params) (int, any) {
		if gone() {
			return errGone(datacentersGone)
		}
		lq, st, body := parseList(r)
		if st != 0 {
			return st, body
		}
		var out []T
		for _, v := range all() {
			if _, name := key(v); lq.keep(name, nil) {
				out = append(out, v)
			}
		}
		return page(r, lq, plural, out, func(v T) T { return v })
	})
	s.handle(http.MethodGet, "/v1/"+plural+"/{id}", func(_ *http.Request, p params) (int, any) {
		if gone() {
			return errGone(datacentersGone)
		}
		id, _ := parseID(p["id"])
		for _, v := range all() {
			if vid, _ := key(v); vid == id {
				return http.StatusOK, map[string]any{singular: v}
			}
		}
		return errNotFound(fmt.Sprintf("%s with ID '%s' not found", singular, p["id"]))
	})
}
