package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// report is one bench invocation, written as bench/results/<driver>-<date>.json.
type report struct {
	Date           string        `json:"date"`
	PolyccmVersion string        `json:"polyccmVersion"`
	Machine        machine       `json:"machine"`
	Options        options       `json:"options"`
	Runs           []*sizeResult `json:"runs"`
}

type machine struct {
	CPUs   int    `json:"cpus"`
	GOOS   string `json:"goos"`
	GOARCH string `json:"goarch"`
}

// sizeResult is one cluster size in one regime.
type sizeResult struct {
	Nodes int `json:"nodes"`
	// Regime is what was measured: joinstorm or coldstart (main.go).
	Regime string `json:"regime"`
	// TotalSeconds is from the first registration (cold start: from
	// polyccm's start) to the last Node initialized.
	TotalSeconds float64 `json:"totalSeconds"`
	// PerNode is each Node's wait, registration to initialized.
	PerNode latency `json:"perNodeSeconds"`
	// CloudCalls counts every cloud API request polyccm made while the
	// Nodes were initialized, by "operation" as the fake names it.
	CloudCalls        map[string]int `json:"cloudCalls"`
	CloudCallsTotal   int            `json:"cloudCallsTotal"`
	CloudCallsPerNode float64        `json:"cloudCallsPerNode"`
	// Throttled is how many of those the cloud refused with its
	// throttling error (ThrottleError).
	Throttled     int    `json:"throttled"`
	ThrottleError string `json:"throttleError"`
	// ErrorsLogged counts polyccm's error log lines in the run: what an
	// operator would see of trouble, throttling included.
	ErrorsLogged int `json:"errorsLogged"`
	// APIRequests counts polyccm's apiserver requests, by verb and
	// resource, from the apiserver's audit log.
	APIRequests        map[string]int `json:"apiRequests"`
	APIRequestsTotal   int            `json:"apiRequestsTotal"`
	APIRequestsPerNode float64        `json:"apiRequestsPerNode"`
	PeakRSSBytes       int64          `json:"peakRSSBytes"`
	// PeakAnonBytes is the anonymous part of RSS (heap and stacks, not the
	// mapped binary), sampled every 250ms.
	PeakAnonBytes int64 `json:"peakAnonBytes"`
	// CPUSeconds is polyccm's user and system CPU time during the run.
	CPUSeconds float64 `json:"cpuSeconds"`
	// NodesPerSecond is N over TotalSeconds.
	NodesPerSecond float64 `json:"nodesPerSecond"`
	// Ceiling is the bare client's run; FractionOfCeiling is polyccm's
	// NodesPerSecond over the bare client's (1 = as fast as the apiserver
	// takes the same writes, with no registrations competing).
	Ceiling           *ceilingResult `json:"ceiling,omitempty"`
	FractionOfCeiling float64        `json:"fractionOfCeiling,omitempty"`
	// Curve is (seconds since the first registration, or polyccm's start,
	// Nodes initialized).
	Curve [][2]float64 `json:"curve"`
	// Restart is polyccm started again over the initialized Nodes (cold
	// start regime only).
	Restart *restartResult `json:"restart,omitempty"`
	// Steady is the steady-state regime's result; the fields above are
	// empty for it.
	Steady *steadyResult `json:"steady,omitempty"`
	// LB is the load-balancer regime's result; the fields above are
	// empty for it.
	LB *lbResult `json:"loadBalancers,omitempty"`
}

// initializes reports whether the run measured Nodes being initialized
// (the join storm and the cold start), which the main table and chart
// show.
func (r *sizeResult) initializes() bool { return r.Steady == nil && r.LB == nil }

// restartResult is a restart over initialized Nodes.
type restartResult struct {
	// ReadySeconds is from the process's start until it serves and holds
	// the leader Lease.
	ReadySeconds float64 `json:"readySeconds"`
	// CloudCalls are the calls of its first restartSettle.
	CloudCalls      map[string]int `json:"cloudCalls"`
	CloudCallsTotal int            `json:"cloudCallsTotal"`
	ErrorsLogged    int            `json:"errorsLogged"`
}

func (r *sizeResult) summary() string {
	if l := r.LB; l != nil {
		return fmt.Sprintf("%d load balancers targeting exactly the Nodes in %.1fs with %d cloud calls (%.1f each; the rate limits allow it in %.0fs at the cloud's rate, %.0fs at polyccm's own); %d Nodes joined and %d left: every load balancer exact after %.1fs, %.2f cloud calls per load balancer; %d throttled",
			l.Services, l.CreateSeconds, l.CreateTotal, l.CreateCallsPerLB, l.CloudFloorSeconds, l.ClientFloorSeconds, l.Joined, l.Left, l.ChurnSeconds, l.ChurnCallsPerLB, l.Throttled)
	}
	if s := r.Steady; s != nil {
		return fmt.Sprintf("%.1f cloud calls per refresh of every Node, %.0f an hour for the lifecycle monitor (%d NotReady): %.0f calls an hour at the default periods, %.4f per Node per hour (target %g; a per-cloud CCM makes %.0f); %d throttled",
			s.CallsPerStatusWave, s.MonitorCallsPerHour, s.NotReadyNodes, s.CallsPerHour, s.CallsPerNodePerHour, steadyTarget, s.UpstreamCallsPerNodePerHour, s.Throttled)
	}
	s := fmt.Sprintf("all initialized in %.1fs (per node p50 %.2fs p99 %.2fs max %.2fs); %.3f cloud calls/node, %d throttled; %.1f apiserver requests/node; peak RSS %s (heap and stacks %s); %.1f CPU-s",
		r.TotalSeconds, r.PerNode.P50, r.PerNode.P99, r.PerNode.Max, r.CloudCallsPerNode, r.Throttled, r.APIRequestsPerNode, mib(r.PeakRSSBytes), mib(r.PeakAnonBytes), r.CPUSeconds)
	if r.Ceiling != nil {
		s += fmt.Sprintf("; %.0f nodes/s, the bare client %.0f nodes/s (polyccm at %.0f%% of the ceiling)", r.NodesPerSecond, r.Ceiling.NodesPerSecond, 100*r.FractionOfCeiling)
	}
	if r.Restart != nil {
		s += fmt.Sprintf("; restarted: ready in %.1fs, %d cloud calls at start", r.Restart.ReadySeconds, r.Restart.CloudCallsTotal)
	}
	return s
}

// write saves the JSON and the chart and prints the table.
func (rep *report) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	base := filepath.Join(dir, fmt.Sprintf("%s-%s", rep.Options.Driver, time.Now().UTC().Format("2006-01-02")))
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(base+".json", append(b, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(base+".svg", []byte(rep.chart()), 0o644); err != nil {
		return err
	}
	for suffix, svg := range map[string]string{"-steady.svg": rep.steadyChart(), "-loadbalancers.svg": rep.lbChart()} {
		if svg == "" {
			continue
		}
		if err := os.WriteFile(base+suffix, []byte(svg), 0o644); err != nil {
			return err
		}
	}
	fmt.Println(rep.table())
	fmt.Printf("Wrote %s.json and %s.svg\n", base, base)
	return nil
}

// table is the results as a Markdown table, for the terminal and for
// docs/performance.md.
func (rep *report) table() string {
	var b strings.Builder
	o := rep.Options
	fmt.Fprintf(&b, "\npolyccm %s, driver %s, cloud latency %gms, cloud rate limit %g/s burst %d, %d CPUs\n\n",
		rep.PolyccmVersion, o.Driver, o.LatencyMS, o.Rate, o.Burst, rep.Machine.CPUs)
	initRuns := 0
	for _, r := range rep.Runs {
		if r.initializes() {
			initRuns++
		}
	}
	if initRuns > 0 {
		b.WriteString("| regime | nodes | all initialized (s) | per node p50 / p99 / max (s) | cloud calls / node | throttled | apiserver requests / node | peak RSS (anon) | CPU (s) | nodes/s | bare client nodes/s | of ceiling |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	}
	for _, r := range rep.Runs {
		if !r.initializes() {
			continue
		}
		ceil, frac := "-", "-"
		if r.Ceiling != nil {
			ceil, frac = fmt.Sprintf("%.0f", r.Ceiling.NodesPerSecond), fmt.Sprintf("%.0f%%", 100*r.FractionOfCeiling)
		}
		fmt.Fprintf(&b, "| %s | %d | %.1f | %.2f / %.2f / %.2f | %.3f | %d | %.1f | %s (%s) | %.1f | %.0f | %s | %s |\n",
			cmp.Or(r.Regime, regimeJoinStorm), r.Nodes, r.TotalSeconds, r.PerNode.P50, r.PerNode.P99, r.PerNode.Max, r.CloudCallsPerNode, r.Throttled,
			r.APIRequestsPerNode, mib(r.PeakRSSBytes), mib(r.PeakAnonBytes), r.CPUSeconds, r.NodesPerSecond, ceil, frac)
	}
	b.WriteString(rep.steadyTable())
	b.WriteString(rep.lbTable())
	for _, r := range rep.Runs {
		if !r.initializes() {
			continue
		}
		fmt.Fprintf(&b, "\n%s N=%d cloud calls: %s", cmp.Or(r.Regime, regimeJoinStorm), r.Nodes, formatCounts(r.CloudCalls))
		fmt.Fprintf(&b, "\n%s N=%d apiserver requests: %s", cmp.Or(r.Regime, regimeJoinStorm), r.Nodes, formatCounts(r.APIRequests))
		if r.Restart != nil {
			fmt.Fprintf(&b, "\n%s N=%d restart: ready in %.1f s, cloud calls in its first %s: %s", r.Regime, r.Nodes, r.Restart.ReadySeconds, restartSettle, formatCounts(r.Restart.CloudCalls))
		}
	}
	b.WriteString("\n")
	return b.String()
}

func formatCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// chart draws Nodes initialized over time, as a share of N, one line per
// N for polyccm and a dashed one for the bare client.
func (rep *report) chart() string {
	const (
		width, height          = 760, 440
		left, right, top, bott = 64, 180, 56, 56
	)
	pw, ph := float64(width-left-right), float64(height-top-bott)
	maxT := 1.0
	var runs []*sizeResult
	for _, r := range rep.Runs {
		if r.initializes() {
			runs = append(runs, r)
		}
	}
	for _, r := range runs {
		maxT = math.Max(maxT, r.TotalSeconds)
		if r.Ceiling != nil {
			maxT = math.Max(maxT, r.Ceiling.TotalSeconds)
		}
	}
	maxT = niceCeil(maxT)
	x := func(t float64) float64 { return float64(left) + t/maxT*pw }
	y := func(frac float64) float64 { return float64(top) + (1-frac)*ph }
	colors := []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"}

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	o := rep.Options
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", left,
		html.EscapeString(fmt.Sprintf("Nodes initialized over time: polyccm on %s", o.Driver)))
	fmt.Fprintf(&b, `<text x="%d" y="36" fill="#555">%s</text>`+"\n", left,
		html.EscapeString(fmt.Sprintf("%s · cloud latency %gms, rate limit %g requests/s, burst %d · %d CPUs", rep.PolyccmVersion, o.LatencyMS, o.Rate, o.Burst, rep.Machine.CPUs)))
	grid(&b, left, width-right, top, height-bott, maxT, x, y)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">seconds since the first Node registered</text>`+"\n", float64(left)+pw/2, height-14)
	fmt.Fprintf(&b, `<text transform="translate(16 %.1f) rotate(-90)" text-anchor="middle">Nodes initialized</text>`+"\n", float64(top)+ph/2)
	line := func(curve [][2]float64, n int, color, dash string) {
		var pts []string
		for _, p := range curve {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(p[0]), y(p[1]/float64(n))))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", color, dash, strings.Join(pts, " "))
	}
	ly := top + 8
	for i, r := range runs {
		c := colors[i%len(colors)]
		line(r.Curve, r.Nodes, c, "")
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/><text x="%d" y="%d">polyccm, %s N=%d</text>`+"\n",
			width-right+12, ly, width-right+36, ly, c, width-right+42, ly+4, cmp.Or(r.Regime, regimeJoinStorm), r.Nodes)
		ly += 18
		if r.Ceiling != nil {
			line(r.Ceiling.Curve, r.Nodes, c, ` stroke-dasharray="5 4"`)
			fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2" stroke-dasharray="5 4"/><text x="%d" y="%d">bare client, N=%d</text>`+"\n",
				width-right+12, ly, width-right+36, ly, c, width-right+42, ly+4, r.Nodes)
			ly += 18
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// niceCeil rounds up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func trimFloat(f float64) string {
	s := fmt.Sprintf("%.1f", f)
	return strings.TrimSuffix(s, ".0")
}

// grid draws a chart's horizontal lines at every quarter (labelled in
// percent) and vertical ones at every fifth of maxT (in seconds), over the
// plot from (left, top) to (right, bottom).
func grid(b *strings.Builder, left, right, top, bottom int, maxT float64, x, y func(float64) float64) {
	for i := 0; i <= 4; i++ {
		f := float64(i) / 4
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, y(f), right, y(f))
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%d%%</text>`+"\n", left-6, y(f)+4, i*25)
	}
	for i := 0; i <= 5; i++ {
		t := maxT * float64(i) / 5
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", x(t), top, x(t), bottom)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x(t), bottom+16, trimFloat(t))
	}
}
