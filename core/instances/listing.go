package instances

import (
	"context"
	"fmt"
	"sync"

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
	// Parse turns a providerID into the cloud's ID.
	Parse func(providerID string) (ID, error)
	// IDOf and NameOf read an item.
	IDOf   func(T) ID
	NameOf func(T) string
	// Get looks one instance up; found is false only when the cloud
	// answered that it does not exist.
	Get func(ctx context.Context, id ID) (item T, found bool, err error)
	// List lists every instance; ListByName those with one name (nil: a
	// name missing from a full listing is gone).
	List       func(ctx context.Context) ([]T, error)
	ListByName func(ctx context.Context, name string) ([]T, error)
	// PerPage is the size of a listing page.
	PerPage int
	// Concurrency bounds parallel GETs (default 8).
	Concurrency int
	// Plural and ProviderIDForm name the cloud's instances and its
	// providerID form, for the error about a name several instances share
	// ("droplets", "digitalocean://<droplet-id>").
	Plural, ProviderIDForm string

	once sync.Once
	ids  *batch.Listing[ID, T]
}

// Lookup answers the batch; convert maps an item, told whether its name
// identifies it (several instances may share a name on some clouds).
func (l *Listing[ID, T]) Lookup(ctx context.Context, keys []Key, convert func(item T, uniqueName bool) *Instance) (Answer, error) {
	l.once.Do(func() {
		l.ids = &batch.Listing[ID, T]{IDOf: l.IDOf, Get: l.Get, List: l.List, PerPage: l.PerPage, Concurrency: l.Concurrency}
	})
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
	outcomes, items, err := l.ids.Resolve(ctx, ids, len(g.ByName) > 0)
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
