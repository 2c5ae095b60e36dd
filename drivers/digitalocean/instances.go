package digitalocean

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

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

// LookupInstances resolves a batch: by listing every droplet when that is
// cheapest (or names are asked for), else by a GET per droplet ID. A
// droplet missing from a listing is confirmed with a direct lookup before it
// is reported absent, so a listing that raced with changes never makes a
// Node look deleted.
func (c *Cloud) LookupInstances(ctx context.Context, keys []instances.Key) (instances.Answer, error) {
	results := make([]instances.Result, len(keys))
	ids := make([]int, len(keys)) // 0: look up by name (or already failed)
	byName := false
	nIDs := 0
	for i, k := range keys {
		if k.ProviderID == "" {
			byName = true
			continue
		}
		id, err := dropletID(k.ProviderID)
		if err != nil {
			results[i].Err = err
			continue
		}
		ids[i] = id
		nIDs++
	}
	if nIDs == 0 && !byName {
		return instances.Answer{Results: results}, nil
	}

	// A GET per droplet, or a listing page per 200: the listing also
	// answers the keys expected next (batch.Expected), through the cache.
	pages := (int(c.lastTotal.Load()) + perPage - 1) / perPage
	if !byName && pages > 0 && nIDs+batch.Expected(ctx) < pages {
		c.getEach(ctx, ids, results)
		return instances.Answer{Results: results}, nil
	}

	droplets, err := c.listDroplets(ctx, "")
	if err != nil {
		return instances.Answer{}, err
	}
	index := map[int]*godo.Droplet{}
	names := map[string][]*godo.Droplet{}
	for i := range droplets {
		d := &droplets[i]
		index[d.ID] = d
		names[d.Name] = append(names[d.Name], d)
	}

	var missing []int // key indexes to confirm
	for i, k := range keys {
		switch {
		case results[i].Err != nil:
		case ids[i] != 0:
			if d, ok := index[ids[i]]; ok {
				results[i].Instance = toInstance(d, len(names[d.Name]) == 1)
			} else {
				missing = append(missing, i)
			}
		default:
			switch ds := names[k.NodeName]; len(ds) {
			case 0:
				missing = append(missing, i)
			case 1:
				results[i].Instance = toInstance(ds[0], true)
			default:
				results[i].Err = fmt.Errorf("%d droplets are named %q; set the Node's spec.providerID (%s<droplet-id>) to say which", len(ds), k.NodeName, providerPrefix)
			}
		}
	}
	c.confirm(ctx, keys, ids, missing, results)

	seen := make([]instances.Instance, 0, len(droplets))
	for i := range droplets {
		d := &droplets[i]
		seen = append(seen, *toInstance(d, len(names[d.Name]) == 1))
	}
	return instances.Answer{Results: results, Seen: seen}, nil
}

// confirm re-asks about keys a listing did not contain.
func (c *Cloud) confirm(ctx context.Context, keys []instances.Key, ids []int, missing []int, results []instances.Result) {
	for _, i := range missing {
		if ids[i] != 0 {
			d, err := c.getDroplet(ctx, ids[i])
			switch {
			case cloudapi.IsNotFound(err):
			case err != nil:
				results[i].Err = err
			default:
				results[i].Instance = toInstance(d, false)
			}
			continue
		}
		ds, err := c.listDroplets(ctx, keys[i].NodeName)
		switch {
		case err != nil:
			results[i].Err = err
		case len(ds) == 1:
			results[i].Instance = toInstance(&ds[0], true)
		case len(ds) > 1:
			results[i].Err = fmt.Errorf("%d droplets are named %q; set the Node's spec.providerID (%s<droplet-id>) to say which", len(ds), keys[i].NodeName, providerPrefix)
		}
	}
}

func (c *Cloud) getEach(ctx context.Context, ids []int, results []instances.Result) {
	sem := make(chan struct{}, getConcurrency)
	var wg sync.WaitGroup
	for i, id := range ids {
		if id == 0 || results[i].Err != nil {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			d, err := c.getDroplet(ctx, id)
			switch {
			case cloudapi.IsNotFound(err):
			case err != nil:
				results[i].Err = err
			default:
				results[i].Instance = toInstance(d, false)
			}
		}()
	}
	wg.Wait()
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
		if name == "" && resp.Meta != nil {
			c.lastTotal.Store(int64(resp.Meta.Total))
		}
		return true
	})
	return all, err
}

// toInstance maps a droplet. uniqueName says whether its name can identify
// it (names are not unique in DigitalOcean).
func toInstance(d *godo.Droplet, uniqueName bool) *instances.Instance {
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
