//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/polyccm/polyccm/drivers/digitalocean"
	fakedo "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
	"github.com/polyccm/polyccm/test/harness"
)

// nodeWatch records every deletion of a test's Nodes and whether the Node's
// droplet still existed when the deletion was seen. Only the test removes
// droplets, and a droplet ID never comes back, so a droplet that exists
// when the event arrives existed when the Node was deleted.
type nodeWatch struct {
	fake   *fakedo.Server
	prefix string
	stop   chan struct{}
	once   sync.Once

	mu       sync.Mutex
	droplets map[string]int    // node name -> its droplet
	removed  map[int]time.Time // droplet -> when the test removed it
	deleted  []nodeDeletion
}

type nodeDeletion struct {
	node      string
	droplet   int
	at        time.Time
	existed   bool      // the droplet still existed: polyccm deleted a live node
	removedAt time.Time // when the test removed the droplet; zero if it did not
}

func (d nodeDeletion) String() string {
	if d.existed {
		return fmt.Sprintf("%s deleted at %s while droplet %d existed", d.node, d.at.Format("15:04:05.000"), d.droplet)
	}
	return fmt.Sprintf("%s deleted at %s, %s after droplet %d was", d.node, d.at.Format("15:04:05.000"), d.at.Sub(d.removedAt).Round(time.Millisecond), d.droplet)
}

// watchNodeDeletions starts recording; it stops at the test's end, before
// env's cleanup deletes the Nodes itself.
func watchNodeDeletions(t *testing.T, fake *fakedo.Server, prefix string) *nodeWatch {
	t.Helper()
	w := &nodeWatch{fake: fake, prefix: prefix, stop: make(chan struct{}), droplets: map[string]int{}, removed: map[int]time.Time{}}
	factory := informers.NewSharedInformerFactory(cp.Admin, 0)
	inf := factory.Core().V1().Nodes().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: w.onDelete}); err != nil {
		t.Fatal(err)
	}
	factory.Start(w.stop)
	if !cache.WaitForCacheSync(w.stop, inf.HasSynced) {
		t.Fatal("the Node informer never synced")
	}
	t.Cleanup(func() {
		w.close()
		factory.Shutdown()
	})
	return w
}

func (w *nodeWatch) close() { w.once.Do(func() { close(w.stop) }) }

// track says which droplet a Node stands for.
func (w *nodeWatch) track(node string, droplet int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.droplets[node] = droplet
}

// removeDroplet deletes a droplet in the fake, as a user would.
func (w *nodeWatch) removeDroplet(id int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.removed[id] = time.Now()
	return w.fake.RemoveDroplet(id)
}

func (w *nodeWatch) onDelete(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	n, ok := obj.(*v1.Node)
	if !ok || !strings.HasPrefix(n.Name, w.prefix) {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	id, ok := w.droplets[n.Name]
	if !ok {
		id, _ = strconv.Atoi(strings.TrimPrefix(n.Spec.ProviderID, "digitalocean://"))
	}
	_, existed := w.fake.Droplet(id)
	w.deleted = append(w.deleted, nodeDeletion{node: n.Name, droplet: id, at: now, existed: existed, removedAt: w.removed[id]})
}

// deletions returns every deletion seen and those of live droplets.
func (w *nodeWatch) deletions() (all, bad []nodeDeletion) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, d := range w.deleted {
		if d.existed {
			bad = append(bad, d)
		}
	}
	return slices.Clone(w.deleted), bad
}

// soakDuration is how long the churn runs: CCMTEST_SOAK_DURATION, or 2m.
func soakDuration(t *testing.T) time.Duration {
	v := os.Getenv("CCMTEST_SOAK_DURATION")
	if v == "" {
		return 2 * time.Minute
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("CCMTEST_SOAK_DURATION=%q is not a positive duration (e.g. 10m)", v)
	}
	return d
}

// soakSeed is CCMTEST_SOAK_SEED, or a fresh one: each run explores a new
// mix, and a failing one can be replayed.
func soakSeed(t *testing.T) uint64 {
	v := os.Getenv("CCMTEST_SOAK_SEED")
	if v == "" {
		return uint64(time.Now().UnixNano())
	}
	s, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("CCMTEST_SOAK_SEED=%q is not an unsigned integer", v)
	}
	return s
}

// The annotations the churn changes, with the values it picks from. All are
// valid together, so every change is one polyccm must carry out.
var soakAnnotations = map[string][]string{
	digitalocean.AnnSizeUnit:         {"1", "2", "3"},
	digitalocean.AnnProxyProtocol:    {"true", "false"},
	digitalocean.AnnAlgorithm:        {"round_robin", "least_connections"},
	digitalocean.AnnHTTPIdleTimeout:  {"60", "120", "300"},
	digitalocean.AnnBackendKeepalive: {"true", "false"},
}

var soakPorts = []int32{80, 443, 8080, 9000}

// soakLBName is the driver's name for a Service's load balancer (the
// churn never sets the name annotation).
func soakLBName(uid types.UID) string {
	n := "a" + strings.ReplaceAll(string(uid), "-", "")
	return n[:min(len(n), 32)]
}

type soakService struct {
	name string
	uid  types.UID
}

// soak is the churn's state: what the test made and what it removed.
type soak struct {
	t   *testing.T
	e   *doEnv
	w   *nodeWatch
	rng *rand.Rand

	nextNode, nextSvc int
	droplets          []int // existing droplets, in creation order
	off               map[int]bool
	live              []soakService
	gone              []soakService // Services the test deleted
	actions           map[string]int
}

const (
	soakMinNodes    = 3
	soakMaxNodes    = 14
	soakMaxServices = 8
	soakMaxOff      = 2
)

func (s *soak) addNode() {
	name := s.e.nodeName(s.nextNode)
	s.nextNode++
	d := s.e.fake.AddDroplet(fakedo.Droplet{Name: name, Status: fakedo.StatusActive, SizeSlug: "s-2vcpu-4gb", Region: "fra1"})
	s.w.track(name, d.ID)
	s.droplets = append(s.droplets, d.ID)
	pid := ""
	if s.rng.IntN(3) == 0 { // some kubelets are given --provider-id
		pid = digitalocean.ProviderID(d.ID)
	}
	s.e.register(name, pid)
}

func (s *soak) pickDroplet() (int, int) {
	i := s.rng.IntN(len(s.droplets))
	return i, s.droplets[i]
}

// removeNode deletes a droplet; polyccm must delete its Node.
func (s *soak) removeNode() bool {
	if len(s.droplets) <= soakMinNodes {
		return false
	}
	i, id := s.pickDroplet()
	if !s.w.removeDroplet(id) {
		s.t.Fatalf("droplet %d was already gone from the fake", id)
	}
	s.droplets = slices.Delete(s.droplets, i, i+1)
	delete(s.off, id)
	return true
}

// togglePower powers a droplet off or on: an instance that is off still
// exists, and its Node must stay.
func (s *soak) togglePower() bool {
	_, id := s.pickDroplet()
	status := fakedo.StatusActive
	if !s.off[id] {
		if len(s.off) >= soakMaxOff {
			return false
		}
		status = fakedo.StatusOff
	}
	if err := s.e.fake.SetDropletStatus(id, status); err != nil {
		s.t.Fatal(err)
	}
	if status == fakedo.StatusOff {
		s.off[id] = true
	} else {
		delete(s.off, id)
	}
	return true
}

func (s *soak) randomPorts() []v1.ServicePort {
	ports := slices.Clone(soakPorts)
	s.rng.Shuffle(len(ports), func(i, j int) { ports[i], ports[j] = ports[j], ports[i] })
	var out []v1.ServicePort
	for _, p := range ports[:1+s.rng.IntN(3)] {
		out = append(out, tcp(p))
	}
	return out
}

func (s *soak) randomAnnotation() (string, string) {
	keys := make([]string, 0, len(soakAnnotations))
	for k := range soakAnnotations {
		keys = append(keys, k)
	}
	slices.Sort(keys) // map order would defeat the seed
	k := keys[s.rng.IntN(len(keys))]
	vals := soakAnnotations[k]
	return k, vals[s.rng.IntN(len(vals))]
}

func (s *soak) createService() bool {
	if len(s.live) >= soakMaxServices {
		return false
	}
	name := fmt.Sprintf("soak-%03d", s.nextSvc)
	s.nextSvc++
	ann := map[string]string{}
	for range s.rng.IntN(3) {
		k, v := s.randomAnnotation()
		ann[k] = v
	}
	svc := createService(s.t, name, ann, s.randomPorts()...)
	s.live = append(s.live, soakService{name: name, uid: svc.UID})
	return true
}

func (s *soak) changeService() bool {
	if len(s.live) == 0 {
		return false
	}
	svc := s.live[s.rng.IntN(len(s.live))]
	if s.rng.IntN(2) == 0 {
		var ports []any
		for _, p := range s.randomPorts() {
			ports = append(ports, map[string]any{"name": p.Name, "protocol": "TCP", "port": p.Port, "targetPort": 8080})
		}
		patchSvc(s.t, svc.name, map[string]any{"spec": map[string]any{"ports": ports}})
		return true
	}
	k, v := s.randomAnnotation()
	var val any = v
	if s.rng.IntN(4) == 0 {
		val = nil // back to the default
	}
	patchSvc(s.t, svc.name, map[string]any{"metadata": map[string]any{"annotations": map[string]any{k: val}}})
	return true
}

func (s *soak) deleteService() bool {
	if len(s.live) == 0 {
		return false
	}
	i := s.rng.IntN(len(s.live))
	svc := s.live[i]
	if err := cp.Admin.CoreV1().Services("default").Delete(context.Background(), svc.name, metav1.DeleteOptions{}); err != nil {
		s.t.Fatalf("deleting Service %s: %v", svc.name, err)
	}
	s.live = slices.Delete(s.live, i, i+1)
	s.gone = append(s.gone, svc)
	return true
}

// step does one random change, weighted towards a busy but bounded mix.
func (s *soak) step() {
	type action struct {
		name   string
		weight int
		do     func() bool
	}
	actions := []action{
		{"node-join", 18, func() bool {
			if len(s.droplets) >= soakMaxNodes {
				return false
			}
			s.addNode()
			return true
		}},
		{"node-leave", 14, s.removeNode},
		{"power-toggle", 8, s.togglePower},
		{"service-create", 22, s.createService},
		{"service-change", 24, s.changeService},
		{"service-delete", 14, s.deleteService},
	}
	total := 0
	for _, a := range actions {
		total += a.weight
	}
	r := s.rng.IntN(total)
	for _, a := range actions {
		if r -= a.weight; r < 0 {
			if a.do() {
				s.actions[a.name]++
			}
			return
		}
	}
}

// soakCounts is the end state the soak asserts on.
type soakCounts struct {
	liveNodes, initialized int
	staleNodes             []string // Nodes whose droplet the test removed
	missingNodes           []string // droplets whose Node is gone

	deletedServices  int
	servicesNotGone  []string // deleted, but still in the API (finalizer kept)
	leftoverLBs      []string // LBs of deleted Services
	cloudLBs         int
	unownedLBs       []string // LBs no live Service owns, or a second one
	liveServices     int
	converged        int
	notConverged     []string
	nodesDeleted     int
	deletedWhileLive []nodeDeletion
}

// settled says polyccm caught up with the churn. Nodes deleted while
// their droplet existed are not part of it: waiting cannot undo that.
func (c soakCounts) settled() bool {
	return c.initialized == c.liveNodes && len(c.staleNodes) == 0 &&
		len(c.servicesNotGone) == 0 && len(c.leftoverLBs) == 0 && len(c.unownedLBs) == 0 &&
		c.converged == c.liveServices
}

// pending names what keeps the state from being settled.
func (c soakCounts) pending() string {
	var p []string
	if c.initialized != c.liveNodes {
		p = append(p, fmt.Sprintf("%d of %d live nodes initialized", c.initialized, c.liveNodes))
	}
	for _, l := range []struct {
		what  string
		items []string
	}{
		{"stale nodes", c.staleNodes}, {"deleted Services not gone", c.servicesNotGone},
		{"leftover LBs", c.leftoverLBs}, {"unowned LBs", c.unownedLBs}, {"Services not converged", c.notConverged},
	} {
		if len(l.items) > 0 {
			p = append(p, fmt.Sprintf("%s %v", l.what, l.items))
		}
	}
	return strings.Join(p, "; ")
}

// count looks at the cluster and the fake. Both change under it only
// through polyccm, which moves towards the asserted state, so a state seen
// once is a state polyccm reached.
func (s *soak) count() soakCounts {
	var c soakCounts
	ctx := context.Background()
	nodes, err := cp.Admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	nodeByName := map[string]*v1.Node{}
	var targets []int // what every LB should target: each Node's droplet
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if !strings.HasPrefix(n.Name, s.e.prefix) {
			continue
		}
		nodeByName[n.Name] = n
		if id, err := strconv.Atoi(strings.TrimPrefix(n.Spec.ProviderID, "digitalocean://")); err == nil {
			targets = append(targets, id)
		}
	}
	slices.Sort(targets)
	s.w.mu.Lock()
	tracked := make(map[string]int, len(s.w.droplets))
	for n, id := range s.w.droplets {
		tracked[n] = id
	}
	s.w.mu.Unlock()
	for name, id := range tracked {
		_, exists := s.e.fake.Droplet(id)
		n, registered := nodeByName[name]
		switch {
		case exists && !registered:
			c.missingNodes = append(c.missingNodes, name)
		case exists:
			c.liveNodes++
			if !harness.HasTaint(n, harness.UninitializedTaint.Key) && n.Spec.ProviderID == digitalocean.ProviderID(id) {
				c.initialized++
			}
		case registered:
			c.staleNodes = append(c.staleNodes, name)
		}
	}

	lbs := s.e.fake.LoadBalancers()
	c.cloudLBs = len(lbs)
	byName := map[string][]fakedo.LoadBalancer{}
	for _, lb := range lbs {
		byName[lb.Name] = append(byName[lb.Name], lb)
	}
	owned := map[string]bool{}
	c.liveServices = len(s.live)
	for _, ls := range s.live {
		name := soakLBName(ls.uid)
		owned[name] = true
		if why := s.convergedService(ls, byName[name], targets); why != "" {
			c.notConverged = append(c.notConverged, ls.name+": "+why)
		} else {
			c.converged++
		}
	}
	for _, lb := range lbs {
		if !owned[lb.Name] {
			c.unownedLBs = append(c.unownedLBs, lb.Name+" ("+lb.ID+")")
		}
	}
	for name, same := range byName {
		if owned[name] && len(same) > 1 {
			for _, lb := range same[1:] {
				c.unownedLBs = append(c.unownedLBs, lb.Name+" ("+lb.ID+", a second one)")
			}
		}
	}

	c.deletedServices = len(s.gone)
	for _, g := range s.gone {
		if lbs := byName[soakLBName(g.uid)]; len(lbs) > 0 {
			c.leftoverLBs = append(c.leftoverLBs, fmt.Sprintf("%s: %s", g.name, lbs[0].ID))
		}
		svc, err := cp.Admin.CoreV1().Services("default").Get(ctx, g.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			s.t.Fatal(err)
		case svc.UID == g.uid:
			c.servicesNotGone = append(c.servicesNotGone, fmt.Sprintf("%s (finalizers %v)", g.name, svc.Finalizers))
		}
	}

	all, bad := s.w.deletions()
	c.nodesDeleted, c.deletedWhileLive = len(all), bad
	slices.Sort(c.missingNodes)
	slices.Sort(c.staleNodes)
	return c
}

// convergedService says what, if anything, keeps a live Service's load
// balancer from matching it: one LB, recorded on the Service, published,
// with the Service's ports, annotations and nodes.
func (s *soak) convergedService(ls soakService, lbs []fakedo.LoadBalancer, targets []int) string {
	svc, err := cp.Admin.CoreV1().Services("default").Get(context.Background(), ls.name, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	if len(lbs) != 1 {
		return fmt.Sprintf("%d load balancers", len(lbs))
	}
	lb := lbs[0]
	if !slices.Contains(lb.Tags, "k8s:e2e") {
		return fmt.Sprintf("tags %v lack the cluster's k8s:e2e", lb.Tags)
	}
	if id := svc.Annotations[digitalocean.AnnLoadBalancerID]; id != lb.ID {
		return fmt.Sprintf("ID annotation %q, LB %s", id, lb.ID)
	}
	if ing := svc.Status.LoadBalancer.Ingress; len(ing) == 0 || ing[0].IP != lb.IP || lb.IP == "" {
		return fmt.Sprintf("ingress %v, LB IP %q", ing, lb.IP)
	}
	if len(lb.ForwardingRules) != len(svc.Spec.Ports) {
		return fmt.Sprintf("rules %+v for ports %v", lb.ForwardingRules, svc.Spec.Ports)
	}
	for _, p := range svc.Spec.Ports {
		if r, ok := ruleFor(lb, int(p.Port)); !ok || r.TargetPort != int(p.NodePort) {
			return fmt.Sprintf("port %d -> node port %d: rule %+v (found %v)", p.Port, p.NodePort, r, ok)
		}
	}
	want := func(k, def string) string {
		if v, ok := svc.Annotations[k]; ok {
			return v
		}
		return def
	}
	got := map[string]string{
		digitalocean.AnnSizeUnit:         strconv.Itoa(lb.SizeUnit),
		digitalocean.AnnProxyProtocol:    strconv.FormatBool(lb.EnableProxyProtocol),
		digitalocean.AnnAlgorithm:        lb.Algorithm,
		digitalocean.AnnHTTPIdleTimeout:  strconv.Itoa(lb.HTTPIdleTimeoutSeconds),
		digitalocean.AnnBackendKeepalive: strconv.FormatBool(lb.EnableBackendKeepalive),
	}
	defaults := map[string]string{
		digitalocean.AnnSizeUnit: "1", digitalocean.AnnProxyProtocol: "false", digitalocean.AnnAlgorithm: "round_robin",
		digitalocean.AnnHTTPIdleTimeout: "60", digitalocean.AnnBackendKeepalive: "false",
	}
	for k, def := range defaults {
		if w := want(k, def); got[k] != w {
			return fmt.Sprintf("%s: LB has %s, want %s", k, got[k], w)
		}
	}
	if ids := sorted(lb.DropletIDs); !slices.Equal(ids, targets) {
		return fmt.Sprintf("targets droplets %v, want the nodes' %v", ids, targets)
	}
	return ""
}

// faultCounts sums what the fake answered: throttled (429s, from the rate
// limit and the rules), server errors and requests that timed out (hung by
// a rule, or delayed past polyccm's per-attempt timeout).
func faultCounts(f *faults.Injector) (throttled, serverErrors, noAnswer int) {
	for _, ep := range f.Endpoints() {
		for status, n := range f.Responses(ep) {
			switch {
			case status == 429:
				throttled += n
			case status >= 500:
				serverErrors += n
			case status == faults.NoResponse:
				noAnswer += n
			}
		}
	}
	return throttled, serverErrors, noAnswer
}

// TestSoak churns nodes and Services for a few minutes against a fake
// DigitalOcean that injects, on every endpoint, latency spikes, throttling
// (a rate limit and random 429s), 500s and 503s, timeouts, and failures
// after commit on load balancer creates, updates and deletes. Nodes join
// (tainted, as kubelets register) and leave (their droplet is deleted);
// droplets are powered off and on (their Nodes must stay); Services of
// type LoadBalancer are created, changed (ports and annotations) and
// deleted. Every Node deletion is checked against the fake as it happens.
// Then the churn stops, the faults are cleared, and polyccm gets a bounded
// time to converge: every live node initialized, no Node of a deleted
// droplet left, every deleted Service's load balancer gone, no load
// balancer without a live Service, every live Service's load balancer
// matching it, and no Node deleted while its droplet existed. The counts
// are printed.
//
// CCMTEST_SOAK_DURATION sets how long the churn runs (default 2m; e.g.
// CCMTEST_SOAK_DURATION=10m for a long run). The fault rolls and the churn
// come from one seed, printed at the start; CCMTEST_SOAK_SEED=<seed> replays
// a run's choices (timing still varies).
func TestSoak(t *testing.T) {
	churn := soakDuration(t)
	seed := soakSeed(t)
	t.Logf("soak: churn for %s with seed %d (CCMTEST_SOAK_SEED=%d replays it)", churn, seed, seed)

	// A short per-attempt timeout, so hung requests end within a soak
	// step rather than after the default 30s.
	// A lease of the default length: the soak is about cloud faults, and a
	// short lease makes one slow apiserver answer on a busy machine cost
	// polyccm its leadership, which exits it.
	e := newDOEnvWith(t, nil, func(s *harness.Settings) {
		withServices(s)
		s.DriverBlock += "\nclusterID: e2e" // load balancers are tagged k8s:e2e
		s.LeaseDuration = 15 * time.Second
	}, []string{"POLYCCM_CLOUDAPI__TIMEOUT=4s"})
	e.fake.SetLoadBalancerActivationDelay(500 * time.Millisecond)
	// The soak throttles with its own rate limit (below). DigitalOcean's
	// hourly budget is not compressed like the delays are: hours of churn
	// squeezed into two minutes would drain it, and the soak would measure
	// the bucket's refill instead of polyccm's recovery.
	e.fake.Faults().SetFamilies(nil)
	w := watchNodeDeletions(t, e.fake, e.prefix)
	s := &soak{t: t, e: e, w: w, rng: rand.New(rand.NewPCG(seed, 0x50a4)), off: map[int]bool{}, actions: map[string]int{}}

	// A healthy start, so load balancers have a region to go to.
	var first []string
	for range 5 {
		s.addNode()
		first = append(first, e.nodeName(s.nextNode-1))
	}
	e.waitInitialized(first, 60*time.Second)

	f := e.fake.Faults()
	f.SetSeed(int64(seed))
	// Failures after commit first: rules are tried in order, and the first
	// one that fails a request decides it.
	f.AddRule(faults.Rule{Match: "POST /v2/load_balancers", Probability: 0.2, Status: 500, AfterCommit: true})
	f.AddRule(faults.Rule{Match: "PUT /v2/load_balancers/{id}", Probability: 0.1, Status: 503, AfterCommit: true})
	f.AddRule(faults.Rule{Match: "DELETE /v2/load_balancers/{id}", Probability: 0.1, Status: 500, AfterCommit: true})
	f.AddRule(faults.Rule{Match: "*", Probability: 0.05, Latency: 1500 * time.Millisecond}) // spikes; the request goes on
	f.AddRule(faults.Rule{Match: "*", Probability: 0.03, Status: 429, RetryAfter: time.Second})
	f.AddRule(faults.Rule{Match: "*", Probability: 0.04, Status: 500})
	f.AddRule(faults.Rule{Match: "*", Probability: 0.04, Status: 503})
	f.AddRule(faults.Rule{Match: "*", Probability: 0.03, Timeout: true})
	f.SetRateLimit(6, 12)

	start := time.Now()
	lastReport := start
	for time.Since(start) < churn {
		s.step()
		if time.Since(lastReport) >= 30*time.Second {
			lastReport = time.Now()
			all, bad := w.deletions()
			t.Logf("soak %s: %d droplets (%d off), %d Services live, %d deleted; %d Nodes deleted (%d while their droplet existed); %d cloud calls, %d faults injected, %d throttled by the rate limit",
				time.Since(start).Round(time.Second), len(s.droplets), len(s.off), len(s.live), len(s.gone), len(all), len(bad), f.Total(), f.Injected(), f.Throttled())
		}
		time.Sleep(400*time.Millisecond + time.Duration(s.rng.IntN(800))*time.Millisecond)
	}

	// The cloud recovers: polyccm must now reach the asserted state. The
	// bound covers the service controller's backoff, which doubles up to
	// 5 minutes for a Service that kept failing.
	f.ClearRules()
	f.SetRateLimit(0, 0)
	f.SetLatency(0)
	stopped := time.Now()
	injected, total, rateLimited := f.Injected(), f.Total(), f.Throttled()
	throttled, serverErrors, noAnswer := faultCounts(f)
	// Settled is a state that holds over several monitor periods, so a
	// late wrong deletion or a late second load balancer still counts.
	var c soakCounts
	var settledAt time.Time
	deadline := stopped.Add(6 * time.Minute)
	for {
		c = s.count()
		switch {
		case !c.settled():
			settledAt = time.Time{}
		case settledAt.IsZero():
			settledAt = time.Now()
		}
		if !settledAt.IsZero() && time.Since(settledAt) >= 10*time.Second || time.Now().After(deadline) {
			break
		}
		if e.ccm.Exited() {
			t.Fatalf("polyccm exited during the soak; its log %s ends:\n%s", e.ccm.LogPath, e.ccm.LogTail(20))
		}
		if time.Since(lastReport) >= 15*time.Second {
			lastReport = time.Now()
			t.Logf("soak: %s after the churn, waiting for: %s", time.Since(stopped).Round(time.Second), c.pending())
		}
		time.Sleep(time.Second)
	}
	converged := "never"
	if !settledAt.IsZero() {
		converged = settledAt.Sub(stopped).Round(time.Second).String()
	}

	st := e.fake.LoadBalancerStats()
	summary := fmt.Sprintf(`soak summary (seed %d, churn %s, converged in %s):
  actions                      %v
  live nodes / initialized     %d / %d
  stale nodes / missing nodes  %d / %d
  deleted services / leftover  %d / %d  (still in the API: %d)
  cloud LBs / unowned          %d / %d
  live services / converged    %d / %d
  services created / LBs made  %d / %d  (peak %d LBs)
  nodes deleted / while live   %d / %d
  cloud calls %d: faults injected %d, throttled %d (by the rate limit %d), 5xx %d, timed out %d`,
		seed, churn, converged, s.actions,
		c.liveNodes, c.initialized, len(c.staleNodes), len(c.missingNodes),
		c.deletedServices, len(c.leftoverLBs), len(c.servicesNotGone),
		c.cloudLBs, len(c.unownedLBs), c.liveServices, c.converged,
		s.nextSvc, st.Created, st.Peak, c.nodesDeleted, len(c.deletedWhileLive),
		total, injected, throttled, rateLimited, serverErrors, noAnswer)
	t.Log(summary)
	fmt.Println(summary)

	for _, d := range c.deletedWhileLive {
		t.Errorf("node deleted while its instance existed: %s", d)
	}
	if c.initialized != c.liveNodes {
		t.Errorf("%d of %d live nodes initialized", c.initialized, c.liveNodes)
	}
	if len(c.staleNodes) > 0 {
		t.Errorf("Nodes of deleted droplets never deleted: %v", c.staleNodes)
	}
	if len(c.missingNodes) > 0 {
		t.Errorf("Nodes gone although their droplets exist: %v", c.missingNodes)
	}
	if len(c.servicesNotGone) > 0 {
		t.Errorf("deleted Services never released: %v", c.servicesNotGone)
	}
	if len(c.leftoverLBs) > 0 {
		t.Errorf("load balancers of deleted Services left in the cloud: %v", c.leftoverLBs)
	}
	if len(c.unownedLBs) > 0 {
		t.Errorf("load balancers no Service owns: %v", c.unownedLBs)
	}
	if c.converged != c.liveServices {
		t.Errorf("%d of %d live Services' load balancers match them: %v", c.converged, c.liveServices, c.notConverged)
	}
	// One load balancer per Service at most: a create whose answer was lost
	// must be found again, never repeated.
	if st.Created > s.nextSvc {
		t.Errorf("%d load balancers created for %d Services", st.Created, s.nextSvc)
	}
	// A soak that met no trouble, or did nothing, proves nothing.
	if throttled == 0 || serverErrors == 0 || noAnswer == 0 {
		t.Errorf("the soak met %d throttled, %d 5xx and %d timed-out requests; want some of each", throttled, serverErrors, noAnswer)
	}
	if s.actions["node-leave"] == 0 || c.nodesDeleted == 0 || s.actions["service-delete"] == 0 || s.actions["service-change"] == 0 {
		t.Errorf("the churn did too little to prove anything: %v, %d nodes deleted", s.actions, c.nodesDeleted)
	}
	all, _ := w.deletions()
	var slowest time.Duration
	for _, d := range all {
		if !d.existed {
			slowest = max(slowest, d.at.Sub(d.removedAt))
		}
	}
	t.Logf("slowest Node deletion after its droplet went: %s", slowest.Round(time.Millisecond))

	// Deleting the rest leaves nothing behind.
	for _, ls := range s.live {
		if err := cp.Admin.CoreV1().Services("default").Delete(context.Background(), ls.name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	for _, ls := range s.live {
		deleteServiceAndWait(t, ls.name, 6*time.Minute)
	}
	if lbs := e.fake.LoadBalancers(); len(lbs) != 0 {
		t.Errorf("%d load balancers left after every Service was deleted: %+v", len(lbs), lbs)
	}
}
