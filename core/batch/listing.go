package batch

import (
	"context"
	"sync"
)

// Listing resolves IDs on a cloud whose API looks things up one ID at a
// time or lists them all, page by page (DigitalOcean's and Hetzner Cloud's
// droplets, servers and volumes): a GET per ID, or one paged listing when
// that costs no more calls for this batch and the keys expected behind it
// (ListSizes, priced against recent demand). An ID a listing lacks is
// confirmed with a GET before it is called gone: a listing that raced
// with changes never makes a thing look deleted. core/instances.Listing
// adds names on top; a driver's volumes use it as is.
type Listing[ID comparable, T any] struct {
	// IDOf reads an item's ID.
	IDOf func(T) ID
	// Get looks one ID up; found is false only when the cloud answered
	// that it does not exist.
	Get func(ctx context.Context, id ID) (item T, found bool, err error)
	// List lists every item.
	List func(ctx context.Context) ([]T, error)
	// PerPage is the size of a listing page.
	PerPage int
	// Concurrency bounds parallel GETs (default 8).
	Concurrency int

	sizes ListSizes
}

// Outcome is what the cloud said of one ID: the item, definitively no
// such item (Found false, Err nil), or an error.
type Outcome[T any] struct {
	Item  T
	Found bool
	Err   error
}

const listingScope = "all"

// Resolve answers every ID. listed is the full listing when one was made
// (the items a caller can cache beyond those asked for), nil when GETs
// answered; mustList forces a listing (a lookup by name needs one). An
// error is the listing's, and ambiguous for every ID.
func (l *Listing[ID, T]) Resolve(ctx context.Context, ids []ID, mustList bool) (out map[ID]Outcome[T], listed []T, err error) {
	out = make(map[ID]Outcome[T], len(ids))
	if !mustList && (len(ids) == 0 || !l.sizes.PreferFullFor(ctx, listingScope, len(ids), len(ids), l.PerPage)) {
		l.getEach(ctx, ids, out)
		return out, nil, nil
	}
	items, err := l.List(ctx)
	if err != nil {
		return nil, nil, err
	}
	l.sizes.Set(listingScope, len(items))
	byID := make(map[ID]T, len(items))
	for _, it := range items {
		byID[l.IDOf(it)] = it
	}
	var missing []ID
	for _, id := range ids {
		if it, ok := byID[id]; ok {
			out[id] = Outcome[T]{Item: it, Found: true}
		} else {
			missing = append(missing, id)
		}
	}
	// A listing can miss one made while it ran: confirm.
	l.getEach(ctx, missing, out)
	if items == nil {
		items = []T{}
	}
	return out, items, nil
}

func (l *Listing[ID, T]) getEach(ctx context.Context, ids []ID, out map[ID]Outcome[T]) {
	n := l.Concurrency
	if n <= 0 {
		n = 8
	}
	sem := make(chan struct{}, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, id := range ids {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			it, found, err := l.Get(ctx, id)
			mu.Lock()
			out[id] = Outcome[T]{Item: it, Found: found && err == nil, Err: err}
			mu.Unlock()
		})
	}
	wg.Wait()
}
