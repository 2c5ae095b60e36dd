package volumes

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	lookups = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "polyccm",
		Subsystem:      "volumes",
		Name:           "lookups_total",
		Help:           "Disk lookups for volume labels, by where the answer came from (cache or cloud).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"driver", "source"})

	batchSize = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace:      "polyccm",
		Subsystem:      "volumes",
		Name:           "batch_size",
		Help:           "Keys per batched disk lookup sent to the driver.",
		Buckets:        []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000},
		StabilityLevel: metrics.ALPHA,
	}, []string{"driver"})

	metricsOnce sync.Once
)

func registerMetrics() {
	metricsOnce.Do(func() { legacyregistry.MustRegister(lookups, batchSize) })
}
