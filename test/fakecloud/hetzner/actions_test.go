package hetzner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
)

func TestActions(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	clk := newClock(s)
	s.SetActionDelay(10 * time.Second)
	id, _ := cluster(s, 1)
	a, _, err := c.Network.AddRoute(ctx, &hcloud.Network{ID: id}, hcloud.NetworkAddRouteOpts{Route: netRoute("10.244.0.0/24", "10.0.0.2")})
	if err != nil {
		t.Fatal(err)
	}
	clk.add(4 * time.Second)
	got, _, err := c.Action.GetByID(ctx, a.ID)
	if err != nil || got.Status != hcloud.ActionStatusRunning || got.Progress != 40 || !got.Finished.IsZero() {
		t.Fatalf("running action = %+v %v", got, err)
	}
	clk.add(6 * time.Second)
	// The list WaitFor polls: /v1/actions?id=...
	list, err := c.Action.AllWithOpts(ctx, hcloud.ActionListOpts{ID: []int64{a.ID, a.ID + 1000}})
	if err != nil || len(list) != 1 || list[0].Status != hcloud.ActionStatusSuccess || list[0].Progress != 100 ||
		!list[0].Finished.Equal(got.Started.Add(10*time.Second)) {
		t.Fatalf("listed = %+v %v", list, err)
	}
	// Per resource, the same action.
	for _, path := range []string{fmt.Sprintf("/v1/networks/%d/actions/%d", id, a.ID), fmt.Sprintf("/v1/networks/actions/%d", a.ID)} {
		r, b := raw(t, s, "GET", path, "")
		act := doc(t, b)["action"].(map[string]any)
		if r.StatusCode != 200 || act["command"] != "add_route" || act["status"] != "success" {
			t.Errorf("%s: %d %s", path, r.StatusCode, b)
		}
		sameKeys(t, "action", act, "id", "command", "status", "progress", "started", "finished", "resources", "error")
	}
	forNet, err := c.Network.Action.AllFor(ctx, &hcloud.Network{ID: id}, hcloud.ActionListOpts{})
	if err != nil || len(forNet) != 1 {
		t.Errorf("network actions = %v %v", forNet, err)
	}
	r, _ := raw(t, s, "GET", fmt.Sprintf("/v1/servers/1/actions/%d", a.ID), "")
	if r.StatusCode != 404 {
		t.Errorf("another resource's action: %d", r.StatusCode)
	}
	if missing, _, err := c.Action.GetByID(ctx, 1); missing != nil || err != nil {
		t.Errorf("missing action: %v %v", missing, err)
	}
}

func TestWaitForAndFailedActions(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	s.SetActionDelay(15 * time.Millisecond)
	_, servers := cluster(s, 1)
	res, _, err := c.LoadBalancer.Create(ctx, hcloud.LoadBalancerCreateOpts{Name: "lb",
		LoadBalancerType: &hcloud.LoadBalancerType{Name: "lb11"}, NetworkZone: hcloud.NetworkZoneEUCentral})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Action.WaitFor(ctx, res.Action); err != nil {
		t.Fatal(err)
	}
	s.FailNextAction("add_target", "", "")
	a, _, err := c.LoadBalancer.AddServerTarget(ctx, res.LoadBalancer, hcloud.LoadBalancerAddServerTargetOpts{Server: &hcloud.Server{ID: servers[0]}})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Action.WaitFor(ctx, a)
	var ae hcloud.ActionError
	if !errors.As(err, &ae) || ae.Code != "action_failed" {
		t.Fatalf("WaitFor = %v", err)
	}
	if lb, _ := s.LoadBalancer(res.LoadBalancer.ID); len(lb.Targets) != 0 {
		t.Errorf("a failed add_target added %v", lb.Targets)
	}
	// The next one works.
	a, _, err = c.LoadBalancer.AddServerTarget(ctx, res.LoadBalancer, hcloud.LoadBalancerAddServerTargetOpts{Server: &hcloud.Server{ID: servers[0]}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Action.WaitFor(ctx, a); err != nil {
		t.Fatal(err)
	}
	if lb, _ := s.LoadBalancer(res.LoadBalancer.ID); len(lb.Targets) != 1 {
		t.Errorf("targets = %v", lb.Targets)
	}
}

func TestLocked(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	clk := newClock(s)
	s.SetLoadBalancerCreateDelay(time.Minute)
	res, _, err := c.LoadBalancer.Create(ctx, hcloud.LoadBalancerCreateOpts{Name: "lb",
		LoadBalancerType: &hcloud.LoadBalancerType{Name: "lb11"}, Location: &hcloud.Location{Name: "nbg1"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Action.Status != hcloud.ActionStatusRunning || res.Action.Command != "create_load_balancer" {
		t.Errorf("create action = %+v", res.Action)
	}
	// The new load balancer can be read but not changed.
	if lb, _, err := c.LoadBalancer.GetByID(ctx, res.LoadBalancer.ID); err != nil || lb == nil || lb.PublicNet.IPv4.IP == nil {
		t.Fatalf("new load balancer: %v %v", lb, err)
	}
	_, _, err = c.LoadBalancer.AddService(ctx, res.LoadBalancer, hcloud.LoadBalancerAddServiceOpts{
		Protocol: hcloud.LoadBalancerServiceProtocolTCP, ListenPort: hcloud.Ptr(80), DestinationPort: hcloud.Ptr(30080)})
	apiErr(t, err, hcloud.ErrorCodeLocked, http.StatusLocked)
	_, _, err = c.LoadBalancer.DeleteWithResult(ctx, res.LoadBalancer)
	apiErr(t, err, hcloud.ErrorCodeLocked, http.StatusLocked)
	clk.add(time.Minute)
	if _, _, err = c.LoadBalancer.AddService(ctx, res.LoadBalancer, hcloud.LoadBalancerAddServiceOpts{
		Protocol: hcloud.LoadBalancerServiceProtocolTCP, ListenPort: hcloud.Ptr(80), DestinationPort: hcloud.Ptr(30080)}); err != nil {
		t.Fatal(err)
	}
}
