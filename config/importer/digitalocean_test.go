package importer

import (
	"testing"

	"github.com/polyccm/polyccm/config/secret"
	"github.com/polyccm/polyccm/drivers/digitalocean"
)

// The variables are digitalocean-cloud-controller-manager's
// (cloud-controller-manager/do/cloud.go constants, read in newCloud; REGION
// in do/metadata.go dropletRegion); the command line is the one its release
// manifests run (releases/digitalocean-cloud-controller-manager/*.yml).
func TestDigitalOcean(t *testing.T) {
	runCases(t, "digitalocean", []importCase{
		{
			name: "release manifest",
			env: map[string]string{
				"DO_ACCESS_TOKEN":             doToken,                                // newCloud: the API token
				"DO_CLUSTER_ID":               "6f5c3b3a-5e7c-4b1a-9d6e-2b3c4d5e6f70", // resources.clusterID: k8s:<id> tags
				"DO_CLUSTER_VPC_ID":           "5a4981aa-9653-4bd1-bef5-d6bff52042e4",
				"PUBLIC_ACCESS_FIREWALL_NAME": "k8s-public-access",
				"PUBLIC_ACCESS_FIREWALL_TAGS": "k8s:worker, k8s:pool-a", // split on ","
				"REGION":                      "fra1",
				"DEFAULT_LB_TYPE":             "REGIONAL",
				"DO_API_RATE_LIMIT_QPS":       "5.5",                                // godo.SetStaticRateLimit
				"DO_OVERRIDE_URL":             "https://do-proxy.internal.example/", // godo.SetBaseURL
			},
			args: "/bin/digitalocean-cloud-controller-manager --leader-elect=false --cluster-name=prod",
			want: map[string]any{
				"driver":                                        "digitalocean",
				"clusterName":                                   "prod",
				"leaderElection.enabled":                        false,
				"controllers.nodes":                             true,
				"controllers.services":                          true,
				"controllers.routes":                            false, // the DigitalOcean CCM has no routes
				"cloudAPI.qps":                                  5.5,
				"drivers.digitalocean.token":                    map[string]any{"env": "DO_ACCESS_TOKEN"},
				"drivers.digitalocean.clusterID":                "6f5c3b3a-5e7c-4b1a-9d6e-2b3c4d5e6f70",
				"drivers.digitalocean.vpcID":                    "5a4981aa-9653-4bd1-bef5-d6bff52042e4",
				"drivers.digitalocean.region":                   "fra1",
				"drivers.digitalocean.apiURL":                   "https://do-proxy.internal.example/",
				"drivers.digitalocean.firewall.name":            "k8s-public-access",
				"drivers.digitalocean.firewall.tags":            []any{"k8s:worker", "k8s:pool-a"},
				"drivers.digitalocean.loadBalancer.defaultType": "REGIONAL",
			},
			notes: []string{"{env: DO_ACCESS_TOKEN}", "the value was not copied"},
		},
		{
			name: "what has no polyccm setting is refused",
			env: map[string]string{
				"DO_ACCESS_TOKEN":      doToken,
				"DEBUG_ADDR":           ":8081", // a /healthz server of its own
				"METRICS_ADDR":         "0.0.0.0:9090",
				"DO_ACCESS_TOKEN_PATH": "/etc/do/token", // upstream does not read it
				"DO_FROBNICATE":        "1",
				"HOME":                 "/root", // in an env file, every variable is the CCM's
			},
			unmapped: []string{"DEBUG_ADDR", "METRICS_ADDR", "DO_ACCESS_TOKEN_PATH", "DO_FROBNICATE", "HOME"},
		},
		{
			name: "defaults and ignored values are left out",
			env: map[string]string{
				"DO_ACCESS_TOKEN": doToken,
				// Upstream uses REGIONAL_NETWORK for anything but its two types.
				"DEFAULT_LB_TYPE": "GLOBAL",
				"DO_CLUSTER_ID":   "12345", // stays a string
			},
			want:   map[string]any{"drivers.digitalocean.clusterID": "12345"},
			absent: []string{"drivers.digitalocean.loadBalancer", "controllers", "clusterName"},
			notes:  []string{"ignored \"GLOBAL\"", "no upstream command line was given"},
		},
		{
			name:  "no token in the environment file: still the variable upstream reads",
			env:   map[string]string{"REGION": "nyc3"},
			want:  map[string]any{"drivers.digitalocean.token": map[string]any{"env": "DO_ACCESS_TOKEN"}},
			notes: []string{"not in ccm.env"},
		},
		{
			name:     "an API URL with credentials is not copied",
			env:      map[string]string{"DO_ACCESS_TOKEN": doToken, "DO_OVERRIDE_URL": "https://user:" + robotPass + "@proxy.example/"},
			absent:   []string{"drivers.digitalocean.apiURL"},
			unmapped: []string{"DO_OVERRIDE_URL"},
		},
		{
			name:    "a firewall name without tags stops upstream too",
			env:     map[string]string{"DO_ACCESS_TOKEN": doToken, "PUBLIC_ACCESS_FIREWALL_NAME": "fw"},
			invalid: []string{"PUBLIC_ACCESS_FIREWALL_NAME and PUBLIC_ACCESS_FIREWALL_TAGS go together"},
		},
		{
			name:    "a rate that is not a number",
			env:     map[string]string{"DO_ACCESS_TOKEN": doToken, "DO_API_RATE_LIMIT_QPS": "fast"},
			invalid: []string{"DO_API_RATE_LIMIT_QPS", "not a number"},
		},
	})
}

// The loaded driver config is what the DigitalOcean CCM ran with.
func TestDigitalOceanLoads(t *testing.T) {
	res, err := Import(Input{From: "digitalocean", EnvFile: true, Env: map[string]string{
		"DO_ACCESS_TOKEN": doToken, "DO_CLUSTER_ID": "abc", "PUBLIC_ACCESS_FIREWALL_NAME": "fw", "PUBLIC_ACCESS_FIREWALL_TAGS": "k8s:worker",
	}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := load(t, res.YAML)
	dc := cfg.DriverConfig().(*digitalocean.Config)
	if dc.Token != (secret.Secret{Env: "DO_ACCESS_TOKEN"}) || dc.ClusterID != "abc" || dc.Firewall.Name != "fw" || len(dc.Firewall.Tags) != 1 {
		t.Errorf("loaded %+v", dc)
	}
	if v, err := dc.Token.Reveal(); err != nil || v != doToken {
		t.Errorf("the token reference does not read the variable: %v", err)
	}
}
