// Command shard runs one Go test package's tests in parallel processes:
// it builds the test binary once, deals the tests into shards by their
// recorded durations (longest first, each to the least loaded shard), and
// runs each shard as its own process. Each process runs the package's
// TestMain, so each shard has its own control plane and fake clouds: the
// e2e tests share nothing across shards. `make test-e2e` runs the e2e
// tests this way (E2E_SHARDS, default 6: the tests mostly wait on the
// simulated clouds' timing, so 6 shards fit 2 cores) and the benchmark
// tests in 2.
//
//	go run ./test/shard -n 6 -tags e2e -timeout 30m ./test/e2e
//
// Durations come from <package>/testdata/durations.tsv (test name, seconds);
// -record rewrites it from this run. A test missing from it counts as the
// median. Each shard's whole output is kept in a log file; a failing
// shard's is printed at the end, so a failure reads as with go test -v.
package main

import (
	"bufio"
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	n := flag.Int("n", 4, "how many shards (processes) to run at once")
	tags := flag.String("tags", "", "build tags for the test binary")
	timeout := flag.Duration("timeout", 30*time.Minute, "each shard's -test.timeout")
	run := flag.String("run", "", "run only the tests matching this regexp (as go test -run)")
	record := flag.Bool("record", false, "rewrite <package>/testdata/durations.tsv with this run's durations")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: go run ./test/shard [-n 4] [-tags e2e] [-timeout 30m] [-run REGEXP] [-record] PACKAGE_DIR\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 || *n < 1 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := shard(ctx, flag.Arg(0), *n, *tags, *timeout, *run, *record); err != nil {
		fmt.Fprintf(os.Stderr, "shard: %v\n", err)
		os.Exit(1)
	}
}

func shard(ctx context.Context, pkg string, n int, tags string, timeout time.Duration, run string, record bool) error {
	dir, err := filepath.Abs(pkg)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "shard-")
	if err != nil {
		return err
	}
	bin := filepath.Join(work, "pkg.test")
	build := exec.CommandContext(ctx, "go", "test", "-c", "-o", bin, "-tags", tags, "./"+filepath.Clean(pkg))
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building the test binary of %s: %w", pkg, err)
	}
	tests, err := list(ctx, bin, dir, run)
	if err != nil {
		return err
	}
	if len(tests) == 0 {
		return fmt.Errorf("%s has no test matching %q", pkg, run)
	}
	durationsFile := filepath.Join(dir, "testdata", "durations.tsv")
	weights := readDurations(durationsFile)
	shards := deal(tests, weights, n)
	fmt.Printf("shard: %d tests of %s in %d shards (logs in %s)\n", len(tests), pkg, len(shards), work)

	start := time.Now()
	results := make([]result, len(shards))
	var wg sync.WaitGroup
	var mu sync.Mutex // one progress line at a time
	for i, s := range shards {
		wg.Go(func() {
			results[i] = runShard(ctx, bin, dir, work, i, s, timeout, &mu)
		})
	}
	wg.Wait()

	var failed []int
	got := map[string]float64{}
	for i, r := range results {
		for name, secs := range r.durations {
			got[name] = secs
		}
		if r.err != nil {
			failed = append(failed, i)
		}
	}
	for _, i := range failed {
		fmt.Printf("\n===== shard %d failed (%v): its whole output, %s =====\n", i, results[i].err, results[i].log)
		if b, err := os.ReadFile(results[i].log); err == nil {
			os.Stdout.Write(b)
		}
	}
	if record {
		if err := writeDurations(durationsFile, got); err != nil {
			return err
		}
	}
	fmt.Printf("shard: %d shards, %d tests, %s wall time\n", len(shards), len(got), time.Since(start).Round(time.Second))
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d shards failed: %v (see their output above)", len(failed), len(shards), failed)
	}
	if missing := len(tests) - len(got); missing > 0 {
		return fmt.Errorf("%d tests reported no result", missing)
	}
	os.RemoveAll(work)
	return nil
}

// list asks the test binary for its top-level tests.
func list(ctx context.Context, bin, dir, run string) ([]string, error) {
	pattern := "^Test"
	if run != "" {
		pattern = run
	}
	cmd := exec.CommandContext(ctx, bin, "-test.list", pattern)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("listing the tests: %w", err)
	}
	var tests []string
	for _, l := range strings.Fields(string(out)) {
		if strings.HasPrefix(l, "Test") {
			tests = append(tests, l)
		}
	}
	return tests, nil
}

// deal assigns tests to at most n shards, longest first, each to the
// shard with the least recorded time so far.
func deal(tests []string, weights map[string]float64, n int) [][]string {
	var known []float64
	for _, t := range tests {
		if w, ok := weights[t]; ok {
			known = append(known, w)
		}
	}
	median := 10.0
	if len(known) > 0 {
		slices.Sort(known)
		median = known[len(known)/2]
	}
	weight := func(t string) float64 {
		if w, ok := weights[t]; ok {
			return w
		}
		return median
	}
	sorted := slices.Clone(tests)
	slices.SortStableFunc(sorted, func(a, b string) int { return cmp.Compare(weight(b), weight(a)) })
	n = min(n, len(tests))
	shards := make([][]string, n)
	load := make([]float64, n)
	for _, t := range sorted {
		i := slices.Index(load, slices.Min(load))
		shards[i] = append(shards[i], t)
		load[i] += weight(t)
	}
	return shards
}

type result struct {
	log       string
	durations map[string]float64
	err       error
}

var topResult = regexp.MustCompile(`^--- (PASS|FAIL|SKIP): (Test\S*) \(([0-9.]+)s\)`)

func runShard(ctx context.Context, bin, dir, work string, i int, tests []string, timeout time.Duration, mu *sync.Mutex) result {
	r := result{log: filepath.Join(work, fmt.Sprintf("shard-%d.log", i)), durations: map[string]float64{}}
	f, err := os.Create(r.log)
	if err != nil {
		r.err = err
		return r
	}
	defer f.Close()
	names := make([]string, len(tests))
	for j, t := range tests {
		names[j] = regexp.QuoteMeta(t)
	}
	cmd := exec.CommandContext(ctx, bin, "-test.v", "-test.count=1", "-test.timeout", timeout.String(),
		"-test.run", "^("+strings.Join(names, "|")+")$")
	cmd.Dir = dir
	cmd.WaitDelay = time.Minute
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		r.err = err
		return r
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(f, line)
			if m := topResult.FindStringSubmatch(line); m != nil {
				secs, _ := strconv.ParseFloat(m[3], 64)
				r.durations[m[2]] = secs
				mu.Lock()
				fmt.Printf("[shard %d] %s\n", i, line)
				mu.Unlock()
			}
		}
		io.Copy(f, pr) // a line over the buffer: keep the rest
	}()
	r.err = cmd.Wait()
	pw.Close()
	<-done
	return r
}

func readDurations(path string) map[string]float64 {
	out := map[string]float64{}
	b, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	for _, l := range strings.Split(string(b), "\n") {
		name, secs, ok := strings.Cut(strings.TrimSpace(l), "\t")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		if v, err := strconv.ParseFloat(secs, 64); err == nil {
			out[name] = v
		}
	}
	return out
}

func writeDurations(path string, d map[string]float64) error {
	names := make([]string, 0, len(d))
	for n := range d {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString("# test\tseconds: what test/shard deals the tests by (go run ./test/shard -record ...)\n")
	for _, n := range names {
		fmt.Fprintf(&b, "%s\t%.1f\n", n, d[n])
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
