package batch_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polyccm/polyccm/core/batch"
)

// errGone is the test's definitive "does not exist".
var errGone = errors.New("gone")

func isGone(err error) bool { return errors.Is(err, errGone) }

// thing is a cloud object known by several names.
type thing struct{ names []string }

// fakeSource answers from a fixed script and counts the keys it is asked.
type fakeSource struct {
	mu     sync.Mutex
	asked  [][]string
	answer func(keys []string) (batch.Answer[*thing], error)
}

func (f *fakeSource) lookup(_ context.Context, keys []string) (batch.Answer[*thing], error) {
	f.mu.Lock()
	f.asked = append(f.asked, slices.Clone(keys))
	f.mu.Unlock()
	return f.answer(keys)
}

func (f *fakeSource) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.asked)
}

type lookupCounts struct{ hits, misses int }

func newTestLookup(f *fakeSource, tweak func(*batch.LookupOptions[string, *thing])) (*batch.Lookup[string, *thing], *lookupCounts) {
	c := &lookupCounts{}
	o := batch.LookupOptions[string, *thing]{
		Driver:     "fake",
		Kind:       "thing",
		CacheTTL:   time.Hour,
		IsNotFound: isGone,
		Keys: func(t *thing) []string {
			if t == nil {
				return nil
			}
			return t.names
		},
		// Gets run one after another in these tests, so the counters need
		// no lock.
		OnHit:  func() { c.hits++ },
		OnMiss: func() { c.misses++ },
	}
	if tweak != nil {
		tweak(&o)
	}
	return batch.NewLookup(f.lookup, o), c
}

// found answers every key with a thing named after it.
func found(keys []string) (batch.Answer[*thing], error) {
	var a batch.Answer[*thing]
	for _, k := range keys {
		a.Results = append(a.Results, batch.Result[*thing]{Value: &thing{names: []string{k, "alias-" + k}}})
	}
	return a, nil
}

func TestLookupBatchNotFoundIsAmbiguous(t *testing.T) {
	f := &fakeSource{answer: func([]string) (batch.Answer[*thing], error) {
		return batch.Answer[*thing]{}, fmt.Errorf("listing: %w", errGone)
	}}
	l, _ := newTestLookup(f, nil)
	v, err := l.Get(context.Background(), "a")
	if err == nil || v != nil {
		t.Fatalf("Get = %v, %v; want an error", v, err)
	}
	if isGone(err) {
		t.Errorf("a failed batch said not-found: %v", err)
	}
	if !strings.Contains(err.Error(), "driver fake failed a batch of 1 thing lookups") {
		t.Errorf("error %q does not name the driver and kind", err)
	}
}

func TestLookupBatchErrorPassesThroughUncached(t *testing.T) {
	boom := errors.New("boom")
	f := &fakeSource{answer: func([]string) (batch.Answer[*thing], error) {
		return batch.Answer[*thing]{}, boom
	}}
	l, _ := newTestLookup(f, nil)
	for range 2 {
		if _, err := l.Get(context.Background(), "a"); !errors.Is(err, boom) {
			t.Fatalf("Get error = %v, want %v", err, boom)
		}
	}
	if n := f.calls(); n != 2 {
		t.Errorf("%d source calls, want 2 (errors are not cached)", n)
	}
}

func TestLookupShortAnswerIsAnError(t *testing.T) {
	f := &fakeSource{answer: func([]string) (batch.Answer[*thing], error) {
		return batch.Answer[*thing]{}, nil
	}}
	l, _ := newTestLookup(f, nil)
	_, err := l.Get(context.Background(), "a")
	if err == nil || !strings.Contains(err.Error(), "driver fake answered 0 of 1 thing lookups") {
		t.Fatalf("Get error = %v", err)
	}
}

func TestLookupPerKeyAnswers(t *testing.T) {
	boom := errors.New("boom")
	f := &fakeSource{answer: func(keys []string) (batch.Answer[*thing], error) {
		var a batch.Answer[*thing]
		for _, k := range keys {
			switch k {
			case "gone":
				a.Results = append(a.Results, batch.Result[*thing]{Err: fmt.Errorf("%s: %w", k, errGone)})
			case "bad":
				a.Results = append(a.Results, batch.Result[*thing]{Err: boom})
			default:
				a.Results = append(a.Results, batch.Result[*thing]{Value: &thing{names: []string{k}}})
			}
		}
		return a, nil
	}}
	l, c := newTestLookup(f, nil)
	ctx := context.Background()
	for range 2 {
		// A per-key not-found is the one "definitively absent" form, and
		// is remembered like a found value.
		if v, err := l.Get(ctx, "gone"); v != nil || err != nil {
			t.Errorf("Get(gone) = %v, %v; want nil, nil", v, err)
		}
		if v, err := l.Get(ctx, "a"); err != nil || v == nil || v.names[0] != "a" {
			t.Errorf("Get(a) = %v, %v", v, err)
		}
		if _, err := l.Get(ctx, "bad"); !errors.Is(err, boom) {
			t.Errorf("Get(bad) error = %v, want %v", err, boom)
		}
	}
	// gone and a once each; bad, whose error is not cached, twice.
	if n := f.calls(); n != 4 {
		t.Errorf("%d source calls, want 4", n)
	}
	if *c != (lookupCounts{hits: 2, misses: 4}) {
		t.Errorf("hits/misses = %+v", *c)
	}
}

func TestLookupCachesSeenUnderEveryKey(t *testing.T) {
	f := &fakeSource{answer: func(keys []string) (batch.Answer[*thing], error) {
		a, _ := found(keys)
		a.Seen = []*thing{{names: []string{"x", "x-name"}}}
		return a, nil
	}}
	l, c := newTestLookup(f, nil)
	ctx := context.Background()
	if _, err := l.Get(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"x", "x-name"} {
		if v, err := l.Get(ctx, k); err != nil || v == nil || v.names[0] != "x" {
			t.Errorf("Get(%s) = %v, %v", k, v, err)
		}
	}
	if n := f.calls(); n != 1 {
		t.Errorf("%d source calls, want 1 (seen values from cache)", n)
	}
	if *c != (lookupCounts{hits: 2, misses: 1}) {
		t.Errorf("hits/misses = %+v", *c)
	}
}

func TestLookupIndexAnswers(t *testing.T) {
	for _, index := range []bool{false, true} {
		t.Run(fmt.Sprint("IndexAnswers=", index), func(t *testing.T) {
			f := &fakeSource{answer: found}
			l, _ := newTestLookup(f, func(o *batch.LookupOptions[string, *thing]) { o.IndexAnswers = index })
			ctx := context.Background()
			if _, err := l.Get(ctx, "a"); err != nil {
				t.Fatal(err)
			}
			// The answer for a is also known as alias-a.
			if _, err := l.Get(ctx, "alias-a"); err != nil {
				t.Fatal(err)
			}
			want := 2
			if index {
				want = 1
			}
			if n := f.calls(); n != want {
				t.Errorf("%d source calls, want %d", n, want)
			}
		})
	}
}

func TestLookupCacheKey(t *testing.T) {
	f := &fakeSource{answer: found}
	// Keys differing only after a "/" name the same thing.
	l, _ := newTestLookup(f, func(o *batch.LookupOptions[string, *thing]) {
		o.CacheKey = func(k string) string { before, _, _ := strings.Cut(k, "/"); return before }
	})
	ctx := context.Background()
	if _, err := l.Get(ctx, "a/1"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Get(ctx, "a/2"); err != nil {
		t.Fatal(err)
	}
	if n := f.calls(); n != 1 {
		t.Errorf("%d source calls, want 1 (a/2 cached as a)", n)
	}
	// The source still sees the key as asked.
	if got := f.asked[0]; !slices.Equal(got, []string{"a/1"}) {
		t.Errorf("source asked %v", got)
	}
}

func TestLookupWithoutCache(t *testing.T) {
	f := &fakeSource{answer: found}
	l, c := newTestLookup(f, func(o *batch.LookupOptions[string, *thing]) { o.CacheTTL = 0 })
	for range 2 {
		if _, err := l.Get(context.Background(), "a"); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.calls(); n != 2 {
		t.Errorf("%d source calls, want 2", n)
	}
	if *c != (lookupCounts{misses: 2}) {
		t.Errorf("hits/misses = %+v", *c)
	}
}

func TestLookupCoalesces(t *testing.T) {
	f := &fakeSource{answer: found}
	l, _ := newTestLookup(f, func(o *batch.LookupOptions[string, *thing]) {
		o.Batch = batch.Options{Window: time.Hour, MaxSize: 3}
		o.OnHit, o.OnMiss = nil, nil // Gets run concurrently here
	})
	var wg sync.WaitGroup
	for _, k := range []string{"a", "b", "c"} {
		wg.Go(func() {
			if v, err := l.Get(context.Background(), k); err != nil || v == nil || v.names[0] != k {
				t.Errorf("Get(%s) = %v, %v", k, v, err)
			}
		})
	}
	wg.Wait()
	if n := f.calls(); n != 1 {
		t.Errorf("%d source calls, want 1 batch of 3", n)
	}
}

// Nodes registering over a few seconds arrive in many small batches; the
// first one's full listing must answer the batches queued behind it
// instead of each starting a listing of its own.
func TestLookupBatchesQueuedBehindAListingUseIt(t *testing.T) {
	release := make(chan struct{})
	f := &fakeSource{answer: func(keys []string) (batch.Answer[*thing], error) {
		<-release
		a, _ := found(keys)
		for i := range 50 {
			a.Seen = append(a.Seen, &thing{names: []string{fmt.Sprintf("k%d", i)}})
		}
		return a, nil
	}}
	l, _ := newTestLookup(f, func(o *batch.LookupOptions[string, *thing]) {
		o.Batch = batch.Options{Window: time.Millisecond, MaxSize: 5}
		o.OnHit, o.OnMiss = nil, nil // Gets run concurrently here
	})
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := range 50 {
		wg.Go(func() {
			k := fmt.Sprintf("k%d", i)
			v, err := l.Get(context.Background(), k)
			if err == nil && (v == nil || v.names[0] != k) {
				err = fmt.Errorf("Get(%s) = %v", k, v)
			}
			if err != nil {
				errs <- err
			}
		})
		if i == 0 {
			// The first batch is fetching before the rest ask.
			time.Sleep(20 * time.Millisecond)
		}
	}
	time.Sleep(20 * time.Millisecond)
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := f.calls(); n != 1 {
		t.Errorf("source called %d times (%v), want 1: the batches behind the first should be answered by its listing", n, f.asked)
	}
}

func TestLookupForget(t *testing.T) {
	gone := false
	f := &fakeSource{answer: func(keys []string) (batch.Answer[*thing], error) {
		if gone {
			return batch.Answer[*thing]{Results: make([]batch.Result[*thing], len(keys))}, nil
		}
		return found(keys)
	}}
	l, _ := newTestLookup(f, func(o *batch.LookupOptions[string, *thing]) {
		o.CacheKey = func(k string) string { before, _, _ := strings.Cut(k, "/"); return before }
	})
	ctx := context.Background()
	if v, err := l.Get(ctx, "a/1"); err != nil || v == nil {
		t.Fatalf("first Get = %v, %v; want a thing", v, err)
	}
	gone = true
	if v, err := l.Get(ctx, "a/1"); err != nil || v == nil {
		t.Fatalf("cached Get = %v, %v; want the cached thing", v, err)
	}
	// Forget goes by the cache key too: a/2 names what a/1 cached.
	l.Forget("a/2")
	if v, err := l.Get(ctx, "a/1"); err != nil || v != nil {
		t.Errorf("Get after Forget = %v, %v; want the cloud's fresh not-found", v, err)
	}
	if n := f.calls(); n != 2 {
		t.Errorf("%d source calls, want 2", n)
	}
}

// A source is told how many keys went to it lately (within the cache TTL):
// a refresh of every Node arrives a few keys a batch, and its first
// batches show the rest are coming. Without a cache there is nothing a
// listing would keep, so nothing is counted.
func TestLookupExpectedCountsRecentMisses(t *testing.T) {
	for _, tc := range []struct {
		name string
		ttl  time.Duration
		want []int
	}{
		{"cached", time.Hour, []int{0, 1, 2, 3}},
		{"no cache", 0, []int{0, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []int
			f := &fakeSource{answer: found}
			src := func(ctx context.Context, keys []string) (batch.Answer[*thing], error) {
				got = append(got, batch.Expected(ctx))
				return f.lookup(ctx, keys)
			}
			l := batch.NewLookup(src, batch.LookupOptions[string, *thing]{
				Driver: "fake", Kind: "thing", CacheTTL: tc.ttl, IsNotFound: isGone,
				Keys: func(t *thing) []string { return nil },
			})
			for _, k := range []string{"a", "b", "c", "d"} {
				if _, err := l.Get(context.Background(), k); err != nil {
					t.Fatal(err)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Expected in the source = %v, want %v", got, tc.want)
			}
		})
	}
}
