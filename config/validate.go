package config

import (
	"math"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	netutils "k8s.io/utils/net"

	"github.com/polyccm/polyccm/core/driver"
)

// clusterNameRE keeps cluster names usable in every cloud's tags and
// resource-name prefixes.
var clusterNameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$`)

func (l *loader) validate(c *Config) {
	p := l.probs
	reg := l.src.Registry

	var d driver.Driver
	haveDriver := false
	switch {
	case c.Driver == "" && p.has("driver"):
		// Decoding said what is wrong with the value given.
	case c.Driver == "":
		p.add("driver", "required; this binary has: %s", strings.Join(orNone(reg.Names()), ", "))
	default:
		var err error
		if d, err = reg.Get(c.Driver); err != nil {
			p.addErr("driver", err)
		} else {
			haveDriver = true
		}
	}

	if !clusterNameRE.MatchString(c.ClusterName) {
		p.add("clusterName", "%q is not a valid cluster name: use 1-63 letters, digits, '.', '_' or '-', starting and ending with a letter or digit", c.ClusterName)
	}
	if c.Kubeconfig != "" {
		if _, err := os.Stat(c.Kubeconfig); err != nil {
			p.add("kubeconfig", "cannot read %s: %v (leave it empty to use in-cluster credentials)", c.Kubeconfig, unwrapPath(err))
		}
	}

	// Controllers the driver cannot back.
	if haveDriver {
		if c.Controllers.Services && !d.Has(driver.LoadBalancers) && l.explicit["controllers.services"] != "" {
			p.add("controllers.services", "driver %s does not manage load balancers; set it to false", d.Name)
		}
		if c.Controllers.Routes && !d.Has(driver.Routes) {
			p.add("controllers.routes", "driver %s does not manage routes; set it to false", d.Name)
		}
	}
	if !c.Controllers.Nodes && !c.Controllers.NodeLifecycle && !c.Controllers.Services && !c.Controllers.Routes &&
		!c.Controllers.KubeletServingCSR && !c.Controllers.VolumeLabels && !c.Controllers.NodeIPAM {
		p.add("controllers", "every controller is off, so polyccm would do nothing; enable at least one")
	}
	// Alias IP ranges are routed by the VPC itself; the route controller
	// would try to add routes for them, which the cloud refuses.
	if c.Controllers.NodeIPAM && c.Controllers.Routes {
		p.add("controllers.nodeIPAM", "pod ranges from the cloud (alias IPs) need no routes; set controllers.routes to false")
	}

	// Worker counts become the upstream controllers' int32 worker
	// counts; past 10 000 more workers only queue on the same API limits.
	for key, v := range map[string]int{
		"nodes.concurrentSyncs":          c.Nodes.ConcurrentSyncs,
		"nodes.concurrentStatusUpdates":  c.Nodes.ConcurrentStatusUpdates,
		"nodes.concurrentLifecycleSyncs": c.Nodes.ConcurrentLifecycleSyncs,
		"services.concurrentSyncs":       c.Services.ConcurrentSyncs,
	} {
		intRange(p, key, v, 1, maxWorkers, "workers")
	}
	durRange(p, "nodes.statusUpdateFrequency", c.Nodes.StatusUpdateFrequency, time.Second, 24*time.Hour)
	durRange(p, "nodes.monitorPeriod", c.Nodes.MonitorPeriod, time.Second, time.Hour)

	if c.Routes.ClusterCIDR != "" || c.Controllers.Routes {
		l.validateCIDRs(c.Routes.ClusterCIDR)
	}
	durRange(p, "routes.reconcilePeriod", c.Routes.ReconcilePeriod, time.Second, 24*time.Hour)

	le := c.LeaderElection
	if errs := validation.IsDNS1123Label(le.Namespace); len(errs) > 0 {
		p.add("leaderElection.namespace", "%q is not a valid namespace: %s", le.Namespace, strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(le.LeaseName); len(errs) > 0 {
		p.add("leaderElection.leaseName", "%q is not a valid Lease name: %s", le.LeaseName, strings.Join(errs, "; "))
	}
	// Below these, a replica's renewals race the API server's own latency
	// and leadership flaps; above, a dead leader is replaced too late.
	durRange(p, "leaderElection.leaseDuration", le.LeaseDuration, 2*time.Second, time.Hour)
	durRange(p, "leaderElection.renewDeadline", le.RenewDeadline, time.Second, time.Hour)
	durRange(p, "leaderElection.retryPeriod", le.RetryPeriod, 100*time.Millisecond, 10*time.Minute)
	if le.Enabled && le.RenewDeadline > 0 && le.LeaseDuration <= le.RenewDeadline {
		p.add("leaderElection.leaseDuration", "must be longer than leaderElection.renewDeadline (%s), or two replicas could both act", le.RenewDeadline)
	}
	// client-go requires RenewDeadline > 1.2 * RetryPeriod.
	if le.Enabled && le.RetryPeriod > 0 && float64(le.RenewDeadline) <= 1.2*float64(le.RetryPeriod) {
		p.add("leaderElection.renewDeadline", "must be more than 1.2 x leaderElection.retryPeriod (%s)", le.RetryPeriod)
	}

	s := c.Serving
	if net.ParseIP(s.BindAddress) == nil {
		p.add("serving.bindAddress", "%q is not an IP address (use 0.0.0.0 for all interfaces, 127.0.0.1 for local only)", s.BindAddress)
	}
	if s.SecurePort < 0 || s.SecurePort > 65535 {
		p.add("serving.securePort", "%d is not a port (1-65535, or 0 to turn serving off)", s.SecurePort)
	}
	if (s.CertFile == "") != (s.KeyFile == "") {
		p.add("serving.certFile", "set both serving.certFile and serving.keyFile, or neither for a self-signed certificate")
	}
	for key, f := range map[string]string{"serving.certFile": s.CertFile, "serving.keyFile": s.KeyFile} {
		if f != "" {
			if _, err := os.Stat(f); err != nil {
				p.add(key, "cannot read %s: %v", f, unwrapPath(err))
			}
		}
	}

	// The client-go limiter takes QPS as a float32 and burst as an int.
	qpsRange(p, "kubeAPI.qps", c.KubeAPI.QPS)
	intRange(p, "kubeAPI.burst", c.KubeAPI.Burst, 1, maxRate, "requests")

	ca := c.CloudAPI
	qpsRange(p, "cloudAPI.qps", ca.QPS)
	intRange(p, "cloudAPI.burst", ca.Burst, 1, maxRate, "requests")
	intRange(p, "cloudAPI.batchSize", ca.BatchSize, 1, maxBatch, "keys")
	// One attempt: under a second a slow but healthy API looks down.
	durRange(p, "cloudAPI.timeout", ca.Timeout, time.Second, 10*time.Minute)
	switch {
	case ca.BatchWindow < 0:
		p.add("cloudAPI.batchWindow", "must not be negative (0 sends each lookup at once)")
	case ca.BatchWindow > 0 && ca.BatchWindow < time.Millisecond:
		p.add("cloudAPI.batchWindow", "%s is too short to gather anything: use 0 (send each lookup at once) or at least 1ms", ca.BatchWindow)
	case ca.BatchWindow > 5*time.Second:
		p.add("cloudAPI.batchWindow", "%s would delay every node lookup that long; use at most 5s", ca.BatchWindow)
	}
	switch {
	case ca.CacheTTL < 0:
		p.add("cloudAPI.cacheTTL", "must not be negative (0 turns the cache off)")
	case ca.CacheTTL > 0 && ca.CacheTTL < time.Second:
		p.add("cloudAPI.cacheTTL", "%s keeps nothing long enough to help: use 0 (no cache) or at least 1s", ca.CacheTTL)
	case ca.CacheTTL > 24*time.Hour:
		p.add("cloudAPI.cacheTTL", "%s would keep instances the cloud has deleted for that long; use at most 24h", ca.CacheTTL)
	}

	if c.Logging.Verbosity < 0 || c.Logging.Verbosity > 10 {
		p.add("logging.verbosity", "%d is out of range 0-10", c.Logging.Verbosity)
	}
	if c.Logging.Format != "text" && c.Logging.Format != "json" {
		p.add("logging.format", "%q is not a log format: use text or json", c.Logging.Format)
	}

	// The selected driver validates its own subtree. Other drivers'
	// subtrees were decoded strictly but may be incomplete on purpose.
	if v, ok := c.Drivers[c.Driver].(interface{ Validate() error }); ok && haveDriver {
		p.addTree("drivers."+c.Driver, v.Validate())
	}
}

func (l *loader) validateCIDRs(s string) {
	key := "routes.clusterCIDR"
	if s == "" {
		l.probs.add(key, "required when controllers.routes is true: the pod network, e.g. 10.244.0.0/16 (or 10.244.0.0/16,fd00:10:244::/56 for dual-stack)")
		return
	}
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	cidrs, err := netutils.ParseCIDRs(parts)
	if err != nil {
		l.probs.add(key, "%q: %v (want a CIDR like 10.244.0.0/16)", s, err)
		return
	}
	if len(cidrs) > 2 {
		l.probs.add(key, "%q: at most two CIDRs, one IPv4 and one IPv6", s)
		return
	}
	if len(cidrs) == 2 {
		if dual, _ := netutils.IsDualStackCIDRs(cidrs); !dual {
			l.probs.add(key, "%q: two CIDRs must be one IPv4 and one IPv6", s)
		}
	}
}

// Upper bounds of numeric settings: each fits its consumer (int32 worker
// counts, float32 and int rate limits) with room to spare, and is more
// than any cluster needs.
const (
	maxWorkers = 10_000
	maxRate    = 100_000
	maxBatch   = 10_000
)

// intRange reports v outside lo..hi; what names the unit in the message.
func intRange(p *Problems, key string, v, lo, hi int, what string) {
	if v < lo || v > hi {
		p.add(key, "%d is out of range: use %d to %d %s", v, lo, hi, what)
	}
}

// qpsRange reports a rate that is not positive, or too large for the
// float32 client-go's limiters take.
func qpsRange(p *Problems, key string, v float64) {
	if !(v > 0) || v > maxRate || math.IsInf(v, 0) {
		p.add(key, "%s is out of range: use a rate above 0 and up to %d requests per second", strconv.FormatFloat(v, 'f', -1, 64), maxRate)
	}
}

// durRange reports d outside lo..hi.
func durRange(p *Problems, key string, d, lo, hi time.Duration) {
	if d < lo || d > hi {
		p.add(key, "%s is out of range: use a duration from %s to %s", d, lo, hi)
	}
}

func orNone(names []string) []string {
	if len(names) == 0 {
		return []string{"none"}
	}
	return names
}

func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
