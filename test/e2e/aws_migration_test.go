//go:build e2e

package e2e

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	clb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	clbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	cloudprovider "k8s.io/cloud-provider"

	fakeaws "github.com/polyccm/polyccm/test/fakecloud/aws"
	"github.com/polyccm/polyccm/test/harness"
)

// The migration test (issue 16): the fake account holds exactly what
// kubernetes/cloud-provider-aws (v1.37, pkg/providers/v1 at commit
// 63ec440c3275321b55afa45480e2fdfd2b0e93c4) builds for three Services,
// made through the same API calls it makes, then polyccm takes over. It
// must create no load balancer or target group, keep every Service's
// hostname, carry node churn to every load balancer, and leave nothing
// behind once the Services are deleted.
//
// Everything below is written from upstream's code, never from polyccm's:
// a naming mismatch between the two must show here as a new resource. The
// constants and formulas name the upstream file and function they come
// from; TestAWSMigrationUpstreamNames checks the formulas against values
// printed by upstream's own functions (drivers/aws/names_test.go).

// Upstream's constants (pkg/providers/v1/aws.go, tags.go, aws_loadbalancer.go).
const (
	upTagClusterPrefix   = "kubernetes.io/cluster/" // tags.go TagNameKubernetesClusterPrefix
	upTagServiceName     = "kubernetes.io/service-name"
	upOwned              = "owned"                                             // tags.go ResourceLifecycleOwned
	upAnnType            = "service.beta.kubernetes.io/aws-load-balancer-type" // aws.go ServiceAnnotationLoadBalancerType
	upNLBClientRule      = "kubernetes.io/rule/nlb/client"                     // aws.go NLBClientRuleDescription
	upNLBHealthRule      = "kubernetes.io/rule/nlb/health"                     // aws.go NLBHealthCheckRuleDescription
	upNLBMTURule         = "kubernetes.io/rule/nlb/mtu"                        // aws.go NLBMtuDiscoveryRuleDescription
	upNLBSGDescription   = "[k8s] Managed SecurityGroup for LoadBalancer"      // aws.go ensureNLBSecurityGroup
	upDefaultHCPort      = "traffic-port"                                      // aws_loadbalancer.go defaultHealthCheckPort
	upNLBHCInterval      = 30                                                  // aws_loadbalancer.go defaultNlbHealthCheckInterval
	upNLBHCThreshold     = 3                                                   // defaultNlbHealthCheckThreshold
	upELBHCHealthy       = 2                                                   // defaultElbHCHealthyThreshold
	upELBHCUnhealthy     = 6                                                   // defaultElbHCUnhealthyThreshold
	upELBHCTimeout       = 5                                                   // defaultElbHCTimeout
	upELBHCInterval      = 10                                                  // defaultElbHCInterval
	migrationClusterName = "e2e"                                               // the cluster ID and --cluster-name upstream ran with
)

// upstreamTargetGroupName is aws_loadbalancer.go (*Cloud).buildTargetGroupName
// for an instance target group with buildNLBHealthCheckConfiguration's
// defaults for externalTrafficPolicy Cluster (TCP every 30s).
func upstreamTargetGroupName(clusterID, ns, name string, port, nodePort int32, protocol string) string {
	h := sha1.New()
	h.Write([]byte(clusterID))
	h.Write([]byte(ns))
	h.Write([]byte(name))
	h.Write([]byte(strconv.FormatInt(int64(port), 10)))
	h.Write([]byte(strconv.FormatInt(int64(nodePort), 10)))
	h.Write([]byte(protocol))   // the traffic protocol
	h.Write([]byte("instance")) // elbv2types.TargetTypeEnumInstance
	h.Write([]byte("TCP"))      // the health check's protocol
	h.Write([]byte(strconv.FormatInt(upNLBHCInterval, 10)))
	uuid := hex.EncodeToString(h.Sum(nil))
	alnum := regexp.MustCompile("[^[:alnum:]]") // invalidELBV2NameRegex
	return fmt.Sprintf("k8s-%.8s-%.8s-%.10s", alnum.ReplaceAllString(ns, ""), alnum.ReplaceAllString(name, ""), uuid)
}

// upstreamNLBSecurityGroupName is aws.go (*Cloud).GetSecurityGroupNameForNLB.
func upstreamNLBSecurityGroupName(clusterName, ns, name string, uid types.UID) string {
	h := sha256.New()
	h.Write([]byte(clusterName))
	h.Write([]byte(name))
	h.Write([]byte(ns))
	h.Write([]byte(uid))
	uuid := hex.EncodeToString(h.Sum(nil))
	alnum := regexp.MustCompile("[[:^alnum:]]") // invalidSecurityGroupNameNLBPattern
	return fmt.Sprintf("k8s-%.8s-%.8s-%.10s", alnum.ReplaceAllString(ns, ""), alnum.ReplaceAllString(name, ""), uuid)
}

// The formulas above give what upstream's functions printed for the
// vectors of drivers/aws/names_test.go.
func TestAWSMigrationUpstreamNames(t *testing.T) {
	const uid1, uid2 = "5e1b6a3c-7d2f-4c8e-9a0b-1c2d3e4f5a6b", "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9"
	for _, c := range []struct{ got, want string }{
		{upstreamTargetGroupName("unit", "shop", "web", 80, 30080, "TCP"), "k8s-shop-web-27ea9f0fdb"},
		{upstreamTargetGroupName("unit", "shop", "web", 443, 30443, "TCP"), "k8s-shop-web-0bcd7ce71c"},
		{upstreamTargetGroupName("unit", "tenant-a", "my-web-frontend", 8080, 31080, "TCP"), "k8s-tenanta-mywebfro-e5c8e3dc2b"},
		{upstreamNLBSecurityGroupName("unit", "shop", "web", uid1), "k8s-shop-web-7f6fe36072"},
		{upstreamNLBSecurityGroupName("kubernetes", "shop", "web", uid1), "k8s-shop-web-c2504e9ded"},
		{upstreamNLBSecurityGroupName("unit", "tenant-a", "my-web-frontend", uid2), "k8s-tenanta-mywebfro-b2b3cc1465"},
		{cloudprovider.DefaultLoadBalancerName(&v1.Service{ObjectMeta: metav1.ObjectMeta{UID: uid1}}), "a5e1b6a3c7d2f4c8e9a0b1c2d3e4f5a6"},
	} {
		if c.got != c.want {
			t.Errorf("got %s, upstream's function gives %s", c.got, c.want)
		}
	}
}

// awsClients are SDK clients acting as the AWS cloud-controller-manager.
type awsClients struct {
	ec2 *ec2.Client
	clb *clb.Client
	v2  *elbv2.Client
}

func (e *awsEnv) upstreamClients() awsClients {
	creds := credentials.NewStaticCredentialsProvider(awsAccessKey, awsSecretKey, "")
	return awsClients{
		ec2: ec2.New(ec2.Options{Region: "eu-west-1", BaseEndpoint: awssdk.String(e.fake.EC2URL()), Credentials: creds}),
		clb: clb.New(clb.Options{Region: "eu-west-1", BaseEndpoint: awssdk.String(e.fake.ELBURL()), Credentials: creds}),
		v2:  elbv2.New(elbv2.Options{Region: "eu-west-1", BaseEndpoint: awssdk.String(e.fake.ELBv2URL()), Credentials: creds}),
	}
}

// soon retries a call that names a security group just made: EC2 reads
// are eventually consistent (the fake's realistic profile too).
func soon(t *testing.T, what string, call func() error) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := call()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("upstream's %s: %v", what, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func ec2TagSpec(tags map[string]string) []ec2types.TagSpecification {
	var out []ec2types.Tag
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		out = append(out, ec2types.Tag{Key: awssdk.String(k), Value: awssdk.String(tags[k])})
	}
	return []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeSecurityGroup, Tags: out}}
}

func v2Tags(tags map[string]string) []elbtypes.Tag {
	var out []elbtypes.Tag
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		out = append(out, elbtypes.Tag{Key: awssdk.String(k), Value: awssdk.String(tags[k])})
	}
	return out
}

func cidrRanges(cidrs []string, desc string) []ec2types.IpRange {
	var out []ec2types.IpRange
	for _, c := range cidrs {
		r := ec2types.IpRange{CidrIp: awssdk.String(c)}
		if desc != "" {
			r.Description = awssdk.String(desc)
		}
		out = append(out, r)
	}
	return out
}

// sourceRanges is servicehelpers.GetLoadBalancerSourceRanges: the
// Service's, or everywhere.
func sourceRanges(svc *v1.Service) []string {
	if len(svc.Spec.LoadBalancerSourceRanges) > 0 {
		return svc.Spec.LoadBalancerSourceRanges
	}
	return []string{"0.0.0.0/0"}
}

// upstreamBuilt is what upstream made for one Service.
type upstreamBuilt struct {
	ns, name string
	nlb      bool
	lbName   string
	lbARN    string // NLB
	dnsName  string
	sg       string            // the load balancer's own security group
	tgs      map[string]string // target group name -> ARN (NLB)
}

// buildUpstreamClassic makes what aws.go EnsureLoadBalancer makes for a
// Service without a type annotation, in its order.
func (e *awsEnv) buildUpstreamClassic(t *testing.T, c awsClients, svc *v1.Service, nodeSG string, subnets, instanceIDs []string) upstreamBuilt {
	t.Helper()
	ctx := context.Background()
	b := upstreamBuilt{ns: svc.Namespace, name: svc.Name, lbName: cloudprovider.DefaultLoadBalancerName(svc)}
	// buildELBSecurityGroupList: "k8s-elb-" + name, tagged by buildTags.
	sg, err := c.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{
		GroupName:         awssdk.String("k8s-elb-" + b.lbName),
		Description:       awssdk.String(fmt.Sprintf("Security group for Kubernetes ELB %s (%s/%s)", b.lbName, svc.Namespace, svc.Name)),
		VpcId:             awssdk.String(e.vpc.ID),
		TagSpecifications: ec2TagSpec(map[string]string{upTagClusterPrefix + migrationClusterName: upOwned}),
	})
	if err != nil {
		t.Fatal(err)
	}
	b.sg = awssdk.ToString(sg.GroupId)
	// The listener ports from the source ranges, and createSecurityGroupRules'
	// ICMP 3-4 for path MTU discovery.
	ranges := cidrRanges(sourceRanges(svc), "")
	var perms []ec2types.IpPermission
	for _, p := range svc.Spec.Ports {
		perms = append(perms, ec2types.IpPermission{IpProtocol: awssdk.String(strings.ToLower(string(p.Protocol))), FromPort: awssdk.Int32(p.Port), ToPort: awssdk.Int32(p.Port), IpRanges: ranges})
	}
	perms = append(perms, ec2types.IpPermission{IpProtocol: awssdk.String("icmp"), FromPort: awssdk.Int32(3), ToPort: awssdk.Int32(4), IpRanges: ranges})
	soon(t, "AuthorizeSecurityGroupIngress (ELB group)", func() error {
		_, err := c.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: awssdk.String(b.sg), IpPermissions: perms})
		return err
	})
	// aws_loadbalancer.go ensureLoadBalancer, with aws.go buildListener's
	// listeners (lowercase protocols, as upstream sends them).
	var listeners []clbtypes.Listener
	for _, p := range svc.Spec.Ports {
		proto := strings.ToLower(string(p.Protocol))
		listeners = append(listeners, clbtypes.Listener{Protocol: awssdk.String(proto), LoadBalancerPort: p.Port, InstanceProtocol: awssdk.String(proto), InstancePort: awssdk.Int32(p.NodePort)})
	}
	var tags []clbtypes.Tag
	for k, v := range map[string]string{upTagServiceName: svc.Namespace + "/" + svc.Name, upTagClusterPrefix + migrationClusterName: upOwned} {
		tags = append(tags, clbtypes.Tag{Key: awssdk.String(k), Value: awssdk.String(v)})
	}
	soon(t, "CreateLoadBalancer (Classic)", func() error {
		out, err := c.clb.CreateLoadBalancer(ctx, &clb.CreateLoadBalancerInput{
			LoadBalancerName: awssdk.String(b.lbName), Listeners: listeners, Subnets: subnets, SecurityGroups: []string{b.sg}, Tags: tags,
		})
		if err == nil {
			b.dnsName = awssdk.ToString(out.DNSName)
		}
		return err
	})
	// The attributes EnsureLoadBalancer always sets.
	if _, err := c.clb.ModifyLoadBalancerAttributes(ctx, &clb.ModifyLoadBalancerAttributesInput{
		LoadBalancerName: awssdk.String(b.lbName),
		LoadBalancerAttributes: &clbtypes.LoadBalancerAttributes{
			AccessLog:              &clbtypes.AccessLog{Enabled: false},
			ConnectionDraining:     &clbtypes.ConnectionDraining{Enabled: false},
			ConnectionSettings:     &clbtypes.ConnectionSettings{IdleTimeout: awssdk.Int32(60)},
			CrossZoneLoadBalancing: &clbtypes.CrossZoneLoadBalancing{Enabled: false},
		},
	}); err != nil {
		t.Fatal(err)
	}
	// ensureLoadBalancerHealthCheck: TCP on the first listener's node port,
	// getExpectedHealthCheck's defaults.
	if _, err := c.clb.ConfigureHealthCheck(ctx, &clb.ConfigureHealthCheckInput{
		LoadBalancerName: awssdk.String(b.lbName),
		HealthCheck: &clbtypes.HealthCheck{
			Target:           awssdk.String(fmt.Sprintf("TCP:%d", svc.Spec.Ports[0].NodePort)),
			HealthyThreshold: awssdk.Int32(upELBHCHealthy), UnhealthyThreshold: awssdk.Int32(upELBHCUnhealthy),
			Timeout: awssdk.Int32(upELBHCTimeout), Interval: awssdk.Int32(upELBHCInterval),
		},
	}); err != nil {
		t.Fatal(err)
	}
	// updateInstanceSecurityGroupsForLoadBalancer: all traffic from the
	// ELB's group into the nodes' cluster-tagged group, no description.
	soon(t, "AuthorizeSecurityGroupIngress (node group, Classic)", func() error {
		_, err := c.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: awssdk.String(nodeSG), IpPermissions: []ec2types.IpPermission{{
			IpProtocol: awssdk.String("-1"), UserIdGroupPairs: []ec2types.UserIdGroupPair{{GroupId: awssdk.String(b.sg)}},
		}}})
		return err
	})
	// ensureLoadBalancerInstances.
	var ins []clbtypes.Instance
	for _, id := range instanceIDs {
		ins = append(ins, clbtypes.Instance{InstanceId: awssdk.String(id)})
	}
	if _, err := c.clb.RegisterInstancesWithLoadBalancer(ctx, &clb.RegisterInstancesWithLoadBalancerInput{LoadBalancerName: awssdk.String(b.lbName), Instances: ins}); err != nil {
		t.Fatal(err)
	}
	return b
}

// buildUpstreamNLB makes what aws.go EnsureLoadBalancer makes for a
// Service annotated aws-load-balancer-type: nlb, with the cloud config's
// NLBSecurityGroupMode: Managed (the managed security group), in its order.
func (e *awsEnv) buildUpstreamNLB(t *testing.T, c awsClients, ccmClusterName string, svc *v1.Service, nodeSG string, subnets, subnetCIDRs, instanceIDs []string) upstreamBuilt {
	t.Helper()
	ctx := context.Background()
	b := upstreamBuilt{ns: svc.Namespace, name: svc.Name, nlb: true, lbName: cloudprovider.DefaultLoadBalancerName(svc), tgs: map[string]string{}}
	// ensureNLBSecurityGroup: GetSecurityGroupNameForNLB, with the
	// clusterName the service controller passes (--cluster-name), tagged
	// by buildTags (the cluster ID) without the service name.
	sg, err := c.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{
		GroupName:         awssdk.String(upstreamNLBSecurityGroupName(ccmClusterName, svc.Namespace, svc.Name, svc.UID)),
		Description:       awssdk.String(upNLBSGDescription),
		VpcId:             awssdk.String(e.vpc.ID),
		TagSpecifications: ec2TagSpec(map[string]string{upTagClusterPrefix + migrationClusterName: upOwned}),
	})
	if err != nil {
		t.Fatal(err)
	}
	b.sg = awssdk.ToString(sg.GroupId)
	// aws_loadbalancer.go ensureLoadBalancerv2: the NLB with the group and
	// buildTags(owned, service-name).
	tags := map[string]string{upTagServiceName: svc.Namespace + "/" + svc.Name, upTagClusterPrefix + migrationClusterName: upOwned}
	var mappings []elbtypes.SubnetMapping
	for _, s := range subnets {
		mappings = append(mappings, elbtypes.SubnetMapping{SubnetId: awssdk.String(s)})
	}
	var lb elbtypes.LoadBalancer
	soon(t, "CreateLoadBalancer (NLB)", func() error {
		out, err := c.v2.CreateLoadBalancer(ctx, &elbv2.CreateLoadBalancerInput{
			Name: awssdk.String(b.lbName), Type: elbtypes.LoadBalancerTypeEnumNetwork, SubnetMappings: mappings,
			SecurityGroups: []string{b.sg}, Tags: v2Tags(tags),
		})
		if err == nil {
			lb = out.LoadBalancers[0]
		}
		return err
	})
	b.lbARN, b.dnsName = awssdk.ToString(lb.LoadBalancerArn), awssdk.ToString(lb.DNSName)
	// createListenerV2 per port: ensureTargetGroup (buildTargetGroupName,
	// buildNLBHealthCheckConfiguration's defaults, the same tags), its
	// targets on the node port, then the listener, tagged too.
	for _, p := range svc.Spec.Ports {
		name := upstreamTargetGroupName(migrationClusterName, svc.Namespace, svc.Name, p.Port, p.NodePort, string(p.Protocol))
		tg, err := c.v2.CreateTargetGroup(ctx, &elbv2.CreateTargetGroupInput{
			VpcId: awssdk.String(e.vpc.ID), Name: awssdk.String(name), Port: awssdk.Int32(p.NodePort),
			Protocol: elbtypes.ProtocolEnum(p.Protocol), TargetType: elbtypes.TargetTypeEnumInstance,
			HealthCheckIntervalSeconds: awssdk.Int32(upNLBHCInterval), HealthCheckPort: awssdk.String(upDefaultHCPort),
			HealthCheckProtocol: elbtypes.ProtocolEnumTcp, HealthyThresholdCount: awssdk.Int32(upNLBHCThreshold),
			UnhealthyThresholdCount: awssdk.Int32(upNLBHCThreshold), Tags: v2Tags(tags),
		})
		if err != nil {
			t.Fatal(err)
		}
		arn := awssdk.ToString(tg.TargetGroups[0].TargetGroupArn)
		b.tgs[name] = arn
		var targets []elbtypes.TargetDescription
		for _, id := range instanceIDs {
			targets = append(targets, elbtypes.TargetDescription{Id: awssdk.String(id), Port: awssdk.Int32(p.NodePort)})
		}
		if _, err := c.v2.RegisterTargets(ctx, &elbv2.RegisterTargetsInput{TargetGroupArn: awssdk.String(arn), Targets: targets}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.v2.CreateListener(ctx, &elbv2.CreateListenerInput{
			LoadBalancerArn: lb.LoadBalancerArn, Port: awssdk.Int32(p.Port), Protocol: elbtypes.ProtocolEnum(p.Protocol),
			DefaultActions: []elbtypes.Action{{Type: elbtypes.ActionTypeEnumForward, TargetGroupArn: awssdk.String(arn)}},
			Tags:           v2Tags(tags),
		}); err != nil {
			t.Fatal(err)
		}
	}
	// reconcileLBAttributes wants cross-zone and access logs off: a new
	// NLB's defaults, so upstream modifies nothing.

	// ensureNLBSecurityGroupRules: the listener ports from the source
	// ranges, and createSecurityGroupRules' ICMP 3-4.
	ranges := cidrRanges(sourceRanges(svc), "")
	var perms []ec2types.IpPermission
	for _, p := range svc.Spec.Ports {
		perms = append(perms, ec2types.IpPermission{IpProtocol: awssdk.String(strings.ToLower(string(p.Protocol))), FromPort: awssdk.Int32(p.Port), ToPort: awssdk.Int32(p.Port), IpRanges: ranges})
	}
	perms = append(perms, ec2types.IpPermission{IpProtocol: awssdk.String("icmp"), FromPort: awssdk.Int32(3), ToPort: awssdk.Int32(4), IpRanges: ranges})
	soon(t, "AuthorizeSecurityGroupIngress (NLB group)", func() error {
		_, err := c.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: awssdk.String(b.sg), IpPermissions: perms})
		return err
	})
	// aws_loadbalancer.go updateInstanceSecurityGroupsForNLB on the nodes'
	// group: the client rule (node ports from the source ranges); the
	// health rule (node ports from the NLB's subnets) unless the client
	// rule covers it (everywhere, TCP, health check on the traffic port);
	// then updateInstanceSecurityGroupForNLBMTU's ICMP 3-4 from every
	// client rule's range.
	clients := sourceRanges(svc)
	var nodePerms []ec2types.IpPermission
	for _, p := range svc.Spec.Ports {
		nodePerms = append(nodePerms, ec2types.IpPermission{IpProtocol: awssdk.String("tcp"), FromPort: awssdk.Int32(p.NodePort), ToPort: awssdk.Int32(p.NodePort),
			IpRanges: cidrRanges(clients, upNLBClientRule+"="+b.lbName)})
		if len(clients) != 1 || clients[0] != "0.0.0.0/0" {
			nodePerms = append(nodePerms, ec2types.IpPermission{IpProtocol: awssdk.String("tcp"), FromPort: awssdk.Int32(p.NodePort), ToPort: awssdk.Int32(p.NodePort),
				IpRanges: cidrRanges(subnetCIDRs, upNLBHealthRule+"="+b.lbName)})
		}
	}
	soon(t, "AuthorizeSecurityGroupIngress (node group, NLB)", func() error {
		_, err := c.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: awssdk.String(nodeSG), IpPermissions: nodePerms})
		return err
	})
	// The MTU rule is one per client range, shared by every NLB whose
	// clients come from it: granted only if no NLB has it yet.
	node, _ := e.fake.SecurityGroup(nodeSG)
	for _, cidr := range clients {
		if slices.Contains(sgRuleStrings(node.Ingress), fmt.Sprintf("icmp 3-4 from %s [%s]", cidr, upNLBMTURule)) {
			continue
		}
		if _, err := c.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: awssdk.String(nodeSG), IpPermissions: []ec2types.IpPermission{{
			IpProtocol: awssdk.String("icmp"), FromPort: awssdk.Int32(3), ToPort: awssdk.Int32(4), IpRanges: cidrRanges([]string{cidr}, upNLBMTURule),
		}}}); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// sgRuleStrings lists a group's rules one per peer, sorted:
// "tcp 80-80 from 0.0.0.0/0 [description]".
func sgRuleStrings(perms []fakeaws.IPPermission) []string {
	var out []string
	for _, p := range perms {
		head := fmt.Sprintf("%s %d-%d from ", p.Protocol, p.FromPort, p.ToPort)
		for _, r := range p.IPRanges {
			out = append(out, head+r.CIDR+" ["+r.Description+"]")
		}
		for _, r := range p.IPv6Ranges {
			out = append(out, head+r.CIDR+" ["+r.Description+"]")
		}
		for _, g := range p.Groups {
			out = append(out, head+g.GroupID+" ["+g.Description+"]")
		}
	}
	slices.Sort(out)
	return out
}

// Upstream ran with --cluster-name equal to its cluster ID (the
// kubernetes.io/cluster/<id> tag), polyccm's clusterName: every name
// matches and the switch creates nothing at all.
func TestAWSMigrationFromCloudProviderAWS(t *testing.T) {
	testAWSMigration(t, awsMigrationSetup{ccmClusterName: migrationClusterName})
}

// The usual layout of clusters not made by a tool that tags: the nodes'
// only security group and the subnets carry no cluster tag (the subnets
// keep their role tag). Upstream puts its node rules in the instances'
// only group and its load balancers in those subnets (aws.go
// findSecurityGroupForInstance, findELBSubnets); polyccm must keep
// serving them, and take every node rule away when the Services go.
func TestAWSMigrationUntaggedNodeGroupAndSubnets(t *testing.T) {
	testAWSMigration(t, awsMigrationSetup{ccmClusterName: migrationClusterName, untagged: true})
}

// Upstream ran with --cluster-name left at its default, "kubernetes",
// while its cluster ID is e2e: its NLB security groups carry a name
// polyccm (one clusterName, the cluster ID) does not give them. polyccm
// still knows each as its NLB's group (attached, described and tagged as
// upstream makes them) and keeps it: nothing is replaced or orphaned.
func TestAWSMigrationWithDefaultCCMClusterName(t *testing.T) {
	testAWSMigration(t, awsMigrationSetup{ccmClusterName: "kubernetes"})
}

// awsMigrationSetup is how upstream's cluster was laid out.
type awsMigrationSetup struct {
	// ccmClusterName is upstream's --cluster-name; its cluster ID is e2e.
	ccmClusterName string
	// untagged: the nodes' group and the subnets carry no cluster tag.
	untagged bool
}

// testAWSMigration fills the fake with what upstream, run with
// --cluster-name ccmClusterName and cluster ID e2e, built, and switches to
// polyccm.
func testAWSMigration(t *testing.T, setup awsMigrationSetup) {
	ccmClusterName := setup.ccmClusterName
	// polyccm runs first without the service controller, as the nodes'
	// controllers only: the AWS CCM still serves the Services.
	e := newAWSEnv(t, func(s *harness.Settings) {
		// polyccm's own default type, which must be upstream's (classic).
		s.DriverBlock = strings.Replace(s.DriverBlock, "\nloadBalancer:\n  defaultType: nlb", "", 1)
		s.Controllers = "nodes: true\nnodeLifecycle: true\nservices: false"
	})
	ctx := context.Background()
	c := e.upstreamClients()

	// The nodes, in the cluster's tagged security group, as upstream
	// finds it (aws.go findSecurityGroupForInstance).
	nodeTags := map[string]string{upTagClusterPrefix + migrationClusterName: upOwned}
	if setup.untagged {
		// The instances' only group: upstream's choice without a tag.
		nodeTags = nil
		var ids []string
		for _, s := range e.subnets {
			ids = append(ids, s.ID)
		}
		if _, err := c.ec2.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: ids, Tags: []ec2types.Tag{{Key: awssdk.String(upTagClusterPrefix + migrationClusterName)}}}); err != nil {
			t.Fatal(err)
		}
	}
	nodeSG := e.fake.AddSecurityGroup(fakeaws.SecurityGroup{Name: "e2e-nodes", Description: "e2e nodes", VPCID: e.vpc.ID, Tags: nodeTags})
	var ins []fakeaws.Instance
	addNode := func(i int) {
		t.Helper()
		in := e.fake.AddInstance(fakeaws.Instance{SubnetID: e.subnets[awsZones[i%2]].ID, InstanceType: "m6i.large",
			PrivateDNSName: e.nodeName(i) + ".ec2.internal", SecurityGroupIDs: []string{nodeSG.ID}})
		ins = append(ins, in)
		e.register(in.PrivateDNSName, "")
		e.waitInitialized([]string{in.PrivateDNSName}, 30*time.Second)
	}
	addNode(0)
	addNode(1)
	instanceIDs := func(n ...int) []string {
		var out []string
		for _, i := range n {
			out = append(out, ins[i].ID)
		}
		slices.Sort(out)
		return out
	}

	// The Services, with the finalizer upstream's service controller put
	// on them.
	withFinalizer := func(s *v1.Service) { s.Finalizers = []string{lbFinalizer} }
	const nsA, nsC = "migration", "shop-eu"
	svcA := nsService(t, nsA, "web", nil, withFinalizer, tcp(80), tcp(443))
	svcB := nsService(t, nsA, "api", map[string]string{upAnnType: "nlb"}, func(s *v1.Service) {
		withFinalizer(s)
		// Narrow sources: upstream then writes health rules as well.
		s.Spec.LoadBalancerSourceRanges = []string{"203.0.113.0/24"}
	}, tcp(80), tcp(443))
	svcC := nsService(t, nsC, "web-front", map[string]string{upAnnType: "nlb"}, withFinalizer, tcp(8080))
	t.Cleanup(func() {
		// If polyccm did not take the Services, their finalizers would keep
		// them in the shared API server.
		for _, s := range []*v1.Service{svcA, svcB, svcC} {
			if _, err := cp.Admin.CoreV1().Services(s.Namespace).Patch(context.Background(), s.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Logf("removing the finalizer of %s/%s: %v", s.Namespace, s.Name, err)
			}
		}
	})

	// What upstream built for them.
	subnets := []string{e.subnets[awsZones[0]].ID, e.subnets[awsZones[1]].ID}
	subnetCIDRs := []string{e.subnets[awsZones[0]].CIDRBlock, e.subnets[awsZones[1]].CIDRBlock}
	built := []upstreamBuilt{
		e.buildUpstreamClassic(t, c, svcA, nodeSG.ID, subnets, instanceIDs(0, 1)),
		e.buildUpstreamNLB(t, c, ccmClusterName, svcB, nodeSG.ID, subnets, subnetCIDRs, instanceIDs(0, 1)),
		e.buildUpstreamNLB(t, c, ccmClusterName, svcC, nodeSG.ID, subnets, subnetCIDRs, instanceIDs(0, 1)),
	}
	// The Services' status as upstream left it: aws.go toStatus and
	// v2toStatus, the DNS name only.
	for i, s := range []*v1.Service{svcA, svcB, svcC} {
		cur := nsSvc(t, s.Namespace, s.Name)
		cur.Status.LoadBalancer = v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{Hostname: built[i].dnsName}}}
		if _, err := cp.Admin.CoreV1().Services(s.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	before := e.fake.Stats()
	nodeRulesBefore := sgRuleStrings(mustSG(t, e, nodeSG.ID).Ingress)
	lbRulesBefore := map[string][]string{}
	for _, b := range built {
		lbRulesBefore[b.sg] = sgRuleStrings(mustSG(t, e, b.sg).Ingress)
	}
	// What upstream configured on the load balancers themselves.
	lbConfig := func() map[string]string {
		out := map[string]string{}
		for _, b := range built {
			if !b.nlb {
				lb, _ := e.fake.ClassicLoadBalancer(b.lbName)
				out[b.name] = fmt.Sprintf("listeners %+v health check %+v scheme %s subnets %v", lb.Listeners, lb.HealthCheck, lb.Scheme, slices.Sorted(slices.Values(lb.Subnets)))
				continue
			}
			lb, _ := e.fake.LoadBalancer(b.lbARN)
			out[b.name] = fmt.Sprintf("scheme %s listeners %v", lb.Scheme, e.lbListeners(b.lbARN))
			for name, arn := range b.tgs {
				tg, _ := e.fake.TargetGroup(arn)
				out[name] = fmt.Sprintf("%s:%d %s health check %+v", tg.Protocol, tg.Port, tg.TargetType, tg.HealthCheck)
			}
		}
		return out
	}
	configBefore := lbConfig()
	t.Logf("upstream's state: %d Classic, %d NLBs, %d target groups, %d listeners, %d security groups; node group rules %q",
		before.ClassicLoadBalancers.Live, before.LoadBalancers.Live, before.TargetGroups.Live, before.Listeners.Live, before.SecurityGroups.Live, nodeRulesBefore)

	// The switch: polyccm now runs the service controller too.
	if _, err := e.ccm.Stop(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	_ = cp.Admin.CoordinationV1().Leases("kube-system").Delete(ctx, "cloud-controller-manager", metav1.DeleteOptions{})
	e.opts.Config = strings.Replace(e.opts.Config, "\n  services: false\n", "\n  services: true\n", 1)
	if !strings.Contains(e.opts.Config, "\n  services: true\n") {
		t.Fatalf("could not turn the service controller on in:\n%s", e.opts.Config)
	}
	svcs := []*v1.Service{svcA, svcB, svcC}
	// polyccm plan first (issue 20): upstream's load balancers are adopted
	// as they are, and the plan writes to neither the cloud nor the
	// cluster.
	planState, planCalls := clusterState(t), e.fake.Faults().Calls()
	// Switching from a CCM run with another --cluster-name, polyccm tags
	// the NLBs' security groups with their Service, as its takeover does.
	pr := e.plan(t, "plan", e.opts.Config)
	checkAdopted(t, pr, svcs, "security group")
	// The plan says which cluster ID and subnets polyccm uses: upstream's.
	facts := map[string]string{}
	for _, f := range pr.report.Facts {
		facts[f.Name] = f.Value
	}
	if facts["cluster ID"] != migrationClusterName {
		t.Errorf("the plan shows cluster ID %q, want upstream's %q (facts %v)", facts["cluster ID"], migrationClusterName, pr.report.Facts)
	}
	for _, id := range subnets {
		if !strings.Contains(facts["subnets, internet-facing"], id) {
			t.Errorf("the plan's internet-facing subnets %q lack upstream's %s", facts["subnets, internet-facing"], id)
		}
	}
	checkPlanReadOnly(t, planState, planCalls, e.fake.Faults().Calls(), awsWrite)
	e.restart()

	for _, s := range svcs {
		waitEnsured(t, s.Namespace, s.Name, 0, 2*time.Minute)
	}

	// check compares the cloud with what upstream left.
	check := func(when string) {
		t.Helper()
		st := e.fake.Stats()
		if n := st.ClassicLoadBalancers.Created - before.ClassicLoadBalancers.Created; n != 0 {
			t.Errorf("%s: %d Classic load balancers created", when, n)
		}
		if n := st.LoadBalancers.Created - before.LoadBalancers.Created; n != 0 {
			t.Errorf("%s: %d NLBs created", when, n)
		}
		if n := st.TargetGroups.Created - before.TargetGroups.Created; n != 0 {
			var names []string
			for _, tg := range e.fake.TargetGroups() {
				names = append(names, tg.Name)
			}
			t.Errorf("%s: %d target groups created; target groups now %v", when, n, names)
		}
		if n := st.Listeners.Created - before.Listeners.Created; n != 0 {
			t.Errorf("%s: %d listeners created", when, n)
		}
		// Even when upstream named the NLBs' groups with another
		// --cluster-name, each NLB keeps the group it has.
		if n := st.SecurityGroups.Created - before.SecurityGroups.Created; n != 0 {
			t.Errorf("%s: %d security groups created", when, n)
		}
		for i, s := range svcs {
			now := nsSvc(t, s.Namespace, s.Name)
			if want := []v1.LoadBalancerIngress{{Hostname: built[i].dnsName}}; !reflect.DeepEqual(now.Status.LoadBalancer.Ingress, want) {
				t.Errorf("%s: Service %s/%s publishes %+v, want upstream's %+v", when, s.Namespace, s.Name, now.Status.LoadBalancer.Ingress, want)
			}
			for _, ev := range serviceEvents(t, s.Namespace, s.Name) {
				if strings.HasPrefix(ev, "Warning") {
					t.Errorf("%s: Service %s/%s: %s", when, s.Namespace, s.Name, ev)
				}
			}
		}
		if got := lbConfig(); !maps.Equal(got, configBefore) {
			for k, v := range got {
				if configBefore[k] != v {
					t.Errorf("%s: %s is now\n %s\nwas upstream's\n %s", when, k, v, configBefore[k])
				}
			}
		}
		// Upstream's rules stay as they are: none written twice in another
		// form, none added beside them.
		if got := sgRuleStrings(mustSG(t, e, nodeSG.ID).Ingress); !slices.Equal(got, nodeRulesBefore) {
			t.Errorf("%s: the nodes' group lets in\n %q\nwant upstream's\n %q", when, got, nodeRulesBefore)
		}
		// Upstream's createSecurityGroupRules (aws.go, called by
		// ensureNLBSecurityGroupRules) puts ICMP 3-4 (path MTU discovery)
		// from the source ranges into an NLB's managed group, as into a
		// Classic ELB's: polyccm keeps it (this test found it revoked).
		for _, b := range built {
			if got := sgRuleStrings(mustSG(t, e, b.sg).Ingress); !slices.Equal(got, lbRulesBefore[b.sg]) {
				t.Errorf("%s: %s/%s's group %s lets in %q, want upstream's %q", when, b.ns, b.name, b.sg, got, lbRulesBefore[b.sg])
			}
		}
		// Each load balancer keeps its group.
		for _, b := range built {
			var groups []string
			if b.nlb {
				lb, _ := e.fake.LoadBalancer(b.lbARN)
				groups = lb.SecurityGroups
			} else {
				lb, _ := e.fake.ClassicLoadBalancer(b.lbName)
				groups = lb.SecurityGroups
			}
			if !slices.Equal(groups, []string{b.sg}) {
				t.Errorf("%s: %s/%s's load balancer has groups %v, want upstream's %s", when, b.ns, b.name, groups, b.sg)
			}
		}
	}
	check("after polyccm's first sync")

	// backends lists, per load balancer, the instances it sends to.
	backends := func() map[string][]string {
		out := map[string][]string{}
		for _, b := range built {
			if !b.nlb {
				lb, _ := e.fake.ClassicLoadBalancer(b.lbName)
				out[b.name] = slices.Sorted(slices.Values(lb.Instances))
				continue
			}
			for name, arn := range b.tgs {
				tg, _ := e.fake.TargetGroup(arn)
				var ids []string
				for _, tr := range tg.Targets {
					if tr.Port != tg.Port {
						ids = append(ids, tr.ID+":wrong-port")
						continue
					}
					ids = append(ids, tr.ID)
				}
				slices.Sort(ids)
				out[name] = ids
			}
		}
		return out
	}
	wantBackends := func(ids []string) map[string][]string {
		out := map[string][]string{}
		for _, b := range built {
			if !b.nlb {
				out[b.name] = ids
			}
			for name := range b.tgs {
				out[name] = ids
			}
		}
		return out
	}

	// Node churn: one joins, one leaves; every load balancer follows.
	addNode(2)
	if err := cp.Admin.CoreV1().Nodes().Delete(ctx, ins[0].PrivateDNSName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, "every load balancer's backends follow the nodes", func() (bool, string) {
		got, want := backends(), wantBackends(instanceIDs(1, 2))
		return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprintf("backends %v, want %v", got, want)
	})
	check("after node churn")

	// Deleting the Services leaves nothing of upstream's behind.
	for _, s := range svcs {
		if err := cp.Admin.CoreV1().Services(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range svcs {
		deleteNSServiceAndWait(t, s.Namespace, s.Name, 2*time.Minute)
	}
	if left := e.fake.ClassicLoadBalancers(); len(left) != 0 {
		t.Errorf("Classic load balancers left: %v", left)
	}
	if left := e.fake.LoadBalancers(); len(left) != 0 {
		t.Errorf("NLBs left: %v", left)
	}
	if left := e.fake.TargetGroups(); len(left) != 0 {
		var names []string
		for _, tg := range left {
			names = append(names, tg.Name)
		}
		t.Errorf("target groups left: %v", names)
	}
	if left := e.fake.Listeners(); len(left) != 0 {
		t.Errorf("listeners left: %d", len(left))
	}
	for _, b := range built {
		if sg, ok := e.fake.SecurityGroup(b.sg); ok {
			t.Errorf("%s/%s's security group %s (%s) left", b.ns, b.name, sg.Name, b.sg)
		}
	}
	for _, r := range sgRuleStrings(mustSG(t, e, nodeSG.ID).Ingress) {
		if strings.Contains(r, "kubernetes.io/rule/") || slices.ContainsFunc(built, func(b upstreamBuilt) bool { return strings.Contains(r, b.sg) }) {
			t.Errorf("the nodes' group still lets in: %s", r)
		}
	}
	if st := e.fake.Stats(); st.SecurityGroups.Live != 1 {
		var names []string
		for _, sg := range e.fake.SecurityGroups() {
			names = append(names, sg.Name)
		}
		t.Errorf("%d security groups live, want only the nodes': %v", st.SecurityGroups.Live, names)
	}
}

func mustSG(t *testing.T, e *awsEnv, id string) fakeaws.SecurityGroup {
	t.Helper()
	sg, ok := e.fake.SecurityGroup(id)
	if !ok {
		t.Fatalf("security group %s is gone", id)
	}
	return sg
}

// waitEnsured waits for more than n Normal EnsuredLoadBalancer events on
// a Service: the service controller ran EnsureLoadBalancer to success.
func waitEnsured(t *testing.T, ns, name string, n int, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, "Service "+ns+"/"+name+" ensured by polyccm", func() (bool, string) {
		evs := serviceEvents(t, ns, name)
		k := 0
		for _, ev := range evs {
			if strings.HasPrefix(ev, "Normal EnsuredLoadBalancer") {
				k++
			}
		}
		return k > n, fmt.Sprintf("events %q", evs)
	})
}
