package importer

import (
	"testing"

	"github.com/polyccm/polyccm/drivers/openstack"
)

// The cloud configs are openstack-cloud-controller-manager's
// (pkg/openstack/openstack.go Config, [Global] from pkg/client/client.go
// AuthOpts, read with gcfg in ReadConfig), as its docs and Magnum write
// them; the command line is its manifests' (with AddExtraFlags'
// --user-agent).
func TestOpenStack(t *testing.T) {
	caFile := secretFile(t, "-----BEGIN CERTIFICATE-----\n")
	runCases(t, "openstack", []importCase{
		{
			name: "application credential, networking, router, load balancers",
			cloudConfig: `[Global]
auth-url = https://keystone.example.com:5000/v3
region = RegionOne
application-credential-id = 0123456789abcdef0123456789abcdef
application-credential-secret = "` + osAppSecret + `"
ca-file = ` + caFile + `
tls-insecure = false

[Networking]
public-network-name = public
public-network-name = ext-net
internal-network-name = k8s
address-sort-order = 10.0.0.0/8, 192.168.0.0/16
ipv6-support-disabled = true

[Route]
router-id = 5a1e7c2e-3f49-4c1b-9d8e-2b6f0e4a7d10

[LoadBalancer]
floating-network-id = 3e1b7c9a-0d2f-4a5b-8c6d-9e0f1a2b3c4d
lb-provider = ovn

[LoadBalancerClass "internal"]
subnet-id = 7c6b5a4d-3e2f-4a1b-9c8d-7e6f5a4b3c2d

[Metadata]
search-order = configDrive,metadataService

[BlockStorage]
bs-version = v3
`,
			env:  map[string]string{"OS_CCM_REGIONAL": "true"},
			args: "/bin/openstack-cloud-controller-manager --cloud-provider=openstack --cloud-config=/etc/config/cloud.conf --cluster-name=prod --cluster-cidr=10.244.0.0/16 --user-agent=magnum --v=2",
			want: map[string]any{
				"driver":                                        "openstack",
				"clusterName":                                   "prod",
				"controllers.routes":                            true, // router-id: Routes() is there
				"controllers.services":                          false,
				"routes.clusterCIDR":                            "10.244.0.0/16",
				"drivers.openstack.authURL":                     "https://keystone.example.com:5000/v3",
				"drivers.openstack.region":                      "RegionOne",
				"drivers.openstack.applicationCredentialID":     "0123456789abcdef0123456789abcdef",
				"drivers.openstack.applicationCredentialSecret": map[string]any{"env": "OS_APPLICATION_CREDENTIAL_SECRET"},
				"drivers.openstack.caFile":                      caFile,
				"drivers.openstack.regionalProviderID":          true,
				"drivers.openstack.routerID":                    "5a1e7c2e-3f49-4c1b-9d8e-2b6f0e4a7d10",
				"drivers.openstack.networking": map[string]any{
					"publicNetworkNames":   []any{"public", "ext-net"},
					"internalNetworkNames": []any{"k8s"},
					"addressSortOrder":     "10.0.0.0/8, 192.168.0.0/16",
					"ipv6SupportDisabled":  true,
				},
			},
			absent: []string{"drivers.openstack.password"},
			notes: []string{
				"{env: OS_APPLICATION_CREDENTIAL_SECRET}", "{credential: openstack-application-credential-secret}",
				"[LoadBalancer] floating-network-id: polyccm serves no OpenStack load balancers yet",
				"[LoadBalancer] lb-provider: polyccm serves no OpenStack load balancers yet",
				`[LoadBalancerClass "internal"] subnet-id: polyccm serves no`,
				"search-order: polyccm reads no instance metadata", "bs-version: read by the Cinder CSI driver",
				"--user-agent: polyccm sends its own", "keep openstack-cloud-controller-manager running for them",
			},
		},
		{
			name: "password with names and a domain",
			cloudConfig: `[Global]
auth-url=https://keystone.example.com/identity/v3
username=k8s-ccm
password=` + osPassword + `
tenant-name=k8s
domain-name=Default
region=RegionTwo
os-endpoint-type=internal
`,
			want: map[string]any{
				"drivers.openstack.username":     "k8s-ccm",
				"drivers.openstack.password":     map[string]any{"env": "OS_PASSWORD"},
				"drivers.openstack.projectName":  "k8s",
				"drivers.openstack.domainName":   "Default",
				"drivers.openstack.region":       "RegionTwo",
				"drivers.openstack.endpointType": "internal",
			},
			absent: []string{"controllers", "drivers.openstack.routerID", "drivers.openstack.applicationCredentialSecret"},
			notes:  []string{"{env: OS_PASSWORD}", "no upstream command line"},
		},
		{
			name: "clouds.yaml's project names, which upstream's cloud.conf ignores",
			cloudConfig: `[Global]
auth-url=https://keystone.example.com/v3
user-id=9f8e7d6c5b4a39281706f5e4d3c2b1a0
password=` + osPassword + `
project-id=aaaabbbbccccddddeeeeffff00001111
project-domain-name=Default
region=RegionOne
`,
			want:  map[string]any{"drivers.openstack.projectID": "aaaabbbbccccddddeeeeffff00001111", "drivers.openstack.projectDomainName": "Default"},
			notes: []string{"project-id: openstack-cloud-controller-manager ignores it in cloud.conf (its key is tenant-id"},
		},
		{
			name: "tenant-id wins over project-id; a password beside an application credential is left out",
			cloudConfig: `[Global]
auth-url=https://keystone.example.com/v3
region=RegionOne
username=ccm
user-domain-id=default
password=` + osPassword + `
tenant-id=00001111222233334444555566667777
project-id=aaaabbbbccccddddeeeeffff00001111
application-credential-name=ccm-cred
application-credential-secret=` + osAppSecret + `
`,
			env: map[string]string{"OS_AUTH_URL": "https://keystone.example.com/v3", "OS_APPLICATION_CREDENTIAL_SECRET": osAppSecret, "OS_CCM_REGIONAL": "yes"},
			want: map[string]any{
				"drivers.openstack.projectID":                   "00001111222233334444555566667777",
				"drivers.openstack.applicationCredentialName":   "ccm-cred",
				"drivers.openstack.applicationCredentialSecret": map[string]any{"env": "OS_APPLICATION_CREDENTIAL_SECRET"},
			},
			absent: []string{"drivers.openstack.password", "drivers.openstack.regionalProviderID"},
			notes: []string{
				"project-id: ignored, as upstream ignores it (its cloud.conf key is tenant-id",
				"password: cloud.conf gives a password and an application credential; polyccm authenticates with one, the application credential",
				"OS_APPLICATION_CREDENTIAL_SECRET: openstack-cloud-controller-manager does not read it",
				"OS_AUTH_URL: openstack-cloud-controller-manager does not read OS_*",
				`OS_CCM_REGIONAL: upstream writes openstack:///<id> providerIDs unless it is exactly "true"`,
			},
		},
		{
			name: "what polyccm cannot do is refused, secrets unshown",
			cloudConfig: `[Global]
auth-url = https://user:` + osPassword + `@keystone.example.com/v3
region = RegionOne
application-credential-id = 0123456789abcdef0123456789abcdef
application-credential-secret = ` + osAppSecret + `
tls-insecure = true
token = ` + osToken + `
trust-id = 1a2b3c
trustee-id = 4d5e6f
trustee-password = ` + osTrustee + `
cert-file = /etc/ssl/ccm.crt
key-file = /etc/ssl/ccm.key
use-clouds = true
cloud = mycloud
os-endpoint-type = publicURL
mystery-key = 1
[Networking]
public-network = public
[Route]
router = r1
[Unknown]
x = 1
`,
			env:         map[string]string{"OS_CLOUD": "mycloud", "UNRELATED": "1"},
			unmapped:    []string{"auth-url", "tls-insecure", "token", "trust-id", "trustee-id", "trustee-password", "cert-file", "key-file", "os-endpoint-type", "mystery-key", "public-network", "router", "[Unknown", "UNRELATED"},
			noRoundTrip: true, // no authURL
		},
		{
			name: "use-clouds: the clouds.yaml upstream read, and its entry",
			cloudConfig: `[Global]
use-clouds = true
clouds-file = /ignored/by/upstream.yaml
region = RegionTwo
`,
			env: map[string]string{"OS_CLIENT_CONFIG_FILE": "/etc/kubernetes/clouds.yaml", "OS_CLOUD": "prod"},
			want: map[string]any{
				"drivers.openstack.clouds": map[string]any{"file": "/etc/kubernetes/clouds.yaml"},
				"drivers.openstack.cloud":  "prod",
				"drivers.openstack.region": "RegionTwo",
			},
			absent:      []string{"drivers.openstack.password", "drivers.openstack.applicationCredentialSecret"},
			notes:       []string{"clouds-file: ignored, as upstream ignores it", "keys in cloud.conf win over it"},
			noRoundTrip: true, // the clouds.yaml is not there to read
		},
		{
			name:        "a bad boolean stops upstream",
			cloudConfig: "[Global]\nauth-url=https://k.example.com/v3\n[Networking]\nipv6-support-disabled = maybe\n",
			invalid:     []string{"ipv6-support-disabled", "not a boolean"},
		},
		{
			name:        "a bad request-timeout stops upstream",
			cloudConfig: "[Global]\nauth-url=https://k.example.com/v3\n[Metadata]\nrequest-timeout = 5\n",
			invalid:     []string{"request-timeout", "not a duration"},
		},
		{
			name:    "no cloud.conf",
			env:     map[string]string{"OS_CCM_REGIONAL": "true"},
			invalid: []string{"does not start without its cloud.conf"},
		},
		{
			name:        "routes without a cluster CIDR do not start upstream",
			cloudConfig: "[Global]\nauth-url=https://k.example.com/v3\nregion=R\napplication-credential-id=a\napplication-credential-secret=" + osAppSecret + "\n[Route]\nrouter-id=r\n",
			args:        "--leader-elect=true",
			want:        map[string]any{"controllers.routes": false},
			unmapped:    []string{"--configure-cloud-routes"},
		},
	})
}

// Upstream's load balancers, when it had them, are left to it: a note
// says so, and none is made up when it had none.
func TestOpenStackLoadBalancers(t *testing.T) {
	const conf = "[Global]\nauth-url=https://k.example.com/v3\nregion=R\napplication-credential-id=a\napplication-credential-secret=" + osAppSecret + "\n"
	for _, c := range []struct {
		name, conf, args string
		note             bool
	}{
		{"default: enabled, every controller", conf, "", true},
		{"enabled, --controllers=*", conf, "--controllers=*", true},
		{"[LoadBalancer] enabled = false", conf + "[LoadBalancer]\nenabled = false\n", "", false},
		{"the service controller not run", conf, "--controllers=cloud-node,cloud-node-lifecycle", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := Import(importCase{cloudConfig: c.conf, args: c.args}.input("openstack"))
			if err != nil {
				t.Fatal(err)
			}
			if got := containsItem(res.Notes, "keep openstack-cloud-controller-manager running for them"); got != c.note {
				t.Errorf("the load balancer note is there: %v, want %v; notes:\n%s", got, c.note, items(res.Notes))
			}
		})
	}
}

func TestOpenStackLoads(t *testing.T) {
	res, err := Import(Input{From: "openstack", CloudConfig: []byte(`[Global]
auth-url = https://keystone.example.com:5000/v3
region = RegionOne
username = ccm
user-domain-name = Default
password = "` + osPassword + `"
tenant-id = 00001111222233334444555566667777
[Networking]
public-network-name = public
`), Env: map[string]string{"OS_CCM_REGIONAL": "true"}, EnvFile: true})
	if err != nil {
		t.Fatal(err)
	}
	dc := load(t, res.YAML).DriverConfig().(*openstack.Config)
	if dc.Password.Env != "OS_PASSWORD" || dc.ProjectID != "00001111222233334444555566667777" || dc.UserDomainName != "Default" ||
		!dc.RegionalProviderID || len(dc.Networking.PublicNetworkNames) != 1 {
		t.Errorf("loaded %+v", dc)
	}
}
