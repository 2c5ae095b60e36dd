package runner

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	apiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/apiserver/pkg/server/mux"
	cloudconfig "k8s.io/cloud-provider/app/config"
	"k8s.io/component-base/configz"
	"k8s.io/component-base/metrics/legacyregistry"
	genericcontrollermanager "k8s.io/controller-manager/app"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/cloudapi"
)

// server is the secure port: /healthz and /livez (is the process alive),
// /readyz (can it do its job: not shutting down, cloud credentials
// accepted), /metrics and /configz. Health paths need no credentials;
// the rest are authenticated and authorized against the API server, as
// upstream does.
type server struct {
	cfg      *cloudconfig.CompletedConfig
	info     *apiserver.SecureServingInfo
	api      *cloudapi.Client
	stopping atomic.Bool
	live     []healthz.HealthChecker
	ready    []healthz.HealthChecker
}

func newServer(cfg *cloudconfig.CompletedConfig, api *cloudapi.Client) *server {
	// Keep the serving info: the caller clears it from cfg so app.Run does
	// not serve a second time.
	s := &server{cfg: cfg, info: cfg.SecureServing, api: api}
	shutdown := healthz.NamedCheck("shutdown", func(*http.Request) error {
		if s.stopping.Load() {
			return fmt.Errorf("polyccm is shutting down")
		}
		return nil
	})
	// Not a liveness check: a restart cannot fix revoked credentials, and
	// restarting a static pod in a loop would only add noise.
	cloudAuth := healthz.NamedCheck("cloud-auth", func(*http.Request) error {
		if err := api.AuthError(); err != nil {
			return fmt.Errorf("the %s API rejects polyccm's credentials: %v", api.Driver(), err)
		}
		return nil
	})
	s.live = []healthz.HealthChecker{healthz.PingHealthz}
	s.ready = []healthz.HealthChecker{healthz.PingHealthz, shutdown, cloudAuth}
	return s
}

func (s *server) shuttingDown() { s.stopping.Store(true) }

func (s *server) start(stop <-chan struct{}) error {
	info := s.info
	if info == nil {
		klog.InfoS("Secure serving is off (serving.securePort is 0): no health checks or metrics")
		return nil
	}
	m := mux.NewPathRecorderMux("polyccm")
	healthz.InstallHandler(m, s.live...)
	healthz.InstallLivezHandler(m, s.live...)
	healthz.InstallReadyzHandler(m, s.ready...)
	configz.InstallHandler(m)
	m.Handle("/metrics", legacyregistry.Handler())
	handler := genericcontrollermanager.BuildHandlerChain(m, &s.cfg.Authorization, &s.cfg.Authentication)
	if _, _, err := info.Serve(handler, shutdownGrace, stop); err != nil {
		return fmt.Errorf("serving on %s (serving.bindAddress/serving.securePort): %w", info.Listener.Addr(), err)
	}
	klog.InfoS("Serving health checks and metrics", "address", info.Listener.Addr().String())
	return nil
}

// healthy runs the liveness checks, for the systemd watchdog.
func (s *server) healthy() bool {
	for _, c := range s.live {
		if err := c.Check(nil); err != nil {
			return false
		}
	}
	return true
}

func notifyReady() {
	if _, err := daemon.SdNotify(false, daemon.SdNotifyReady); err != nil {
		klog.ErrorS(err, "Telling systemd polyccm is ready")
	}
}

func notifyStopping() {
	if _, err := daemon.SdNotify(false, daemon.SdNotifyStopping); err != nil {
		klog.ErrorS(err, "Telling systemd polyccm is stopping")
	}
}

// watchdog pings systemd at half the WatchdogSec interval while healthy, so
// a hung polyccm is restarted by systemd.
func watchdog(ctx context.Context, s *server) {
	interval, err := daemon.SdWatchdogEnabled(false)
	if err != nil || interval <= 0 {
		return
	}
	t := time.NewTicker(interval / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if s.healthy() {
				_, _ = daemon.SdNotify(false, daemon.SdNotifyWatchdog)
			}
		}
	}
}
