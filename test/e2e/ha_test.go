//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fakedo "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
	"github.com/polyccm/polyccm/test/harness"
	"github.com/polyccm/polyccm/test/simcloud"
)

// High availability: several polyccm replicas share one Lease; exactly one
// acts, and when it dies or is cut off from the apiserver another takes
// over without two ever acting at once.

// election is a replica's leader-election timing. The harness derives
// renewDeadline (3/4) and retryPeriod (1/4) from the lease, which leaves a
// cut-off leader no margin: it gives up at most retryPeriod+renewDeadline
// after its last renewal, the very moment the others may take over. These
// tests keep a one-second margin instead (leaseDuration > renewDeadline +
// retryPeriod), as the defaults do (15s > 10s + 2s).
type election struct{ lease, renew, retry time.Duration }

// haElection is quick but keeps the margin; whole seconds, since the Lease
// stores its duration in seconds.
var haElection = election{lease: 5 * time.Second, renew: 3 * time.Second, retry: time.Second}

// jitterFactor is client-go's leaderelection.JitterFactor: a replica that is
// not leading polls the Lease every retryPeriod to (1+1.2)×retryPeriod.
const jitterFactor = 1.2

const leaseName = "cloud-controller-manager"

// replica is one polyccm of a highly available set.
type replica struct {
	name  string
	ccm   *harness.CCM
	api   *harness.Proxy // its path to the apiserver, if it has its own
	cloud *cloudTap

	exited   chan struct{} // closed once the process has ended; then:
	exitedAt time.Time     // when the test saw it end
	exitCode int
}

// cloudTap forwards one replica's cloud API calls to the shared fake and
// records them, so the tests can tell which replica acted.
type cloudTap struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls []cloudCall
}

type cloudCall struct {
	at   time.Time
	what string // "METHOD /path"
}

func newCloudTap(t *testing.T, fakeURL string) *cloudTap {
	t.Helper()
	u, err := url.Parse(fakeURL)
	if err != nil {
		t.Fatal(err)
	}
	tap := &cloudTap{}
	rp := httputil.NewSingleHostReverseProxy(u)
	tap.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tap.mu.Lock()
		tap.calls = append(tap.calls, cloudCall{at: time.Now(), what: r.Method + " " + r.URL.Path})
		tap.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	return tap
}

// count is how many calls matched prefix ("" for all) and when the first
// and the last of them arrived.
func (c *cloudTap) count(prefix string) (n int, first, last time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, call := range c.calls {
		if strings.HasPrefix(call.what, prefix) {
			if n == 0 {
				first = call.at
			}
			n++
			last = call.at
		}
	}
	return n, first, last
}

// haEnv is a fake DigitalOcean and several polyccm replicas for it.
type haEnv struct {
	*doEnv
	settings harness.Settings
	election election
	replicas []*replica
}

// newHAEnv prepares the fake cloud; startReplicas runs polyccm.
func newHAEnv(t *testing.T, el election) *haEnv {
	t.Helper()
	e := &haEnv{doEnv: &doEnv{env: newEnv(t), token: "dop_v1_" + strings.Repeat("ha00", 12)}, election: el}
	e.secret = e.token
	// Leader election is under test, not the cloud: the fast profile,
	// with load balancers still taking a moment to provision.
	acct, err := simcloud.StartDigitalOcean(simcloud.Options{ClusterName: "e2e", Profile: &simcloud.Fast}, e.token)
	if err != nil {
		t.Fatal(err)
	}
	e.fake, e.user = acct.Fake, acct.User
	e.closer = append(e.closer, e.fake.Close)
	e.fake.SetLoadBalancerActivationDelay(500 * time.Millisecond)
	tokenFile := e.writeFile("do-token", e.token+"\n")
	e.settings = harness.Settings{
		Driver:        "digitalocean",
		DriverBlock:   fmt.Sprintf("token: {file: %s}", tokenFile),
		Controllers:   "nodes: true\nnodeLifecycle: true\nservices: true",
		LeaseDuration: el.lease,
	}
	// Registered after newEnv's cleanup, so it runs first: the replicas
	// stop before the env deletes the Nodes and the Lease and closes the
	// fake.
	t.Cleanup(e.stopReplicas)
	return e
}

// config renders the settings with e.election's timing.
func (e *haEnv) config(s harness.Settings) string {
	e.t.Helper()
	l := s.LeaseDuration
	derived := fmt.Sprintf("leaderElection:\n  leaseDuration: %s\n  renewDeadline: %s\n  retryPeriod: %s\n", l, l*3/4, l/4)
	wanted := fmt.Sprintf("leaderElection:\n  leaseDuration: %s\n  renewDeadline: %s\n  retryPeriod: %s\n", l, e.election.renew, e.election.retry)
	cfg := s.Config()
	if !strings.Contains(cfg, derived) {
		e.t.Fatalf("the harness config no longer renders leaderElection as expected:\n%s", cfg)
	}
	return strings.Replace(cfg, derived, wanted, 1)
}

// startReplicas starts one polyccm per name, each with its own secure port,
// log and cloud tap; viaProxy gives each its own path to the apiserver, for
// cutting. It waits until all are ready.
func (e *haEnv) startReplicas(viaProxy bool, names ...string) {
	e.t.Helper()
	used := map[int]bool{}
	for _, name := range names {
		r := &replica{name: name, cloud: newCloudTap(e.t, e.fake.URL()), exited: make(chan struct{})}
		e.replicas = append(e.replicas, r)
		s := e.settings
		s.DriverBlock += "\napiURL: " + r.cloud.srv.URL
		s.Kubeconfig = cp.PolyccmKubeconfig
		if viaProxy {
			var err error
			if r.api, err = harness.StartProxy(strings.TrimPrefix(cp.URL, "https://")); err != nil {
				e.t.Fatal(err)
			}
			s.Kubeconfig = filepath.Join(e.dir, name+".kubeconfig")
			if err := r.api.Kubeconfig(cp.PolyccmKubeconfig, s.Kubeconfig); err != nil {
				e.t.Fatal(err)
			}
		}
		for s.Port == 0 || used[s.Port] {
			var err error
			if s.Port, err = harness.FreePort(); err != nil {
				e.t.Fatal(err)
			}
		}
		used[s.Port] = true
		var err error
		r.ccm, err = harness.StartCCM(harness.CCMOptions{Bin: polyccmBin, Dir: e.dir, Name: name, Config: e.config(s), Port: s.Port})
		if err != nil {
			e.t.Fatal(err)
		}
		go func() {
			code, err := r.ccm.Wait(time.Hour)
			if err != nil {
				code = -1
			}
			r.exitCode, r.exitedAt = code, time.Now()
			close(r.exited)
		}()
	}
	for _, r := range e.replicas {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := r.ccm.WaitReady(ctx)
		cancel()
		if err != nil {
			e.t.Fatalf("replica %s: %v", r.name, err)
		}
	}
}

// stopReplicas stops the replicas still running (each must exit 0 on
// SIGTERM) and checks no log holds the cloud token.
func (e *haEnv) stopReplicas() {
	t := e.t
	for _, r := range e.replicas {
		if r.api != nil {
			defer r.api.Close()
		}
		defer r.cloud.srv.Close()
		if r.ccm == nil {
			continue // its start failed
		}
		if !r.ccm.Exited() {
			code, err := r.ccm.Stop(15 * time.Second)
			switch {
			case err != nil:
				t.Errorf("stopping replica %s: %v", r.name, err)
			case code != 0:
				t.Errorf("replica %s exited with %d after SIGTERM, want 0", r.name, code)
			}
		}
		if strings.Contains(r.ccm.Log(), e.secret) {
			t.Errorf("replica %s's log contains the cloud token", r.name)
		}
		if t.Failed() {
			t.Logf("replica %s log (%s), last lines:\n%s", r.name, r.ccm.LogPath, r.ccm.LogTail(40))
		}
	}
}

func getLease() (*coordinationv1.Lease, error) {
	return cp.Admin.CoordinationV1().Leases("kube-system").Get(context.Background(), leaseName, metav1.GetOptions{})
}

func holderOf(l *coordinationv1.Lease) string {
	if l == nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// becameLeader is the Event client-go records when a replica takes the
// Lease, "<identity> became leader", which polyccm also logs: the only
// place a replica's identity (hostname_random-UUID) shows.
var becameLeader = regexp.MustCompile(`message="(\S+) became leader"`)

// identities are the identities r has logged taking the Lease under.
func (r *replica) identities() []string {
	var ids []string
	for _, m := range becameLeader.FindAllStringSubmatch(r.ccm.Log(), -1) {
		ids = append(ids, m[1])
	}
	return ids
}

// assertStartedControllers checks r's log shows the controllers started,
// which the upstream code does only on taking the Lease.
func assertStartedControllers(t *testing.T, r *replica) {
	t.Helper()
	log := r.ccm.Log()
	for _, c := range []string{"cloud-node-controller", "cloud-node-lifecycle-controller", "service-lb-controller"} {
		if !strings.Contains(log, `Started "`+c+`"`) {
			t.Errorf("the leader %s did not start %s", r.name, c)
		}
	}
}

// acting reports whether r's log shows it leading: it took the Lease or
// started a controller.
func (r *replica) acting() bool {
	log := r.ccm.Log()
	return strings.Contains(log, "Successfully acquired lease") || strings.Contains(log, `Started "`)
}

// waitLeader waits until the Lease has a holder other than not, which one
// replica claims as its own, and returns that replica and the Lease.
func (e *haEnv) waitLeader(timeout time.Duration, not string) (*replica, *coordinationv1.Lease) {
	e.t.Helper()
	var leader *replica
	var lease *coordinationv1.Lease
	eventually(e.t, timeout, "a replica holding the Lease", func() (bool, string) {
		l, err := getLease()
		if err != nil {
			return false, err.Error()
		}
		h := holderOf(l)
		if h == "" || h == not {
			return false, fmt.Sprintf("holder %q", h)
		}
		var claimants []string
		leader = nil
		for _, r := range e.replicas {
			if slices.Contains(r.identities(), h) {
				claimants = append(claimants, r.name)
				leader = r
			}
		}
		if len(claimants) > 1 {
			e.t.Fatalf("replicas %v all claim identity %s", claimants, h)
		}
		lease = l
		return leader != nil, fmt.Sprintf("holder %q not (yet) in any replica's log", h)
	})
	return leader, lease
}

// others are the replicas except r.
func (e *haEnv) others(r *replica) []*replica {
	var rs []*replica
	for _, o := range e.replicas {
		if o != r {
			rs = append(rs, o)
		}
	}
	return rs
}

// assertPassive checks the followers wait for the Lease, never took it and
// never called the cloud.
func assertPassive(t *testing.T, followers ...*replica) {
	t.Helper()
	for _, f := range followers {
		log := f.ccm.Log()
		if !strings.Contains(log, "Attempting to acquire leader lease") {
			t.Errorf("replica %s never tried to acquire the Lease", f.name)
		}
		if f.acting() || len(f.identities()) > 0 {
			t.Errorf("replica %s acted while another held the Lease", f.name)
		}
		if n, _, _ := f.cloud.count(""); n != 0 {
			t.Errorf("replica %s made %d cloud calls while another held the Lease", f.name, n)
		}
	}
}

// addNode adds a droplet and registers its Node, uninitialized.
func (e *haEnv) addNode(i int) fakedo.Droplet {
	e.t.Helper()
	d := e.fake.AddDroplet(fakedo.Droplet{Name: e.nodeName(i), Status: fakedo.StatusActive, SizeSlug: "s-2vcpu-4gb", Region: "fra1"})
	e.register(d.Name, "")
	return d
}

// setUpLeader starts three replicas, checks exactly one leads and the
// others wait, and has the leader initialize a first node.
func (e *haEnv) setUpLeader(viaProxy bool) (*replica, *coordinationv1.Lease, fakedo.Droplet) {
	t := e.t
	t.Helper()
	e.startReplicas(viaProxy, "replica-a", "replica-b", "replica-c")
	leader, lease := e.waitLeader(30*time.Second, "")
	t.Logf("%s leads as %s", leader.name, holderOf(lease))
	d0 := e.addNode(0)
	e.waitInitialized([]string{d0.Name}, 30*time.Second)
	assertStartedControllers(t, leader)
	if n, _, _ := leader.cloud.count(""); n == 0 {
		t.Errorf("the leader %s initialized a node without calling the cloud", leader.name)
	}
	// For two lease durations more, the holder stays and the followers
	// keep waiting.
	never(t, 2*e.election.lease, "one holder, the others passive", func() (bool, string) {
		l, err := getLease()
		if err != nil {
			return true, err.Error()
		}
		if holderOf(l) != holderOf(lease) {
			return true, fmt.Sprintf("the holder changed from %s to %s", holderOf(lease), holderOf(l))
		}
		for _, f := range e.others(leader) {
			if f.acting() {
				return true, f.name + " acts too"
			}
		}
		return false, ""
	})
	assertPassive(t, e.others(leader)...)
	return leader, lease, d0
}

// workContinues checks the new leader finishes the work the caller created
// right after the old leader went, the last of nodes and the Service svc:
// the node initialized and exactly one load balancer, made by the new
// leader, targeting every node; the remaining replica stays passive.
func (e *haEnv) workContinues(old, leader *replica, svc string, nodes []fakedo.Droplet) {
	t := e.t
	t.Helper()
	e.waitInitialized([]string{nodes[len(nodes)-1].Name}, 60*time.Second)
	assertStartedControllers(t, leader)
	s, lb := e.waitIngress(svc, 60*time.Second)
	if want := ("a" + strings.ReplaceAll(string(s.UID), "-", ""))[:32]; lb.Name != want {
		t.Errorf("LB name %q, want %q", lb.Name, want)
	}
	var ids []int
	for _, d := range nodes {
		ids = append(ids, d.ID)
	}
	eventually(t, 60*time.Second, "the LB targets every node", func() (bool, string) {
		got := sorted(e.lbOf(svc).DropletIDs)
		return slices.Equal(got, sorted(ids)), fmt.Sprintf("droplets %v, want %v", got, sorted(ids))
	})
	// A second LB would come from a second actor or a repeated create;
	// give either time to show.
	never(t, 5*time.Second, "exactly one load balancer", func() (bool, string) {
		lbs, st := e.fake.LoadBalancers(), e.fake.LoadBalancerStats()
		return len(lbs) != 1 || st.Created != 1, fmt.Sprintf("%d LBs, %d created", len(lbs), st.Created)
	})
	if n, _, _ := leader.cloud.count("POST /v2/load_balancers"); n != 1 {
		t.Errorf("the new leader %s created %d load balancers, want 1", leader.name, n)
	}
	if n, _, _ := old.cloud.count("POST /v2/load_balancers"); n != 0 {
		t.Errorf("the old leader %s created %d load balancers", old.name, n)
	}
	for _, f := range e.others(leader) {
		if f != old {
			assertPassive(t, f)
		}
	}
	deleteServiceAndWait(t, svc, 60*time.Second)
}

// lastRenewal is when the Lease was last renewed, which must be by id: the
// caller has just stopped id's holder, so this is its final renewal.
func lastRenewal(t *testing.T, id string) time.Time {
	t.Helper()
	l, err := getLease()
	if err != nil {
		t.Fatal(err)
	}
	if holderOf(l) != id || l.Spec.RenewTime == nil {
		t.Fatalf("the Lease moved to %q (renewed %v) the moment its holder %s went", holderOf(l), l.Spec.RenewTime, id)
	}
	return l.Spec.RenewTime.Time
}

// takeOver waits for another replica to take the Lease from old, whose
// holder renewed it last at lastRenew, and checks the handover: one
// transition, the old lease waited out in full, and the new leader's
// cloud calls all after it took the Lease. It returns the new leader and
// when it took the Lease.
func (e *haEnv) takeOver(old *replica, oldLease *coordinationv1.Lease, lastRenew time.Time) (*replica, time.Time) {
	t := e.t
	t.Helper()
	leader, l := e.waitLeader(60*time.Second, holderOf(oldLease))
	if leader == old {
		t.Fatalf("%s holds the Lease again under a new identity", old.name)
	}
	acquired := l.Spec.AcquireTime.Time
	gap := acquired.Sub(lastRenew)
	t.Logf("%s took the Lease %s after %s's last renewal (leaseDuration %s)", leader.name, gap.Round(time.Millisecond), old.name, e.election.lease)
	if gap < e.election.lease {
		t.Errorf("%s took the Lease %s after its last renewal, before it expired", leader.name, gap.Round(time.Millisecond))
	}
	if got, want := *l.Spec.LeaseTransitions, *oldLease.Spec.LeaseTransitions+1; got != want {
		t.Errorf("Lease transitions %d, want %d: one handover", got, want)
	}
	if n, first, _ := leader.cloud.count(""); n > 0 && first.Before(acquired) {
		t.Errorf("%s called the cloud at %s, before it took the Lease at %s", leader.name, first.Format(time.StampMicro), acquired.Format(time.StampMicro))
	}
	return leader, acquired
}

// Three replicas, one leads; SIGKILL it and another takes the Lease within
// leaseDuration + retryPeriod (plus client-go's jitter and an allowance for
// a loaded machine), and a node and a Service created meanwhile are handled
// once.
func TestHAFailoverOnLeaderKill(t *testing.T) {
	e := newHAEnv(t, haElection)
	old, lease, d0 := e.setUpLeader(false)

	killed := time.Now()
	old.ccm.Kill()
	lastRenew := lastRenewal(t, holderOf(lease))
	d1 := e.addNode(1)
	svc := e.prefix + "-web"
	createService(t, svc, nil, tcp(80))

	leader, acquired := e.takeOver(old, lease, lastRenew)
	failover := acquired.Sub(killed)
	// The target is leaseDuration + retryPeriod after the kill.
	// client-go adds jitter: a follower polls every retryPeriod×[1, 2.2],
	// so it may see the last renewal up to 1.2×retryPeriod late and the
	// expiry 1.2×retryPeriod late again. loadAllowance covers scheduling
	// delays on a busy 2-core machine.
	const loadAllowance = 2 * time.Second
	target := e.election.lease + e.election.retry
	bound := target + time.Duration(2*jitterFactor*float64(e.election.retry)) + loadAllowance
	t.Logf("failover: %s took the Lease %s after the kill (target %s, bound %s)", leader.name, failover.Round(time.Millisecond), target, bound)
	if failover > bound {
		t.Errorf("failover took %s, more than %s", failover.Round(time.Millisecond), bound)
	}
	e.workContinues(old, leader, svc, []fakedo.Droplet{d0, d1})
}

// Three replicas, one leads; cut its apiserver connection. It must stop
// acting (polyccm exits 1, as upstream app.Run does on a lost lease) before
// another takes the Lease, and the new leader carries on.
func TestHAFailoverOnLeaderPartition(t *testing.T) {
	e := newHAEnv(t, haElection)
	old, lease, d0 := e.setUpLeader(true)
	if old.api.Accepted() == 0 {
		t.Fatalf("the leader %s never connected through its proxy", old.name)
	}

	cut := time.Now()
	old.api.Cut()
	lastRenew := lastRenewal(t, holderOf(lease))
	d1 := e.addNode(1)
	svc := e.prefix + "-web"
	createService(t, svc, nil, tcp(80))

	leader, acquired := e.takeOver(old, lease, lastRenew)
	select {
	case <-old.exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("the cut-off leader %s still runs after %s took the Lease", old.name, leader.name)
	}
	t.Logf("partition: %s exited (code %d) %s after the cut; %s took the Lease %s after the cut, %s after that exit",
		old.name, old.exitCode, old.exitedAt.Sub(cut).Round(time.Millisecond), leader.name,
		acquired.Sub(cut).Round(time.Millisecond), acquired.Sub(old.exitedAt).Round(time.Millisecond))
	// exitedAt is when the test saw the exit, no earlier than the exit
	// itself, so this errs on the strict side.
	if !old.exitedAt.Before(acquired) {
		t.Errorf("%s took the Lease at %s, before the old leader %s exited at %s",
			leader.name, acquired.Format(time.StampMicro), old.name, old.exitedAt.Format(time.StampMicro))
	}
	if old.exitCode != 1 || !strings.Contains(old.ccm.Log(), "leaderelection lost") {
		t.Errorf("the cut-off leader exited with %d, want 1 after logging \"leaderelection lost\"", old.exitCode)
	}
	if _, _, last := old.cloud.count(""); !last.Before(acquired) {
		t.Errorf("the old leader called the cloud at %s, after the new one took the Lease at %s", last.Format(time.StampMicro), acquired.Format(time.StampMicro))
	}
	// It gives up at most retryPeriod + renewDeadline after its last
	// renewal, so sooner after the cut; 2s for a loaded machine.
	if bound := e.election.retry + e.election.renew + 2*time.Second; old.exitedAt.Sub(cut) > bound {
		t.Errorf("the cut-off leader took %s to stop, more than retryPeriod + renewDeadline + 2s = %s", old.exitedAt.Sub(cut).Round(time.Millisecond), bound)
	}
	e.workContinues(old, leader, svc, []fakedo.Droplet{d0, d1})
}

// Three replicas, one leads; SIGTERM it, as systemctl stop or a rolling
// upgrade does. It gives the Lease up as it exits, so another takes it
// within about one retryPeriod instead of waiting out leaseDuration, and
// the work created meanwhile is handled once. Upstream controller managers
// keep the Lease (kubernetes/kubernetes#132599).
func TestHAHandoverOnLeaderStop(t *testing.T) {
	// A lease long enough that waiting it out could not pass for a release.
	e := newHAEnv(t, election{lease: 10 * time.Second, renew: 6 * time.Second, retry: time.Second})
	old, lease, d0 := e.setUpLeader(false)

	stopped := time.Now()
	if err := old.ccm.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	d1 := e.addNode(1)
	svc := e.prefix + "-web"
	createService(t, svc, nil, tcp(80))
	select {
	case <-old.exited:
	case <-time.After(15 * time.Second):
		t.Fatalf("the leader %s did not exit within 15s of SIGTERM", old.name)
	}
	if old.exitCode != 0 {
		t.Errorf("the leader exited with %d after SIGTERM, want 0", old.exitCode)
	}
	if !strings.Contains(old.ccm.Log(), "Released the Lease") {
		t.Errorf("the leader %s did not log releasing the Lease", old.name)
	}

	leader, l := e.waitLeader(30*time.Second, holderOf(lease))
	if leader == old {
		t.Fatalf("%s holds the Lease again under a new identity", old.name)
	}
	acquired := l.Spec.AcquireTime.Time
	handover := acquired.Sub(stopped)
	// The followers poll every retryPeriod×[1, 2.2]; 2s for the old leader's
	// shutdown and a loaded machine.
	bound := time.Duration((1+jitterFactor)*float64(e.election.retry)) + 2*time.Second
	t.Logf("handover: %s took the Lease %s after SIGTERM to %s, which exited after %s (bound %s, leaseDuration %s)",
		leader.name, handover.Round(time.Millisecond), old.name, old.exitedAt.Sub(stopped).Round(time.Millisecond), bound, e.election.lease)
	if handover > bound {
		t.Errorf("handover took %s, more than %s: the Lease was waited out, not released", handover.Round(time.Millisecond), bound)
	}
	if got, want := *l.Spec.LeaseTransitions, *lease.Spec.LeaseTransitions+1; got != want {
		t.Errorf("Lease transitions %d, want %d: one handover", got, want)
	}
	if n, first, _ := leader.cloud.count(""); n > 0 && first.Before(acquired) {
		t.Errorf("%s called the cloud at %s, before it took the Lease at %s", leader.name, first.Format(time.StampMicro), acquired.Format(time.StampMicro))
	}
	if _, _, last := old.cloud.count(""); !last.Before(acquired) {
		t.Errorf("the old leader called the cloud at %s, after the new one took the Lease at %s", last.Format(time.StampMicro), acquired.Format(time.StampMicro))
	}
	e.workContinues(old, leader, svc, []fakedo.Droplet{d0, d1})
}

// The apiserver restarts under a running polyccm: polyccm keeps running,
// keeps its Lease and carries on (nodes, Services, readiness) without a
// restart of its own.
//
// polyccm, like every upstream controller manager, exits when it cannot
// renew its Lease within renewDeadline: it can no longer prove it is the
// only one acting. An apiserver restart takes a few seconds to tens of
// seconds on a loaded machine (9–15s here), so the lease here is long
// (renewDeadline 90s) to show recovery rather than that exit; with the
// defaults (10s) a slower restart makes polyccm exit 1 and its supervisor
// restart it. The lease's length changes nothing else for one replica.
func TestAPIServerRestart(t *testing.T) {
	e := newHAEnv(t, election{lease: 120 * time.Second, renew: 90 * time.Second, retry: 2 * time.Second})
	e.startReplicas(false, "polyccm")
	r := e.replicas[0]
	_, lease := e.waitLeader(30*time.Second, "")
	id := holderOf(lease)
	d0 := e.addNode(0)
	e.waitInitialized([]string{d0.Name}, 30*time.Second)

	starts := strings.Count(readFile(t, cp.APIServerLog), ": starting ")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	began := time.Now()
	if err := cp.RestartAPIServer(ctx); err != nil {
		t.Fatalf("restarting the apiserver: %v", err)
	}
	restarted := time.Now()
	t.Logf("the apiserver was restarted in %s", restarted.Sub(began).Round(time.Millisecond))
	if n := strings.Count(readFile(t, cp.APIServerLog), ": starting "); n != starts+1 {
		t.Fatalf("the apiserver log shows %d starts, want %d", n, starts+1)
	}
	if r.ccm.Exited() {
		t.Fatalf("polyccm exited during the apiserver restart:\n%s", r.ccm.LogTail(30))
	}

	eventually(t, 3*e.election.retry+10*time.Second, "the Lease renewed by the same polyccm", func() (bool, string) {
		l, err := getLease()
		if err != nil {
			return false, err.Error()
		}
		renewed := l.Spec.RenewTime != nil && l.Spec.RenewTime.After(restarted)
		return holderOf(l) == id && renewed, fmt.Sprintf("holder %s, renewed %v", holderOf(l), l.Spec.RenewTime)
	})
	eventually(t, 30*time.Second, "polyccm ready", func() (bool, string) {
		code, body, err := r.ccm.Get("/readyz")
		return err == nil && code == http.StatusOK, fmt.Sprintf("%d %q %v", code, body, err)
	})

	d1 := e.addNode(1)
	svc := e.prefix + "-web"
	createService(t, svc, nil, tcp(80))
	e.waitInitialized([]string{d1.Name}, 60*time.Second)
	e.waitIngress(svc, 60*time.Second)
	if lbs, st := e.fake.LoadBalancers(), e.fake.LoadBalancerStats(); len(lbs) != 1 || st.Created != 1 {
		t.Errorf("%d LBs, %d created, want exactly 1", len(lbs), st.Created)
	}
	deleteServiceAndWait(t, svc, 60*time.Second)

	if r.ccm.Exited() {
		t.Fatalf("polyccm exited after the apiserver restart:\n%s", r.ccm.LogTail(30))
	}
	if strings.Contains(r.ccm.Log(), "leaderelection lost") {
		t.Error("polyccm lost its Lease over the apiserver restart")
	}
	if ids := r.identities(); len(ids) != 1 {
		t.Errorf("polyccm took the Lease %d times (%v), want once", len(ids), ids)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
