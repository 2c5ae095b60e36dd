package gce_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"google.golang.org/api/option"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/polyccm/polyccm/config/secret"
	"github.com/polyccm/polyccm/core/annotations"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/driver/drivertest"
	"github.com/polyccm/polyccm/core/instances"
	"github.com/polyccm/polyccm/core/loadbalancers"
	"github.com/polyccm/polyccm/drivers/gce"
	fakegce "github.com/polyccm/polyccm/test/fakecloud/gce"
)

const (
	testProject = "polyccm-unit"
	testRegion  = "us-central1"
	testZone    = "us-central1-a"
	testZone2   = "us-central1-b"
	testNodeTag = "k8s-node"
	testCluster = "unit-cluster"
	testToken   = "ya29.unit-test-token"
	svcUID      = "0c6b1f0e-1d2c-4e5f-8a9b-7c6d5e4f3a2b"
)

// Fake API endpoints, as the fake counts them (METHOD + route pattern).
const (
	epListInstances = "GET /compute/v1/projects/{project}/zones/{zone}/instances"
	epGetInstance   = "GET /compute/v1/projects/{project}/zones/{zone}/instances/{instance}"
	epAggInstances  = "GET /compute/v1/projects/{project}/aggregated/instances"
	epFRInsert      = "POST /compute/v1/projects/{project}/regions/{region}/forwardingRules"
	epFRDelete      = "DELETE /compute/v1/projects/{project}/regions/{region}/forwardingRules/{forwardingRule}"
	epTPInsert      = "POST /compute/v1/projects/{project}/regions/{region}/targetPools"
	epTPAdd         = "POST /compute/v1/projects/{project}/regions/{region}/targetPools/{targetPool}/addInstance"
	epTPRemove      = "POST /compute/v1/projects/{project}/regions/{region}/targetPools/{targetPool}/removeInstance"
	epFWDelete      = "DELETE /compute/v1/projects/{project}/global/firewalls/{firewall}"
	epRoutesList    = "GET /compute/v1/projects/{project}/global/routes"
	epRouteDelete   = "DELETE /compute/v1/projects/{project}/global/routes/{route}"
	epAddrList      = "GET /compute/v1/projects/{project}/regions/{region}/addresses"
)

// env is the GCE driver built as the runner builds it (through the
// registered driver, its classifier and core's call client and instance
// batcher) against a fresh fake Compute API, authenticating with a
// service-account key the fake issued.
type env struct {
	t       *testing.T
	fake    *fakegce.Server
	cfg     *gce.Config
	api     *cloudapi.Client
	kube    *k8sfake.Clientset
	factory informers.SharedInformerFactory
	rec     *record.FakeRecorder
	cloud   driver.Cloud
	lb      cloudprovider.LoadBalancer
	routes  cloudprovider.Routes
}

type envOpt func(*envSettings)

type envSettings struct {
	cluster string
	cfg     func(*gce.Config)
	fake    *fakegce.Server // share another env's fake
	poll    bool            // operations answer RUNNING and are polled
}

func withConfig(f func(*gce.Config)) envOpt { return func(s *envSettings) { s.cfg = f } }
func withCluster(name string) envOpt        { return func(s *envSettings) { s.cluster = name } }
func withFake(f *fakegce.Server) envOpt     { return func(s *envSettings) { s.fake = f } }

// withPolling keeps the fake's operations RUNNING when they start, as the
// API's usually are, so the driver polls each one (the first poll comes
// after 200ms). Without it operations answer DONE, and tests run fast.
func withPolling() envOpt { return func(s *envSettings) { s.poll = true } }

func newEnv(t *testing.T, opts ...envOpt) *env {
	t.Helper()
	st := envSettings{cluster: testCluster}
	for _, o := range opts {
		o(&st)
	}
	f := st.fake
	if f == nil {
		f = fakegce.New(testProject, testToken)
		if err := f.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(f.Close)
		f.SetSynchronousOperations(!st.poll)
	}
	key, err := f.ServiceAccountKey("polyccm@" + testProject + ".iam.gserviceaccount.com")
	if err != nil {
		t.Fatal(err)
	}
	d, ok := driver.Default().Lookup(gce.Name)
	if !ok {
		t.Fatal("the gce driver is not registered")
	}
	cfg := &gce.Config{
		Project:     testProject,
		Region:      testRegion,
		Network:     fakegce.DefaultNetwork,
		Subnetwork:  fakegce.DefaultNetwork,
		NodeTags:    []string{testNodeTag},
		ClusterID:   st.cluster, // upstream's cluster ID, a name here for readable tests
		Credentials: secret.Secret{Value: string(key)},
		Endpoint:    f.URL(),
	}
	if st.cfg != nil {
		st.cfg(cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("test config is invalid: %v", err)
	}
	api := cloudapi.New(cloudapi.Options{
		Driver:      gce.Name,
		Classify:    d.Classify,
		AuthHint:    d.CredentialsHint,
		QPS:         10000,
		Burst:       10000,
		Timeout:     20 * time.Second,
		BaseBackoff: time.Millisecond,
		MaxBackoff:  5 * time.Millisecond,
	})
	e := &env{t: t, fake: f, cfg: cfg, api: api, kube: k8sfake.NewClientset(), rec: record.NewFakeRecorder(1000)}
	e.factory = informers.NewSharedInformerFactory(e.kube, 0)
	cloud, err := d.New(cfg, driver.Deps{ClusterName: st.cluster, API: api, Informers: e.factory, Recorder: e.rec, ClientBuilder: drivertest.Clients(e.kube)})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	e.cloud = cloud
	lbc, ok := cloud.(driver.LoadBalancerCloud)
	if !ok {
		t.Fatal("the GCE cloud has no load balancers")
	}
	e.lb = loadbalancers.Rules(lbc.LoadBalancer(), loadbalancers.RuleOptions{})
	rc, ok := cloud.(driver.RouteCloud)
	if !ok {
		t.Fatal("the GCE cloud has no routes")
	}
	e.routes = rc.Routes()
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	e.factory.Start(stop)
	for typ, synced := range e.factory.WaitForCacheSync(stop) {
		if !synced {
			t.Fatalf("informer for %v did not sync", typ)
		}
	}
	return e
}

// ctx is a context for one driver call, bounded so a hang fails the test
// instead of the whole package.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	t.Cleanup(cancel)
	return c
}

// instancesV2 is core's InstancesV2 over the driver's source, as the
// runner assembles it: no cache, so every question reaches the fake.
func (e *env) instancesV2(o instances.Options) cloudprovider.InstancesV2 {
	o.Driver = gce.Name
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Second
	}
	return instances.New(e.cloud.Instances(), o)
}

// instance adds a running node instance to the fake.
func (e *env) instance(name, zone string) fakegce.Instance {
	return e.fake.AddInstance(fakegce.Instance{Name: name, Zone: zone, MachineType: "e2-standard-4", Tags: []string{testNodeTag}})
}

func providerID(in fakegce.Instance) string {
	return gce.ProviderID(testProject, in.Zone, in.Name)
}

func node(name, providerID string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.NodeSpec{ProviderID: providerID}}
}

// nodes adds n running instances (node-0...) in zone and returns their
// Nodes.
func (e *env) nodes(prefix string, n int, zone string) []*v1.Node {
	out := make([]*v1.Node, n)
	for i := range n {
		in := e.instance(fmt.Sprintf("%s-%d", prefix, i), zone)
		out[i] = node(in.Name, providerID(in))
	}
	return out
}

// addNodes stores Nodes in the fake cluster and waits until the driver's
// node lister sees them.
func (e *env) addNodes(nodes ...*v1.Node) {
	e.t.Helper()
	for _, n := range nodes {
		if _, err := e.kube.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
			e.t.Fatal(err)
		}
	}
	e.waitNodes(func(names []string) bool {
		for _, n := range nodes {
			if !slices.Contains(names, n.Name) {
				return false
			}
		}
		return true
	})
}

// deleteNode removes a Node and waits until the lister no longer has it.
func (e *env) deleteNode(name string) {
	e.t.Helper()
	if err := e.kube.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.waitNodes(func(names []string) bool { return !slices.Contains(names, name) })
}

func (e *env) waitNodes(done func([]string) bool) {
	e.t.Helper()
	lister := e.factory.Core().V1().Nodes().Lister()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		ns, err := lister.List(labels.Everything())
		if err != nil {
			return false, err
		}
		var names []string
		for _, n := range ns {
			names = append(names, n.Name)
		}
		return done(names), nil
	})
	if err != nil {
		e.t.Fatalf("the node lister did not catch up: %v", err)
	}
}

// service is a LoadBalancer Service with one TCP port by default.
func service(ann map[string]string, ports ...v1.ServicePort) *v1.Service {
	if len(ports) == 0 {
		ports = []v1.ServicePort{tcp(80, 30080)}
	}
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: types.UID(svcUID), Annotations: ann},
		Spec: v1.ServiceSpec{
			Type:                  v1.ServiceTypeLoadBalancer,
			Ports:                 ports,
			ExternalTrafficPolicy: v1.ServiceExternalTrafficPolicyCluster,
		},
	}
}

func tcp(port, nodePort int32) v1.ServicePort {
	return v1.ServicePort{Name: fmt.Sprintf("tcp-%d", port), Protocol: v1.ProtocolTCP, Port: port, NodePort: nodePort}
}

func udp(port, nodePort int32) v1.ServicePort {
	return v1.ServicePort{Name: fmt.Sprintf("udp-%d", port), Protocol: v1.ProtocolUDP, Port: port, NodePort: nodePort}
}

// Upstream's names of what a test cluster's load balancers share (the
// tests' cluster ID is the cluster's name).
var testNodesHC = "k8s-" + testCluster + "-node"

func (e *env) nodesHC() string { return "k8s-" + e.cfg.ClusterID + "-node" }
func (e *env) group() string   { return "k8s-ig--" + e.cfg.ClusterID }

// hcNameOf is the health check svc's load balancer uses: the nodes'
// shared one, or with local traffic its own, named as the load balancer.
func (e *env) hcNameOf(svc *v1.Service) string {
	if healthPort(svc) != 10256 {
		return e.lbName(svc)
	}
	return e.nodesHC()
}

// lbName is what the driver names a Service's resources.
func (e *env) lbName(svc *v1.Service) string {
	return e.lb.GetLoadBalancerName(context.Background(), "kubernetes", svc)
}

func (e *env) ensure(svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	return e.lb.EnsureLoadBalancer(ctx(e.t), "kubernetes", svc, nodes)
}

func (e *env) mustEnsure(svc *v1.Service, nodes []*v1.Node) *v1.LoadBalancerStatus {
	e.t.Helper()
	st, err := e.ensure(svc, nodes)
	if err != nil {
		e.t.Fatalf("EnsureLoadBalancer: %v", err)
	}
	if st == nil || len(st.Ingress) != 1 || st.Ingress[0].IP == "" {
		e.t.Fatalf("EnsureLoadBalancer status = %+v, want one ingress IP", st)
	}
	return st
}

func (e *env) mustDelete(svc *v1.Service) {
	e.t.Helper()
	if err := e.lb.EnsureLoadBalancerDeleted(ctx(e.t), "kubernetes", svc); err != nil {
		e.t.Fatalf("EnsureLoadBalancerDeleted: %v", err)
	}
}

// get is GetLoadBalancer, failing the test on an error.
func (e *env) get(svc *v1.Service) (*v1.LoadBalancerStatus, bool) {
	e.t.Helper()
	st, exists, err := e.lb.GetLoadBalancer(ctx(e.t), "kubernetes", svc)
	if err != nil {
		e.t.Fatalf("GetLoadBalancer: %v", err)
	}
	return st, exists
}

// calls is how many requests the fake answered on endpoint.
func (e *env) calls(endpoint string) int { return e.fake.Faults().CallCount(endpoint) }

// callsLike sums the calls whose endpoint starts with method and contains
// part.
func (e *env) callsLike(method, part string) int {
	n := 0
	for ep, c := range e.fake.Faults().Calls() {
		if strings.HasPrefix(ep, method+" ") && strings.Contains(ep, part) {
			n += c
		}
	}
	return n
}

// events drains the recorder.
func (e *env) events() []string {
	var out []string
	for {
		select {
		case ev := <-e.rec.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

// live lists, per kind, the names of the resources the fake holds, for
// asserting that nothing is left.
func (e *env) live() map[string][]string {
	out := map[string][]string{}
	add := func(kind, name string) { out[kind] = append(out[kind], name) }
	for _, r := range e.fake.ForwardingRules() {
		add("forwardingRules", r.Name)
	}
	for _, r := range e.fake.TargetPools() {
		add("targetPools", r.Name)
	}
	for _, r := range e.fake.HTTPHealthChecks() {
		add("httpHealthChecks", r.Name)
	}
	for _, r := range e.fake.HealthChecks() {
		add("healthChecks", r.Name)
	}
	for _, r := range e.fake.Firewalls() {
		add("firewalls", r.Name)
	}
	for _, r := range e.fake.BackendServices() {
		add("backendServices", r.Name)
	}
	for _, r := range e.fake.InstanceGroups() {
		add("instanceGroups", lastSeg(r.Zone)+"/"+r.Name)
	}
	for _, r := range e.fake.Addresses() {
		add("addresses", r.Name)
	}
	return out
}

func lastSeg(u string) string { return u[strings.LastIndexByte(u, '/')+1:] }

// shortURL reduces a resource URL to its "projects/..." path.
func shortURL(u string) string {
	if i := strings.Index(u, "projects/"); i >= 0 {
		return u[i:]
	}
	return u
}

func shortURLs(us []string) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = shortURL(u)
	}
	slices.Sort(out)
	return out
}

func instancePath(zone, name string) string {
	return "projects/" + testProject + "/zones/" + zone + "/instances/" + name
}

func instancePaths(nodes []*v1.Node) []string {
	var out []string
	for _, n := range nodes {
		p := strings.TrimPrefix(n.Spec.ProviderID, "gce://"+testProject+"/")
		zone, name, _ := strings.Cut(p, "/")
		out = append(out, instancePath(zone, name))
	}
	slices.Sort(out)
	return out
}

// invalid asserts err is the InvalidError of bad Service settings and
// returns its problems by key.
func invalid(t *testing.T, err error) map[string]string {
	t.Helper()
	inv, ok := errors.AsType[*annotations.InvalidError](err)
	if !ok {
		t.Fatalf("err = %T %v, want *annotations.InvalidError", err, err)
	}
	out := map[string]string{}
	for _, p := range inv.Problems {
		out[p.Key] += p.Msg + ";"
	}
	return out
}

// userClient are the options of a Compute client acting for a user of the
// project, not polyccm: for what tests make behind the driver's back.
func (e *env) userClient() []option.ClientOption {
	return []option.ClientOption{option.WithEndpoint(e.fake.URL()),
		option.WithTokenSource(oauth2.StaticTokenSource(&oauth2.Token{AccessToken: testToken}))}
}

// kind is the cloudapi kind of err.
func kind(err error) cloudapi.Kind { return cloudapi.KindOf(err) }

// The fake's resources by name; each fails the test when absent.

func (e *env) forwardingRule(name string) fakegce.ForwardingRule {
	e.t.Helper()
	fr, ok := e.fake.ForwardingRule(testRegion, name)
	if !ok {
		e.t.Fatalf("no forwarding rule %s; have %v", name, e.live()["forwardingRules"])
	}
	return fr
}

func (e *env) targetPool(name string) fakegce.TargetPool {
	e.t.Helper()
	tp, ok := e.fake.TargetPool(testRegion, name)
	if !ok {
		e.t.Fatalf("no target pool %s; have %v", name, e.live()["targetPools"])
	}
	return tp
}

func (e *env) firewall(name string) fakegce.Firewall {
	e.t.Helper()
	fw, ok := e.fake.Firewall(name)
	if !ok {
		e.t.Fatalf("no firewall %s; have %v", name, e.live()["firewalls"])
	}
	return fw
}

func (e *env) httpHealthCheck(name string) fakegce.HTTPHealthCheck {
	e.t.Helper()
	for _, hc := range e.fake.HTTPHealthChecks() {
		if hc.Name == name {
			return hc
		}
	}
	e.t.Fatalf("no legacy HTTP health check %s; have %v", name, e.live()["httpHealthChecks"])
	return fakegce.HTTPHealthCheck{}
}

func (e *env) healthCheck(name string) fakegce.HealthCheck {
	e.t.Helper()
	for _, hc := range e.fake.HealthChecks() {
		if hc.Name == name {
			return hc
		}
	}
	e.t.Fatalf("no regional health check %s; have %v", name, e.live()["healthChecks"])
	return fakegce.HealthCheck{}
}

func (e *env) backendService(name string) fakegce.BackendService {
	e.t.Helper()
	for _, bs := range e.fake.BackendServices() {
		if bs.Name == name {
			return bs
		}
	}
	e.t.Fatalf("no backend service %s; have %v", name, e.live()["backendServices"])
	return fakegce.BackendService{}
}

// instanceGroups are the fake's instance groups by zone.
func (e *env) instanceGroups() map[string]fakegce.InstanceGroup {
	out := map[string]fakegce.InstanceGroup{}
	for _, g := range e.fake.InstanceGroups() {
		out[lastSeg(g.Zone)] = g
	}
	return out
}

// mutations is how many changing requests the fake answered.
func (e *env) mutations() int {
	n := 0
	for ep, c := range e.fake.Faults().Calls() {
		if !strings.HasPrefix(ep, "GET ") && !strings.HasSuffix(ep, "/listInstances") {
			n += c
		}
	}
	return n
}
