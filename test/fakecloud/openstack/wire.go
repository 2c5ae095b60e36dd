package openstack

// The JSON shapes of the documents, from the API references (Identity v3,
// Compute v2.1, Networking v2.0, Block Storage v3). Fields the services
// send as null are pointers or any; lists they send empty are never nil.
// Fields that depend on the compute or volume microversion are any with
// omitempty: absent below their version, and present (null or []
// included) from it.

type wireLink struct {
	Href string `json:"href"`
	Rel  string `json:"rel"`
	Type string `json:"type,omitempty"`
}

// Keystone.

type wireRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type wireRole = wireRef

type wireToken struct {
	Methods               []string           `json:"methods"`
	User                  wireTokenUser      `json:"user"`
	AuditIDs              []string           `json:"audit_ids"`
	ExpiresAt             string             `json:"expires_at"`
	IssuedAt              string             `json:"issued_at"`
	Project               *wireTokenProject  `json:"project,omitempty"`
	IsDomain              bool               `json:"is_domain"`
	Roles                 []wireRole         `json:"roles"`
	Catalog               []wireCatalogEntry `json:"catalog,omitempty"`
	ApplicationCredential *wireTokenAppCred  `json:"application_credential,omitempty"`
}

type wireTokenUser struct {
	Domain            wireRef `json:"domain"`
	ID                string  `json:"id"`
	Name              string  `json:"name"`
	PasswordExpiresAt *string `json:"password_expires_at"`
}

type wireTokenProject struct {
	Domain wireRef `json:"domain"`
	ID     string  `json:"id"`
	Name   string  `json:"name"`
}

type wireTokenAppCred struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	Restricted bool   `json:"restricted"`
}

type wireCatalogEntry struct {
	ID        string         `json:"id"`
	Name      string         `json:"name"`
	Type      string         `json:"type"`
	Endpoints []wireEndpoint `json:"endpoints"`
}

type wireEndpoint struct {
	ID        string `json:"id"`
	Interface string `json:"interface"`
	Region    string `json:"region"`
	RegionID  string `json:"region_id"`
	URL       string `json:"url"`
}

// Version discovery.

type wireMediaType struct {
	Base string `json:"base"`
	Type string `json:"type"`
}

// wireVersion is one API version. Nova fills version and min_version
// (empty for its legacy v2.0); Neutron and Octavia send neither.
type wireVersion struct {
	ID         string          `json:"id"`
	Status     string          `json:"status"`
	Version    *string         `json:"version,omitempty"`
	MinVersion *string         `json:"min_version,omitempty"`
	Updated    string          `json:"updated,omitempty"`
	Links      []wireLink      `json:"links"`
	MediaTypes []wireMediaType `json:"media-types,omitempty"`
}

// Nova.

type wireServer struct {
	ID               string                   `json:"id"`
	Name             string                   `json:"name"`
	Status           string                   `json:"status"`
	TenantID         string                   `json:"tenant_id"`
	UserID           string                   `json:"user_id"`
	Metadata         map[string]string        `json:"metadata"`
	HostID           string                   `json:"hostId"`
	Image            any                      `json:"image"`
	Flavor           any                      `json:"flavor"`
	Created          string                   `json:"created"`
	Updated          string                   `json:"updated"`
	Addresses        map[string][]wireAddress `json:"addresses"`
	AccessIPv4       string                   `json:"accessIPv4"`
	AccessIPv6       string                   `json:"accessIPv6"`
	Links            []wireLink               `json:"links"`
	KeyName          *string                  `json:"key_name"`
	Progress         int                      `json:"progress"`
	ConfigDrive      string                   `json:"config_drive"`
	AvailabilityZone string                   `json:"OS-EXT-AZ:availability_zone"`
	DiskConfig       string                   `json:"OS-DCF:diskConfig"`
	TaskState        *string                  `json:"OS-EXT-STS:task_state"`
	VMState          string                   `json:"OS-EXT-STS:vm_state"`
	PowerState       int                      `json:"OS-EXT-STS:power_state"`
	LaunchedAt       *string                  `json:"OS-SRV-USG:launched_at"`
	TerminatedAt     *string                  `json:"OS-SRV-USG:terminated_at"`
	SecurityGroups   []wireName               `json:"security_groups,omitempty"`
	VolumesAttached  []wireVolumeAttachment   `json:"os-extended-volumes:volumes_attached"`

	Locked                   any `json:"locked,omitempty"`                     // 2.9
	Description              any `json:"description,omitempty"`                // 2.19
	Tags                     any `json:"tags,omitempty"`                       // 2.26
	TrustedImageCertificates any `json:"trusted_image_certificates,omitempty"` // 2.63
	ServerGroups             any `json:"server_groups,omitempty"`              // 2.71
	LockedReason             any `json:"locked_reason,omitempty"`              // 2.73
	PinnedAvailabilityZone   any `json:"pinned_availability_zone,omitempty"`   // 2.96
}

type wireName struct {
	Name string `json:"name"`
}

// wireVolumeAttachment is one of a server's volumes; Nova tells whether
// it goes with the server from 2.3.
type wireVolumeAttachment struct {
	ID                  string `json:"id"`
	DeleteOnTermination *bool  `json:"delete_on_termination,omitempty"` // 2.3
}

// wireAddress is one of a server's addresses, under its network's name.
type wireAddress struct {
	Addr    string `json:"addr"`
	Version int    `json:"version"`
	Type    string `json:"OS-EXT-IPS:type"` // fixed or floating
	MAC     string `json:"OS-EXT-IPS-MAC:mac_addr"`
}

// wireRefWithLinks is how Nova refers to a server's image, and to its
// flavor before 2.47: by ID, with a bookmark link.
type wireRefWithLinks struct {
	ID    string     `json:"id"`
	Links []wireLink `json:"links"`
}

// wireServerFlavor is a server's flavor from 2.47: a copy of the flavor
// as it was at boot, under its name then.
type wireServerFlavor struct {
	VCPUs        int               `json:"vcpus"`
	RAM          int               `json:"ram"`
	Disk         int               `json:"disk"`
	Ephemeral    int               `json:"ephemeral"`
	Swap         int               `json:"swap"`
	OriginalName string            `json:"original_name"`
	ExtraSpecs   map[string]string `json:"extra_specs"`
}

type wireFlavor struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	RAM        int        `json:"ram"`
	Disk       int        `json:"disk"`
	Swap       any        `json:"swap"` // "" for none before 2.75
	Ephemeral  int        `json:"OS-FLV-EXT-DATA:ephemeral"`
	Disabled   bool       `json:"OS-FLV-DISABLED:disabled"`
	VCPUs      int        `json:"vcpus"`
	IsPublic   bool       `json:"os-flavor-access:is_public"`
	RxTxFactor float64    `json:"rxtx_factor"`
	Links      []wireLink `json:"links"`

	Description any `json:"description,omitempty"` // 2.55
	ExtraSpecs  any `json:"extra_specs,omitempty"` // 2.61
}

// Neutron.

type wireNetwork struct {
	ID                    string   `json:"id"`
	Name                  string   `json:"name"`
	AdminStateUp          bool     `json:"admin_state_up"`
	Status                string   `json:"status"`
	Subnets               []string `json:"subnets"`
	TenantID              string   `json:"tenant_id"`
	ProjectID             string   `json:"project_id"`
	Shared                bool     `json:"shared"`
	RouterExternal        bool     `json:"router:external"`
	IsDefault             *bool    `json:"is_default,omitempty"` // external networks only
	MTU                   int      `json:"mtu"`
	AvailabilityZoneHints []string `json:"availability_zone_hints"`
	AvailabilityZones     []string `json:"availability_zones"`
	Description           string   `json:"description"`
	IPv4AddressScope      *string  `json:"ipv4_address_scope"`
	IPv6AddressScope      *string  `json:"ipv6_address_scope"`
	L2Adjacency           bool     `json:"l2_adjacency"`
	PortSecurityEnabled   bool     `json:"port_security_enabled"`
	QoSPolicyID           *string  `json:"qos_policy_id"`
	Tags                  []string `json:"tags"`
	CreatedAt             string   `json:"created_at"`
	UpdatedAt             string   `json:"updated_at"`
	RevisionNumber        int      `json:"revision_number"`
}

type wireSubnet struct {
	ID              string               `json:"id"`
	Name            string               `json:"name"`
	NetworkID       string               `json:"network_id"`
	TenantID        string               `json:"tenant_id"`
	ProjectID       string               `json:"project_id"`
	IPVersion       int                  `json:"ip_version"`
	CIDR            string               `json:"cidr"`
	GatewayIP       *string              `json:"gateway_ip"`
	EnableDHCP      bool                 `json:"enable_dhcp"`
	AllocationPools []wireAllocationPool `json:"allocation_pools"`
	DNSNameservers  []string             `json:"dns_nameservers"`
	HostRoutes      []any                `json:"host_routes"`
	IPv6AddressMode *string              `json:"ipv6_address_mode"`
	IPv6RAMode      *string              `json:"ipv6_ra_mode"`
	SubnetPoolID    *string              `json:"subnetpool_id"`
	SegmentID       *string              `json:"segment_id"`
	ServiceTypes    []string             `json:"service_types"`
	Description     string               `json:"description"`
	Tags            []string             `json:"tags"`
	CreatedAt       string               `json:"created_at"`
	UpdatedAt       string               `json:"updated_at"`
	RevisionNumber  int                  `json:"revision_number"`
}

type wireAllocationPool struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

type wirePort struct {
	ID                    string             `json:"id"`
	Name                  string             `json:"name"`
	NetworkID             string             `json:"network_id"`
	TenantID              string             `json:"tenant_id"`
	ProjectID             string             `json:"project_id"`
	MACAddress            string             `json:"mac_address"`
	AdminStateUp          bool               `json:"admin_state_up"`
	Status                string             `json:"status"`
	DeviceID              string             `json:"device_id"`
	DeviceOwner           string             `json:"device_owner"`
	FixedIPs              []wireFixedIP      `json:"fixed_ips"`
	AllowedAddressPairs   *[]wireAddressPair `json:"allowed_address_pairs,omitempty"` // with allowed-address-pairs
	ExtraDHCPOpts         []any              `json:"extra_dhcp_opts"`
	SecurityGroups        []string           `json:"security_groups"`
	Description           string             `json:"description"`
	BindingVNICType       string             `json:"binding:vnic_type"`
	PortSecurityEnabled   bool               `json:"port_security_enabled"`
	IPAllocation          string             `json:"ip_allocation"`
	QoSPolicyID           *string            `json:"qos_policy_id"`
	QoSNetworkPolicyID    *string            `json:"qos_network_policy_id"`
	PropagateUplinkStatus bool               `json:"propagate_uplink_status"`
	Tags                  []string           `json:"tags"`
	CreatedAt             string             `json:"created_at"`
	UpdatedAt             string             `json:"updated_at"`
	RevisionNumber        int                `json:"revision_number"`
	TrunkDetails          *wireTrunkDetails  `json:"trunk_details,omitempty"` // trunk parents only
}

type wireAddressPair struct {
	IPAddress  string `json:"ip_address"`
	MACAddress string `json:"mac_address"`
}

type wireFixedIP struct {
	SubnetID  string `json:"subnet_id"`
	IPAddress string `json:"ip_address"`
}

type wireTrunkDetails struct {
	TrunkID  string        `json:"trunk_id"`
	SubPorts []wireSubPort `json:"sub_ports"`
}

type wireSubPort struct {
	SegmentationID   int    `json:"segmentation_id"`
	SegmentationType string `json:"segmentation_type"`
	PortID           string `json:"port_id"`
	MACAddress       string `json:"mac_address"`
}

// Neutron's routers.

type wireRouter struct {
	ID                    string           `json:"id"`
	Name                  string           `json:"name"`
	Status                string           `json:"status"`
	AdminStateUp          bool             `json:"admin_state_up"`
	TenantID              string           `json:"tenant_id"`
	ProjectID             string           `json:"project_id"`
	ExternalGatewayInfo   *wireGatewayInfo `json:"external_gateway_info"`
	Description           string           `json:"description"`
	AvailabilityZoneHints []string         `json:"availability_zone_hints"`
	AvailabilityZones     []string         `json:"availability_zones"`
	Routes                *[]wireRoute     `json:"routes,omitempty"` // with the extraroute extension
	Tags                  []string         `json:"tags"`
	CreatedAt             string           `json:"created_at"`
	UpdatedAt             string           `json:"updated_at"`
	RevisionNumber        int              `json:"revision_number"`
}

type wireGatewayInfo struct {
	NetworkID        string        `json:"network_id"`
	ExternalFixedIPs []wireFixedIP `json:"external_fixed_ips"`
	EnableSNAT       bool          `json:"enable_snat"`
}

type wireRoute struct {
	Destination string `json:"destination"`
	NextHop     string `json:"nexthop"`
}

type wireExtension struct {
	Name        string `json:"name"`
	Alias       string `json:"alias"`
	Description string `json:"description"`
	Updated     string `json:"updated"`
	Links       []any  `json:"links"`
}

// Cinder.

// wireVolume is a volume as Cinder shows it to a project member: no
// host, migration or provider attributes, which are the admin's.
type wireVolume struct {
	ID                 string               `json:"id"`
	Status             string               `json:"status"`
	Size               int                  `json:"size"`
	AvailabilityZone   string               `json:"availability_zone"`
	CreatedAt          string               `json:"created_at"`
	UpdatedAt          *string              `json:"updated_at"`
	Name               *string              `json:"name"`
	Description        *string              `json:"description"`
	VolumeType         string               `json:"volume_type"`
	SnapshotID         *string              `json:"snapshot_id"`
	SourceVolID        *string              `json:"source_volid"`
	Metadata           map[string]string    `json:"metadata"`
	Links              []wireLink           `json:"links"`
	UserID             string               `json:"user_id"`
	Bootable           string               `json:"bootable"` // "true" or "false"
	Encrypted          bool                 `json:"encrypted"`
	ReplicationStatus  *string              `json:"replication_status"`
	ConsistencyGroupID *string              `json:"consistencygroup_id"`
	Multiattach        bool                 `json:"multiattach"`
	Attachments        []wireVolumeAttached `json:"attachments"`
	TenantID           string               `json:"os-vol-tenant-attr:tenant_id"`

	GroupID       any `json:"group_id,omitempty"`       // 3.13
	SharedTargets any `json:"shared_targets,omitempty"` // 3.48
	ServiceUUID   any `json:"service_uuid,omitempty"`   // 3.48
	VolumeTypeID  any `json:"volume_type_id,omitempty"` // 3.63
	ConsumesQuota any `json:"consumes_quota,omitempty"` // 3.65
}

// wireVolumeAttached is one of a volume's attachments; the host is
// shown to admins only.
type wireVolumeAttached struct {
	ID           string  `json:"id"` // the volume's
	AttachmentID string  `json:"attachment_id"`
	VolumeID     string  `json:"volume_id"`
	ServerID     string  `json:"server_id"`
	HostName     *string `json:"host_name"`
	Device       string  `json:"device"`
	AttachedAt   string  `json:"attached_at"`
}
