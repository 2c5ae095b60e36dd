package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/polyccm/polyccm/config"
	"github.com/polyccm/polyccm/test/simcloud"
)

// Load balancers at scale: S LoadBalancer Services over N initialized
// Nodes, all created at once under the cloud's rate limit; then a wave of
// Nodes joins and as many leave at once, and the service controller calls
// UpdateLoadBalancer for every Service. Measured: the time until every
// Service has its load balancer, and until every load balancer targets
// exactly the Nodes there are after the wave; the cloud calls of each
// phase, per load balancer; throttled calls.

// lbResult is the load-balancer regime's measurements.
type lbResult struct {
	Services int `json:"services"`
	// Create is the phase in which the Services are created.
	CreateSeconds float64        `json:"createSeconds"`
	CreateCalls   map[string]int `json:"createCloudCalls"`
	CreateTotal   int            `json:"createCloudCallsTotal"`
	// FloorSeconds is what the rate limits allow at best: the calls made
	// over the cloud's rate, and over polyccm's own client limit
	// (cloudAPI.qps).
	CloudFloorSeconds  float64      `json:"cloudRateFloorSeconds"`
	ClientFloorSeconds float64      `json:"clientRateFloorSeconds"`
	CreateCurve        [][2]float64 `json:"createCurve"`
	// The wave: Joined Nodes registered and Left deleted at once.
	Joined              int            `json:"joined"`
	Left                int            `json:"left"`
	ChurnSeconds        float64        `json:"churnSeconds"`
	ChurnCalls          map[string]int `json:"churnCloudCalls"`
	ChurnTotal          int            `json:"churnCloudCallsTotal"`
	ChurnCallsPerLB     float64        `json:"churnCloudCallsPerLB"`
	ChurnCurve          [][2]float64   `json:"churnCurve"`
	Throttled           int            `json:"throttled"`
	ErrorsLogged        int            `json:"errorsLogged"`
	PeakRSSBytes        int64          `json:"peakRSSBytes"`
	CreateCallsPerLB    float64        `json:"createCloudCallsPerLB"`
	ChurnConvergedAllLB bool           `json:"churnConverged"`
}

// loadBalancersAtScale runs the regime on st, whose n instances are
// the Nodes.
func loadBalancersAtScale(ctx context.Context, o options, st *stage, n int) (*sizeResult, error) {
	res := &sizeResult{Nodes: n, Regime: regimeLoadBalancers, LB: &lbResult{Services: o.LBServices}}
	lr := res.LB
	ccm, err := initialized(ctx, o, st, n, "load balancers")
	if err != nil {
		return nil, err
	}
	defer ccm.Stop(15 * time.Second)
	mem := newMemSampler(ccm.Pid())
	defer mem.stop()
	if err := setReady(ctx, st.cp.Admin, st.nodes, o.Workers, 0); err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, nd := range st.nodes {
		names[nd.Name] = true
	}

	// Phase 1: every Service at once.
	progressf(o, "N=%d: load balancers: creating %d LoadBalancer Services at once", n, o.LBServices)
	calls0, throttled0 := st.cloud.Faults().Calls(), st.cloud.Faults().Throttled()
	t0 := time.Now()
	if err := createServices(ctx, o, st, o.LBServices); err != nil {
		return nil, err
	}
	ready, err := waitServices(ctx, o, st, n, t0, "with a load balancer targeting exactly the Nodes", o.LBTimeout, ccm.Exited, func(svc *v1.Service) bool {
		return targetsExactly(st.cloud, svc, names)
	})
	if err != nil {
		return nil, fmt.Errorf("%w; polyccm's log: %s", err, ccm.LogPath)
	}
	lr.CreateSeconds = round3(slices.Max(ready))
	lr.CreateCurve = curveOf(ready, 200)
	lr.CreateCalls = diffCalls(st.cloud.Faults().Calls(), calls0)
	lr.CreateTotal = total(lr.CreateCalls)
	lr.CreateCallsPerLB = round3(float64(lr.CreateTotal) / float64(o.LBServices))
	createThrottled := st.cloud.Faults().Throttled() - throttled0
	lr.CloudFloorSeconds = round3(float64(lr.CreateTotal) / o.Rate)
	lr.ClientFloorSeconds = round3(float64(lr.CreateTotal) / float64(config.Defaults().CloudAPI.QPS))
	// Phase 2: a wave of Nodes joins and as many leave.
	lr.Joined, lr.Left = o.LBChurn, min(o.LBChurn, n)
	progressf(o, "N=%d: load balancers: %d Nodes join and %d leave at once", n, lr.Joined, lr.Left)
	// The leaving instances go first (a scale-down terminates them, then
	// their Nodes are deleted), by their owner: on DigitalOcean through the
	// API, whose calls are not polyccm's, so they come before the count.
	for i := range lr.Left {
		if err := removeInstance(ctx, st, i); err != nil {
			return nil, err
		}
	}
	joined := st.cloud.AddInstances(lr.Joined)
	calls1, throttled1 := st.cloud.Faults().Calls(), st.cloud.Faults().Throttled()
	t1 := time.Now()
	for i := range lr.Left {
		if err := st.cp.Admin.CoreV1().Nodes().Delete(ctx, st.nodes[i].Name, metav1.DeleteOptions{}); err != nil {
			return nil, fmt.Errorf("deleting Node %s: %w", st.nodes[i].Name, err)
		}
		delete(names, st.nodes[i].Name)
	}
	if err := register(ctx, st.cp.Admin, joined, o.Creators, func(int, *v1.Node) {}); err != nil {
		return nil, err
	}
	for _, nd := range joined {
		names[nd.Name] = true
	}
	converged, err := waitServices(ctx, o, st, n, t1, "targeting exactly the Nodes", o.LBTimeout, ccm.Exited, func(svc *v1.Service) bool {
		return targetsExactly(st.cloud, svc, names)
	})
	if err != nil {
		return nil, fmt.Errorf("%w; polyccm's log: %s", err, ccm.LogPath)
	}
	lr.ChurnConvergedAllLB = true
	lr.ChurnSeconds = round3(slices.Max(converged))
	lr.ChurnCurve = curveOf(converged, 200)
	lr.ChurnCalls = diffCalls(st.cloud.Faults().Calls(), calls1)
	lr.ChurnTotal = total(lr.ChurnCalls)
	lr.ChurnCallsPerLB = round3(float64(lr.ChurnTotal) / float64(o.LBServices))
	lr.Throttled = createThrottled + st.cloud.Faults().Throttled() - throttled1
	lr.ErrorsLogged = countErrors(ccm.Log())
	lr.PeakRSSBytes = mem.peak()
	return res, nil
}

// createServices creates count LoadBalancer Services from o.Creators
// clients at once.
func createServices(ctx context.Context, o options, st *stage, count int) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, o.Creators)
	for range min(o.Creators, count) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= count {
					return
				}
				name := fmt.Sprintf("lb-%04d", i)
				svc := &v1.Service{
					ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
					Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": name}, Ports: st.cloud.LBPorts()},
				}
				for k := range svc.Spec.Ports {
					svc.Spec.Ports[k].NodePort = 0
				}
				if _, err := st.cp.Admin.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("creating Service %s: %w", name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// waitServices polls the Services until done holds for every one, and
// returns when (seconds since t0) each first did.
func waitServices(ctx context.Context, o options, st *stage, n int, t0 time.Time, what string, timeout time.Duration, exited func() bool, done func(*v1.Service) bool) ([]float64, error) {
	at := map[string]float64{}
	deadline := time.Now().Add(timeout)
	lastReport := time.Time{}
	for {
		l, err := st.cp.Admin.CoreV1().Services("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		now := time.Since(t0).Seconds()
		for i := range l.Items {
			svc := &l.Items[i]
			if _, seen := at[svc.Name]; !seen && svc.Spec.Type == v1.ServiceTypeLoadBalancer && done(svc) {
				at[svc.Name] = now
			}
		}
		if len(at) >= o.LBServices {
			ts := make([]float64, 0, len(at))
			for _, t := range at {
				ts = append(ts, t)
			}
			sort.Float64s(ts)
			return ts, nil
		}
		if time.Since(lastReport) >= 5*time.Second {
			lastReport = time.Now()
			progressf(o, "N=%d: load balancers: %d/%d Services %s · cloud calls %d (throttled %d) · %s", n, len(at), o.LBServices, what,
				total(st.cloud.Faults().Calls()), st.cloud.Faults().Throttled(), time.Since(t0).Round(time.Second))
		}
		if exited() {
			return nil, fmt.Errorf("polyccm exited with %d of %d Services %s", len(at), o.LBServices, what)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("only %d of %d Services %s after %s%s", len(at), o.LBServices, what, timeout, firstPending(st, l.Items, at))
		}
		if err := sleepCtx(ctx, time.Second); err != nil {
			return nil, err
		}
	}
}

// targetsExactly reports whether the Service's load balancer sends to
// exactly the Nodes named.
func targetsExactly(cloud simcloud.Cloud, svc *v1.Service, names map[string]bool) bool {
	if len(svc.Status.LoadBalancer.Ingress) == 0 {
		return false
	}
	id := cloud.LBID(svc)
	if id == "" {
		return false
	}
	got, ok := cloud.LBTargets(id)
	if !ok || len(got) != len(names) {
		return false
	}
	for _, g := range got {
		if !names[g] {
			return false
		}
	}
	return true
}

// firstPending describes a Service not done yet and its load balancer's
// targets, for the error of a phase that timed out.
func firstPending(st *stage, svcs []v1.Service, done map[string]float64) string {
	for i := range svcs {
		svc := &svcs[i]
		if _, ok := done[svc.Name]; ok || len(svc.Status.LoadBalancer.Ingress) == 0 {
			continue
		}
		id := st.cloud.LBID(svc)
		got, _ := st.cloud.LBTargets(id)
		return fmt.Sprintf("; e.g. Service %s: load balancer %q targets %d: %v", svc.Name, id, len(got), got)
	}
	return ""
}

// removeInstance deletes the i-th instance as its owner would. On
// DigitalOcean that goes through the API, under the account's rate limit
// polyccm shares, so a refusal is retried as a client would.
func removeInstance(ctx context.Context, st *stage, i int) error {
	var err error
	for range 30 {
		if err = st.cloud.Remove(i); err == nil {
			return nil
		}
		if err := sleepCtx(ctx, time.Second); err != nil {
			return err
		}
	}
	return fmt.Errorf("removing instance %d: %w", i, err)
}
