package simcloud

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	fakeaws "github.com/polyccm/polyccm/test/fakecloud/aws"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

const (
	// awsRegion is us-east-1 for its short private DNS names
	// (ip-10-0-1-4.ec2.internal), which are the Node names on AWS.
	awsRegion    = "us-east-1"
	awsAccessKey = "AKIAPOLYCCMDEMO00001"
)

// awsCloud is the simulated AWS (test/fakecloud/aws): EC2 and ELBv2 on one
// plain-HTTP listener, checking every request's SigV4 signature against
// the static key polyccm is given.
type awsCloud struct {
	*AWSAccount
	fake       *fakeaws.Server
	clusterTag string // kubernetes.io/cluster/<clusterName>
	vpc        fakeaws.VPC
	subnets    []fakeaws.Subnet
	instances  []fakeaws.Instance
}

// AWSAccount is a started fake AWS account (EC2, ELBv2, STS and the
// instance metadata service) and the static key it accepts: the one setup
// the demo, the benchmark and the e2e tests share.
type AWSAccount struct {
	Fake                         *fakeaws.Server
	Region, AccessKey, SecretKey string
}

// StartAWS starts a fake AWS account in region accepting the key, with
// o's latency and profile.
func StartAWS(o Options, region, accessKey, secretKey string) (*AWSAccount, error) {
	f := fakeaws.New(accessKey, secretKey)
	f.SetRegion(region) // before any resource: zones take its name
	f.Faults().SetLatency(o.Latency)
	o.profile().AWS(f)
	if err := f.Start(); err != nil {
		return nil, err
	}
	return &AWSAccount{Fake: f, Region: region, AccessKey: accessKey, SecretKey: secretKey}, nil
}

// Config gives polyccm static keys from files written into dir, the
// region and VPC, and the fake's endpoints; the instance metadata service
// is the fake's too, though with region and VPC set polyccm has no need to
// ask it.
func (a *AWSAccount) Config(dir, vpcID string) (string, error) {
	id, key := filepath.Join(dir, "aws-access-key-id"), filepath.Join(dir, "aws-secret-access-key")
	if err := os.WriteFile(id, []byte(a.AccessKey+"\n"), 0o600); err != nil {
		return "", err
	}
	if err := os.WriteFile(key, []byte(a.SecretKey+"\n"), 0o600); err != nil {
		return "", err
	}
	return fmt.Sprintf("region: %s\nvpcID: %s\naccessKeyID: {file: %s}\nsecretAccessKey: {file: %s}\nendpoints:\n  ec2: %s\n  elb: %s\n  elbv2: %s\n  sts: %s\n  imds: %s",
		a.Region, vpcID, id, key, a.Fake.EC2URL(), a.Fake.ELBURL(), a.Fake.ELBv2URL(), a.Fake.STSURL(), a.Fake.IMDSURL()), nil
}

// Env keeps the SDK in polyccm away from this machine's own AWS setup: no
// profile, shared config or credentials files, keys, region or endpoint
// override.
func (a *AWSAccount) Env(dir string) []string {
	return []string{
		"AWS_PROFILE=", "AWS_DEFAULT_PROFILE=", "AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_REGION=",
		"AWS_CONFIG_FILE=" + filepath.Join(dir, "aws-config-none"),
		"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(dir, "aws-credentials-none"),
		"AWS_ENDPOINT_URL=", "AWS_ENDPOINT_URL_EC2=", "AWS_ENDPOINT_URL_ELASTIC_LOAD_BALANCING_V2=", "AWS_ENDPOINT_URL_STS=",
		"AWS_EC2_METADATA_SERVICE_ENDPOINT=",
	}
}

func newAWS(o Options) (Cloud, error) {
	secret := "sim/" + strconv.FormatInt(time.Now().UnixNano(), 36) + "/EXAMPLEKEY"
	acct, err := StartAWS(o, awsRegion, awsAccessKey, secret)
	if err != nil {
		return nil, err
	}
	f := acct.Fake
	c := &awsCloud{AWSAccount: acct, fake: f, clusterTag: "kubernetes.io/cluster/" + o.ClusterName}
	// The cluster's VPC, with a public subnet per zone tagged for the
	// cluster and for internet-facing load balancers, as eksctl and the
	// AWS CCM's documentation lay them out. A /18 per zone holds the
	// benchmark's thousands of instances.
	c.vpc = f.AddVPC(fakeaws.VPC{CIDRBlock: "10.0.0.0/16", Tags: map[string]string{"Name": o.ClusterName, c.clusterTag: "shared"}})
	for k, z := range f.AvailabilityZones() {
		c.subnets = append(c.subnets, f.AddSubnet(fakeaws.Subnet{
			VPCID: c.vpc.ID, AvailabilityZone: z.Name, CIDRBlock: fmt.Sprintf("10.0.%d.0/18", k*64),
			MapPublicIPOnLaunch: true,
			Tags:                map[string]string{"Name": o.ClusterName + "-public-" + z.Name, c.clusterTag: "shared", "kubernetes.io/role/elb": "1"},
		}))
	}
	// Public: their route table leads to the VPC's internet gateway.
	igw := f.AddInternetGateway(c.vpc.ID, nil)
	public := fakeaws.RouteTable{VPCID: c.vpc.ID, Routes: []fakeaws.Route{{DestinationCIDRBlock: "0.0.0.0/0", GatewayID: igw.ID}},
		Tags: map[string]string{"Name": o.ClusterName + "-public"}}
	for _, sub := range c.subnets {
		public.Associations = append(public.Associations, fakeaws.RouteTableAssociation{SubnetID: sub.ID})
	}
	f.AddRouteTable(public)
	return c, nil
}

func (c *awsCloud) Title() string { return "AWS (EC2, ELB and ELBv2)" }

func (c *awsCloud) ConfigBlock(dir string) (string, error) { return c.Config(dir, c.vpc.ID) }

// AddInstances spreads the instances over the three subnets; on AWS a
// Node is named after its instance's private DNS name.
func (c *awsCloud) AddInstances(n int) []Node {
	types := []string{"m6i.large", "c6i.xlarge", "t3.medium"}
	nodes := make([]Node, n)
	base := len(c.instances) // later calls add more, named after them
	for k := range n {
		i := base + k
		in := fakeaws.Instance{
			SubnetID: c.subnets[i%len(c.subnets)].ID, InstanceType: types[i%len(types)],
			Tags: map[string]string{"Name": fmt.Sprintf("node-%02d", i), c.clusterTag: "owned"},
		}
		if i%4 == 3 {
			in.PublicIP = fakeaws.NoIP
		}
		in = c.fake.AddInstance(in)
		c.instances = append(c.instances, in)
		nodes[k].Name = in.PrivateDNSName
		if i%2 == 0 {
			nodes[k].ProviderID = "aws:///" + in.AvailabilityZone + "/" + in.ID
		}
	}
	return nodes
}

func (c *awsCloud) PowerOff(i int) error {
	return c.fake.SetInstanceState(c.instances[i].ID, fakeaws.InstanceStateStopped)
}

// Remove terminates the instance, which EC2 then lists as terminated for a
// while.
func (c *awsCloud) Remove(i int) error {
	return c.fake.SetInstanceState(c.instances[i].ID, fakeaws.InstanceStateTerminated)
}

// Calls counts every API call: the simulated user changes instances from
// the Go side, not through the API.
func (c *awsCloud) Calls() int { return c.fake.Faults().Total() }

// LBPorts: a Service without a type gets a Classic Load Balancer, as
// upstream, which serves TCP only.
func (c *awsCloud) LBPorts() []v1.ServicePort {
	return []v1.ServicePort{{Name: "http", Protocol: v1.ProtocolTCP, Port: 80}, {Name: "https", Protocol: v1.ProtocolTCP, Port: 443}}
}

// classicPrefix marks a Classic Load Balancer's name among LBIDs.
const classicPrefix = "classic/"

// LBID is the ARN of the NLB with the Service's hostname, or classic/ and
// the name of the Classic Load Balancer with it.
func (c *awsCloud) LBID(svc *v1.Service) string {
	host := svc.Status.LoadBalancer.Ingress[0].Hostname
	for _, lb := range c.fake.ClassicLoadBalancers() {
		if lb.DNSName == host {
			return classicPrefix + lb.Name
		}
	}
	for _, lb := range c.fake.LoadBalancers() {
		if lb.DNSName == host {
			return lb.ARN
		}
	}
	return ""
}

func (c *awsCloud) DescribeLB(arn string) (string, bool) {
	if name, ok := strings.CutPrefix(arn, classicPrefix); ok {
		return c.describeClassic(name)
	}
	lb, ok := c.fake.LoadBalancer(arn)
	if !ok {
		return "", false
	}
	var zones []string
	for _, s := range lb.Subnets {
		zones = append(zones, s.ZoneName)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "AWS %s load balancer %s (%s, %s) in %s", lb.Type, lb.Name, lb.Scheme, lb.State, strings.Join(zones, ","))
	for _, l := range c.fake.Listeners() {
		if l.LoadBalancerARN != arn {
			continue
		}
		fmt.Fprintf(&b, "\n    listener %s:%d", l.Protocol, l.Port)
		for _, a := range l.DefaultActions {
			tg, ok := c.fake.TargetGroup(a.TargetGroupARN)
			if !ok {
				fmt.Fprintf(&b, " -> %s %s (missing)", a.Type, a.TargetGroupARN)
				continue
			}
			hc := tg.HealthCheck
			fmt.Fprintf(&b, " -> target group %s %s:%d, %d %s targets, health check %s :%s%s",
				tg.Name, tg.Protocol, tg.Port, len(tg.Targets), tg.TargetType, hc.Protocol, hc.Port, hc.Path)
		}
	}
	for _, id := range lb.SecurityGroups {
		sg, ok := c.fake.SecurityGroup(id)
		if !ok {
			continue
		}
		var rules []string
		for _, p := range sg.Ingress {
			var from []string
			for _, r := range p.IPRanges {
				from = append(from, r.CIDR)
			}
			for _, r := range p.IPv6Ranges {
				from = append(from, r.CIDR)
			}
			rules = append(rules, fmt.Sprintf("%s:%d from %s", p.Protocol, p.FromPort, strings.Join(from, ",")))
		}
		fmt.Fprintf(&b, "\n    security group %s (%s) allows %s", sg.Name, sg.ID, strings.Join(rules, "; "))
	}
	return b.String(), true
}

// LBTargets are the registered instances of the Classic Load Balancer, or
// of the NLB's target groups, by Node name (the private DNS name).
func (c *awsCloud) LBTargets(id string) ([]string, bool) {
	names := map[string]string{}
	for _, in := range c.instances {
		names[in.ID] = in.PrivateDNSName
	}
	set := map[string]bool{}
	if name, ok := strings.CutPrefix(id, classicPrefix); ok {
		lb, ok := c.fake.ClassicLoadBalancer(name)
		if !ok {
			return nil, false
		}
		for _, i := range lb.Instances {
			set[names[i]] = true
		}
	} else {
		if _, ok := c.fake.LoadBalancer(id); !ok {
			return nil, false
		}
		for _, l := range c.fake.Listeners() {
			if l.LoadBalancerARN != id {
				continue
			}
			for _, a := range l.DefaultActions {
				if tg, ok := c.fake.TargetGroup(a.TargetGroupARN); ok {
					for _, t := range tg.Targets {
						set[names[t.ID]] = true
					}
				}
			}
		}
	}
	return slices.Sorted(maps.Keys(set)), true
}

// LBLeftovers lists load balancers, listeners, target groups and security
// groups other than the VPCs' default ones: all polyccm's.
func (c *awsCloud) LBLeftovers() []string {
	var out []string
	for _, lb := range c.fake.LoadBalancers() {
		out = append(out, "load balancer "+lb.Name)
	}
	for _, lb := range c.fake.ClassicLoadBalancers() {
		out = append(out, "classic load balancer "+lb.Name)
	}
	for _, l := range c.fake.Listeners() {
		out = append(out, fmt.Sprintf("listener %s:%d", l.Protocol, l.Port))
	}
	for _, tg := range c.fake.TargetGroups() {
		out = append(out, "target group "+tg.Name)
	}
	for _, sg := range c.fake.SecurityGroups() {
		if sg.Name != "default" {
			out = append(out, "security group "+sg.Name+" ("+sg.ID+")")
		}
	}
	return out
}

// describeClassic summarises a Classic Load Balancer.
func (c *awsCloud) describeClassic(name string) (string, bool) {
	lb, ok := c.fake.ClassicLoadBalancer(name)
	if !ok {
		return "", false
	}
	var b strings.Builder
	fmt.Fprintf(&b, "AWS Classic load balancer %s (%s) in %s, %d instances, health check %s",
		lb.Name, lb.Scheme, strings.Join(lb.AvailabilityZones, ","), len(lb.Instances), lb.HealthCheck.Target)
	for _, l := range lb.Listeners {
		fmt.Fprintf(&b, "\n    listener %s:%d -> %s:%d", l.Protocol, l.LoadBalancerPort, l.InstanceProtocol, l.InstancePort)
	}
	for _, id := range lb.SecurityGroups {
		if sg, ok := c.fake.SecurityGroup(id); ok {
			fmt.Fprintf(&b, "\n    security group %s (%s) %q", sg.Name, sg.ID, sg.Description)
		}
	}
	return b.String(), true
}

func (c *awsCloud) Faults() *faults.Injector { return c.fake.Faults() }

// ThrottleError: EC2 answers RequestLimitExceeded with HTTP 503 (ELBv2
// and STS answer Throttling with 400).
func (c *awsCloud) ThrottleError() string { return "503 RequestLimitExceeded" }

func (c *awsCloud) Close() { c.fake.Close() }
