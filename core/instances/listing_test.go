package instances_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/polyccm/polyccm/core/batch"
	"github.com/polyccm/polyccm/core/instances"
)

type item struct {
	id   int
	name string
}

// cloud is an ID-only API: GET by ID, a paged listing, a listing by name.
type cloud struct {
	mu         sync.Mutex
	items      map[int]item
	hidden     map[int]bool // missing from the full listing (made while it ran)
	gets, list int
	failGet    error
}

func (c *cloud) listing() *instances.Listing[int, item] {
	l := &instances.Listing[int, item]{
		Plural: "things", ProviderIDForm: "x://<id>",
		Parse: func(p string) (int, error) {
			id, err := strconv.Atoi(strings.TrimPrefix(p, "x://"))
			if err != nil {
				return 0, errors.New("bad providerID")
			}
			return id, nil
		},
		NameOf:  func(it item) string { return it.name },
		Listing: batch.Listing[int, item]{IDOf: func(it item) int { return it.id }, PerPage: 10},
	}
	l.Get = func(_ context.Context, id int) (item, bool, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.gets++
		if c.failGet != nil {
			return item{}, false, c.failGet
		}
		it, ok := c.items[id]
		return it, ok, nil
	}
	l.List = func(context.Context) ([]item, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		var out []item
		for id, it := range c.items {
			if !c.hidden[id] {
				out = append(out, it)
			}
		}
		c.list += (len(out) + 9) / 10
		return out, nil
	}
	return l
}

func convert(it item, unique bool) *instances.Instance {
	in := &instances.Instance{ProviderID: fmt.Sprintf("x://%d", it.id)}
	if unique {
		in.Name = it.name
	}
	return in
}

func keysFor(ids ...int) []instances.Key {
	var out []instances.Key
	for _, id := range ids {
		out = append(out, instances.Key{ProviderID: fmt.Sprintf("x://%d", id)})
	}
	return out
}

func TestListingPricesGetsAgainstPages(t *testing.T) {
	c := &cloud{items: map[int]item{}, hidden: map[int]bool{}}
	for i := 1; i <= 100; i++ {
		c.items[i] = item{id: i, name: fmt.Sprint("n", i)}
	}
	l := c.listing()
	ctx := context.Background()
	// Nothing known yet: one listing (10 pages) learns the size.
	a, err := l.Lookup(ctx, keysFor(1, 2), convert)
	if err != nil || a.Results[0].Instance == nil || c.list != 10 || c.gets != 0 {
		t.Fatalf("first batch: %+v %v, %d pages, %d gets", a.Results, err, c.list, c.gets)
	}
	if len(a.Seen) != 100 {
		t.Errorf("the listing's %d instances were not all handed to the cache", len(a.Seen))
	}
	// Two keys now cost two GETs, not ten pages.
	if _, err := l.Lookup(ctx, keysFor(3, 4), convert); err != nil || c.gets != 2 || c.list != 10 {
		t.Errorf("two keys: %d gets, %d pages; want 2 and no new listing", c.gets, c.list)
	}
	// Twelve keys cost a listing.
	if _, err := l.Lookup(ctx, keysFor(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12), convert); err != nil || c.list != 20 || c.gets != 2 {
		t.Errorf("twelve keys: %d gets, %d pages; want a listing", c.gets, c.list)
	}
}

// An instance a listing lacks is asked for by GET: found, it is the
// answer; only a definitive "not found" is gone; a failed GET is an error.
func TestListingConfirmsMissingByGet(t *testing.T) {
	c := &cloud{items: map[int]item{1: {1, "a"}, 2: {2, "b"}}, hidden: map[int]bool{2: true}}
	l := c.listing()
	a, err := l.Lookup(context.Background(), keysFor(1, 2, 3), convert)
	if err != nil {
		t.Fatal(err)
	}
	if a.Results[1].Instance == nil || a.Results[1].Err != nil {
		t.Errorf("the instance the listing missed: %+v, want found by GET", a.Results[1])
	}
	if a.Results[2].Instance != nil || a.Results[2].Err != nil {
		t.Errorf("an instance that does not exist: %+v, want gone", a.Results[2])
	}
	c.failGet = errors.New("503")
	a, _ = l.Lookup(context.Background(), keysFor(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11), convert)
	if a.Results[2].Err == nil {
		t.Errorf("a failed confirmation: %+v, want an error, never gone", a.Results[2])
	}
}

func TestListingNames(t *testing.T) {
	c := &cloud{items: map[int]item{1: {1, "dup"}, 2: {2, "dup"}, 3: {3, "solo"}}, hidden: map[int]bool{}}
	l := c.listing()
	a, err := l.Lookup(context.Background(), []instances.Key{{NodeName: "dup"}, {NodeName: "solo"}, {NodeName: "none"}}, convert)
	if err != nil {
		t.Fatal(err)
	}
	if e := a.Results[0].Err; e == nil || !strings.Contains(e.Error(), "2 things") || !strings.Contains(e.Error(), "x://<id>") {
		t.Errorf("a shared name: %v, want an error naming the count and the providerID form", e)
	}
	if in := a.Results[1].Instance; in == nil || in.Name != "solo" {
		t.Errorf("a unique name: %+v", a.Results[1])
	}
	if a.Results[2].Instance != nil || a.Results[2].Err != nil {
		t.Errorf("a name no instance has: %+v, want gone", a.Results[2])
	}
}
