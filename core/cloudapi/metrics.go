package cloudapi

import (
	"sync"
	"time"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// These live in the legacy registry because that is what the upstream
// controller manager serves on /metrics.
var (
	requests = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "polyccm",
		Subsystem:      "cloud_api",
		Name:           "requests_total",
		Help:           "Cloud API calls by driver, operation and outcome (success, not_found, throttled, unavailable, unauthorized, invalid, conflict, error, canceled).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"driver", "operation", "outcome"})

	latency = metrics.NewHistogramVec(&metrics.HistogramOpts{
		Namespace:      "polyccm",
		Subsystem:      "cloud_api",
		Name:           "request_duration_seconds",
		Help:           "Latency of cloud API calls by driver and operation, every attempt counted.",
		Buckets:        []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		StabilityLevel: metrics.ALPHA,
	}, []string{"driver", "operation"})

	retries = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "polyccm",
		Subsystem:      "cloud_api",
		Name:           "retries_total",
		Help:           "Cloud API attempts repeated after a retryable failure, by reason.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"driver", "operation", "reason"})

	throttleHolds = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "polyccm",
		Subsystem:      "cloud_api",
		Name:           "throttle_holds_total",
		Help:           "Times the cloud throttled polyccm and all its calls paused.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"driver"})

	authValid = metrics.NewGaugeVec(&metrics.GaugeOpts{
		Namespace:      "polyccm",
		Subsystem:      "cloud_api",
		Name:           "credentials_valid",
		Help:           "1 while the cloud accepts polyccm's credentials, 0 after it rejected them (401/403).",
		StabilityLevel: metrics.ALPHA,
	}, []string{"driver"})

	registerOnce sync.Once
)

func registerMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(requests, latency, retries, throttleHolds, authValid)
	})
}

func observe(driver, op, outcome string, d time.Duration) {
	requests.WithLabelValues(driver, op, outcome).Inc()
	latency.WithLabelValues(driver, op).Observe(d.Seconds())
}
