// Package runner turns Settings (made from the config by cmd/polyccm) into
// a running cloud controller manager: it builds the driver's cloud, wraps
// it in core's batched instances and runs the upstream controllers through
// k8s.io/cloud-provider/app, unchanged. It
// serves /healthz, /readyz, /livez and /metrics itself, so that readiness
// can be reported to systemd the moment the port is up.
package runner

import (
	"context"
	"fmt"
	"github.com/polyccm/polyccm/core/assembly"
	"maps"
	"time"

	"k8s.io/cloud-provider/app"
	"k8s.io/cloud-provider/names"
	"k8s.io/cloud-provider/options"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/controllers/nodeipam"
	"github.com/polyccm/polyccm/core/controllers/servingcsr"
	"github.com/polyccm/polyccm/core/controllers/volumelabels"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/instances"
	"github.com/polyccm/polyccm/core/version"
)

// Settings are everything Run needs, in the runner's own terms; the
// caller (cmd/polyccm) makes them from the config, so core knows nothing of
// the config's shape.
type Settings struct {
	// Driver is the selected driver and DriverConfig its decoded config.
	Driver       driver.Driver
	DriverConfig any
	ClusterName  string
	// ClusterNameDefault is passed to the driver (driver.Deps).
	ClusterNameDefault bool
	// Source names where the settings came from, for the start-up log.
	Source string
	// Options are the upstream controller manager's, as if every value
	// had been given as a flag; Skipped says which controllers are not
	// started and why.
	Options *options.CloudControllerManagerOptions
	Skipped map[string]string
	// CloudAPI shapes every cloud call; Instances, the batched lookups.
	CloudAPI  cloudapi.Options
	Instances instances.Options
	// AdoptUnmarkedLoadBalancers is passed to the driver (driver.Deps).
	AdoptUnmarkedLoadBalancers bool
	// Lease is the leader-election Lease released on SIGTERM; empty
	// without leader election.
	LeaseNamespace, LeaseName string
}

// Run runs polyccm until ctx is cancelled (SIGTERM). It returns an error
// only for problems found while starting.
func Run(ctx context.Context, s Settings) error {
	d := s.Driver
	v := version.Get()
	klog.InfoS("Starting polyccm", "version", v.Version, "commit", v.Commit, "driver", d.Name, "cluster", s.ClusterName, "config", s.Source)
	for name, why := range s.Skipped {
		klog.InfoS("Controller not started", "controller", name, "reason", why)
	}
	opts := s.Options
	constructors := maps.Clone(app.DefaultInitFuncConstructors)
	constructors[names.ServiceLBController] = serviceLBController
	constructors[servingcsr.ControllerName] = servingCSRController
	constructors[volumelabels.ControllerName] = volumeLabelsController
	constructors[nodeipam.ControllerName] = nodeIPAMController
	c, err := opts.Config(app.ControllerNames(constructors), app.ControllersDisabledByDefault.List(),
		names.CCMControllerAliases(), app.AllWebhooks, app.DisabledByDefaultWebhooks)
	if err != nil {
		return fmt.Errorf("setting up the controller manager: %w", err)
	}
	// The same factory, caching objects without what no controller reads.
	c.SharedInformers = trimmedInformers(c.VersionedClient, c.ComponentConfig.Generic.MinResyncPeriod.Duration)
	completed := c.Complete()
	// Every event polyccm's own code records (the driver's, polyccm's
	// controllers') is made fit for the API and for folding repeats.
	completed.EventRecorder = safeEvents(completed.EventRecorder)

	cloud, err := assembly.New(assembly.Options{
		Driver: d, Config: s.DriverConfig,
		ClusterName: s.ClusterName, ClusterNameDefault: s.ClusterNameDefault,
		CloudAPI: s.CloudAPI, Instances: s.Instances,
		ClientBuilder: completed.ClientBuilder, Informers: completed.SharedInformers, Recorder: completed.EventRecorder,
		AdoptUnmarkedLoadBalancers: s.AdoptUnmarkedLoadBalancers,
	})
	if err != nil {
		return err
	}
	api := cloud.API()

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
		// No cloud call starts after SIGTERM: the next leader may take the
		// Lease as soon as it is released.
		api.Close()
		srv.shuttingDown()
		notifyStopping()
		klog.InfoS("Shutting down polyccm")
	}()

	initializers := app.ConstructControllerInitializers(constructors, completed, cloud)
	var lease *leaseRelease
	if s.LeaseName != "" {
		lease = &leaseRelease{client: completed.Client, namespace: s.LeaseNamespace, name: s.LeaseName}
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

// shutdownGrace is how long in-flight health and metrics requests get.
const shutdownGrace = 5 * time.Second
