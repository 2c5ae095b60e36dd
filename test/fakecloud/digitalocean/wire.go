package digitalocean

// JSON documents of the DigitalOcean API v2, written from its reference
// (github.com/digitalocean/openapi, specification/resources/*/models) and
// observed responses. Fields the real API always sends are never omitted:
// empty lists are [], absent objects are null.

type wireRegion struct {
	Slug      string   `json:"slug"`
	Name      string   `json:"name"`
	Sizes     []string `json:"sizes"`
	Available bool     `json:"available"`
	Features  []string `json:"features"`
}

type wireSize struct {
	Slug         string   `json:"slug"`
	Memory       int      `json:"memory"`
	VCPUs        int      `json:"vcpus"`
	Disk         int      `json:"disk"`
	Transfer     float64  `json:"transfer"`
	PriceMonthly float64  `json:"price_monthly"`
	PriceHourly  float64  `json:"price_hourly"`
	Regions      []string `json:"regions"`
	Available    bool     `json:"available"`
	Description  string   `json:"description"`
}

type wireImage struct {
	ID            int      `json:"id"`
	Name          string   `json:"name"`
	Distribution  string   `json:"distribution"`
	Slug          string   `json:"slug"`
	Public        bool     `json:"public"`
	Regions       []string `json:"regions"`
	CreatedAt     string   `json:"created_at"`
	Type          string   `json:"type"`
	MinDiskSize   int      `json:"min_disk_size"`
	SizeGigabytes float64  `json:"size_gigabytes"`
	Description   string   `json:"description"`
	Tags          []string `json:"tags"`
	Status        string   `json:"status"`
	ErrorMessage  string   `json:"error_message"`
}

type wireNetworkV4 struct {
	IPAddress string `json:"ip_address"`
	Netmask   string `json:"netmask"`
	Gateway   string `json:"gateway"`
	Type      string `json:"type"`
}

// wireNetworkV6's netmask is a prefix length (an integer), unlike v4's.
type wireNetworkV6 struct {
	IPAddress string `json:"ip_address"`
	Netmask   int    `json:"netmask"`
	Gateway   string `json:"gateway"`
	Type      string `json:"type"`
}

type wireNetworks struct {
	V4 []wireNetworkV4 `json:"v4"`
	V6 []wireNetworkV6 `json:"v6"`
}

type wireKernel struct {
	ID      int    `json:"id"`
	Name    string `json:"name"`
	Version string `json:"version"`
}

type wireBackupWindow struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

type wireDroplet struct {
	ID               int               `json:"id"`
	Name             string            `json:"name"`
	Memory           int               `json:"memory"`
	VCPUs            int               `json:"vcpus"`
	Disk             int               `json:"disk"`
	Locked           bool              `json:"locked"`
	Status           string            `json:"status"`
	Kernel           *wireKernel       `json:"kernel"`
	CreatedAt        string            `json:"created_at"`
	Features         []string          `json:"features"`
	BackupIDs        []int             `json:"backup_ids"`
	NextBackupWindow *wireBackupWindow `json:"next_backup_window"`
	SnapshotIDs      []int             `json:"snapshot_ids"`
	Image            wireImage         `json:"image"`
	VolumeIDs        []string          `json:"volume_ids"`
	Size             wireSize          `json:"size"`
	SizeSlug         string            `json:"size_slug"`
	Networks         wireNetworks      `json:"networks"`
	Region           wireRegion        `json:"region"`
	Tags             []string          `json:"tags"`
	VPCUUID          string            `json:"vpc_uuid"`
}

// wirePages holds only the links that make sense for the page: none of
// first/prev on the first page, none of next/last on the last.
type wirePages struct {
	First string `json:"first,omitempty"`
	Prev  string `json:"prev,omitempty"`
	Next  string `json:"next,omitempty"`
	Last  string `json:"last,omitempty"`
}

// wireLinks is {} for a single page, as the real API sends it.
type wireLinks struct {
	Pages   *wirePages       `json:"pages,omitempty"`
	Actions []wireActionLink `json:"actions,omitempty"`
}

type wireActionLink struct {
	ID   int    `json:"id"`
	Rel  string `json:"rel"`
	HREF string `json:"href"`
}

type wireMeta struct {
	Total int `json:"total"`
}

type wireAction struct {
	ID           int         `json:"id"`
	Status       string      `json:"status"`
	Type         string      `json:"type"`
	StartedAt    string      `json:"started_at"`
	CompletedAt  *string     `json:"completed_at"`
	ResourceID   int         `json:"resource_id"`
	ResourceType string      `json:"resource_type"`
	Region       *wireRegion `json:"region"`
	RegionSlug   string      `json:"region_slug"`
}

type wireAccount struct {
	DropletLimit    int    `json:"droplet_limit"`
	FloatingIPLimit int    `json:"floating_ip_limit"`
	ReservedIPLimit int    `json:"reserved_ip_limit"`
	VolumeLimit     int    `json:"volume_limit"`
	Email           string `json:"email"`
	Name            string `json:"name"`
	UUID            string `json:"uuid"`
	EmailVerified   bool   `json:"email_verified"`
	Status          string `json:"status"`
	StatusMessage   string `json:"status_message"`
}

// Load balancer documents, from specification/resources/load_balancers
// (load_balancer_base.yml, forwarding_rule.yml, health_check.yml,
// sticky_sessions.yml, lb_firewall.yml) and its response examples. The same
// rule, health check, sticky sessions and firewall objects appear in
// requests, where absent fields decode as zero and get the API's defaults.

type wireForwardingRule struct {
	EntryProtocol  string `json:"entry_protocol"`
	EntryPort      int    `json:"entry_port"`
	TargetProtocol string `json:"target_protocol"`
	TargetPort     int    `json:"target_port"`
	CertificateID  string `json:"certificate_id"`
	TLSPassthrough bool   `json:"tls_passthrough"`
}

// wireHealthCheck's proxy_protocol is not in the reference; it is sent back
// only when a client set it.
type wireHealthCheck struct {
	Protocol               string `json:"protocol"`
	Port                   int    `json:"port"`
	Path                   string `json:"path"`
	CheckIntervalSeconds   int    `json:"check_interval_seconds"`
	ResponseTimeoutSeconds int    `json:"response_timeout_seconds"`
	HealthyThreshold       int    `json:"healthy_threshold"`
	UnhealthyThreshold     int    `json:"unhealthy_threshold"`
	ProxyProtocol          *bool  `json:"proxy_protocol,omitempty"`
}

// wireStickySessions has the cookie fields only for type "cookies", as the
// reference describes and its examples show.
type wireStickySessions struct {
	Type             string `json:"type"`
	CookieName       string `json:"cookie_name,omitempty"`
	CookieTTLSeconds int    `json:"cookie_ttl_seconds,omitempty"`
}

type wireLBFirewall struct {
	Deny  []string `json:"deny"`
	Allow []string `json:"allow"`
}

// wireLoadBalancer is the full load balancer object. ip is "" until the
// load balancer is active; ipv6 appears only for DUALSTACK ones. A load
// balancer has either size (the deprecated slug) or size_unit, the two
// ways the reference offers to size one, so that a client echoing the
// object back (godo's AsRequest) does not send both. region is null for
// GLOBAL load balancers, which have none.
type wireLoadBalancer struct {
	ID                           string               `json:"id"`
	Name                         string               `json:"name"`
	ProjectID                    string               `json:"project_id"`
	IP                           string               `json:"ip"`
	IPv6                         string               `json:"ipv6,omitempty"`
	SizeUnit                     int                  `json:"size_unit,omitempty"`
	Size                         string               `json:"size,omitempty"`
	Algorithm                    string               `json:"algorithm"`
	Status                       string               `json:"status"`
	CreatedAt                    string               `json:"created_at"`
	ForwardingRules              []wireForwardingRule `json:"forwarding_rules"`
	HealthCheck                  wireHealthCheck      `json:"health_check"`
	StickySessions               wireStickySessions   `json:"sticky_sessions"`
	RedirectHTTPToHTTPS          bool                 `json:"redirect_http_to_https"`
	EnableProxyProtocol          bool                 `json:"enable_proxy_protocol"`
	EnableBackendKeepalive       bool                 `json:"enable_backend_keepalive"`
	HTTPIdleTimeoutSeconds       int                  `json:"http_idle_timeout_seconds"`
	VPCUUID                      string               `json:"vpc_uuid"`
	SubnetUUID                   string               `json:"subnet_uuid,omitempty"` // only when placed in one
	DisableLetsEncryptDNSRecords bool                 `json:"disable_lets_encrypt_dns_records"`
	Firewall                     wireLBFirewall       `json:"firewall"`
	Network                      string               `json:"network"`
	NetworkStack                 string               `json:"network_stack"`
	Type                         string               `json:"type"`
	TLSCipherPolicy              string               `json:"tls_cipher_policy"`
	Region                       *wireRegion          `json:"region"`
	Tag                          string               `json:"tag"`
	DropletIDs                   []int                `json:"droplet_ids"`
}

// wireCertificate follows specification/resources/certificates.
type wireCertificate struct {
	ID              string   `json:"id"`
	Name            string   `json:"name"`
	NotAfter        string   `json:"not_after"`
	SHA1Fingerprint string   `json:"sha1_fingerprint"`
	CreatedAt       string   `json:"created_at"`
	DNSNames        []string `json:"dns_names"`
	State           string   `json:"state"`
	Type            string   `json:"type"`
}

// Response roots.

type dropletsRoot struct {
	Droplets []wireDroplet `json:"droplets"`
	Links    wireLinks     `json:"links"`
	Meta     wireMeta      `json:"meta"`
}

type dropletRoot struct {
	Droplet wireDroplet `json:"droplet"`
	Links   *wireLinks  `json:"links,omitempty"`
}

type createdDropletsRoot struct {
	Droplets []wireDroplet `json:"droplets"`
	Links    wireLinks     `json:"links"`
}

type actionRoot struct {
	Action wireAction `json:"action"`
}

type accountRoot struct {
	Account wireAccount `json:"account"`
}

type loadBalancersRoot struct {
	LoadBalancers []wireLoadBalancer `json:"load_balancers"`
	Links         wireLinks          `json:"links"`
	Meta          wireMeta           `json:"meta"`
}

type loadBalancerRoot struct {
	LoadBalancer wireLoadBalancer `json:"load_balancer"`
}

type certificatesRoot struct {
	Certificates []wireCertificate `json:"certificates"`
	Links        wireLinks         `json:"links"`
	Meta         wireMeta          `json:"meta"`
}

type certificateRoot struct {
	Certificate wireCertificate `json:"certificate"`
}

// wireVolume is a block storage volume (resources/volumes/models/volume_full).
type wireVolume struct {
	ID              string      `json:"id"`
	Region          *wireRegion `json:"region"`
	DropletIDs      []int       `json:"droplet_ids"`
	Name            string      `json:"name"`
	Description     string      `json:"description"`
	SizeGigaBytes   int64       `json:"size_gigabytes"`
	CreatedAt       string      `json:"created_at"`
	FilesystemType  string      `json:"filesystem_type"`
	FilesystemLabel string      `json:"filesystem_label"`
	Tags            []string    `json:"tags"`
}

type volumesRoot struct {
	Volumes []wireVolume `json:"volumes"`
	Links   wireLinks    `json:"links"`
	Meta    wireMeta     `json:"meta"`
}

type volumeRoot struct {
	Volume wireVolume `json:"volume"`
}
