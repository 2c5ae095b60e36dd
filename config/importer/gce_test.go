package importer

import (
	"testing"

	"github.com/polyccm/polyccm/drivers/gce"
)

// The gce.conf keys are cloud-provider-gcp's (providers/gce/gce.go
// ConfigGlobal's gcfg tags, applied in GenerateCloudConfig; the file below
// is its gce_test.go TestReadConfigFile's); the flags and controllers are
// cmd/cloud-controller-manager/main.go's and
// cmd/cloud-controller-manager/options/nodeipamcontroller.go's.
func TestGCE(t *testing.T) {
	saKey := secretFile(t, `{"type": "service_account", "project_id": "my-project"}`)
	runCases(t, "gce", []importCase{
		{
			name: "gce.conf with Application Default Credentials",
			cloudConfig: `[global]
token-url = nil
project-id = my-project
network-project-id = my-network-project
network-name = my-network
subnetwork-name = my-subnetwork
secondary-range-name = my-secondary-range
node-tags = my-node-tag1
node-instance-prefix = my-prefix
multizone = true
regional = true
local-zone = europe-west1-b
stack-type = IPV4_IPV6
api-endpoint = https://www.googleapis.com/compute/v1/
container-api-endpoint = https://container.googleapis.com
`,
			env: map[string]string{"GOOGLE_APPLICATION_CREDENTIALS": saKey},
			want: map[string]any{
				"driver":                     "gce",
				"drivers.gce.project":        "my-project",
				"drivers.gce.networkProject": "my-network-project",
				"drivers.gce.network":        "my-network",
				"drivers.gce.subnetwork":     "my-subnetwork",
				"drivers.gce.nodeTags":       []any{"my-node-tag1"},
				"drivers.gce.region":         "europe-west1", // GetGCERegion(local-zone)
				"drivers.gce.stackType":      "IPV4_IPV6",
				"drivers.gce.endpoint":       "https://www.googleapis.com",
				"drivers.gce.credentials":    map[string]any{"file": saKey}, // ADC read it, with token-url = nil
			},
			notes: []string{"{file: " + saKey + "}", "node-instance-prefix", "secondary-range-name", "container API"},
		},
		{
			name: "the metadata server's account: the credentials variable was ignored",
			cloudConfig: `[Global]
project-id = my-project
local-zone = us-central1-c
`,
			env:    map[string]string{"GOOGLE_APPLICATION_CREDENTIALS": "/etc/sa.json"},
			absent: []string{"drivers.gce.credentials"},
			notes:  []string{"cloud-provider-gcp ignored it", "upstream managed instances in zone us-central1-c only"},
		},
		{
			name: "GKE-style command line",
			cloudConfig: `[global]
project-id = my-project
`,
			args: `/cloud-controller-manager --cloud-provider=gce --cloud-config=/etc/gce.conf --cluster-name=prod
  --allocate-node-cidrs=true --cidr-allocator-type=CloudAllocator --configure-cloud-routes=false
  --controllers=*,-gkenetworkparamset --enable-l4-deny-firewall=true --enable-l4-deny-firewall-rollback-cleanup=true
  --service-cluster-ip-range=10.0.0.0/20 --node-cidr-mask-size=24 --enable-l4-ilb-fine-grained-lock --v=2`,
			want: map[string]any{
				"clusterName":                "prod",
				"controllers.nodeIPAM":       true,
				"controllers.routes":         false,
				"controllers.services":       true,
				"drivers.gce.l4DenyFirewall": "enabled",
				"logging.verbosity":          2,
			},
			notes: []string{"drivers.gce.stackType"},
		},
		{
			name:        "deny firewall rollback alone is cleanup",
			cloudConfig: "[global]\nproject-id = my-project\n",
			args:        "--enable-l4-deny-firewall-rollback-cleanup --configure-cloud-routes=false",
			want:        map[string]any{"drivers.gce.l4DenyFirewall": "cleanup"},
		},
		{
			name:        "routes with the cluster CIDR",
			cloudConfig: "[global]\nproject-id = my-project\n",
			args:        "--cluster-cidr=10.64.0.0/14 --controllers=cloud-node,cloud-node-lifecycle,route,service",
			want:        map[string]any{"controllers.routes": true, "routes.clusterCIDR": "10.64.0.0/14"},
			absent:      []string{"controllers.nodeIPAM"},
		},
		{
			name: "what polyccm cannot do is refused",
			cloudConfig: `[global]
token-url = https://gke-token.example/token
token-body = "` + tokenBody + `"
api-endpoint = https://www.googleapis.com/compute/staging_v1/
alpha-features = ILBSubsets
alpha-features = NetLB_RBS
project = my-project
[nodes]
tags = x
`,
			args: "--allocate-node-cidrs --cidr-allocator-type=RangeAllocator --cluster-cidr=10.64.0.0/14 --enable-multi-project --controllers=*,gke-service --enable-multi-networking=false",
			unmapped: []string{"token-url", "token-body", "api-endpoint", "alpha-features", "alpha-features", "[global] project", "[nodes] tags",
				"--cidr-allocator-type=RangeAllocator", "--enable-multi-project", "--controllers"},
			noRoundTrip: true, // a token URL: no credentials to check with
		},
		{
			name:        "a zone that is not one",
			cloudConfig: "[global]\nlocal-zone = nowhere\n",
			invalid:     []string{"local-zone", "not a zone"},
		},
		{
			name:        "not gcfg",
			cloudConfig: "project-id = my-project\n",
			invalid:     []string{"line 1", "before any [section]"},
		},
	})
}

func TestGCELoads(t *testing.T) {
	res, err := Import(Input{From: "gce", CloudConfig: []byte("[global]\nproject-id = my-project\nnode-tags = a\nnode-tags = b\nlocal-zone = us-east1-b\n")})
	if err != nil {
		t.Fatal(err)
	}
	dc := load(t, res.YAML).DriverConfig().(*gce.Config)
	if dc.Project != "my-project" || dc.Region != "us-east1" || len(dc.NodeTags) != 2 {
		t.Errorf("loaded %+v", dc)
	}
}
