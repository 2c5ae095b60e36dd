package instances

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	lookups = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "polyccm",
		Subsystem:      "instances",
		Name:           "lookups_total",
		Help:           "Instance lookups from the node controllers, by where the answer came from (cache or cloud).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"driver", "source"})

	batchSize = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace:      "polyccm",
		Subsystem:      "instances",
		Name:           "batch_size",
		Help:           "Keys per batched instance lookup sent to the driver.",
		Buckets:        []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000},
		StabilityLevel: metrics.ALPHA,
	}, []string{"driver"})

	metricsOnce sync.Once
)

func registerMetrics() {
	metricsOnce.Do(func() { legacyregistry.MustRegister(lookups, batchSize) })
}
