package digitalocean_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	"k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/config/secret"
	"github.com/polyccm/polyccm/core/annotations"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/loadbalancers"
	"github.com/polyccm/polyccm/drivers/digitalocean"
	fake "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

const (
	lbToken  = "dop_v1_lb_unit_test"
	lbPost   = "POST /v2/load_balancers"
	lbPut    = "PUT /v2/load_balancers/{id}"
	lbGet    = "GET /v2/load_balancers/{id}"
	lbList   = "GET /v2/load_balancers"
	lbDelete = "DELETE /v2/load_balancers/{id}"
	lbRegion = "fra1"
	lbUID    = "0c6b1f0e-1d2c-4e5f-8a9b-7c6d5e4f3a2b"
	// lbDefaultName is what GetLoadBalancerName gives for lbUID.
	lbDefaultName = "a0c6b1f0e1d2c4e5f8a9b7c6d5e4f3a2"
)

// lbClients hands the driver a fake clientset, as the runner's
// ControllerClientBuilder hands it a real one.
type lbClients struct{ kube kubernetes.Interface }

func (b lbClients) Config(string) (*restclient.Config, error)   { return &restclient.Config{}, nil }
func (b lbClients) ConfigOrDie(string) *restclient.Config       { return &restclient.Config{} }
func (b lbClients) Client(string) (kubernetes.Interface, error) { return b.kube, nil }
func (b lbClients) ClientOrDie(string) kubernetes.Interface     { return b.kube }

var _ cloudprovider.ControllerClientBuilder = lbClients{}

// lbEnv is a DigitalOcean load balancer driver against the fake, with a
// fake cluster holding the test's Service.
type lbEnv struct {
	t     *testing.T
	fake  *fake.Server
	kube  *k8sfake.Clientset
	rec   *record.FakeRecorder
	lbs   cloudprovider.LoadBalancer
	nodes []*v1.Node
}

type lbOpt func(*digitalocean.Config)

func newLBEnv(t *testing.T, opts ...lbOpt) *lbEnv {
	return newLBEnvAdopting(t, false, opts...)
}

// newLBEnvAdopting is newLBEnv with services.adoptUnmarkedLoadBalancers
// set to adopt.
func newLBEnvAdopting(t *testing.T, adopt bool, opts ...lbOpt) *lbEnv {
	t.Helper()
	f := fake.New(lbToken)
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	d, ok := driver.Default().Lookup(digitalocean.Name)
	if !ok {
		t.Fatal("the digitalocean driver is not registered")
	}
	api := cloudapi.New(cloudapi.Options{
		Driver:      digitalocean.Name,
		Classify:    d.Classify,
		QPS:         1000,
		Burst:       1000,
		Timeout:     10 * time.Second,
		BaseBackoff: time.Millisecond,
		MaxBackoff:  5 * time.Millisecond,
	})
	e := &lbEnv{t: t, fake: f, kube: k8sfake.NewClientset(), rec: record.NewFakeRecorder(100)}
	// Most tests here are about REGIONAL load balancers (HTTP rules, node
	// ports); those of the product default set DefaultType back to "".
	cfg := &digitalocean.Config{Token: secret.Secret{Value: lbToken}, APIURL: f.URL(), LoadBalancer: digitalocean.LoadBalancerConfig{DefaultType: "REGIONAL"}}
	for _, o := range opts {
		o(cfg)
	}
	cloud, err := d.New(cfg, driver.Deps{
		API:           api,
		ClusterName:   "unit test",
		ClientBuilder: lbClients{kube: e.kube},
		Recorder:      e.rec,

		AdoptUnmarkedLoadBalancers: adopt,
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	lbc, ok := cloud.(driver.LoadBalancerCloud)
	if !ok {
		t.Fatal("the DigitalOcean cloud has no load balancers")
	}
	e.lbs = loadbalancers.Rules(lbc.LoadBalancer(), loadbalancers.RuleOptions{})
	for _, name := range []string{"node-a", "node-b"} {
		dr := f.AddDroplet(fake.Droplet{Name: name, Region: lbRegion})
		e.nodes = append(e.nodes, lbNode(name, dr, map[string]string{v1.LabelTopologyRegion: lbRegion}))
	}
	return e
}

// lbNode is the Node polyccm initializes for droplet dr: its providerID
// and its addresses (which decide whether it can be a target).
func lbNode(name string, dr fake.Droplet, labels map[string]string) *v1.Node {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: v1.NodeSpec{ProviderID: digitalocean.ProviderID(dr.ID)}}
	add := func(kind v1.NodeAddressType, ip string) {
		if ip != "" {
			n.Status.Addresses = append(n.Status.Addresses, v1.NodeAddress{Type: kind, Address: ip})
		}
	}
	add(v1.NodeInternalIP, dr.PrivateIPv4)
	add(v1.NodeExternalIP, dr.PublicIPv4)
	add(v1.NodeExternalIP, dr.IPv6)
	return n
}

func lbTCP(port, nodePort int32) v1.ServicePort {
	return v1.ServicePort{Name: "tcp-" + strconv.Itoa(int(port)), Protocol: v1.ProtocolTCP, Port: port, NodePort: nodePort}
}

// service stores a LoadBalancer Service in the fake cluster and returns it.
func (e *lbEnv) service(ann map[string]string, ports ...v1.ServicePort) *v1.Service {
	e.t.Helper()
	if len(ports) == 0 {
		ports = []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80, NodePort: 30080}}
	}
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: types.UID(lbUID), Annotations: ann},
		Spec: v1.ServiceSpec{
			Type:                  v1.ServiceTypeLoadBalancer,
			Ports:                 ports,
			ExternalTrafficPolicy: v1.ServiceExternalTrafficPolicyCluster,
		},
	}
	got, err := e.kube.CoreV1().Services(svc.Namespace).Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

// reload is the Service as the cluster has it now, with the annotations
// the driver patched.
func (e *lbEnv) reload(svc *v1.Service) *v1.Service {
	e.t.Helper()
	got, err := e.kube.CoreV1().Services(svc.Namespace).Get(context.Background(), svc.Name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

// update replaces the Service in the cluster (as kubectl apply would) and
// returns it.
func (e *lbEnv) update(svc *v1.Service) *v1.Service {
	e.t.Helper()
	got, err := e.kube.CoreV1().Services(svc.Namespace).Update(context.Background(), svc, metav1.UpdateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

func lbCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (e *lbEnv) ensure(svc *v1.Service) (*v1.LoadBalancerStatus, error) {
	return e.lbs.EnsureLoadBalancer(lbCtx(e.t), "kubernetes", svc, e.nodes)
}

func (e *lbEnv) calls(endpoint string) int { return e.fake.Faults().CallCount(endpoint) }

// writes counts the calls that may change something in the cloud.
func (e *lbEnv) writes() int {
	n := 0
	for endpoint, c := range e.fake.Faults().Calls() {
		if !strings.HasPrefix(endpoint, "GET ") {
			n += c
		}
	}
	return n
}

// mustRetry asserts err is the RetryError of a load balancer still being
// built.
func mustRetry(t *testing.T, err error) {
	t.Helper()
	var re *api.RetryError
	if !errors.As(err, &re) {
		t.Fatalf("err = %T %v, want *api.RetryError", err, err)
	}
	if re.RetryAfter() <= 0 {
		t.Errorf("RetryAfter = %v", re.RetryAfter())
	}
}

// created runs the first Ensure, which creates the LB and must ask to be
// called again, and returns the LB and the Service as patched.
func (e *lbEnv) created(svc *v1.Service) (fake.LoadBalancer, *v1.Service) {
	e.t.Helper()
	_, err := e.ensure(svc)
	mustRetry(e.t, err)
	all := e.fake.LoadBalancers()
	if len(all) != 1 {
		e.t.Fatalf("%d load balancers after the first Ensure, want 1", len(all))
	}
	return all[0], e.reload(svc)
}

// active runs Ensure until it reports the ingress.
func (e *lbEnv) active(svc *v1.Service) *v1.LoadBalancerStatus {
	e.t.Helper()
	st, err := e.ensure(svc)
	if err != nil {
		e.t.Fatalf("Ensure: %v", err)
	}
	return st
}

func lbEvents(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case ev := <-rec.Events:
			out = append(out, ev)
		default:
			return out
		}
	}
}

func TestEnsureCreatesThenReportsIngress(t *testing.T) {
	e := newLBEnv(t, func(c *digitalocean.Config) { c.ClusterID = "3f1b2c4d-unit" })
	svc := e.service(nil)
	if got := e.lbs.GetLoadBalancerName(context.Background(), "kubernetes", svc); got != lbDefaultName {
		t.Errorf("GetLoadBalancerName = %q, want %q", got, lbDefaultName)
	}
	lb, svc := e.created(svc)

	if n := e.calls(lbPost); n != 1 {
		t.Errorf("%d creates, want 1", n)
	}
	if svc.Annotations[digitalocean.AnnLoadBalancerID] != lb.ID {
		t.Errorf("Service annotation %s = %q, want the LB ID %s", digitalocean.AnnLoadBalancerID, svc.Annotations[digitalocean.AnnLoadBalancerID], lb.ID)
	}
	ds := e.fake.Droplets()
	wantDroplets := []int{ds[0].ID, ds[1].ID}
	if lb.Name != lbDefaultName || lb.Region != lbRegion || !reflect.DeepEqual(lb.DropletIDs, wantDroplets) {
		t.Errorf("LB = %s in %s with droplets %v, want %s in %s with %v", lb.Name, lb.Region, lb.DropletIDs, lbDefaultName, lbRegion, wantDroplets)
	}
	if want := []fake.ForwardingRule{{EntryProtocol: "tcp", EntryPort: 80, TargetProtocol: "tcp", TargetPort: 30080}}; !reflect.DeepEqual(lb.ForwardingRules, want) {
		t.Errorf("rules = %+v", lb.ForwardingRules)
	}
	if hc := lb.HealthCheck; hc.Protocol != "http" || hc.Port != 10256 || hc.Path != "/healthz" {
		t.Errorf("health check = %+v", hc)
	}
	if want := []string{"k8s:3f1b2c4d-unit"}; !reflect.DeepEqual(lb.Tags, want) {
		t.Errorf("tags = %q, want %q (the DigitalOcean CCM's k8s:<clusterID>)", lb.Tags, want)
	}
	if got := svc.Annotations[digitalocean.AnnType]; got != "REGIONAL" {
		t.Errorf("Service annotation %s = %q, want the type written back", digitalocean.AnnType, got)
	}

	st := e.active(svc)
	got, _ := e.fake.LoadBalancer(lb.ID)
	// REGIONAL load balancers are DUALSTACK by default, as upstream's.
	if got.IP == "" || got.IPv6 == "" || !reflect.DeepEqual(st.Ingress, []v1.LoadBalancerIngress{{IP: got.IP}, {IP: got.IPv6}}) {
		t.Errorf("status = %+v, want ingress %s and %s", st, got.IP, got.IPv6)
	}
	// Steady state: nothing to change, no update.
	if _, err := e.ensure(svc); err != nil {
		t.Fatal(err)
	}
	if err := e.lbs.UpdateLoadBalancer(lbCtx(t), "kubernetes", svc, e.nodes); err != nil {
		t.Fatal(err)
	}
	if n := e.calls(lbPut); n != 0 {
		t.Errorf("%d updates of an unchanged LB, want 0", n)
	}
	if n := e.calls(lbPost); n != 1 {
		t.Errorf("%d creates, want 1", n)
	}
	gst, exists, err := e.lbs.GetLoadBalancer(lbCtx(t), "kubernetes", svc)
	if err != nil || !exists || !reflect.DeepEqual(gst, st) {
		t.Errorf("GetLoadBalancer = %+v, %v, %v; want %+v", gst, exists, err, st)
	}
	if ev := lbEvents(e.rec); len(ev) != 0 {
		t.Errorf("events on a valid Service: %q", ev)
	}
}

func TestEnsureWhileNewRetries(t *testing.T) {
	e := newLBEnv(t)
	e.fake.SetLoadBalancerActivationDelay(time.Hour)
	_, svc := e.created(e.service(nil))
	_, err := e.ensure(svc)
	mustRetry(t, err)
	if e.calls(lbPost) != 1 || e.calls(lbPut) != 0 {
		t.Errorf("creates %d, updates %d; want 1 and 0 while the LB is new", e.calls(lbPost), e.calls(lbPut))
	}
	st, exists, err := e.lbs.GetLoadBalancer(lbCtx(t), "kubernetes", svc)
	if err != nil || !exists || len(st.Ingress) != 0 {
		t.Errorf("GetLoadBalancer while new = %+v, %v, %v", st, exists, err)
	}
}

func TestEnsureSteadyStateWithEveryFeature(t *testing.T) {
	// Everything desiredLB can set must compare equal to what the API
	// returns, or every resync costs an update.
	cases := []struct {
		name  string
		ann   map[string]string
		ports []v1.ServicePort
		tweak func(*v1.Service)
	}{
		{name: "https, redirect, sticky, firewall, health check", ann: map[string]string{
			digitalocean.AnnTLSPorts: "443", digitalocean.AnnHTTPPorts: "80", digitalocean.AnnRedirectHTTPToHTTPS: "true",
			digitalocean.AnnStickyType: "cookies", digitalocean.AnnStickyCookieName: "s", digitalocean.AnnStickyCookieTTL: "60",
			digitalocean.AnnDenyRules: "ip:9.9.9.9", digitalocean.AnnAlgorithm: "least_connections",
			digitalocean.AnnOverrideHealthCheck: "true", digitalocean.AnnHealthCheckProtocol: "http", digitalocean.AnnHealthCheckPath: "/ready",
			digitalocean.AnnHealthCheckPort: "80", digitalocean.AnnHTTPIdleTimeout: "120", digitalocean.AnnSizeUnit: "2",
			digitalocean.AnnProxyProtocol: "true", digitalocean.AnnBackendKeepalive: "true", digitalocean.AnnDisableLetsEncryptDNS: "true",
		}, ports: []v1.ServicePort{lbTCP(80, 30080), lbTCP(443, 30443)}, tweak: func(s *v1.Service) {
			s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8", "192.168.0.0/16"}
		}},
		{name: "passthrough and UDP", ann: map[string]string{digitalocean.AnnTLSPassthrough: "true"},
			ports: []v1.ServicePort{lbTCP(443, 30443), {Name: "dns", Protocol: v1.ProtocolUDP, Port: 53, NodePort: 30053}}},
		{name: "tcp health check on a chosen port", ann: map[string]string{
			digitalocean.AnnOverrideHealthCheck: "true", digitalocean.AnnHealthCheckPort: "443",
		}, ports: []v1.ServicePort{lbTCP(80, 30080), lbTCP(443, 30443)}},
		{name: "size slug", ann: map[string]string{digitalocean.AnnSizeSlug: "lb-medium"}},
		{name: "internal", ann: map[string]string{digitalocean.AnnNetwork: "INTERNAL"}},
		{name: "REGIONAL_NETWORK", ann: map[string]string{digitalocean.AnnType: "REGIONAL_NETWORK"}},
		{name: "ETP Local", tweak: func(s *v1.Service) {
			s.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
			s.Spec.HealthCheckNodePort = 32100
		}},
		{name: "dual stack", tweak: func(s *v1.Service) { s.Spec.IPFamilies = []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol} }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newLBEnv(t)
			ann := map[string]string{}
			for k, v := range c.ann {
				ann[k] = v
			}
			if ann[digitalocean.AnnTLSPorts] != "" {
				ann[digitalocean.AnnCertificateID] = e.fake.AddCertificate("shop").ID
			}
			svc := e.service(ann, c.ports...)
			if c.tweak != nil {
				c.tweak(svc)
				svc = e.update(svc)
			}
			_, svc = e.created(svc)
			e.active(svc)
			e.active(svc)
			if n := e.calls(lbPut); n != 0 {
				lb := e.fake.LoadBalancers()[0]
				t.Errorf("%d updates of an unchanged LB, want 0; LB is %+v", n, lb)
			}
		})
	}
}

func TestEnsureUpdatesOnChange(t *testing.T) {
	e := newLBEnv(t)
	lb, svc := e.created(e.service(nil))
	e.active(svc)

	svc.Spec.Ports = append(svc.Spec.Ports, lbTCP(8080, 30081))
	svc = e.update(svc)
	e.active(svc)
	if n := e.calls(lbPut); n != 1 {
		t.Fatalf("%d updates after a port change, want 1", n)
	}
	got, _ := e.fake.LoadBalancer(lb.ID)
	want := []fake.ForwardingRule{
		{EntryProtocol: "tcp", EntryPort: 80, TargetProtocol: "tcp", TargetPort: 30080},
		{EntryProtocol: "tcp", EntryPort: 8080, TargetProtocol: "tcp", TargetPort: 30081},
	}
	if !reflect.DeepEqual(got.ForwardingRules, want) {
		t.Errorf("rules = %+v, want %+v", got.ForwardingRules, want)
	}
	e.active(svc)
	if n := e.calls(lbPut); n != 1 {
		t.Errorf("%d updates, want still 1", n)
	}

	// A new node is a new target.
	dr := e.fake.AddDroplet(fake.Droplet{Name: "node-c", Region: lbRegion})
	e.nodes = append(e.nodes, lbNode("node-c", dr, nil))
	logs := captureLogs(t)
	if err := e.lbs.UpdateLoadBalancer(lbCtx(t), "kubernetes", svc, e.nodes); err != nil {
		t.Fatal(err)
	}
	// The update says what it changes: the plan, field by field.
	if want := fmt.Sprintf("droplet_ids [%d %d] -> [%d %d %d]", e.nodeIDs()[0], e.nodeIDs()[1], e.nodeIDs()[0], e.nodeIDs()[1], dr.ID); !strings.Contains(logs.String(), want) {
		t.Errorf("update log does not name the change %q:\n%s", want, logs.String())
	}
	got, _ = e.fake.LoadBalancer(lb.ID)
	if n := e.calls(lbPut); n != 2 || !slices.Contains(got.DropletIDs, dr.ID) || len(got.DropletIDs) != 3 {
		t.Errorf("after a node was added: %d updates, droplets %v", n, got.DropletIDs)
	}
	if e.calls(lbPost) != 1 {
		t.Errorf("%d creates, want 1", e.calls(lbPost))
	}
}

func TestEnsureStatusForms(t *testing.T) {
	t.Run("dual stack", func(t *testing.T) {
		e := newLBEnv(t)
		svc := e.service(nil)
		svc.Spec.IPFamilies = []v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}
		lb, svc := e.created(e.update(svc))
		st := e.active(svc)
		got, _ := e.fake.LoadBalancer(lb.ID)
		if got.NetworkStack != fake.LBNetworkStackDualstack || got.IPv6 == "" {
			t.Fatalf("LB = %+v, want a dual stack one", got)
		}
		if want := []v1.LoadBalancerIngress{{IP: got.IP}, {IP: got.IPv6}}; !reflect.DeepEqual(st.Ingress, want) {
			t.Errorf("ingress = %+v, want %+v", st.Ingress, want)
		}
	})
	t.Run("hostname", func(t *testing.T) {
		e := newLBEnv(t)
		_, svc := e.created(e.service(map[string]string{digitalocean.AnnHostname: "shop.example.com"}))
		st := e.active(svc)
		if want := []v1.LoadBalancerIngress{{Hostname: "shop.example.com"}}; !reflect.DeepEqual(st.Ingress, want) {
			t.Errorf("ingress = %+v, want %+v", st.Ingress, want)
		}
	})
}

func TestFindByIDAnnotation(t *testing.T) {
	// An LB nothing marks is taken over only when the operator allows it
	// (TestUnmarkedLoadBalancerIsNotAdopted is the default).
	e := newLBEnvAdopting(t, true)
	// An LB with another name: found by the ID on the Service alone.
	lb := e.fake.AddLoadBalancer(fake.LoadBalancer{Name: "adopted", Region: lbRegion})
	svc := e.service(map[string]string{digitalocean.AnnLoadBalancerID: lb.ID})
	st, exists, err := e.lbs.GetLoadBalancer(lbCtx(t), "kubernetes", svc)
	if err != nil || !exists || !reflect.DeepEqual(st.Ingress, []v1.LoadBalancerIngress{{IP: lb.IP}}) {
		t.Fatalf("GetLoadBalancer = %+v, %v, %v", st, exists, err)
	}
	if e.calls(lbGet) != 1 || e.calls(lbList) != 0 {
		t.Errorf("gets %d, lists %d; want 1 and 0", e.calls(lbGet), e.calls(lbList))
	}
	// Ensure takes it over: renamed and reconfigured, not recreated.
	e.active(svc)
	got, _ := e.fake.LoadBalancer(lb.ID)
	if e.calls(lbPost) != 0 || e.calls(lbPut) != 1 || got.Name != lbDefaultName || len(e.fake.LoadBalancers()) != 1 {
		t.Errorf("creates %d, updates %d, name %q, %d LBs", e.calls(lbPost), e.calls(lbPut), got.Name, len(e.fake.LoadBalancers()))
	}
}

func TestFindByNameWhenRecordedLBIsGone(t *testing.T) {
	e := newLBEnv(t)
	lb := e.fake.AddLoadBalancer(fake.LoadBalancer{Name: lbDefaultName, Region: lbRegion})
	svc := e.service(map[string]string{digitalocean.AnnLoadBalancerID: "5f0c2a9e-0000-4000-8000-000000000000"})
	_, exists, err := e.lbs.GetLoadBalancer(lbCtx(t), "kubernetes", svc)
	if err != nil || !exists {
		t.Fatalf("GetLoadBalancer = %v, %v; want found by name", exists, err)
	}
	e.active(svc)
	if e.calls(lbPost) != 0 {
		t.Errorf("%d creates, want 0", e.calls(lbPost))
	}
	if got := e.reload(svc).Annotations[digitalocean.AnnLoadBalancerID]; got != lb.ID {
		t.Errorf("annotation = %q, want it corrected to %s", got, lb.ID)
	}
}

func TestFindByNameWhenAnnotationLost(t *testing.T) {
	e := newLBEnv(t)
	orig := e.service(nil)
	lb, _ := e.created(orig)
	// The service controller still has the Service without the annotation.
	e.active(orig)
	if e.calls(lbPost) != 1 || e.fake.LoadBalancerStats().Created != 1 {
		t.Errorf("creates %d, created %d; want 1", e.calls(lbPost), e.fake.LoadBalancerStats().Created)
	}
	if got := e.reload(orig).Annotations[digitalocean.AnnLoadBalancerID]; got != lb.ID {
		t.Errorf("annotation = %q, want %s", got, lb.ID)
	}
}

func TestTwoLBsWithTheServicesName(t *testing.T) {
	e := newLBEnv(t)
	a := e.fake.AddLoadBalancer(fake.LoadBalancer{Name: lbDefaultName, Region: lbRegion})
	b := e.fake.AddLoadBalancer(fake.LoadBalancer{Name: lbDefaultName, Region: lbRegion})
	svc := e.service(nil)
	_, err := e.ensure(svc)
	if err == nil || !strings.Contains(err.Error(), "2 load balancers are named "+lbDefaultName) ||
		!strings.Contains(err.Error(), a.ID) || !strings.Contains(err.Error(), b.ID) || !strings.Contains(err.Error(), digitalocean.AnnLoadBalancerID) {
		t.Errorf("Ensure = %v, want the ambiguity explained", err)
	}
	if _, _, err := e.lbs.GetLoadBalancer(lbCtx(t), "kubernetes", svc); err == nil {
		t.Error("GetLoadBalancer: want the ambiguity as an error")
	}
	if err := e.lbs.EnsureLoadBalancerDeleted(lbCtx(t), "kubernetes", svc); err == nil {
		t.Error("EnsureLoadBalancerDeleted: want the ambiguity as an error")
	}
	if e.calls(lbPost) != 0 || e.calls(lbPut) != 0 || e.calls(lbDelete) != 0 || len(e.fake.LoadBalancers()) != 2 {
		t.Errorf("creates %d, updates %d, deletes %d: want none", e.calls(lbPost), e.calls(lbPut), e.calls(lbDelete))
	}
}

func TestInvalidAnnotations(t *testing.T) {
	e := newLBEnv(t)
	svc := e.service(map[string]string{
		digitalocean.AnnProtocol:                             "https",
		digitalocean.AnnSizeUnit:                             "0",
		"service.beta.kubernetes.io/do-loadbalancer-protcol": "tcp",
	})
	_, err := e.ensure(svc)
	var inv *annotations.InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("Ensure = %T %v, want *annotations.InvalidError", err, err)
	}
	// Two problems; the misspelt key is a warning, not a problem.
	if inv.Service != "shop/web" || len(inv.Problems) != 2 || !strings.Contains(err.Error(), "nothing was changed in the cloud") {
		t.Errorf("error = %v", err)
	}
	ev := lbEvents(e.rec)
	if len(ev) != len(inv.Problems)+1 {
		t.Fatalf("events = %q, want one per problem and one warning", ev)
	}
	for _, x := range ev {
		if !strings.HasPrefix(x, "Warning "+annotations.Reason+" ") && !strings.HasPrefix(x, "Warning "+annotations.ReasonIgnored+" ") {
			t.Errorf("event %q", x)
		}
	}
	if !slices.ContainsFunc(ev, func(s string) bool { return strings.Contains(s, "did you mean "+digitalocean.AnnProtocol) }) {
		t.Errorf("no did-you-mean event in %q", ev)
	}
	// The node sync has no load balancer to update: it makes none.
	if err := e.lbs.UpdateLoadBalancer(lbCtx(t), "kubernetes", svc, e.nodes); err != nil {
		t.Errorf("UpdateLoadBalancer = %v", err)
	}
	// Reading which load balancer exists (its type is the Service's when
	// the Service names none) is all it costs: nothing is written.
	for endpoint, n := range e.fake.Faults().Calls() {
		if !strings.HasPrefix(endpoint, "GET ") {
			t.Errorf("%d calls of %s for an invalid Service, want reads only", n, endpoint)
		}
	}
}

func TestInvalidAnnotationsDoNotBlockDeletion(t *testing.T) {
	e := newLBEnv(t)
	lb, svc := e.created(e.service(nil))
	svc.Annotations[digitalocean.AnnSizeUnit] = "banana"
	if err := e.lbs.EnsureLoadBalancerDeleted(lbCtx(t), "kubernetes", e.update(svc)); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.fake.LoadBalancer(lb.ID); ok {
		t.Error("LB still exists")
	}
}

func TestCreateWithUnknownOutcomeIsNotRepeated(t *testing.T) {
	e := newLBEnv(t)
	e.fake.Faults().AddRule(faults.Rule{Match: lbPost, Status: 500, AfterCommit: true, Remaining: 1})
	svc := e.service(nil)
	_, err := e.ensure(svc)
	if err == nil {
		t.Fatal("Ensure: want the failed create reported")
	}
	var re *api.RetryError
	if errors.As(err, &re) {
		t.Errorf("a failed create is not a RetryError: %v", err)
	}
	if n := e.calls(lbPost); n != 1 {
		t.Fatalf("%d creates, want exactly 1: a create with an unknown outcome is not retried", n)
	}
	if n := len(e.fake.LoadBalancers()); n != 1 {
		t.Fatalf("%d LBs, want the one the lost create made", n)
	}
	// The next reconciliation finds it by name.
	st := e.active(svc)
	if e.calls(lbPost) != 1 || e.fake.LoadBalancerStats().Created != 1 || len(st.Ingress) != 2 {
		t.Errorf("creates %d, created %d, status %+v", e.calls(lbPost), e.fake.LoadBalancerStats().Created, st)
	}
	if got := e.reload(svc).Annotations[digitalocean.AnnLoadBalancerID]; got != e.fake.LoadBalancers()[0].ID {
		t.Errorf("annotation = %q", got)
	}
}

func TestCreateThrottledIsRetried(t *testing.T) {
	e := newLBEnv(t)
	e.fake.Faults().AddRule(faults.Rule{Match: lbPost, Status: 429, Remaining: 1})
	_, svc := e.created(e.service(nil))
	if n := e.calls(lbPost); n != 2 {
		t.Errorf("%d creates, want 2 (a throttled one, then the real one)", n)
	}
	if r := e.fake.Faults().Responses(lbPost); r[429] != 1 || r[202] != 1 {
		t.Errorf("responses = %v", r)
	}
	e.active(svc)
}

func TestImmutableChanges(t *testing.T) {
	for _, c := range []struct {
		name, key, value, want string
	}{
		{"network", digitalocean.AnnNetwork, "INTERNAL", "network EXTERNAL -> INTERNAL"},
		{"type", digitalocean.AnnType, "REGIONAL_NETWORK", "type REGIONAL -> REGIONAL_NETWORK"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newLBEnv(t)
			_, svc := e.created(e.service(nil))
			e.active(svc)
			svc.Annotations[c.key] = c.value
			_, err := e.ensure(e.update(svc))
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.key) {
				t.Errorf("Ensure = %v, want an error about %q", err, c.want)
			}
			if n := e.calls(lbPut); n != 0 {
				t.Errorf("%d updates, want 0", n)
			}
		})
	}
	t.Run("region", func(t *testing.T) {
		// An LB of the Service's name in another region than the nodes'.
		e := newLBEnv(t)
		e.fake.AddLoadBalancer(fake.LoadBalancer{Name: lbDefaultName, Region: "ams3"})
		_, err := e.ensure(e.service(nil))
		if err == nil || !strings.Contains(err.Error(), "region ams3 -> fra1") || e.calls(lbPut) != 0 {
			t.Errorf("Ensure = %v, %d updates; want the region change refused before any update", err, e.calls(lbPut))
		}
	})
	t.Run("vpc", func(t *testing.T) {
		const vpc = "5a4981aa-9653-4bd1-bef5-d6bff52042e4"
		e := newLBEnv(t, func(c *digitalocean.Config) { c.VPCID = vpc })
		e.fake.AddLoadBalancer(fake.LoadBalancer{Name: lbDefaultName, Region: lbRegion})
		_, err := e.ensure(e.service(nil))
		if err == nil || !strings.Contains(err.Error(), "-> "+vpc) || e.calls(lbPut) != 0 {
			t.Errorf("Ensure = %v, %d updates; want the VPC change refused before any update", err, e.calls(lbPut))
		}
	})
	t.Run("same VPC given explicitly", func(t *testing.T) {
		const vpc = "5a4981aa-9653-4bd1-bef5-d6bff52042e4"
		e := newLBEnv(t, func(c *digitalocean.Config) { c.VPCID = vpc })
		_, svc := e.created(e.service(nil))
		e.active(svc)
		e.active(svc)
		if lb := e.fake.LoadBalancers()[0]; lb.VPCUUID != vpc || e.calls(lbPut) != 0 {
			t.Errorf("VPC %s, %d updates", lb.VPCUUID, e.calls(lbPut))
		}
	})
}

func TestErroredLB(t *testing.T) {
	e := newLBEnv(t)
	lb, svc := e.created(e.service(nil))
	if err := e.fake.UpdateLoadBalancer(lb.ID, func(l *fake.LoadBalancer) { l.Status = fake.StatusErrored }); err != nil {
		t.Fatal(err)
	}
	_, err := e.ensure(svc)
	if err == nil || !strings.Contains(err.Error(), "errored") || !strings.Contains(err.Error(), lb.ID) {
		t.Errorf("Ensure = %v, want the errored state reported", err)
	}
	var re *api.RetryError
	if errors.As(err, &re) {
		t.Error("an errored LB is not a RetryError")
	}
	if e.calls(lbPut) != 0 || e.calls(lbPost) != 1 {
		t.Errorf("updates %d, creates %d", e.calls(lbPut), e.calls(lbPost))
	}
}

func TestDelete(t *testing.T) {
	e := newLBEnv(t)
	lb, svc := e.created(e.service(nil))
	if err := e.lbs.EnsureLoadBalancerDeleted(lbCtx(t), "kubernetes", svc); err != nil {
		t.Fatal(err)
	}
	if _, ok := e.fake.LoadBalancer(lb.ID); ok {
		t.Fatal("LB still exists")
	}
	// Already gone: done, whether found through the annotation or not.
	bare := svc.DeepCopy()
	delete(bare.Annotations, digitalocean.AnnLoadBalancerID)
	for _, s := range []*v1.Service{svc, bare} {
		if err := e.lbs.EnsureLoadBalancerDeleted(lbCtx(t), "kubernetes", s); err != nil {
			t.Errorf("deleting a gone LB: %v", err)
		}
		_, exists, err := e.lbs.GetLoadBalancer(lbCtx(t), "kubernetes", s)
		if err != nil || exists {
			t.Errorf("GetLoadBalancer after delete = %v, %v; want definitively absent", exists, err)
		}
	}
	if n := e.calls(lbDelete); n != 1 {
		t.Errorf("%d deletes, want 1", n)
	}
}

func TestDeleteWhenAPIFails(t *testing.T) {
	e := newLBEnv(t)
	lb, svc := e.created(e.service(nil))
	e.fake.Faults().AddRule(faults.Rule{Match: lbDelete, Status: 503})
	err := e.lbs.EnsureLoadBalancerDeleted(lbCtx(t), "kubernetes", svc)
	if err == nil || !strings.Contains(err.Error(), lb.ID) {
		t.Fatalf("EnsureLoadBalancerDeleted = %v, want an error so the finalizer stays", err)
	}
	if _, ok := e.fake.LoadBalancer(lb.ID); !ok {
		t.Error("the LB vanished")
	}
	if n := e.calls(lbDelete); n < 2 {
		t.Errorf("%d delete attempts, want retries", n)
	}
}

func TestLookupFailuresAreNeverNotFound(t *testing.T) {
	e := newLBEnv(t)
	lb, svc := e.created(e.service(nil))
	e.active(svc)
	lists := e.calls(lbList)
	rule := e.fake.Faults().AddRule(faults.Rule{Match: lbGet, Status: 500})

	if _, exists, err := e.lbs.GetLoadBalancer(lbCtx(t), "kubernetes", svc); err == nil || exists {
		t.Errorf("GetLoadBalancer = %v, %v; want an error", exists, err)
	}
	if _, err := e.ensure(svc); err == nil {
		t.Error("Ensure: want an error")
	}
	if err := e.lbs.EnsureLoadBalancerDeleted(lbCtx(t), "kubernetes", svc); err == nil {
		t.Error("EnsureLoadBalancerDeleted: want an error")
	}
	if e.calls(lbPost) != 1 || e.calls(lbList) != lists || e.calls(lbDelete) != 0 {
		t.Errorf("creates %d, lists %d, deletes %d: a failed GET must not fall back to anything", e.calls(lbPost), e.calls(lbList)-lists, e.calls(lbDelete))
	}
	if _, ok := e.fake.LoadBalancer(lb.ID); !ok {
		t.Error("the LB vanished")
	}

	// A failed listing (no annotation to go by) is no answer either.
	e.fake.Faults().RemoveRule(rule)
	e.fake.Faults().AddRule(faults.Rule{Match: lbList, Status: 500})
	fresh := svc.DeepCopy()
	fresh.Name, fresh.UID = "other", "11111111-2222-4333-8444-555555555555"
	delete(fresh.Annotations, digitalocean.AnnLoadBalancerID)
	if _, exists, err := e.lbs.GetLoadBalancer(lbCtx(t), "kubernetes", fresh); err == nil || exists {
		t.Errorf("GetLoadBalancer with a failed listing = %v, %v; want an error", exists, err)
	}
	if _, err := e.ensure(fresh); err == nil || e.calls(lbPost) != 1 {
		t.Errorf("Ensure with a failed listing = %v after %d creates; want an error and no create", err, e.calls(lbPost))
	}
}

func TestGetLoadBalancerAbsent(t *testing.T) {
	e := newLBEnv(t)
	st, exists, err := e.lbs.GetLoadBalancer(lbCtx(t), "kubernetes", e.service(nil))
	if st != nil || exists || err != nil {
		t.Errorf("GetLoadBalancer = %+v, %v, %v; want nil, false, nil", st, exists, err)
	}
}

func TestDisown(t *testing.T) {
	e := newLBEnv(t)
	lb, svc := e.created(e.service(nil))
	e.active(svc)
	svc.Annotations[digitalocean.AnnDisown] = "true"
	svc.Spec.Ports = append(svc.Spec.Ports, lbTCP(8080, 30081))
	svc = e.update(svc)

	st, err := e.ensure(svc)
	if err != nil || len(st.Ingress) != 2 {
		t.Errorf("Ensure on a disowned LB = %+v, %v; want its status", st, err)
	}
	if err := e.lbs.EnsureLoadBalancerDeleted(lbCtx(t), "kubernetes", svc); err != nil {
		t.Errorf("EnsureLoadBalancerDeleted = %v", err)
	}
	if e.calls(lbPut) != 0 || e.calls(lbDelete) != 0 || e.calls(lbPost) != 1 {
		t.Errorf("updates %d, deletes %d, creates %d: a disowned LB must be left alone", e.calls(lbPut), e.calls(lbDelete), e.calls(lbPost))
	}
	if _, ok := e.fake.LoadBalancer(lb.ID); !ok {
		t.Error("the disowned LB was deleted")
	}

	// Disowned with no LB at all: nothing is created.
	other := newLBEnv(t)
	st, err = other.ensure(other.service(map[string]string{digitalocean.AnnDisown: "true"}))
	if err != nil || st == nil || len(st.Ingress) != 0 || other.calls(lbPost) != 0 {
		t.Errorf("Ensure disowned, no LB = %+v, %v, %d creates", st, err, other.calls(lbPost))
	}
}

// A disown value that cannot be read might mean "true": deleting is refused
// (the finalizer stays) until the annotation is fixed.
func TestDisownUnreadableKeepsTheLB(t *testing.T) {
	e := newLBEnv(t)
	lb, svc := e.created(e.service(nil))
	e.active(svc)
	svc.Annotations[digitalocean.AnnDisown] = "yes"
	svc = e.update(svc)
	err := e.lbs.EnsureLoadBalancerDeleted(lbCtx(t), "kubernetes", svc)
	if err == nil || !strings.Contains(err.Error(), digitalocean.AnnDisown) {
		t.Errorf("EnsureLoadBalancerDeleted = %v; want an error naming %s", err, digitalocean.AnnDisown)
	}
	if _, ok := e.fake.LoadBalancer(lb.ID); !ok || e.calls(lbDelete) != 0 {
		t.Error("the LB was deleted although disown could not be read")
	}
}

func TestRegion(t *testing.T) {
	unlabelled := func(e *lbEnv) {
		for _, n := range e.nodes {
			n.Labels = nil
		}
	}
	// addNode adds a droplet and its node, labelled with region if given.
	addNode := func(e *lbEnv, name, region string) fake.Droplet {
		dr := e.fake.AddDroplet(fake.Droplet{Name: name, Region: cmpOrStr(region, lbRegion)})
		var labels map[string]string
		if region != "" {
			labels = map[string]string{v1.LabelTopologyRegion: region}
		}
		e.nodes = append(e.nodes, lbNode(name, dr, labels))
		return dr
	}
	t.Run("the nodes' region", func(t *testing.T) {
		e := newLBEnv(t)
		addNode(e, "node-unlabelled", "")
		lb, _ := e.created(e.service(nil))
		if lb.Region != lbRegion || len(lb.DropletIDs) != 3 {
			t.Errorf("region = %s, droplets %v; want %s and all three", lb.Region, lb.DropletIDs, lbRegion)
		}
	})
	t.Run("config region when no node has a label", func(t *testing.T) {
		e := newLBEnv(t, func(c *digitalocean.Config) { c.Region = "ams3" })
		unlabelled(e)
		lb, _ := e.created(e.service(nil))
		if lb.Region != "ams3" || len(lb.DropletIDs) != 2 {
			t.Errorf("region = %s, droplets %v; want ams3 and both", lb.Region, lb.DropletIDs)
		}
	})
	t.Run("config region set: nodes of other regions are not targets", func(t *testing.T) {
		e := newLBEnv(t, func(c *digitalocean.Config) { c.Region = lbRegion })
		other := addNode(e, "node-ams", "ams3")
		lb, _ := e.created(e.service(nil))
		if lb.Region != lbRegion || len(lb.DropletIDs) != 2 || slices.Contains(lb.DropletIDs, other.ID) {
			t.Errorf("region = %s, droplets %v; want %s without droplet %d", lb.Region, lb.DropletIDs, lbRegion, other.ID)
		}
	})
	t.Run("config region matches no node", func(t *testing.T) {
		e := newLBEnv(t, func(c *digitalocean.Config) { c.Region = "sgp1" })
		_, err := e.ensure(e.service(nil))
		if err == nil || !strings.Contains(err.Error(), "no node is in region sgp1") || e.calls(lbPost) != 0 {
			t.Errorf("Ensure = %v with %d creates; want a problem and no load balancer without targets", err, e.calls(lbPost))
		}
	})
	t.Run("nodes in several regions and no config region", func(t *testing.T) {
		e := newLBEnv(t)
		addNode(e, "node-ams", "ams3")
		_, err := e.ensure(e.service(nil))
		var inv *annotations.InvalidError
		if !errors.As(err, &inv) || !strings.Contains(err.Error(), "drivers.digitalocean.region") || !strings.Contains(err.Error(), "ams3, fra1") {
			t.Errorf("Ensure = %v, want a problem naming drivers.digitalocean.region and both regions", err)
		}
		if e.writes() != 0 {
			t.Errorf("API calls: %v", e.fake.Faults().Calls())
		}
	})
	for _, vpc := range []string{"", "5a4981aa-9653-4bd1-bef5-d6bff52042e4"} {
		t.Run("no region anywhere, vpc "+vpc, func(t *testing.T) {
			e := newLBEnv(t, func(c *digitalocean.Config) { c.VPCID = vpc })
			unlabelled(e)
			_, err := e.ensure(e.service(nil))
			var inv *annotations.InvalidError
			if !errors.As(err, &inv) || !strings.Contains(err.Error(), "drivers.digitalocean.region") {
				t.Errorf("Ensure = %v, want a problem naming drivers.digitalocean.region", err)
			}
			if e.writes() != 0 {
				t.Errorf("API calls: %v", e.fake.Faults().Calls())
			}
			if ev := lbEvents(e.rec); len(ev) != 1 || !strings.Contains(ev[0], "drivers.digitalocean.region") {
				t.Errorf("events = %q", ev)
			}
		})
	}
}

func cmpOrStr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func TestCertificateName(t *testing.T) {
	e := newLBEnv(t)
	cert := e.fake.AddCertificate("shop-cert")
	lb, _ := e.created(e.service(map[string]string{digitalocean.AnnCertificateName: "shop-cert"}, lbTCP(443, 30443)))
	want := []fake.ForwardingRule{{EntryProtocol: "https", EntryPort: 443, TargetProtocol: "http", TargetPort: 30443, CertificateID: cert.ID}}
	if !reflect.DeepEqual(lb.ForwardingRules, want) {
		t.Errorf("rules = %+v, want %+v", lb.ForwardingRules, want)
	}

	e2 := newLBEnv(t)
	_, err := e2.ensure(e2.service(map[string]string{digitalocean.AnnCertificateName: "missing"}, lbTCP(443, 30443)))
	var inv *annotations.InvalidError
	if !errors.As(err, &inv) || !strings.Contains(err.Error(), `no certificate named "missing"`) || e2.calls(lbPost) != 0 {
		t.Errorf("Ensure = %v, %d creates; want the unknown certificate reported", err, e2.calls(lbPost))
	}
}

func TestFindByNameAcrossPages(t *testing.T) {
	e := newLBEnv(t)
	for range 205 {
		e.fake.AddLoadBalancer(fake.LoadBalancer{Region: lbRegion})
	}
	lb := e.fake.AddLoadBalancer(fake.LoadBalancer{Name: lbDefaultName, Region: lbRegion})
	svc := e.service(nil)
	_, exists, err := e.lbs.GetLoadBalancer(lbCtx(t), "kubernetes", svc)
	if err != nil || !exists {
		t.Fatalf("GetLoadBalancer = %v, %v; want the LB on the second page", exists, err)
	}
	e.active(svc)
	if e.calls(lbPost) != 0 || e.calls(lbList) < 2 {
		t.Errorf("creates %d, list calls %d", e.calls(lbPost), e.calls(lbList))
	}
	if got := e.reload(svc).Annotations[digitalocean.AnnLoadBalancerID]; got != lb.ID {
		t.Errorf("annotation = %q, want %s", got, lb.ID)
	}
}

func TestCertificateNameAcrossPages(t *testing.T) {
	e := newLBEnv(t)
	for i := range 203 {
		e.fake.AddCertificate("other-" + strconv.Itoa(i))
	}
	cert := e.fake.AddCertificate("shop-cert")
	lb, _ := e.created(e.service(map[string]string{digitalocean.AnnCertificateName: "shop-cert"}, lbTCP(443, 30443)))
	if lb.ForwardingRules[0].CertificateID != cert.ID {
		t.Errorf("rules = %+v, want certificate %s", lb.ForwardingRules, cert.ID)
	}
}

// nodeIDs are the droplet IDs of the env's first nodes, in order.
func (e *lbEnv) nodeIDs() []int {
	var ids []int
	for _, n := range e.nodes {
		id, _ := strconv.Atoi(strings.TrimPrefix(n.Spec.ProviderID, "digitalocean://"))
		ids = append(ids, id)
	}
	return ids
}

// captureLogs sends klog's output to a buffer for the rest of the test.
func captureLogs(t *testing.T) *syncBuffer {
	var b syncBuffer
	klog.LogToStderr(false)
	klog.SetOutput(&b)
	t.Cleanup(func() {
		klog.SetOutput(os.Stderr)
		klog.LogToStderr(true)
	})
	return &b
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The node sync may hold an older copy of the Service than the last
// EnsureLoadBalancer: it changes the targets and nothing else.
func TestUpdateChangesTargetsOnly(t *testing.T) {
	e := newLBEnv(t)
	lb, svc := e.created(e.service(nil))
	e.active(svc)
	stale := svc.DeepCopy()
	svc.Spec.Ports = append(svc.Spec.Ports, lbTCP(8080, 30081))
	svc = e.update(svc)
	e.active(svc)

	dr := e.fake.AddDroplet(fake.Droplet{Name: "node-c", Region: lbRegion})
	e.nodes = append(e.nodes, lbNode("node-c", dr, nil))
	if err := e.lbs.UpdateLoadBalancer(lbCtx(t), "kubernetes", stale, e.nodes); err != nil {
		t.Fatal(err)
	}
	got, _ := e.fake.LoadBalancer(lb.ID)
	if len(got.ForwardingRules) != 2 {
		t.Errorf("rules after a node sync with a stale Service = %+v, want both ports kept", got.ForwardingRules)
	}
	if !slices.Contains(got.DropletIDs, dr.ID) {
		t.Errorf("droplets %v, want node-c's %d among them", got.DropletIDs, dr.ID)
	}
}

// A Service that sets health check keys without the override, which the
// DigitalOcean CCM ignores, gets its load balancer with kube-proxy's check
// and one Normal event per key, not a frozen Service.
func TestHealthCheckKeysWithoutOverride(t *testing.T) {
	e := newLBEnv(t)
	lb, _ := e.created(e.service(map[string]string{
		digitalocean.AnnHealthCheckPath:     "/ready",
		digitalocean.AnnHealthCheckProtocol: "https",
	}))
	if hc := lb.HealthCheck; hc.Protocol != "http" || hc.Port != 10256 || hc.Path != "/healthz" {
		t.Errorf("health check %+v, want kube-proxy's", hc)
	}
	var notes []string
	for _, ev := range lbEvents(e.rec) {
		if !strings.HasPrefix(ev, "Normal "+annotations.ReasonNotApplied+" ") {
			if strings.HasPrefix(ev, "Warning") {
				t.Errorf("event %q", ev)
			}
			continue
		}
		notes = append(notes, ev)
	}
	if len(notes) != 2 || !strings.Contains(notes[0]+notes[1], digitalocean.AnnHealthCheckPath) ||
		!strings.Contains(notes[0]+notes[1], digitalocean.AnnHealthCheckProtocol) {
		t.Errorf("notes %q, want one per key", notes)
	}
}
