package main

// import.go is `polyccm config import`: config/importer over the files,
// environment and command line an operator copies from the upstream CCM.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/polyccm/polyccm/config/importer"
)

func newImportCmd(stdout, stderr io.Writer) *cobra.Command {
	var from, cloudConfig, envFile, flags, flagsFile, output string
	var allowUnmapped bool
	c := &cobra.Command{
		Use:   "import --from " + strings.Join(importer.Clouds, "|"),
		Short: "Write polyccm's config from the settings of the per-cloud CCM it replaces",
		Long: `Read the settings the upstream cloud-controller-manager ran with and write
polyccm's YAML config: its cloud config file (AWS's and OpenStack's
cloud.conf, GCE's gce.conf), its environment variables (DigitalOcean's DO_*, Hetzner's HCLOUD_*,
the AWS SDK's AWS_*, GOOGLE_APPLICATION_CREDENTIALS) and its command line
(--cluster-name, --controllers, --leader-elect*, --concurrent-*-syncs, ...).

Secrets are never copied: a token from an environment variable becomes
{env: NAME}, one from a file {file: PATH}, one written in the cloud config
(OpenStack's password) {env: OS_PASSWORD}, and stderr says so. A setting
polyccm cannot carry over is refused with the reason; with any refused, the
exit status is 1 and nothing is written, unless --allow-unmapped, which
writes the rest and lists the refused ones as warnings (and in the file's
header). Settings equal to polyccm's defaults may be left out.

Without --env-file the environment of this command is read (only the
variables the upstream CCM reads). Without --flags or --flags-file the
controllers and what the command line sets are left to polyccm's defaults.

  xargs -0 printf '%q ' < /proc/$(pgrep -o aws-cloud-contr)/cmdline > args.txt
  polyccm config import --from aws --cloud-config /etc/kubernetes/cloud.conf \
      --flags-file args.txt -o ccm.yaml
  polyccm config import --from digitalocean --env-file do-ccm.env \
      --flags-file args.txt -o ccm.yaml

Then check the result with "polyccm config validate" and "polyccm plan"
(docs/switching.md).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fail := func(format string, a ...any) error {
				fmt.Fprintf(stderr, "polyccm config import: "+format+"\n", a...)
				return errReported
			}
			if from == "" {
				return fail("--from is required: the upstream CCM, one of %s", strings.Join(importer.Clouds, ", "))
			}
			in := importer.Input{From: from, ReadFile: os.ReadFile}
			if cloudConfig != "" {
				b, err := os.ReadFile(cloudConfig)
				if err != nil {
					return fail("--cloud-config: %v", err)
				}
				in.CloudConfig, in.CloudConfigName = b, cloudConfig
			}
			if envFile != "" {
				b, err := os.ReadFile(envFile)
				if err != nil {
					return fail("--env-file: %v", err)
				}
				if in.Env, err = importer.ParseEnvFile(string(b)); err != nil {
					return fail("--env-file %s: %v", envFile, err)
				}
				in.EnvFile, in.EnvName = true, envFile
			} else {
				in.Env = map[string]string{}
				for _, kv := range os.Environ() {
					k, v, _ := strings.Cut(kv, "=")
					in.Env[k] = v
				}
				in.EnvName = "this command's environment"
			}
			switch {
			case flags != "" && flagsFile != "":
				return fail("give the upstream command line once: --flags or --flags-file")
			case flags != "":
				words, err := importer.SplitCommandLine(flags)
				if err != nil {
					return fail("--flags: %v", err)
				}
				in.Args = append([]string{}, words...)
			case flagsFile != "":
				b, err := os.ReadFile(flagsFile)
				if err != nil {
					return fail("--flags-file: %v", err)
				}
				words, err := importer.SplitFlagsFile(string(b))
				if err != nil {
					return fail("--flags-file %s: %v", flagsFile, err)
				}
				in.Args = append([]string{}, words...)
			}

			res, err := importer.Import(in)
			var ie *importer.InputError
			if errors.As(err, &ie) {
				for _, p := range ie.Problems {
					fmt.Fprintln(stderr, "error:", p)
				}
				return fail("fix the upstream settings above (the upstream CCM would not run with them either)")
			}
			if err != nil {
				return fail("%v", err)
			}
			for _, n := range res.Notes {
				fmt.Fprintln(stderr, "note:", n)
			}
			for _, u := range res.Unmapped {
				if allowUnmapped {
					fmt.Fprintln(stderr, "warning: not carried over:", u)
				} else {
					fmt.Fprintln(stderr, "refused:", u)
				}
			}
			if len(res.Unmapped) > 0 && !allowUnmapped {
				what := fmt.Sprintf("%d upstream settings", len(res.Unmapped))
				if len(res.Unmapped) == 1 {
					what = "1 upstream setting"
				}
				return fail("%s cannot be carried over (refused, above); nothing was written. Change them upstream first, or pass --allow-unmapped to write the rest without them", what)
			}
			if output == "" || output == "-" {
				_, err := stdout.Write(res.YAML)
				return err
			}
			// Never over an existing file: it may be the config in use.
			f, err := os.OpenFile(output, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				if errors.Is(err, os.ErrExist) {
					return fail("-o %s: the file exists; remove it or write elsewhere", output)
				}
				return fail("-o: %v", err)
			}
			if _, err := f.Write(res.YAML); err != nil {
				f.Close()
				return fail("-o: %v", err)
			}
			if err := f.Close(); err != nil {
				return fail("-o: %v", err)
			}
			fmt.Fprintf(stderr, "wrote %s; check it with: polyccm config validate --config %s\n", output, output)
			return nil
		},
	}
	fl := c.Flags()
	fl.StringVar(&from, "from", "", "the upstream CCM: "+strings.Join(importer.Clouds, ", ")+" (hetzner: hcloud-cloud-controller-manager; openstack: openstack-cloud-controller-manager)")
	fl.StringVar(&cloudConfig, "cloud-config", "", "its cloud config file (AWS and OpenStack cloud.conf, GCE gce.conf); default: the one its --cloud-config flag names")
	fl.StringVar(&envFile, "env-file", "", "its environment, as NAME=VALUE lines; default: this command's environment")
	fl.StringVar(&flags, "flags", "", "its command line, e.g. '--cluster-name=prod --leader-elect=true'")
	fl.StringVar(&flagsFile, "flags-file", "", "a file holding its command line (shell words, or a manifest's command/args list)")
	fl.StringVarP(&output, "output", "o", "", "write the config to this new file (mode 0600) instead of stdout")
	fl.BoolVar(&allowUnmapped, "allow-unmapped", false, "write the config even if some settings cannot be carried over, listing them as warnings")
	return c
}
