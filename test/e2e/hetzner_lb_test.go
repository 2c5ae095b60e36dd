//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/polyccm/polyccm/core/annotations"
	"github.com/polyccm/polyccm/drivers/hetzner"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
	fakehz "github.com/polyccm/polyccm/test/fakecloud/hetzner"
	"github.com/polyccm/polyccm/test/harness"
	"github.com/polyccm/polyccm/test/simcloud"
)

// hzLBNodes starts polyccm with the service controller on and n
// initialized Nodes in fsn1.
func hzLBNodes(t *testing.T, n int, profile *simcloud.Profile, tweak func(*harness.Settings)) (*hzEnv, []fakehz.CloudServer) {
	t.Helper()
	e, _ := newHZEnv(t, hzOptions{profile: profile, tweak: func(s *harness.Settings) {
		withServices(s)
		if tweak != nil {
			tweak(s)
		}
	}})
	return e, e.nodeServers(n, "fsn1")
}

// hzEvents are a Service's events of a type and reason, as messages.
func hzEvents(t *testing.T, name, typ, reason string) []string {
	t.Helper()
	var out []string
	for _, ev := range serviceEvents(t, "default", name) {
		if m, ok := strings.CutPrefix(ev, typ+" "+reason+": "); ok {
			out = append(out, m)
		}
	}
	return out
}

// lbWrites counts the calls that change load balancers.
func (e *hzEnv) lbWrites() int {
	n := 0
	for ep, c := range hzWrites(e.fake.Faults().Calls()) {
		if strings.Contains(ep, "/v1/load_balancers") {
			n += c
		}
	}
	return n
}

// A Service of type LoadBalancer gets a Hetzner Cloud load balancer as
// hcloud CCM makes it, which follows the Service's ports, annotations and
// Nodes; an invalid annotation changes nothing and says why, an unknown
// one is a warning and the rest applies; deleting the Service deletes the
// load balancer.
func TestHetznerLoadBalancerLifecycle(t *testing.T) {
	e, svs := hzLBNodes(t, 3, nil, nil)
	ctx := context.Background()

	createService(t, "web", map[string]string{hetzner.AnnLocation: "fsn1"}, tcp(80))
	svc, lb := e.waitLB("web", true, true, 60*time.Second)
	if lb.Name != hzLBName(svc) {
		t.Errorf("load balancer name %q, want %q (hcloud CCM's, from the Service UID)", lb.Name, hzLBName(svc))
	}
	if want := map[string]string{"hcloud-ccm/service-uid": string(svc.UID)}; !reflect.DeepEqual(lb.Labels, want) {
		t.Errorf("labels %v, want %v", lb.Labels, want)
	}
	if lb.Type != "lb11" || lb.Location != "fsn1" || lb.Algorithm != fakehz.AlgorithmRoundRobin || !lb.PublicInterface || lb.Network != e.network {
		t.Errorf("load balancer %s in %s, %s, public %v, network %d; want lb11 in fsn1, round_robin, public, in network %d",
			lb.Type, lb.Location, lb.Algorithm, lb.PublicInterface, lb.Network, e.network)
	}
	if got, want := lbServices(lb), lbServices(fakehz.LoadBalancer{Services: []fakehz.Service{tcpService(svc.Spec.Ports[0])}}); !slices.Equal(got, want) {
		t.Errorf("services %q, want %q", got, want)
	}
	if got, want := serverTargets(lb), wantTargets(false, svs...); !slices.Equal(got, want) {
		t.Errorf("targets %v, want %v", got, want)
	}
	if !slices.Contains(svc.Finalizers, lbFinalizer) {
		t.Errorf("Service finalizers %v lack %s", svc.Finalizers, lbFinalizer)
	}
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IPMode == nil || *in.IPMode != v1.LoadBalancerIPModeVIP {
			t.Errorf("ingress %s: ipMode %v, want VIP (no PROXY protocol)", in.IP, in.IPMode)
		}
	}
	lbID := lb.ID
	current := func() fakehz.LoadBalancer {
		t.Helper()
		lb, ok := e.fake.LoadBalancer(lbID)
		if !ok {
			t.Fatalf("load balancer %d is gone", lbID)
		}
		return lb
	}

	// The ports change: 80 goes, 443 and 8443 come.
	patchSvc(t, "web", map[string]any{"spec": map[string]any{"ports": []any{
		map[string]any{"name": "tcp-443", "protocol": "TCP", "port": 443, "targetPort": 8443},
		map[string]any{"name": "tcp-8443", "protocol": "TCP", "port": 8443, "targetPort": 8443},
	}}})
	eventually(t, 30*time.Second, "the load balancer's services follow the ports", func() (bool, string) {
		svc := getSvc(t, "web")
		var want []fakehz.Service
		for _, p := range svc.Spec.Ports {
			want = append(want, tcpService(p))
		}
		got, w := lbServices(current()), lbServices(fakehz.LoadBalancer{Services: want})
		return slices.Equal(got, w), fmt.Sprintf("services %q, want %q", got, w)
	})

	// The Nodes change: one is labelled out, one is deleted (its server
	// stays), one joins.
	node, err := e.node(svs[2].Name)
	if err != nil {
		t.Fatal(err)
	}
	node.Labels[v1.LabelNodeExcludeBalancers] = "true"
	if _, err := cp.Admin.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cp.Admin.CoreV1().Nodes().Delete(ctx, svs[1].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	joined := e.joinNode(3, "fsn1")
	eventually(t, 60*time.Second, "the targets follow the Nodes", func() (bool, string) {
		got, want := serverTargets(current()), wantTargets(false, svs[0], joined)
		return slices.Equal(got, want), fmt.Sprintf("targets %v, want %v", got, want)
	})

	// Private IPs for the targets, no IPv6 in the status, another
	// algorithm, and a misspelt annotation, which is a warning and
	// otherwise ignored: the rest applies.
	misspelt := "load-balancer.hetzner.cloud/health-check-intervall"
	patchSvc(t, "web", map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		hetzner.AnnUsePrivateIP:                     "true",
		"load-balancer.hetzner.cloud/ipv6-disabled": "true",
		hetzner.AnnAlgorithm:                        "least_connections",
		misspelt:                                    "5s",
	}}})
	eventually(t, 60*time.Second, "private-IP targets, the new algorithm and no IPv6 in the status", func() (bool, string) {
		lb := current()
		got, want := serverTargets(lb), wantTargets(true, svs[0], joined)
		ing, wantIng := ingressOf(getSvc(t, "web")), hzIngress(lb, false, true)
		return slices.Equal(got, want) && lb.Algorithm == fakehz.AlgorithmLeastConnections && slices.Equal(ing, wantIng),
			fmt.Sprintf("targets %v (want %v), algorithm %s, ingress %v (want %v)", got, want, lb.Algorithm, ing, wantIng)
	})
	want := misspelt + ": unknown annotation, ignored; did you mean " + hetzner.AnnHCInterval + "?"
	eventually(t, 30*time.Second, "a warning about the unknown annotation", func() (bool, string) {
		evs := hzEvents(t, "web", "Warning", annotations.ReasonIgnored)
		return slices.Contains(evs, want), fmt.Sprintf("%q", evs)
	})
	for _, s := range current().Services {
		if s.HealthCheck.Interval != 15 {
			t.Errorf("port %d: health check every %ds; the misspelt annotation must change nothing", s.ListenPort, s.HealthCheck.Interval)
		}
	}

	// An invalid value: a Warning naming the annotation, and nothing
	// changes in the cloud, not even for a Node that joins meanwhile.
	settled := current()
	writes := e.lbWrites()
	patchSvc(t, "web", map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		hetzner.AnnAlgorithm: "fastest",
	}}})
	late := e.joinNode(4, "fsn1")
	eventually(t, 30*time.Second, "a Warning naming the invalid annotation", func() (bool, string) {
		evs := hzEvents(t, "web", "Warning", annotations.Reason)
		return slices.ContainsFunc(evs, func(m string) bool {
			return strings.Contains(m, hetzner.AnnAlgorithm) && strings.Contains(m, `"fastest"`)
		}), fmt.Sprintf("%q", evs)
	})
	e.waitInitialized([]string{late.Name}, 30*time.Second)
	time.Sleep(3 * time.Second) // time to do damage
	if got := current(); !reflect.DeepEqual(got, settled) {
		t.Errorf("the load balancer changed while the Service's annotations were invalid:\n%+v\nwas\n%+v", got, settled)
	}
	if n := e.lbWrites() - writes; n != 0 {
		t.Errorf("%d load balancer writes while the Service's annotations were invalid: %v", n, hzWrites(e.fake.Faults().Calls()))
	}
	// Fixing it heals it, with the Node that joined meanwhile.
	patchSvc(t, "web", map[string]any{"metadata": map[string]any{"annotations": map[string]any{
		hetzner.AnnAlgorithm: "round_robin",
	}}})
	eventually(t, 60*time.Second, "the fixed Service applied, with the late Node", func() (bool, string) {
		lb := current()
		got, want := serverTargets(lb), wantTargets(true, svs[0], joined, late)
		return slices.Equal(got, want) && lb.Algorithm == fakehz.AlgorithmRoundRobin, fmt.Sprintf("targets %v (want %v), algorithm %s", got, want, lb.Algorithm)
	})

	deleteServiceAndWait(t, "web", 60*time.Second)
	if lbs := e.fake.LoadBalancers(); len(lbs) != 0 {
		t.Errorf("load balancers left after the Service was deleted: %+v", lbs)
	}
	if n := e.fake.Faults().Responses("POST /v1/load_balancers")[201]; n != 1 {
		t.Errorf("%d load balancers created for one Service", n)
	}
}

// With 30% of all calls failing (429 rate_limit_exceeded, 500s before and
// after the change was made, no answer at all) while Services are created
// and Nodes come and go, every Service converges to exactly one load
// balancer with the right targets, no Node whose server exists is
// deleted, and deleting the Services leaves no load balancer.
func TestHetznerLoadBalancersConvergeUnderFaults(t *testing.T) {
	// The Fast profile: the faults are the point here, not the cloud's
	// pace, which the lifecycle test covers.
	e, svs := hzLBNodes(t, 3, &simcloud.Fast, nil)
	ctx := context.Background()

	// Every Node the test made, by server: the watch flags a Node deleted
	// while its server exists, and counts the load balancers ever made.
	var mu sync.Mutex
	servers := map[string]int64{}
	for _, sv := range svs {
		servers[sv.Name] = sv.ID
	}
	seenLBs := map[int64]bool{}
	var wrongful []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			for _, lb := range e.fake.LoadBalancers() {
				mu.Lock()
				seenLBs[lb.ID] = true
				mu.Unlock()
			}
			mu.Lock()
			names := make(map[string]int64, len(servers))
			for k, v := range servers {
				names[k] = v
			}
			mu.Unlock()
			for name, id := range names {
				_, err := cp.Admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
				if err == nil {
					continue
				}
				if _, alive := e.fake.Server(id); alive && strings.Contains(err.Error(), "not found") {
					mu.Lock()
					if !slices.Contains(wrongful, name) {
						wrongful = append(wrongful, name)
					}
					mu.Unlock()
				}
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()

	f := e.fake.Faults()
	// 30% in all, on every endpoint: rules apply in order, so each later
	// one sees what the earlier ones left.
	for _, r := range []faults.Rule{
		{Probability: 0.10, Status: 429},
		{Probability: 0.08 / 0.90, Status: 500},
		{Probability: 0.07 / 0.82, Status: 500, AfterCommit: true},
		{Probability: 0.05 / 0.75, Timeout: true},
	} {
		f.AddRule(r)
	}
	before := f.Injected()
	start := time.Now()

	const n = 6
	names := serviceNames("hzstorm", n)
	var cwg sync.WaitGroup
	for _, name := range names {
		cwg.Go(func() { createService(t, name, map[string]string{hetzner.AnnLocation: "fsn1"}, tcp(80), tcp(443)) })
	}
	cwg.Wait()

	// Nodes come and go meanwhile: two join, one's server is deleted.
	live := []fakehz.CloudServer{svs[1], svs[2]}
	for i := 3; i < 5; i++ {
		sv := e.joinNode(i, "fsn1")
		mu.Lock()
		servers[sv.Name] = sv.ID
		mu.Unlock()
		live = append(live, sv)
	}
	if err := e.fake.DeleteServer(svs[0].ID); err != nil {
		t.Fatal(err)
	}

	for _, name := range names {
		eventually(t, 3*time.Minute, name+" converged", func() (bool, string) {
			svc := getSvc(t, name)
			lb, ok := e.lbOf(svc)
			if !ok {
				return false, "no load balancer yet"
			}
			ing, wantIng := ingressOf(svc), hzIngress(lb, true, true)
			got, want := serverTargets(lb), wantTargets(false, live...)
			var wantSvcs []fakehz.Service
			for _, p := range svc.Spec.Ports {
				wantSvcs = append(wantSvcs, tcpService(p))
			}
			gs, ws := lbServices(lb), lbServices(fakehz.LoadBalancer{Services: wantSvcs})
			return slices.Equal(ing, wantIng) && slices.Equal(got, want) && slices.Equal(gs, ws),
				fmt.Sprintf("ingress %v (want %v), targets %v (want %v), services %q (want %q)", ing, wantIng, got, want, gs, ws)
		})
	}
	eventually(t, time.Minute, "the deleted server's Node deleted", func() (bool, string) {
		return !e.exists(svs[0].Name), "still there"
	})
	// IDs are handed out in order: one made and deleted again would
	// leave a gap.
	if lbs := e.fake.LoadBalancers(); len(lbs) != n || lbs[n-1].ID-lbs[0].ID != n-1 {
		t.Errorf("%d load balancers for %d Services: %+v", len(lbs), n, lbs)
	}
	injected := f.Injected() - before
	if injected < 20 {
		t.Errorf("only %d faults injected; the test proved little", injected)
	}

	t.Logf("converged after %s", time.Since(start))
	deleteServicesAndWait(t, names, 3*time.Minute)
	t.Logf("deleted after %s", time.Since(start))
	if lbs := e.fake.LoadBalancers(); len(lbs) != 0 {
		t.Errorf("%d load balancers leaked: %+v", len(lbs), lbs)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seenLBs) != n {
		t.Errorf("%d load balancers were made for %d Services", len(seenLBs), n)
	}
	if len(wrongful) > 0 {
		t.Errorf("Nodes deleted while their servers existed: %v", wrongful)
	}
	t.Logf("faults injected: %d; calls: %v", injected, f.Calls())
}
