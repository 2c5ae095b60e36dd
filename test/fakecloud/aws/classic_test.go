package aws

import (
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	clb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	clbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/smithy-go"
)

func tcpListener(lbPort, instancePort int32) clbtypes.Listener {
	return clbtypes.Listener{Protocol: awssdk.String("TCP"), LoadBalancerPort: lbPort, InstancePort: awssdk.Int32(instancePort)}
}

func subnetIDs(subs []Subnet) []string {
	var ids []string
	for _, s := range subs {
		ids = append(ids, s.ID)
	}
	return ids
}

// createCLB creates a Classic Load Balancer as cloud-provider-aws does:
// TCP listeners, the cluster's subnets, a security group, the service tag.
func createCLB(c clients, name string, subs []string, sgs []string, ls ...clbtypes.Listener) (*clb.CreateLoadBalancerOutput, error) {
	return c.clb.CreateLoadBalancer(ctx, &clb.CreateLoadBalancerInput{
		LoadBalancerName: &name, Listeners: ls, Subnets: subs, SecurityGroups: sgs,
		Tags: []clbtypes.Tag{{Key: awssdk.String("kubernetes.io/service-name"), Value: awssdk.String("default/" + name)}},
	})
}

func describeCLB(t *testing.T, c clients, name string) clbtypes.LoadBalancerDescription {
	t.Helper()
	out := must[*clb.DescribeLoadBalancersOutput](t)(c.clb.DescribeLoadBalancers(ctx, &clb.DescribeLoadBalancersInput{LoadBalancerNames: []string{name}}))
	if len(out.LoadBalancerDescriptions) != 1 {
		t.Fatalf("described %d load balancers, want 1", len(out.LoadBalancerDescriptions))
	}
	return out.LoadBalancerDescriptions[0]
}

func instances(ids ...string) []clbtypes.Instance {
	var out []clbtypes.Instance
	for _, id := range ids {
		out = append(out, clbtypes.Instance{InstanceId: awssdk.String(id)})
	}
	return out
}

func instanceIDs(is []clbtypes.Instance) []string {
	var out []string
	for _, i := range is {
		out = append(out, *i.InstanceId)
	}
	return out
}

func TestClassicCreateDescribeDelete(t *testing.T) {
	s, c := start(t)
	vpc, subs := network(t, s, "c1")
	sg := s.AddSecurityGroup(SecurityGroup{Name: "k8s-elb-a1", Description: "lb", VPCID: vpc.ID})

	out := must[*clb.CreateLoadBalancerOutput](t)(createCLB(c, "a1b2c3", subnetIDs(subs), []string{sg.ID}, tcpListener(80, 30080), tcpListener(443, 30443)))
	if !regexp.MustCompile(`^a1b2c3-\d{10}\.eu-west-1\.elb\.amazonaws\.com$`).MatchString(*out.DNSName) {
		t.Errorf("DNS name = %s", *out.DNSName)
	}
	lb := describeCLB(t, c, "a1b2c3")
	if *lb.DNSName != *out.DNSName || *lb.CanonicalHostedZoneNameID != "Z32O12XQLNTSW2" || *lb.Scheme != "internet-facing" || *lb.VPCId != vpc.ID ||
		!slices.Equal(lb.Subnets, subnetIDs(subs)) || !slices.Equal(lb.AvailabilityZones, []string{subs[0].AvailabilityZone, subs[1].AvailabilityZone}) ||
		!slices.Equal(lb.SecurityGroups, []string{sg.ID}) || lb.CreatedTime == nil || len(lb.Instances) != 0 {
		t.Errorf("load balancer = %+v", lb)
	}
	if ssg := lb.SourceSecurityGroup; ssg == nil || *ssg.GroupName != "k8s-elb-a1" || *ssg.OwnerAlias != s.AccountID() {
		t.Errorf("source security group = %+v", lb.SourceSecurityGroup)
	}
	if len(lb.ListenerDescriptions) != 2 {
		t.Fatalf("listeners = %+v", lb.ListenerDescriptions)
	}
	l := lb.ListenerDescriptions[1]
	if *l.Listener.Protocol != "TCP" || l.Listener.LoadBalancerPort != 443 || *l.Listener.InstanceProtocol != "TCP" || *l.Listener.InstancePort != 30443 || l.PolicyNames == nil {
		t.Errorf("listener = %+v", l)
	}
	// The API's default health check: TCP to the first instance port.
	if hc := lb.HealthCheck; *hc.Target != "TCP:30080" || *hc.Interval != 30 || *hc.Timeout != 5 || *hc.UnhealthyThreshold != 2 || *hc.HealthyThreshold != 10 {
		t.Errorf("health check = %+v", hc)
	}
	if lb.Policies == nil || len(lb.Policies.OtherPolicies) != 0 || len(lb.BackendServerDescriptions) != 0 {
		t.Errorf("policies = %+v, backends %+v", lb.Policies, lb.BackendServerDescriptions)
	}

	// The same call again answers with the same DNS name; other settings
	// under the same name are DuplicateLoadBalancerName.
	again := must[*clb.CreateLoadBalancerOutput](t)(createCLB(c, "a1b2c3", subnetIDs(subs), []string{sg.ID}, tcpListener(443, 30443), tcpListener(80, 30080)))
	if *again.DNSName != *out.DNSName {
		t.Errorf("repeated create answered %s, want %s", *again.DNSName, *out.DNSName)
	}
	_, err := createCLB(c, "a1b2c3", subnetIDs(subs), []string{sg.ID}, tcpListener(80, 30081))
	apiErr(t, err, "DuplicateLoadBalancerName", http.StatusBadRequest)
	_, err = createCLB(c, "a1b2c3", subnetIDs(subs[:1]), []string{sg.ID}, tcpListener(80, 30080), tcpListener(443, 30443))
	apiErr(t, err, "DuplicateLoadBalancerName", http.StatusBadRequest)

	// Names: 1-32 alphanumerics and hyphens, no hyphen at either end.
	for _, bad := range []string{"-a", "a-", "a_b", "abcdefghijklmnopqrstuvwxyz0123456"} {
		_, err := createCLB(c, bad, subnetIDs(subs), nil, tcpListener(80, 30080))
		apiErr(t, err, "ValidationError", http.StatusBadRequest)
	}
	must[*clb.CreateLoadBalancerOutput](t)(createCLB(c, "abcdefghijklmnopqrstuvwxyz012345", subnetIDs(subs), nil, tcpListener(80, 30080)))

	// Internal, in zones of the default VPC.
	zones := s.AvailabilityZones()
	in := must[*clb.CreateLoadBalancerOutput](t)(c.clb.CreateLoadBalancer(ctx, &clb.CreateLoadBalancerInput{
		LoadBalancerName: awssdk.String("inner"), Scheme: awssdk.String("internal"),
		Listeners: []clbtypes.Listener{tcpListener(80, 30080)}, AvailabilityZones: []string{zones[0].Name, zones[1].Name},
	}))
	if !regexp.MustCompile(`^internal-inner-\d{10}\.eu-west-1\.elb\.amazonaws\.com$`).MatchString(*in.DNSName) {
		t.Errorf("internal DNS name = %s", *in.DNSName)
	}
	inner := describeCLB(t, c, "inner")
	if *inner.Scheme != "internal" || *inner.VPCId != s.DefaultVPC().ID || len(inner.Subnets) != 2 || len(inner.SecurityGroups) != 1 {
		t.Errorf("internal load balancer = %+v", inner)
	}
	// In the default VPC without groups: ELB's default_elb group, with
	// the listener ports open.
	g := must[*ec2.DescribeSecurityGroupsOutput](t)(c.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: inner.SecurityGroups}))
	if name := *g.SecurityGroups[0].GroupName; !regexp.MustCompile(`^default_elb_[0-9a-f-]{36}$`).MatchString(name) || len(g.SecurityGroups[0].IpPermissions) != 1 {
		t.Errorf("default ELB group = %s %+v", name, g.SecurityGroups[0].IpPermissions)
	}
	// In another VPC, that VPC's default group.
	if other := describeCLB(t, c, "abcdefghijklmnopqrstuvwxyz012345"); !slices.Equal(other.SecurityGroups, []string{vpc.DefaultSecurityGroupID}) {
		t.Errorf("groups without SecurityGroups = %v, want the VPC's default %s", other.SecurityGroups, vpc.DefaultSecurityGroupID)
	}

	// Bad input, with the service's codes and statuses.
	_, err = createCLB(c, "x1", []string{"subnet-0123456789abcdef0"}, nil, tcpListener(80, 30080))
	apiErr(t, err, "SubnetNotFound", http.StatusBadRequest)
	_, err = createCLB(c, "x1", subnetIDs(subs), []string{"sg-0123456789abcdef0"}, tcpListener(80, 30080))
	apiErr(t, err, "InvalidSecurityGroup", http.StatusBadRequest)
	_, err = createCLB(c, "x1", subnetIDs(subs), nil, tcpListener(80, 30080), tcpListener(80, 30081))
	apiErr(t, err, "DuplicateListener", http.StatusBadRequest)
	_, err = createCLB(c, "x1", subnetIDs(subs), nil, clbtypes.Listener{Protocol: awssdk.String("HTTPS"), LoadBalancerPort: 443, InstancePort: awssdk.Int32(1), SSLCertificateId: awssdk.String("nope")})
	apiErr(t, err, "CertificateNotFound", http.StatusBadRequest)
	_, err = createCLB(c, "x1", subnetIDs(subs), nil, clbtypes.Listener{Protocol: awssdk.String("HTTP"), LoadBalancerPort: 80, InstanceProtocol: awssdk.String("TCP"), InstancePort: awssdk.Int32(1)})
	apiErr(t, err, "InvalidConfigurationRequest", http.StatusConflict)
	_, err = c.clb.CreateLoadBalancer(ctx, &clb.CreateLoadBalancerInput{LoadBalancerName: awssdk.String("x1"), Scheme: awssdk.String("public"), Listeners: []clbtypes.Listener{tcpListener(80, 1)}, Subnets: subnetIDs(subs)})
	apiErr(t, err, "InvalidScheme", http.StatusBadRequest)
	third := s.AddSubnet(Subnet{VPCID: vpc.ID, AvailabilityZone: subs[0].AvailabilityZone})
	_, err = createCLB(c, "x1", []string{subs[0].ID, third.ID}, nil, tcpListener(80, 1))
	apiErr(t, err, "InvalidConfigurationRequest", http.StatusConflict)
	if _, ok := s.ClassicLoadBalancer("x1"); ok {
		t.Error("a refused create left a load balancer")
	}

	// Not found, then deleted (twice: deleting a missing one succeeds).
	_, err = c.clb.DescribeLoadBalancers(ctx, &clb.DescribeLoadBalancersInput{LoadBalancerNames: []string{"a1b2c3", "nope"}})
	apiErr(t, err, "LoadBalancerNotFound", http.StatusBadRequest)
	for range 2 {
		must[*clb.DeleteLoadBalancerOutput](t)(c.clb.DeleteLoadBalancer(ctx, &clb.DeleteLoadBalancerInput{LoadBalancerName: awssdk.String("a1b2c3")}))
	}
	_, err = c.clb.DescribeLoadBalancers(ctx, &clb.DescribeLoadBalancersInput{LoadBalancerNames: []string{"a1b2c3"}})
	apiErr(t, err, "LoadBalancerNotFound", http.StatusBadRequest)
	want := ResourceStats{Created: 3, Deleted: 1, Live: 2, Peak: 3}
	if got := s.Stats().ClassicLoadBalancers; got != want {
		t.Errorf("stats = %+v, want %+v", got, want)
	}
	if n := len(s.ClassicLoadBalancers()); n != 2 {
		t.Errorf("%d load balancers left, want 2", n)
	}
}

func TestClassicPagination(t *testing.T) {
	s, c := start(t)
	for k := range 5 {
		must[*clb.CreateLoadBalancerOutput](t)(c.clb.CreateLoadBalancer(ctx, &clb.CreateLoadBalancerInput{
			LoadBalancerName: awssdk.String("lb" + strconv.Itoa(k)), Listeners: []clbtypes.Listener{tcpListener(80, 30080)},
			AvailabilityZones: []string{s.AvailabilityZones()[0].Name},
		}))
	}
	var names []string
	var marker *string
	pages := 0
	for {
		out := must[*clb.DescribeLoadBalancersOutput](t)(c.clb.DescribeLoadBalancers(ctx, &clb.DescribeLoadBalancersInput{PageSize: awssdk.Int32(2), Marker: marker}))
		pages++
		for _, lb := range out.LoadBalancerDescriptions {
			names = append(names, *lb.LoadBalancerName)
		}
		if out.NextMarker == nil {
			break
		}
		marker = out.NextMarker
	}
	if pages != 3 || !slices.Equal(names, []string{"lb0", "lb1", "lb2", "lb3", "lb4"}) {
		t.Errorf("%d pages of %v", pages, names)
	}
	// The SDK's paginator follows NextMarker the same way.
	p := clb.NewDescribeLoadBalancersPaginator(c.clb, &clb.DescribeLoadBalancersInput{PageSize: awssdk.Int32(4)})
	n := 0
	for p.HasMorePages() {
		n += len(must[*clb.DescribeLoadBalancersOutput](t)(p.NextPage(ctx)).LoadBalancerDescriptions)
	}
	if n != 5 {
		t.Errorf("paginator saw %d load balancers", n)
	}
	for _, size := range []int32{0, 401} {
		_, err := c.clb.DescribeLoadBalancers(ctx, &clb.DescribeLoadBalancersInput{PageSize: awssdk.Int32(size)})
		apiErr(t, err, "ValidationError", http.StatusBadRequest)
	}
	_, err := c.clb.DescribeLoadBalancers(ctx, &clb.DescribeLoadBalancersInput{Marker: awssdk.String("garbage")})
	apiErr(t, err, "ValidationError", http.StatusBadRequest)
}

func TestClassicListenersInstancesHealth(t *testing.T) {
	s, c := start(t)
	clock := time.Now()
	s.SetClock(func() time.Time { return clock })
	s.SetTargetHealthDelay(time.Minute)
	vpc, subs := network(t, s, "c1")
	n1, n2 := s.AddInstance(Instance{SubnetID: subs[0].ID}), s.AddInstance(Instance{SubnetID: subs[1].ID})
	elsewhere := s.AddInstance(Instance{})
	must[*clb.CreateLoadBalancerOutput](t)(createCLB(c, "web", subnetIDs(subs), nil, tcpListener(80, 30080)))
	name := awssdk.String("web")

	// Listeners: the same again is fine, another on a taken port is not.
	must[*clb.CreateLoadBalancerListenersOutput](t)(c.clb.CreateLoadBalancerListeners(ctx, &clb.CreateLoadBalancerListenersInput{LoadBalancerName: name, Listeners: []clbtypes.Listener{tcpListener(80, 30080), tcpListener(8080, 30081)}}))
	_, err := c.clb.CreateLoadBalancerListeners(ctx, &clb.CreateLoadBalancerListenersInput{LoadBalancerName: name, Listeners: []clbtypes.Listener{tcpListener(8080, 30082)}})
	apiErr(t, err, "DuplicateListener", http.StatusBadRequest)
	_, err = c.clb.CreateLoadBalancerListeners(ctx, &clb.CreateLoadBalancerListenersInput{LoadBalancerName: awssdk.String("nope"), Listeners: []clbtypes.Listener{tcpListener(1, 1)}})
	apiErr(t, err, "LoadBalancerNotFound", http.StatusBadRequest)
	if ls := describeCLB(t, c, "web").ListenerDescriptions; len(ls) != 2 || ls[1].Listener.LoadBalancerPort != 8080 {
		t.Errorf("listeners = %+v", ls)
	}
	must[*clb.DeleteLoadBalancerListenersOutput](t)(c.clb.DeleteLoadBalancerListeners(ctx, &clb.DeleteLoadBalancerListenersInput{LoadBalancerName: name, LoadBalancerPorts: []int32{8080, 9999}}))
	if ls := describeCLB(t, c, "web").ListenerDescriptions; len(ls) != 1 || ls[0].Listener.LoadBalancerPort != 80 {
		t.Errorf("listeners after delete = %+v", ls)
	}

	// Instances.
	reg := must[*clb.RegisterInstancesWithLoadBalancerOutput](t)(c.clb.RegisterInstancesWithLoadBalancer(ctx, &clb.RegisterInstancesWithLoadBalancerInput{LoadBalancerName: name, Instances: instances(n1.ID)}))
	if !slices.Equal(instanceIDs(reg.Instances), []string{n1.ID}) {
		t.Errorf("registered = %v", instanceIDs(reg.Instances))
	}
	reg = must[*clb.RegisterInstancesWithLoadBalancerOutput](t)(c.clb.RegisterInstancesWithLoadBalancer(ctx, &clb.RegisterInstancesWithLoadBalancerInput{LoadBalancerName: name, Instances: instances(n2.ID, n1.ID)}))
	if !slices.Equal(instanceIDs(reg.Instances), []string{n1.ID, n2.ID}) {
		t.Errorf("registered = %v, want every instance of the load balancer", instanceIDs(reg.Instances))
	}
	_, err = c.clb.RegisterInstancesWithLoadBalancer(ctx, &clb.RegisterInstancesWithLoadBalancerInput{LoadBalancerName: name, Instances: instances("i-0123456789abcdef0")})
	apiErr(t, err, "InvalidInstance", http.StatusBadRequest)
	_, err = c.clb.RegisterInstancesWithLoadBalancer(ctx, &clb.RegisterInstancesWithLoadBalancerInput{LoadBalancerName: name, Instances: instances(elsewhere.ID)})
	apiErr(t, err, "InvalidInstance", http.StatusBadRequest)
	if lb := describeCLB(t, c, "web"); !slices.Equal(instanceIDs(lb.Instances), []string{n1.ID, n2.ID}) || *lb.VPCId != vpc.ID {
		t.Errorf("described instances = %v", instanceIDs(lb.Instances))
	}

	// Health: OutOfService while registration is in progress, then
	// InService; a stopped instance is OutOfService.
	health := func(ids ...string) []clbtypes.InstanceState {
		t.Helper()
		return must[*clb.DescribeInstanceHealthOutput](t)(c.clb.DescribeInstanceHealth(ctx, &clb.DescribeInstanceHealthInput{LoadBalancerName: name, Instances: instances(ids...)})).InstanceStates
	}
	hs := health()
	if len(hs) != 2 || *hs[0].State != "OutOfService" || *hs[0].ReasonCode != "ELB" || *hs[0].Description != "Instance registration is still in progress." {
		t.Errorf("health at registration = %+v", hs)
	}
	clock = clock.Add(time.Minute)
	hs = health()
	if *hs[0].State != "InService" || *hs[1].State != "InService" || *hs[0].ReasonCode != "N/A" || *hs[0].InstanceId != n1.ID {
		t.Errorf("health after the delay = %+v", hs)
	}
	s.SetInstanceState(n2.ID, InstanceStateStopped)
	if hs = health(n2.ID); *hs[0].State != "OutOfService" || *hs[0].ReasonCode != "Instance" {
		t.Errorf("health of a stopped instance = %+v", hs)
	}
	if err := s.SetClassicInstanceHealth("web", n1.ID, InstanceHealthOutOfService); err != nil {
		t.Fatal(err)
	}
	if hs = health(n1.ID); *hs[0].State != "OutOfService" {
		t.Errorf("forced health = %+v", hs)
	}
	if hs = health(elsewhere.ID); *hs[0].State != "OutOfService" || *hs[0].Description != "Instance is not currently registered with the LoadBalancer." {
		t.Errorf("health of an unregistered instance = %+v", hs)
	}
	_, err = c.clb.DescribeInstanceHealth(ctx, &clb.DescribeInstanceHealthInput{LoadBalancerName: name, Instances: instances("i-0123456789abcdef0")})
	apiErr(t, err, "InvalidInstance", http.StatusBadRequest)

	dereg := must[*clb.DeregisterInstancesFromLoadBalancerOutput](t)(c.clb.DeregisterInstancesFromLoadBalancer(ctx, &clb.DeregisterInstancesFromLoadBalancerInput{LoadBalancerName: name, Instances: instances(n1.ID)}))
	if !slices.Equal(instanceIDs(dereg.Instances), []string{n2.ID}) {
		t.Errorf("left after deregistration = %v", instanceIDs(dereg.Instances))
	}
	_, err = c.clb.DeregisterInstancesFromLoadBalancer(ctx, &clb.DeregisterInstancesFromLoadBalancerInput{LoadBalancerName: name, Instances: instances("i-0123456789abcdef0")})
	apiErr(t, err, "InvalidInstance", http.StatusBadRequest)

	// A terminated instance leaves the load balancer by itself, as on
	// AWS; its ID can no longer be deregistered by hand.
	s.SetInstanceState(n2.ID, InstanceStateTerminated)
	if got := instanceIDs(describeCLB(t, c, "web").Instances); len(got) != 0 {
		t.Errorf("instances after the last one was terminated = %v, want none", got)
	}
	_, err = c.clb.DeregisterInstancesFromLoadBalancer(ctx, &clb.DeregisterInstancesFromLoadBalancerInput{LoadBalancerName: name, Instances: instances(n2.ID)})
	apiErr(t, err, "InvalidInstance", http.StatusBadRequest)

	// Health check.
	hc := &clbtypes.HealthCheck{Target: awssdk.String("HTTP:10256/healthz"), Interval: awssdk.Int32(10), Timeout: awssdk.Int32(5), UnhealthyThreshold: awssdk.Int32(6), HealthyThreshold: awssdk.Int32(2)}
	got := must[*clb.ConfigureHealthCheckOutput](t)(c.clb.ConfigureHealthCheck(ctx, &clb.ConfigureHealthCheckInput{LoadBalancerName: name, HealthCheck: hc}))
	if *got.HealthCheck.Target != "HTTP:10256/healthz" || *got.HealthCheck.Interval != 10 {
		t.Errorf("configured = %+v", got.HealthCheck)
	}
	if d := describeCLB(t, c, "web").HealthCheck; *d.Target != "HTTP:10256/healthz" || *d.UnhealthyThreshold != 6 || *d.HealthyThreshold != 2 {
		t.Errorf("described health check = %+v", d)
	}
	for _, bad := range []clbtypes.HealthCheck{
		{Target: awssdk.String("TCP:31234/path"), Interval: awssdk.Int32(10), Timeout: awssdk.Int32(5), UnhealthyThreshold: awssdk.Int32(2), HealthyThreshold: awssdk.Int32(2)},
		{Target: awssdk.String("UDP:53"), Interval: awssdk.Int32(10), Timeout: awssdk.Int32(5), UnhealthyThreshold: awssdk.Int32(2), HealthyThreshold: awssdk.Int32(2)},
		{Target: awssdk.String("TCP:31234"), Interval: awssdk.Int32(4), Timeout: awssdk.Int32(2), UnhealthyThreshold: awssdk.Int32(2), HealthyThreshold: awssdk.Int32(2)},
		{Target: awssdk.String("TCP:31234"), Interval: awssdk.Int32(10), Timeout: awssdk.Int32(10), UnhealthyThreshold: awssdk.Int32(2), HealthyThreshold: awssdk.Int32(2)},
		{Target: awssdk.String("TCP:31234"), Interval: awssdk.Int32(10), Timeout: awssdk.Int32(5), UnhealthyThreshold: awssdk.Int32(11), HealthyThreshold: awssdk.Int32(2)},
	} {
		_, err := c.clb.ConfigureHealthCheck(ctx, &clb.ConfigureHealthCheckInput{LoadBalancerName: name, HealthCheck: &bad})
		apiErr(t, err, "ValidationError", http.StatusBadRequest)
	}
	if d := describeCLB(t, c, "web").HealthCheck; *d.Target != "HTTP:10256/healthz" {
		t.Errorf("a refused health check changed it to %+v", d)
	}
}

func TestClassicAttributesPoliciesNetworkTags(t *testing.T) {
	s, c := start(t)
	vpc, subs := network(t, s, "c1")
	sg1 := s.AddSecurityGroup(SecurityGroup{Name: "a", Description: "a", VPCID: vpc.ID})
	sg2 := s.AddSecurityGroup(SecurityGroup{Name: "b", Description: "b", VPCID: vpc.ID})
	must[*clb.CreateLoadBalancerOutput](t)(createCLB(c, "web", subnetIDs(subs[:1]), []string{sg1.ID}, tcpListener(80, 30080),
		clbtypes.Listener{Protocol: awssdk.String("SSL"), LoadBalancerPort: 443, InstancePort: awssdk.Int32(30080), SSLCertificateId: awssdk.String("arn:aws:acm:eu-west-1:123456789012:certificate/9c2b5d8e-1f3a-4b6c-8d7e-0a1b2c3d4e5f")}))
	name := awssdk.String("web")

	// Attributes: the API's defaults, then changed.
	attrs := must[*clb.DescribeLoadBalancerAttributesOutput](t)(c.clb.DescribeLoadBalancerAttributes(ctx, &clb.DescribeLoadBalancerAttributesInput{LoadBalancerName: name})).LoadBalancerAttributes
	if attrs.CrossZoneLoadBalancing.Enabled || attrs.ConnectionDraining.Enabled || *attrs.ConnectionDraining.Timeout != 300 ||
		*attrs.ConnectionSettings.IdleTimeout != 60 || attrs.AccessLog.Enabled || len(attrs.AdditionalAttributes) != 1 {
		t.Errorf("default attributes = %+v", attrs)
	}
	mod := must[*clb.ModifyLoadBalancerAttributesOutput](t)(c.clb.ModifyLoadBalancerAttributes(ctx, &clb.ModifyLoadBalancerAttributesInput{LoadBalancerName: name, LoadBalancerAttributes: &clbtypes.LoadBalancerAttributes{
		CrossZoneLoadBalancing: &clbtypes.CrossZoneLoadBalancing{Enabled: true},
		ConnectionDraining:     &clbtypes.ConnectionDraining{Enabled: true, Timeout: awssdk.Int32(60)},
		ConnectionSettings:     &clbtypes.ConnectionSettings{IdleTimeout: awssdk.Int32(3600)},
		AccessLog:              &clbtypes.AccessLog{Enabled: true, EmitInterval: awssdk.Int32(5), S3BucketName: awssdk.String("logs"), S3BucketPrefix: awssdk.String("web")},
		AdditionalAttributes:   []clbtypes.AdditionalAttribute{{Key: awssdk.String("elb.http.desyncmitigationmode"), Value: awssdk.String("strictest")}},
	}}))
	if *mod.LoadBalancerName != "web" || !mod.LoadBalancerAttributes.CrossZoneLoadBalancing.Enabled {
		t.Errorf("modify answered %+v", mod)
	}
	attrs = must[*clb.DescribeLoadBalancerAttributesOutput](t)(c.clb.DescribeLoadBalancerAttributes(ctx, &clb.DescribeLoadBalancerAttributesInput{LoadBalancerName: name})).LoadBalancerAttributes
	if !attrs.CrossZoneLoadBalancing.Enabled || !attrs.ConnectionDraining.Enabled || *attrs.ConnectionDraining.Timeout != 60 || *attrs.ConnectionSettings.IdleTimeout != 3600 ||
		!attrs.AccessLog.Enabled || *attrs.AccessLog.EmitInterval != 5 || *attrs.AccessLog.S3BucketName != "logs" || *attrs.AccessLog.S3BucketPrefix != "web" ||
		*attrs.AdditionalAttributes[0].Value != "strictest" {
		t.Errorf("modified attributes = %+v", attrs)
	}
	for _, bad := range []struct {
		a      clbtypes.LoadBalancerAttributes
		code   string
		status int
	}{
		{clbtypes.LoadBalancerAttributes{AccessLog: &clbtypes.AccessLog{Enabled: true, EmitInterval: awssdk.Int32(10), S3BucketName: awssdk.String("logs")}}, "ValidationError", 400},
		{clbtypes.LoadBalancerAttributes{AccessLog: &clbtypes.AccessLog{Enabled: true}}, "InvalidConfigurationRequest", 409},
		{clbtypes.LoadBalancerAttributes{ConnectionSettings: &clbtypes.ConnectionSettings{IdleTimeout: awssdk.Int32(4000)}}, "ValidationError", 400},
		{clbtypes.LoadBalancerAttributes{ConnectionDraining: &clbtypes.ConnectionDraining{Enabled: true, Timeout: awssdk.Int32(0)}}, "ValidationError", 400},
		{clbtypes.LoadBalancerAttributes{AdditionalAttributes: []clbtypes.AdditionalAttribute{{Key: awssdk.String("nope"), Value: awssdk.String("x")}}}, "LoadBalancerAttributeNotFound", 400},
	} {
		_, err := c.clb.ModifyLoadBalancerAttributes(ctx, &clb.ModifyLoadBalancerAttributesInput{LoadBalancerName: name, LoadBalancerAttributes: &bad.a})
		apiErr(t, err, bad.code, bad.status)
	}

	// Policies: proxy protocol on an instance port, a predefined TLS
	// policy on the SSL listener.
	must[*clb.CreateLoadBalancerPolicyOutput](t)(c.clb.CreateLoadBalancerPolicy(ctx, &clb.CreateLoadBalancerPolicyInput{
		LoadBalancerName: name, PolicyName: awssdk.String("k8s-proxyprotocol-enabled"), PolicyTypeName: awssdk.String("ProxyProtocolPolicyType"),
		PolicyAttributes: []clbtypes.PolicyAttribute{{AttributeName: awssdk.String("ProxyProtocol"), AttributeValue: awssdk.String("true")}},
	}))
	must[*clb.CreateLoadBalancerPolicyOutput](t)(c.clb.CreateLoadBalancerPolicy(ctx, &clb.CreateLoadBalancerPolicyInput{
		LoadBalancerName: name, PolicyName: awssdk.String("k8s-SSLNegotiationPolicy-ELBSecurityPolicy-TLS-1-2-2017-01"), PolicyTypeName: awssdk.String("SSLNegotiationPolicyType"),
		PolicyAttributes: []clbtypes.PolicyAttribute{{AttributeName: awssdk.String("Reference-Security-Policy"), AttributeValue: awssdk.String("ELBSecurityPolicy-TLS-1-2-2017-01")}},
	}))
	_, err := c.clb.CreateLoadBalancerPolicy(ctx, &clb.CreateLoadBalancerPolicyInput{LoadBalancerName: name, PolicyName: awssdk.String("k8s-proxyprotocol-enabled"), PolicyTypeName: awssdk.String("ProxyProtocolPolicyType"),
		PolicyAttributes: []clbtypes.PolicyAttribute{{AttributeName: awssdk.String("ProxyProtocol"), AttributeValue: awssdk.String("true")}}})
	apiErr(t, err, "DuplicatePolicyName", http.StatusBadRequest)
	_, err = c.clb.CreateLoadBalancerPolicy(ctx, &clb.CreateLoadBalancerPolicyInput{LoadBalancerName: name, PolicyName: awssdk.String("x"), PolicyTypeName: awssdk.String("NoSuchPolicyType")})
	apiErr(t, err, "PolicyTypeNotFound", http.StatusBadRequest)
	_, err = c.clb.CreateLoadBalancerPolicy(ctx, &clb.CreateLoadBalancerPolicyInput{LoadBalancerName: name, PolicyName: awssdk.String("x"), PolicyTypeName: awssdk.String("ProxyProtocolPolicyType"),
		PolicyAttributes: []clbtypes.PolicyAttribute{{AttributeName: awssdk.String("ProxyProtocol"), AttributeValue: awssdk.String("yes")}}})
	apiErr(t, err, "InvalidConfigurationRequest", http.StatusConflict)

	must[*clb.SetLoadBalancerPoliciesForBackendServerOutput](t)(c.clb.SetLoadBalancerPoliciesForBackendServer(ctx, &clb.SetLoadBalancerPoliciesForBackendServerInput{
		LoadBalancerName: name, InstancePort: awssdk.Int32(30080), PolicyNames: []string{"k8s-proxyprotocol-enabled"}}))
	must[*clb.SetLoadBalancerPoliciesOfListenerOutput](t)(c.clb.SetLoadBalancerPoliciesOfListener(ctx, &clb.SetLoadBalancerPoliciesOfListenerInput{
		LoadBalancerName: name, LoadBalancerPort: 443, PolicyNames: []string{"k8s-SSLNegotiationPolicy-ELBSecurityPolicy-TLS-1-2-2017-01"}}))
	_, err = c.clb.SetLoadBalancerPoliciesOfListener(ctx, &clb.SetLoadBalancerPoliciesOfListenerInput{LoadBalancerName: name, LoadBalancerPort: 80, PolicyNames: []string{"k8s-SSLNegotiationPolicy-ELBSecurityPolicy-TLS-1-2-2017-01"}})
	apiErr(t, err, "InvalidConfigurationRequest", http.StatusConflict)
	_, err = c.clb.SetLoadBalancerPoliciesOfListener(ctx, &clb.SetLoadBalancerPoliciesOfListenerInput{LoadBalancerName: name, LoadBalancerPort: 8443, PolicyNames: []string{}})
	apiErr(t, err, "ListenerNotFound", http.StatusBadRequest)
	_, err = c.clb.SetLoadBalancerPoliciesForBackendServer(ctx, &clb.SetLoadBalancerPoliciesForBackendServerInput{LoadBalancerName: name, InstancePort: awssdk.Int32(30080), PolicyNames: []string{"nope"}})
	apiErr(t, err, "PolicyNotFound", http.StatusBadRequest)

	lb := describeCLB(t, c, "web")
	if len(lb.BackendServerDescriptions) != 1 || *lb.BackendServerDescriptions[0].InstancePort != 30080 || !slices.Equal(lb.BackendServerDescriptions[0].PolicyNames, []string{"k8s-proxyprotocol-enabled"}) ||
		len(lb.Policies.OtherPolicies) != 2 || !slices.Equal(lb.ListenerDescriptions[1].PolicyNames, []string{"k8s-SSLNegotiationPolicy-ELBSecurityPolicy-TLS-1-2-2017-01"}) {
		t.Errorf("policies in the description: backends %+v, policies %+v, listeners %+v", lb.BackendServerDescriptions, lb.Policies, lb.ListenerDescriptions)
	}
	pols := must[*clb.DescribeLoadBalancerPoliciesOutput](t)(c.clb.DescribeLoadBalancerPolicies(ctx, &clb.DescribeLoadBalancerPoliciesInput{LoadBalancerName: name, PolicyNames: []string{"k8s-proxyprotocol-enabled"}}))
	if len(pols.PolicyDescriptions) != 1 || *pols.PolicyDescriptions[0].PolicyTypeName != "ProxyProtocolPolicyType" || *pols.PolicyDescriptions[0].PolicyAttributeDescriptions[0].AttributeValue != "true" {
		t.Errorf("described policies = %+v", pols.PolicyDescriptions)
	}
	_, err = c.clb.DescribeLoadBalancerPolicies(ctx, &clb.DescribeLoadBalancerPoliciesInput{LoadBalancerName: name, PolicyNames: []string{"nope"}})
	apiErr(t, err, "PolicyNotFound", http.StatusBadRequest)
	if sample := must[*clb.DescribeLoadBalancerPoliciesOutput](t)(c.clb.DescribeLoadBalancerPolicies(ctx, &clb.DescribeLoadBalancerPoliciesInput{})); len(sample.PolicyDescriptions) == 0 {
		t.Error("no predefined policies")
	}
	// A policy in use cannot go; cleared from the port, it can.
	_, err = c.clb.DeleteLoadBalancerPolicy(ctx, &clb.DeleteLoadBalancerPolicyInput{LoadBalancerName: name, PolicyName: awssdk.String("k8s-proxyprotocol-enabled")})
	apiErr(t, err, "InvalidConfigurationRequest", http.StatusConflict)
	must[*clb.SetLoadBalancerPoliciesForBackendServerOutput](t)(c.clb.SetLoadBalancerPoliciesForBackendServer(ctx, &clb.SetLoadBalancerPoliciesForBackendServerInput{
		LoadBalancerName: name, InstancePort: awssdk.Int32(30080), PolicyNames: []string{}}))
	must[*clb.DeleteLoadBalancerPolicyOutput](t)(c.clb.DeleteLoadBalancerPolicy(ctx, &clb.DeleteLoadBalancerPolicyInput{LoadBalancerName: name, PolicyName: awssdk.String("k8s-proxyprotocol-enabled")}))
	if lb := describeCLB(t, c, "web"); len(lb.BackendServerDescriptions) != 0 || len(lb.Policies.OtherPolicies) != 1 {
		t.Errorf("after deleting the policy: %+v %+v", lb.BackendServerDescriptions, lb.Policies)
	}

	// Security groups and subnets.
	sgs := must[*clb.ApplySecurityGroupsToLoadBalancerOutput](t)(c.clb.ApplySecurityGroupsToLoadBalancer(ctx, &clb.ApplySecurityGroupsToLoadBalancerInput{LoadBalancerName: name, SecurityGroups: []string{sg2.ID}}))
	if !slices.Equal(sgs.SecurityGroups, []string{sg2.ID}) || !slices.Equal(describeCLB(t, c, "web").SecurityGroups, []string{sg2.ID}) {
		t.Errorf("applied groups = %v", sgs.SecurityGroups)
	}
	_, err = c.clb.ApplySecurityGroupsToLoadBalancer(ctx, &clb.ApplySecurityGroupsToLoadBalancerInput{LoadBalancerName: name, SecurityGroups: []string{s.DefaultVPC().DefaultSecurityGroupID}})
	apiErr(t, err, "InvalidSecurityGroup", http.StatusBadRequest)
	att := must[*clb.AttachLoadBalancerToSubnetsOutput](t)(c.clb.AttachLoadBalancerToSubnets(ctx, &clb.AttachLoadBalancerToSubnetsInput{LoadBalancerName: name, Subnets: []string{subs[1].ID}}))
	if !slices.Equal(att.Subnets, subnetIDs(subs)) || len(describeCLB(t, c, "web").AvailabilityZones) != 2 {
		t.Errorf("attached subnets = %v", att.Subnets)
	}
	_, err = c.clb.AttachLoadBalancerToSubnets(ctx, &clb.AttachLoadBalancerToSubnetsInput{LoadBalancerName: name, Subnets: []string{"subnet-0123456789abcdef0"}})
	apiErr(t, err, "SubnetNotFound", http.StatusBadRequest)
	_, err = c.clb.AttachLoadBalancerToSubnets(ctx, &clb.AttachLoadBalancerToSubnetsInput{LoadBalancerName: name, Subnets: []string{s.AddSubnet(Subnet{VPCID: vpc.ID, AvailabilityZone: subs[0].AvailabilityZone}).ID}})
	apiErr(t, err, "InvalidConfigurationRequest", http.StatusConflict)
	det := must[*clb.DetachLoadBalancerFromSubnetsOutput](t)(c.clb.DetachLoadBalancerFromSubnets(ctx, &clb.DetachLoadBalancerFromSubnetsInput{LoadBalancerName: name, Subnets: []string{subs[0].ID}}))
	if !slices.Equal(det.Subnets, []string{subs[1].ID}) || !slices.Equal(describeCLB(t, c, "web").AvailabilityZones, []string{subs[1].AvailabilityZone}) {
		t.Errorf("subnets after detaching = %v", det.Subnets)
	}
	_, err = c.clb.DetachLoadBalancerFromSubnets(ctx, &clb.DetachLoadBalancerFromSubnetsInput{LoadBalancerName: name, Subnets: []string{subs[1].ID}})
	apiErr(t, err, "InvalidConfigurationRequest", http.StatusConflict)

	// Tags.
	must[*clb.AddTagsOutput](t)(c.clb.AddTags(ctx, &clb.AddTagsInput{LoadBalancerNames: []string{"web"}, Tags: []clbtypes.Tag{{Key: awssdk.String("kubernetes.io/cluster/c1"), Value: awssdk.String("owned")}}}))
	must[*clb.RemoveTagsOutput](t)(c.clb.RemoveTags(ctx, &clb.RemoveTagsInput{LoadBalancerNames: []string{"web"}, Tags: []clbtypes.TagKeyOnly{{Key: awssdk.String("kubernetes.io/service-name")}}}))
	tags := must[*clb.DescribeTagsOutput](t)(c.clb.DescribeTags(ctx, &clb.DescribeTagsInput{LoadBalancerNames: []string{"web"}}))
	if len(tags.TagDescriptions) != 1 || *tags.TagDescriptions[0].LoadBalancerName != "web" || len(tags.TagDescriptions[0].Tags) != 1 || *tags.TagDescriptions[0].Tags[0].Key != "kubernetes.io/cluster/c1" {
		t.Errorf("tags = %+v", tags.TagDescriptions)
	}
	_, err = c.clb.DescribeTags(ctx, &clb.DescribeTagsInput{LoadBalancerNames: []string{"web", "nope"}})
	apiErr(t, err, "LoadBalancerNotFound", http.StatusBadRequest)
	var many []string
	for range 21 {
		many = append(many, "web")
	}
	_, err = c.clb.DescribeTags(ctx, &clb.DescribeTagsInput{LoadBalancerNames: many})
	apiErr(t, err, "ValidationError", http.StatusBadRequest)
	_, err = c.clb.AddTags(ctx, &clb.AddTagsInput{LoadBalancerNames: []string{"web"}, Tags: []clbtypes.Tag{{Key: awssdk.String("k")}, {Key: awssdk.String("k")}}})
	apiErr(t, err, "DuplicateTagKeys", http.StatusBadRequest)
}

// While a Classic Load Balancer exists its security groups are in use;
// after it goes, its network interfaces hold them for the linger.
func TestClassicSecurityGroupDependency(t *testing.T) {
	s, c := start(t)
	clock := time.Now()
	s.SetClock(func() time.Time { return clock })
	s.SetDependencyLinger(2 * time.Minute)
	vpc, subs := network(t, s, "c1")
	sg := must[*ec2.CreateSecurityGroupOutput](t)(c.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: awssdk.String("k8s-elb-web"), Description: awssdk.String("lb"), VpcId: &vpc.ID}))
	must[*clb.CreateLoadBalancerOutput](t)(createCLB(c, "web", subnetIDs(subs), []string{*sg.GroupId}, tcpListener(80, 30080)))
	del := func() error {
		_, err := c.ec2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: sg.GroupId})
		return err
	}
	apiErr(t, del(), "DependencyViolation", http.StatusBadRequest)
	must[*clb.DeleteLoadBalancerOutput](t)(c.clb.DeleteLoadBalancer(ctx, &clb.DeleteLoadBalancerInput{LoadBalancerName: awssdk.String("web")}))
	apiErr(t, del(), "DependencyViolation", http.StatusBadRequest)
	clock = clock.Add(time.Minute)
	apiErr(t, del(), "DependencyViolation", http.StatusBadRequest)
	clock = clock.Add(time.Minute)
	if err := del(); err != nil {
		t.Fatalf("deleting the group after the linger: %v", err)
	}
}

// A load balancer another controller built, added directly, reads back
// through the API like one made through it.
func TestAddClassicLoadBalancer(t *testing.T) {
	s, c := start(t)
	s.SetTargetHealthDelay(time.Hour)
	_, subs := network(t, s, "c1")
	n := s.AddInstance(Instance{SubnetID: subs[0].ID})
	added := s.AddClassicLoadBalancer(ClassicLoadBalancer{
		Name: "a0123456789abcdef0123456789abcde", Subnets: subnetIDs(subs), Scheme: "internal",
		Listeners: []ClassicListener{{Protocol: "TCP", LoadBalancerPort: 80, InstancePort: 31000}},
		Instances: []string{n.ID}, Tags: map[string]string{"kubernetes.io/service-name": "default/web"},
	})
	if added.DNSName == "" || added.HealthCheck.Target != "TCP:31000" || added.Attributes.IdleTimeout != 60 || added.Listeners[0].InstanceProtocol != "TCP" {
		t.Errorf("added = %+v", added)
	}
	lb := describeCLB(t, c, added.Name)
	if *lb.DNSName != added.DNSName || *lb.Scheme != "internal" || !slices.Equal(instanceIDs(lb.Instances), []string{n.ID}) {
		t.Errorf("described = %+v", lb)
	}
	hs := must[*clb.DescribeInstanceHealthOutput](t)(c.clb.DescribeInstanceHealth(ctx, &clb.DescribeInstanceHealthInput{LoadBalancerName: &added.Name}))
	if len(hs.InstanceStates) != 1 || *hs.InstanceStates[0].State != "InService" {
		t.Errorf("health of an added load balancer's instance = %+v", hs.InstanceStates)
	}
	if got := s.Stats().ClassicLoadBalancers; got.Created != 1 || got.Live != 1 {
		t.Errorf("stats = %+v", got)
	}
}

// The wire shapes, read raw: the envelope, empty lists as empty elements,
// an unknown action answered as the other query services answer it.
func TestClassicWireShape(t *testing.T) {
	s, c := start(t)
	must[*clb.CreateLoadBalancerOutput](t)(c.clb.CreateLoadBalancer(ctx, &clb.CreateLoadBalancerInput{
		LoadBalancerName: awssdk.String("web"), Listeners: []clbtypes.Listener{tcpListener(80, 30080)}, AvailabilityZones: []string{s.AvailabilityZones()[0].Name},
	}))
	r := post(t, s, "/elb/", "elasticloadbalancing", url.Values{"Action": {"DescribeLoadBalancers"}, "Version": {"2012-06-01"}, "LoadBalancerNames.member.1": {"web"}}, true)
	doc := parseXML(t, r.body)
	if r.status != 200 || doc.XMLName.Local != "DescribeLoadBalancersResponse" || doc.XMLName.Space != "http://elasticloadbalancing.amazonaws.com/doc/2012-06-01/" {
		t.Fatalf("%d %s", r.status, r.body)
	}
	m := []string{"DescribeLoadBalancersResult", "LoadBalancerDescriptions", "member"}
	if doc.text(append(m, "LoadBalancerName")...) != "web" || doc.text(append(m, "ListenerDescriptions", "member", "Listener", "InstancePort")...) != "30080" {
		t.Errorf("description in %s", r.body)
	}
	if in, ok := doc.child(append(m, "Instances")...); !ok || len(in.Children) != 0 {
		t.Errorf("no empty <Instances/> in %s", r.body)
	}
	if doc.text("ResponseMetadata", "RequestId") != r.header.Get("X-Amzn-Requestid") {
		t.Errorf("request id in %s", r.body)
	}
	r = post(t, s, "/elb/", "elasticloadbalancing", url.Values{"Action": {"DescribeLoadBalancers"}, "Version": {"2012-06-01"}, "LoadBalancerNames.member.1": {"nope"}}, true)
	doc = parseXML(t, r.body)
	if r.status != 400 || doc.XMLName.Local != "ErrorResponse" || doc.text("Error", "Code") != "LoadBalancerNotFound" || doc.text("Error", "Type") != "Sender" {
		t.Errorf("not found = %d %s", r.status, r.body)
	}
	r = post(t, s, "/elb/", "elasticloadbalancing", url.Values{"Action": {"EnableAvailabilityZonesForLoadBalancer"}, "Version": {"2012-06-01"}}, true)
	if doc = parseXML(t, r.body); r.status != 400 || doc.text("Error", "Code") != "InvalidAction" {
		t.Errorf("unimplemented action = %d %s", r.status, r.body)
	}
	// Routed by Version at "/", and signed for the service or refused.
	r = post(t, s, "/", "elasticloadbalancing", url.Values{"Action": {"DescribeLoadBalancers"}, "Version": {"2012-06-01"}}, true)
	if doc = parseXML(t, r.body); r.status != 200 || doc.XMLName.Space != "http://elasticloadbalancing.amazonaws.com/doc/2012-06-01/" {
		t.Errorf("at / = %d %s", r.status, r.body)
	}
	r = post(t, s, "/elb/", "ec2", url.Values{"Action": {"DescribeLoadBalancers"}, "Version": {"2012-06-01"}}, true)
	if r.status != 403 {
		t.Errorf("signed for ec2 = %d %s", r.status, r.body)
	}
}

// Each ELB API version has its own bucket: draining Classic's describes
// leaves ELBv2's alone.
func TestClassicThrottlingBucket(t *testing.T) {
	s, c := start(t)
	s.Faults().SetFamilies(Throttling)
	throttledAt := 0
	for k := 1; k <= 80 && throttledAt == 0; k++ {
		var err error
		if k%2 == 0 {
			_, err = c.clb.DescribeLoadBalancers(ctx, &clb.DescribeLoadBalancersInput{})
		} else {
			_, err = c.clb.DescribeTags(ctx, &clb.DescribeTagsInput{LoadBalancerNames: []string{"x"}})
			if err != nil && isCode(err, "LoadBalancerNotFound") {
				err = nil
			}
		}
		if err != nil {
			apiErr(t, err, "Throttling", http.StatusBadRequest)
			throttledAt = k
		}
	}
	if throttledAt <= 39 || throttledAt > 70 {
		t.Fatalf("Classic describes throttled at call %d, want just after their shared bucket of 40", throttledAt)
	}
	if _, err := c.elb.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{}); err != nil {
		t.Fatalf("ELBv2 throttled by Classic's bucket: %v", err)
	}
	if _, err := c.clb.CreateLoadBalancer(ctx, &clb.CreateLoadBalancerInput{LoadBalancerName: awssdk.String("w"), Listeners: []clbtypes.Listener{tcpListener(80, 1)}, AvailabilityZones: []string{s.AvailabilityZones()[0].Name}}); err != nil {
		t.Fatalf("a Classic mutation throttled by its describes: %v", err)
	}
}

func isCode(err error, code string) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == code
}
