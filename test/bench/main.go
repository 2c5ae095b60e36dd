// Command bench measures polyccm at cluster scale: for each N it starts a
// fresh local control plane (etcd and kube-apiserver) and a simulated
// cloud with per-call latency and a token-bucket rate limit that answers
// with the cloud's own throttling error, registers N tainted Nodes at once
// with matching instances, and measures how long polyccm takes to
// initialize them, with how many cloud and apiserver calls, how much
// memory and CPU. The same Node updates done by a bare client against the
// same apiserver give the ceiling. Run it with `make bench`; flags and the
// latest numbers are in docs/performance.md.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/polyccm/polyccm/test/harness"
	"github.com/polyccm/polyccm/test/simcloud"
)

// options are the bench's flags.
type options struct {
	Driver     string        `json:"driver"`
	Nodes      []int         `json:"nodes"`
	Latency    time.Duration `json:"-"`
	LatencyMS  float64       `json:"latencyMs"`
	Rate       float64       `json:"rateLimitPerSecond"`
	Burst      int           `json:"rateLimitBurst"`
	Creators   int           `json:"registeringClients"`
	Workers    int           `json:"ceilingWorkers"`
	Timeout    time.Duration `json:"-"`
	Out        string        `json:"-"`
	NoCeiling  bool          `json:"noCeiling"`
	PolyccmEnv []string      `json:"polyccmEnv,omitempty"`
	Quiet      bool          `json:"-"`
	Keep       bool          `json:"-"`
	// Regimes are what is measured, in order (regimeJoinStorm when none).
	Regimes []string `json:"regimes"`
	// The steady state's shortened status periods, and its monitor
	// window and the wait before it (steady.go).
	SteadyPeriods []time.Duration `json:"steadyStatusPeriods"`
	MonitorSettle time.Duration   `json:"monitorSettle"`
	MonitorWindow time.Duration   `json:"monitorWindow"`
	// The load-balancer regime: Services over LBNodes Nodes, then a wave
	// of LBChurn Nodes joining and as many leaving (loadbalancers.go).
	LBServices int           `json:"lbServices"`
	LBNodes    int           `json:"lbNodes"`
	LBChurn    int           `json:"lbChurn"`
	LBTimeout  time.Duration `json:"-"`
}

// The regimes (docs/performance.md).
const (
	// regimeJoinStorm: N tainted Nodes register at once under a running
	// polyccm.
	regimeJoinStorm = "joinstorm"
	// regimeColdStart: N tainted Nodes are registered already (an outage,
	// a control-plane upgrade) when polyccm starts; then polyccm restarts
	// over the initialized Nodes.
	regimeColdStart = "coldstart"
	// regimeSteady: N initialized Nodes left alone, 1% NotReady; cloud
	// calls per Node per hour at the default periods. Measured at the
	// largest size only: it takes minutes whatever N is.
	regimeSteady = "steady"
	// regimeLoadBalancers: LoadBalancer Services at scale and a wave of
	// Nodes joining and leaving under them; at -lb-nodes, not -nodes. Not
	// in the default run: at 500 Services it takes many minutes per cloud.
	regimeLoadBalancers = "loadbalancers"
)

var regimes = []string{regimeJoinStorm, regimeColdStart, regimeSteady, regimeLoadBalancers}

// defaultRegimes are what `make bench` measures unless told.
var defaultRegimes = []string{regimeJoinStorm, regimeColdStart, regimeSteady}

type envList []string

func (e *envList) String() string { return strings.Join(*e, ",") }
func (e *envList) Set(v string) error {
	if !strings.HasPrefix(v, "POLYCCM_") || !strings.Contains(v, "=") {
		return fmt.Errorf("-env %q: want POLYCCM_SECTION__KEY=VALUE (a polyccm config override)", v)
	}
	*e = append(*e, v)
	return nil
}

func main() {
	var o options
	var nodes string
	var env envList
	flag.StringVar(&o.Driver, "driver", envOr("BENCH_DRIVER", "digitalocean"), "the simulated cloud: "+strings.Join(simcloud.Names(), ", ")+" (default $BENCH_DRIVER)")
	flag.StringVar(&nodes, "nodes", envOr("BENCH_NODES", "100,1000,5000"), "cluster sizes to measure, comma-separated (default $BENCH_NODES)")
	flag.DurationVar(&o.Latency, "latency", 30*time.Millisecond, "simulated cloud API latency per call")
	flag.Float64Var(&o.Rate, "rate", 20, "simulated cloud API rate limit, requests per second (token bucket)")
	flag.IntVar(&o.Burst, "burst", 40, "simulated cloud API rate limit burst (bucket size)")
	flag.IntVar(&o.Creators, "registering", 100, "concurrent clients registering Nodes (as that many kubelets at once)")
	flag.IntVar(&o.Workers, "ceiling-workers", 64, "concurrent workers of the bare client that measures the ceiling")
	flag.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "give up on a size if its Nodes are not all initialized by then")
	flag.StringVar(&o.Out, "out", "bench/results", "directory for <driver>-<date>.json and .svg")
	flag.BoolVar(&o.NoCeiling, "no-ceiling", false, "skip the bare-client ceiling runs")
	flag.Var(&env, "env", "a polyccm config override for the run, POLYCCM_SECTION__KEY=VALUE (repeatable)")
	flag.BoolVar(&o.Quiet, "quiet", false, "no progress lines")
	periods := flag.String("steady-periods", "40s,80s", "steady state: the shortened status periods the refresh is measured at (scaled to the default 5m)")
	flag.DurationVar(&o.MonitorSettle, "steady-settle", 45*time.Second, "steady state: how long after polyccm leads the monitor window opens (past the start's refresh and the cache's expiry)")
	flag.DurationVar(&o.MonitorWindow, "steady-window", 5*time.Minute+30*time.Second, "steady state: how long the lifecycle monitor's calls are counted (past one NotReady recheck, 5m)")
	flag.IntVar(&o.LBServices, "lb-services", 500, "load balancers: how many LoadBalancer Services")
	flag.IntVar(&o.LBNodes, "lb-nodes", 2000, "load balancers: how many Nodes they target")
	flag.IntVar(&o.LBChurn, "lb-churn", 100, "load balancers: how many Nodes join, and how many leave, in the wave")
	flag.DurationVar(&o.LBTimeout, "lb-timeout", 30*time.Minute, "load balancers: give up on a phase after this long")
	flag.BoolVar(&o.Keep, "keep", false, "keep the work files (configs, polyccm's and the apiserver's logs, audit logs)")
	regimeList := flag.String("regimes", envOr("BENCH_REGIMES", strings.Join(defaultRegimes, ",")), "what to measure, comma-separated: "+strings.Join(regimes, ", ")+" (default $BENCH_REGIMES)")
	flag.Parse()
	for r := range strings.SplitSeq(*regimeList, ",") {
		if r = strings.TrimSpace(r); !slices.Contains(regimes, r) {
			fail(fmt.Errorf("-regimes %q: %q is not a regime; use %s (BENCH_REGIMES=... with make bench)", *regimeList, r, strings.Join(regimes, ", ")))
		}
		o.Regimes = append(o.Regimes, strings.TrimSpace(r))
	}
	o.PolyccmEnv = env
	for f := range strings.SplitSeq(*periods, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(f))
		if err != nil || d < time.Second {
			fail(fmt.Errorf("-steady-periods %q: want durations of a second or more separated by commas, e.g. 40s,80s", *periods))
		}
		o.SteadyPeriods = append(o.SteadyPeriods, d)
	}
	o.LatencyMS = float64(o.Latency) / float64(time.Millisecond)
	var err error
	if o.Nodes, err = parseSizes(nodes); err != nil {
		fail(err)
	}
	if !slices.Contains(simcloud.Names(), o.Driver) {
		fail(fmt.Errorf("-driver %q: no simulated cloud by that name; use one of %s (BENCH_DRIVER=... with make bench)", o.Driver, strings.Join(simcloud.Names(), ", ")))
	}
	if slices.Contains(o.Regimes, regimeLoadBalancers) && !simcloud.HasLoadBalancers(o.Driver) {
		fail(fmt.Errorf("-regimes %s: polyccm serves no load balancers on %s yet; leave that regime out", regimeLoadBalancers, o.Driver))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := bench(ctx, o)
	if rep != nil && len(rep.Runs) > 0 {
		if werr := rep.write(o.Out); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	if err != nil {
		fail(err)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

func parseSizes(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-nodes %q: want positive whole numbers separated by commas, e.g. 100,1000,5000", s)
		}
		out = append(out, n)
	}
	return out, nil
}

// bench runs every size and returns the report so far, even on error.
func bench(ctx context.Context, o options) (*report, error) {
	dir, err := os.MkdirTemp("", "polyccm-bench-")
	if err != nil {
		return nil, err
	}
	bin, err := harness.Polyccm(ctx, dir)
	if err != nil {
		return nil, err
	}
	ver, _ := exec.CommandContext(ctx, bin, "version").Output()
	ver, _, _ = bytes.Cut(ver, []byte("\n"))
	rep := &report{
		Options: o, Date: time.Now().UTC().Format(time.RFC3339), PolyccmVersion: strings.TrimPrefix(strings.TrimSpace(string(ver)), "polyccm "),
		Machine: machine{CPUs: runtime.NumCPU(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH},
	}
	progressf(o, "polyccm bench: driver %s, sizes %v, cloud latency %s, cloud rate limit %g/s burst %d; work files in %s",
		o.Driver, o.Nodes, o.Latency, o.Rate, o.Burst, dir)
	if len(o.Regimes) == 0 {
		o.Regimes = []string{regimeJoinStorm}
	}
	for _, regime := range o.Regimes {
		sizes := o.Nodes
		switch regime {
		case regimeSteady:
			sizes = []int{slices.Max(o.Nodes)}
		case regimeLoadBalancers:
			sizes = []int{o.LBNodes}
		}
		for _, n := range sizes {
			r, err := runSize(ctx, o, regime, bin, filepath.Join(dir, fmt.Sprintf("%s-n%d", regime, n)), n)
			if err != nil {
				return rep, fmt.Errorf("%s N=%d: %w\n(files of the run, with polyccm's and kube-apiserver's logs, stay in %s)", regime, n, err, dir)
			}
			rep.Runs = append(rep.Runs, r)
			progressf(o, "%s N=%d: %s", regime, n, r.summary())
		}
	}
	if o.Keep {
		progressf(o, "work files kept in %s", dir)
	} else {
		os.RemoveAll(dir)
	}
	return rep, nil
}

func progressf(o options, format string, args ...any) {
	if !o.Quiet {
		fmt.Fprintf(os.Stderr, "==> "+format+"\n", args...)
	}
}
