package digitalocean_test

import (
	"context"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/polyccm/polyccm/config/secret"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/drivers/digitalocean"
	fake "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

const (
	fwName = "k8s-public-access"
	fwTag  = "k8s-worker"
	fwGet  = "GET /v2/firewalls/{id}"
	fwList = "GET /v2/firewalls"
	fwPost = "POST /v2/firewalls"
	fwPut  = "PUT /v2/firewalls/{id}"
	// fwResync stands for the task's five minutes.
	fwResync = 20 * time.Millisecond
)

// The rules as fwRules spells them.
const (
	fwOutTCP  = "out tcp 0 allow addrs=0.0.0.0/0,::/0"
	fwOutUDP  = "out udp 0 allow addrs=0.0.0.0/0,::/0"
	fwOutICMP = "out icmp 0 allow addrs=0.0.0.0/0,::/0"
)

func fwWorld(proto string, port int) string {
	return fmt.Sprintf("in %s %d allow addrs=0.0.0.0/0,::/0", proto, port)
}

// fwEnv is the DigitalOcean cloud with a public-access firewall configured,
// against the fake, with a fake cluster and its Service informer, as the
// runner builds it.
type fwEnv struct {
	t      *testing.T
	fake   *fake.Server
	kube   *k8sfake.Clientset
	inf    informers.SharedInformerFactory
	rec    *record.FakeRecorder
	cloud  driver.Cloud
	events []string
	// resync is how often the task re-reads the firewall.
	resync time.Duration
}

func newFWEnv(t *testing.T) *fwEnv {
	t.Helper()
	f := fake.New(lbToken)
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	d, _ := driver.Default().Lookup(digitalocean.Name)
	api := cloudapi.New(cloudapi.Options{
		Driver: digitalocean.Name, Classify: d.Classify, QPS: 1000, Burst: 1000, Timeout: 10 * time.Second,
		MaxAttempts: 2, BaseBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond,
	})
	kube := k8sfake.NewClientset()
	e := &fwEnv{t: t, fake: f, kube: kube, inf: informers.NewSharedInformerFactory(kube, 0), rec: record.NewFakeRecorder(1000), resync: fwResync}
	cfg := &digitalocean.Config{
		Token: secret.Secret{Value: lbToken}, APIURL: f.URL(),
		Firewall: digitalocean.FirewallConfig{Name: fwName, Tags: []string{fwTag}},
	}
	cloud, err := d.New(cfg, driver.Deps{API: api, ClusterName: "unit test", ClientBuilder: lbClients{kube: kube}, Informers: e.inf, Recorder: e.rec})
	if err != nil {
		t.Fatal(err)
	}
	e.cloud = cloud
	return e
}

// start runs the firewall task until the test ends, with the informers
// started as the runner starts them.
func (e *fwEnv) start() {
	e.t.Helper()
	task, ok := digitalocean.FirewallTaskEvery(e.cloud, e.resync, 5*time.Millisecond)
	if !ok {
		e.t.Fatal("no firewall task with drivers.digitalocean.firewall.name set")
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.inf.Core().V1().Services().Informer() // the runner asks for it before starting them
	e.inf.Start(ctx.Done())
	done := make(chan struct{})
	go func() {
		defer close(done)
		task.Run(ctx)
	}()
	e.t.Cleanup(func() {
		cancel()
		<-done
		e.inf.Shutdown()
	})
}

func (e *fwEnv) calls(endpoint string) int { return e.fake.Faults().CallCount(endpoint) }

// eventually polls cond until it holds, failing the test after a deadline.
func (e *fwEnv) eventually(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// resyncs waits until the task has re-read the firewall n more times.
func (e *fwEnv) resyncs(n int) {
	e.t.Helper()
	from := e.calls(fwGet)
	e.eventually(fmt.Sprintf("%d resyncs", n), func() bool { return e.calls(fwGet) >= from+n })
}

// firewall is the one firewall named fwName; ok is false while there is
// none.
func (e *fwEnv) firewall() (fake.CloudFirewall, bool) {
	e.t.Helper()
	var match []fake.CloudFirewall
	for _, fw := range e.fake.Firewalls() {
		if fw.Name == fwName {
			match = append(match, fw)
		}
	}
	if len(match) > 1 {
		e.t.Fatalf("%d firewalls named %s", len(match), fwName)
	}
	if len(match) == 0 {
		return fake.CloudFirewall{}, false
	}
	return match[0], true
}

// rulesAre waits until the firewall has exactly these rules (fwRules).
func (e *fwEnv) rulesAre(want ...string) fake.CloudFirewall {
	e.t.Helper()
	slices.Sort(want)
	var got []string
	var fw fake.CloudFirewall
	deadline := time.Now().Add(10 * time.Second)
	for {
		var ok bool
		if fw, ok = e.firewall(); ok {
			if got = fwRules(fw); slices.Equal(got, want) {
				return fw
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("firewall rules:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// fwRules spells a firewall's rules, sorted, one string each.
func fwRules(fw fake.CloudFirewall) []string {
	var out []string
	spell := func(dir string, r fake.FirewallRule) string {
		s := fmt.Sprintf("%s %s %s %s", dir, r.Protocol, r.Ports, r.Action)
		t := r.Targets
		for _, part := range []struct {
			name string
			v    []string
		}{{"addrs", t.Addresses}, {"tags", t.Tags}, {"lbs", t.LoadBalancerUIDs}, {"k8s", t.KubernetesIDs}} {
			if len(part.v) > 0 {
				v := slices.Clone(part.v)
				slices.Sort(v)
				s += " " + part.name + "=" + strings.Join(v, ",")
			}
		}
		if len(t.DropletIDs) > 0 {
			s += fmt.Sprintf(" droplets=%v", t.DropletIDs)
		}
		return s
	}
	for _, r := range fw.InboundRules {
		out = append(out, spell("in", r))
	}
	for _, r := range fw.OutboundRules {
		out = append(out, spell("out", r))
	}
	slices.Sort(out)
	return out
}

// seen collects the events recorded so far and reports those with reason.
func (e *fwEnv) seen(reason string) []string {
	e.events = append(e.events, lbEvents(e.rec)...)
	var out []string
	for _, ev := range e.events {
		if strings.Contains(ev, " "+reason+" ") {
			out = append(out, ev)
		}
	}
	return out
}

type fwSvc struct {
	name string
	typ  v1.ServiceType
	ann  map[string]string
	etp  v1.ServiceExternalTrafficPolicy
	hcnp int32
	// ports: protocol, port, node port.
	ports []v1.ServicePort
}

func fwPort(proto v1.Protocol, port, nodePort int32) v1.ServicePort {
	return v1.ServicePort{Name: fmt.Sprintf("%s-%d", strings.ToLower(string(proto)), port), Protocol: proto, Port: port, NodePort: nodePort}
}

func (e *fwEnv) create(s fwSvc) *v1.Service {
	e.t.Helper()
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: s.name, UID: fwUID(s.name), Annotations: s.ann},
		Spec:       v1.ServiceSpec{Type: s.typ, Ports: s.ports, ExternalTrafficPolicy: s.etp, HealthCheckNodePort: s.hcnp},
	}
	got, err := e.kube.CoreV1().Services("shop").Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

// fwUID is the UID the Service named name gets, a UUID as the API server
// makes them.
func fwUID(name string) types.UID {
	return types.UID(fmt.Sprintf("%08x-0000-4000-8000-000000000000", crc32.ChecksumIEEE([]byte(name))))
}

// ownLB adds a REGIONAL_NETWORK load balancer named after the Service
// named name's UID, as polyccm and the DigitalOcean CCM name them: the
// Service's own, by the ownership rule.
func (e *fwEnv) ownLB(name string) fake.LoadBalancer {
	return e.fake.AddLoadBalancer(fake.LoadBalancer{Type: fake.LBTypeRegionalNetwork,
		Name: cloudprovider.DefaultLoadBalancerName(&v1.Service{ObjectMeta: metav1.ObjectMeta{UID: fwUID(name)}})})
}

func (e *fwEnv) change(svc *v1.Service, edit func(*v1.Service)) *v1.Service {
	e.t.Helper()
	svc = svc.DeepCopy()
	edit(svc)
	got, err := e.kube.CoreV1().Services(svc.Namespace).Update(context.Background(), svc, metav1.UpdateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return got
}

func (e *fwEnv) remove(svc *v1.Service) {
	e.t.Helper()
	if err := e.kube.CoreV1().Services(svc.Namespace).Delete(context.Background(), svc.Name, metav1.DeleteOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func nodePortSvc(name string, ann map[string]string, ports ...v1.ServicePort) fwSvc {
	return fwSvc{name: name, typ: v1.ServiceTypeNodePort, ann: ann, ports: ports}
}

func TestFirewallTaskOnlyWhenConfigured(t *testing.T) {
	d, _ := driver.Default().Lookup(digitalocean.Name)
	for _, fw := range []digitalocean.FirewallConfig{{}, {Name: fwName, Tags: []string{fwTag}}} {
		cloud, err := d.New(&digitalocean.Config{Token: secret.Secret{Value: lbToken}, APIURL: "http://127.0.0.1:1/", Firewall: fw}, driver.Deps{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, task := range cloud.(driver.TaskCloud).Tasks() {
			names = append(names, task.Name)
		}
		if got, want := slices.Contains(names, digitalocean.FirewallTaskName), fw.Name != ""; got != want {
			t.Errorf("firewall %q: tasks %q", fw.Name, names)
		}
	}
}

// From nothing: one firewall with exactly the DigitalOcean CCM's rules,
// then no write while nothing changes.
func TestFirewallCreatedWithTheServicesRules(t *testing.T) {
	e := newFWEnv(t)
	lb := e.ownLB("local")
	tcp, udp := v1.ProtocolTCP, v1.ProtocolUDP
	e.create(nodePortSvc("np", nil, fwPort(tcp, 80, 30080), fwPort(udp, 53, 30053), fwPort(v1.ProtocolSCTP, 9, 30009)))
	e.create(nodePortSvc("closed", map[string]string{digitalocean.AnnFirewallManaged: "false"}, fwPort(tcp, 80, 30100)))
	e.create(nodePortSvc("explicit", map[string]string{digitalocean.AnnFirewallManaged: "true"}, fwPort(tcp, 80, 30101)))
	// The default type is REGIONAL_NETWORK: the health check from the
	// load balancer, and the Service ports (not node ports) from anywhere.
	e.create(fwSvc{name: "local", typ: v1.ServiceTypeLoadBalancer, etp: v1.ServiceExternalTrafficPolicyLocal, hcnp: 32000,
		ann: map[string]string{digitalocean.AnnLoadBalancerID: lb.ID}, ports: []v1.ServicePort{fwPort(tcp, 443, 31443)}})
	// Not yet recorded: kube-proxy's port, from anywhere.
	e.create(fwSvc{name: "cluster", typ: v1.ServiceTypeLoadBalancer, etp: v1.ServiceExternalTrafficPolicyCluster,
		ports: []v1.ServicePort{fwPort(udp, 5000, 31500), fwPort(tcp, 443, 31444)}})
	// REGIONAL and INTERNAL load balancers reach the nodes otherwise.
	e.create(fwSvc{name: "regional", typ: v1.ServiceTypeLoadBalancer, ann: map[string]string{digitalocean.AnnType: "REGIONAL"}, ports: []v1.ServicePort{fwPort(tcp, 8080, 31080)}})
	e.create(fwSvc{name: "internal", typ: v1.ServiceTypeLoadBalancer, ann: map[string]string{digitalocean.AnnNetwork: "INTERNAL"}, ports: []v1.ServicePort{fwPort(tcp, 8081, 31081)}})
	e.create(fwSvc{name: "inside", typ: v1.ServiceTypeClusterIP, ports: []v1.ServicePort{fwPort(tcp, 8082, 0)}})
	e.start()

	fw := e.rulesAre(
		fwWorld("tcp", 30080), fwWorld("udp", 30053), fwWorld("tcp", 30101),
		"in tcp 32000 allow lbs="+lb.ID, fwWorld("tcp", 443),
		fwWorld("tcp", 10256), fwWorld("udp", 5000),
		fwOutTCP, fwOutUDP, fwOutICMP,
	)
	if !slices.Equal(fw.Tags, []string{fwTag}) || len(fw.DropletIDs) != 0 {
		t.Errorf("tags %q droplets %v", fw.Tags, fw.DropletIDs)
	}
	if e.calls(fwPost) != 1 || e.calls(fwPut) != 0 {
		t.Errorf("creates %d, updates %d; want 1 and 0", e.calls(fwPost), e.calls(fwPut))
	}

	// Steady state: resyncs re-read it, and a change that opens nothing
	// new writes nothing.
	e.resyncs(3)
	np, _ := e.kube.CoreV1().Services("shop").Get(context.Background(), "np", metav1.GetOptions{})
	e.change(np, func(s *v1.Service) { s.Labels = map[string]string{"tier": "web"} })
	e.resyncs(3)
	if e.calls(fwPost) != 1 || e.calls(fwPut) != 0 {
		t.Errorf("steady state: creates %d, updates %d; want 1 and 0", e.calls(fwPost), e.calls(fwPut))
	}
	if ev := e.seen(digitalocean.ReasonFirewallRuleRestored); len(ev) != 0 {
		t.Errorf("restore events without a change by hand: %q", ev)
	}
}

func TestFirewallFollowsServices(t *testing.T) {
	e := newFWEnv(t)
	e.start()
	e.rulesAre(fwOutTCP, fwOutUDP, fwOutICMP)

	svc := e.create(nodePortSvc("np", nil, fwPort(v1.ProtocolTCP, 80, 30080)))
	e.rulesAre(fwWorld("tcp", 30080), fwOutTCP, fwOutUDP, fwOutICMP)
	svc = e.change(svc, func(s *v1.Service) { s.Spec.Ports[0].NodePort = 30090 })
	e.rulesAre(fwWorld("tcp", 30090), fwOutTCP, fwOutUDP, fwOutICMP)
	svc = e.change(svc, func(s *v1.Service) { s.Annotations = map[string]string{digitalocean.AnnFirewallManaged: "false"} })
	e.rulesAre(fwOutTCP, fwOutUDP, fwOutICMP)
	svc = e.change(svc, func(s *v1.Service) { s.Annotations = nil })
	e.rulesAre(fwWorld("tcp", 30090), fwOutTCP, fwOutUDP, fwOutICMP)
	e.remove(svc)
	e.rulesAre(fwOutTCP, fwOutUDP, fwOutICMP)
	if e.calls(fwPost) != 1 {
		t.Errorf("%d creates, want 1", e.calls(fwPost))
	}
	if e.calls(fwPut) != 5 {
		t.Errorf("%d updates for 5 changes", e.calls(fwPut))
	}
}

// A firewall polyccm finds (a restart, or the DigitalOcean CCM's): the
// operator's rules, droplets and outbound rules stay; polyccm's stale rule
// goes; the tags become the configured ones.
func TestFirewallKeepsTheOperatorsRules(t *testing.T) {
	e := newFWEnv(t)
	dr := e.fake.AddDroplet(fake.Droplet{Name: "bastion"})
	lb := e.fake.AddLoadBalancer(fake.LoadBalancer{Type: fake.LBTypeRegionalNetwork})
	world := fake.FirewallTargets{Addresses: []string{"0.0.0.0/0", "::/0"}}
	operator := []fake.FirewallRule{
		{Protocol: "tcp", Ports: "22", Targets: fake.FirewallTargets{Addresses: []string{"10.0.0.0/8"}}},
		{Protocol: "udp", Ports: "1000-2000", Targets: world},
		{Protocol: "tcp", Ports: "30080", Targets: fake.FirewallTargets{Addresses: []string{"0.0.0.0/0", "::/0"}, Tags: []string{"office"}}},
		{Protocol: "tcp", Ports: "8443", Action: "deny", Targets: world},
		{Protocol: "tcp", Ports: "9000", Targets: fake.FirewallTargets{Addresses: []string{"0.0.0.0/0"}}},
		{Protocol: "tcp", Ports: "9001", Targets: fake.FirewallTargets{Addresses: []string{"0.0.0.0/0", "::/0", "192.0.2.1"}}},
		{Protocol: "tcp", Ports: "9002", Targets: fake.FirewallTargets{Addresses: []string{"0.0.0.0/0", "::/0"}, LoadBalancerUIDs: []string{lb.ID}}},
		{Protocol: "icmp", Targets: world},
	}
	seeded := e.fake.AddFirewall(fake.CloudFirewall{
		Name:         fwName,
		InboundRules: append(slices.Clone(operator), fake.FirewallRule{Protocol: "tcp", Ports: "31999", Targets: world}),
		OutboundRules: []fake.FirewallRule{
			{Protocol: "tcp", Ports: "25", Targets: fake.FirewallTargets{Addresses: []string{"10.0.0.0/8"}}},
			{Protocol: "udp", Ports: "all", Targets: world},
		},
		DropletIDs: []int{dr.ID},
		Tags:       []string{fwTag, "old-tag"},
	})
	e.create(nodePortSvc("np", nil, fwPort(v1.ProtocolTCP, 80, 30080)))
	e.start()

	fw := e.rulesAre(
		"in tcp 22 allow addrs=10.0.0.0/8", "in udp 1000-2000 allow addrs=0.0.0.0/0,::/0",
		"in tcp 30080 allow addrs=0.0.0.0/0,::/0 tags=office", "in tcp 8443 deny addrs=0.0.0.0/0,::/0",
		"in tcp 9000 allow addrs=0.0.0.0/0", "in tcp 9001 allow addrs=0.0.0.0/0,192.0.2.1,::/0",
		"in tcp 9002 allow addrs=0.0.0.0/0,::/0 lbs="+lb.ID, "in icmp 0 allow addrs=0.0.0.0/0,::/0",
		fwWorld("tcp", 30080),
		"out tcp 25 allow addrs=10.0.0.0/8", fwOutTCP, fwOutUDP, fwOutICMP,
	)
	if fw.ID != seeded.ID || !slices.Equal(fw.DropletIDs, []int{dr.ID}) || !slices.Equal(fw.Tags, []string{fwTag}) {
		t.Errorf("firewall %s droplets %v tags %q; want %s, [%d], [%s]", fw.ID, fw.DropletIDs, fw.Tags, seeded.ID, dr.ID, fwTag)
	}
	e.resyncs(3)
	if e.calls(fwPost) != 0 || e.calls(fwPut) != 1 {
		t.Errorf("creates %d, updates %d; want 0 and 1", e.calls(fwPost), e.calls(fwPut))
	}
	if ev := e.seen(digitalocean.ReasonFirewallRuleRestored); len(ev) != 0 {
		t.Errorf("rules never kept by this process reported as restored: %q", ev)
	}

	// Tags changed by hand are put back (the nodes' tags are the config's).
	if err := e.fake.EditFirewall(fw.ID, func(f *fake.CloudFirewall) { f.Tags = []string{"other"} }); err != nil {
		t.Fatal(err)
	}
	e.eventually("the configured tags back", func() bool {
		fw, _ := e.firewall()
		return slices.Equal(fw.Tags, []string{fwTag})
	})
}

func TestFirewallRuleRemovedByHandIsRestored(t *testing.T) {
	e := newFWEnv(t)
	logs := captureLogs(t)
	lb := e.ownLB("lb")
	e.create(nodePortSvc("np", nil, fwPort(v1.ProtocolTCP, 80, 30080)))
	e.create(fwSvc{name: "lb", typ: v1.ServiceTypeLoadBalancer, ann: map[string]string{digitalocean.AnnLoadBalancerID: lb.ID},
		ports: []v1.ServicePort{fwPort(v1.ProtocolTCP, 443, 31443)}})
	e.start()
	lbRules := []string{"in tcp 10256 allow lbs=" + lb.ID, fwWorld("tcp", 443)}
	fw := e.rulesAre(append([]string{fwWorld("tcp", 30080), fwOutTCP, fwOutUDP, fwOutICMP}, lbRules...)...)

	// By hand: polyccm's node port rule goes, an SSH rule comes.
	err := e.fake.EditFirewall(fw.ID, func(f *fake.CloudFirewall) {
		f.InboundRules = slices.DeleteFunc(f.InboundRules, func(r fake.FirewallRule) bool { return r.Ports == "30080" })
		f.InboundRules = append(f.InboundRules, fake.FirewallRule{Protocol: "tcp", Ports: "22", Targets: fake.FirewallTargets{Addresses: []string{"10.0.0.0/8"}}})
	})
	if err != nil {
		t.Fatal(err)
	}
	e.rulesAre(append([]string{fwWorld("tcp", 30080), "in tcp 22 allow addrs=10.0.0.0/8", fwOutTCP, fwOutUDP, fwOutICMP}, lbRules...)...)
	var ev []string
	e.eventually("a FirewallRuleRestored event", func() bool { ev = e.seen(digitalocean.ReasonFirewallRuleRestored); return len(ev) > 0 })
	if len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning ") || !strings.Contains(ev[0], "inbound tcp 30080") ||
		!strings.Contains(ev[0], "drivers.digitalocean.firewall.name") || !strings.Contains(ev[0], fw.ID) {
		t.Errorf("events = %q", ev)
	}
	if !strings.Contains(logs.String(), "Restored a firewall rule removed by hand") {
		t.Errorf("no log of the restore:\n%s", logs.String())
	}
	if e.calls(fwPost) != 1 || e.calls(fwPut) != 1 {
		t.Errorf("creates %d, updates %d; want 1 and 1", e.calls(fwPost), e.calls(fwPut))
	}
}

func TestFirewallDeletedByHandIsRecreated(t *testing.T) {
	e := newFWEnv(t)
	e.create(nodePortSvc("np", nil, fwPort(v1.ProtocolTCP, 80, 30080)))
	e.start()
	want := []string{fwWorld("tcp", 30080), fwOutTCP, fwOutUDP, fwOutICMP}
	old := e.rulesAre(want...)
	if !e.fake.RemoveFirewall(old.ID) {
		t.Fatal("no firewall to remove")
	}
	fw := e.rulesAre(want...)
	if fw.ID == old.ID || e.calls(fwPost) != 2 {
		t.Errorf("firewall %s after deleting %s; %d creates, want 2", fw.ID, old.ID, e.calls(fwPost))
	}
}

func TestFirewallInvalidManagedAnnotation(t *testing.T) {
	e := newFWEnv(t)
	svc := e.create(nodePortSvc("np", map[string]string{digitalocean.AnnFirewallManaged: "nope"}, fwPort(v1.ProtocolTCP, 80, 30080)))
	e.start()
	// Managed, as when the annotation is absent, and said once.
	e.rulesAre(fwWorld("tcp", 30080), fwOutTCP, fwOutUDP, fwOutICMP)
	e.resyncs(3)
	ev := e.seen(digitalocean.ReasonInvalidFirewallManaged)
	if len(ev) != 1 || !strings.Contains(ev[0], digitalocean.AnnFirewallManaged) || !strings.Contains(ev[0], `"nope"`) {
		t.Errorf("events = %q", ev)
	}
	e.change(svc, func(s *v1.Service) { s.Annotations[digitalocean.AnnFirewallManaged] = "false" })
	e.rulesAre(fwOutTCP, fwOutUDP, fwOutICMP)
}

// An update that fails is retried, and the operator's rule survives it.
func TestFirewallFailedUpdateIsRetried(t *testing.T) {
	e := newFWEnv(t)
	e.resync = time.Hour // only the task's retry can bring the change
	e.fake.AddFirewall(fake.CloudFirewall{
		Name:          fwName,
		Tags:          []string{fwTag},
		InboundRules:  []fake.FirewallRule{{Protocol: "tcp", Ports: "22", Targets: fake.FirewallTargets{Addresses: []string{"10.0.0.0/8"}}}},
		OutboundRules: []fake.FirewallRule{{Protocol: "icmp", Targets: fake.FirewallTargets{Addresses: []string{"0.0.0.0/0", "::/0"}}}},
	})
	e.start()
	e.rulesAre("in tcp 22 allow addrs=10.0.0.0/8", fwOutTCP, fwOutUDP, fwOutICMP)

	// More failures than one sync's attempts (2): the task itself retries.
	e.fake.Faults().AddRule(faults.Rule{Match: fwPut, Status: 500, Remaining: 3})
	e.create(nodePortSvc("np", nil, fwPort(v1.ProtocolTCP, 80, 30080)))
	e.rulesAre("in tcp 22 allow addrs=10.0.0.0/8", fwWorld("tcp", 30080), fwOutTCP, fwOutUDP, fwOutICMP)
	// The fake counts a response after sending it, so the last one may be
	// counted just after the rules show it.
	deadline := time.Now().Add(5 * time.Second)
	got := e.fake.Faults().Responses(fwPut)
	for (got[500] != 3 || got[200] != 2) && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
		got = e.fake.Faults().Responses(fwPut)
	}
	if got[500] != 3 || got[200] != 2 {
		t.Errorf("update answers %v, want 3 failures and 2 successes", got)
	}
	if e.calls(fwPost) != 0 {
		t.Errorf("%d creates of a firewall that exists", e.calls(fwPost))
	}
}

// A Service naming a load balancer that is gone must not block the rest.
func TestFirewallSkipsLoadBalancersThatAreGone(t *testing.T) {
	e := newFWEnv(t)
	e.create(fwSvc{name: "lb", typ: v1.ServiceTypeLoadBalancer, ann: map[string]string{digitalocean.AnnLoadBalancerID: "4de7ac8b-495b-4884-9a69-1050c6793cd6"},
		ports: []v1.ServicePort{fwPort(v1.ProtocolTCP, 443, 31443)}})
	e.create(nodePortSvc("np", nil, fwPort(v1.ProtocolTCP, 80, 30080)))
	e.start()
	e.rulesAre(fwWorld("tcp", 443), fwWorld("tcp", 30080), fwOutTCP, fwOutUDP, fwOutICMP)
	e.resyncs(3)
	if n := e.fake.Faults().Responses(fwPost)[422] + e.fake.Faults().Responses(fwPut)[422]; n != 0 {
		t.Errorf("%d writes refused", n)
	}
}

// Two firewalls with the configured name: polyccm cannot tell which is
// its own, and changes neither.
func TestFirewallAmbiguousNameIsNotWritten(t *testing.T) {
	e := newFWEnv(t)
	for range 2 {
		e.fake.AddFirewall(fake.CloudFirewall{Name: fwName, Tags: []string{fwTag}})
	}
	e.create(nodePortSvc("np", nil, fwPort(v1.ProtocolTCP, 80, 30080)))
	e.start()
	e.eventually("retries", func() bool { return e.calls(fwList) >= 3 })
	if e.calls(fwPost) != 0 || e.calls(fwPut) != 0 {
		t.Errorf("creates %d, updates %d with two firewalls named %s", e.calls(fwPost), e.calls(fwPut), fwName)
	}
}
