package nodeipam_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/controllers/nodeipam"
	"github.com/polyccm/polyccm/core/instances"
)

const hint = "an alias IP range on nic0"

// source is a cloud whose instances are "fake://<name>"; an instance not
// in ranges does not exist, and one in failing answers with err.
type source struct {
	mu      sync.Mutex
	ranges  map[string][]string // providerID -> pod CIDRs (nil: none)
	failing map[string]error
	asked   map[string]int
}

func newSource() *source {
	return &source{ranges: map[string][]string{}, failing: map[string]error{}, asked: map[string]int{}}
}

func (s *source) LookupInstances(_ context.Context, keys []instances.Key) (instances.Answer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]instances.Result, len(keys))
	for i, k := range keys {
		s.asked[k.ProviderID]++
		if err := s.failing[k.ProviderID]; err != nil {
			out[i].Err = err
			continue
		}
		if r, ok := s.ranges[k.ProviderID]; ok {
			out[i].Instance = &instances.Instance{ProviderID: k.ProviderID, Name: k.NodeName, PodCIDRs: slices.Clone(r)}
		}
	}
	return instances.Answer{Results: out}, nil
}

func (s *source) set(pid string, r []string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ranges[pid] = r
	s.failing[pid] = err
}

func (s *source) lookups(pid string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked[pid]
}

func pid(name string) string { return "fake://" + name }

func node(name string, podCIDRs ...string) *v1.Node {
	n := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec:       v1.NodeSpec{ProviderID: pid(name), PodCIDRs: podCIDRs},
	}
	if len(podCIDRs) > 0 {
		n.Spec.PodCIDR = podCIDRs[0]
	}
	return n
}

func withCondition(n *v1.Node, st v1.ConditionStatus, reason string) *v1.Node {
	n.Status.Conditions = append(n.Status.Conditions,
		v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady"},
		v1.NodeCondition{Type: v1.NodeNetworkUnavailable, Status: st, Reason: reason})
	return n
}

type env struct {
	t    *testing.T
	kube *k8sfake.Clientset
	rec  *record.FakeRecorder
}

func start(t *testing.T, src *source, nodes ...*v1.Node) *env {
	t.Helper()
	e := &env{t: t, kube: k8sfake.NewClientset(), rec: record.NewFakeRecorder(100)}
	for _, n := range nodes {
		if err := e.kube.Tracker().Add(n); err != nil {
			t.Fatal(err)
		}
	}
	factory := informers.NewSharedInformerFactory(e.kube, 0)
	// No cache, so every retry reaches the source.
	in := instances.New(src, instances.Options{Driver: "fake", BatchWindow: 5 * time.Millisecond, Timeout: 10 * time.Second})
	c, err := nodeipam.New(nodeipam.Options{
		Client:    e.kube,
		Nodes:     factory.Core().V1().Nodes(),
		Instances: in,
		Recorder:  e.rec,
		Cloud:     "fake",
		Hint:      hint,
		RetryBase: 10 * time.Millisecond,
		RetryMax:  50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	go c.Run(ctx, 0)
	return e
}

func (e *env) node(name string) *v1.Node {
	e.t.Helper()
	n, err := e.kube.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

func (e *env) waitFor(what string, done func() bool) {
	e.t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return done(), nil }); err != nil {
		e.t.Fatalf("timed out waiting for %s", what)
	}
}

// waitReady waits until name has podCIDRs want and NetworkUnavailable
// False as upstream sets it.
func (e *env) waitReady(name string, want ...string) {
	e.t.Helper()
	e.waitFor(name+" ready", func() bool {
		n := e.node(name)
		c := condition(n)
		return slices.Equal(n.Spec.PodCIDRs, want) && n.Spec.PodCIDR == want[0] &&
			c != nil && c.Status == v1.ConditionFalse && c.Reason == "RouteCreated" && c.Message == "NodeController create implicit route"
	})
}

func condition(n *v1.Node) *v1.NodeCondition {
	for i, c := range n.Status.Conditions {
		if c.Type == v1.NodeNetworkUnavailable {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// patches are the bodies of the patches sent to name, the status ones
// prefixed "status ".
func (e *env) patches(name string) []string {
	var out []string
	for _, a := range e.kube.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok && p.GetName() == name {
			body := string(p.GetPatch())
			if p.GetSubresource() == "status" {
				body = "status " + body
			}
			out = append(out, body)
		}
	}
	return out
}

func (e *env) waitEvent(want ...string) string {
	e.t.Helper()
	select {
	case ev := <-e.rec.Events:
		for _, w := range want {
			if !strings.Contains(ev, w) {
				e.t.Fatalf("event %q, want one containing %q", ev, w)
			}
		}
		return ev
	case <-time.After(10 * time.Second):
		e.t.Fatalf("no event %q", want)
	}
	return ""
}

func (e *env) noEvents() {
	e.t.Helper()
	select {
	case ev := <-e.rec.Events:
		e.t.Errorf("unexpected event %q", ev)
	default:
	}
}

func TestSetsPodCIDRsAndCondition(t *testing.T) {
	src := newSource()
	src.set(pid("fresh"), []string{"10.4.1.0/24"}, nil)
	src.set(pid("unavailable"), []string{"10.4.2.0/24"}, nil)
	src.set(pid("no-provider-id"), []string{"10.4.3.0/24"}, nil)
	bare := node("no-provider-id")
	bare.Spec.ProviderID = ""
	e := start(t, src, node("fresh"), withCondition(node("unavailable"), v1.ConditionTrue, "NoRouteCreated"), bare)
	e.waitReady("fresh", "10.4.1.0/24")
	e.waitReady("unavailable", "10.4.2.0/24")

	// The spec with the UID as a precondition, then the condition alone;
	// the kubelet's conditions are left as they were. The spec patch's
	// own update event can arrive before the informer has seen the
	// status patch, so the (idempotent) condition patch may be sent
	// again, as upstream's controller may; the spec never is.
	p := e.patches("fresh")
	if len(p) < 2 || p[0] != `{"metadata":{"uid":"uid-fresh"},"spec":{"podCIDR":"10.4.1.0/24","podCIDRs":["10.4.1.0/24"]}}` {
		t.Errorf("patches of fresh = %q", p)
	}
	for _, q := range p[min(1, len(p)):] {
		if !strings.HasPrefix(q, `status {"metadata":{"uid":"uid-fresh"},"status":{"conditions":[{"type":"NetworkUnavailable","status":"False"`) {
			t.Errorf("patches of fresh = %q: after the spec, only the condition", p)
		}
	}
	if n := e.node("unavailable"); len(n.Status.Conditions) != 2 || n.Status.Conditions[0].Reason != "KubeletReady" {
		t.Errorf("conditions %+v", n.Status.Conditions)
	}

	// A Node without a providerID waits for the cloud node controller.
	time.Sleep(100 * time.Millisecond)
	if n := src.lookups(""); n != 0 || len(e.patches("no-provider-id")) != 0 {
		t.Errorf("a Node without a providerID was looked up (%d) or patched (%q)", n, e.patches("no-provider-id"))
	}
	e.noEvents()

	// Once set, it is taken up.
	bare = e.node("no-provider-id")
	bare.Spec.ProviderID = pid("no-provider-id")
	if _, err := e.kube.CoreV1().Nodes().Update(context.Background(), bare, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitReady("no-provider-id", "10.4.3.0/24")
}

// The driver orders the ranges by the cluster's stack; they are kept in
// its order, in canonical form.
func TestDualStackOrder(t *testing.T) {
	src := newSource()
	src.set(pid("v4v6"), []string{"10.4.1.0/24", "fd20:0:0:1::/112"}, nil)
	src.set(pid("v6v4"), []string{"fd20::2:0:0/112", "10.4.2.0/24"}, nil)
	src.set(pid("v6"), []string{"fd20:0:0:3::/112"}, nil)
	e := start(t, src, node("v4v6"), node("v6v4"), node("v6"))
	e.waitReady("v4v6", "10.4.1.0/24", "fd20:0:0:1::/112")
	e.waitReady("v6v4", "fd20::2:0:0/112", "10.4.2.0/24")
	e.waitReady("v6", "fd20:0:0:3::/112")
	e.noEvents()
}

// CIDRs already set are never changed: equal ones only get the
// condition, different ones a Warning and nothing else.
func TestLeavesSetCIDRsAlone(t *testing.T) {
	src := newSource()
	src.set(pid("same"), []string{"10.4.1.0/24", "fd20:0:0:1::/112"}, nil)
	src.set(pid("other"), []string{"10.4.2.0/24"}, nil)
	src.set(pid("done"), []string{"10.4.3.0/24"}, nil)
	e := start(t, src,
		node("same", "10.4.1.0/24", "fd20::1:0:0:0:0/112"),
		withCondition(node("other", "10.9.0.0/24"), v1.ConditionTrue, "NoRouteCreated"),
		withCondition(node("done", "10.4.3.0/24"), v1.ConditionFalse, "CalicoIsUp"))
	e.waitReady("same", "10.4.1.0/24", "fd20::1:0:0:0:0/112")
	if p := e.patches("same"); len(p) != 1 || !strings.HasPrefix(p[0], "status ") {
		t.Errorf("patches of same = %q, want the condition's only", p)
	}
	e.waitEvent("Warning CIDRAssignmentFailed", "Node other has pod CIDRs 10.9.0.0/24", "fake://other has 10.4.2.0/24")
	time.Sleep(100 * time.Millisecond)
	if p := e.patches("other"); len(p) != 0 {
		t.Errorf("patched a Node whose CIDRs differ from the cloud's: %q", p)
	}
	if c := condition(e.node("other")); c.Status != v1.ConditionTrue {
		t.Errorf("other's condition %+v, want it left", c)
	}
	// Nothing to do: no lookup, no patch.
	if n, p := src.lookups(pid("done")), e.patches("done"); n != 0 || len(p) != 0 {
		t.Errorf("a Node with CIDRs and its network available was looked up %d times, patched %q", n, p)
	}
}

// An instance without a usable range: a Warning naming the Node and what
// to do, retried until the range appears.
func TestNoRangeIsAnEventAndRetried(t *testing.T) {
	src := newSource()
	src.set(pid("bare"), nil, nil)
	src.set(pid("two-v4"), []string{"10.4.1.0/24", "10.4.2.0/24"}, nil)
	e := start(t, src, node("bare"))
	e.waitEvent("Warning CIDRNotAvailable", "Node bare gets no pod CIDRs", "fake instance fake://bare has no pod range", "give it "+hint, "controllers.nodeIPAM")
	e.waitFor("retries", func() bool { return src.lookups(pid("bare")) >= 3 })
	if p := e.patches("bare"); len(p) != 0 {
		t.Errorf("patched a Node without a range: %q", p)
	}
	src.set(pid("bare"), []string{"10.4.7.0/24"}, nil)
	e.waitReady("bare", "10.4.7.0/24")

	// Ranges upstream would refuse are no range either.
	for len(e.rec.Events) > 0 {
		<-e.rec.Events
	}
	if _, err := e.kube.CoreV1().Nodes().Create(context.Background(), node("two-v4"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitEvent("Warning CIDRNotAvailable", "Node two-v4", "not one IPv4 and one IPv6")
}

// An instance the cloud definitively does not have, or a providerID it
// refuses, is said on the Node; nothing is written.
func TestDefinitiveLookupFailures(t *testing.T) {
	src := newSource()
	src.set(pid("bad"), nil, cloudapi.Invalid("providerID %q is not the fake's", pid("bad")))
	e := start(t, src, node("gone"))
	e.waitEvent("Warning CIDRNotAvailable", "Node gone gets no pod CIDRs: fake has no instance fake://gone")
	if _, err := e.kube.CoreV1().Nodes().Create(context.Background(), node("bad"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The retried "gone" may speak again first.
	e.waitFor("an event on bad", func() bool {
		ev := e.waitEvent("Warning CIDRNotAvailable")
		return strings.Contains(ev, "cannot look up its instance fake://bad")
	})
	if p := append(e.patches("gone"), e.patches("bad")...); len(p) != 0 {
		t.Errorf("patches %q", p)
	}
}

// An ambiguous cloud error touches nothing and says nothing on the Node;
// the Node is retried until the cloud answers.
func TestAmbiguousErrorLeavesNodeAlone(t *testing.T) {
	src := newSource()
	src.set(pid("flaky"), []string{"10.4.1.0/24"}, &cloudapi.Error{Kind: cloudapi.KindUnavailable, Status: 503, Err: errors.New("503")})
	e := start(t, src, withCondition(node("flaky"), v1.ConditionTrue, "NoRouteCreated"))
	e.waitFor("retries", func() bool { return src.lookups(pid("flaky")) >= 3 })
	if p := e.patches("flaky"); len(p) != 0 {
		t.Errorf("patched on an ambiguous error: %q", p)
	}
	e.noEvents()
	src.set(pid("flaky"), []string{"10.4.1.0/24"}, nil)
	e.waitReady("flaky", "10.4.1.0/24")
}
