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
