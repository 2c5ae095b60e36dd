package instances

import (
	"context"
	"fmt"

	"github.com/polyccm/polyccm/core/batch"
)

// Listing answers batches for a cloud whose API looks instances up one ID
// at a time or lists them all, page by page (DigitalOcean, Hetzner Cloud):
// a GET per instance, or one paged listing when that costs no more calls
// for this batch and the keys expected behind it (batch.ListSizes, priced against
// recent demand). An instance a listing lacks is confirmed with a GET (or
// a listing by name) before it is reported gone: a listing that raced with
// changes never makes a Node look deleted. A driver gives it the calls and
// the mapping; Lookup is its whole Source.
type Listing[ID comparable, T any] struct {
	// Listing looks instances up by ID: IDOf, Get (found is false only
	// when the cloud answered that there is none), List, PerPage and
	// Concurrency.
	batch.Listing[ID, T]
	// Parse turns a providerID into the cloud's ID.
	Parse func(providerID string) (ID, error)
	// NameOf reads an item's name.
	NameOf func(T) string
	// ListByName lists the instances with one name (nil: a name missing
	// from a full listing is gone).
	ListByName func(ctx context.Context, name string) ([]T, error)
	// Plural and ProviderIDForm name the cloud's instances and its
	// providerID form, for the error about a name several instances share
	// ("droplets", "digitalocean://<droplet-id>").
	Plural, ProviderIDForm string
}

// Lookup answers the batch; convert maps an item, told whether its name
// identifies it (several instances may share a name on some clouds).
func (l *Listing[ID, T]) Lookup(ctx context.Context, keys []Key, convert func(item T, uniqueName bool) *Instance) (Answer, error) {
	g := Group(keys, l.Parse)
	results := g.Results
	if len(g.ByRef) == 0 && len(g.ByName) == 0 {
		return Answer{Results: results}, nil
	}
	ids := make([]ID, 0, len(g.ByRef))
	for id := range g.ByRef {
		ids = append(ids, id)
	}
	// Names are found only in a listing.
	outcomes, items, err := l.Resolve(ctx, ids, len(g.ByName) > 0)
	if err != nil {
		return Answer{}, err
	}
	byName := make(map[string][]T, len(items))
	listed := make(map[ID]bool, len(items))
	for _, it := range items {
		byName[l.NameOf(it)] = append(byName[l.NameOf(it)], it)
		listed[l.IDOf(it)] = true
	}
	unique := func(it T) bool { return len(byName[l.NameOf(it)]) == 1 }
	for id, idx := range g.ByRef {
		o := outcomes[id]
		r := Result{Err: o.Err}
		if o.Found {
			// A GET says nothing of other instances with its name.
			r.Instance = convert(o.Item, listed[id] && unique(o.Item))
		}
		setAll(results, idx, r)
	}
	for name, idx := range g.ByName {
		its := byName[name]
		if len(its) == 0 && l.ListByName != nil {
			if its, err = l.ListByName(ctx, name); err != nil {
				setAll(results, idx, Result{Err: err})
				continue
			}
		}
		setAll(results, idx, l.byName(name, its, convert))
	}
	if items == nil {
		return Answer{Results: results}, nil
	}
	seen := make([]Instance, 0, len(items))
	for _, it := range items {
		seen = append(seen, *convert(it, unique(it)))
	}
	return Answer{Results: results, Seen: seen}, nil
}

// byName is the answer for a Node name: none is gone, one is the
// instance, several cannot be told apart.
func (l *Listing[ID, T]) byName(name string, its []T, convert func(T, bool) *Instance) Result {
	switch len(its) {
	case 0:
		return Result{}
	case 1:
		return Result{Instance: convert(its[0], true)}
	}
	plural := l.Plural
	if plural == "" {
		plural = "instances"
	}
	return Result{Err: fmt.Errorf("%d %s are named %q; set the Node's spec.providerID (%s) to say which", len(its), plural, name, l.ProviderIDForm)}
}

func setAll(results []Result, idx []int, r Result) {
	for _, i := range idx {
		results[i] = r
	}
}
