package instances_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/polyccm/polyccm/core/batch"
	"github.com/polyccm/polyccm/core/instances"
)

// listingCloud prices as the drivers do: filtered lookups take a call per
// 200 keys, a full listing a call per 1000 instances and answers for all.
type listingCloud struct {
	sizes   batch.ListSizes
	all     []instances.Instance
	release chan struct{}
	once    sync.Once

	mu              sync.Mutex
	filtered, pages int
}

func (c *listingCloud) LookupInstances(ctx context.Context, keys []instances.Key) (instances.Answer, error) {
	// The first fetch waits until the burst has queued behind it, as a
	// first call to a slow cloud would.
	c.once.Do(func() { <-c.release })
	byPID := map[string]instances.Instance{}
	for _, in := range c.all {
		byPID[in.ProviderID] = in
	}
	ans := instances.Answer{Results: make([]instances.Result, len(keys))}
	for i, k := range keys {
		in := byPID[k.ProviderID]
		ans.Results[i].Instance = &in
	}
	calls := (len(keys) + 199) / 200
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sizes.PreferFullFor(ctx, "all", calls, len(keys), 1000) {
		c.pages += (len(c.all) + 999) / 1000
		ans.Seen = c.all
		return ans, nil
	}
	c.filtered += calls
	return ans, nil
}

// TestABurstIsAnsweredByOneListing: thousands of lookups at once (after
// the cache expired) are priced with the keys waiting behind each batch,
// so one listing answers them instead of a filtered call per batch.
func TestABurstIsAnsweredByOneListing(t *testing.T) {
	const n = 5000
	c := &listingCloud{release: make(chan struct{})}
	for i := range n {
		c.all = append(c.all, instances.Instance{ProviderID: fmt.Sprintf("fake://i-%d", i), Name: fmt.Sprintf("n-%d", i)})
	}
	c.sizes.Set("all", n) // listed once before: the size is known
	in := instances.New(c, instances.Options{Driver: driverName(t), BatchSize: 200, BatchWindow: 10 * time.Millisecond, CacheTTL: time.Minute, Timeout: guard})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			got, err := in.Lookup(context.Background(), instances.Key{ProviderID: fmt.Sprintf("fake://i-%d", i)})
			if err == nil && (got == nil || got.Name != fmt.Sprintf("n-%d", i)) {
				err = fmt.Errorf("lookup %d answered %+v", i, got)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	time.Sleep(300 * time.Millisecond) // the goroutines queue up
	close(c.release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// One filtered call for the first batch, then one listing (5 pages);
	// priced batch by batch it was 25 filtered calls.
	if total := c.filtered + c.pages; total > 10 {
		t.Errorf("%d calls (%d filtered, %d listing pages) for %d lookups, want about 6", total, c.filtered, c.pages, n)
	}
	t.Logf("%d filtered calls, %d listing pages", c.filtered, c.pages)
}
