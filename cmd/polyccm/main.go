// Command polyccm is a Kubernetes cloud-controller-manager for several
// clouds in one binary. Which clouds it can talk to is fixed at build time
// (see drivers/all); which one it does talk to, with which credentials and
// controllers, is set in one YAML file.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // logging.format: json
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/config"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/redact"
	"github.com/polyccm/polyccm/core/runner"
	"github.com/polyccm/polyccm/core/version"
	_ "github.com/polyccm/polyccm/drivers/all" // the drivers the build tags select
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without os.Exit, for tests.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		if err == errVersionShown {
			return 0
		}
		var pe errPlanExit
		if errors.As(err, &pe) {
			return pe.code
		}
		if err != errReported {
			fmt.Fprintln(stderr, "polyccm:", err)
		}
		return 1
	}
	return 0
}

// errReported means the command already printed what went wrong.
var errReported = fmt.Errorf("reported")

// errVersionShown ends a run after --version printed the version.
var errVersionShown = fmt.Errorf("version shown")

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	var configPath string
	root := &cobra.Command{
		Use:   "polyccm",
		Short: "A Kubernetes cloud-controller-manager for several clouds in one binary",
		Long: `polyccm initializes Nodes from the cloud, notices instances that were shut
down or deleted, and manages cloud load balancers and routes, for the cloud
driver its config file names. Running it with no command is "polyccm run".

Drivers in this binary: ` + strings.Join(orNone(driver.Default().Names()), ", "),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCmd(cmd.Context(), configPath, stderr)
		},
	}
	// --version answers without a config, as operators expect of any
	// daemon; "polyccm version" gives the details. Declared here, it hides
	// component-base's global --version, which the upstream options
	// register and which would print Kubernetes' version, not ours.
	var showVersion bool
	root.PersistentFlags().BoolVar(&showVersion, "version", false, "print the version and exit")
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if showVersion {
			fmt.Fprintf(stdout, "polyccm %s\n", version.Get().Version)
			return errVersionShown
		}
		return nil
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.PersistentFlags().StringVar(&configPath, "config", config.DefaultPath, "path of the YAML config file")

	runC := &cobra.Command{
		Use:   "run",
		Short: "Run the cloud controller manager (the default command)",
		Long: `Run the controllers the config enables, until SIGTERM or SIGINT.
Configuration comes from the file (--config), overridden by POLYCCM_*
environment variables; see ccm.example.yaml.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCmd(cmd.Context(), configPath, stderr)
		},
	}

	configC := &cobra.Command{
		Use:   "config",
		Short: "Check or print the configuration",
		Args:  cobra.NoArgs,
		// Runnable, so NoArgs rejects a mistyped subcommand (exit 1)
		// instead of cobra printing help and exiting 0.
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	validateC := &cobra.Command{
		Use:   "validate",
		Short: "Check the config; exit 0 if it is valid, 1 listing every problem if not",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, warnings, err := config.Load(config.Source{Path: configPath})
			printWarnings(stderr, warnings)
			if err != nil {
				fmt.Fprintln(stderr, err)
				return errReported
			}
			fmt.Fprintf(stdout, "%s is valid: driver %s, cluster %s\n", cfg.File, cfg.Driver, cfg.ClusterName)
			return nil
		},
	}
	showC := &cobra.Command{
		Use:   "show",
		Short: "Print the effective config: defaults, file and environment combined, secrets redacted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, warnings, err := config.Load(config.Source{Path: configPath})
			printWarnings(stderr, warnings)
			if err != nil {
				fmt.Fprintln(stderr, err)
				return errReported
			}
			out, err := config.Render(cfg)
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "# effective config from %s\n", cfg.File)
			_, err = stdout.Write(out)
			return err
		},
	}
	configC.AddCommand(validateC, showC, newImportCmd(stdout, stderr))

	driversC := &cobra.Command{
		Use:   "drivers",
		Short: "List the cloud drivers compiled into this binary, one per line",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, n := range driver.Default().Names() {
				fmt.Fprintln(stdout, n)
			}
			return nil
		},
	}

	var versionJSON bool
	versionC := &cobra.Command{
		Use:   "version",
		Short: "Print the version, git commit, Go version and compiled-in drivers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v := version.Get()
			drivers := driver.Default().Names()
			if versionJSON {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(struct {
					version.Info
					Drivers []string `json:"drivers"`
				}{v, drivers})
			}
			fmt.Fprintf(stdout, "polyccm %s\n", v.Version)
			fmt.Fprintf(stdout, "  commit:   %s\n", v.Commit)
			if v.BuildDate != "" {
				fmt.Fprintf(stdout, "  built:    %s\n", v.BuildDate)
			}
			fmt.Fprintf(stdout, "  go:       %s\n", v.GoVersion)
			fmt.Fprintf(stdout, "  platform: %s\n", v.Platform)
			fmt.Fprintf(stdout, "  drivers:  %s\n", strings.Join(orNone(drivers), ", "))
			return nil
		},
	}
	versionC.Flags().BoolVar(&versionJSON, "json", false, "print as JSON")

	root.AddCommand(runC, configC, newPlanCmd(&configPath, stdout, stderr), driversC, versionC)
	return root
}

func runCmd(ctx context.Context, configPath string, stderr io.Writer) error {
	cfg, warnings, err := config.Load(config.Source{Path: configPath})
	printWarnings(stderr, warnings)
	if err != nil {
		fmt.Fprintln(stderr, err)
		fmt.Fprintln(stderr, "polyccm did not start; fix the config (check it with `polyccm config validate`)")
		return errReported
	}
	if err := setUpLogging(cfg.Logging); err != nil {
		return err
	}
	defer logs.FlushLogs()
	for _, w := range warnings {
		klog.Warning(w)
	}

	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	settings, err := settingsFrom(cfg, driver.Default())
	if err != nil {
		fmt.Fprintln(stderr, "polyccm:", err)
		return errReported
	}
	if err := runner.Run(ctx, settings); err != nil {
		klog.ErrorS(err, "polyccm failed to start")
		logs.FlushLogs()
		fmt.Fprintln(stderr, "polyccm:", err)
		return errReported
	}
	klog.InfoS("polyccm stopped")
	return nil
}

// setUpLogging applies the logging settings. Both formats write through
// core/redact: at verbosity 8 and above client-go logs request and
// response bodies, and the secure port's delegated authentication puts
// the bearer token of every /metrics caller in one.
func setUpLogging(l config.Logging) error {
	c := logsapi.NewLoggingConfiguration()
	c.Verbosity = logsapi.VerbosityLevel(l.Verbosity)
	c.Format = l.Format
	opts := &logsapi.LoggingOptions{ErrorStream: redact.Writer(os.Stderr), InfoStream: redact.Writer(os.Stdout)}
	if err := logsapi.ValidateAndApplyWithOptions(c, opts, utilfeature.DefaultFeatureGate); err != nil {
		return fmt.Errorf("logging: %w", err)
	}
	return nil
}

func printWarnings(w io.Writer, warnings []string) {
	for _, s := range warnings {
		fmt.Fprintln(w, "warning:", s)
	}
}

func orNone(names []string) []string {
	if len(names) == 0 {
		return []string{"none"}
	}
	return names
}
