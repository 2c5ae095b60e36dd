package main

// plan.go is `polyccm plan`: core/planning with the config `run` uses.

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/component-base/logs"

	"github.com/polyccm/polyccm/config"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/planning"
)

// errPlanExit carries plan's exit status past cobra.
type errPlanExit struct{ code int }

func (e errPlanExit) Error() string { return fmt.Sprintf("plan: exit %d", e.code) }

func newPlanCmd(configPath *string, stdout, stderr io.Writer) *cobra.Command {
	var output string
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "plan",
		Short: "Show what polyccm would do to the cluster's load balancers and Nodes, changing nothing",
		Long: `Read the cluster and the cloud with the config "run" uses, and print, for
every LoadBalancer Service, what polyccm's first sync would do to the cloud
(adopt as is, update, create, delete; refused or ignored annotations), the
cloud load balancers made for the cluster that no Service owns, and what
the node controllers would do to each Node. It runs polyccm's own sync code
stopped before it applies anything: the cloud client refuses every call
that could change the cloud, and no write reaches the API server.

Run it before replacing a per-cloud CCM (docs/switching.md). Exit status:
0 safe to switch; 1 the plan is incomplete (the cluster or the cloud could
not be read, or a Service or Node could not be planned); 2 a Service that
has an address would get a new load balancer or be refused: do not switch.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "table" && output != "json" {
				fmt.Fprintf(stderr, "polyccm plan: -o %q: want table or json\n", output)
				return errReported
			}
			// 0 or less reads as "no timeout", which a plan that gates a
			// switch must not have: refused, not quietly replaced.
			if timeout <= 0 {
				fmt.Fprintf(stderr, "polyccm plan: --timeout %s: want a duration above 0, e.g. 5m\n", timeout)
				return errReported
			}
			return planCmd(cmd.Context(), *configPath, output, timeout, stdout, stderr)
		},
	}
	c.Flags().StringVarP(&output, "output", "o", "table", "table (for people) or json (for scripts)")
	c.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "give up after this long")
	return c
}

func planCmd(ctx context.Context, configPath, output string, timeout time.Duration, stdout, stderr io.Writer) error {
	cfg, warnings, err := config.Load(config.Source{Path: configPath})
	printWarnings(stderr, warnings)
	if err != nil {
		fmt.Fprintln(stderr, err)
		fmt.Fprintln(stderr, "polyccm plan: no plan; fix the config (check it with `polyccm config validate`)")
		return errReported
	}
	if err := setUpLogging(cfg.Logging); err != nil {
		return err
	}
	defer logs.FlushLogs()
	s, err := settingsFrom(cfg, driver.Default())
	if err != nil {
		fmt.Fprintln(stderr, "polyccm plan:", err)
		return errReported
	}
	kube, err := kubeConfig(cfg.Kubeconfig)
	if err != nil {
		fmt.Fprintf(stderr, "polyccm plan: no plan: cannot read the cluster: kubeconfig %q: %v\n", cfg.Kubeconfig, err)
		return errReported
	}
	if ctx == nil {
		ctx = context.Background()
	}
	r, err := planning.Run(ctx, planning.Settings{
		Driver:                     s.Driver,
		DriverConfig:               s.DriverConfig,
		ClusterName:                s.ClusterName,
		ClusterNameDefault:         s.ClusterNameDefault,
		CloudAPI:                   s.CloudAPI,
		Instances:                  s.Instances,
		AdoptUnmarkedLoadBalancers: s.AdoptUnmarkedLoadBalancers,
		Kube:                       kube,
		Nodes:                      cfg.Controllers.Nodes,
		NodeLifecycle:              cfg.Controllers.NodeLifecycle,
		Services:                   cfg.Controllers.Services,
		Timeout:                    timeout,
	})
	if err != nil {
		// Nothing on stdout: an empty plan must never read as "nothing
		// to do".
		fmt.Fprintln(stderr, "polyccm plan: no plan:", err)
		return errReported
	}
	if output == "json" {
		err = r.WriteJSON(stdout)
	} else {
		err = r.WriteTable(stdout)
	}
	if err != nil {
		return err
	}
	if code := r.ExitCode(); code != 0 {
		return errPlanExit{code: code}
	}
	return nil
}

// kubeConfig is the connection `run` makes: the kubeconfig file, or the
// in-cluster service account when the config names none.
func kubeConfig(path string) (*rest.Config, error) {
	if path == "" {
		return rest.InClusterConfig()
	}
	return clientcmd.BuildConfigFromFlags("", path)
}
