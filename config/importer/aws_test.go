package importer

import (
	"testing"

	"github.com/polyccm/polyccm/drivers/aws"
)

// The cloud configs are cloud-provider-aws's
// (pkg/providers/v1/config/config.go CloudConfig: [Global] and
// [ServiceOverride "N"], read with gcfg in pkg/providers/v1/aws.go
// readAWSCloudConfig; the region from Zone or Region in
// getRegionFromMetadata; the cluster ID in tags.go awsTagging.init), as kops
// and the upstream docs write them; the tagging controller is
// cmd/aws-cloud-controller-manager/main.go's.
func TestAWS(t *testing.T) {
	runCases(t, "aws", []importCase{
		{
			name: "kops cloud config, CCM outside the VPC",
			cloudConfig: `[global]
Zone = us-east-1a
VPC = vpc-0a1b2c3d4e5f60718
KubernetesClusterTag = prod.k8s.local
SubnetID = subnet-0123456789abcdef0
DisableSecurityGroupIngress = false
ElbSecurityGroup = sg-0123456789abcdef0
NodeIPFamilies = ipv4
NodeIPFamilies = ipv6
`,
			want: map[string]any{
				"driver":                     "aws",
				"drivers.aws.region":         "us-east-1", // azToRegion(Zone)
				"drivers.aws.vpcID":          "vpc-0a1b2c3d4e5f60718",
				"drivers.aws.clusterID":      "prod.k8s.local", // the legacy tag's ID
				"drivers.aws.nodeIPFamilies": []any{"ipv4", "ipv6"},
			},
			absent:   []string{"clusterName", "drivers.aws.disableSecurityGroupIngress", "controllers"},
			unmapped: []string{"SubnetID", "ElbSecurityGroup"},
			notes:    []string{"legacy KubernetesCluster=prod.k8s.local tag", "NLBSecurityGroupMode is not Managed"},
		},
		{
			name: "cluster ID and --cluster-name",
			cloudConfig: `[Global]
Region = eu-central-1
Zone = eu-west-1b ; wins over Region
kubernetesclusterid = prod-eu
DisableSecurityGroupIngress
RoleARN = arn:aws:iam::123456789012:role/ccm
NLBSecurityGroupMode = Managed
SupportedTopologyInstanceTypePattern = "^(p5|trn2)\\..*$"
ClusterServiceLoadBalancerHealthProbeMode = ServiceNodePort
ClusterServiceSharedLoadBalancerHealthProbePath = /healthz
`,
			args: "aws-cloud-controller-manager --cloud-provider=aws --cluster-name=prod --configure-cloud-routes=false --v=2",
			want: map[string]any{
				"clusterName":                                      "prod",
				"drivers.aws.clusterID":                            "prod-eu", // differs from the name
				"drivers.aws.region":                               "eu-west-1",
				"drivers.aws.disableSecurityGroupIngress":          true, // a bare name is true in gcfg
				"drivers.aws.roleARN":                              "arn:aws:iam::123456789012:role/ccm",
				"drivers.aws.supportedTopologyInstanceTypePattern": `^(p5|trn2)\..*$`,
				"controllers.routes":                               false,
				"controllers.nodes":                                true,
				"logging.verbosity":                                2,
			},
			notes: []string{"used the region of Zone (eu-west-1)", "ClusterServiceSharedLoadBalancerHealthProbePath: ignored"},
		},
		{
			name:        "the cluster ID equal to --cluster-name is not repeated",
			cloudConfig: "[Global]\nKubernetesClusterID = prod\n",
			args:        "--cluster-name=prod --configure-cloud-routes=false",
			want:        map[string]any{"clusterName": "prod"},
			absent:      []string{"drivers.aws.clusterID"},
		},
		{
			name:   "no cluster ID and no name: both left to the instance tag",
			args:   "--configure-cloud-routes=false",
			absent: []string{"clusterName", "drivers.aws.clusterID"},
			notes:  []string{"clusterName: left unset", "kubernetes.io/cluster/<id> tag of the instance it runs on"},
		},
		{
			name:   "only --cluster-name: the ID came from the instance upstream",
			args:   "--cluster-name=prod --configure-cloud-routes=false",
			want:   map[string]any{"clusterName": "prod"},
			absent: []string{"drivers.aws.clusterID"},
			notes:  []string{"if that instance's tag names another <id>, set drivers.aws.clusterID"},
		},
		{
			name: "the cluster ID without --cluster-name keeps upstream's default name",
			// Unset, clusterName would make polyccm look the ID up.
			cloudConfig: "[Global]\nKubernetesClusterID = kubernetes\n",
			want:        map[string]any{"drivers.aws.clusterID": "kubernetes"},
			absent:      []string{"clusterName"},
		},
		{
			name: "service overrides",
			cloudConfig: `[Global]
Region = eu-west-1

[ServiceOverride "ec2"]
Service = EC2
Region = eu-west-1
URL = https://vpce-0abc.ec2.eu-west-1.vpce.amazonaws.com
SigningRegion = eu-west-1
SigningName = ec2

[ServiceOverride "elb"]
Service = elasticloadbalancing
Region = eu-west-1
URL = https://elb.internal.example
SigningRegion = eu-west-1

[ServiceOverride "imds"]
Service = ec2imds
Region = any
URL = http://[fd00:ec2::254]
SigningRegion = any

[ServiceOverride "other-region"]
Service = EC2
Region = us-east-1
URL = https://ec2.us-east-1.example
SigningRegion = us-east-1

[ServiceOverride "s3"]
Service = s3
Region = eu-west-1
URL = https://s3.internal.example
SigningRegion = eu-west-1

[ServiceOverride "signed"]
Service = Elastic Load Balancing v2
Region = eu-west-1
URL = https://elbv2.internal.example
SigningRegion = eu-central-1
`,
			want: map[string]any{
				"drivers.aws.endpoints.ec2":   "https://vpce-0abc.ec2.eu-west-1.vpce.amazonaws.com",
				"drivers.aws.endpoints.elb":   "https://elb.internal.example", // SDK v1's name for both
				"drivers.aws.endpoints.elbv2": "https://elb.internal.example",
				"drivers.aws.endpoints.imds":  "http://[fd00:ec2::254]",
			},
			unmapped: []string{`[ServiceOverride "signed"]`},
			notes:    []string{"polyccm does not call s3", "only in region us-east-1", "(Elastic Load Balancing and Elastic Load Balancing v2) exactly"},
		},
		{
			name: "static keys become references",
			env:  map[string]string{"AWS_ACCESS_KEY_ID": awsKeyID, "AWS_SECRET_ACCESS_KEY": awsSecret, "AWS_PROFILE": "ccm", "AWS_REGION": "eu-west-1", "AWS_STS_REGIONAL_ENDPOINTS": "regional"},
			want: map[string]any{
				"drivers.aws.accessKeyID":     map[string]any{"env": "AWS_ACCESS_KEY_ID"},
				"drivers.aws.secretAccessKey": map[string]any{"env": "AWS_SECRET_ACCESS_KEY"},
				"drivers.aws.profile":         "ccm",
			},
			absent: []string{"drivers.aws.region"},
			notes:  []string{"{env: AWS_SECRET_ACCESS_KEY}", "never from AWS_REGION", "AWS_STS_REGIONAL_ENDPOINTS: read by the AWS SDK"},
		},
		{
			name:   "temporary keys are left to the SDK",
			env:    map[string]string{"AWS_ACCESS_KEY_ID": awsKeyID, "AWS_SECRET_ACCESS_KEY": awsSecret, "AWS_SESSION_TOKEN": awsSession},
			absent: []string{"drivers.aws.accessKeyID", "drivers.aws.secretAccessKey"},
			notes:  []string{"AWS_SESSION_TOKEN: temporary keys"},
		},
		{
			name: "what polyccm cannot do is refused",
			cloudConfig: `[Global]
KubernetesClusterID = prod
RouteTableID = rtb-0123456789abcdef0
SourceARN = arn:aws:eks:eu-west-1:123456789012:cluster/prod
ClusterServiceLoadBalancerHealthProbeMode = Shared
ClusterServiceSharedLoadBalancerHealthProbePort = 10256
DisableSecurityGroupIngres = true
[Tags]
Owner = me
`,
			args:     "--cluster-name=prod --controllers=*,tagging-controller --tags=Team=infra --resources=instance --configure-cloud-routes=false",
			unmapped: []string{"RouteTableID", "SourceARN", "ClusterServiceLoadBalancerHealthProbeMode", "ClusterServiceSharedLoadBalancerHealthProbePort", "DisableSecurityGroupIngres", "[Tags] Owner", "--controllers"},
		},
		{
			name:        "two cluster IDs stop upstream too",
			cloudConfig: "[Global]\nKubernetesClusterTag = a\nKubernetesClusterID = b\n",
			invalid:     []string{"KubernetesClusterTag", "did not match"},
		},
		{
			name:        "an override without a URL stops upstream too",
			cloudConfig: "[Global]\n[ServiceOverride \"1\"]\nService = EC2\nRegion = eu-west-1\nSigningRegion = eu-west-1\n",
			invalid:     []string{`[ServiceOverride "1"] has no URL`},
		},
		{
			name:        "not a boolean",
			cloudConfig: "[Global]\nDisableSecurityGroupIngress = maybe\n",
			invalid:     []string{"DisableSecurityGroupIngress", "not a boolean"},
		},
	})
}

// The imported config drives the AWS driver as upstream ran: the cluster
// ID and name apart.
func TestAWSLoads(t *testing.T) {
	res, err := Import(Input{From: "aws",
		CloudConfig: []byte("[Global]\nZone = eu-west-1a\nKubernetesClusterID = prod-eu\n"),
		Args:        []string{"--cluster-name=prod", "--configure-cloud-routes=false"},
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := load(t, res.YAML)
	dc := cfg.DriverConfig().(*aws.Config)
	if cfg.ClusterName != "prod" || cfg.ClusterNameDefault || dc.ClusterID != "prod-eu" || dc.Region != "eu-west-1" {
		t.Errorf("loaded clusterName %q (default %v), %+v", cfg.ClusterName, cfg.ClusterNameDefault, dc)
	}

	// Neither: polyccm must be left to find the ID, not given "kubernetes".
	res, err = Import(Input{From: "aws", CloudConfig: []byte("[Global]\nRegion = eu-west-1\n")})
	if err != nil {
		t.Fatal(err)
	}
	if cfg := load(t, res.YAML); !cfg.ClusterNameDefault || cfg.DriverConfig().(*aws.Config).ClusterID != "" {
		t.Errorf("clusterName set (%q) or clusterID %q: the cluster ID would not be looked up", cfg.ClusterName, cfg.DriverConfig().(*aws.Config).ClusterID)
	}
}
