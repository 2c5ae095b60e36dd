package harness

import (
	"fmt"
	"strings"
	"time"
)

// Settings fill a polyccm config file for tests: short periods so the
// controllers react within seconds, the real defaults otherwise.
type Settings struct {
	Driver      string
	Kubeconfig  string
	Port        int
	ClusterName string
	// DriverBlock is the YAML mapping under drivers.<Driver>, indented by
	// the caller as plain "key: value" lines (indentation is added).
	DriverBlock string
	// Controllers, if set, replace the controllers mapping, e.g.
	// "nodes: true\nnodeLifecycle: true\nservices: false".
	Controllers string
	// Extra is top-level YAML appended as is, e.g. a routes section.
	Extra string

	MonitorPeriod         time.Duration // default 1s
	StatusUpdateFrequency time.Duration // default 5s
	CacheTTL              time.Duration // default 1s
	LeaseDuration         time.Duration // default 10s: a slow renewal on a busy machine must not end the run
	ConcurrentSyncs       int           // default 20
	CloudQPS              float64       // default 50
	Verbosity             int           // default 2
	LogFormat             string        // default text
}

// Config renders s as a polyccm YAML config.
func (s Settings) Config() string {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&s.MonitorPeriod, time.Second)
	def(&s.StatusUpdateFrequency, 5*time.Second)
	def(&s.CacheTTL, time.Second)
	def(&s.LeaseDuration, 10*time.Second)
	if s.ConcurrentSyncs == 0 {
		s.ConcurrentSyncs = 20
	}
	if s.CloudQPS == 0 {
		s.CloudQPS = 50
	}
	if s.ClusterName == "" {
		s.ClusterName = "e2e"
	}
	if s.Verbosity == 0 {
		s.Verbosity = 2
	}
	controllers := s.Controllers
	if controllers == "" {
		controllers = "nodes: true\nnodeLifecycle: true"
	}
	renew := s.LeaseDuration * 3 / 4
	retry := s.LeaseDuration / 4
	var b strings.Builder
	fmt.Fprintf(&b, "driver: %s\n", s.Driver)
	fmt.Fprintf(&b, "clusterName: %s\n", s.ClusterName)
	fmt.Fprintf(&b, "kubeconfig: %s\n", s.Kubeconfig)
	fmt.Fprintf(&b, "controllers:\n%s\n", indent(controllers, "  "))
	fmt.Fprintf(&b, "nodes:\n  concurrentSyncs: %d\n  monitorPeriod: %s\n  statusUpdateFrequency: %s\n", s.ConcurrentSyncs, s.MonitorPeriod, s.StatusUpdateFrequency)
	fmt.Fprintf(&b, "leaderElection:\n  leaseDuration: %s\n  renewDeadline: %s\n  retryPeriod: %s\n", s.LeaseDuration, renew, retry)
	fmt.Fprintf(&b, "serving:\n  bindAddress: 127.0.0.1\n  securePort: %d\n", s.Port)
	fmt.Fprintf(&b, "kubeAPI:\n  qps: 500\n  burst: 1000\n")
	fmt.Fprintf(&b, "cloudAPI:\n  qps: %g\n  burst: %d\n  cacheTTL: %s\n  timeout: 10s\n", s.CloudQPS, int(s.CloudQPS*2), s.CacheTTL)
	if s.LogFormat == "" {
		s.LogFormat = "text"
	}
	fmt.Fprintf(&b, "logging:\n  verbosity: %d\n  format: %s\n", s.Verbosity, s.LogFormat)
	fmt.Fprintf(&b, "drivers:\n  %s:\n%s\n", s.Driver, indent(s.DriverBlock, "    "))
	if s.Extra != "" {
		fmt.Fprintf(&b, "%s\n", s.Extra)
	}
	return b.String()
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}
