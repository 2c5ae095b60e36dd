package hetzner_test

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fakehz "github.com/polyccm/polyccm/test/fakecloud/hetzner"
	"github.com/polyccm/polyccm/test/simcloud"
)

// The simulated cloud over this fake, as the e2e tests, demo and bench
// use it (an external test: simcloud imports this package).
func TestSimulatedCloud(t *testing.T) {
	if !slices.Contains(simcloud.Names(), "hetzner") {
		t.Fatalf("names = %v", simcloud.Names())
	}
	cl, err := simcloud.New("hetzner", simcloud.Options{ClusterName: "sim", Profile: &simcloud.Fast})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if cl.Title() != "Hetzner Cloud" || cl.ThrottleError() != "429 rate_limit_exceeded" || cl.Env("") != nil {
		t.Errorf("%s %s", cl.Title(), cl.ThrottleError())
	}
	dir := t.TempDir()
	block, err := cl.ConfigBlock(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`^token: \{file: (\S+)\}\napiURL: (http://127\.0\.0\.1:\d+/v1)\nnetwork: k8s\nloadBalancer:\n  location: fsn1$`).FindStringSubmatch(block)
	if m == nil {
		t.Fatalf("block = %q", block)
	}
	tok, err := os.ReadFile(m[1])
	if err != nil || len(strings.TrimSpace(string(tok))) != 64 {
		t.Fatalf("token file: %q %v", tok, err)
	}
	c := hcloud.NewClient(hcloud.WithEndpoint(m[2]), hcloud.WithToken(strings.TrimSpace(string(tok))))
	ctx := context.Background()

	nodes := cl.AddInstances(6)
	nodes = append(nodes, cl.AddInstances(3)...)
	empty := 0
	for i, n := range nodes {
		if n.Name != "node-0"+strconv.Itoa(i) {
			t.Errorf("node %d = %s", i, n.Name)
		}
		if n.ProviderID == "" {
			empty++
		} else if !strings.HasPrefix(n.ProviderID, "hcloud://") {
			t.Errorf("providerID = %s", n.ProviderID)
		}
	}
	if empty != 3 {
		t.Errorf("%d Nodes without providerID, want 3", empty)
	}
	servers, err := c.Server.All(ctx)
	if err != nil || len(servers) != 9 {
		t.Fatal(servers, err)
	}
	sv := servers[0]
	if sv.ServerType.Name != "cx22" || sv.Location.Name != "fsn1" || sv.PublicNet.IPv4.IP == nil || sv.PublicNet.IPv6.IP == nil ||
		len(sv.PrivateNet) != 1 || sv.PrivateNet[0].IP.String() != "10.0.0.2" {
		t.Errorf("server = %+v", sv)
	}
	if err := cl.PowerOff(1); err != nil {
		t.Fatal(err)
	}
	if err := cl.Remove(2); err != nil {
		t.Fatal(err)
	}
	if off, _, _ := c.Server.GetByID(ctx, servers[1].ID); off.Status != hcloud.ServerStatusOff {
		t.Errorf("powered off: %s", off.Status)
	}
	if gone, _, _ := c.Server.GetByID(ctx, servers[2].ID); gone != nil {
		t.Error("removed server is there")
	}

	for _, p := range cl.LBPorts() {
		if p.Protocol != v1.ProtocolTCP {
			t.Errorf("port %v", p)
		}
	}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{UID: "0b6a7f3e-6c1a-4a4e-9a53-1f2f5c2d9e11"}}
	res, _, err := c.LoadBalancer.Create(ctx, hcloud.LoadBalancerCreateOpts{Name: "a0b6a7f3e6c1a4a4e9a531f2f5c2d9e11"[:32],
		LoadBalancerType: &hcloud.LoadBalancerType{Name: "lb11"}, Location: &hcloud.Location{Name: "fsn1"},
		Services: []hcloud.LoadBalancerCreateOptsService{{Protocol: hcloud.LoadBalancerServiceProtocolTCP, ListenPort: hcloud.Ptr(80), DestinationPort: hcloud.Ptr(30080)}},
		Targets: []hcloud.LoadBalancerCreateOptsTarget{{Type: hcloud.LoadBalancerTargetTypeServer,
			Server: hcloud.LoadBalancerCreateOptsTargetServer{Server: &hcloud.Server{ID: servers[3].ID}}}}})
	if err != nil {
		t.Fatal(err)
	}
	want := strconv.FormatInt(res.LoadBalancer.ID, 10)
	if id := cl.LBID(svc); id != want {
		t.Errorf("LBID by name = %q, want %s", id, want)
	}
	svc.UID = "other"
	svc.Status.LoadBalancer.Ingress = []v1.LoadBalancerIngress{{IP: res.LoadBalancer.PublicNet.IPv4.IP.String()}}
	if id := cl.LBID(svc); id != want {
		t.Errorf("LBID by ingress = %q, want %s", id, want)
	}
	if targets, ok := cl.LBTargets(want); !ok || !slices.Equal(targets, []string{"node-03"}) {
		t.Errorf("targets = %v", targets)
	}
	if d, ok := cl.DescribeLB(want); !ok || !strings.Contains(d, "tcp:80->30080") {
		t.Errorf("describe = %q", d)
	}
	if _, _, err := c.Certificate.CreateCertificate(ctx, hcloud.CertificateCreateOpts{Name: "m", Type: hcloud.CertificateTypeManaged,
		DomainNames: []string{"x.example.com"}}); err != nil {
		t.Fatal(err)
	}
	if left := cl.LBLeftovers(); len(left) != 2 {
		t.Errorf("leftovers = %v", left)
	}
	if cl.Calls() == 0 || cl.Faults() == nil {
		t.Error("no calls counted")
	}

	// The realistic profile throttles with the project's bucket.
	p, err := simcloud.StartHetzner(simcloud.Options{ClusterName: "sim"}, strings.Repeat("t", 64))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Fake.Close()
	_, resp, err := p.User.Server.List(ctx, hcloud.ServerListOpts{})
	if err != nil || resp.Meta.Ratelimit.Limit != fakehz.DefaultRateLimit || resp.Meta.Ratelimit.Remaining != fakehz.DefaultRateLimit-1 {
		t.Errorf("realistic: %+v %v", resp.Meta.Ratelimit, err)
	}
}
