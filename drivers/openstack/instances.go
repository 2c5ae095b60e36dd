package openstack

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/trunk_details"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/pagination"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/polyccm/polyccm/core/batch"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/instances"
)

// ProviderName is the providerID scheme openstack-cloud-controller-manager
// writes and reads.
const ProviderName = "openstack"

// statusShutoff is a stopped server: its Node gets the shutdown taint.
const statusShutoff = "SHUTOFF"

// pageSize is the servers and ports asked for per page (Nova's default
// max_limit is 1000).
const pageSize = 1000

// getConcurrency bounds parallel GETs when those beat a full listing.
const getConcurrency = 8

// portBatch bounds the server IDs one ports query filters on, so the URL
// stays short (each ID is 36 characters).
const portBatch = 50

// server is a server with what its Node needs besides: its ports (the
// addresses) and its flavor's name (the instance type).
type server struct {
	servers.Server
	ports []trunkPort
	// subportAddrs are the fixed IPs of its trunk's subports, by network
	// name: upstream adds them to the server's addresses.
	subportAddrs map[string][]string
	instanceType string
}

// trunkPort is a port with Neutron's trunk extension: a trunk's parent
// port lists its subports. Both parts are embedded: gophercloud decodes
// each embedded struct on its own (ports.Port has its own UnmarshalJSON).
type trunkPort struct {
	ports.Port
	trunk_details.TrunkDetailsExt
}

// ProviderID is a server's providerID: openstack:///<id>, or with
// regionalProviderID openstack://<region>/<id>, as upstream writes them.
func (c *Cloud) ProviderID(id string) string {
	if c.cfg.RegionalProviderID {
		return ProviderName + "://" + c.cfg.Region + "/" + id
	}
	return ProviderName + ":///" + id
}

// uuidRE is an OpenStack resource ID.
var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$`)

var providerIDRE = regexp.MustCompile(`^` + ProviderName + `://([^/]*)/([^/]+)$`)

// serverID reads both providerID forms upstream accepts; a region that is
// not this cloud's is an error, as upstream's.
func (c *Cloud) serverID(providerID string) (string, error) {
	m := providerIDRE.FindStringSubmatch(providerID)
	if m == nil {
		return "", cloudapi.Invalid("providerID %q is not openstack:///<server-id> or openstack://<region>/<server-id>", providerID)
	}
	if m[1] != "" && m[1] != c.cfg.Region {
		return "", cloudapi.Invalid("providerID %q is in region %q, not drivers.openstack.region %q", providerID, m[1], c.cfg.Region)
	}
	return m[2], nil
}

// LookupInstances resolves a batch through core's listing: a GET per
// server, or one paged listing of every server when that costs no more
// calls (a join storm, or names asked for); a server a listing lacks is
// confirmed by GET before its Node is called gone. The found servers'
// ports come in one Neutron query per 50 servers.
func (c *Cloud) LookupInstances(ctx context.Context, keys []instances.Key) (instances.Answer, error) {
	return c.listing.Lookup(ctx, keys, func(s *server, unique bool) *instances.Instance { return c.toInstance(s, unique) })
}

func (c *Cloud) newListing() *instances.Listing[string, *server] {
	return &instances.Listing[string, *server]{
		Listing: batch.Listing[string, *server]{
			IDOf: func(s *server) string { return s.ID },
			Get: func(ctx context.Context, id string) (*server, bool, error) {
				s, err := c.getServer(ctx, id)
				if cloudapi.IsNotFound(err) {
					return nil, false, nil
				}
				return s, err == nil, err
			},
			List:        func(ctx context.Context) ([]*server, error) { return c.listServers(ctx, "") },
			PerPage:     pageSize,
			Concurrency: getConcurrency,
		},
		Parse:  c.serverID,
		NameOf: func(s *server) string { return s.Name },
		// Nova filters by a regular expression: anchored, quoted, as
		// upstream asks.
		ListByName: func(ctx context.Context, name string) ([]*server, error) {
			return c.listServers(ctx, "^"+regexp.QuoteMeta(name)+"$")
		},
		Plural:         "servers",
		ProviderIDForm: ProviderName + ":///<server-id>",
	}
}

func (c *Cloud) getServer(ctx context.Context, id string) (*server, error) {
	cl, err := c.session(ctx)
	if err != nil {
		return nil, err
	}
	var s *servers.Server
	if err := c.api.Do(ctx, "compute.servers.get", func(ctx context.Context) error {
		s, err = servers.Get(ctx, cl.compute, id).Extract()
		return err
	}); err != nil {
		return nil, err
	}
	out := []*server{{Server: *s}}
	return out[0], c.complete(ctx, cl, out)
}

// listServers pages through every server (name: a Nova name filter).
func (c *Cloud) listServers(ctx context.Context, name string) ([]*server, error) {
	cl, err := c.session(ctx)
	if err != nil {
		return nil, err
	}
	var all []*server
	seen := map[string]bool{}
	opts := servers.ListOpts{Name: name, Limit: pageSize}
	for {
		var page []servers.Server
		var next string
		if err := c.api.Do(ctx, "compute.servers.list", func(ctx context.Context) error {
			page, next, err = onePage(ctx, servers.List(cl.compute, opts), servers.ExtractServers)
			return err
		}); err != nil {
			return nil, err
		}
		for _, s := range page {
			// Pages shift when servers come and go mid-listing.
			if !seen[s.ID] {
				seen[s.ID] = true
				all = append(all, &server{Server: s})
			}
		}
		if next == "" || len(page) == 0 {
			break
		}
		opts.Marker = page[len(page)-1].ID
	}
	return all, c.complete(ctx, cl, all)
}

// complete reads what the servers' Nodes need besides the servers: their
// ports and their flavors' names.
func (c *Cloud) complete(ctx context.Context, cl *clients, ss []*server) error {
	if err := c.attachPorts(ctx, cl, ss); err != nil {
		return err
	}
	for _, s := range ss {
		t, err := c.instanceType(ctx, cl, s.Flavor)
		if err != nil {
			return err
		}
		s.instanceType = t
	}
	return nil
}

// onePage fetches the first page of a pager, and says whether there is a
// next: each page is its own call, retried and counted alone.
func onePage[T any](ctx context.Context, p pagination.Pager, extract func(pagination.Page) ([]T, error)) ([]T, string, error) {
	var items []T
	var next string
	err := p.EachPage(ctx, func(_ context.Context, page pagination.Page) (bool, error) {
		var err error
		if items, err = extract(page); err != nil {
			return false, err
		}
		if u, err := page.NextPageURL(); err == nil {
			next = u
		}
		return false, nil // one page a call
	})
	return items, next, err
}

// anyOf filters a Neutron listing on several values of one field:
// Neutron ORs a repeated filter.
type anyOf struct {
	field  string
	values []string
}

func (q anyOf) ToPortListQuery() (string, error) {
	return "?" + url.Values{q.field: q.values}.Encode(), nil
}
func (q anyOf) ToNetworkListQuery() (string, error) { return q.ToPortListQuery() }

// listPorts lists the ports whose field is any of values, a query per 50.
func (c *Cloud) listPorts(ctx context.Context, cl *clients, field string, values []string) ([]trunkPort, error) {
	var out []trunkPort
	for len(values) > 0 {
		n := min(len(values), portBatch)
		var got []trunkPort
		if err := c.api.Do(ctx, "network.ports.list", func(ctx context.Context) error {
			pages, err := ports.List(cl.network, anyOf{field, values[:n]}).AllPages(ctx)
			if err != nil {
				return err
			}
			return ports.ExtractPortsInto(pages, &got)
		}); err != nil {
			return nil, err
		}
		out = append(out, got...)
		values = values[n:]
	}
	return out, nil
}

// attachPorts reads the servers' ports and, for trunks, their subports
// and those subports' network names: a few queries per 50 servers, where
// upstream asks per server and per subport.
func (c *Cloud) attachPorts(ctx context.Context, cl *clients, ss []*server) error {
	byID := make(map[string]*server, len(ss))
	ids := make([]string, 0, len(ss))
	for _, s := range ss {
		byID[s.ID] = s
		ids = append(ids, s.ID)
	}
	got, err := c.listPorts(ctx, cl, "device_id", ids)
	if err != nil {
		return err
	}
	parentOf := map[string]*server{} // subport ID -> the server of its trunk
	var subIDs []string
	for _, p := range got {
		s := byID[p.DeviceID]
		if s == nil {
			continue
		}
		s.ports = append(s.ports, p)
		for _, sp := range p.TrunkDetails.SubPorts {
			parentOf[sp.PortID] = s
			subIDs = append(subIDs, sp.PortID)
		}
	}
	if len(subIDs) == 0 {
		return nil
	}
	subs, err := c.listPorts(ctx, cl, "id", subIDs)
	if err != nil {
		return err
	}
	names, err := c.networkNames(ctx, cl, subs)
	if err != nil {
		return err
	}
	for _, p := range subs {
		s := parentOf[p.ID]
		if s == nil {
			continue
		}
		if s.subportAddrs == nil {
			s.subportAddrs = map[string][]string{}
		}
		for _, ip := range p.FixedIPs {
			s.subportAddrs[names[p.NetworkID]] = append(s.subportAddrs[names[p.NetworkID]], ip.IPAddress)
		}
	}
	return nil
}

// networkNames names the networks of ports, a query per 50.
func (c *Cloud) networkNames(ctx context.Context, cl *clients, ps []trunkPort) (map[string]string, error) {
	var ids []string
	for _, p := range ps {
		if !slices.Contains(ids, p.NetworkID) {
			ids = append(ids, p.NetworkID)
		}
	}
	names := map[string]string{}
	for len(ids) > 0 {
		n := min(len(ids), portBatch)
		var got []networks.Network
		if err := c.api.Do(ctx, "network.networks.list", func(ctx context.Context) error {
			pages, err := networks.List(cl.network, anyOf{"id", ids[:n]}).AllPages(ctx)
			if err != nil {
				return err
			}
			got, err = networks.ExtractNetworks(pages)
			return err
		}); err != nil {
			return nil, err
		}
		for _, nw := range got {
			names[nw.ID] = nw.Name
		}
		ids = ids[n:]
	}
	return names, nil
}

// toInstance maps a server as openstack-cloud-controller-manager does:
// the zone is the availability zone (sanitized as a label value), the
// region drivers.openstack.region.
func (c *Cloud) toInstance(s *server, _ bool) *instances.Instance {
	return &instances.Instance{
		ProviderID:   c.ProviderID(s.ID),
		Name:         s.Name,
		InstanceType: s.instanceType,
		Zone:         sanitizeLabel(s.AvailabilityZone),
		Region:       c.cfg.Region,
		Shutdown:     s.Status == statusShutoff,
		Addresses:    nodeAddresses(&s.Server, s.ports, s.subportAddrs, c.cfg.Networking),
	}
}

// instanceType is the flavor's name as upstream reads it: the name a
// server embeds (Nova 2.47+: original_name) when it is a label value,
// else the flavor's name by its ID (older Novas embed only the ID), else
// its ID. Flavor names are cached: a cluster has few flavors.
func (c *Cloud) instanceType(ctx context.Context, cl *clients, f map[string]any) (string, error) {
	if name, ok := f["original_name"].(string); ok && isLabelValue(name) {
		return name, nil
	}
	id, ok := f["id"].(string)
	if !ok {
		return "", fmt.Errorf("the server's flavor has neither a usable original_name nor an id: %v", f)
	}
	c.flavorMu.Lock()
	name, known := c.flavors[id]
	c.flavorMu.Unlock()
	if known {
		return name, nil
	}
	var fl *flavors.Flavor
	err := c.api.Do(ctx, "compute.flavors.get", func(ctx context.Context) error {
		var err error
		fl, err = flavors.Get(ctx, cl.compute, id).Extract()
		return err
	})
	if err != nil {
		return "", err
	}
	name = fl.ID
	if isLabelValue(fl.Name) {
		name = fl.Name
	}
	c.flavorMu.Lock()
	c.flavors[id] = name
	c.flavorMu.Unlock()
	return name, nil
}

func isLabelValue(v string) bool { return len(validation.IsValidLabelValue(v)) == 0 }

var labelInvalid = regexp.MustCompile(`[^-a-zA-Z0-9_.]+`)

// sanitizeLabel makes an availability zone a label value as upstream's
// util.SanitizeLabel does: each run of characters a label value cannot
// hold becomes '-', the ends are trimmed of '-', '_' and '.', and it is
// cut to 63 characters.
func sanitizeLabel(v string) string {
	s := strings.Trim(labelInvalid.ReplaceAllString(v, "-"), "-_.")
	if len(s) > validation.LabelValueMaxLength {
		s = s[:validation.LabelValueMaxLength]
	}
	return s
}
