// Package runner turns a loaded config into a running cloud controller
// manager: it builds the driver's cloud, wraps it in core's batched
// instances, translates the config into the upstream options and runs the
// upstream controllers through k8s.io/cloud-provider/app, unchanged. It
// serves /healthz, /readyz, /livez and /metrics itself, so that readiness
// can be reported to systemd the moment the port is up.
package runner

import (
	"context"
	"fmt"
	"maps"
	"net"
	"time"

	"k8s.io/cloud-provider/app"
	"k8s.io/cloud-provider/names"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/config"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/controllers/servingcsr"
	"github.com/polyccm/polyccm/core/controllers/volumelabels"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/instances"
	"github.com/polyccm/polyccm/core/version"
)

// Run runs polyccm until ctx is cancelled (SIGTERM). It returns an error
// only for problems found while starting.
func Run(ctx context.Context, cfg *config.Config, reg *driver.Registry) error {
	d, err := reg.Get(cfg.Driver)
	if err != nil {
		return err
	}
	v := version.Get()
	klog.InfoS("Starting polyccm", "version", v.Version, "commit", v.Commit, "driver", d.Name, "cluster", cfg.ClusterName, "config", cfg.File)

	plan := planControllers(cfg, d)
	for name, why := range plan.skipped {
		klog.InfoS("Controller not started", "controller", name, "reason", why)
	}
	opts, err := ccmOptions(cfg, plan)
	if err != nil {
		return err
	}
	constructors := maps.Clone(app.DefaultInitFuncConstructors)
	constructors[names.ServiceLBController] = serviceLBController
	constructors[servingcsr.ControllerName] = servingCSRController
	constructors[volumelabels.ControllerName] = volumeLabelsController
	c, err := opts.Config(app.ControllerNames(constructors), app.ControllersDisabledByDefault.List(),
		names.CCMControllerAliases(), app.AllWebhooks, app.DisabledByDefaultWebhooks)
	if err != nil {
		return fmt.Errorf("setting up the controller manager: %w", err)
	}
	completed := c.Complete()

	api := cloudapi.New(cloudapi.Options{
		Driver:   d.Name,
		QPS:      cfg.CloudAPI.QPS,
		Burst:    cfg.CloudAPI.Burst,
		Timeout:  cfg.CloudAPI.Timeout,
		Classify: d.Classify,
		AuthHint: d.CredentialsHint,
	})
	dc, err := d.New(cfg.DriverConfig(), driver.Deps{
		ClusterName:   cfg.ClusterName,
		API:           api,
		ClientBuilder: completed.ClientBuilder,
		Informers:     completed.SharedInformers,
		Recorder:      completed.EventRecorder,

		AdoptUnmarkedLoadBalancers: cfg.Services.AdoptUnmarkedLoadBalancers,
	})
	if err != nil {
		return fmt.Errorf("building the %s driver: %w", d.Name, err)
	}
	cloud, err := assemble(d, dc, instances.Options{
		Driver:      d.Name,
		BatchWindow: cfg.CloudAPI.BatchWindow,
		BatchSize:   cfg.CloudAPI.BatchSize,
		CacheTTL:    cfg.CloudAPI.CacheTTL,
	})
	if err != nil {
		return err
	}

	// Serve health and metrics ourselves; app.Run would otherwise serve
	// only /healthz and give no signal of when the port is up.
	srv := newServer(completed, api)
	completed.SecureServing = nil
	stop := ctx.Done()
	if err := srv.start(stop); err != nil {
		return err
	}

	notifyReady()
	go watchdog(ctx, srv)
	stopping := make(chan struct{})
	go func() {
		defer close(stopping)
		<-ctx.Done()
		srv.shuttingDown()
		notifyStopping()
		klog.InfoS("Shutting down polyccm")
	}()

	initializers := app.ConstructControllerInitializers(constructors, completed, cloud)
	var lease *leaseRelease
	if cfg.LeaderElection.Enabled {
		lease = &leaseRelease{client: completed.Client, namespace: cfg.LeaderElection.Namespace, name: cfg.LeaderElection.LeaseName}
		initializers = lease.wrap(initializers)
	}
	err = app.Run(completed, cloud, initializers, map[string]app.WebhookHandler{}, stop)
	// app.Run can return as soon as the context ends; wait for STOPPING=1 to
	// be sent, or the process may exit before systemd hears it.
	if ctx.Err() != nil {
		<-stopping
		if lease != nil {
			lease.release(leaseReleaseTimeout)
		}
	}
	return err
}

// leaseReleaseTimeout bounds giving up the Lease on SIGTERM; past it, a
// standby waits out the lease as if polyccm had crashed.
const leaseReleaseTimeout = 2 * time.Second

func parseIP(s string) net.IP { return net.ParseIP(s) }

// shutdownGrace is how long in-flight health and metrics requests get.
const shutdownGrace = 5 * time.Second
