package hetzner

import (
	"context"
	"net"
	"strconv"
	"strings"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/batch"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/instances"
)

const (
	providerPrefix = "hcloud://"
	// robotPrefixes are hcloud CCM's Robot (dedicated) servers, which this
	// driver does not serve.
	robotPrefix       = "hrobot://"
	robotLegacyPrefix = "hcloud://bm-"
	// getConcurrency bounds parallel GETs when those beat a full listing.
	getConcurrency = 8
	// LabelProvidedBy is the label hcloud CCM sets on every Node it
	// initializes ("cloud" for Cloud servers).
	LabelProvidedBy = "instance.hetzner.cloud/provided-by"
)

// ProviderID is the Node spec.providerID for a server.
func ProviderID(serverID int64) string { return providerPrefix + strconv.FormatInt(serverID, 10) }

// serverID parses hcloud://<id>.
func serverID(providerID string) (int64, error) {
	if strings.HasPrefix(providerID, robotPrefix) || strings.HasPrefix(providerID, robotLegacyPrefix) {
		return 0, cloudapi.Invalid("providerID %q is a Robot (dedicated) server; polyccm's hetzner driver serves Cloud servers only", providerID)
	}
	rest, ok := strings.CutPrefix(providerID, providerPrefix)
	if !ok {
		return 0, cloudapi.Invalid("providerID %q is not a Hetzner Cloud one (want %s<server-id>)", providerID, providerPrefix)
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	if err != nil || id <= 0 {
		return 0, cloudapi.Invalid("providerID %q has no server ID (want %s<server-id>)", providerID, providerPrefix)
	}
	return id, nil
}

// LookupInstances resolves a batch through core's listing: a GET per
// server, or one listing of every server when that costs no more calls
// (or names are asked for); a server a listing lacks is confirmed by GET.
// Server names are unique in a project, so a name identifies.
func (c *Cloud) LookupInstances(ctx context.Context, keys []instances.Key) (instances.Answer, error) {
	netID, err := c.networkID(ctx)
	if err != nil {
		return instances.Answer{}, err
	}
	return c.listing.Lookup(ctx, keys, func(s *hcloud.Server, _ bool) *instances.Instance { return c.toInstance(s, netID) })
}

// newListing is how core's listing reaches servers.
func (c *Cloud) newListing() *instances.Listing[int64, *hcloud.Server] {
	return &instances.Listing[int64, *hcloud.Server]{
		Listing: batch.Listing[int64, *hcloud.Server]{
			IDOf: func(s *hcloud.Server) int64 { return s.ID },
			Get: func(ctx context.Context, id int64) (*hcloud.Server, bool, error) {
				s, err := c.getServer(ctx, id)
				return s, s != nil, err
			},
			List:        func(ctx context.Context) ([]*hcloud.Server, error) { return c.listServers(ctx, "") },
			PerPage:     perPage,
			Concurrency: getConcurrency,
		},
		Parse:          serverID,
		NameOf:         func(s *hcloud.Server) string { return s.Name },
		ListByName:     c.listServers,
		Plural:         "servers",
		ProviderIDForm: providerPrefix + "<server-id>",
	}
}

// getServer returns nil, nil only when the API answered 404 not_found:
// hcloud-go maps exactly that to a nil server.
func (c *Cloud) getServer(ctx context.Context, id int64) (*hcloud.Server, error) {
	var s *hcloud.Server
	err := c.api.Do(ctx, "servers.get", func(ctx context.Context) error {
		var err error
		s, _, err = c.client.Server.GetByID(ctx, id)
		return err
	})
	return s, err
}

// listServers pages through every server, or the one with the given name.
func (c *Cloud) listServers(ctx context.Context, name string) ([]*hcloud.Server, error) {
	var all []*hcloud.Server
	seen := map[int64]bool{}
	_, err := pages(ctx, c, "servers.list", func(ctx context.Context, o hcloud.ListOpts) ([]*hcloud.Server, *hcloud.Response, error) {
		return c.client.Server.List(ctx, hcloud.ServerListOpts{ListOpts: o, Name: name})
	}, func(page []*hcloud.Server) bool {
		for _, s := range page {
			// Pages shift when servers come and go mid-listing.
			if !seen[s.ID] {
				seen[s.ID] = true
				all = append(all, s)
			}
		}
		return true
	})
	return all, err
}

// toInstance maps a server as hcloud CCM does: region is the location
// (fsn1), zone its legacy datacenter name (fsn1-dc14) unless
// instances.zoneLabel is off, ExternalIPs by address family, the
// InternalIP in the configured Network.
func (c *Cloud) toInstance(s *hcloud.Server, netID int64) *instances.Instance {
	inst := &instances.Instance{
		ProviderID: ProviderID(s.ID),
		Name:       s.Name,
		Shutdown:   s.Status == hcloud.ServerStatusOff,
		Labels:     map[string]string{LabelProvidedBy: "cloud"},
		Addresses:  c.addresses(s, netID),
	}
	if s.ServerType != nil {
		inst.InstanceType = s.ServerType.Name
	}
	if s.Location != nil {
		inst.Region = s.Location.Name
		if c.cfg.Instances.ZoneLabel {
			inst.Zone = legacyDatacenter(s.Location.Name)
		}
	}
	return inst
}

func (c *Cloud) addresses(s *hcloud.Server, netID int64) []v1.NodeAddress {
	addrs := []v1.NodeAddress{{Type: v1.NodeHostName, Address: s.Name}}
	fam := c.cfg.Instances.AddressFamily
	if (fam == FamilyIPv4 || fam == FamilyDualStack) && !s.PublicNet.IPv4.IsUnspecified() {
		addrs = append(addrs, v1.NodeAddress{Type: v1.NodeExternalIP, Address: s.PublicNet.IPv4.IP.String()})
	}
	if (fam == FamilyIPv6 || fam == FamilyDualStack) && !s.PublicNet.IPv6.IsUnspecified() {
		// The server owns a /64; its own address is the network's ::1.
		ip := make(net.IP, len(s.PublicNet.IPv6.IP))
		copy(ip, s.PublicNet.IPv6.IP)
		ip[len(ip)-1] |= 1
		addrs = append(addrs, v1.NodeAddress{Type: v1.NodeExternalIP, Address: ip.String()})
	}
	if netID > 0 {
		for _, pn := range s.PrivateNet {
			if pn.Network != nil && pn.Network.ID == netID && pn.IP != nil {
				addrs = append(addrs, v1.NodeAddress{Type: v1.NodeInternalIP, Address: pn.IP.String()})
			}
		}
	}
	return addrs
}

// legacyDatacenter is the zone hcloud CCM gives a location: the name of
// the one datacenter each location had when zones were datacenters.
func legacyDatacenter(location string) string {
	switch location {
	case "nbg1":
		return "nbg1-dc3"
	case "hel1":
		return "hel1-dc2"
	case "fsn1":
		return "fsn1-dc14"
	case "ash":
		return "ash-dc1"
	case "hil":
		return "hil-dc1"
	case "sin":
		return "sin-dc1"
	}
	return location
}
