package gce

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"slices"
	"sort"
	"time"
)

// Instance statuses, as the API spells them.
const (
	StatusProvisioning = "PROVISIONING"
	StatusStaging      = "STAGING"
	StatusRunning      = "RUNNING"
	StatusStopping     = "STOPPING"
	StatusStopped      = "STOPPED"
	StatusSuspending   = "SUSPENDING"
	StatusSuspended    = "SUSPENDED"
	StatusRepairing    = "REPAIRING"
	StatusTerminated   = "TERMINATED"
)

func validInstanceStatus(s string) bool {
	switch s {
	case StatusProvisioning, StatusStaging, StatusRunning, StatusStopping, StatusStopped,
		StatusSuspending, StatusSuspended, StatusRepairing, StatusTerminated,
		"PENDING", "PENDING_STOP", "DEPROVISIONING":
		return true
	}
	return false
}

// NoIP, as an instance's NatIP, makes AddInstance leave it without an
// external address instead of allocating one.
const NoIP = "none"

// DefaultMachineType is the machine type of instances added without one.
const DefaultMachineType = "e2-medium"

// Instance is the fake's state for one VM, as the helpers take and give
// it; the API renders it as a compute#instance with one network interface
// (nic0).
type Instance struct {
	ID          uint64
	Name        string
	Zone        string // zone name
	MachineType string // machine type name, e.g. "e2-medium"
	Status      string // StatusRunning, ...
	Network     string // network name; default DefaultNetwork
	Subnetwork  string // subnetwork name; default the network's in the zone's region
	NetworkIP   string // internal IPv4; allocated from the subnetwork if ""
	NatIP       string // external IPv4 (ONE_TO_ONE_NAT); allocated if "", none if NoIP
	// IPv6 is the external IPv6 address (a DIRECT_IPV6 access config, /96);
	// "" for none. It makes the interface IPV4_IPV6.
	IPv6 string
	// InternalIPv6 is the interface's ipv6Address; "" for none.
	InternalIPv6 string
	// AliasIPRanges are the interface's aliasIpRanges (pod ranges, as
	// GKE and cloud-provider-gcp's node IPAM give nodes).
	AliasIPRanges []AliasIPRange
	// Hostname is a custom hostname (the instance's hostname field); ""
	// for none, when the API leaves the field out.
	Hostname          string
	Tags              []string
	Labels            map[string]string
	CanIPForward      bool
	CreationTimestamp time.Time
}

// AliasIPRange is an alias IP range of an instance's interface: a CIDR
// ("10.4.1.0/24") of the subnetwork's primary range or, with
// SubnetworkRangeName, of that secondary range.
type AliasIPRange struct {
	IPCidrRange         string `json:"ipCidrRange"`
	SubnetworkRangeName string `json:"subnetworkRangeName,omitempty"`
}

func (i Instance) clone() Instance {
	i.Tags = slices.Clone(i.Tags)
	i.Labels = maps.Clone(i.Labels)
	i.AliasIPRanges = slices.Clone(i.AliasIPRanges)
	return i
}

// checkAliasRanges validates alias ranges against the instance's
// subnetwork: well-formed CIDRs inside the named range, or the primary
// one. (The API also refuses ranges overlapping other instances'; the
// fake does not check that.)
func checkAliasRanges(sn *subnetState, ranges []AliasIPRange) error {
	if sn == nil && len(ranges) > 0 {
		return fmt.Errorf("gce fake: alias IP ranges need the instance's subnetwork")
	}
	for _, r := range ranges {
		p, err := netip.ParsePrefix(r.IPCidrRange)
		if err != nil || !p.Addr().Is4() || p.Masked() != p {
			return fmt.Errorf("gce fake: bad alias IP range %q", r.IPCidrRange)
		}
		within := sn.prefix
		if r.SubnetworkRangeName != "" {
			i := slices.IndexFunc(sn.SecondaryRanges, func(sr SecondaryRange) bool { return sr.RangeName == r.SubnetworkRangeName })
			if i < 0 {
				return fmt.Errorf("gce fake: subnetwork %s has no secondary range %q", sn.Name, r.SubnetworkRangeName)
			}
			if within, err = netip.ParsePrefix(sn.SecondaryRanges[i].IPCidrRange); err != nil {
				return fmt.Errorf("gce fake: subnetwork %s: bad secondary range %q", sn.Name, sn.SecondaryRanges[i].IPCidrRange)
			}
		}
		if !within.Contains(p.Addr()) || p.Bits() < within.Bits() {
			return fmt.Errorf("gce fake: alias IP range %s is not within %s", p, within)
		}
	}
	return nil
}

type instanceState struct {
	Instance
}

// AddInstance stores an instance and returns it as stored, with defaults
// filled: a fresh ID, zone DefaultZone, machine type DefaultMachineType,
// status RUNNING, the default network and its subnetwork in the zone's
// region, an internal address from that subnetwork and an external one
// (unless NatIP is NoIP). It panics if the instance exists or the zone,
// network, subnetwork or status is unknown: mistakes in the calling test.
func (s *Server) AddInstance(in Instance) Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	in = in.clone()
	in.Zone = cmp.Or(in.Zone, DefaultZone)
	z := s.zones[in.Zone]
	if z == nil {
		panic(fmt.Sprintf("gce fake: no zone %q", in.Zone))
	}
	if in.Name == "" {
		panic("gce fake: instance needs a name")
	}
	path := s.zonalPath(in.Zone, "instances", in.Name)
	if s.instances[path] != nil {
		panic(fmt.Sprintf("gce fake: instance %s already exists", path))
	}
	in.Status = cmp.Or(in.Status, StatusRunning)
	if !validInstanceStatus(in.Status) {
		panic(fmt.Sprintf("gce fake: invalid instance status %q", in.Status))
	}
	in.MachineType = cmp.Or(in.MachineType, DefaultMachineType)
	in.Network = cmp.Or(in.Network, DefaultNetwork)
	if s.networks[in.Network] == nil {
		panic(fmt.Sprintf("gce fake: no network %q", in.Network))
	}
	var sn *subnetState
	if in.Subnetwork == "" {
		sn = s.subnetForLocked(in.Network, z.Region)
		if sn == nil {
			panic(fmt.Sprintf("gce fake: network %s has no subnetwork in %s", in.Network, z.Region))
		}
		in.Subnetwork = sn.Name
	} else if sn = s.subnets[z.Region+"/"+in.Subnetwork]; sn == nil {
		panic(fmt.Sprintf("gce fake: no subnetwork %s in %s", in.Subnetwork, z.Region))
	}
	if err := checkAliasRanges(sn, in.AliasIPRanges); err != nil {
		panic(err.Error())
	}
	if in.NetworkIP == "" {
		ip, ok := s.allocInternalLocked(sn, path)
		if !ok {
			panic(fmt.Sprintf("gce fake: subnetwork %s is full", sn.Name))
		}
		in.NetworkIP = ip
	} else {
		s.usedIPs[in.NetworkIP] = path
	}
	switch in.NatIP {
	case "":
		ip, ok := s.allocExternalLocked(natRanges, path)
		if !ok {
			panic("gce fake: out of external addresses")
		}
		in.NatIP = ip
	case NoIP:
		in.NatIP = ""
	default:
		s.usedIPs[in.NatIP] = path
	}
	// nic0's IPv6 /96s are the instance's: an IPv6 rule must not get them.
	for _, v6 := range []string{in.IPv6, in.InternalIPv6} {
		if key := ipKey(v6); key != "" {
			s.usedIPs[key] = path
		}
	}
	if in.ID == 0 {
		in.ID = s.newIDLocked()
	}
	if in.CreationTimestamp.IsZero() {
		in.CreationTimestamp = s.now()
	}
	s.instances[path] = &instanceState{Instance: in}
	s.countCreateLocked("instances")
	return in.clone()
}

// Instance returns an instance.
func (s *Server) Instance(zone, name string) (Instance, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	in := s.instances[s.zonalPath(zone, "instances", name)]
	if in == nil {
		return Instance{}, false
	}
	return in.clone(), true
}

// Instances returns every instance, sorted by zone and name.
func (s *Server) Instances() []Instance {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	out := make([]Instance, 0, len(s.instances))
	for _, in := range s.instances {
		out = append(out, in.clone())
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Zone != out[j].Zone {
			return out[i].Zone < out[j].Zone
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// SetInstanceStatus sets an instance's status, as if it changed outside
// the API (a stop, a host failure).
func (s *Server) SetInstanceStatus(zone, name, status string) error {
	if !validInstanceStatus(status) {
		return fmt.Errorf("gce fake: invalid instance status %q", status)
	}
	return s.UpdateInstance(zone, name, func(in *Instance) { in.Status = status })
}

// UpdateInstance changes an instance in place (tags, labels, status...).
// Its ID, name, zone and addresses cannot change.
func (s *Server) UpdateInstance(zone, name string, update func(*Instance)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.instances[s.zonalPath(zone, "instances", name)]
	if in == nil {
		return fmt.Errorf("gce fake: no instance %s/%s", zone, name)
	}
	c := in.clone()
	update(&c)
	switch {
	case c.ID != in.ID || c.Name != in.Name || c.Zone != in.Zone:
		return fmt.Errorf("gce fake: UpdateInstance cannot change the ID, name or zone")
	case c.NetworkIP != in.NetworkIP || c.NatIP != in.NatIP:
		return fmt.Errorf("gce fake: UpdateInstance cannot change addresses")
	case !validInstanceStatus(c.Status):
		return fmt.Errorf("gce fake: invalid instance status %q", c.Status)
	}
	if err := checkAliasRanges(s.subnets[s.zones[c.Zone].Region+"/"+c.Subnetwork], c.AliasIPRanges); err != nil {
		return err
	}
	in.Instance = c
	return nil
}

// RemoveInstance deletes an instance, reporting whether it existed. Like
// the API it drops the instance from instance groups; target pools and
// routes keep their (now dangling) references.
func (s *Server) RemoveInstance(zone, name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	path := s.zonalPath(zone, "instances", name)
	in := s.instances[path]
	if in == nil {
		return false
	}
	delete(s.instances, path)
	s.releaseIPLocked(in.NetworkIP, path)
	s.releaseIPLocked(in.NatIP, path)
	s.releaseIPLocked(ipKey(in.IPv6), path)
	s.releaseIPLocked(ipKey(in.InternalIPv6), path)
	for _, g := range s.instanceGroups {
		g.Members = slices.DeleteFunc(g.Members, func(m string) bool { return m == path })
	}
	s.countDeleteLocked("instances")
	return true
}

// --- wire ---

type instanceJSON struct {
	Kind               string            `json:"kind"`
	ID                 uint64            `json:"id,string"`
	CreationTimestamp  string            `json:"creationTimestamp"`
	Name               string            `json:"name"`
	Hostname           string            `json:"hostname,omitempty"`
	Tags               tagsJSON          `json:"tags"`
	MachineType        string            `json:"machineType"`
	Status             string            `json:"status"`
	Zone               string            `json:"zone"`
	CanIPForward       bool              `json:"canIpForward"`
	NetworkInterfaces  []nicJSON         `json:"networkInterfaces"`
	Labels             map[string]string `json:"labels,omitempty"`
	LabelFingerprint   string            `json:"labelFingerprint"`
	Fingerprint        string            `json:"fingerprint"`
	CPUPlatform        string            `json:"cpuPlatform,omitempty"`
	DeletionProtection bool              `json:"deletionProtection"`
	StartRestricted    bool              `json:"startRestricted"`
	SelfLink           string            `json:"selfLink"`
}

type tagsJSON struct {
	Items       []string `json:"items,omitempty"`
	Fingerprint string   `json:"fingerprint"`
}

type nicJSON struct {
	Kind              string             `json:"kind"`
	Network           string             `json:"network"`
	Subnetwork        string             `json:"subnetwork"`
	NetworkIP         string             `json:"networkIP"`
	IPv6Address       string             `json:"ipv6Address,omitempty"`
	Name              string             `json:"name"`
	AliasIPRanges     []AliasIPRange     `json:"aliasIpRanges,omitempty"`
	AccessConfigs     []accessConfigJSON `json:"accessConfigs,omitempty"`
	IPv6AccessConfigs []accessConfigJSON `json:"ipv6AccessConfigs,omitempty"`
	IPv6AccessType    string             `json:"ipv6AccessType,omitempty"`
	StackType         string             `json:"stackType"`
	Fingerprint       string             `json:"fingerprint"`
}

type accessConfigJSON struct {
	Kind                     string `json:"kind"`
	Type                     string `json:"type"`
	Name                     string `json:"name"`
	NatIP                    string `json:"natIP,omitempty"`
	ExternalIPv6             string `json:"externalIpv6,omitempty"`
	ExternalIPv6PrefixLength int    `json:"externalIpv6PrefixLength,omitempty"`
	NetworkTier              string `json:"networkTier"`
}

func (s *Server) instanceJSONLocked(base string, in *instanceState) instanceJSON {
	z := s.zones[in.Zone]
	nic := nicJSON{
		Kind:          "compute#networkInterface",
		Network:       link(base, s.globalPath("networks", in.Network)),
		Subnetwork:    link(base, s.regionalPath(z.Region, "subnetworks", in.Subnetwork)),
		NetworkIP:     in.NetworkIP,
		IPv6Address:   in.InternalIPv6,
		Name:          "nic0",
		AliasIPRanges: slices.Clone(in.AliasIPRanges),
		StackType:     "IPV4_ONLY",
		Fingerprint:   fingerprint("nic0", in.Name, in.NetworkIP, in.NatIP, in.IPv6, fmt.Sprint(in.AliasIPRanges)),
	}
	if in.NatIP != "" {
		nic.AccessConfigs = []accessConfigJSON{{
			Kind: "compute#accessConfig", Type: "ONE_TO_ONE_NAT", Name: "external-nat",
			NatIP: in.NatIP, NetworkTier: "PREMIUM",
		}}
	}
	if in.IPv6 != "" {
		nic.IPv6AccessConfigs = []accessConfigJSON{{
			Kind: "compute#accessConfig", Type: "DIRECT_IPV6", Name: "external-ipv6",
			ExternalIPv6: in.IPv6, ExternalIPv6PrefixLength: 96, NetworkTier: "PREMIUM",
		}}
		nic.IPv6AccessType = "EXTERNAL"
	}
	if in.IPv6 != "" || in.InternalIPv6 != "" {
		nic.StackType = "IPV4_IPV6"
		if in.IPv6 == "" {
			nic.IPv6AccessType = "INTERNAL"
		}
	}
	path := s.zonalPath(in.Zone, "instances", in.Name)
	return instanceJSON{
		Kind:              "compute#instance",
		ID:                in.ID,
		CreationTimestamp: timestamp(in.CreationTimestamp),
		Name:              in.Name,
		Hostname:          in.Hostname,
		Tags:              tagsJSON{Items: slices.Clone(in.Tags), Fingerprint: tagsFingerprint(in.Tags)},
		MachineType:       link(base, s.zonalPath(in.Zone, "machineTypes", in.MachineType)),
		Status:            in.Status,
		Zone:              link(base, s.zonePath(in.Zone)),
		CanIPForward:      in.CanIPForward,
		NetworkInterfaces: []nicJSON{nic},
		Labels:            maps.Clone(in.Labels),
		LabelFingerprint:  labelFingerprint(in.Labels),
		Fingerprint:       fingerprint(path, in.Status),
		CPUPlatform:       "Intel Broadwell",
		SelfLink:          link(base, path),
	}
}

func (s *Server) registerInstances() {
	s.handle("GET", "projects/{project}/zones/{zone}/instances", func(c *call) (int, any) {
		var items []listItem
		for _, in := range s.instances {
			if in.Zone == c.p["zone"] {
				items = append(items, listItem{name: in.Name, created: in.CreationTimestamp, doc: s.instanceJSONLocked(c.base, in)})
			}
		}
		return s.listResponse(c, "compute#instanceList", "projects/"+s.project+"/zones/"+c.p["zone"]+"/instances", items)
	})
	s.handle("GET", "projects/{project}/zones/{zone}/instances/{instance}", func(c *call) (int, any) {
		path := s.zonalPath(c.p["zone"], "instances", c.p["instance"])
		in := s.instances[path]
		if in == nil {
			return errNotFound(path)
		}
		return http.StatusOK, s.instanceJSONLocked(c.base, in)
	})
	s.handle("GET", "projects/{project}/aggregated/instances", func(c *call) (int, any) {
		var items []listItem
		for _, in := range s.instances {
			items = append(items, listItem{scope: "zones/" + in.Zone, name: in.Name, created: in.CreationTimestamp, doc: s.instanceJSONLocked(c.base, in)})
		}
		return s.aggregatedResponse(c, "compute#instanceAggregatedList", "instances", "instances", s.zoneScopesLocked(), items)
	})
}

// tagsFingerprint is the fingerprint of an instance's tags; no tags hash
// like no labels.
func tagsFingerprint(tags []string) string {
	if len(tags) == 0 {
		return emptyLabelFingerprint
	}
	return fingerprint(tags...)
}
