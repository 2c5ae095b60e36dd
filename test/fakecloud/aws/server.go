// Package aws is an in-memory fake of the AWS APIs a cloud-controller-manager
// talks to: EC2, Elastic Load Balancing (Classic and v2), STS and the EC2
// instance metadata service (IMDSv2). It speaks their wire protocols — the EC2 query
// protocol and the AWS query protocol, form-encoded requests signed with
// Signature Version 4, XML answers and error envelopes, the real error codes
// and HTTP statuses — so the unmodified aws-sdk-go-v2 clients work against
// it with only their endpoints overridden:
//
//	ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(fake.EC2URL()) })
//	elasticloadbalancing.NewFromConfig(cfg, func(o *elasticloadbalancing.Options) { o.BaseEndpoint = aws.String(fake.ELBURL()) })
//	elasticloadbalancingv2.NewFromConfig(cfg, func(o *elasticloadbalancingv2.Options) { o.BaseEndpoint = aws.String(fake.ELBv2URL()) })
//	sts.NewFromConfig(cfg, func(o *sts.Options) { o.BaseEndpoint = aws.String(fake.STSURL()) })
//	imds.New(imds.Options{Endpoint: fake.IMDSURL()})
//
// The XML types are written here from the API references and the SDK's
// wire format, not taken from the SDK, so tests against the fake are an
// independent check of a client's decoding.
//
// One listener serves everything. Each query service has a path prefix
// (/ec2/, /elb/, /elbv2/, /sts/); a request to "/" is routed by its Version
// parameter instead. IMDS answers under /latest/, as on an instance.
//
// Every request is signature-checked against the credentials the fake
// knows: the long-term key given to New (SetCredentials rotates it,
// AddCredentials adds more) and the temporary credentials STS AssumeRole
// and the IMDS role hand out. Unsigned requests, unknown keys, bad
// signatures, wrong regions and expired sessions fail as they do on AWS.
//
// Every request passes through a faults.Injector (Faults) and is counted
// under "<service> <Action>", e.g. "ec2 DescribeInstances",
// "elb CreateLoadBalancer", "elbv2 CreateLoadBalancer", "sts AssumeRole", or for IMDS
// "imds <METHOD> <path pattern>", e.g. "imds GET /latest/meta-data/instance-id".
// Throttled requests get each service's real throttling error — EC2
// RequestLimitExceeded with HTTP 503, ELB, ELBv2 and STS Throttling with HTTP
// 400, IMDS a bare 429 — whatever the injector's SetThrottleStatus says; a
// rule with Status 429 is answered the same way. Other injected statuses
// get the service's error for that status (500 InternalError or
// InternalFailure, 503 Unavailable or ServiceUnavailable, ...).
//
// Responses over 3 KiB wait 5ms before going out (SetLargeResponseDelay):
// the SDK closes request bodies as soon as response headers arrive, which
// against an instant loopback answer races net/http's request write and
// breaks the connection under the response (aws/aws-sdk-go-v2#2737).
//
// State lives in memory and is shared by the API and the Go-side helpers
// (AddInstance, AddSubnet, AddNetwork, LoadBalancers, Stats, ...), which
// tests use to arrange the world and to assert on it. Like a real account,
// the default VPC's subnets are public (its main route table routes
// 0.0.0.0/0 to an internet gateway); AddNetwork lays out a cluster VPC with
// public and private subnets and their tags.
//
// Implemented:
//
//   - EC2: DescribeInstances (ids, filters, MaxResults/NextToken by
//     reservation), DescribeInstanceAttribute, ModifyInstanceAttribute
//     (source/dest check, groups, type), DescribeInstanceTopology,
//     DescribeAvailabilityZones (Local Zones and opt-in too),
//     DescribeVpcs, DescribeSubnets, DescribeRouteTables, CreateRoute,
//     ReplaceRoute, DeleteRoute, Create/Attach/Detach/Delete/
//     DescribeInternetGateways, CreateSecurityGroup,
//     DescribeSecurityGroups, DeleteSecurityGroup,
//     Authorize/RevokeSecurityGroupIngress and -Egress, CreateTags,
//     DeleteTags, DescribeVolumes; DryRun on all of them.
//   - ELBv2: CreateLoadBalancer, DescribeLoadBalancers, DeleteLoadBalancer,
//     Describe/ModifyLoadBalancerAttributes, SetSecurityGroups,
//     SetSubnets, SetIpAddressType,
//     CreateTargetGroup, DescribeTargetGroups, ModifyTargetGroup,
//     DeleteTargetGroup, Describe/ModifyTargetGroupAttributes,
//     RegisterTargets, DeregisterTargets (with draining),
//     DescribeTargetHealth, CreateListener, DescribeListeners,
//     ModifyListener, DeleteListener, AddTags, RemoveTags, DescribeTags.
//     Listener actions are forward only.
//   - Classic ELB: CreateLoadBalancer, DescribeLoadBalancers,
//     DeleteLoadBalancer, Create/DeleteLoadBalancerListeners,
//     RegisterInstancesWithLoadBalancer,
//     DeregisterInstancesFromLoadBalancer, DescribeInstanceHealth,
//     ConfigureHealthCheck, Describe/ModifyLoadBalancerAttributes,
//     CreateLoadBalancerPolicy, DescribeLoadBalancerPolicies,
//     DeleteLoadBalancerPolicy, SetLoadBalancerPoliciesOfListener,
//     SetLoadBalancerPoliciesForBackendServer,
//     ApplySecurityGroupsToLoadBalancer, AttachLoadBalancerToSubnets,
//     DetachLoadBalancerFromSubnets, AddTags, RemoveTags, DescribeTags.
//   - STS: AssumeRole, GetCallerIdentity.
//   - IMDSv2: the token, instance, placement, network interface, IAM and
//     identity document paths a node or a driver reads.
package aws

import (
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/polyccm/polyccm/test/fakecloud/fakehttp"

	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

// Defaults of a new fake.
const (
	DefaultRegion    = "eu-west-1"
	DefaultAccountID = "123456789012"
	// DefaultUserName is the IAM user owning the credentials given to New.
	DefaultUserName = "polyccm"
)

// Server is a fake of EC2, ELB, ELBv2, STS and IMDS. Create it with New, then
// Start it, or mount Handler in a server of your own.
type Server struct {
	srv *fakehttp.Server

	mu      sync.Mutex
	now     func() time.Time
	rng     *rand.Rand
	region  string
	account string
	seq     int // creation order of every resource, for stable listings

	settleDelay time.Duration // see SetLargeResponseDelay

	auth  authState
	ec2   ec2State
	elb   elbState
	clb   classicState
	imds  imdsState
	stats Stats
}

// New returns a fake whose API accepts requests signed with the given
// long-term access key, owned by IAM user DefaultUserName in account
// DefaultAccountID, in region DefaultRegion.
//
// Like a real account, the region starts with three availability zones and
// a default VPC (172.31.0.0/16) with a default subnet in each zone, a main
// route table and a default security group.
func New(accessKey, secretKey string) *Server {
	s := &Server{
		srv:     fakehttp.New("aws fake"),
		now:     time.Now,
		rng:     rand.New(rand.NewPCG(1, 2)),
		region:  DefaultRegion,
		account: DefaultAccountID,

		settleDelay: defaultSettleDelay,
	}
	s.auth.init()
	s.ec2.init()
	s.elb.init()
	s.clb.init()
	s.imds.init()
	s.auth.setUserKey(accessKey, secretKey)
	s.resetZonesLocked()
	s.addDefaultVPCLocked()
	return s
}

// Start serves the fake on a free port of 127.0.0.1.
func (s *Server) Start() error { return s.srv.Start(s) }

// URL is the root of the listener, "http://127.0.0.1:PORT". It is "" before
// Start.
func (s *Server) URL() string { return s.srv.URL() }

func (s *Server) serviceURL(prefix string) string {
	if u := s.URL(); u != "" {
		return u + prefix
	}
	return ""
}

// EC2URL is the BaseEndpoint for the EC2 client.
func (s *Server) EC2URL() string { return s.serviceURL("/ec2/") }

// ELBURL is the BaseEndpoint for the Classic Load Balancer client
// (elasticloadbalancing, API version 2012-06-01).
func (s *Server) ELBURL() string { return s.serviceURL("/elb/") }

// ELBv2URL is the BaseEndpoint for the Elastic Load Balancing v2 client.
func (s *Server) ELBv2URL() string { return s.serviceURL("/elbv2/") }

// STSURL is the BaseEndpoint for the STS client.
func (s *Server) STSURL() string { return s.serviceURL("/sts/") }

// IMDSURL is the Endpoint for the instance metadata client; it answers at
// the root, as 169.254.169.254 does.
func (s *Server) IMDSURL() string { return s.URL() }

// Close stops the server, first releasing any request a Timeout rule holds.
func (s *Server) Close() { s.srv.Close() }

// Handler returns the fake as an http.Handler, for mounting elsewhere. Mount
// it in an http.Server: abandoned requests abort with http.ErrAbortHandler,
// which the server recovers.
func (s *Server) Handler() http.Handler { return s }

// Faults returns the injector every request passes through.
func (s *Server) Faults() *faults.Injector { return s.srv.Faults() }

// Region returns the region the fake serves.
func (s *Server) Region() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.region
}

// SetRegion changes the region the fake serves: requests must be signed for
// it, ARNs, DNS names and zones use it. The zones are renamed (REGIONa,
// REGIONb, REGIONc); resources made before keep the zones they had, so set
// the region before adding any.
func (s *Server) SetRegion(region string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.region = region
	s.resetZonesLocked()
	for _, sub := range s.ec2.subnets {
		if k := sub.zoneIndex; k >= 0 && k < len(s.ec2.zones) {
			sub.AvailabilityZone, sub.AvailabilityZoneID = s.ec2.zones[k].Name, s.ec2.zones[k].ID
		}
	}
}

// AccountID returns the account owning every resource.
func (s *Server) AccountID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.account
}

// SetClock replaces the clock behind timestamps, load balancer activation,
// target health and draining, and credential expiry (not the injector's
// latency or rate limit, nor the 15-minute check of signing times, which
// stays on the wall clock the SDK signs with), so tests can move time
// without sleeping.
func (s *Server) SetClock(now func() time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = now
}

// nextSeq returns the next creation sequence number. Callers hold s.mu.
func (s *Server) nextSeq() int {
	s.seq++
	return s.seq
}

// hexID returns n random lowercase hex digits, like the suffix of EC2 ids.
// Callers hold s.mu.
func (s *Server) hexID(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for k := range b {
		b[k] = digits[s.rng.IntN(16)]
	}
	return string(b)
}

// ec2ID returns a new id with the 17-hex-digit suffix EC2 uses today.
func (s *Server) ec2ID(prefix string) string { return prefix + "-0" + s.hexID(16) }

// alnum returns n random characters from set. Callers hold s.mu.
func (s *Server) alnum(set string, n int) string {
	b := make([]byte, n)
	for k := range b {
		b[k] = set[s.rng.IntN(len(set))]
	}
	return string(b)
}

const (
	upperAlnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	base64Set  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
)

func cloneTags(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
