package batch_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polyccm/polyccm/core/batch"
)

// guard bounds every wait on something the code under test must do. It is
// far above any real latency: it turns a hang into a failure, it does not
// measure speed.
const guard = 20 * time.Second

// recorder is a Fetch that records its calls and answers key*10.
type recorder struct {
	mu    sync.Mutex
	calls [][]int
}

func (r *recorder) fetch(_ context.Context, keys []int) ([]int, error) {
	r.mu.Lock()
	r.calls = append(r.calls, slices.Clone(keys))
	r.mu.Unlock()
	out := make([]int, len(keys))
	for i, k := range keys {
		out[i] = k * 10
	}
	return out, nil
}

func (r *recorder) snapshot() [][]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// probeCtx tells the test when Get has started waiting on it, which Get
// does only after its key is queued. That makes "this caller has joined"
// observable without sleeping.
type probeCtx struct {
	context.Context
	once    sync.Once
	waiting chan struct{}
}

func newProbe(parent context.Context) *probeCtx {
	return &probeCtx{Context: parent, waiting: make(chan struct{})}
}

func (p *probeCtx) Done() <-chan struct{} {
	p.once.Do(func() { close(p.waiting) })
	return p.Context.Done()
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(guard):
		t.Fatalf("timed out waiting for %s", what)
	}
}

type got struct {
	key int
	v   int
	err error
}

// goGet runs Get in a goroutine and delivers its outcome on the returned
// channel.
func goGet(ctx context.Context, b *batch.Batcher[int, int], key int) <-chan got {
	ch := make(chan got, 1)
	go func() {
		v, err := b.Get(ctx, key)
		ch <- got{key, v, err}
	}()
	return ch
}

func receive(t *testing.T, ch <-chan got) got {
	t.Helper()
	select {
	case g := <-ch:
		return g
	case <-time.After(guard):
		t.Fatalf("Get did not return")
		return got{}
	}
}

func TestConcurrentGetsCoalesce(t *testing.T) {
	const (
		n       = 500
		maxSize = 64
		// Slack for batches a slow scheduler splits by letting the window
		// expire before every goroutine has queued its key.
		slack = 3
	)
	rec := &recorder{}
	var observed atomic.Int64
	b := batch.New(rec.fetch, batch.Options{
		Window:  250 * time.Millisecond,
		MaxSize: maxSize,
		Observe: func(size int) { observed.Add(int64(size)) },
	})

	// 500 distinct keys: seven batches close on MaxSize, the last partial
	// one on the window.
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for key := range n {
		wg.Go(func() {
			<-start
			v, err := b.Get(context.Background(), key)
			if err != nil {
				errs <- err
			} else if v != key*10 {
				errs <- fmt.Errorf("Get(%d) = %d, want %d", key, v, key*10)
			}
		})
	}
	close(start)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	waitFor(t, done, "all Gets")
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	calls := rec.snapshot()
	if limit := (n+maxSize-1)/maxSize + slack; len(calls) > limit {
		t.Errorf("%d fetches for %d keys, want at most %d", len(calls), n, limit)
	}
	seen := map[int]int{}
	total := 0
	for _, c := range calls {
		if len(c) > maxSize {
			t.Errorf("a fetch got %d keys, above MaxSize %d", len(c), maxSize)
		}
		for _, k := range c {
			seen[k]++
		}
		total += len(c)
	}
	if len(seen) != n || total != n {
		t.Errorf("fetched %d keys, %d distinct; want each of %d once", total, len(seen), n)
	}
	if got := observed.Load(); got != int64(total) {
		t.Errorf("Observe saw %d keys, fetches had %d", got, total)
	}
}

func TestMaxSizeClosesBatchEarly(t *testing.T) {
	rec := &recorder{}
	// A window this long would time the test out if MaxSize did not
	// close the batch.
	b := batch.New(rec.fetch, batch.Options{Window: time.Hour, MaxSize: 3})
	chs := []<-chan got{goGet(context.Background(), b, 1), goGet(context.Background(), b, 2), goGet(context.Background(), b, 3)}
	for _, ch := range chs {
		g := receive(t, ch)
		if g.err != nil || g.v != g.key*10 {
			t.Errorf("Get(%d) = %d, %v", g.key, g.v, g.err)
		}
	}
	calls := rec.snapshot()
	if len(calls) != 1 || len(calls[0]) != 3 {
		t.Errorf("fetches = %v, want one of 3 keys", calls)
	}
}

func TestWindowZeroDoesNotWait(t *testing.T) {
	rec := &recorder{}
	b := batch.New(rec.fetch, batch.Options{Window: 0, MaxSize: 100})
	for k := range 3 {
		g := receive(t, goGet(context.Background(), b, k))
		if g.err != nil || g.v != k*10 {
			t.Fatalf("Get(%d) = %d, %v", k, g.v, g.err)
		}
	}
	// Sequential Gets each got their own fetch: nothing is held back and
	// nothing is cached between batches.
	if calls := rec.snapshot(); !slices.EqualFunc(calls, [][]int{{0}, {1}, {2}}, slices.Equal) {
		t.Errorf("fetches = %v", calls)
	}
}

func TestWindowClosesPartialBatch(t *testing.T) {
	rec := &recorder{}
	b := batch.New(rec.fetch, batch.Options{Window: 10 * time.Millisecond, MaxSize: 100})
	g := receive(t, goGet(context.Background(), b, 7))
	if g.err != nil || g.v != 70 {
		t.Fatalf("Get(7) = %d, %v", g.v, g.err)
	}
}

func TestDuplicateKeysFetchedOnce(t *testing.T) {
	rec := &recorder{}
	b := batch.New(rec.fetch, batch.Options{Window: time.Hour, MaxSize: 2})
	var chs []<-chan got
	for range 3 {
		p := newProbe(context.Background())
		chs = append(chs, goGet(p, b, 5))
		waitFor(t, p.waiting, "a duplicate caller to queue")
	}
	// The duplicates did not fill the batch; a second distinct key does.
	chs = append(chs, goGet(context.Background(), b, 6))
	for _, ch := range chs {
		g := receive(t, ch)
		if g.err != nil || g.v != g.key*10 {
			t.Errorf("Get(%d) = %d, %v", g.key, g.v, g.err)
		}
	}
	if calls := rec.snapshot(); !slices.EqualFunc(calls, [][]int{{5, 6}}, slices.Equal) {
		t.Errorf("fetches = %v, want [[5 6]]", calls)
	}
}

// blocking is a Fetch that announces each call and waits to be released.
type blocking struct {
	started chan []int
	release chan struct{}
	calls   atomic.Int32
	ctxs    chan context.Context
}

func newBlocking() *blocking {
	return &blocking{started: make(chan []int, 100), release: make(chan struct{}), ctxs: make(chan context.Context, 100)}
}

func (f *blocking) fetch(ctx context.Context, keys []int) ([]int, error) {
	f.calls.Add(1)
	f.ctxs <- ctx
	f.started <- slices.Clone(keys)
	<-f.release
	out := make([]int, len(keys))
	for i, k := range keys {
		out[i] = k * 10
	}
	return out, nil
}

func (f *blocking) awaitStart(t *testing.T) []int {
	t.Helper()
	select {
	case k := <-f.started:
		return k
	case <-time.After(guard):
		t.Fatalf("fetch did not start")
		return nil
	}
}

func TestKeyRequestedInFlightJoinsFetch(t *testing.T) {
	f := newBlocking()
	b := batch.New(f.fetch, batch.Options{Window: 0})
	first := goGet(context.Background(), b, 1)
	if keys := f.awaitStart(t); !slices.Equal(keys, []int{1}) {
		t.Fatalf("fetch keys = %v", keys)
	}
	p := newProbe(context.Background())
	second := goGet(p, b, 1)
	waitFor(t, p.waiting, "the second caller to queue")
	close(f.release)
	for _, ch := range []<-chan got{first, second} {
		if g := receive(t, ch); g.err != nil || g.v != 10 {
			t.Errorf("Get(1) = %d, %v", g.v, g.err)
		}
	}
	if n := f.calls.Load(); n != 1 {
		t.Errorf("%d fetches, want the in-flight one joined", n)
	}
}

func TestFetchErrorReachesEveryCaller(t *testing.T) {
	boom := errors.New("cloud on fire")
	var calls atomic.Int32
	fetch := func(context.Context, []int) ([]int, error) {
		calls.Add(1)
		return nil, boom
	}
	b := batch.New(fetch, batch.Options{Window: time.Hour, MaxSize: 3})
	chs := []<-chan got{goGet(context.Background(), b, 1), goGet(context.Background(), b, 2), goGet(context.Background(), b, 3)}
	for _, ch := range chs {
		if g := receive(t, ch); !errors.Is(g.err, boom) {
			t.Errorf("Get(%d) error = %v, want %v", g.key, g.err, boom)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d fetches, want 1", n)
	}
}

func TestMisalignedResultIsAnError(t *testing.T) {
	tests := []struct {
		name string
		n    func(keys int) int
	}{
		{"too few", func(k int) int { return k - 1 }},
		{"too many", func(k int) int { return k + 1 }},
		{"nil", func(int) int { return -1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fetch := func(_ context.Context, keys []int) ([]int, error) {
				n := tt.n(len(keys))
				if n < 0 {
					return nil, nil
				}
				return make([]int, n), nil
			}
			b := batch.New(fetch, batch.Options{Window: time.Hour, MaxSize: 2})
			chs := []<-chan got{goGet(context.Background(), b, 1), goGet(context.Background(), b, 2)}
			for _, ch := range chs {
				if g := receive(t, ch); g.err == nil {
					t.Errorf("Get(%d) = %d, nil; want an error", g.key, g.v)
				}
			}
		})
	}
}

func TestCallerCancelDoesNotCancelFetch(t *testing.T) {
	f := newBlocking()
	b := batch.New(f.fetch, batch.Options{Window: 0, Timeout: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	impatient := goGet(ctx, b, 1)
	f.awaitStart(t)
	fctx := <-f.ctxs

	p := newProbe(context.Background())
	patient := goGet(p, b, 1)
	waitFor(t, p.waiting, "the patient caller to join")

	cancel()
	// The fetch is still blocked: Get must not be waiting for it.
	if g := receive(t, impatient); !errors.Is(g.err, context.Canceled) {
		t.Errorf("cancelled Get error = %v, want context.Canceled", g.err)
	}
	if err := fctx.Err(); err != nil {
		t.Errorf("fetch context ended with its caller: %v", err)
	}
	if dl, ok := fctx.Deadline(); !ok || time.Until(dl) > time.Hour {
		t.Errorf("fetch context deadline %v, %v; want one within Timeout", dl, ok)
	}
	close(f.release)
	if g := receive(t, patient); g.err != nil || g.v != 10 {
		t.Errorf("other caller got %d, %v", g.v, g.err)
	}
}

func TestMaxInFlightBoundsFetches(t *testing.T) {
	tests := []struct {
		maxInFlight int
		want        int
	}{
		{0, 4}, // the default
		{1, 1},
		{2, 2},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.maxInFlight), func(t *testing.T) {
			var cur, peak atomic.Int32
			started := make(chan struct{}, 100)
			release := make(chan struct{})
			fetch := func(_ context.Context, keys []int) ([]int, error) {
				n := cur.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				started <- struct{}{}
				<-release
				cur.Add(-1)
				return make([]int, len(keys)), nil
			}
			b := batch.New(fetch, batch.Options{Window: 0, MaxInFlight: tt.maxInFlight})
			const n = 12
			var chs []<-chan got
			for k := range n {
				chs = append(chs, goGet(context.Background(), b, k))
			}
			// Fill every slot before releasing anything, so an unbounded
			// batcher would have the other fetches piling in meanwhile.
			for range tt.want {
				waitFor(t, started, "a fetch to start")
			}
			for i := range n {
				release <- struct{}{}
				if i+tt.want < n {
					waitFor(t, started, "the next fetch")
				}
			}
			for _, ch := range chs {
				if g := receive(t, ch); g.err != nil {
					t.Errorf("Get(%d): %v", g.key, g.err)
				}
			}
			if p := peak.Load(); p != int32(tt.want) {
				t.Errorf("peak concurrent fetches = %d, want %d", p, tt.want)
			}
		})
	}
}

// slowFirstFetch holds its first call until release is closed and records
// the size of every batch.
type slowFirstFetch struct {
	first, release chan struct{}
	calls          atomic.Int32
	mu             sync.Mutex
	sizes          []int
}

func newSlowFirstFetch() *slowFirstFetch {
	return &slowFirstFetch{first: make(chan struct{}), release: make(chan struct{})}
}

func (f *slowFirstFetch) fetch(_ context.Context, keys []int) ([]int, error) {
	if f.calls.Add(1) == 1 {
		close(f.first)
		<-f.release
	}
	f.mu.Lock()
	f.sizes = append(f.sizes, len(keys))
	f.mu.Unlock()
	return make([]int, len(keys)), nil
}

func (f *slowFirstFetch) batchSizes() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sizes)
}

// While the one fetch slot is busy, keys that arrive after the next
// batch's window has passed still join that batch: a slow cloud must see
// one bigger batch, not a queue of one-key batches (make bench at 5000
// Nodes fell to one call per Node that way once its cache expired).
func TestBatchStaysOpenWhileSlotsAreBusy(t *testing.T) {
	f := newSlowFirstFetch()
	b := batch.New(f.fetch, batch.Options{Window: time.Millisecond, MaxSize: 100, MaxInFlight: 1})
	chs := []<-chan got{goGet(context.Background(), b, 0)}
	waitFor(t, f.first, "the first fetch")
	for k := 1; k <= 10; k++ {
		chs = append(chs, goGet(context.Background(), b, k))
		time.Sleep(5 * time.Millisecond) // well past the window
	}
	close(f.release)
	for _, ch := range chs {
		if g := receive(t, ch); g.err != nil {
			t.Errorf("Get(%d): %v", g.key, g.err)
		}
	}
	if sizes := f.batchSizes(); !slices.Equal(sizes, []int{1, 10}) {
		t.Errorf("batch sizes %v, want [1 10]: the keys that came while the slot was busy belong in one batch", sizes)
	}
}

// A batch that fills up while every slot is busy is closed and queued, and
// the next keys start a new one.
func TestFullBatchQueuesWhileSlotsAreBusy(t *testing.T) {
	f := newSlowFirstFetch()
	b := batch.New(f.fetch, batch.Options{Window: time.Millisecond, MaxSize: 4, MaxInFlight: 1})
	chs := []<-chan got{goGet(context.Background(), b, 0)}
	waitFor(t, f.first, "the first fetch")
	for k := 1; k <= 6; k++ {
		chs = append(chs, goGet(context.Background(), b, k))
		time.Sleep(3 * time.Millisecond)
	}
	close(f.release)
	for _, ch := range chs {
		if g := receive(t, ch); g.err != nil {
			t.Errorf("Get(%d): %v", g.key, g.err)
		}
	}
	if sizes := f.batchSizes(); !slices.Equal(sizes, []int{1, 4, 2}) {
		t.Errorf("batch sizes %v, want [1 4 2]", sizes)
	}
}

func BenchmarkBatcher(b *testing.B) {
	fetch := func(_ context.Context, keys []int) ([]int, error) {
		return make([]int, len(keys)), nil
	}
	for _, bc := range []struct {
		name string
		o    batch.Options
		// goroutines per CPU: a window only pays off with many callers
		// waiting in it, as the node controllers' workers do.
		parallelism int
	}{
		{"window=0", batch.Options{Window: 0}, 1},
		{"window=100us", batch.Options{Window: 100 * time.Microsecond, MaxSize: 100}, 64},
	} {
		b.Run(bc.name, func(b *testing.B) {
			bt := batch.New(fetch, bc.o)
			var next atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(bc.parallelism)
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				for pb.Next() {
					if _, err := bt.Get(ctx, int(next.Add(1)%10000)); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// When every caller of a fetch has given up, nobody wants its answer: its
// context ends (so the cloud calls stop), and the next caller of the key
// starts a fetch of its own instead of joining the dying one.
func TestFetchEndsWhenEveryCallerGaveUp(t *testing.T) {
	f := newBlocking()
	b := batch.New(f.fetch, batch.Options{Window: 0, Timeout: time.Hour})
	ctx1, cancel1 := context.WithCancel(context.Background())
	ctx2, cancel2 := context.WithCancel(context.Background())
	g1 := goGet(ctx1, b, 1)
	f.awaitStart(t)
	fctx := <-f.ctxs
	p := newProbe(ctx2)
	g2 := goGet(p, b, 1)
	waitFor(t, p.waiting, "the second caller to join")

	cancel1()
	receive(t, g1)
	if fctx.Err() != nil {
		t.Fatal("the fetch ended while a caller still waited")
	}
	cancel2()
	receive(t, g2)
	select {
	case <-fctx.Done():
	case <-time.After(guard):
		t.Fatal("the fetch went on with nobody waiting for it")
	}

	// A new caller gets a fetch of its own.
	g3 := goGet(context.Background(), b, 1)
	f.awaitStart(t)
	close(f.release)
	if g := receive(t, g3); g.err != nil || g.v != 10 {
		t.Errorf("new caller got %d, %v", g.v, g.err)
	}
	if n := f.calls.Load(); n != 2 {
		t.Errorf("%d fetches, want 2", n)
	}
}

// TestFetchSeesTheKeysWaiting: a fetch learns how many keys were queued
// behind its batch when it started, for sources that price a listing.
func TestFetchSeesTheKeysWaiting(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var seen []int
	b := batch.New(func(ctx context.Context, keys []int) ([]int, error) {
		mu.Lock()
		first := len(seen) == 0
		seen = append(seen, batch.Waiting(ctx))
		mu.Unlock()
		if first {
			<-release
		}
		return keys, nil
	}, batch.Options{MaxSize: 2, MaxInFlight: 1, Window: time.Hour}) // batches close when full
	var wg sync.WaitGroup
	get := func(k int) { wg.Go(func() { _, _ = b.Get(context.Background(), k) }) }
	get(0)
	get(1) // the first batch is full and fetching
	for {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	for k := 2; k < 6; k++ {
		get(k) // two more batches queue behind it
	}
	time.Sleep(200 * time.Millisecond) // they queue (sequencing, not speed)
	close(release)
	wg.Wait()
	if want := []int{0, 2, 0}; !slices.Equal(seen, want) {
		t.Errorf("keys waiting as each fetch started: %v, want %v", seen, want)
	}
}
