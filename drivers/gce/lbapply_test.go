package gce_test

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/loadbalancers"
	"github.com/polyccm/polyccm/drivers/gce"
)

// snapshot is every load balancer resource the fake holds, by kind/name,
// as JSON, to tell what a plan changed.
func (e *env) snapshot() map[string]string {
	out := map[string]string{}
	add := func(kind, name string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			e.t.Fatal(err)
		}
		out[kind+"/"+name] = string(b)
	}
	for _, r := range e.fake.ForwardingRules() {
		add("forwardingRules", r.Name, r)
	}
	for _, r := range e.fake.TargetPools() {
		add("targetPools", r.Name, r)
	}
	for _, r := range e.fake.HTTPHealthChecks() {
		add("httpHealthChecks", r.Name, r)
	}
	for _, r := range e.fake.HealthChecks() {
		add("healthChecks", r.Name, r)
	}
	for _, r := range e.fake.Firewalls() {
		add("firewalls", r.Name, r)
	}
	for _, r := range e.fake.BackendServices() {
		add("backendServices", r.Name, r)
	}
	for _, r := range e.fake.InstanceGroups() {
		add("instanceGroups", lastSeg(r.Zone)+"/"+r.Name, r)
	}
	for _, r := range e.fake.Addresses() {
		add("addresses", r.Name, r)
	}
	return out
}

// planKinds are the fake's collections for the plan's kinds.
var planKinds = map[string]string{
	"forwarding rule": "forwardingRules", "target pool": "targetPools", "HTTP health check": "httpHealthChecks",
	"health check": "healthChecks", "firewall rule": "firewalls", "backend service": "backendServices", "instance group": "instanceGroups",
	"address": "addresses",
}

// TestPlanAppliedIsWhatChanged: planning a port change calls nothing that
// changes GCE, and applying the plan changes exactly the resources it
// lists, as it lists them (a replaced rule deleted once and created once);
// after it, the load balancer is converged.
func TestPlanAppliedIsWhatChanged(t *testing.T) {
	t.Parallel()
	for _, ann := range []map[string]string{nil, internalLB} {
		name := "external"
		if ann != nil {
			name = "internal"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			nodes := append(e.nodes("a", 2, testZone), e.nodes("b", 1, testZone2)...)
			svc := service(ann)
			e.mustEnsure(svc, nodes)

			svc.Spec.Ports = []v1.ServicePort{tcp(80, 30080), tcp(8080, 30880)}
			before, mutations, stats := e.snapshot(), e.mutations(), e.fake.Stats()
			plan, err := gce.PlanOf(ctx(t), e.cloud, svc, nodes)
			if err != nil {
				t.Fatal(err)
			}
			if d := e.mutations() - mutations; d != 0 {
				t.Fatalf("planning made %d changing calls: %v", d, e.fake.Faults().Calls())
			}
			if plan.Empty() {
				t.Fatal("no plan for a port change")
			}
			if err := plan.Apply(ctx(t)); err != nil {
				t.Fatalf("applying %s: %v", plan.String(), err)
			}
			after := e.snapshot()

			planned := map[string]bool{}
			created, deleted := map[string]int{}, map[string]int{}
			for _, c := range plan.Changes {
				kind, ok := planKinds[c.Kind]
				if !ok {
					t.Fatalf("plan change of unknown kind: %s", c)
				}
				planned[kind+"/"+c.Name] = true
				switch c.Action {
				case loadbalancers.Create:
					created[kind]++
				case loadbalancers.Delete:
					deleted[kind]++
				}
			}
			changed := map[string]bool{}
			for k := range maps.Keys(before) {
				if before[k] != after[k] {
					changed[k] = true
				}
			}
			for k := range maps.Keys(after) {
				if before[k] != after[k] {
					changed[k] = true
				}
			}
			// The address reserved while the rule is replaced is released
			// by the same plan: planned, but no change that stays.
			delete(planned, "addresses/"+e.lbName(svc))
			if got, want := slices.Sorted(maps.Keys(changed)), slices.Sorted(maps.Keys(planned)); !slices.Equal(got, want) {
				t.Errorf("the fake changed %v; the plan (%s) lists %v", got, plan.String(), want)
			}
			base := e.lbName(svc)
			if !planned["forwardingRules/"+base] || !planned["firewalls/k8s-fw-"+base] {
				t.Errorf("plan %s, want the rule and the firewall changed", plan.String())
			}
			now := e.fake.Stats()
			for _, k := range planKinds {
				if c, d := now[k].Created-stats[k].Created, now[k].Deleted-stats[k].Deleted; c != created[k] || d != deleted[k] {
					t.Errorf("%s: %d created and %d deleted, the plan says %d and %d", k, c, d, created[k], deleted[k])
				}
			}

			mutations = e.mutations()
			e.mustEnsure(svc, nodes)
			if d := e.mutations() - mutations; d != 0 {
				t.Errorf("%d changing calls after the plan was applied: %v", d, e.fake.Faults().Calls())
			}
		})
	}
}
