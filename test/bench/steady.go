package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/polyccm/polyccm/test/harness"
	"github.com/polyccm/polyccm/test/simcloud"
)

// The steady state: N initialized Nodes left alone. Two things make cloud
// calls then: the node controller refreshes every Node's metadata once per
// status period (5 minutes by default), and the lifecycle controller asks
// about every NotReady Node once per monitor period (5 seconds). The two
// are measured apart, each in a polyccm process of its own, and added up:
//   - the refresh, with every Node Ready, at shortened status periods (the
//     default would take an hour to see twelve): calls per refresh wave,
//     scaled to the default period;
//   - the monitor, with 1% of the Nodes NotReady, at the default monitor
//     period, and the status period so long that only the start's refresh
//     happens (left out of the window).

// defaultStatusPeriod is nodes.statusUpdateFrequency's default, the
// upstream node controller's.
const defaultStatusPeriod = 5 * time.Minute

// notReadyEvery: one Node in this many is NotReady in the monitor phase.
const notReadyEvery = 100

// steadyResult is the steady-state regime's measurements.
type steadyResult struct {
	// StatusPeriods are the refresh measurements, one per shortened
	// period.
	StatusPeriods []statusPeriod `json:"statusPeriods"`
	// CallsPerStatusWave is their mean: what one refresh of every Node
	// costs.
	CallsPerStatusWave float64 `json:"callsPerStatusWave"`
	// The monitor phase: NotReadyNodes NotReady, calls over a window at
	// the default monitor period, scaled to an hour.
	NotReadyNodes        int            `json:"notReadyNodes"`
	MonitorWindowSeconds float64        `json:"monitorWindowSeconds"`
	MonitorCloudCalls    map[string]int `json:"monitorCloudCalls"`
	MonitorCallsPerHour  float64        `json:"monitorCallsPerHour"`
	// CallsPerHour is at the default periods: a wave per
	// DefaultStatusPeriodSeconds plus the monitor's.
	DefaultStatusPeriodSeconds float64 `json:"defaultStatusPeriodSeconds"`
	CallsPerHour               float64 `json:"callsPerHour"`
	CallsPerNodePerHour        float64 `json:"callsPerNodePerHour"`
	// UpstreamCallsPerNodePerHour is what a per-cloud CCM makes: one
	// call per Node per status period.
	UpstreamCallsPerNodePerHour float64 `json:"upstreamCallsPerNodePerHour"`
	Throttled                   int     `json:"throttled"`
	ErrorsLogged                int     `json:"errorsLogged"`
}

// statusPeriod is the refresh measured at one status period.
type statusPeriod struct {
	PeriodSeconds float64        `json:"periodSeconds"`
	Waves         int            `json:"waves"`
	CloudCalls    map[string]int `json:"cloudCalls"`
	CallsPerWave  float64        `json:"callsPerWave"`
}

// steadyTarget is issue 19's: at most this many cloud calls per Node per
// hour at the default periods.
const steadyTarget = 0.1

// steady measures the steady state of n Nodes on st.
func steady(ctx context.Context, o options, st *stage, n int) (*sizeResult, error) {
	res := &sizeResult{Nodes: n, Regime: regimeSteady, Steady: &steadyResult{
		DefaultStatusPeriodSeconds: defaultStatusPeriod.Seconds(), UpstreamCallsPerNodePerHour: float64(time.Hour / defaultStatusPeriod),
	}}
	sr := res.Steady
	ccm, err := initialized(ctx, o, st, n, "steady state")
	if err != nil {
		return nil, err
	}
	ccm.Stop(15 * time.Second)

	progressf(o, "N=%d: steady state: every Node Ready", n)
	if err := setReady(ctx, st.cp.Admin, st.nodes, o.Workers, 0); err != nil {
		return nil, err
	}
	throttled0 := st.cloud.Faults().Throttled()
	for _, p := range o.SteadyPeriods {
		const waves = 2
		sp := statusPeriod{PeriodSeconds: p.Seconds(), Waves: waves}
		calls, logged, err := window(ctx, o, st, n, p, p/2, waves*p, fmt.Sprintf("refresh every %s, %d waves", p, waves))
		if err != nil {
			return nil, err
		}
		sp.CloudCalls = calls
		sp.CallsPerWave = round3(float64(total(calls)) / waves)
		sr.StatusPeriods = append(sr.StatusPeriods, sp)
		sr.CallsPerStatusWave += sp.CallsPerWave / float64(len(o.SteadyPeriods))
		sr.ErrorsLogged += logged
	}
	sr.CallsPerStatusWave = round3(sr.CallsPerStatusWave)

	sr.NotReadyNodes = (n + notReadyEvery - 1) / notReadyEvery
	progressf(o, "N=%d: steady state: %d Nodes NotReady", n, sr.NotReadyNodes)
	if err := setReady(ctx, st.cp.Admin, st.nodes, o.Workers, notReadyEvery); err != nil {
		return nil, err
	}
	// Long enough that only the start's refresh happens; it is over before
	// the window opens.
	calls, logged, err := window(ctx, o, st, n, 24*time.Hour, o.MonitorSettle, o.MonitorWindow, "lifecycle monitor, default period")
	if err != nil {
		return nil, err
	}
	sr.MonitorWindowSeconds = o.MonitorWindow.Seconds()
	sr.MonitorCloudCalls = calls
	sr.MonitorCallsPerHour = round3(float64(total(calls)) * float64(time.Hour) / float64(o.MonitorWindow))
	sr.ErrorsLogged += logged
	sr.Throttled = st.cloud.Faults().Throttled() - throttled0

	sr.CallsPerHour = round3(sr.CallsPerStatusWave*float64(time.Hour/defaultStatusPeriod) + sr.MonitorCallsPerHour)
	sr.CallsPerNodePerHour = round3(sr.CallsPerHour / float64(n))
	return res, nil
}

// window starts polyccm with the status period period, waits settle
// after it leads, then counts its cloud calls for length; it returns them
// and polyccm's error lines.
func window(ctx context.Context, o options, st *stage, n int, period, settle, length time.Duration, what string) (map[string]int, int, error) {
	opts := st.ccmOpts
	opts.Env = append(slices.Clone(opts.Env), "POLYCCM_NODES__STATUSUPDATEFREQUENCY="+period.String())
	ccm, err := harness.StartCCM(opts)
	if err != nil {
		return nil, 0, err
	}
	defer ccm.Stop(15 * time.Second)
	if err := waitStarted(ctx, ccm, st.cp); err != nil {
		return nil, 0, err
	}
	progressf(o, "N=%d: %s: polyccm leads; counting cloud calls from %s for %s", n, what, settle, length)
	if err := sleepCtx(ctx, settle); err != nil {
		return nil, 0, err
	}
	calls0 := st.cloud.Faults().Calls()
	end := time.Now().Add(length)
	for time.Now().Before(end) {
		if err := sleepCtx(ctx, min(15*time.Second, time.Until(end))); err != nil {
			return nil, 0, err
		}
		if ccm.Exited() {
			return nil, 0, fmt.Errorf("polyccm exited during the steady state; its log: %s", ccm.LogPath)
		}
		progressf(o, "N=%d: %s: %d cloud calls so far, %s left", n, what, total(diffCalls(st.cloud.Faults().Calls(), calls0)), time.Until(end).Round(time.Second))
	}
	return diffCalls(st.cloud.Faults().Calls(), calls0), countErrors(ccm.Log()), nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// setReady writes every Node's Ready condition as a kubelet would: True,
// or False for one Node in every notReady (0: none).
func setReady(ctx context.Context, kube kubernetes.Interface, nodes []simcloud.Node, workers, notReady int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	now := metav1.Now()
	for range min(workers, len(nodes)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(nodes) {
					return
				}
				cond := v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now}
				if notReady > 0 && i%notReady == 0 {
					cond.Status, cond.Reason, cond.Message = v1.ConditionFalse, "KubeletNotReady", "container runtime is down"
				}
				patch, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []v1.NodeCondition{cond}}})
				if _, err := kube.CoreV1().Nodes().Patch(ctx, nodes[i].Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
					errs <- fmt.Errorf("setting Node %s's Ready condition: %w", nodes[i].Name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// initialized registers st's n Nodes, starts polyccm and waits until it
// has initialized them all (not timed): the starting point of the regimes
// that measure a cluster already up. The caller stops polyccm.
func initialized(ctx context.Context, o options, st *stage, n int, regime string) (*harness.CCM, error) {
	progressf(o, "N=%d: %s: registering %d tainted Nodes and letting polyccm initialize them (not timed)", n, regime, n)
	w := newInitWatch(st.nodes)
	if err := register(ctx, st.cp.Admin, st.nodes, o.Creators, func(i int, _ *v1.Node) { w.created(i) }); err != nil {
		return nil, err
	}
	ccm, err := harness.StartCCM(st.ccmOpts)
	if err != nil {
		return nil, err
	}
	w.t0 = time.Now()
	stopWatch, err := w.start(ctx, st.cp.Admin)
	if err == nil {
		status := func() string { return fmt.Sprintf("cloud calls %d", total(st.cloud.Faults().Calls())) }
		err = w.wait(ctx, o, n, "polyccm", o.Timeout, nil, status, ccm.Exited)
		stopWatch()
	}
	if err != nil {
		ccm.Stop(10 * time.Second)
		return nil, err
	}
	return ccm, nil
}
