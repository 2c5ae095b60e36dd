package aws_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
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
	"github.com/polyccm/polyccm/core/annotations"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/instances"
	"github.com/polyccm/polyccm/core/loadbalancers"
	awsccm "github.com/polyccm/polyccm/drivers/aws"
	fakeaws "github.com/polyccm/polyccm/test/fakecloud/aws"
)

const (
	testKeyID  = "AKIAUNITTEST00000001"
	testSecret = "unitSecret/MustNeverShowInErrors+0123456"
	cluster    = "unit"
	zoneA      = "eu-west-1a"
	zoneB      = "eu-west-1b"
	zoneC      = "eu-west-1c"
	svcUID     = "5e1b6a3c-7d2f-4c8e-9a0b-1c2d3e4f5a6b"
	// nlbName is what the driver names the NLB of a Service with svcUID.
	nlbName = "a5e1b6a3c7d2f4c8e9a0b1c2d3e4f5a6"
)

var clusterTag = awsccm.TagClusterPrefix + cluster

// isolate keeps this machine's AWS setup out of the test: no shared
// files, no AWS_* variables.
func isolate(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "no-aws-config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "no-aws-credentials"))
	for _, v := range []string{
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
		"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE",
		"AWS_EC2_METADATA_SERVICE_ENDPOINT", "AWS_EC2_METADATA_DISABLED", "AWS_ENDPOINT_URL",
		"AWS_ENDPOINT_URL_EC2", "AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING_V2", "AWS_ENDPOINT_URL_STS",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
	} {
		t.Setenv(v, "")
	}
}

// world is a fake AWS account arranged like a cluster's: a VPC tagged
// for the cluster (with IPv6), public subnets (routed to an internet
// gateway) tagged for internet-facing NLBs and private ones for internal
// NLBs in zones a and b, another cluster's subnet in zone c, and a route
// table tagged for the cluster.
type world struct {
	t        *testing.T
	fake     *fakeaws.Server
	dir      string
	vpc      fakeaws.VPC
	public   map[string]fakeaws.Subnet // by zone
	private  map[string]fakeaws.Subnet // by zone
	spare    fakeaws.Subnet            // zone c, no role tags, Name "spare-c"
	table    fakeaws.RouteTable        // tagged for the cluster
	keyFile  string
	secretFn string
	// clusterName is the one the driver is built with; default cluster.
	clusterName string
	// clusterNameDefault builds it as if the config left clusterName
	// unset (driver.Deps.ClusterNameDefault).
	clusterNameDefault bool
}

type worldOpt func(*worldSettings)

type worldSettings struct {
	noTable bool
}

// withoutRouteTable leaves the VPC without a route table tagged for the
// cluster.
func withoutRouteTable(s *worldSettings) { s.noTable = true }

func newWorld(t *testing.T, opts ...worldOpt) *world {
	t.Helper()
	isolate(t)
	var ws worldSettings
	for _, o := range opts {
		o(&ws)
	}
	f := fakeaws.New(testKeyID, testSecret)
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	w := &world{t: t, fake: f, dir: t.TempDir(), clusterName: cluster, public: map[string]fakeaws.Subnet{}, private: map[string]fakeaws.Subnet{}}
	owned := map[string]string{clusterTag: awsccm.TagOwned}
	w.vpc = f.AddVPC(fakeaws.VPC{CIDRBlock: "10.0.0.0/16", IPv6CIDRBlocks: []string{"2a05:d018:ab:cd00::/56"}, Tags: owned})
	for k, z := range []string{zoneA, zoneB} {
		w.public[z] = f.AddSubnet(fakeaws.Subnet{
			VPCID: w.vpc.ID, AvailabilityZone: z, MapPublicIPOnLaunch: true,
			CIDRBlock:      fmt.Sprintf("10.0.%d.0/24", k+1),
			IPv6CIDRBlocks: []string{fmt.Sprintf("2a05:d018:ab:cd0%d::/64", k+1)},
			Tags:           map[string]string{clusterTag: awsccm.TagShared, awsccm.TagRoleELB: "1", "Name": "public-" + z[len(z)-1:]},
		})
		w.private[z] = f.AddSubnet(fakeaws.Subnet{
			VPCID: w.vpc.ID, AvailabilityZone: z,
			CIDRBlock: fmt.Sprintf("10.0.%d.0/24", k+11),
			Tags:      map[string]string{clusterTag: awsccm.TagShared, awsccm.TagRoleInternalELB: "1", "Name": "private-" + z[len(z)-1:]},
		})
	}
	// The public subnets route to the internet gateway, as the AWS CCM
	// wants of an internet-facing load balancer's subnets; the others use
	// the main table, which does not.
	igw := f.AddInternetGateway(w.vpc.ID, nil)
	f.AddRouteTable(fakeaws.RouteTable{VPCID: w.vpc.ID,
		Routes:       []fakeaws.Route{{DestinationCIDRBlock: "0.0.0.0/0", GatewayID: igw.ID}},
		Associations: []fakeaws.RouteTableAssociation{{SubnetID: w.public[zoneA].ID}, {SubnetID: w.public[zoneB].ID}},
		Tags:         map[string]string{"Name": "public"},
	})
	// Another cluster's: the AWS CCM would take a subnet with no cluster
	// tag at all.
	w.spare = f.AddSubnet(fakeaws.Subnet{VPCID: w.vpc.ID, AvailabilityZone: zoneC, CIDRBlock: "10.0.30.0/24",
		Tags: map[string]string{"Name": "spare-c", awsccm.TagClusterPrefix + "other": awsccm.TagShared}})
	if !ws.noTable {
		w.table = f.AddRouteTable(fakeaws.RouteTable{VPCID: w.vpc.ID, Tags: owned})
	}
	w.keyFile = w.writeFile("aws-key-id", testKeyID+"\n")
	w.secretFn = w.writeFile("aws-secret", testSecret+"\n")
	return w
}

func (w *world) writeFile(name, content string) string {
	w.t.Helper()
	p := filepath.Join(w.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		w.t.Fatal(err)
	}
	return p
}

// config is the drivers.aws subtree a cluster in this world would have:
// region, VPC, static keys as {file:} secrets and the fake's endpoints.
func (w *world) config() *awsccm.Config {
	return &awsccm.Config{
		Region:          fakeaws.DefaultRegion,
		VPCID:           w.vpc.ID,
		AccessKeyID:     secret.Secret{File: w.keyFile},
		SecretAccessKey: secret.Secret{File: w.secretFn},
		Endpoints: awsccm.Endpoints{
			EC2: w.fake.EC2URL(), ELB: w.fake.ELBURL(), ELBv2: w.fake.ELBv2URL(), STS: w.fake.STSURL(), IMDS: w.fake.IMDSURL(),
		},
		// The NLB tests predate Classic Load Balancers and keep their
		// intent: a Service without a type gets an NLB here.
		LoadBalancer: awsccm.LoadBalancerConfig{DefaultType: awsccm.TypeNLB},
	}
}

// env is the AWS driver built as the runner builds it, against a world.
type env struct {
	*world
	api       *cloudapi.Client
	kube      *k8sfake.Clientset
	informers informers.SharedInformerFactory
	rec       *record.FakeRecorder
	cloud     driver.Cloud
	lbs       cloudprovider.LoadBalancer
	routes    cloudprovider.Routes
	inst      *instances.Instances
}

func newEnv(t *testing.T, opts ...worldOpt) *env {
	t.Helper()
	w := newWorld(t, opts...)
	return w.env(w.config())
}

// env builds the driver with cfg through its registration, with a fast
// cloudapi client (retries after a millisecond or so).
func (w *world) env(cfg *awsccm.Config) *env {
	w.t.Helper()
	d, ok := driver.Default().Lookup(awsccm.Name)
	if !ok {
		w.t.Fatal("the aws driver is not registered")
	}
	e := &env{world: w, kube: k8sfake.NewClientset(), rec: record.NewFakeRecorder(1000)}
	e.api = cloudapi.New(cloudapi.Options{
		Driver:      awsccm.Name,
		Classify:    d.Classify,
		QPS:         10000,
		Burst:       10000,
		Timeout:     10 * time.Second,
		BaseBackoff: time.Millisecond,
		MaxBackoff:  5 * time.Millisecond,
		AuthHint:    d.CredentialsHint,
	})
	e.informers = informers.NewSharedInformerFactory(e.kube, 0)
	cloud, err := d.New(cfg, driver.Deps{
		ClusterName:        w.clusterName,
		ClusterNameDefault: w.clusterNameDefault,
		API:                e.api,
		Informers:          e.informers,
		Recorder:           e.rec,
	})
	if err != nil {
		w.t.Fatalf("New: %v", err)
	}
	e.cloud = cloud
	e.lbs = loadbalancers.Rules(cloud.(driver.LoadBalancerCloud).LoadBalancer(), loadbalancers.RuleOptions{})
	e.routes = cloud.(driver.RouteCloud).Routes()
	e.inst = instances.New(cloud.Instances(), instances.Options{Driver: awsccm.Name, BatchWindow: time.Millisecond, Timeout: 20 * time.Second})
	return e
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// instance adds a running instance in a private subnet of zone.
func (w *world) instance(zone string) fakeaws.Instance {
	return w.fake.AddInstance(fakeaws.Instance{SubnetID: w.private[zone].ID, InstanceType: "m6i.large"})
}

// node is a Node for in, named by its private DNS name, with labels.
func node(in fakeaws.Instance, labels map[string]string) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: in.PrivateDNSName, Labels: labels},
		Spec:       v1.NodeSpec{ProviderID: awsccm.ProviderID(in.AvailabilityZone, in.ID)},
	}
}

// addNode puts a Node into the informer the routes read.
func (e *env) addNode(n *v1.Node) {
	e.t.Helper()
	if err := e.informers.Core().V1().Nodes().Informer().GetIndexer().Add(n); err != nil {
		e.t.Fatal(err)
	}
}

// nodes adds n running instances alternating between zones a and b, and
// returns their Nodes.
func (e *env) nodes(n int) ([]*v1.Node, []fakeaws.Instance) {
	var nodes []*v1.Node
	var ins []fakeaws.Instance
	for i := range n {
		in := e.instance([]string{zoneA, zoneB}[i%2])
		ins = append(ins, in)
		nodes = append(nodes, node(in, nil))
	}
	return nodes, ins
}

func tcp(name string, port, nodePort int32) v1.ServicePort {
	return v1.ServicePort{Name: name, Protocol: v1.ProtocolTCP, Port: port, NodePort: nodePort}
}

func udp(name string, port, nodePort int32) v1.ServicePort {
	return v1.ServicePort{Name: name, Protocol: v1.ProtocolUDP, Port: port, NodePort: nodePort}
}

// service is the LoadBalancer Service shop/web with svcUID.
func service(ann map[string]string, ports ...v1.ServicePort) *v1.Service {
	if len(ports) == 0 {
		ports = []v1.ServicePort{tcp("http", 80, 30080)}
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

// ensure runs EnsureLoadBalancer and fails the test on an error.
func (e *env) ensure(svc *v1.Service, nodes []*v1.Node) *v1.LoadBalancerStatus {
	e.t.Helper()
	st, err := e.lbs.EnsureLoadBalancer(ctx(e.t), cluster, svc, nodes)
	if err != nil {
		e.t.Fatalf("EnsureLoadBalancer: %v", err)
	}
	return st
}

// nlbNamed returns the fake's load balancer with that name.
func (w *world) nlbNamed(name string) (fakeaws.LoadBalancer, bool) {
	for _, lb := range w.fake.LoadBalancers() {
		if lb.Name == name {
			return lb, true
		}
	}
	return fakeaws.LoadBalancer{}, false
}

// nlb returns the NLB of the shop/web Service, failing if there is none.
func (w *world) nlb() fakeaws.LoadBalancer {
	w.t.Helper()
	lb, ok := w.nlbNamed(nlbName)
	if !ok {
		w.t.Fatalf("no load balancer %s; have %v", nlbName, w.fake.LoadBalancers())
	}
	return lb
}

// listeners maps the listeners of lbARN by port.
func (w *world) listeners(lbARN string) map[int32]fakeaws.Listener {
	out := map[int32]fakeaws.Listener{}
	for _, l := range w.fake.Listeners() {
		if l.LoadBalancerARN == lbARN {
			out[l.Port] = l
		}
	}
	return out
}

// targetGroup returns the target group a listener forwards to.
func (w *world) targetGroup(l fakeaws.Listener) fakeaws.TargetGroup {
	w.t.Helper()
	if len(l.DefaultActions) != 1 {
		w.t.Fatalf("listener %d has actions %+v, want one forward", l.Port, l.DefaultActions)
	}
	tg, ok := w.fake.TargetGroup(l.DefaultActions[0].TargetGroupARN)
	if !ok {
		w.t.Fatalf("listener %d forwards to missing target group %s", l.Port, l.DefaultActions[0].TargetGroupARN)
	}
	return tg
}

// targetIDs are the instance IDs registered in tg, sorted.
func targetIDs(tg fakeaws.TargetGroup) []string {
	var out []string
	for _, t := range tg.Targets {
		out = append(out, t.ID)
	}
	sort.Strings(out)
	return out
}

// securityGroup returns the NLB's security group.
func (w *world) securityGroup(lb fakeaws.LoadBalancer) fakeaws.SecurityGroup {
	w.t.Helper()
	if len(lb.SecurityGroups) != 1 {
		w.t.Fatalf("load balancer has security groups %v, want one", lb.SecurityGroups)
	}
	sg, ok := w.fake.SecurityGroup(lb.SecurityGroups[0])
	if !ok {
		w.t.Fatalf("security group %s is missing", lb.SecurityGroups[0])
	}
	return sg
}

// ingress flattens a security group's ingress into "proto/port/cidr".
func ingress(sg fakeaws.SecurityGroup) []string {
	var out []string
	for _, p := range sg.Ingress {
		ports := strconv.Itoa(int(p.FromPort))
		if p.ToPort != p.FromPort {
			ports += "-" + strconv.Itoa(int(p.ToPort))
		}
		for _, r := range p.IPRanges {
			out = append(out, p.Protocol+"/"+ports+"/"+r.CIDR)
		}
		for _, r := range p.IPv6Ranges {
			out = append(out, p.Protocol+"/"+ports+"/"+r.CIDR)
		}
		for _, g := range p.Groups {
			out = append(out, p.Protocol+"/"+ports+"/"+g.GroupID)
		}
	}
	sort.Strings(out)
	return out
}

// live is how many of each resource kind exist now.
func (w *world) live() map[string]int {
	st := w.fake.Stats()
	return map[string]int{
		"loadBalancers": st.LoadBalancers.Live, "targetGroups": st.TargetGroups.Live,
		"listeners": st.Listeners.Live, "securityGroups": st.SecurityGroups.Live,
	}
}

func (w *world) wantLive(want map[string]int) {
	w.t.Helper()
	got := w.live()
	for k, n := range got {
		if want[k] != n {
			w.t.Errorf("live resources %v, want %v", got, want)
			return
		}
	}
}

// calls sums the calls to the fake's endpoints containing part.
func (w *world) calls(part string) int {
	n := 0
	for ep, c := range w.fake.Faults().Calls() {
		if strings.Contains(ep, part) {
			n += c
		}
	}
	return n
}

// mutating counts the calls that change something.
func (w *world) mutating() int {
	n := 0
	for ep, c := range w.fake.Faults().Calls() {
		_, action, _ := strings.Cut(ep, " ")
		if !strings.HasPrefix(action, "Describe") && !strings.HasPrefix(action, "GET") && !strings.HasPrefix(action, "PUT") && ep != "sts AssumeRole" {
			n += c
		}
	}
	return n
}

// invalid asserts err is an annotations.InvalidError with a problem at key
// whose message contains every fragment, and returns it.
func invalid(t *testing.T, err error, key string, fragments ...string) *annotations.InvalidError {
	t.Helper()
	var inv *annotations.InvalidError
	if !errors.As(err, &inv) {
		t.Fatalf("err = %v (%T), want an InvalidError at %s", err, err, key)
	}
	for _, p := range inv.Problems {
		if p.Key != key {
			continue
		}
		ok := true
		for _, f := range fragments {
			if !strings.Contains(p.Msg, f) {
				ok = false
			}
		}
		if ok {
			return inv
		}
	}
	t.Fatalf("no problem at %s containing %q in %v", key, fragments, inv.Problems)
	return nil
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

func sortedSubnets(lb fakeaws.LoadBalancer) []string {
	var out []string
	for _, s := range lb.Subnets {
		out = append(out, s.SubnetID)
	}
	slices.Sort(out)
	return out
}

func sorted(s ...string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
