package digitalocean_test

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"

	"github.com/polyccm/polyccm/drivers/digitalocean"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

// fwCount reads one of the firewall controller's counters, with exactly
// labels, from what /metrics serves. The counters are process-wide:
// tests compare what they had before with what they have after.
func fwCount(t *testing.T, name string, labels map[string]string) float64 {
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
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func reconciles(t *testing.T, result, errType string) float64 {
	return fwCount(t, "firewall_reconciles_total", map[string]string{"result": result, "error_type": errType})
}

func resourceSyncs(t *testing.T, result string) float64 {
	return fwCount(t, "firewall_resource_syncs_total", map[string]string{"result": result})
}

// waitCount polls a counter until it reached want.
func waitCount(t *testing.T, what string, read func() float64, want float64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for read() < want {
		if time.Now().After(deadline) {
			t.Fatalf("%s = %v, want %v", what, read(), want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Each sync counts as the DigitalOcean CCM counts a reconcile: reconciled
// when it wrote the firewall, skipped when nothing needed writing, failed
// when it could not.
func TestFirewallReconcileMetrics(t *testing.T) {
	e := newFWEnv(t)
	e.resync = time.Hour // no re-reads: every sync below is a Service's
	ok0, skip0, fail0 := reconciles(t, "reconciled", ""), reconciles(t, "skipped", ""), reconciles(t, "failed", "generic")

	e.create(nodePortSvc("np", nil, fwPort(v1.ProtocolTCP, 80, 30080)))
	e.start()
	e.rulesAre(fwWorld("tcp", 30080), fwOutTCP, fwOutUDP, fwOutICMP)
	waitCount(t, "reconciled", func() float64 { return reconciles(t, "reconciled", "") - ok0 }, 1)

	// A Service that wants no rule: the firewall is already right.
	e.create(nodePortSvc("unmanaged", map[string]string{digitalocean.AnnFirewallManaged: "false"}, fwPort(v1.ProtocolTCP, 81, 30081)))
	waitCount(t, "skipped", func() float64 { return reconciles(t, "skipped", "") - skip0 }, 1)

	// Every write refused: the sync fails (and is retried).
	e.fake.Faults().AddRule(faults.Rule{Match: fwPut, Status: 500, Remaining: 4})
	e.create(nodePortSvc("np2", nil, fwPort(v1.ProtocolTCP, 82, 30082)))
	waitCount(t, "failed", func() float64 { return reconciles(t, "failed", "generic") - fail0 }, 1)
	e.rulesAre(fwWorld("tcp", 30080), fwWorld("tcp", 30082), fwOutTCP, fwOutUDP, fwOutICMP)
	if got := reconciles(t, "reconciled", "") - ok0; got < 2 {
		t.Errorf("%v syncs counted as reconciled, want the create and the retried update", got)
	}
}

// The periodic re-read counts as upstream's resource sync: updated, or
// failed when the firewall could not be read.
func TestFirewallResourceSyncMetrics(t *testing.T) {
	e := newFWEnv(t)
	up0, fail0 := resourceSyncs(t, "updated"), resourceSyncs(t, "failed")
	e.start()
	e.rulesAre(fwOutTCP, fwOutUDP, fwOutICMP)
	e.resyncs(2)
	waitCount(t, "updated", func() float64 { return resourceSyncs(t, "updated") - up0 }, 2)

	// More failures than one read's attempts (2).
	e.fake.Faults().AddRule(faults.Rule{Match: fwGet, Status: 500, Remaining: 2})
	waitCount(t, "failed", func() float64 { return resourceSyncs(t, "failed") - fail0 }, 1)
	if reads := e.calls(fwGet); reads < 2 {
		t.Errorf("%d reads of the firewall", reads)
	}
}
