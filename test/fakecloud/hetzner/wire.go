package hetzner

// The JSON shapes of servers, networks and volumes, from the API
// reference. Fields the API sends as null are pointers or any; lists it
// sends empty are never nil.

type wireProtection struct {
	Delete bool `json:"delete"`
}

type wireServerProtection struct {
	Delete  bool `json:"delete"`
	Rebuild bool `json:"rebuild"`
}

type wireServer struct {
	ID              int64                  `json:"id"`
	Name            string                 `json:"name"`
	Status          string                 `json:"status"`
	Created         string                 `json:"created"`
	PublicNet       wireServerPublicNet    `json:"public_net"`
	PrivateNet      []wireServerPrivateNet `json:"private_net"`
	ServerType      wireServerType         `json:"server_type"`
	Location        location               `json:"location"`
	Image           *wireImage             `json:"image"`
	ISO             any                    `json:"iso"`
	RescueEnabled   bool                   `json:"rescue_enabled"`
	Locked          bool                   `json:"locked"`
	BackupWindow    *string                `json:"backup_window"`
	OutgoingTraffic *uint64                `json:"outgoing_traffic"`
	IngoingTraffic  *uint64                `json:"ingoing_traffic"`
	IncludedTraffic uint64                 `json:"included_traffic"`
	Protection      wireServerProtection   `json:"protection"`
	Labels          map[string]string      `json:"labels"`
	Volumes         []int64                `json:"volumes"`
	LoadBalancers   []int64                `json:"load_balancers"`
	PrimaryDiskSize int                    `json:"primary_disk_size"`
	PlacementGroup  any                    `json:"placement_group"`
}

// wireServerPublicNet: ipv4 and ipv6 are null on servers without them.
type wireServerPublicNet struct {
	IPv4        *wireServerIPv4 `json:"ipv4"`
	IPv6        *wireServerIPv6 `json:"ipv6"`
	FloatingIPs []int64         `json:"floating_ips"`
	Firewalls   []any           `json:"firewalls"`
}

type wireServerIPv4 struct {
	ID      int64  `json:"id"`
	IP      string `json:"ip"`
	Blocked bool   `json:"blocked"`
	DNSPtr  string `json:"dns_ptr"`
}

type wireServerIPv6 struct {
	ID      int64        `json:"id"`
	IP      string       `json:"ip"` // the server's /64
	Blocked bool         `json:"blocked"`
	DNSPtr  []wireDNSPtr `json:"dns_ptr"`
}

type wireDNSPtr struct {
	IP     string `json:"ip"`
	DNSPtr string `json:"dns_ptr"`
}

type wireServerPrivateNet struct {
	Network    int64    `json:"network"`
	IP         string   `json:"ip"`
	AliasIPs   []string `json:"alias_ips"`
	MACAddress string   `json:"mac_address"`
}

type wireNetwork struct {
	ID                    int64             `json:"id"`
	Name                  string            `json:"name"`
	Created               string            `json:"created"`
	IPRange               string            `json:"ip_range"`
	Subnets               []wireSubnet      `json:"subnets"`
	Routes                []wireRoute       `json:"routes"`
	Servers               []int64           `json:"servers"`
	LoadBalancers         []int64           `json:"load_balancers"`
	Protection            wireProtection    `json:"protection"`
	Labels                map[string]string `json:"labels"`
	ExposeRoutesToVSwitch bool              `json:"expose_routes_to_vswitch"`
}

// wireSubnet: vswitch_id only for vswitch subnets.
type wireSubnet struct {
	Type        string `json:"type"`
	IPRange     string `json:"ip_range"`
	NetworkZone string `json:"network_zone"`
	Gateway     string `json:"gateway"`
	VSwitchID   int64  `json:"vswitch_id,omitempty"`
}

type wireRoute struct {
	Destination string `json:"destination"`
	Gateway     string `json:"gateway"`
}

type wireVolume struct {
	ID          int64             `json:"id"`
	Name        string            `json:"name"`
	Created     string            `json:"created"`
	Server      *int64            `json:"server"`
	Location    location          `json:"location"`
	Size        int               `json:"size"`
	LinuxDevice string            `json:"linux_device"`
	Protection  wireProtection    `json:"protection"`
	Labels      map[string]string `json:"labels"`
	Status      string            `json:"status"`
	Format      *string           `json:"format"`
}
