package digitalocean

import (
	"context"
	"strconv"
	"strings"

	"github.com/digitalocean/godo"
	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/batch"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/instances"
)

const (
	providerPrefix = "digitalocean://"
	// perPage is the API's maximum page size.
	perPage = 200
	// getConcurrency bounds parallel GETs when those beat a full listing.
	getConcurrency = 8
)

// ProviderID is the Node spec.providerID for a droplet.
func ProviderID(dropletID int) string { return providerPrefix + strconv.Itoa(dropletID) }

// dropletID parses digitalocean://<id> (also the digitalocean:///<id> form
// some installers write).
func dropletID(providerID string) (int, error) {
	rest, ok := strings.CutPrefix(providerID, providerPrefix)
	if !ok {
		return 0, cloudapi.Invalid("providerID %q is not a DigitalOcean one (want %s<droplet-id>)", providerID, providerPrefix)
	}
	rest = strings.TrimPrefix(rest, "/")
	id, err := strconv.Atoi(rest)
	if err != nil || id <= 0 {
		return 0, cloudapi.Invalid("providerID %q has no droplet ID (want %s<droplet-id>)", providerID, providerPrefix)
	}
	return id, nil
}

// LookupInstances resolves a batch through core's listing: a GET per
// droplet, or one listing of every droplet when that costs no more calls
// (or names are asked for); a droplet a listing lacks is confirmed by GET.
func (c *Cloud) LookupInstances(ctx context.Context, keys []instances.Key) (instances.Answer, error) {
	return c.listing.Lookup(ctx, keys, toInstance)
}

// newListing is how core's listing reaches droplets.
func (c *Cloud) newListing() *instances.Listing[int, godo.Droplet] {
	return &instances.Listing[int, godo.Droplet]{
		Listing: batch.Listing[int, godo.Droplet]{
			IDOf: func(d godo.Droplet) int { return d.ID },
			Get: func(ctx context.Context, id int) (godo.Droplet, bool, error) {
				d, err := c.getDroplet(ctx, id)
				if cloudapi.IsNotFound(err) || (err == nil && d == nil) {
					return godo.Droplet{}, false, nil
				}
				if err != nil {
					return godo.Droplet{}, false, err
				}
				return *d, true, nil
			},
			List:        func(ctx context.Context) ([]godo.Droplet, error) { return c.listDroplets(ctx, "") },
			PerPage:     perPage,
			Concurrency: getConcurrency,
		},
		Parse:          dropletID,
		NameOf:         func(d godo.Droplet) string { return d.Name },
		ListByName:     c.listDroplets,
		Plural:         "droplets",
		ProviderIDForm: providerPrefix + "<droplet-id>",
	}
}

func (c *Cloud) getDroplet(ctx context.Context, id int) (*godo.Droplet, error) {
	var d *godo.Droplet
	err := c.api.Do(ctx, "droplets.get", func(ctx context.Context) error {
		var err error
		d, _, err = c.client.Droplets.Get(ctx, id)
		return err
	})
	return d, err
}

// listDroplets pages through every droplet, or those with the given name.
func (c *Cloud) listDroplets(ctx context.Context, name string) ([]godo.Droplet, error) {
	var all []godo.Droplet
	seen := map[int]bool{}
	list := c.client.Droplets.List
	if name != "" {
		list = func(ctx context.Context, opt *godo.ListOptions) ([]godo.Droplet, *godo.Response, error) {
			return c.client.Droplets.ListByName(ctx, name, opt)
		}
	}
	err := pages(ctx, c, "droplets.list", list, func(page []godo.Droplet, resp *godo.Response) bool {
		for _, d := range page {
			// Pages shift when droplets come and go mid-listing.
			if !seen[d.ID] {
				seen[d.ID] = true
				all = append(all, d)
			}
		}
		return true
	})
	return all, err
}

// toInstance maps a droplet. uniqueName says whether its name can identify
// it (names are not unique in DigitalOcean).
func toInstance(d godo.Droplet, uniqueName bool) *instances.Instance {
	inst := &instances.Instance{
		ProviderID:   ProviderID(d.ID),
		InstanceType: d.SizeSlug,
		Shutdown:     d.Status == "off" || d.Status == "archive",
	}
	if d.SizeSlug == "" && d.Size != nil {
		inst.InstanceType = d.Size.Slug
	}
	if uniqueName {
		inst.Name = d.Name
	}
	if d.Region != nil {
		inst.Region = d.Region.Slug
	}
	var addrs []v1.NodeAddress
	if d.Networks != nil {
		for _, n := range d.Networks.V4 {
			switch n.Type {
			case "private":
				addrs = append(addrs, v1.NodeAddress{Type: v1.NodeInternalIP, Address: n.IPAddress})
			case "public":
				addrs = append(addrs, v1.NodeAddress{Type: v1.NodeExternalIP, Address: n.IPAddress})
			}
		}
		for _, n := range d.Networks.V6 {
			if n.Type == "public" {
				addrs = append(addrs, v1.NodeAddress{Type: v1.NodeExternalIP, Address: n.IPAddress})
			}
		}
	}
	if d.Name != "" {
		addrs = append(addrs, v1.NodeAddress{Type: v1.NodeHostName, Address: d.Name})
	}
	inst.Addresses = addrs
	return inst
}
