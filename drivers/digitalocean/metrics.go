package digitalocean

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/polyccm/polyccm/core/cloudapi"
)

// upstreamMetrics are the DigitalOcean CCM's firewall API metrics
// (cloud-controller-manager/do/metrics.go), written by core/cloudapi from
// the public-access firewall's calls; docs/metrics.md has the table. The
// DigitalOcean CCM has no metrics of its other API calls.
var upstreamMetrics = []cloudapi.UpstreamFamily{&cloudapi.DigitalOceanFirewallAPI{
	Operations: map[string]string{
		"firewalls.get":    "get_by_id",
		"firewalls.list":   "get_by_list",
		"firewalls.create": "create",
		"firewalls.update": "update",
	},
}}

// The firewall controller's own series, which only it knows the meaning
// of: each sync of the firewall (upstream's reconcile) and each re-read
// the resync timer asks for (upstream's resource sync). Plain Prometheus
// collectors and buckets, as upstream's.
var (
	fwReconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "firewall",
		Name:      "reconcile_duration_seconds",
		Help:      "Duration of the public-access firewall's syncs.",
		Buckets:   prometheus.LinearBuckets(1, 15, 21),
	}, []string{"result", "error_type"})
	fwReconciles = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "firewall",
		Name:      "reconciles_total",
		Help:      "The public-access firewall's syncs.",
	}, []string{"result", "error_type"})
	fwResourceSyncDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "firewall",
		Name:      "resource_sync_duration_seconds",
		Help:      "Duration of the periodic re-reads of the public-access firewall.",
		Buckets:   prometheus.LinearBuckets(1, 15, 21),
	}, []string{"result"})
	fwResourceSyncs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "firewall",
		Name:      "resource_syncs_total",
		Help:      "The periodic re-reads of the public-access firewall.",
	}, []string{"result"})
	fwMetricsOnce sync.Once
)

// syncCounted is one sync, counted as upstream counts a reconcile:
// reconciled when it wrote the firewall, skipped when nothing needed
// writing, failed (timeout when its context ended, generic otherwise).
func (k *firewallKeeper) syncCounted(ctx context.Context) error {
	fwMetricsOnce.Do(func() {
		legacyregistry.Registerer().MustRegister(fwReconcileDuration, fwReconciles, fwResourceSyncDuration, fwResourceSyncs)
	})
	start := time.Now()
	k.wrote = false
	err := k.sync(ctx)
	result, errType := "skipped", ""
	switch {
	case err != nil:
		result, errType = "failed", "generic"
		if ctx.Err() != nil {
			errType = "timeout"
		}
	case k.wrote:
		result = "reconciled"
	}
	fwReconcileDuration.WithLabelValues(result, errType).Observe(time.Since(start).Seconds())
	fwReconciles.WithLabelValues(result, errType).Inc()
	return err
}

// readCounted reads the firewall; a read the resync asked for is counted
// as upstream's resource sync: updated, failed, or canceled when its
// context ended.
func (k *firewallKeeper) readCounted(ctx context.Context, resync bool) error {
	if !resync {
		return k.read(ctx)
	}
	start := time.Now()
	err := k.read(ctx)
	result := "updated"
	if err != nil {
		result = "failed"
		if ctx.Err() != nil {
			result = "canceled"
		}
	}
	fwResourceSyncDuration.WithLabelValues(result).Observe(time.Since(start).Seconds())
	fwResourceSyncs.WithLabelValues(result).Inc()
	return err
}
