package hetzner

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/polyccm/polyccm/config/secret"
	"github.com/polyccm/polyccm/core/annotations"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/loadbalancers"
	hfake "github.com/polyccm/polyccm/test/fakecloud/hetzner"
)

const fakeToken = "polyccm-lb-test-0123456789abcdef0123456789abcdef0123456789abcdef"

// fakeClients hands the driver a fake clientset, as the runner's
// ControllerClientBuilder hands it a real one.
type fakeClients struct{ kube kubernetes.Interface }

func (b fakeClients) Config(string) (*restclient.Config, error)   { return &restclient.Config{}, nil }
func (b fakeClients) ConfigOrDie(string) *restclient.Config       { return &restclient.Config{} }
func (b fakeClients) Client(string) (kubernetes.Interface, error) { return b.kube, nil }
func (b fakeClients) ClientOrDie(string) kubernetes.Interface     { return b.kube }

var _ cloudprovider.ControllerClientBuilder = fakeClients{}

// lbEnv is the driver against the fake Hetzner API, run under
// loadbalancers.Rules as the runner runs it, with three servers in the
// Network "k8s" (the first two are Nodes).
type lbEnv struct {
	t       *testing.T
	fake    *hfake.Server
	kube    *k8sfake.Clientset
	rec     *record.FakeRecorder
	lbs     cloudprovider.LoadBalancer
	netID   int64
	servers []int64
	nodes   []*v1.Node
}

func newLBEnv(t *testing.T) *lbEnv {
	t.Helper()
	return newLBEnvWith(t, nil)
}

// newLBEnvWith is newLBEnv with drivers.hetzner.loadBalancer edited.
func newLBEnvWith(t *testing.T, edit func(*LoadBalancerConfig)) *lbEnv {
	t.Helper()
	f := hfake.New(fakeToken)
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	e := &lbEnv{t: t, fake: f, kube: k8sfake.NewClientset(), rec: record.NewFakeRecorder(100)}
	e.netID = f.AddNetwork("k8s", "10.0.0.0/16", hfake.Subnet{IPRange: "10.0.0.0/24"})
	for _, name := range []string{"n1", "n2", "n3"} {
		id := f.AddServer(hfake.ServerSpec{Name: name, Network: e.netID})
		e.servers = append(e.servers, id)
		if name != "n3" {
			e.nodes = append(e.nodes, testNode(name, ProviderID(id), nil))
		}
	}
	e.lbs = e.restart(edit)
	budget, retry := actionBudget, actionRetryAfter
	actionBudget, actionRetryAfter = 100*time.Millisecond, time.Millisecond
	t.Cleanup(func() { actionBudget, actionRetryAfter = budget, retry })
	return e
}

// restart builds the driver afresh against the same fake and cluster, as
// a new polyccm process would, with drivers.hetzner.loadBalancer edited.
func (e *lbEnv) restart(edit func(*LoadBalancerConfig)) cloudprovider.LoadBalancer {
	e.t.Helper()
	api := cloudapi.New(cloudapi.Options{Driver: Name, Classify: classify, QPS: 1000, Burst: 1000, Timeout: 10 * time.Second,
		BaseBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	cfg := &Config{Token: secret.Secret{Value: fakeToken}, APIURL: e.fake.Endpoint(), Network: "k8s",
		Instances: InstancesConfig{AddressFamily: FamilyIPv4}, LoadBalancer: LoadBalancerConfig{Location: "fsn1"}}
	if edit != nil {
		edit(&cfg.LoadBalancer)
	}
	if err := cfg.Validate(); err != nil {
		e.t.Fatal(err)
	}
	cloud, err := New(cfg, driver.Deps{API: api, ClusterName: "unit", ClientBuilder: fakeClients{e.kube}, Recorder: e.rec})
	if err != nil {
		e.t.Fatal(err)
	}
	return loadbalancers.Rules(cloud.(driver.LoadBalancerCloud).LoadBalancer(), loadbalancers.RuleOptions{})
}

// service stores a Service in the cluster (the ownership rule lists them).
func (e *lbEnv) service(uid string, ann map[string]string, ports ...v1.ServicePort) *v1.Service {
	e.t.Helper()
	svc := testService(ann, ports...)
	if uid != "" {
		svc.UID, svc.Name = types.UID(uid), "other"
	}
	created, err := e.kube.CoreV1().Services(svc.Namespace).Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return created
}

func (e *lbEnv) ensure(svc *v1.Service) (*v1.LoadBalancerStatus, error) {
	return e.lbs.EnsureLoadBalancer(context.Background(), "unit", svc, e.nodes)
}

func (e *lbEnv) mustEnsure(svc *v1.Service) *v1.LoadBalancerStatus {
	e.t.Helper()
	st, err := e.ensure(svc)
	if err != nil {
		e.t.Fatalf("EnsureLoadBalancer: %v", err)
	}
	return st
}

// writes counts the requests that change something, so far.
func (e *lbEnv) writes() map[string]int {
	out := map[string]int{}
	for ep, n := range e.fake.Faults().Calls() {
		if !strings.HasPrefix(ep, "GET ") {
			out[ep] += n
		}
	}
	return out
}

func (e *lbEnv) only() hfake.LoadBalancer {
	e.t.Helper()
	all := e.fake.LoadBalancers()
	if len(all) != 1 {
		e.t.Fatalf("%d load balancers, want 1", len(all))
	}
	return all[0]
}

func TestFakeLifecycle(t *testing.T) {
	e := newLBEnv(t)
	svc := e.service("", nil, tcpPort(80, 30080), tcpPort(443, 30443))
	st := e.mustEnsure(svc)

	lb := e.only()
	if lb.Name != lbN || lb.Labels[LabelServiceUID] != testUID || lb.Network != e.netID || lb.Location != "fsn1" || lb.Type != "lb11" {
		t.Errorf("load balancer %+v", lb)
	}
	if len(lb.Services) != 2 || len(lb.Targets) != 2 {
		t.Errorf("services %+v targets %+v", lb.Services, lb.Targets)
	}
	if got, want := ingress(st), lb.IPv4+" "+lb.IPv6+" "+lb.PrivateIP; got != want {
		t.Errorf("status %q, want %q", got, want)
	}
	if w := e.writes(); len(w) != 1 || w["POST /v1/load_balancers"] != 1 {
		t.Errorf("writes %v, want the one create carrying everything", w)
	}

	// Steady: nothing written.
	before := e.writes()
	e.mustEnsure(svc)
	if w := e.writes(); !sameCounts(w, before) {
		t.Errorf("a steady sync wrote: %v -> %v", before, w)
	}

	// A Node joins (the node sync), a port moves.
	e.nodes = append(e.nodes, testNode("n3", ProviderID(e.servers[2]), nil))
	if err := e.lbs.UpdateLoadBalancer(context.Background(), "unit", svc, e.nodes); err != nil {
		t.Fatal(err)
	}
	if n := len(e.only().Targets); n != 3 {
		t.Errorf("%d targets, want 3", n)
	}
	svc.Spec.Ports[0].Port = 8080
	e.mustEnsure(svc)
	ports := []int{}
	for _, s := range e.only().Services {
		ports = append(ports, s.ListenPort)
	}
	if len(ports) != 2 || ports[0] == 80 && ports[1] == 80 || !containsInt(ports, 8080) || containsInt(ports, 80) {
		t.Errorf("listen ports %v, want 8080 and 443", ports)
	}

	if _, exists, err := e.lbs.GetLoadBalancer(context.Background(), "unit", svc); err != nil || !exists {
		t.Errorf("GetLoadBalancer = %v, %v", exists, err)
	}
	if err := e.lbs.EnsureLoadBalancerDeleted(context.Background(), "unit", svc); err != nil {
		t.Fatal(err)
	}
	if n := len(e.fake.LoadBalancers()); n != 0 {
		t.Errorf("%d load balancers left", n)
	}
	if _, exists, err := e.lbs.GetLoadBalancer(context.Background(), "unit", svc); err != nil || exists {
		t.Errorf("after deletion GetLoadBalancer = %v, %v", exists, err)
	}
}

// A load balancer hcloud CCM made is kept, with its addresses, and a
// steady one costs no write.
func TestFakeAdoptsHcloudCCMLoadBalancer(t *testing.T) {
	e := newLBEnv(t)
	svc := e.service("", nil)
	id, err := e.fake.CreateLoadBalancerDirect(hfake.LoadBalancer{
		Name: lbN, Labels: map[string]string{LabelServiceUID: testUID}, Network: e.netID, PublicInterface: true,
		Services: []hfake.Service{{Protocol: "tcp", ListenPort: 80, DestinationPort: 30080, HealthCheck: hfake.HealthCheck{Protocol: "tcp", Port: 30080}}},
		Targets:  []hfake.Target{{Type: hfake.TargetServer, ServerID: e.servers[0]}, {Type: hfake.TargetServer, ServerID: e.servers[1]}},
	})
	if err != nil {
		t.Fatal(err)
	}
	old, _ := e.fake.LoadBalancer(id)
	st := e.mustEnsure(svc)
	if w := e.writes(); len(w) != 0 {
		t.Errorf("writes %v, want none", w)
	}
	if lb := e.only(); lb.ID != id || lb.IPv4 != old.IPv4 || !strings.HasPrefix(ingress(st), old.IPv4+" ") {
		t.Errorf("load balancer %d (%s), status %q; want %d kept (%s)", lb.ID, lb.IPv4, ingress(st), id, old.IPv4)
	}
}

// Found by name without the label (older hcloud CCM, or made by hand and
// named by the annotation while the status shows it): labelled, kept.
func TestFakeLabelsALoadBalancerFoundByName(t *testing.T) {
	e := newLBEnv(t)
	svc := e.service("", nil)
	id, err := e.fake.CreateLoadBalancerDirect(hfake.LoadBalancer{Name: lbN, Network: e.netID})
	if err != nil {
		t.Fatal(err)
	}
	e.mustEnsure(svc)
	if lb := e.only(); lb.ID != id || lb.Labels[LabelServiceUID] != testUID {
		t.Errorf("load balancer %d labels %v", lb.ID, lb.Labels)
	}
}

func TestFakeRefusesAnotherServicesLoadBalancer(t *testing.T) {
	e := newLBEnv(t)
	e.service("11111111-2222-3333-4444-555555555555", nil)
	if _, err := e.fake.CreateLoadBalancerDirect(hfake.LoadBalancer{Name: "shared", Labels: map[string]string{LabelServiceUID: "11111111-2222-3333-4444-555555555555"}}); err != nil {
		t.Fatal(err)
	}
	svc := e.service("", map[string]string{AnnName: "shared"})
	_, err := e.ensure(svc)
	if !loadbalancers.IsNotOwned(err) {
		t.Fatalf("EnsureLoadBalancer = %v, want a refusal", err)
	}
	if w := e.writes(); len(w) != 0 {
		t.Errorf("writes %v, want none", w)
	}
	if err := e.lbs.EnsureLoadBalancerDeleted(context.Background(), "unit", svc); err != nil || len(e.fake.LoadBalancers()) != 1 {
		t.Errorf("deletion: %v, %d load balancers; want it left", err, len(e.fake.LoadBalancers()))
	}
}

// A running action is waited for a bounded while; the load balancer
// locked meanwhile is a wait too, not a failure.
func TestFakeBusyIsAWait(t *testing.T) {
	e := newLBEnv(t)
	svc := e.service("", nil)
	e.mustEnsure(svc)
	e.fake.SetActionDelay(time.Hour)
	svc.Spec.Ports[0].NodePort = 31000
	for i := range 2 { // the change's action runs; then the load balancer is locked
		_, err := e.ensure(svc)
		var pe *loadbalancers.PendingError
		if !errors.As(err, &pe) {
			t.Fatalf("pass %d: EnsureLoadBalancer = %v, want a wait", i, err)
		}
	}
}

func TestFakeDryRunWritesNothing(t *testing.T) {
	e := newLBEnv(t)
	svc := e.service("", nil)
	ctx, d := loadbalancers.WithDryRun(context.Background())
	_, err := e.lbs.EnsureLoadBalancer(ctx, "unit", svc, e.nodes)
	if !errors.Is(err, loadbalancers.ErrPlanned) {
		t.Fatalf("EnsureLoadBalancer = %v, want ErrPlanned", err)
	}
	if ch := d.Changes(); len(ch) != 1 || ch[0].Action != loadbalancers.Create || ch[0].Kind != kindLB {
		t.Errorf("planned %v", ch)
	}
	if w := e.writes(); len(w) != 0 {
		t.Errorf("writes %v, want none", w)
	}
}

// The node sync never makes a load balancer.
func TestFakeNodeSyncCreatesNothing(t *testing.T) {
	e := newLBEnv(t)
	svc := e.service("", nil)
	if err := e.lbs.UpdateLoadBalancer(context.Background(), "unit", svc, e.nodes); err != nil || len(e.fake.LoadBalancers()) != 0 {
		t.Errorf("UpdateLoadBalancer = %v, %d load balancers", err, len(e.fake.LoadBalancers()))
	}
}

func TestFakeManagedCertificate(t *testing.T) {
	e := newLBEnv(t)
	svc := e.service("", map[string]string{AnnProtocol: "https", AnnCertificateType: "managed", AnnManagedCertDomains: "example.com"}, tcpPort(443, 30443))
	_, err := e.ensure(svc)
	var pe *loadbalancers.PendingError
	if !errors.As(err, &pe) {
		t.Fatalf("first pass = %v, want a wait for the certificate", err)
	}
	certs := e.fake.Certificates()
	if len(certs) != 1 || certs[0].Name != "ccm-managed-certificate-"+testUID || certs[0].Labels[LabelServiceUID] != testUID {
		t.Fatalf("certificates %+v", certs)
	}
	e.mustEnsure(svc)
	lb := e.only()
	if len(lb.Services) != 1 || lb.Services[0].HTTP == nil || len(lb.Services[0].HTTP.Certificates) != 1 || lb.Services[0].HTTP.Certificates[0] != certs[0].ID {
		t.Errorf("services %+v, want https with certificate %d", lb.Services, certs[0].ID)
	}
	if err := e.lbs.EnsureLoadBalancerDeleted(context.Background(), "unit", svc); err != nil {
		t.Fatal(err)
	}
	if n := len(e.fake.Certificates()); n != 1 {
		t.Errorf("%d certificates after deletion; hcloud CCM leaves the managed one", n)
	}
}

func TestFakeInvalidAnnotationChangesNothing(t *testing.T) {
	e := newLBEnv(t)
	svc := e.service("", map[string]string{AnnAlgorithm: "fastest"})
	_, err := e.ensure(svc)
	var inv *annotations.InvalidError
	if !errors.As(err, &inv) || len(e.fake.LoadBalancers()) != 0 {
		t.Fatalf("EnsureLoadBalancer = %v, want an invalid-settings error and no load balancer", err)
	}
	found := false
	for ev := range drain(e.rec) {
		found = found || strings.Contains(ev, annotations.Reason) && strings.Contains(ev, AnnAlgorithm)
	}
	if !found {
		t.Error("no Warning event names the annotation")
	}
}

func TestFakeProtectedLoadBalancerStays(t *testing.T) {
	e := newLBEnv(t)
	svc := e.service("", nil)
	if _, err := e.fake.CreateLoadBalancerDirect(hfake.LoadBalancer{Name: lbN, Labels: map[string]string{LabelServiceUID: testUID}, DeleteProtection: true}); err != nil {
		t.Fatal(err)
	}
	if err := e.lbs.EnsureLoadBalancerDeleted(context.Background(), "unit", svc); err != nil || len(e.fake.LoadBalancers()) != 1 {
		t.Errorf("deletion = %v with %d load balancers, want it kept", err, len(e.fake.LoadBalancers()))
	}
}

func TestFakeInventory(t *testing.T) {
	e := newLBEnv(t)
	for _, lb := range []hfake.LoadBalancer{
		{Name: lbN}, // named from a UID
		{Name: "x", Labels: map[string]string{LabelServiceUID: testUID}}, // labelled
		{Name: "by-hand"}, // neither
	} {
		if _, err := e.fake.CreateLoadBalancerDirect(lb); err != nil {
			t.Fatal(err)
		}
	}
	cloud, _ := New(&Config{Token: secret.Secret{Value: fakeToken}, APIURL: e.fake.Endpoint()}, driver.Deps{API: cloudapi.New(cloudapi.Options{Driver: Name, Classify: classify})})
	res, err := cloud.(driver.InventoryCloud).LoadBalancerInventory(context.Background())
	if err != nil || len(res) != 2 {
		t.Fatalf("inventory %+v, %v; want the two marked ones", res, err)
	}
}

func ingress(st *v1.LoadBalancerStatus) string {
	var out []string
	for _, in := range st.Ingress {
		out = append(out, in.IP+in.Hostname)
	}
	return strings.Join(out, " ")
}

func sameCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func drain(rec *record.FakeRecorder) map[string]bool {
	out := map[string]bool{}
	for {
		select {
		case ev := <-rec.Events:
			out[ev] = true
		default:
			return out
		}
	}
}
