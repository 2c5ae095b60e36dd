package importer

import (
	"testing"

	"github.com/polyccm/polyccm/drivers/hetzner"
)

// The variables are hcloud-cloud-controller-manager's
// (internal/config/config.go Read, internal/config/load_balancer_envs.go);
// the command line is its deploy/ccm-networks.yaml one.
func TestHetzner(t *testing.T) {
	tokenPath := secretFile(t, hcloudToken+"\n")
	runCases(t, "hetzner", []importCase{
		{
			name: "networks deployment",
			env: map[string]string{
				"HCLOUD_TOKEN":                                  hcloudToken,
				"HCLOUD_NETWORK":                                "1234567", // a Network ID stays a string
				"HCLOUD_ENDPOINT":                               "https://hcloud-proxy.example/v1",
				"HCLOUD_INSTANCES_ADDRESS_FAMILY":               "dualstack",
				"HCLOUD_INSTANCES_ZONE_LABEL_ENABLED":           "false",
				"HCLOUD_LOAD_BALANCERS_LOCATION":                "fsn1",
				"HCLOUD_LOAD_BALANCERS_TYPE":                    "lb21",
				"HCLOUD_LOAD_BALANCERS_ALGORITHM_TYPE":          " Least_Connections ", // trimmed, lower-cased upstream
				"HCLOUD_LOAD_BALANCERS_USE_PRIVATE_IP":          "true",
				"HCLOUD_LOAD_BALANCERS_DISABLE_PRIVATE_INGRESS": "1",
				"HCLOUD_LOAD_BALANCERS_DISABLE_IPV6":            "false",
				"HCLOUD_LOAD_BALANCERS_USES_PROXYPROTOCOL":      "true",
				"HCLOUD_LOAD_BALANCERS_PRIVATE_SUBNET_IP_RANGE": "10.0.1.0/24",
				"HCLOUD_LOAD_BALANCERS_HEALTH_CHECK_INTERVAL":   "5s",
				"HCLOUD_LOAD_BALANCERS_HEALTH_CHECK_TIMEOUT":    "3s",
				"HCLOUD_LOAD_BALANCERS_HEALTH_CHECK_RETRIES":    "5",
				"HCLOUD_SERVER_CACHE_MAX_AGE":                   "20s",
			},
			args: "/bin/hcloud-cloud-controller-manager --cloud-provider=hcloud --leader-elect=false --allow-untagged-cloud --allocate-node-cidrs=true --cluster-cidr=10.244.0.0/16",
			want: map[string]any{
				"driver":                                             "hetzner",
				"controllers.routes":                                 true, // HCLOUD_NETWORK: Routes() is there
				"routes.clusterCIDR":                                 "10.244.0.0/16",
				"leaderElection.enabled":                             false,
				"cloudAPI.cacheTTL":                                  "20s",
				"drivers.hetzner.token":                              map[string]any{"env": "HCLOUD_TOKEN"},
				"drivers.hetzner.network":                            "1234567",
				"drivers.hetzner.apiURL":                             "https://hcloud-proxy.example/v1",
				"drivers.hetzner.instances":                          map[string]any{"addressFamily": "dualstack", "zoneLabel": false},
				"drivers.hetzner.loadBalancer.location":              "fsn1",
				"drivers.hetzner.loadBalancer.type":                  "lb21",
				"drivers.hetzner.loadBalancer.algorithm":             "least_connections",
				"drivers.hetzner.loadBalancer.usePrivateIP":          true,
				"drivers.hetzner.loadBalancer.disablePrivateIngress": true,
				"drivers.hetzner.loadBalancer.usesProxyProtocol":     true,
				"drivers.hetzner.loadBalancer.privateSubnetIPRange":  "10.0.1.0/24",
				"drivers.hetzner.loadBalancer.healthCheck":           map[string]any{"interval": "5s", "timeout": "3s", "retries": 5},
			},
			absent: []string{"drivers.hetzner.loadBalancer.disableIPv6", "clusterName"},
			notes:  []string{"{env: HCLOUD_TOKEN}", "runs no node IPAM controller"},
		},
		{
			name: "token from a file; routes and load balancers off",
			env: map[string]string{
				"HCLOUD_TOKEN_FILE":             tokenPath, // envutil.LookupEnvWithFile
				"HCLOUD_NETWORK":                "k8s",
				"HCLOUD_NETWORK_ROUTES_ENABLED": "false",
				"HCLOUD_LOAD_BALANCERS_ENABLED": "false",
			},
			args: "--cluster-cidr=10.244.0.0/16",
			want: map[string]any{
				"drivers.hetzner.token": map[string]any{"file": tokenPath},
				"controllers.routes":    false,
				"controllers.services":  false,
			},
			notes: []string{"{file: " + tokenPath + "}"},
		},
		{
			name:   "load balancers off without a command line",
			env:    map[string]string{"HCLOUD_TOKEN": hcloudToken, "HCLOUD_LOAD_BALANCERS_ENABLED": "false", "HCLOUD_NETWORK": "k8s"},
			want:   map[string]any{"controllers.services": false},
			absent: []string{"controllers.routes"},
			notes:  []string{"controllers.routes stays off"},
		},
		{
			name: "HCLOUD_TOKEN wins over HCLOUD_TOKEN_FILE, as upstream",
			env:  map[string]string{"HCLOUD_TOKEN": hcloudToken, "HCLOUD_TOKEN_FILE": "/nonexistent"},
			want: map[string]any{"drivers.hetzner.token": map[string]any{"env": "HCLOUD_TOKEN"}},
		},
		{
			name:   "false where upstream has three states is a note",
			env:    map[string]string{"HCLOUD_TOKEN": hcloudToken, "HCLOUD_LOAD_BALANCERS_DISABLE_PUBLIC_NETWORK": "false"},
			absent: []string{"drivers.hetzner.loadBalancer"},
			notes:  []string{"give those Services the annotation"},
		},
		{
			name: "Robot, metrics and unknown variables are refused",
			env: map[string]string{
				"HCLOUD_TOKEN":              hcloudToken,
				"ROBOT_ENABLED":             "true",
				"ROBOT_USER":                "robot-user",
				"ROBOT_PASSWORD":            robotPass,
				"HCLOUD_METRICS_ADDRESS":    ":8233",
				"HCLOUD_DEBUG":              "true",
				"HCLOUD_LOADBALANCERS_TYPE": "lb11", // misspelt: upstream never read it
			},
			unmapped: []string{"ROBOT_ENABLED", "ROBOT_USER", "ROBOT_PASSWORD", "HCLOUD_METRICS_ADDRESS", "HCLOUD_DEBUG", "HCLOUD_LOADBALANCERS_TYPE"},
		},
		{
			name:  "Robot credentials without Robot are ignored, as upstream",
			env:   map[string]string{"HCLOUD_TOKEN": hcloudToken, "ROBOT_PASSWORD": robotPass},
			notes: []string{"ROBOT_PASSWORD: ignored"},
		},
		{
			name:     "routes without a cluster CIDR do not start upstream",
			env:      map[string]string{"HCLOUD_TOKEN": hcloudToken, "HCLOUD_NETWORK": "k8s"},
			args:     "--leader-elect=true",
			want:     map[string]any{"controllers.routes": false},
			unmapped: []string{"--configure-cloud-routes"},
		},
		{
			name:    "not a boolean",
			env:     map[string]string{"HCLOUD_TOKEN": hcloudToken, "HCLOUD_LOAD_BALANCERS_USE_PRIVATE_IP": "yes please"},
			invalid: []string{"HCLOUD_LOAD_BALANCERS_USE_PRIVATE_IP", "not a boolean"},
		},
	})
}

func TestHetznerLoads(t *testing.T) {
	res, err := Import(Input{From: "hetzner", EnvFile: true, Env: map[string]string{
		"HCLOUD_TOKEN": hcloudToken, "HCLOUD_NETWORK": "k8s", "HCLOUD_LOAD_BALANCERS_HEALTH_CHECK_INTERVAL": "1m",
	}})
	if err != nil {
		t.Fatal(err)
	}
	dc := load(t, res.YAML).DriverConfig().(*hetzner.Config)
	if dc.Network != "k8s" || dc.LoadBalancer.HealthCheck.Interval.Seconds() != 60 || !dc.Instances.ZoneLabel {
		t.Errorf("loaded %+v", dc)
	}
}
