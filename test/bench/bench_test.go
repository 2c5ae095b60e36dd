//go:build e2e

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polyccm/polyccm/test/cluster"
	"github.com/polyccm/polyccm/test/simcloud"
)

// TestBenchSmall runs the benchmark as `make bench` does, at a size that
// takes seconds, for every simulated cloud, and checks what it measured
// and wrote. The real sizes are for `make bench`, never for a timed test.
func TestBenchSmall(t *testing.T) {
	cluster.SkipIfNoBinaries(t)
	for _, driver := range simcloud.Names() {
		t.Run(driver, func(t *testing.T) {
			out := t.TempDir()
			o := options{
				Driver: driver, Nodes: []int{60}, Latency: 30 * time.Millisecond, LatencyMS: 30,
				Rate: 20, Burst: 40, Creators: 20, Workers: 16, Timeout: 3 * time.Minute, Out: out, Quiet: !testing.Verbose(),
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			rep, err := bench(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			if err := rep.write(out); err != nil {
				t.Fatal(err)
			}
			if len(rep.Runs) != 1 {
				t.Fatalf("%d runs, want 1", len(rep.Runs))
			}
			r := rep.Runs[0]
			if r.TotalSeconds <= 0 || r.PerNode.Max > r.TotalSeconds+0.5 || r.PerNode.P50 > r.PerNode.P99 {
				t.Errorf("implausible times: total %.3fs, per node %+v", r.TotalSeconds, r.PerNode)
			}
			// 60 Nodes registering together are a batch or two: a few
			// listing pages, nowhere near a call per Node.
			if r.CloudCallsTotal == 0 || r.CloudCallsPerNode > 0.25 {
				t.Errorf("%d cloud calls for 60 nodes (%v): want a few batched calls", r.CloudCallsTotal, r.CloudCalls)
			}
			if r.Throttled != 0 {
				t.Errorf("%d calls throttled (%s) at 60 nodes", r.Throttled, r.ThrottleError)
			}
			// The audit log must have seen polyccm initialize every Node.
			if got := r.APIRequests["update nodes"]; got < 60 {
				t.Errorf("audit log: %d node updates by polyccm, want at least 60 (all: %v)", got, r.APIRequests)
			}
			if r.PeakRSSBytes < 10<<20 || r.PeakAnonBytes < 1<<20 || r.PeakAnonBytes > r.PeakRSSBytes || r.CPUSeconds <= 0 {
				t.Errorf("polyccm's peak RSS %d bytes and CPU %.2fs: not measured", r.PeakRSSBytes, r.CPUSeconds)
			}
			if r.Ceiling == nil || r.Ceiling.NodesPerSecond <= 0 || r.FractionOfCeiling <= 0 {
				t.Errorf("no ceiling measured: %+v", r.Ceiling)
			}
			if n := len(r.Curve); n < 2 || r.Curve[n-1][1] != 60 {
				t.Errorf("curve %v does not end at 60 nodes", r.Curve)
			}

			base := filepath.Join(out, driver+"-"+time.Now().UTC().Format("2006-01-02"))
			b, err := os.ReadFile(base + ".json")
			if err != nil {
				t.Fatal(err)
			}
			var back report
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("%s.json: %v", base, err)
			}
			if back.Options.Driver != driver || len(back.Runs) != 1 || back.Runs[0].Nodes != 60 {
				t.Errorf("%s.json does not hold the run: %s", base, b)
			}
			svg, err := os.ReadFile(base + ".svg")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(svg), "<svg") || strings.Count(string(svg), "<polyline") != 2 {
				t.Errorf("%s.svg: want an SVG with a polyccm and a bare-client line", base)
			}
		})
	}
}

// TestBenchColdStart runs the cold-start regime small: the Nodes wait
// before polyccm starts, then polyccm restarts over them; the restart's
// cloud calls are a listing or two, not one per Node.
func TestBenchColdStart(t *testing.T) {
	cluster.SkipIfNoBinaries(t)
	o := options{
		Driver: "digitalocean", Nodes: []int{60}, Latency: 30 * time.Millisecond, LatencyMS: 30, Rate: 20, Burst: 40,
		Creators: 20, Workers: 16, Timeout: 3 * time.Minute, Out: t.TempDir(), Quiet: !testing.Verbose(), NoCeiling: true,
		Regimes: []string{regimeColdStart},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := bench(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 1 || rep.Runs[0].Regime != regimeColdStart {
		t.Fatalf("runs %+v, want one cold start", rep.Runs)
	}
	r := rep.Runs[0]
	if r.TotalSeconds <= 0 || r.PerNode.Max > r.TotalSeconds+0.5 || r.CloudCallsTotal == 0 || r.CloudCallsPerNode > 0.25 {
		t.Errorf("cold start: %.2fs, per node %+v, %d cloud calls (%v)", r.TotalSeconds, r.PerNode, r.CloudCallsTotal, r.CloudCalls)
	}
	if r.Restart == nil || r.Restart.ReadySeconds <= 0 || r.Restart.CloudCallsTotal > 5 {
		t.Errorf("restart %+v: want it measured, with a listing or two", r.Restart)
	}
	if !strings.Contains(rep.table(), "| coldstart | 60 |") {
		t.Errorf("table without the cold start row:\n%s", rep.table())
	}
}

// TestBenchSteady runs the steady-state regime small: the refresh is
// measured at a shortened period, and the lifecycle monitor's lookups of
// the NotReady Node are answered from what polyccm learnt since it went
// NotReady, not one call per check.
func TestBenchSteady(t *testing.T) {
	cluster.SkipIfNoBinaries(t)
	o := options{
		Driver: "digitalocean", Nodes: []int{20, 60}, Latency: 30 * time.Millisecond, LatencyMS: 30, Rate: 20, Burst: 40,
		Creators: 20, Workers: 16, Timeout: 3 * time.Minute, Out: t.TempDir(), Quiet: !testing.Verbose(), NoCeiling: true,
		Regimes: []string{regimeSteady}, SteadyPeriods: []time.Duration{10 * time.Second}, MonitorSettle: 5 * time.Second, MonitorWindow: 40 * time.Second,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := bench(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 1 || rep.Runs[0].Nodes != 60 || rep.Runs[0].Steady == nil {
		t.Fatalf("runs %+v, want one steady run at the largest size", rep.Runs)
	}
	s := rep.Runs[0].Steady
	if len(s.StatusPeriods) != 1 || s.StatusPeriods[0].Waves != 2 || s.NotReadyNodes != 1 {
		t.Errorf("steady %+v: want one refresh period of 2 waves and 1 NotReady Node", s)
	}
	// 8 checks of the NotReady Node in 40 s, each an existence and a
	// shutdown question: one call each uncached, one per cache TTL (30 s)
	// with the cache. The start's listing was made after the Node went
	// NotReady, so it answers them for instances.NotReadyRecheck (5 min):
	// none.
	if n := total(s.MonitorCloudCalls); n != 0 {
		t.Errorf("%d cloud calls for the lifecycle monitor in 40 s (%v): want none", n, s.MonitorCloudCalls)
	}
	if s.CallsPerHour != round3(s.CallsPerStatusWave*12+s.MonitorCallsPerHour) || s.CallsPerNodePerHour != round3(s.CallsPerHour/60) {
		t.Errorf("calls per hour %.3f (per Node %.4f) do not add up from %+v", s.CallsPerHour, s.CallsPerNodePerHour, s)
	}
	if tab := rep.table(); !strings.Contains(tab, "| steady | 60 |") {
		t.Errorf("table without the steady row:\n%s", tab)
	}
	if svg := rep.steadyChart(); !strings.Contains(svg, "<svg") || strings.Count(svg, "<rect") != 4 {
		t.Errorf("steady chart: want an SVG with three bars:\n%s", svg)
	}
}

// TestBenchLoadBalancers runs the load-balancer regime small on every
// cloud: every Service gets a load balancer targeting exactly the Nodes,
// and after a wave of Nodes joining and leaving every load balancer
// targets exactly the new set, with no throttled call.
func TestBenchLoadBalancers(t *testing.T) {
	cluster.SkipIfNoBinaries(t)
	for _, driver := range simcloud.Names() {
		t.Run(driver, func(t *testing.T) {
			if !simcloud.HasLoadBalancers(driver) {
				t.Skipf("polyccm serves no load balancers on %s yet", driver)
			}
			o := options{
				Driver: driver, Nodes: []int{1}, Latency: 10 * time.Millisecond, LatencyMS: 10, Rate: 20, Burst: 40,
				Creators: 10, Workers: 16, Timeout: 3 * time.Minute, Out: t.TempDir(), Quiet: !testing.Verbose(), NoCeiling: true,
				Regimes: []string{regimeLoadBalancers}, LBServices: 8, LBNodes: 12, LBChurn: 3, LBTimeout: 3 * time.Minute,
			}
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
			defer cancel()
			rep, err := bench(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Runs) != 1 || rep.Runs[0].Nodes != 12 || rep.Runs[0].LB == nil {
				t.Fatalf("runs %+v, want one load-balancer run over 12 Nodes", rep.Runs)
			}
			l := rep.Runs[0].LB
			if l.CreateSeconds <= 0 || l.CreateTotal == 0 || !l.ChurnConvergedAllLB || l.ChurnTotal == 0 {
				t.Errorf("load balancers %+v: want all created targeting the Nodes, then converged after the wave", l)
			}
			if l.Throttled != 0 {
				t.Errorf("%d throttled calls", l.Throttled)
			}
			if n := len(l.CreateCurve); n < 2 || l.CreateCurve[n-1][1] != 8 {
				t.Errorf("create curve %v does not end at 8 load balancers", l.CreateCurve)
			}
			if tab := rep.table(); !strings.Contains(tab, "| loadbalancers | 8 | 12 |") {
				t.Errorf("table without the load-balancer row:\n%s", tab)
			}
			if svg := rep.lbChart(); strings.Count(svg, "<polyline") != 2 {
				t.Errorf("load-balancer chart: want two curves:\n%s", svg)
			}
		})
	}
}
