package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// steadyTable is the steady-state runs as a Markdown table; "" when there
// are none.
func (rep *report) steadyTable() string {
	var b strings.Builder
	for _, r := range rep.Runs {
		s := r.Steady
		if s == nil {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\n| steady state | nodes | calls per refresh of every Node | refresh periods measured | NotReady | monitor calls / hour | calls / hour at the default periods | calls / Node / hour | target | a per-cloud CCM | throttled |\n")
			b.WriteString("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
		}
		var periods []string
		for _, p := range s.StatusPeriods {
			periods = append(periods, fmt.Sprintf("%gs: %.1f/wave", p.PeriodSeconds, p.CallsPerWave))
		}
		fmt.Fprintf(&b, "| %s | %d | %.1f | %s | %d | %.0f | %.0f | %.4f | ≤ %g | %.0f | %d |\n",
			regimeSteady, r.Nodes, s.CallsPerStatusWave, strings.Join(periods, "; "), s.NotReadyNodes, s.MonitorCallsPerHour,
			s.CallsPerHour, s.CallsPerNodePerHour, steadyTarget, s.UpstreamCallsPerNodePerHour, s.Throttled)
	}
	for _, r := range rep.Runs {
		if s := r.Steady; s != nil {
			for _, p := range s.StatusPeriods {
				fmt.Fprintf(&b, "\nsteady N=%d refresh every %gs, cloud calls over %d waves: %s", r.Nodes, p.PeriodSeconds, p.Waves, formatCounts(p.CloudCalls))
			}
			fmt.Fprintf(&b, "\nsteady N=%d lifecycle monitor, cloud calls over %gs: %s\n", r.Nodes, s.MonitorWindowSeconds, formatCounts(s.MonitorCloudCalls))
		}
	}
	return b.String()
}

// steadyChart draws, per steady run, polyccm's cloud calls per Node per
// hour beside the target and a per-cloud CCM's, on a log scale; "" when
// there is no steady run.
func (rep *report) steadyChart() string {
	type bar struct {
		label string
		v     float64
		color string
	}
	var bars []bar
	for _, r := range rep.Runs {
		if s := r.Steady; s != nil {
			bars = append(bars,
				bar{fmt.Sprintf("polyccm, N=%d", r.Nodes), s.CallsPerNodePerHour, "#1f77b4"},
				bar{"target", steadyTarget, "#2ca02c"},
				bar{"a per-cloud CCM", s.UpstreamCallsPerNodePerHour, "#d62728"})
		}
	}
	if len(bars) == 0 {
		return ""
	}
	const (
		width, left, right, top, rowH = 760, 150, 90, 60, 28
		lo, hi                        = -3.0, 2.0 // log10 of the axis ends: 0.001 to 100
	)
	height := top + rowH*len(bars) + 50
	pw := float64(width - left - right)
	x := func(v float64) float64 {
		l := math.Log10(math.Max(v, math.Pow(10, lo)))
		return float64(left) + (l-lo)/(hi-lo)*pw
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	o := rep.Options
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", 16, html.EscapeString("Steady state: cloud calls per Node per hour, polyccm on "+o.Driver))
	fmt.Fprintf(&b, `<text x="%d" y="36" fill="#555">%s</text>`+"\n", 16, html.EscapeString(fmt.Sprintf("%s · default periods (status 5m, monitor 5s), 1%% NotReady · log scale · %d CPUs", rep.PolyccmVersion, rep.Machine.CPUs)))
	for e := lo; e <= hi; e++ {
		v := math.Pow(10, e)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", x(v), top-6, x(v), top+rowH*len(bars))
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x(v), top+rowH*len(bars)+16, trimFloat3(v))
	}
	for i, br := range bars {
		y := top + i*rowH
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-8, y+16, html.EscapeString(br.label))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", left, y+4, x(br.v)-float64(left), rowH-10, br.color)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`+"\n", x(br.v)+6, y+16, trimFloat3(br.v))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">cloud calls per Node per hour</text>`+"\n", float64(left)+pw/2, height-10)
	b.WriteString("</svg>\n")
	return b.String()
}

func trimFloat3(f float64) string {
	s := fmt.Sprintf("%.4f", f)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// lbTable is the load-balancer runs as a Markdown table; "" when there are
// none.
func (rep *report) lbTable() string {
	var b strings.Builder
	for _, r := range rep.Runs {
		l := r.LB
		if l == nil {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("\n| load balancers | Services | Nodes | all created and exact (s) | rate-limit floor: cloud / polyccm (s) | cloud calls / LB | wave: joined / left | all exact after (s) | cloud calls / LB in the wave (target ≤ 2) | throttled (target 0) | peak RSS |\n")
			b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %.1f | %.0f / %.0f | %.2f | %d / %d | %.1f | %.2f | %d | %s |\n",
			regimeLoadBalancers, l.Services, r.Nodes, l.CreateSeconds, l.CloudFloorSeconds, l.ClientFloorSeconds, l.CreateCallsPerLB,
			l.Joined, l.Left, l.ChurnSeconds, l.ChurnCallsPerLB, l.Throttled, mib(l.PeakRSSBytes))
	}
	for _, r := range rep.Runs {
		if l := r.LB; l != nil {
			fmt.Fprintf(&b, "\nloadbalancers N=%d creating %d: cloud calls %s", r.Nodes, l.Services, formatCounts(l.CreateCalls))
			fmt.Fprintf(&b, "\nloadbalancers N=%d wave: cloud calls %s\n", r.Nodes, formatCounts(l.ChurnCalls))
		}
	}
	return b.String()
}

// lbChart draws, per load-balancer run, the share of load balancers done
// over time: created, then exact after the wave (dashed).
func (rep *report) lbChart() string {
	var runs []*sizeResult
	maxT := 1.0
	for _, r := range rep.Runs {
		if r.LB != nil {
			runs = append(runs, r)
			maxT = math.Max(maxT, math.Max(r.LB.CreateSeconds, r.LB.ChurnSeconds))
		}
	}
	if len(runs) == 0 {
		return ""
	}
	const (
		width, height          = 760, 440
		left, right, top, bott = 64, 200, 56, 56
	)
	pw, ph := float64(width-left-right), float64(height-top-bott)
	maxT = niceCeil(maxT)
	x := func(t float64) float64 { return float64(left) + t/maxT*pw }
	y := func(frac float64) float64 { return float64(top) + (1-frac)*ph }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	o := rep.Options
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", left, html.EscapeString("Load balancers at scale: polyccm on "+o.Driver))
	fmt.Fprintf(&b, `<text x="%d" y="36" fill="#555">%s</text>`+"\n", left, html.EscapeString(fmt.Sprintf("%s · cloud rate limit %g requests/s · %d CPUs", rep.PolyccmVersion, o.Rate, rep.Machine.CPUs)))
	grid(&b, left, width-right, top, height-bott, maxT, x, y)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">seconds since the Services were created / the wave began</text>`+"\n", float64(left)+pw/2, height-14)
	ly := top + 8
	for _, r := range runs {
		for _, c := range []struct {
			curve [][2]float64
			label string
			dash  string
			color string
		}{
			{r.LB.CreateCurve, fmt.Sprintf("created, %d LBs", r.LB.Services), "", "#1f77b4"},
			{r.LB.ChurnCurve, fmt.Sprintf("exact after the wave"), ` stroke-dasharray="5 4"`, "#d62728"},
		} {
			var pts []string
			for _, p := range c.curve {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(p[0]), y(p[1]/float64(r.LB.Services))))
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", c.color, c.dash, strings.Join(pts, " "))
			fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/><text x="%d" y="%d">%s</text>`+"\n",
				width-right+12, ly, width-right+36, ly, c.color, c.dash, width-right+42, ly+4, html.EscapeString(c.label))
			ly += 18
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}
