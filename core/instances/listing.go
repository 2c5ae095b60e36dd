package instances

import (
	"context"
	"fmt"
	"sync"
)

// Listing answers batches for a cloud whose API looks instances up one ID
// at a time or lists them all, page by page (DigitalOcean, Hetzner Cloud):
// a GET per instance, or one paged listing when that costs no more calls
// for this batch and the keys expected behind it (ListSizes, priced against
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

	sizes ListSizes
}

const listingScope = "all"

// Lookup answers the batch; convert maps an item, told whether its name
// identifies it (several instances may share a name on some clouds).
func (l *Listing[ID, T]) Lookup(ctx context.Context, keys []Key, convert func(item T, uniqueName bool) *Instance) (Answer, error) {
	g := Group(keys, l.Parse)
	results := g.Results
	if len(g.ByRef) == 0 && len(g.ByName) == 0 {
		return Answer{Results: results}, nil
	}
	if len(g.ByName) == 0 && !l.sizes.PreferFullFor(ctx, listingScope, len(g.ByRef), len(g.ByRef), l.PerPage) {
		l.getEach(ctx, g.ByRef, results, convert)
		return Answer{Results: results}, nil
	}

	items, err := l.List(ctx)
	if err != nil {
		return Answer{}, err
	}
	l.sizes.Set(listingScope, len(items))
	byID := make(map[ID]T, len(items))
	byName := make(map[string][]T, len(items))
	for _, it := range items {
		byID[l.IDOf(it)] = it
		byName[l.NameOf(it)] = append(byName[l.NameOf(it)], it)
	}
	unique := func(it T) bool { return len(byName[l.NameOf(it)]) == 1 }
	missing := map[ID][]int{}
	for id, idx := range g.ByRef {
		it, ok := byID[id]
		if !ok {
			missing[id] = idx
			continue
		}
		setAll(results, idx, Result{Instance: convert(it, unique(it))})
	}
	// A listing can miss one made or renamed while it ran: confirm.
	l.getEach(ctx, missing, results, convert)
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

func (l *Listing[ID, T]) getEach(ctx context.Context, ids map[ID][]int, results []Result, convert func(T, bool) *Instance) {
	n := l.Concurrency
	if n <= 0 {
		n = 8
	}
	sem := make(chan struct{}, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for id, idx := range ids {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			it, found, err := l.Get(ctx, id)
			var r Result
			switch {
			case err != nil:
				r.Err = err
			case found:
				// A GET says nothing of other instances with its name.
				r.Instance = convert(it, false)
			}
			mu.Lock()
			setAll(results, idx, r)
			mu.Unlock()
		})
	}
	wg.Wait()
}

func setAll(results []Result, idx []int, r Result) {
	for _, i := range idx {
		results[i] = r
	}
}
