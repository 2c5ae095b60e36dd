package batch

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// lookupMetrics are the metrics of one kind of Lookup:
// polyccm_<subsystem>_lookups_total{driver,source} (source: cache or
// cloud) and polyccm_<subsystem>_batch_size{driver}.
type lookupMetrics struct {
	lookups   *metrics.CounterVec
	batchSize *metrics.HistogramVec
}

var (
	lookupMetricsMu sync.Mutex
	lookupMetricsBy = map[string]*lookupMetrics{}
)

// metricsFor returns the metrics of subsystem, registering them the first
// time: several Lookups of one kind (a test makes many) share them.
func metricsFor(subsystem, kind string) *lookupMetrics {
	lookupMetricsMu.Lock()
	defer lookupMetricsMu.Unlock()
	if m, ok := lookupMetricsBy[subsystem]; ok {
		return m
	}
	m := &lookupMetrics{
		lookups: metrics.NewCounterVec(&metrics.CounterOpts{
			Namespace:      "polyccm",
			Subsystem:      subsystem,
			Name:           "lookups_total",
			Help:           "Cloud " + kind + " lookups, by where the answer came from (cache or cloud).",
			StabilityLevel: metrics.ALPHA,
		}, []string{"driver", "source"}),
		batchSize: metrics.NewHistogramVec(&metrics.HistogramOpts{
			Namespace:      "polyccm",
			Subsystem:      subsystem,
			Name:           "batch_size",
			Help:           "Keys per batched " + kind + " lookup sent to the driver.",
			Buckets:        []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000},
			StabilityLevel: metrics.ALPHA,
		}, []string{"driver"}),
	}
	legacyregistry.MustRegister(m.lookups, m.batchSize)
	lookupMetricsBy[subsystem] = m
	return m
}
