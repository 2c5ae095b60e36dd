package gce

import (
	"cmp"
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"
)

// Zones, regions, networks and subnetworks: set up by Go-side helpers and
// read through the API (zones and regions list/get, networks and
// subnetworks list/get).

// Zone is a zone as the helpers take and give it.
type Zone struct {
	ID     uint64
	Name   string
	Region string
	Status string // "UP" or "DOWN"
}

type zoneState struct {
	Zone
	created time.Time
}

type regionState struct {
	id      uint64
	name    string
	status  string
	created time.Time
}

// Network is a VPC network.
type Network struct {
	ID                    uint64
	Name                  string
	AutoCreateSubnetworks bool
	MTU                   int // default 1460
}

type networkState struct {
	Network
	created time.Time
}

// Subnetwork is a regional subnetwork of a network.
type Subnetwork struct {
	ID             uint64
	Name           string
	Region         string
	Network        string // network name
	IPCidrRange    string // e.g. "10.128.0.0/20"
	GatewayAddress string // default: the range's first host
	// SecondaryRanges are alias ranges (pods, services).
	SecondaryRanges []SecondaryRange
	// StackType is IPV4_ONLY (the default) or IPV4_IPV6; IPv6 subnetworks
	// have an ExternalIPv6Prefix or InternalIPv6Prefix, a /64, by
	// IPv6AccessType (default INTERNAL). An empty prefix gets a default
	// from the id: in fd20::/20 (ULA, as GCE's) for INTERNAL, in
	// 2001:db8::/32 for EXTERNAL.
	StackType          string
	IPv6AccessType     string // EXTERNAL or INTERNAL
	ExternalIPv6Prefix string
	InternalIPv6Prefix string
}

// SecondaryRange is a subnetwork's secondary range.
type SecondaryRange struct {
	RangeName   string
	IPCidrRange string
}

type subnetState struct {
	Subnetwork
	prefix  netip.Prefix
	ipv6    netip.Prefix // the IPv6 /64; invalid for IPV4_ONLY
	created time.Time
}

// AddRegion adds a region (with no zones) if it does not exist.
func (s *Server) AddRegion(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addRegionLocked(name)
}

func (s *Server) addRegionLocked(name string) *regionState {
	if r := s.regions[name]; r != nil {
		return r
	}
	r := &regionState{id: s.newIDLocked(), name: name, status: "UP", created: s.now()}
	s.regions[name] = r
	return r
}

// AddZone adds a zone to a region, creating the region if needed.
func (s *Server) AddZone(region, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addRegionLocked(region)
	if z := s.zones[name]; z != nil {
		if z.Region != region {
			panic(fmt.Sprintf("gce fake: zone %s is in region %s, not %s", name, z.Region, region))
		}
		return
	}
	s.zones[name] = &zoneState{Zone: Zone{ID: s.newIDLocked(), Name: name, Region: region, Status: "UP"}, created: s.now()}
}

// SetZoneStatus marks a zone UP or DOWN.
func (s *Server) SetZoneStatus(name, status string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	z := s.zones[name]
	if z == nil {
		return fmt.Errorf("gce fake: no zone %s", name)
	}
	z.Status = status
	return nil
}

// Zones returns the zones, sorted by name.
func (s *Server) Zones() []Zone {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Zone, 0, len(s.zones))
	for _, z := range s.zones {
		out = append(out, z.Zone)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (s *Server) regionZonesLocked(region string) []string {
	var out []string
	for _, z := range s.zones {
		if z.Region == region {
			out = append(out, z.Name)
		}
	}
	sort.Strings(out)
	return out
}

// AddNetwork adds a network and returns it with its id.
func (s *Server) AddNetwork(n Network) Network {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.networks[n.Name] != nil {
		panic(fmt.Sprintf("gce fake: network %s already exists", n.Name))
	}
	if n.ID == 0 {
		n.ID = s.newIDLocked()
	}
	n.MTU = cmp.Or(n.MTU, 1460)
	s.networks[n.Name] = &networkState{Network: n, created: s.now()}
	return n
}

// AddSubnetwork adds a subnetwork and returns it as stored, IPv6 defaults
// filled. It panics on a bad range or IPv6 setting or an unknown region or
// network: mistakes in the calling test.
func (s *Server) AddSubnetwork(sn Subnetwork) Subnetwork {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.regions[sn.Region] == nil {
		panic(fmt.Sprintf("gce fake: no region %q", sn.Region))
	}
	sn.Network = cmp.Or(sn.Network, DefaultNetwork)
	if s.networks[sn.Network] == nil {
		panic(fmt.Sprintf("gce fake: no network %q", sn.Network))
	}
	key := sn.Region + "/" + sn.Name
	if s.subnets[key] != nil {
		panic(fmt.Sprintf("gce fake: subnetwork %s already exists", key))
	}
	pfx, err := netip.ParsePrefix(sn.IPCidrRange)
	if err != nil || !pfx.Addr().Is4() || pfx.Masked() != pfx {
		panic(fmt.Sprintf("gce fake: bad subnetwork range %q", sn.IPCidrRange))
	}
	if sn.ID == 0 {
		sn.ID = s.newIDLocked()
	}
	if sn.GatewayAddress == "" {
		sn.GatewayAddress = pfx.Addr().Next().String()
	}
	sn.StackType = cmp.Or(sn.StackType, "IPV4_ONLY")
	v6, err := subnetIPv6(&sn)
	if err != nil {
		panic("gce fake: " + err.Error())
	}
	sn.SecondaryRanges = slices.Clone(sn.SecondaryRanges)
	s.subnets[key] = &subnetState{Subnetwork: sn, prefix: pfx, ipv6: v6, created: s.now()}
	return sn
}

// subnetForLocked finds a network's subnetwork in a region (the first by
// name when there are several).
func (s *Server) subnetForLocked(network, region string) *subnetState {
	var best *subnetState
	for _, sn := range s.subnets {
		if sn.Network == network && sn.Region == region && (best == nil || sn.Name < best.Name) {
			best = sn
		}
	}
	return best
}

func (s *Server) subnetByPathLocked(rel string) *subnetState {
	if !shaped(rel, shapeSubnetwork) || seg(rel, 1) != s.project {
		return nil
	}
	return s.subnets[seg(rel, 3)+"/"+lastSeg(rel)]
}

func (s *Server) subnetPath(sn *subnetState) string {
	return s.regionalPath(sn.Region, "subnetworks", sn.Name)
}

// --- wire ---

type zoneJSON struct {
	Kind                  string   `json:"kind"`
	ID                    uint64   `json:"id,string"`
	CreationTimestamp     string   `json:"creationTimestamp"`
	Name                  string   `json:"name"`
	Description           string   `json:"description"`
	Status                string   `json:"status"`
	Region                string   `json:"region"`
	SelfLink              string   `json:"selfLink"`
	AvailableCPUPlatforms []string `json:"availableCpuPlatforms"`
	SupportsPzs           bool     `json:"supportsPzs"`
}

type regionJSON struct {
	Kind              string   `json:"kind"`
	ID                uint64   `json:"id,string"`
	CreationTimestamp string   `json:"creationTimestamp"`
	Name              string   `json:"name"`
	Description       string   `json:"description"`
	Status            string   `json:"status"`
	Zones             []string `json:"zones"`
	SelfLink          string   `json:"selfLink"`
	SupportsPzs       bool     `json:"supportsPzs"`
}

type networkJSON struct {
	Kind                                  string         `json:"kind"`
	ID                                    uint64         `json:"id,string"`
	CreationTimestamp                     string         `json:"creationTimestamp"`
	Name                                  string         `json:"name"`
	SelfLink                              string         `json:"selfLink"`
	SelfLinkWithID                        string         `json:"selfLinkWithId"`
	AutoCreateSubnetworks                 bool           `json:"autoCreateSubnetworks"`
	Subnetworks                           []string       `json:"subnetworks,omitempty"`
	RoutingConfig                         map[string]any `json:"routingConfig"`
	MTU                                   int            `json:"mtu"`
	NetworkFirewallPolicyEnforcementOrder string         `json:"networkFirewallPolicyEnforcementOrder"`
}

type subnetworkJSON struct {
	Kind                  string             `json:"kind"`
	ID                    uint64             `json:"id,string"`
	CreationTimestamp     string             `json:"creationTimestamp"`
	Name                  string             `json:"name"`
	Network               string             `json:"network"`
	IPCidrRange           string             `json:"ipCidrRange"`
	GatewayAddress        string             `json:"gatewayAddress"`
	Region                string             `json:"region"`
	SelfLink              string             `json:"selfLink"`
	PrivateIPGoogleAccess bool               `json:"privateIpGoogleAccess"`
	SecondaryIPRanges     []secondaryRangeJS `json:"secondaryIpRanges,omitempty"`
	Fingerprint           string             `json:"fingerprint"`
	Purpose               string             `json:"purpose"`
	StackType             string             `json:"stackType"`
	IPv6AccessType        string             `json:"ipv6AccessType,omitempty"`
	ExternalIPv6Prefix    string             `json:"externalIpv6Prefix,omitempty"`
	InternalIPv6Prefix    string             `json:"internalIpv6Prefix,omitempty"`
}

type secondaryRangeJS struct {
	RangeName   string `json:"rangeName"`
	IPCidrRange string `json:"ipCidrRange"`
}

func (s *Server) zoneJSONLocked(base string, z *zoneState) zoneJSON {
	return zoneJSON{
		Kind:                  "compute#zone",
		ID:                    z.ID,
		CreationTimestamp:     timestamp(z.created),
		Name:                  z.Name,
		Description:           z.Name,
		Status:                z.Status,
		Region:                link(base, s.regionPath(z.Region)),
		SelfLink:              link(base, s.zonePath(z.Name)),
		AvailableCPUPlatforms: []string{"Intel Cascade Lake", "Intel Ice Lake", "AMD Milan"},
	}
}

func (s *Server) regionJSONLocked(base string, r *regionState) regionJSON {
	var zones []string
	for _, z := range s.regionZonesLocked(r.name) {
		zones = append(zones, link(base, s.zonePath(z)))
	}
	return regionJSON{
		Kind:              "compute#region",
		ID:                r.id,
		CreationTimestamp: timestamp(r.created),
		Name:              r.name,
		Description:       r.name,
		Status:            r.status,
		Zones:             zones,
		SelfLink:          link(base, s.regionPath(r.name)),
	}
}

func (s *Server) networkJSONLocked(base string, n *networkState) networkJSON {
	var subnets []string
	for _, sn := range s.subnets {
		if sn.Network == n.Name {
			subnets = append(subnets, link(base, s.subnetPath(sn)))
		}
	}
	sort.Strings(subnets)
	self := s.globalPath("networks", n.Name)
	return networkJSON{
		Kind:                                  "compute#network",
		ID:                                    n.ID,
		CreationTimestamp:                     timestamp(n.created),
		Name:                                  n.Name,
		SelfLink:                              link(base, self),
		SelfLinkWithID:                        link(base, s.globalPath("networks", fmt.Sprint(n.ID))),
		AutoCreateSubnetworks:                 n.AutoCreateSubnetworks,
		Subnetworks:                           subnets,
		RoutingConfig:                         map[string]any{"routingMode": "REGIONAL"},
		MTU:                                   n.MTU,
		NetworkFirewallPolicyEnforcementOrder: "AFTER_CLASSIC_FIREWALL",
	}
}

func (s *Server) subnetJSONLocked(base string, sn *subnetState) subnetworkJSON {
	var sec []secondaryRangeJS
	for _, r := range sn.SecondaryRanges {
		sec = append(sec, secondaryRangeJS(r))
	}
	return subnetworkJSON{
		Kind:               "compute#subnetwork",
		ID:                 sn.ID,
		CreationTimestamp:  timestamp(sn.created),
		Name:               sn.Name,
		Network:            link(base, s.globalPath("networks", sn.Network)),
		IPCidrRange:        sn.IPCidrRange,
		GatewayAddress:     sn.GatewayAddress,
		Region:             link(base, s.regionPath(sn.Region)),
		SelfLink:           link(base, s.subnetPath(sn)),
		SecondaryIPRanges:  sec,
		Fingerprint:        fingerprint(sn.Name, sn.IPCidrRange),
		Purpose:            "PRIVATE",
		StackType:          sn.StackType,
		IPv6AccessType:     sn.IPv6AccessType,
		ExternalIPv6Prefix: sn.ExternalIPv6Prefix,
		InternalIPv6Prefix: sn.InternalIPv6Prefix,
	}
}

func (s *Server) registerLocations() {
	s.handle("GET", "projects/{project}/zones", func(c *call) (int, any) {
		var items []listItem
		for _, z := range s.zones {
			items = append(items, listItem{name: z.Name, created: z.created, doc: s.zoneJSONLocked(c.base, z)})
		}
		return s.listResponse(c, "compute#zoneList", "projects/"+s.project+"/zones", items)
	})
	s.handle("GET", "projects/{project}/zones/{zone}", func(c *call) (int, any) {
		z := s.zones[c.p["zone"]]
		if z == nil {
			return errNotFound(s.zonePath(c.p["zone"]))
		}
		return http.StatusOK, s.zoneJSONLocked(c.base, z)
	})
	s.handle("GET", "projects/{project}/regions", func(c *call) (int, any) {
		var items []listItem
		for _, r := range s.regions {
			items = append(items, listItem{name: r.name, created: r.created, doc: s.regionJSONLocked(c.base, r)})
		}
		return s.listResponse(c, "compute#regionList", "projects/"+s.project+"/regions", items)
	})
	s.handle("GET", "projects/{project}/regions/{region}", func(c *call) (int, any) {
		r := s.regions[c.p["region"]]
		if r == nil {
			return errNotFound(s.regionPath(c.p["region"]))
		}
		return http.StatusOK, s.regionJSONLocked(c.base, r)
	})
	s.handle("GET", "projects/{project}/global/networks", func(c *call) (int, any) {
		var items []listItem
		for _, n := range s.networks {
			items = append(items, listItem{name: n.Name, created: n.created, doc: s.networkJSONLocked(c.base, n)})
		}
		return s.listResponse(c, "compute#networkList", "projects/"+s.project+"/global/networks", items)
	})
	s.handle("GET", "projects/{project}/global/networks/{network}", func(c *call) (int, any) {
		n := s.networks[c.p["network"]]
		if n == nil {
			return errNotFound(s.globalPath("networks", c.p["network"]))
		}
		return http.StatusOK, s.networkJSONLocked(c.base, n)
	})
	s.handle("GET", "projects/{project}/regions/{region}/subnetworks", func(c *call) (int, any) {
		var items []listItem
		for _, sn := range s.subnets {
			if sn.Region == c.p["region"] {
				items = append(items, listItem{name: sn.Name, created: sn.created, doc: s.subnetJSONLocked(c.base, sn)})
			}
		}
		return s.listResponse(c, "compute#subnetworkList", "projects/"+s.project+"/regions/"+c.p["region"]+"/subnetworks", items)
	})
	s.handle("GET", "projects/{project}/regions/{region}/subnetworks/{subnetwork}", func(c *call) (int, any) {
		sn := s.subnets[c.p["region"]+"/"+c.p["subnetwork"]]
		if sn == nil {
			return errNotFound(s.regionalPath(c.p["region"], "subnetworks", c.p["subnetwork"]))
		}
		return http.StatusOK, s.subnetJSONLocked(c.base, sn)
	})
}

// --- address allocation ---

// External addresses come from the documentation ranges (RFC 5737) for
// load balancers and static addresses, and from the benchmarking range
// 198.18.0.0/15 (RFC 2544) for instances, which need more of them.
var (
	lbRanges  = []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("192.0.2.0/24")}
	natRanges = []netip.Prefix{netip.MustParsePrefix("198.18.0.0/15")}
)

// allocExternalLocked takes the next free address of ranges for holder.
func (s *Server) allocExternalLocked(ranges []netip.Prefix, holder string) (string, bool) {
	for _, r := range ranges {
		for a := r.Addr().Next(); r.Contains(a); a = a.Next() {
			if !r.Contains(a.Next()) {
				break // broadcast
			}
			if ip := a.String(); s.usedIPs[ip] == "" {
				s.usedIPs[ip] = holder
				return ip, true
			}
		}
	}
	return "", false
}

// allocInternalLocked takes the next free address of a subnetwork for
// holder. GCE reserves the network and gateway addresses (.0, .1) and the
// last two of every primary range.
func (s *Server) allocInternalLocked(sn *subnetState, holder string) (string, bool) {
	p := sn.prefix
	for a := p.Addr().Next().Next(); p.Contains(a); a = a.Next() {
		if !p.Contains(a.Next().Next()) {
			break
		}
		if ip := a.String(); s.usedIPs[ip] == "" && ip != sn.GatewayAddress {
			s.usedIPs[ip] = holder
			return ip, true
		}
	}
	return "", false
}

// releaseIPLocked frees ip if holder holds it.
func (s *Server) releaseIPLocked(ip, holder string) {
	if ip != "" && s.usedIPs[ip] == holder {
		delete(s.usedIPs, ip)
	}
}

// inSubnet reports whether ip is a usable address of the subnetwork.
func inSubnet(sn *subnetState, ip string) bool {
	a, err := netip.ParseAddr(ip)
	return err == nil && sn.prefix.Contains(a) && !strings.HasSuffix(ip, ".0")
}
