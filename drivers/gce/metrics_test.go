package gce_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"

	"github.com/polyccm/polyccm/drivers/gce"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

// l4Gauge reads one of cloud-provider-gcp's L4 counts from what /metrics
// serves; a series not served reads 0.
func l4Gauge(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) == len(labels) && testutil.LabelsMatch(m, labels) {
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

// l4Counts is every count a test here changes.
func l4Counts(t *testing.T) map[string]float64 {
	out := map[string]float64{}
	for _, f := range []string{"L4ILBService", "L4ILBGlobalAccess", "L4ILBCustomSubnet", "L4ILBInSuccess", "L4ILBInError"} {
		out[f] = l4Gauge(t, "number_of_l4_ilbs", map[string]string{"feature": f})
	}
	for _, s := range []string{"Success", "Error"} {
		out["netlb "+s] = l4Gauge(t, "number_of_l4_netlbs", map[string]string{"status": s, "deny_firewall": ""})
	}
	return out
}

func namedService(name string, ann map[string]string) *v1.Service {
	svc := service(ann)
	svc.Name, svc.UID = name, types.UID("uid-"+name)
	return svc
}

// The L4 counts follow each Service's last full sync, as
// cloud-provider-gcp's do. Not parallel: they count the process's
// Services, and parallel tests wait until this one is done.
func TestL4LoadBalancerCounts(t *testing.T) {
	e := newEnv(t)
	nodes := e.nodes("l4", 2, testZone)
	e.addNodes(nodes...)
	before := l4Counts(t)
	delta := func(want map[string]float64) {
		t.Helper()
		now := l4Counts(t)
		for k := range now {
			if got := now[k] - before[k]; got != want[k] {
				t.Errorf("%s changed by %v, want %v (counts %v)", k, got, want[k], now)
			}
		}
	}

	ilb := namedService("l4-int", map[string]string{gce.AnnLoadBalancerType: "Internal", gce.AnnAllowGlobalAccess: "true"})
	ext := namedService("l4-ext", nil)
	e.mustEnsure(ilb, nodes)
	e.mustEnsure(ext, nodes)
	delta(map[string]float64{"L4ILBService": 1, "L4ILBInSuccess": 1, "L4ILBGlobalAccess": 1, "netlb Success": 1})

	// A failed sync puts the Service in error, its features uncounted.
	rule := e.fake.Faults().AddRule(faults.Rule{Match: "GET /compute/v1/projects/{project}/regions/{region}/forwardingRules/{forwardingRule}", Status: 400})
	if _, err := e.ensure(ilb, nodes); err == nil {
		t.Fatal("EnsureLoadBalancer succeeded through a 400")
	}
	if _, err := e.ensure(ext, nodes); err == nil {
		t.Fatal("EnsureLoadBalancer succeeded through a 400")
	}
	delta(map[string]float64{"L4ILBService": 1, "L4ILBInError": 1, "netlb Error": 1})
	e.fake.Faults().RemoveRule(rule)

	// A switch of scheme moves the Service from one count to the other.
	ext.Annotations = map[string]string{gce.AnnLoadBalancerType: "Internal"}
	e.mustEnsure(ilb, nodes)
	e.mustEnsure(ext, nodes)
	delta(map[string]float64{"L4ILBService": 2, "L4ILBInSuccess": 2, "L4ILBGlobalAccess": 1})

	e.mustDelete(ilb)
	e.mustDelete(ext)
	delta(map[string]float64{})
}
