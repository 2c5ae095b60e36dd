// Package aws is polyccm's AWS driver: EC2 instances for nodes, Classic
// Load Balancers (elasticloadbalancing) or Network Load Balancers
// (elasticloadbalancingv2, instance targets) for Services, VPC
// route tables for pod CIDRs, and EBS volumes' zones for PersistentVolume
// labels, over aws-sdk-go-v2. It translates between the
// AWS APIs and polyccm's core contracts; batching, caching, retries and
// metrics come from core.
package aws

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	corelisters "k8s.io/client-go/listers/core/v1"

	"github.com/polyccm/polyccm/config"
	"github.com/polyccm/polyccm/config/secret"
	"github.com/polyccm/polyccm/core/batch"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/instances"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// Name is the driver's name in the config and in build tags.
const Name = "aws"

// Config is the drivers.aws subtree.
type Config struct {
	// Region of the cluster; empty: asked of the instance metadata service.
	Region string `koanf:"region"`
	// Profile selects a profile from the shared config and credentials
	// files; empty: the SDK's default chain decides.
	Profile string `koanf:"profile"`
	// AccessKeyID and SecretAccessKey give static keys (both or neither);
	// without them the SDK's default chain finds credentials
	// (environment, shared files, web identity, the instance role).
	AccessKeyID     secret.Secret `koanf:"accessKeyID" secret:"token"`
	SecretAccessKey secret.Secret `koanf:"secretAccessKey" secret:"token"`
	// RoleARN, if set, is assumed through STS with those credentials.
	RoleARN string `koanf:"roleARN"`
	// ExternalID goes with RoleARN when the role's trust policy asks.
	ExternalID string `koanf:"externalID"`
	// ClusterID is the cluster ID the AWS CCM's [Global] KubernetesClusterID
	// gives: the <id> of the kubernetes.io/cluster/<id> tags and of target
	// group names. Empty: clusterName when the config sets it, else the
	// cluster tag of the instance polyccm runs on, as the AWS CCM finds it.
	// Set it only when the AWS CCM ran with a cluster ID other than its
	// --cluster-name (which clusterName is).
	ClusterID string `koanf:"clusterID"`
	// VPCID is the cluster's VPC (subnet discovery, security groups,
	// routes); empty: the VPC of the instance polyccm runs on.
	VPCID string `koanf:"vpcID"`
	// Endpoints override the service URLs (private VPC endpoints, other
	// partitions, test doubles).
	Endpoints Endpoints `koanf:"endpoints"`
	// NodeIPFamilies are the address families a Node gets, in order
	// ("ipv4", "ipv6"), as the AWS CCM's NodeIPFamilies: kubelet takes the
	// first InternalIP as the node IP. Empty: ["ipv4"], its default.
	NodeIPFamilies []string `koanf:"nodeIPFamilies"`
	// SupportedTopologyInstanceTypePattern is a regular expression of the
	// instance types that have a network topology (the AWS CCM's setting
	// of that name): their Nodes are not initialized without the
	// topology.k8s.aws/network-node-layer-N labels. Empty: the AWS CCM's
	// default, hpc, trn and p types. Other types are asked about once a
	// day and labelled when EC2 has a topology for them.
	SupportedTopologyInstanceTypePattern string `koanf:"supportedTopologyInstanceTypePattern"`
	// DisableSecurityGroupIngress leaves the nodes' security groups to the
	// operator, as the AWS CCM's setting of that name: polyccm then adds
	// no rules letting load balancers in.
	DisableSecurityGroupIngress bool `koanf:"disableSecurityGroupIngress"`
	// LoadBalancer holds the load balancer settings.
	LoadBalancer LoadBalancerConfig `koanf:"loadBalancer"`
}

// LoadBalancerConfig is drivers.aws.loadBalancer.
type LoadBalancerConfig struct {
	// DefaultType is what a Service without the aws-load-balancer-type
	// annotation gets: classic (the AWS CCM's default) or nlb.
	DefaultType LBType `koanf:"defaultType"`
}

// LBType is a load balancer type the driver makes for a Service.
type LBType string

// Load balancer types a Service can get.
const (
	TypeClassic LBType = "classic"
	TypeNLB     LBType = "nlb"
	// DefaultLBType is drivers.aws.loadBalancer.defaultType's default,
	// the AWS CCM's: every statement of the default derives from it.
	DefaultLBType = TypeClassic
)

// ipFamilies is NodeIPFamilies with the default.
func (c *Config) ipFamilies() []string {
	if len(c.NodeIPFamilies) == 0 {
		return []string{"ipv4"}
	}
	return c.NodeIPFamilies
}

// Endpoints are per-service endpoint overrides.
type Endpoints struct {
	EC2   string `koanf:"ec2"`
	ELB   string `koanf:"elb"` // Classic Load Balancers
	ELBv2 string `koanf:"elbv2"`
	STS   string `koanf:"sts"`
	IMDS  string `koanf:"imds"`
}

var (
	regionRE = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-\d+$`)
	vpcRE    = regexp.MustCompile(`^vpc-[0-9a-f]{8,17}$`)
	// A tag key is at most 128 characters, 22 of them kubernetes.io/cluster/.
	clusterIDRE = regexp.MustCompile(`^[\pL\pN _.:/=+\-@]{1,106}$`)
	arnRE       = regexp.MustCompile(`^arn:aws[a-z-]*:iam::\d{12}:role/.+$`)
)

// Validate checks the subtree; keys are relative to drivers.aws.
func (c *Config) Validate() error {
	var errs []error
	add := func(key, format string, args ...any) {
		errs = append(errs, config.Problem{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	if c.Region != "" && !regionRE.MatchString(c.Region) {
		add("region", "%q is not an AWS region (like eu-west-1)", c.Region)
	}
	if c.AccessKeyID.IsZero() != c.SecretAccessKey.IsZero() {
		add("accessKeyID", "give accessKeyID and secretAccessKey together, or neither to use the SDK's default credential chain")
	}
	if c.RoleARN != "" && !arnRE.MatchString(c.RoleARN) {
		add("roleARN", "%q is not an IAM role ARN (arn:aws:iam::123456789012:role/NAME)", c.RoleARN)
	}
	if c.ExternalID != "" && c.RoleARN == "" {
		add("externalID", "only applies with roleARN")
	}
	if c.ClusterID != "" && !clusterIDRE.MatchString(c.ClusterID) {
		add("clusterID", "%q cannot be a tag key's suffix: use 1-106 letters, digits, spaces or _ . : / = + - @ (a tag key holds 128 characters with kubernetes.io/cluster/)", c.ClusterID)
	}
	if _, err := regexp.Compile(c.SupportedTopologyInstanceTypePattern); err != nil {
		add("supportedTopologyInstanceTypePattern", "is not a regular expression: %v", err)
	}
	if c.VPCID != "" && !vpcRE.MatchString(c.VPCID) {
		add("vpcID", "%q is not a VPC ID (vpc-0123456789abcdef0)", c.VPCID)
	}
	for i, f := range c.NodeIPFamilies {
		switch {
		case f != "ipv4" && f != "ipv6":
			add(fmt.Sprintf("nodeIPFamilies[%d]", i), "%q is not an address family; use ipv4 or ipv6 (e.g. [ipv4, ipv6] for dual-stack, IPv4 first)", f)
		case slices.Index(c.NodeIPFamilies, f) != i:
			add(fmt.Sprintf("nodeIPFamilies[%d]", i), "%s is listed twice", f)
		}
	}
	if t := c.LoadBalancer.DefaultType; t != "" && t != TypeClassic && t != TypeNLB {
		add("loadBalancer.defaultType", "%q is not a load balancer type; use classic (the AWS CCM's default) or nlb", t)
	}
	for key, v := range map[string]string{"endpoints.ec2": c.Endpoints.EC2, "endpoints.elb": c.Endpoints.ELB, "endpoints.elbv2": c.Endpoints.ELBv2, "endpoints.sts": c.Endpoints.STS, "endpoints.imds": c.Endpoints.IMDS} {
		if v == "" {
			continue
		}
		if err := config.CheckURL(key, v, ""); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func init() {
	driver.Register(driver.Driver{
		Name: Name,
		NewConfig: func() any {
			return &Config{NodeIPFamilies: []string{"ipv4"}, LoadBalancer: LoadBalancerConfig{DefaultType: DefaultLBType}}
		},
		New:      New,
		Title:    "AWS",
		Upstream: "kubernetes/cloud-provider-aws",
		Credentials: []driver.Credential{
			{Key: "accessKeyID", Name: "aws-access-key-id", SecretKey: "aws-access-key-id", Unset: "the SDK's default chain (instance role)"},
			{Key: "secretAccessKey", Name: "aws-secret-access-key", SecretKey: "aws-secret-access-key", Unset: "the SDK's default chain (instance role)"},
		},
		Annotations:     LBAnnotations,
		Capabilities:    []driver.Capability{driver.Instances, driver.Zones, driver.LoadBalancers, driver.Inventory, driver.Routes, driver.Volumes},
		Classify:        classify,
		UpstreamMetrics: upstreamMetrics,
		CredentialsHint: "the AWS credentials (drivers.aws.accessKeyID/secretAccessKey, the instance role, or AWS_* variables) and, with drivers.aws.roleARN, that the role trusts them",
	})
}

// Cloud is AWS for one cluster.
type Cloud struct {
	cfg  Config
	api  *cloudapi.Client
	deps driver.Deps
	// cluster is the cluster ID (tags, target group names), known at New
	// when the config gives it, else once resolveClusterID found it.
	cluster atomic.Pointer[string]
	ident   clusterIdentity

	base     aws.Config   // credentials and shared settings, region not yet known
	metadata *imds.Client // the instance metadata service

	mu      sync.Mutex
	clients *clients // built on first use, once the region is known
	self    *self    // from the instance metadata service

	zones     zoneCache
	nodes     corelisters.NodeLister // nil without informers
	services  corelisters.ServiceLister
	topology  *topologies
	listSizes batch.ListSizes // instances per VPC, to price full listings
	lbs       *loadBalancers
	routes    *routes
}

// clients are the SDK clients for the cluster's region.
type clients struct {
	region string
	ec2    *ec2.Client
	elb    *elbv2.Client
	clb    *elb.Client // Classic Load Balancers
}

// New builds the cloud without calling AWS: the region (when not
// configured) and credentials are resolved at the first call.
func New(cfgAny any, deps driver.Deps) (driver.Cloud, error) {
	cfg, ok := cfgAny.(*Config)
	if !ok {
		return nil, fmt.Errorf("aws: config is %T, want *aws.Config", cfgAny)
	}
	opts := []func(*awsconfig.LoadOptions) error{
		awsconfig.WithAppID("polyccm"), // in the User-Agent, so CloudTrail names us
		// cloudapi retries; the SDK must not retry underneath it.
		awsconfig.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
	}
	if cfg.Profile != "" {
		opts = append(opts, awsconfig.WithSharedConfigProfile(cfg.Profile))
	}
	if cfg.Endpoints.IMDS != "" {
		opts = append(opts, awsconfig.WithEC2IMDSEndpoint(cfg.Endpoints.IMDS))
	}
	if !cfg.AccessKeyID.IsZero() {
		opts = append(opts, awsconfig.WithCredentialsProvider(aws.NewCredentialsCache(&secretCredentials{id: cfg.AccessKeyID, key: cfg.SecretAccessKey})))
	}
	base, err := awsconfig.LoadDefaultConfig(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("aws: loading the SDK configuration (drivers.aws.profile, AWS_* variables, ~/.aws files): %w", err)
	}
	if deps.Transport != nil {
		base.HTTPClient = &http.Client{Transport: deps.Transport(http.DefaultTransport.(*http.Transport).Clone())}
	}
	c := &Cloud{cfg: *cfg, api: deps.API, deps: deps, base: base,
		// One client keeps its IMDSv2 session token across reads.
		metadata: imds.New(imds.Options{Endpoint: cfg.Endpoints.IMDS, Retryer: aws.NopRetryer{}})}
	if c.topology, err = newTopologies(cfg.SupportedTopologyInstanceTypePattern); err != nil {
		return nil, fmt.Errorf("aws: drivers.aws.supportedTopologyInstanceTypePattern: %w", err)
	}
	c.lbs = &loadBalancers{c: c, own: loadbalancers.NewOwnership(loadbalancers.Options{
		Cloud:         "AWS",
		Informers:     deps.Informers,
		Clients:       deps.ClientBuilder,
		Recorder:      deps.Recorder,
		AdoptUnmarked: deps.AdoptUnmarkedLoadBalancers,
		MarksOf:       c.marksOf,
	})}
	c.routes = &routes{c: c}
	if cfg.ClusterID != "" || !deps.ClusterNameDefault {
		// Known without asking AWS: resolveClusterID only records it.
		id := cmp.Or(cfg.ClusterID, deps.ClusterName)
		c.cluster.Store(&id)
	}
	if deps.Informers != nil {
		// Routes map Nodes to instances, and a deleted load balancer's
		// node rules are looked for in the Nodes' groups; registering
		// before the factory starts makes the informer part of it.
		nodes := deps.Informers.Core().V1().Nodes()
		nodes.Informer()
		c.nodes = nodes.Lister()
		// Which Services use a security group decides whether its node
		// rule may go (namedgroups.go).
		svcs := deps.Informers.Core().V1().Services()
		svcs.Informer()
		c.services = svcs.Lister()
	}
	return c, nil
}

// Instances returns the batched instance source.
func (c *Cloud) Instances() instances.Source { return c }

// client returns the SDK clients, resolving the region from the instance
// metadata service the first time if the config has none. A failure is not
// remembered: the next call tries again.
func (c *Cloud) client(ctx context.Context) (*clients, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.clients != nil {
		return c.clients, nil
	}
	region := c.cfg.Region
	if region == "" {
		r, err := c.metadataRegion(ctx)
		if err != nil {
			return nil, fmt.Errorf("aws: drivers.aws.region is not set and the instance metadata service did not say: %w", err)
		}
		region = r
	}
	cl := &clients{region: region}
	base := c.base.Copy()
	if c.cfg.RoleARN != "" {
		base.Credentials = c.assumeRole(region)
	}
	cl.ec2 = ec2.NewFromConfig(base, func(o *ec2.Options) {
		o.Region = region
		o.Retryer = aws.NopRetryer{}
		if c.cfg.Endpoints.EC2 != "" {
			o.BaseEndpoint = aws.String(c.cfg.Endpoints.EC2)
		}
	})
	cl.elb = elbv2.NewFromConfig(base, func(o *elbv2.Options) {
		o.Region = region
		o.Retryer = aws.NopRetryer{}
		if c.cfg.Endpoints.ELBv2 != "" {
			o.BaseEndpoint = aws.String(c.cfg.Endpoints.ELBv2)
		}
	})
	cl.clb = elb.NewFromConfig(base, func(o *elb.Options) {
		o.Region = region
		o.Retryer = aws.NopRetryer{}
		if c.cfg.Endpoints.ELB != "" {
			o.BaseEndpoint = aws.String(c.cfg.Endpoints.ELB)
		}
	})
	c.clients = cl
	return cl, nil
}

// assumeRole returns credentials of drivers.aws.roleARN, assumed with the
// base credentials through STS in the cluster's region: the regional
// endpoint (or drivers.aws.endpoints.sts, which may be a regional VPC
// endpoint) only accepts requests signed for its own region, and other
// partitions have no us-east-1 at all.
func (c *Cloud) assumeRole(region string) aws.CredentialsProvider {
	stsClient := sts.NewFromConfig(c.base, func(o *sts.Options) {
		o.Region = region
		if c.cfg.Endpoints.STS != "" {
			o.BaseEndpoint = aws.String(c.cfg.Endpoints.STS)
		}
	})
	return aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(stsClient, c.cfg.RoleARN, func(o *stscreds.AssumeRoleOptions) {
		o.RoleSessionName = roleSessionName(c.clusterName())
		if c.cfg.ExternalID != "" {
			o.ExternalID = aws.String(c.cfg.ExternalID)
		}
	}))
}

// roleSessionName names polyccm's sessions after the cluster, within the
// 64 characters STS allows (cluster names may have 63).
func roleSessionName(cluster string) string {
	name := "polyccm-" + tagSafe(cluster) // tagSafe leaves only ASCII
	if len(name) > 64 {
		name = name[:64]
	}
	return name
}

func (c *Cloud) metadataRegion(ctx context.Context) (string, error) {
	var out *imds.GetRegionOutput
	err := c.api.Do(ctx, "imds.region", func(ctx context.Context) error {
		var err error
		out, err = c.metadata.GetRegion(ctx, &imds.GetRegionInput{})
		return err
	})
	if err != nil {
		return "", err
	}
	return out.Region, nil
}

// secretCredentials serves static keys from polyccm secrets, re-read every
// few minutes (through aws.CredentialsCache) so a rotated key file is
// picked up without a restart.
type secretCredentials struct {
	id, key secret.Secret
}

const staticCredentialsTTL = 5 * time.Minute

func (s *secretCredentials) Retrieve(context.Context) (aws.Credentials, error) {
	id, err := s.id.RevealToken()
	if err != nil {
		return aws.Credentials{}, &credentialsError{err: fmt.Errorf("drivers.aws.accessKeyID: %w", err)}
	}
	key, err := s.key.RevealToken()
	if err != nil {
		return aws.Credentials{}, &credentialsError{err: fmt.Errorf("drivers.aws.secretAccessKey: %w", err)}
	}
	return aws.Credentials{
		AccessKeyID: id, SecretAccessKey: key, Source: "polyccm config",
		CanExpire: true, Expires: time.Now().Add(staticCredentialsTTL),
	}, nil
}

// credentialsError is a key polyccm could not read: a credentials problem
// on our side, reported like a rejected key.
type credentialsError struct{ err error }

func (e *credentialsError) Error() string { return "AWS credentials: " + e.err.Error() }
func (e *credentialsError) Unwrap() error { return e.err }

// knownVPC is the cluster's VPC if known without asking anyone.
func (c *Cloud) knownVPC() string {
	if c.cfg.VPCID != "" {
		return c.cfg.VPCID
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.self == nil {
		return ""
	}
	return c.self.vpc
}

// clusterClient is client for the calls that need the cluster ID (load
// balancers, routes): it is resolved first.
func (c *Cloud) clusterClient(ctx context.Context) (*clients, error) {
	cl, err := c.client(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := c.resolveClusterID(ctx, cl); err != nil {
		return nil, err
	}
	return cl, nil
}

// clusterID is the cluster ID that tags and target group names carry. It
// is known once clusterClient succeeded (or at New, when configured).
func (c *Cloud) clusterID() string {
	if p := c.cluster.Load(); p != nil {
		return *p
	}
	// Only reachable from a path that skipped clusterClient: a bug, and
	// an empty ID must never match another cluster's tags.
	panic("aws: the cluster ID is used before it was resolved")
}

// clusterName is the cluster's name (the upstream --cluster-name), which
// the AWS CCM hashes into an NLB's security group name; it may differ
// from the cluster ID.
func (c *Cloud) clusterName() string { return c.deps.ClusterName }
