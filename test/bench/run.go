package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/polyccm/polyccm/test/cluster"
	"github.com/polyccm/polyccm/test/harness"
	"github.com/polyccm/polyccm/test/simcloud"
)

// clusterName is polyccm's clusterName in the bench.
const clusterName = "bench"

// stage is one size's control plane and simulated cloud, with the
// cloud's instances, and how polyccm is started on them.
type stage struct {
	cp       *harness.ControlPlane
	cloud    simcloud.Cloud
	nodes    []simcloud.Node
	ccmOpts  harness.CCMOptions
	auditLog string
}

// newStage starts a control plane and a cloud of n instances for one
// size, so that sizes do not share caches or etcd history; close stops
// them.
func newStage(ctx context.Context, o options, bin, dir string, n int) (st *stage, close func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	progressf(o, "N=%d: starting etcd and kube-apiserver (auditing polyccm's requests)", n)
	st = &stage{auditLog: filepath.Join(dir, "audit.jsonl")}
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy(harness.PolyccmUser)), 0o644); err != nil {
		return nil, nil, err
	}
	st.cp, err = harness.StartControlPlane(ctx, cluster.Options{
		Dir: filepath.Join(dir, "cluster"),
		ExtraAPIServerArgs: []string{
			"--audit-policy-file=" + policy, "--audit-log-path=" + st.auditLog, "--audit-log-format=json",
			"--audit-log-mode=batch", "--audit-log-batch-max-wait=1s", "--audit-log-maxsize=0",
		},
	})
	if err != nil {
		return nil, nil, err
	}
	// Fast: the benchmark measures polyccm against one account-wide rate
	// limit it sets itself (below); the cloud's own buckets and delays
	// would measure the fake's knobs instead.
	st.cloud, err = simcloud.New(o.Driver, simcloud.Options{ClusterName: clusterName, Latency: o.Latency, Profile: &simcloud.Fast})
	if err != nil {
		st.cp.Stop()
		return nil, nil, err
	}
	close = func() { st.cloud.Close(); st.cp.Stop() }
	st.nodes = st.cloud.AddInstances(n)
	// The rate limit starts now, with a full bucket: polyccm has it all.
	st.cloud.Faults().SetRateLimit(o.Rate, o.Burst)
	port, err := harness.FreePort()
	if err != nil {
		close()
		return nil, nil, err
	}
	block, err := st.cloud.ConfigBlock(dir)
	if err != nil {
		close()
		return nil, nil, err
	}
	st.ccmOpts = harness.CCMOptions{
		Bin: bin, Dir: dir, Port: port,
		Config: polyccmConfig(o.Driver, st.cp.PolyccmKubeconfig, port, block),
		Env:    append(st.cloud.Env(dir), o.PolyccmEnv...),
	}
	return st, close, nil
}

// runSize measures one cluster size in one regime on a stage of its own.
func runSize(ctx context.Context, o options, regime, bin, dir string, n int) (*sizeResult, error) {
	st, closeStage, err := newStage(ctx, o, bin, dir, n)
	if err != nil {
		return nil, err
	}
	defer closeStage()
	switch regime {
	case regimeSteady:
		return steady(ctx, o, st, n)
	case regimeLoadBalancers:
		return loadBalancersAtScale(ctx, o, st, n)
	}
	cp, cloud, nodes, ccmOpts, auditLog := st.cp, st.cloud, st.nodes, st.ccmOpts, st.auditLog
	w := newInitWatch(nodes)
	cold := regime == regimeColdStart
	if cold {
		// The Nodes are there before polyccm: registered (not timed),
		// tainted, waiting.
		progressf(o, "N=%d: cold start: registering %d tainted Nodes before polyccm starts", n, n)
		if err := register(ctx, cp.Admin, nodes, o.Creators, func(i int, _ *v1.Node) { w.created(i) }); err != nil {
			return nil, err
		}
	}

	calls0 := cloud.Faults().Calls()
	throttled0 := cloud.Faults().Throttled()
	t0 := time.Now() // cold start: from polyccm's start
	w.restartClock(t0)
	ccm, err := harness.StartCCM(ccmOpts)
	if err != nil {
		return nil, err
	}
	defer ccm.Stop(10 * time.Second)
	mem := newMemSampler(ccm.Pid())
	defer mem.stop()
	var stopWatch func()
	if cold {
		// Watch from the start: initializing begins with leadership.
		w.t0 = t0
		if stopWatch, err = w.start(ctx, cp.Admin); err != nil {
			return nil, err
		}
		defer stopWatch()
	}
	if err := waitStarted(ctx, ccm, cp); err != nil {
		return nil, err
	}

	res := &sizeResult{Nodes: n, Regime: regime}
	cpu0, _ := cpuSeconds(ccm.Pid())
	if cold {
		cpu0 = 0 // the whole process's time: it started for this
	}
	regErr := make(chan error, 1)
	if !cold {
		calls0, throttled0 = cloud.Faults().Calls(), cloud.Faults().Throttled()
		if stopWatch, err = w.start(ctx, cp.Admin); err != nil {
			return nil, err
		}
		defer stopWatch()
		progressf(o, "N=%d: registering %d tainted Nodes at once, %d clients", n, n, o.Creators)
		t0 = time.Now()
		w.t0 = t0
		go func() {
			regErr <- register(ctx, cp.Admin, nodes, o.Creators, func(i int, _ *v1.Node) { w.created(i) })
		}()
	} else {
		progressf(o, "N=%d: cold start: polyccm is up; waiting for the %d Nodes", n, n)
		regErr <- nil
	}
	status := func() string {
		return fmt.Sprintf("cloud calls %d (throttled %d) · polyccm RSS %s", total(diffCalls(cloud.Faults().Calls(), calls0)), cloud.Faults().Throttled()-throttled0, mib(mem.current()))
	}
	if err := w.wait(ctx, o, n, "polyccm", o.Timeout, regErr, status, ccm.Exited); err != nil {
		return nil, fmt.Errorf("%w\npolyccm's log: %s (last lines:\n%s)", err, ccm.LogPath, ccm.LogTail(15))
	}
	res.TotalSeconds = w.total().Seconds()
	res.NodesPerSecond = round3(float64(n) / res.TotalSeconds)
	res.PerNode = w.percentiles()
	res.Curve = w.curve(200)
	tEnd := time.Now()

	cpu1, _ := cpuSeconds(ccm.Pid())
	res.CPUSeconds = cpu1 - cpu0
	res.PeakRSSBytes = mem.peak()
	res.PeakAnonBytes = mem.peakAnon()
	res.CloudCalls = diffCalls(cloud.Faults().Calls(), calls0)
	res.CloudCallsTotal = total(res.CloudCalls)
	res.CloudCallsPerNode = float64(res.CloudCallsTotal) / float64(n)
	res.Throttled = cloud.Faults().Throttled() - throttled0
	res.ThrottleError = cloud.ThrottleError()
	res.ErrorsLogged = countErrors(ccm.Log())

	// The Nodes as polyccm left them are what the bare client writes.
	final, err := cp.Admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	if code, err := ccm.Stop(15 * time.Second); err != nil || code != 0 {
		return nil, fmt.Errorf("polyccm did not stop cleanly on SIGTERM (exit %d, %v); its log: %s", code, err, ccm.LogPath)
	}
	if res.APIRequests, err = countAudit(auditLog, t0, tEnd); err != nil {
		return nil, err
	}
	res.APIRequestsTotal = total(res.APIRequests)
	res.APIRequestsPerNode = float64(res.APIRequestsTotal) / float64(n)

	if cold {
		progressf(o, "N=%d: restart: polyccm again, over %d initialized Nodes", n, n)
		if res.Restart, err = restart(ctx, ccmOpts, cp, cloud); err != nil {
			return nil, fmt.Errorf("restart: %w", err)
		}
	}

	if !o.NoCeiling {
		progressf(o, "N=%d: ceiling: the same Node updates by a bare client with %d workers", n, o.Workers)
		c, err := ceiling(ctx, o, cp.Admin, nodes, final.Items)
		if err != nil {
			return nil, fmt.Errorf("ceiling: %w", err)
		}
		res.Ceiling = c
		res.FractionOfCeiling = round3(res.NodesPerSecond / c.NodesPerSecond)
	}
	return res, nil
}

// waitStarted waits until polyccm serves and holds the leader Lease, so
// its controllers run.
func waitStarted(ctx context.Context, ccm *harness.CCM, cp *harness.ControlPlane) error {
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	err := ccm.WaitReady(wctx)
	cancel()
	if err != nil {
		return err
	}
	if err := waitLeader(ctx, cp.Admin); err != nil {
		return fmt.Errorf("%w; polyccm's log %s", err, ccm.LogPath)
	}
	return nil
}

// restartSettle is how long after a restart the cloud calls are counted:
// the startup's, once every Node's first status refresh has been asked.
const restartSettle = 20 * time.Second

// restart starts polyccm again over the initialized Nodes (an upgrade, a
// crash) and measures the time until it serves and leads, and the cloud
// calls it makes at start.
func restart(ctx context.Context, opts harness.CCMOptions, cp *harness.ControlPlane, cloud simcloud.Cloud) (*restartResult, error) {
	calls0 := cloud.Faults().Calls()
	t0 := time.Now()
	ccm, err := harness.StartCCM(opts)
	if err != nil {
		return nil, err
	}
	defer ccm.Stop(10 * time.Second)
	if err := waitStarted(ctx, ccm, cp); err != nil {
		return nil, err
	}
	r := &restartResult{ReadySeconds: round3(time.Since(t0).Seconds())}
	select {
	case <-time.After(restartSettle):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	r.CloudCalls = diffCalls(cloud.Faults().Calls(), calls0)
	r.CloudCallsTotal = total(r.CloudCalls)
	r.ErrorsLogged = countErrors(ccm.Log())
	return r, nil
}

// polyccmConfig is polyccm's defaults but for what the bench must set: the
// bench's cluster, port and cloud. Everything tunable stays at the value
// operators get.
func polyccmConfig(driver, kubeconfig string, port int, block string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "driver: %s\nclusterName: %s\nkubeconfig: %s\n", driver, clusterName, kubeconfig)
	fmt.Fprintf(&b, "serving:\n  bindAddress: 127.0.0.1\n  securePort: %d\n", port)
	fmt.Fprintf(&b, "drivers:\n  %s:\n", driver)
	for l := range strings.SplitSeq(strings.TrimRight(block, "\n"), "\n") {
		fmt.Fprintf(&b, "    %s\n", l)
	}
	return b.String()
}

// waitLeader waits until some replica holds the cloud-controller-manager
// lease.
func waitLeader(ctx context.Context, kube kubernetes.Interface) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		l, err := kube.CoordinationV1().Leases("kube-system").Get(ctx, "cloud-controller-manager", metav1.GetOptions{})
		if err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("polyccm took no leader lease within a minute")
}

// register creates the Nodes as their kubelets would, with `clients`
// requests in flight, and reports each Node once it exists.
func register(ctx context.Context, kube kubernetes.Interface, nodes []simcloud.Node, clients int, created func(i int, n *v1.Node)) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for range min(clients, len(nodes)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(nodes) {
					return
				}
				n, err := kube.CoreV1().Nodes().Create(ctx, harness.UninitializedNode(nodes[i].Name, nodes[i].ProviderID), metav1.CreateOptions{})
				if err != nil {
					errs <- fmt.Errorf("registering Node %s: %w", nodes[i].Name, err)
					return
				}
				created(i, n)
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// initWatch records when each Node was registered and when it was first
// seen initialized (no uninitialized taint, a providerID).
type initWatch struct {
	index  map[string]int
	t0     time.Time
	mu     sync.Mutex
	reg    []time.Time
	init   []time.Time
	nReg   int
	nInit  int
	doneCh chan struct{}
}

func newInitWatch(nodes []simcloud.Node) *initWatch {
	w := &initWatch{index: make(map[string]int, len(nodes)), reg: make([]time.Time, len(nodes)), init: make([]time.Time, len(nodes)), doneCh: make(chan struct{})}
	for i, n := range nodes {
		w.index[n.Name] = i
	}
	return w
}

func (w *initWatch) created(i int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.reg[i].IsZero() {
		w.reg[i] = time.Now()
		w.nReg++
	}
}

// initialized notes a Node that lost its taint; the clock for the Node
// starts when its registration returned, or now if the watch saw the Node
// first.
func (w *initWatch) initialized(name string) {
	i, ok := w.index[name]
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.init[i].IsZero() {
		return
	}
	now := time.Now()
	w.init[i] = now
	if w.reg[i].IsZero() {
		w.reg[i] = now
		w.nReg++
	}
	w.nInit++
	if w.nInit == len(w.init) {
		close(w.doneCh)
	}
}

// restartClock makes every Node's wait start at t: on a cold start the
// Nodes wait for polyccm, not since they registered.
func (w *initWatch) restartClock(t time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range w.reg {
		if !w.reg[i].IsZero() {
			w.reg[i] = t
		}
	}
}

func (w *initWatch) counts() (registered, initialized int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.nReg, w.nInit
}

// start runs an informer on Nodes, as fast as the apiserver's watch.
func (w *initWatch) start(ctx context.Context, kube kubernetes.Interface) (stop func(), err error) {
	lw := cache.NewListWatchFromClient(kube.CoreV1().RESTClient(), "nodes", "", fields.Everything())
	inf := cache.NewSharedIndexInformer(lw, &v1.Node{}, 0, cache.Indexers{})
	check := func(obj any) {
		n, ok := obj.(*v1.Node)
		if ok && n.Spec.ProviderID != "" && !harness.HasTaint(n, harness.UninitializedTaint.Key) {
			w.initialized(n.Name)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: check, UpdateFunc: func(_, n any) { check(n) }}); err != nil {
		return nil, err
	}
	ictx, cancel := context.WithCancel(ctx)
	go inf.RunWithContext(ictx)
	if !cache.WaitForCacheSync(ictx.Done(), inf.HasSynced) {
		cancel()
		return nil, fmt.Errorf("watching Nodes: the informer did not sync")
	}
	return cancel, nil
}

// wait shows progress until every Node is initialized, timeout passes,
// registering fails or the process under test exits.
func (w *initWatch) wait(ctx context.Context, o options, n int, who string, timeout time.Duration, regErr <-chan error, status func() string, exited func() bool) error {
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	deadline := time.After(timeout)
	for {
		select {
		case <-w.doneCh:
			reg, ini := w.counts()
			progressf(o, "N=%d: %s: registered %d/%d · initialized %d/%d · %s · %s", n, who, reg, n, ini, n, status(), time.Since(w.t0).Round(100*time.Millisecond))
			return nil
		case err := <-regErr:
			if err != nil {
				return err
			}
			regErr = nil
		case <-tick.C:
			reg, ini := w.counts()
			progressf(o, "N=%d: %s: registered %d/%d · initialized %d/%d · %s · %s", n, who, reg, n, ini, n, status(), time.Since(w.t0).Round(100*time.Millisecond))
			if exited != nil && exited() {
				return fmt.Errorf("%s exited with %d of %d Nodes initialized", who, ini, n)
			}
		case <-deadline:
			_, ini := w.counts()
			return fmt.Errorf("%s initialized only %d of %d Nodes in %s", who, ini, n, timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// total is from the first registration to the last Node initialized.
func (w *initWatch) total() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var last time.Time
	for _, t := range w.init {
		if t.After(last) {
			last = t
		}
	}
	return last.Sub(w.t0)
}

// percentiles of the time each Node waited, registration to initialized.
func (w *initWatch) percentiles() latency {
	w.mu.Lock()
	d := make([]float64, 0, len(w.init))
	for i := range w.init {
		d = append(d, w.init[i].Sub(w.reg[i]).Seconds())
	}
	w.mu.Unlock()
	sort.Float64s(d)
	pick := func(q float64) float64 { return round3(d[min(len(d)-1, int(q*float64(len(d))))]) }
	return latency{P50: pick(0.50), P99: pick(0.99), Max: round3(d[len(d)-1])}
}

// curve is Nodes initialized over time.
func (w *initWatch) curve(points int) [][2]float64 {
	w.mu.Lock()
	ts := make([]float64, 0, len(w.init))
	for _, t := range w.init {
		ts = append(ts, t.Sub(w.t0).Seconds())
	}
	w.mu.Unlock()
	return curveOf(ts, points)
}

// curveOf turns completion times (seconds) into (time, count done) with
// at most about points points.
func curveOf(ts []float64, points int) [][2]float64 {
	ts = slices.Clone(ts)
	sort.Float64s(ts)
	out := [][2]float64{{0, 0}}
	step := max(1, len(ts)/points)
	for i := step - 1; i < len(ts); i += step {
		out = append(out, [2]float64{round3(ts[i]), float64(i + 1)})
	}
	if last := out[len(out)-1]; int(last[1]) != len(ts) {
		out = append(out, [2]float64{round3(ts[len(ts)-1]), float64(len(ts))})
	}
	return out
}

func total(counts map[string]int) int {
	t := 0
	for _, c := range counts {
		t += c
	}
	return t
}

func diffCalls(now, before map[string]int) map[string]int {
	out := map[string]int{}
	for k, c := range now {
		if d := c - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}
