package digitalocean

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/component-base/metrics/legacyregistry"
)

// fwRemovals counts what a sync of the public-access firewall removed that
// polyccm had not put there (firewall_services.go, reportRemovals): an
// alert on it catches an operator's rule or tag going, which the
// DigitalOcean CCM removed without a word.
var (
	fwRemovals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "polyccm_digitalocean_firewall_removals_total",
		Help: "Inbound rules (what=inbound_rule) and tags (what=tag) the public-access firewall's syncs removed that no Service polyccm serves asked for.",
	}, []string{"what"})
	fwRemovalsOnce sync.Once
)

// registerFirewallRemovals serves the counter, both series from 0 so that
// a rate or increase sees the first removal.
func registerFirewallRemovals() {
	fwRemovalsOnce.Do(func() {
		legacyregistry.Registerer().MustRegister(fwRemovals)
		fwRemovals.WithLabelValues("inbound_rule")
		fwRemovals.WithLabelValues("tag")
	})
}
