package importer

import (
	"testing"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
)

// The flags every CCM shares are k8s.io/cloud-provider's
// (options/options.go Flags, options/kubecloudshared.go,
// options/nodecontroller.go, ...; k8s.io/controller-manager's generic and
// leader-election flags; component-base's logging flags). Each is parsed by
// that flag set itself; these rows check the mapping.
func TestSharedFlags(t *testing.T) {
	runCases(t, "digitalocean", []importCase{
		{
			name: "every mapped flag",
			env:  map[string]string{"DO_ACCESS_TOKEN": doToken},
			args: `digitalocean-cloud-controller-manager
				--cluster-name=prod --controllers=cloud-node,-cloud-node-lifecycle,service
				--leader-elect=true --leader-elect-lease-duration=30s --leader-elect-renew-deadline=20s
				--leader-elect-retry-period=4s --leader-elect-resource-name=do-ccm --leader-elect-resource-namespace=ccm
				--leader-elect-resource-lock=leases
				--kube-api-qps=50 --kube-api-burst 100
				--node-status-update-frequency=1m --node-monitor-period=10s --route-reconciliation-period=30s
				--concurrent-node-syncs=4 --concurrent-node-lifecycle-syncs=3 --concurrent-service-syncs=2
				--bind-address=127.0.0.1 --secure-port=10300
				-v 3 --logging-format=json
				--profiling=false --allow-untagged-cloud --min-resync-period=12h0m0s`,
			want: map[string]any{
				"clusterName":                    "prod",
				"controllers.nodes":              true,
				"controllers.nodeLifecycle":      false,
				"controllers.services":           true,
				"controllers.routes":             false,
				"leaderElection.enabled":         true,
				"leaderElection.leaseDuration":   "30s",
				"leaderElection.renewDeadline":   "20s",
				"leaderElection.retryPeriod":     "4s",
				"leaderElection.leaseName":       "do-ccm",
				"leaderElection.namespace":       "ccm",
				"kubeAPI.qps":                    50, // a whole number is written as one
				"kubeAPI.burst":                  100,
				"nodes.statusUpdateFrequency":    "1m",
				"nodes.monitorPeriod":            "10s",
				"routes.reconcilePeriod":         "30s",
				"nodes.concurrentSyncs":          4,
				"nodes.concurrentStatusUpdates":  4, // upstream: the node syncs' count unless set
				"nodes.concurrentLifecycleSyncs": 3,
				"services.concurrentSyncs":       2,
				"serving.bindAddress":            "127.0.0.1",
				"serving.securePort":             10300,
				"logging.verbosity":              3,
				"logging.format":                 "json",
			},
		},
		{
			name: "status update workers of their own; controllers by alias, the first mention wins",
			env:  map[string]string{"DO_ACCESS_TOKEN": doToken},
			args: "--concurrent-node-syncs=4 --concurrent-node-status-updates=9 --controllers=-service,*,service",
			want: map[string]any{
				"nodes.concurrentSyncs":         4,
				"nodes.concurrentStatusUpdates": 9,
				"controllers.services":          false,
				"controllers.nodes":             true,
			},
		},
		{
			name: "flags polyccm has no setting for",
			env:  map[string]string{"DO_ACCESS_TOKEN": doToken},
			args: "--master=https://admin:" + robotPass + "@10.0.0.1:6443 --tls-min-version=VersionTLS13 --feature-gates=AllAlpha=true --profiling --vmodule=service*=5 " +
				"--requestheader-client-ca-file=/etc/ca.pem --leader-elect-resource-lock=endpointsleases --webhooks=* --kube-api-content-type=application/json " +
				"--authentication-kubeconfig=/etc/other.kubeconfig --version",
			unmapped: []string{"--master", "--tls-min-version", "--feature-gates", "--profiling", "--vmodule", "--requestheader-client-ca-file",
				"--leader-elect-resource-lock", "--webhooks", "--kube-api-content-type", "--authentication-kubeconfig", "--version"},
		},
		{
			name: "set to upstream's defaults, they change nothing",
			env:  map[string]string{"DO_ACCESS_TOKEN": doToken},
			args: "--min-resync-period=12h --kube-api-content-type=application/vnd.kubernetes.protobuf --authorization-always-allow-paths=/healthz,/readyz,/livez --tls-cipher-suites=",
		},
		{
			name:    "a flag the CCM does not have",
			env:     map[string]string{"DO_ACCESS_TOKEN": doToken},
			args:    "--cluster-name=prod --cluster_cidr=10.0.0.0/8 --frobnicate value",
			invalid: []string{"--cluster_cidr is not a flag of digitalocean-cloud-controller-manager", "--frobnicate is not a flag"},
		},
		{
			name:    "an argument",
			env:     map[string]string{"DO_ACCESS_TOKEN": doToken},
			args:    "ccm --leader-elect=false extra",
			invalid: []string{`"extra" is not a flag`},
		},
		{
			name:    "a bad value",
			env:     map[string]string{"DO_ACCESS_TOKEN": doToken},
			args:    "--leader-elect=sometimes",
			invalid: []string{"sometimes", "--leader-elect"},
		},
		{
			name:    "another cloud's command line",
			env:     map[string]string{"DO_ACCESS_TOKEN": doToken},
			args:    "--cloud-provider=aws",
			invalid: []string{"--cloud-provider=aws is not digitalocean-cloud-controller-manager"},
		},
		{
			name:    "a controller the CCM does not have",
			env:     map[string]string{"DO_ACCESS_TOKEN": doToken},
			args:    "--controllers=*,tagging-controller",
			invalid: []string{`"tagging-controller" is not a controller of digitalocean-cloud-controller-manager`},
		},
	})
}

// Parsing upstream's --feature-gates and -v must not change this
// process's feature gates or log verbosity, which upstream's flags write.
func TestFlagsLeaveProcessAlone(t *testing.T) {
	gate := featuregate.Feature("AllAlpha")
	before := utilfeature.DefaultFeatureGate.Enabled(gate)
	if _, err := Import(Input{From: "hetzner", Env: map[string]string{}, Args: []string{"--feature-gates=AllAlpha=true", "-v=9"}}); err != nil {
		t.Fatal(err)
	}
	if utilfeature.DefaultFeatureGate.Enabled(gate) != before {
		t.Error("importing --feature-gates changed this process's feature gates")
	}
	if klog.V(9).Enabled() {
		t.Error("importing -v=9 changed this process's log verbosity")
	}
}

// The command line's --cloud-config is read when no file is given.
func TestCloudConfigFromFlags(t *testing.T) {
	var asked string
	in := Input{From: "aws", Args: []string{"--cloud-config=/etc/kubernetes/cloud.conf", "--configure-cloud-routes=false"},
		ReadFile: func(p string) ([]byte, error) { asked = p; return []byte("[Global]\nRegion = ap-south-1\n"), nil }}
	res, err := Import(in)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := lookup(decode(t, res.YAML), "drivers.aws.region"); asked != "/etc/kubernetes/cloud.conf" || got != "ap-south-1" {
		t.Errorf("read %q, region %v", asked, got)
	}
	in.ReadFile = nil
	if _, err := Import(in); err == nil {
		t.Error("no error when the command line's cloud config cannot be read")
	}
	// DigitalOcean reads none: the flag is left alone, a file is refused.
	if _, err := Import(Input{From: "digitalocean", Args: []string{"--cloud-config=/etc/x"}}); err != nil {
		t.Errorf("--cloud-config of a CCM that ignores it: %v", err)
	}
	if _, err := Import(Input{From: "digitalocean", CloudConfig: []byte("[Global]\n")}); err == nil {
		t.Error("a cloud config for DigitalOcean was accepted")
	}
}

func TestUnknownCloud(t *testing.T) {
	if _, err := Import(Input{From: "azure"}); err == nil {
		t.Error("--from azure accepted")
	}
}
