package hetzner

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
)

// wait waits for an action the test expects to succeed.
func wait(t *testing.T, c *hcloud.Client, a *hcloud.Action, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Action.WaitFor(context.Background(), a); err != nil {
		t.Fatal(err)
	}
}

func TestLoadBalancerLifecycle(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	s.SetActionDelay(5 * time.Millisecond)
	s.SetLoadBalancerCreateDelay(20 * time.Millisecond)
	network, servers := cluster(s, 3)
	res, _, err := c.LoadBalancer.Create(ctx, hcloud.LoadBalancerCreateOpts{Name: "a1234", NetworkZone: hcloud.NetworkZoneEUCentral,
		LoadBalancerType: &hcloud.LoadBalancerType{Name: "lb11"}, Labels: map[string]string{"hcloud-ccm/service-uid": "1234"},
		Network: &hcloud.Network{ID: network}, Algorithm: &hcloud.LoadBalancerAlgorithm{Type: hcloud.LoadBalancerAlgorithmTypeLeastConnections}})
	wait(t, c, res.Action, err)
	lb, _, err := c.LoadBalancer.GetByID(ctx, res.LoadBalancer.ID)
	if err != nil || lb.Location.Name != "fsn1" || lb.LoadBalancerType.MaxTargets != 25 || !lb.PublicNet.Enabled ||
		lb.PublicNet.IPv4.IP.String() != "203.0.113.1" || lb.PublicNet.IPv6.IP == nil || len(lb.PrivateNet) != 1 ||
		lb.PrivateNet[0].IP.String() != "10.0.0.5" || lb.Algorithm.Type != hcloud.LoadBalancerAlgorithmTypeLeastConnections {
		t.Fatalf("lb = %+v %v", lb, err)
	}
	found, err := c.LoadBalancer.AllWithOpts(ctx, hcloud.LoadBalancerListOpts{ListOpts: hcloud.ListOpts{LabelSelector: "hcloud-ccm/service-uid=1234"}})
	if err != nil || len(found) != 1 {
		t.Errorf("by label: %v %v", found, err)
	}

	a, _, err := c.LoadBalancer.AddService(ctx, lb, hcloud.LoadBalancerAddServiceOpts{Protocol: hcloud.LoadBalancerServiceProtocolTCP,
		ListenPort: hcloud.Ptr(80), DestinationPort: hcloud.Ptr(30080), Proxyprotocol: hcloud.Ptr(true)})
	wait(t, c, a, err)
	for _, id := range servers[:2] {
		a, _, err = c.LoadBalancer.AddServerTarget(ctx, lb, hcloud.LoadBalancerAddServerTargetOpts{Server: &hcloud.Server{ID: id}, UsePrivateIP: hcloud.Ptr(true)})
		wait(t, c, a, err)
	}
	a, _, err = c.LoadBalancer.UpdateService(ctx, lb, 80, hcloud.LoadBalancerUpdateServiceOpts{DestinationPort: hcloud.Ptr(30081),
		HealthCheck: &hcloud.LoadBalancerUpdateServiceOptsHealthCheck{Interval: hcloud.Ptr(5 * time.Second)}})
	wait(t, c, a, err)
	a, _, err = c.LoadBalancer.RemoveServerTarget(ctx, lb, &hcloud.Server{ID: servers[1]})
	wait(t, c, a, err)
	a, _, err = c.LoadBalancer.ChangeType(ctx, lb, hcloud.LoadBalancerChangeTypeOpts{LoadBalancerType: &hcloud.LoadBalancerType{Name: "lb21"}})
	wait(t, c, a, err)
	a, _, err = c.LoadBalancer.ChangeDNSPtr(ctx, lb, lb.PublicNet.IPv4.IP.String(), hcloud.Ptr("lb.example.com"))
	wait(t, c, a, err)
	a, _, err = c.LoadBalancer.DisablePublicInterface(ctx, lb)
	wait(t, c, a, err)

	lb, _, _ = c.LoadBalancer.GetByID(ctx, lb.ID)
	svc := lb.Services[0]
	if len(lb.Services) != 1 || svc.DestinationPort != 30081 || !svc.Proxyprotocol || svc.HealthCheck.Port != 30080 ||
		svc.HealthCheck.Interval != 5*time.Second || svc.HealthCheck.Timeout != 10*time.Second || svc.HealthCheck.Retries != 3 {
		t.Errorf("service = %+v", svc)
	}
	if len(lb.Targets) != 1 || lb.Targets[0].Server.Server.ID != servers[0] || !lb.Targets[0].UsePrivateIP ||
		lb.Targets[0].HealthStatus[0].Status != hcloud.LoadBalancerTargetHealthStatusStatusHealthy {
		t.Errorf("targets = %+v", lb.Targets)
	}
	if lb.LoadBalancerType.Name != "lb21" || lb.PublicNet.IPv4.DNSPtr != "lb.example.com" || lb.PublicNet.Enabled {
		t.Errorf("lb = %+v", lb)
	}
	sv, _, _ := c.Server.GetByID(ctx, servers[0])
	if len(sv.LoadBalancers) != 1 || sv.LoadBalancers[0].ID != lb.ID {
		t.Errorf("server's load balancers = %v", sv.LoadBalancers)
	}
	n, _, _ := c.Network.GetByID(ctx, network)
	if len(n.LoadBalancers) != 1 {
		t.Errorf("network's load balancers = %v", n.LoadBalancers)
	}

	updated, _, err := c.LoadBalancer.Update(ctx, lb, hcloud.LoadBalancerUpdateOpts{Name: "renamed", Labels: map[string]string{"a": "b"}})
	if err != nil || updated.Name != "renamed" || updated.Labels["a"] != "b" {
		t.Errorf("update = %+v %v", updated, err)
	}
	del, _, err := c.LoadBalancer.DeleteWithResult(ctx, lb)
	wait(t, c, del.Action, err)
	if gone, _, err := c.LoadBalancer.GetByID(ctx, lb.ID); gone != nil || err != nil {
		t.Errorf("deleted: %v %v", gone, err)
	}
	// Its private address is free again.
	if id := s.AddServer(ServerSpec{Network: network, PrivateIP: "10.0.0.5"}); id == 0 {
		t.Error("no server")
	}
}

func TestLoadBalancerValidation(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	network, servers := cluster(s, 1)
	public := s.AddServer(ServerSpec{})
	v6only := s.AddServer(ServerSpec{NoIPv4: true})
	res, _, err := c.LoadBalancer.Create(ctx, hcloud.LoadBalancerCreateOpts{Name: "lb", Location: &hcloud.Location{Name: "fsn1"},
		LoadBalancerType: &hcloud.LoadBalancerType{Name: "lb11"}})
	if err != nil {
		t.Fatal(err)
	}
	lb := res.LoadBalancer
	check := func(what string, err error, code hcloud.ErrorCode, status int) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: no error", what)
			return
		}
		apiErr(t, err, code, status)
	}
	_, _, err = c.LoadBalancer.Create(ctx, hcloud.LoadBalancerCreateOpts{Name: "lb", Location: &hcloud.Location{Name: "fsn1"},
		LoadBalancerType: &hcloud.LoadBalancerType{Name: "lb11"}})
	check("same name", err, hcloud.ErrorCodeUniquenessError, http.StatusConflict)
	_, _, err = c.LoadBalancer.Create(ctx, hcloud.LoadBalancerCreateOpts{Name: "x", Location: &hcloud.Location{Name: "fsn1"},
		LoadBalancerType: &hcloud.LoadBalancerType{Name: "lb99"}})
	check("unknown type", err, hcloud.ErrorCodeInvalidInput, http.StatusBadRequest)

	tcp := func(port int) hcloud.LoadBalancerAddServiceOpts {
		return hcloud.LoadBalancerAddServiceOpts{Protocol: hcloud.LoadBalancerServiceProtocolTCP, ListenPort: hcloud.Ptr(port), DestinationPort: hcloud.Ptr(30000 + port)}
	}
	for port := 1; port <= 5; port++ {
		if _, _, err := c.LoadBalancer.AddService(ctx, lb, tcp(port)); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err = c.LoadBalancer.AddService(ctx, lb, tcp(1))
	check("same port", err, hcloud.ErrorCodeSourcePortAlreadyUsed, http.StatusConflict)
	_, _, err = c.LoadBalancer.AddService(ctx, lb, tcp(6))
	check("sixth service on lb11", err, hcloud.ErrorCodeResourceLimitExceeded, http.StatusForbidden)
	_, _, err = c.LoadBalancer.AddService(ctx, lb, hcloud.LoadBalancerAddServiceOpts{Protocol: hcloud.LoadBalancerServiceProtocolHTTPS})
	check("https without certificate", err, hcloud.ErrorCodeInvalidInput, http.StatusBadRequest)
	_, _, err = c.LoadBalancer.UpdateService(ctx, lb, 99, hcloud.LoadBalancerUpdateServiceOpts{DestinationPort: hcloud.Ptr(1)})
	check("update a missing service", err, hcloud.ErrorCodeNotFound, http.StatusNotFound)

	_, _, err = c.LoadBalancer.AddServerTarget(ctx, lb, hcloud.LoadBalancerAddServerTargetOpts{Server: &hcloud.Server{ID: servers[0]}, UsePrivateIP: hcloud.Ptr(true)})
	check("private target without network", err, hcloud.ErrorCodeLoadBalancerNotAttachedToNetwork, http.StatusUnprocessableEntity)
	_, _, err = c.LoadBalancer.AddServerTarget(ctx, lb, hcloud.LoadBalancerAddServerTargetOpts{Server: &hcloud.Server{ID: v6only}})
	check("public target without IPv4", err, hcloud.ErrorCodeMissingIPv4, http.StatusUnprocessableEntity)
	if _, _, err := c.LoadBalancer.AddServerTarget(ctx, lb, hcloud.LoadBalancerAddServerTargetOpts{Server: &hcloud.Server{ID: public}}); err != nil {
		t.Fatal(err)
	}
	_, _, err = c.LoadBalancer.AddServerTarget(ctx, lb, hcloud.LoadBalancerAddServerTargetOpts{Server: &hcloud.Server{ID: public}})
	check("same target", err, hcloud.ErrorCodeTargetAlreadyDefined, http.StatusConflict)
	sv, _ := s.Server(public)
	_, _, err = c.LoadBalancer.AddIPTarget(ctx, lb, hcloud.LoadBalancerAddIPTargetOpts{IP: net.ParseIP(sv.PublicIPv4)})
	check("a cloud server's IP", err, hcloud.ErrorCodeCloudResourceIPNotAllowed, http.StatusUnprocessableEntity)
	_, _, err = c.LoadBalancer.DisablePublicInterface(ctx, lb)
	check("private only without network", err, hcloud.ErrorCodeLoadBalancerNotAttachedToNetwork, http.StatusUnprocessableEntity)
	_, _, err = c.LoadBalancer.ChangeType(ctx, lb, hcloud.LoadBalancerChangeTypeOpts{LoadBalancerType: &hcloud.LoadBalancerType{Name: "lb11"}})
	if err != nil {
		t.Errorf("same type: %v", err)
	}

	if _, _, err := c.LoadBalancer.AttachToNetwork(ctx, lb, hcloud.LoadBalancerAttachToNetworkOpts{Network: &hcloud.Network{ID: network},
		IP: net.ParseIP("10.0.0.2")}); err == nil {
		t.Error("attached at a server's address")
	} else {
		apiErr(t, err, hcloud.ErrorCodeIPNotAvailable, http.StatusConflict)
	}
	if _, _, err := c.LoadBalancer.AttachToNetwork(ctx, lb, hcloud.LoadBalancerAttachToNetworkOpts{Network: &hcloud.Network{ID: network}}); err != nil {
		t.Fatal(err)
	}
	_, _, err = c.LoadBalancer.AttachToNetwork(ctx, lb, hcloud.LoadBalancerAttachToNetworkOpts{Network: &hcloud.Network{ID: network}})
	check("attached twice", err, hcloud.ErrorCodeLoadBalancerAlreadyAttached, http.StatusConflict)
	_, _, err = c.LoadBalancer.DisablePublicInterface(ctx, lb)
	check("public targets", err, hcloud.ErrorCodeTargetsWithoutUsePrivateIP, http.StatusUnprocessableEntity)
	other := s.AddServer(ServerSpec{})
	_, _, err = c.LoadBalancer.AddServerTarget(ctx, lb, hcloud.LoadBalancerAddServerTargetOpts{Server: &hcloud.Server{ID: other}, UsePrivateIP: hcloud.Ptr(true)})
	check("server off the network", err, hcloud.ErrorCodeServerNotAttachedToNetwork, http.StatusUnprocessableEntity)

	if _, _, err := c.LoadBalancer.ChangeProtection(ctx, lb, hcloud.LoadBalancerChangeProtectionOpts{Delete: hcloud.Ptr(true)}); err != nil {
		t.Fatal(err)
	}
	_, _, err = c.LoadBalancer.DeleteWithResult(ctx, lb)
	check("protected", err, hcloud.ErrorCodeProtected, http.StatusForbidden)
}

func TestLoadBalancerTargets(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	clk := newClock(s)
	s.SetTargetHealthDelay(10 * time.Second)
	network, servers := cluster(s, 3)
	s.AddServer(ServerSpec{Labels: map[string]string{"pool": "a"}, Network: network})
	id, err := s.CreateLoadBalancerDirect(LoadBalancer{Name: "legacy", Network: network,
		Services: []Service{{Protocol: ProtocolTCP, ListenPort: 443, DestinationPort: 30443}},
		Targets:  []Target{{Type: TargetServer, ServerID: servers[0], UsePrivateIP: true}, {Type: TargetServer, ServerID: servers[1]}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateLoadBalancerDirect(LoadBalancer{Name: "legacy"}); err == nil {
		t.Error("same name twice")
	}
	lb, _, _ := c.LoadBalancer.GetByID(ctx, id)
	a, _, err := c.LoadBalancer.AddServerTarget(ctx, lb, hcloud.LoadBalancerAddServerTargetOpts{Server: &hcloud.Server{ID: servers[2]}})
	wait(t, c, a, err)
	a, _, err = c.LoadBalancer.AddLabelSelectorTarget(ctx, lb, hcloud.LoadBalancerAddLabelSelectorTargetOpts{Selector: "pool=a", UsePrivateIP: hcloud.Ptr(true)})
	wait(t, c, a, err)
	health := func() []string {
		lb, _, _ := c.LoadBalancer.GetByID(ctx, id)
		var out []string
		for _, tg := range lb.Targets {
			if tg.Type == hcloud.LoadBalancerTargetTypeLabelSelector {
				tg = tg.Targets[0]
			}
			out = append(out, string(tg.HealthStatus[0].Status))
		}
		return out
	}
	if got := health(); len(got) != 4 || got[0] != "healthy" || got[2] != "unknown" || got[3] != "unknown" {
		t.Errorf("health = %v", got)
	}
	clk.add(10 * time.Second)
	_ = s.SetServerStatus(servers[1], StatusOff)
	if got := health(); got[0] != "healthy" || got[1] != "unhealthy" || got[2] != "healthy" || got[3] != "healthy" {
		t.Errorf("health = %v", got)
	}
	// A deleted server leaves every load balancer.
	if err := s.DeleteServer(servers[0]); err != nil {
		t.Fatal(err)
	}
	got, _ := s.LoadBalancer(id)
	if len(got.Targets) != 3 || got.Targets[0].ServerID != servers[1] {
		t.Errorf("targets = %+v", got.Targets)
	}
}
