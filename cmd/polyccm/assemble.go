package main

// assemble.go turns the loaded config into the runner's Settings: which
// upstream controllers run, and the upstream options as if every value
// were a flag. It lives above core, which knows nothing of the config.

import (
	"cmp"
	"fmt"
	"math"
	"net"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cloud-provider/names"
	"k8s.io/cloud-provider/options"

	"github.com/polyccm/polyccm/config"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/controllers/nodeipam"
	"github.com/polyccm/polyccm/core/controllers/servingcsr"
	"github.com/polyccm/polyccm/core/controllers/volumelabels"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/instances"
	"github.com/polyccm/polyccm/core/runner"
)

// settingsFrom makes the runner's Settings from a loaded config.
func settingsFrom(cfg *config.Config, reg *driver.Registry) (runner.Settings, error) {
	d, err := reg.Get(cfg.Driver)
	if err != nil {
		return runner.Settings{}, err
	}
	plan := planControllers(cfg, d)
	opts, err := ccmOptions(cfg, plan)
	if err != nil {
		return runner.Settings{}, err
	}
	s := runner.Settings{
		Driver:             d,
		DriverConfig:       cfg.DriverConfig(),
		ClusterName:        cfg.ClusterName,
		ClusterNameDefault: cfg.ClusterNameDefault,
		Source:             cfg.File,
		Options:            opts,
		Skipped:            plan.skipped,
		CloudAPI:           cloudapi.Options{QPS: cfg.CloudAPI.QPS, Burst: cfg.CloudAPI.Burst, Timeout: cfg.CloudAPI.Timeout},
		Instances:          instances.Options{BatchWindow: cfg.CloudAPI.BatchWindow, BatchSize: cfg.CloudAPI.BatchSize, CacheTTL: cfg.CloudAPI.CacheTTL},

		AdoptUnmarkedLoadBalancers: cfg.Services.AdoptUnmarkedLoadBalancers,
	}
	if cfg.LeaderElection.Enabled {
		s.LeaseNamespace, s.LeaseName = cfg.LeaderElection.Namespace, cfg.LeaderElection.LeaseName
	}
	return s, nil
}

// controllerPlan is which upstream controllers run, and why others don't.
type controllerPlan struct {
	enabled []string
	skipped map[string]string // controller -> reason
}

// planControllers maps the config's switches onto upstream controller
// names, dropping ones the driver cannot back (config validation already
// rejected explicit requests for those).
func planControllers(c *config.Config, d driver.Driver) controllerPlan {
	p := controllerPlan{skipped: map[string]string{}}
	add := func(on bool, name string, need driver.Capability) {
		switch {
		case !on:
			p.skipped[name] = "turned off in the config"
		case need != "" && !d.Has(need):
			p.skipped[name] = "driver " + d.Name + " has no " + string(need)
		default:
			p.enabled = append(p.enabled, name)
		}
	}
	add(c.Controllers.Nodes, names.CloudNodeController, "")
	add(c.Controllers.NodeLifecycle, names.CloudNodeLifecycleController, "")
	add(c.Controllers.Services, names.ServiceLBController, driver.LoadBalancers)
	add(c.Controllers.Routes, names.NodeRouteController, driver.Routes)
	add(c.Controllers.KubeletServingCSR, servingcsr.ControllerName, "")
	// No capability needed to start: without one the controller says so
	// once and stays idle (see volumeLabelsController).
	add(c.Controllers.VolumeLabels, volumelabels.ControllerName, "")
	// Likewise without a driver whose instances carry pod ranges (see
	// nodeIPAMController).
	add(c.Controllers.NodeIPAM, nodeipam.ControllerName, "")
	return p
}

// ccmOptions translates polyccm's config into the upstream controller
// manager's options, as if every value had been given as a flag.
func ccmOptions(c *config.Config, plan controllerPlan) (*options.CloudControllerManagerOptions, error) {
	o, err := options.NewCloudControllerManagerOptions()
	if err != nil {
		return nil, err
	}
	dur := func(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }

	o.KubeCloudShared.CloudProvider.Name = c.Driver
	o.KubeCloudShared.ClusterName = c.ClusterName
	o.KubeCloudShared.AllowUntaggedCloud = true
	o.KubeCloudShared.ConfigureCloudRoutes = c.Controllers.Routes
	o.KubeCloudShared.ClusterCIDR = c.Routes.ClusterCIDR
	o.KubeCloudShared.RouteReconciliationPeriod = dur(c.Routes.ReconcilePeriod)
	// Controllers get clients with their own identities only when running
	// with service-account tokens; polyccm runs as one identity whose
	// permissions packaging/kubernetes/rbac.yaml grants.
	o.KubeCloudShared.UseServiceAccountCredentials = false

	o.Generic.Controllers = plan.enabled
	if len(plan.enabled) == 0 {
		// "" would mean the defaults (all); "-name" for each means none.
		for name := range plan.skipped {
			o.Generic.Controllers = append(o.Generic.Controllers, "-"+name)
		}
	}
	o.Generic.ClientConnection.Kubeconfig = c.Kubeconfig
	o.Generic.ClientConnection.QPS = float32(c.KubeAPI.QPS)
	// The config's ranges keep these counts well inside int32; int32Of
	// refuses rather than wraps if a range ever stops doing so.
	var err32 error
	i32 := func(key string, v int) int32 {
		n, err := int32Of(key, v)
		err32 = cmp.Or(err32, err)
		return n
	}
	o.Generic.ClientConnection.Burst = i32("kubeAPI.burst", c.KubeAPI.Burst)
	o.Generic.Debugging.EnableProfiling = false

	le := &o.Generic.LeaderElection
	le.LeaderElect = c.LeaderElection.Enabled
	le.ResourceLock = "leases"
	le.ResourceNamespace = c.LeaderElection.Namespace
	le.ResourceName = c.LeaderElection.LeaseName
	le.LeaseDuration = dur(c.LeaderElection.LeaseDuration)
	le.RenewDeadline = dur(c.LeaderElection.RenewDeadline)
	le.RetryPeriod = dur(c.LeaderElection.RetryPeriod)

	o.NodeController.ConcurrentNodeSyncs = i32("nodes.concurrentSyncs", c.Nodes.ConcurrentSyncs)
	o.NodeController.ConcurrentNodeStatusUpdates = i32("nodes.concurrentStatusUpdates", c.Nodes.ConcurrentStatusUpdates)
	o.NodeStatusUpdateFrequency = dur(c.Nodes.StatusUpdateFrequency)
	o.NodeLifecycleController.NodeMonitorPeriod = dur(c.Nodes.MonitorPeriod)
	o.NodeLifecycleController.ConcurrentNodeLifecycleSyncs = i32("nodes.concurrentLifecycleSyncs", c.Nodes.ConcurrentLifecycleSyncs)
	o.ServiceController.ConcurrentServiceSyncs = i32("services.concurrentSyncs", c.Services.ConcurrentSyncs)
	if err32 != nil {
		return nil, err32
	}

	o.SecureServing.BindAddress = net.ParseIP(c.Serving.BindAddress)
	o.SecureServing.BindPort = c.Serving.SecurePort
	o.SecureServing.ServerCert.CertKey.CertFile = c.Serving.CertFile
	o.SecureServing.ServerCert.CertKey.KeyFile = c.Serving.KeyFile
	o.SecureServing.ServerCert.PairName = "polyccm"

	// Delegated authn/authz of /metrics uses the same identity as the
	// controllers (empty: in-cluster credentials).
	o.Authentication.RemoteKubeConfigFile = c.Kubeconfig
	o.Authorization.RemoteKubeConfigFile = c.Kubeconfig

	// No webhooks: they would bind another port.
	o.Webhook = nil
	o.WebhookServing = nil
	return o, nil
}

// int32Of converts a count for the upstream options, which take int32s.
func int32Of(key string, v int) (int32, error) {
	if v < 1 || v > math.MaxInt32 {
		return 0, fmt.Errorf("%s: %d does not fit the controller's worker count (1 to %d)", key, v, math.MaxInt32)
	}
	return int32(v), nil
}
