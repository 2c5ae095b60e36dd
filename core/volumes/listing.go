package volumes

import (
	"context"

	"github.com/polyccm/polyccm/core/batch"
)

// Listing answers batches of disk lookups for a cloud that looks disks up
// one ID at a time or lists them all (DigitalOcean, Hetzner Cloud), with
// core/batch's listing: a GET each or one paged listing, priced against
// recent demand, what a listing lacks confirmed by GET. A driver gives it
// the calls and the mapping; Lookup is its LookupVolumes.
type Listing[ID comparable, T any] struct {
	batch.Listing[ID, T]
	// Parse turns a key into the cloud's ID; an error is that key's.
	Parse func(Key) (ID, error)
}

// Lookup answers the batch; convert maps a disk.
func (l *Listing[ID, T]) Lookup(ctx context.Context, keys []Key, convert func(T) *Volume) (Answer, error) {
	results := make([]Result, len(keys))
	byID := map[ID][]int{}
	for i, k := range keys {
		id, err := l.Parse(k)
		if err != nil {
			results[i].Err = err
			continue
		}
		byID[id] = append(byID[id], i)
	}
	if len(byID) == 0 {
		return Answer{Results: results}, nil
	}
	ids := make([]ID, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	outcomes, listed, err := l.Resolve(ctx, ids, false)
	if err != nil {
		return Answer{}, err
	}
	for id, idx := range byID {
		o := outcomes[id]
		r := Result{Err: o.Err}
		if o.Found {
			r.Volume = convert(o.Item)
		}
		for _, i := range idx {
			results[i] = r
		}
	}
	var seen []Volume
	for _, it := range listed {
		seen = append(seen, *convert(it))
	}
	return Answer{Results: results, Seen: seen}, nil
}
