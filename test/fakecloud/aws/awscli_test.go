package aws

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The aws command-line client (botocore, Python) is a client we did not
// write: these tests check the fake's wire format, pagination, errors and
// timing against it, not only against the Go SDK our driver uses.

// needCLI skips without the aws command, unless CI (which installs it
// from Debian) requires it.
func needCLI(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("aws"); err != nil {
		if os.Getenv("CCMTEST_REQUIRE_PKGTOOLS") != "" {
			t.Fatal("the aws command is required (apt-get install awscli)")
		}
		t.Skip("no aws command; apt-get install awscli to run this test")
	}
}

// cli runs the aws command-line client against the fake and returns its
// JSON output decoded, or its error output and exit status.
func cli(t *testing.T, s *Server, service string, args ...string) (out map[string]any, stderr string, code int) {
	t.Helper()
	needCLI(t)
	url := map[string]string{"ec2": s.EC2URL(), "elb": s.ELBURL(), "elbv2": s.ELBv2URL(), "sts": s.STSURL()}[service]
	cmd := exec.Command("aws", append([]string{"--endpoint-url", url, "--output", "json", service}, args...)...)
	cmd.Env = append(os.Environ(),
		"AWS_ACCESS_KEY_ID="+testAccessKey, "AWS_SECRET_ACCESS_KEY="+testSecretKey,
		"AWS_DEFAULT_REGION="+DefaultRegion, "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
		"AWS_PAGER=", "AWS_MAX_ATTEMPTS=1", "AWS_RETRY_MODE=standard")
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return nil, se.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatalf("aws: %v", err)
	}
	if so.Len() > 0 {
		if err := json.Unmarshal(so.Bytes(), &out); err != nil {
			t.Fatalf("aws %s %v: output is not JSON: %v\n%s", service, args, err, so.String())
		}
	}
	return out, se.String(), 0
}

// instances counts the instances of a describe-instances answer.
func instanceCount(out map[string]any) int {
	n := 0
	for _, r := range out["Reservations"].([]any) {
		n += len(r.(map[string]any)["Instances"].([]any))
	}
	return n
}

func failed(t *testing.T, what, stderr string, code int, want string) {
	t.Helper()
	if code == 0 || !strings.Contains(stderr, want) {
		t.Errorf("%s: exit %d, %q; want a failure naming %s", what, code, strings.TrimSpace(stderr), want)
	}
}

func TestAWSCLIEC2(t *testing.T) {
	needCLI(t)
	t.Parallel()
	s, _ := start(t)
	var ids []string
	for range 12 {
		ids = append(ids, s.AddInstance(Instance{}).ID)
	}
	s.SetInstanceState(ids[0], "stopped")

	if out, se, code := cli(t, s, "sts", "get-caller-identity"); code != 0 || out["Account"] != s.AccountID() {
		t.Errorf("get-caller-identity: %v %s", out, se)
	}
	// The CLI follows NextToken itself: 12 instances in pages of 5.
	if out, se, code := cli(t, s, "ec2", "describe-instances", "--page-size", "5"); code != 0 || instanceCount(out) != 12 {
		t.Errorf("describe-instances in pages of 5: exit %d, %d instances, want 12: %s", code, instanceCount(out), se)
	}
	// EC2's own bound on MaxResults.
	_, se, code := cli(t, s, "ec2", "describe-instances", "--page-size", "1")
	failed(t, "page size 1", se, code, "InvalidParameterValue")
	if out, se, code := cli(t, s, "ec2", "describe-instances", "--filters", "Name=instance-state-name,Values=running"); code != 0 || instanceCount(out) != 11 {
		t.Errorf("running instances: exit %d, %d, want 11: %s", code, instanceCount(out), se)
	}
	_, se, code = cli(t, s, "ec2", "describe-instances", "--instance-ids", "i-0123456789abcdef0")
	failed(t, "unknown instance", se, code, "InvalidInstanceID.NotFound")
	_, se, code = cli(t, s, "ec2", "describe-instances", "--instance-ids", "i-nothex")
	failed(t, "malformed instance ID", se, code, "InvalidInstanceID.Malformed")

	// A security group and an ingress rule, read back.
	sg, se, code := cli(t, s, "ec2", "create-security-group", "--group-name", "web", "--description", "web", "--vpc-id", s.DefaultVPC().ID)
	if code != 0 || !strings.HasPrefix(fmt.Sprint(sg["GroupId"]), "sg-") {
		t.Fatalf("create-security-group: %v %s", sg, se)
	}
	id := sg["GroupId"].(string)
	if out, se, code := cli(t, s, "ec2", "authorize-security-group-ingress", "--group-id", id, "--protocol", "tcp", "--port", "80", "--cidr", "10.0.0.0/8"); code != 0 || out["Return"] != true {
		t.Errorf("authorize-security-group-ingress: %v %s", out, se)
	}
	_, se, code = cli(t, s, "ec2", "authorize-security-group-ingress", "--group-id", id, "--protocol", "tcp", "--port", "80", "--cidr", "10.0.0.0/8")
	failed(t, "the same rule again", se, code, "InvalidPermission.Duplicate")
	out, se, code := cli(t, s, "ec2", "describe-security-groups", "--group-ids", id)
	if code != 0 {
		t.Fatal(se)
	}
	perms := out["SecurityGroups"].([]any)[0].(map[string]any)["IpPermissions"].([]any)
	if len(perms) != 1 || perms[0].(map[string]any)["FromPort"] != 80.0 || perms[0].(map[string]any)["IpRanges"].([]any)[0].(map[string]any)["CidrIp"] != "10.0.0.0/8" {
		t.Errorf("permissions read back: %v", perms)
	}
	_, se, code = cli(t, s, "ec2", "create-security-group", "--group-name", "web", "--description", "web", "--vpc-id", s.DefaultVPC().ID)
	failed(t, "a second group of the same name", se, code, "InvalidGroup.Duplicate")

	// EC2 throttles with RequestLimitExceeded (HTTP 503).
	s.Faults().SetRateLimit(0.001, 1)
	cli(t, s, "ec2", "describe-vpcs")
	_, se, code = cli(t, s, "ec2", "describe-vpcs")
	failed(t, "over the rate limit", se, code, "RequestLimitExceeded")
}

func TestAWSCLIELBv2(t *testing.T) {
	needCLI(t)
	t.Parallel()
	s, _ := start(t)
	s.SetLoadBalancerActivationDelay(time.Hour)
	s.SetTargetHealthDelay(time.Hour)
	inst := s.AddInstance(Instance{})

	lb, se, code := cli(t, s, "elbv2", "create-load-balancer", "--name", "web", "--type", "network", "--subnets", inst.SubnetID)
	if code != 0 {
		t.Fatal(se)
	}
	l := lb["LoadBalancers"].([]any)[0].(map[string]any)
	if l["State"].(map[string]any)["Code"] != "provisioning" || l["Type"] != "network" || !strings.HasPrefix(l["DNSName"].(string), "web-") {
		t.Errorf("create-load-balancer: %v", l)
	}
	if out, se, code := cli(t, s, "elbv2", "describe-load-balancers", "--names", "web"); code != 0 || out["LoadBalancers"].([]any)[0].(map[string]any)["State"].(map[string]any)["Code"] != "provisioning" {
		t.Errorf("describe-load-balancers while provisioning: %v %s", out, se)
	}
	_, se, code = cli(t, s, "elbv2", "describe-load-balancers", "--names", "nope")
	failed(t, "unknown load balancer", se, code, "LoadBalancerNotFound")

	tg, se, code := cli(t, s, "elbv2", "create-target-group", "--name", "web-80", "--protocol", "TCP", "--port", "30080", "--vpc-id", inst.VPCID)
	if code != 0 {
		t.Fatal(se)
	}
	arn := tg["TargetGroups"].([]any)[0].(map[string]any)["TargetGroupArn"].(string)
	if _, se, code := cli(t, s, "elbv2", "register-targets", "--target-group-arn", arn, "--targets", "Id="+inst.ID); code != 0 {
		t.Fatal(se)
	}
	health := func() map[string]any {
		t.Helper()
		out, se, code := cli(t, s, "elbv2", "describe-target-health", "--target-group-arn", arn)
		if code != 0 {
			t.Fatal(se)
		}
		h := out["TargetHealthDescriptions"].([]any)[0].(map[string]any)
		if h["Target"].(map[string]any)["Id"] != inst.ID {
			t.Errorf("target health of %v, want %s", h, inst.ID)
		}
		return h["TargetHealth"].(map[string]any)
	}
	// No listener sends it traffic yet: unused, as AWS says.
	if h := health(); h["State"] != "unused" || h["Reason"] != "Target.NotInUse" {
		t.Errorf("a target of a group no load balancer uses: %v", h)
	}
	if _, se, code := cli(t, s, "elbv2", "create-listener", "--load-balancer-arn", l["LoadBalancerArn"].(string), "--protocol", "TCP", "--port", "80",
		"--default-actions", "Type=forward,TargetGroupArn="+arn); code != 0 {
		t.Fatal(se)
	}
	if h := health(); h["State"] != "initial" {
		t.Errorf("a target just put behind a listener: %v; want initial", h)
	}
	_, se, code = cli(t, s, "elbv2", "register-targets", "--target-group-arn", arn, "--targets", "Id=i-0123456789abcdef0")
	failed(t, "an unknown instance as target", se, code, "InvalidTarget")
	_, se, code = cli(t, s, "elbv2", "create-target-group", "--name", "web-80", "--protocol", "TCP", "--port", "30081", "--vpc-id", inst.VPCID)
	failed(t, "the same name, other settings", se, code, "DuplicateTargetGroupName")

	// ELBv2 throttles with Throttling (HTTP 400).
	s.Faults().SetRateLimit(0.001, 1)
	cli(t, s, "elbv2", "describe-target-groups")
	_, se, code = cli(t, s, "elbv2", "describe-target-groups")
	failed(t, "over the rate limit", se, code, "Throttling")
}

func TestAWSCLIClassicELB(t *testing.T) {
	needCLI(t)
	t.Parallel()
	s, _ := start(t)
	s.SetTargetHealthDelay(time.Hour)
	inst := s.AddInstance(Instance{})

	created, se, code := cli(t, s, "elb", "create-load-balancer", "--load-balancer-name", "web",
		"--listeners", "Protocol=TCP,LoadBalancerPort=80,InstanceProtocol=TCP,InstancePort=30080", "--subnets", inst.SubnetID)
	if code != 0 {
		t.Fatal(se)
	}
	dns, _ := created["DNSName"].(string)
	if !strings.HasPrefix(dns, "web-") || !strings.HasSuffix(dns, "."+DefaultRegion+".elb.amazonaws.com") {
		t.Errorf("create-load-balancer: %v", created)
	}
	out, se, code := cli(t, s, "elb", "describe-load-balancers", "--load-balancer-names", "web")
	if code != 0 {
		t.Fatal(se)
	}
	lb := out["LoadBalancerDescriptions"].([]any)[0].(map[string]any)
	l := lb["ListenerDescriptions"].([]any)[0].(map[string]any)["Listener"].(map[string]any)
	if lb["DNSName"] != dns || lb["Scheme"] != "internet-facing" || lb["VPCId"] != inst.VPCID || l["InstancePort"] != 30080.0 ||
		lb["HealthCheck"].(map[string]any)["Target"] != "TCP:30080" || len(lb["Instances"].([]any)) != 0 {
		t.Errorf("describe-load-balancers: %v", lb)
	}
	_, se, code = cli(t, s, "elb", "describe-load-balancers", "--load-balancer-names", "nope")
	failed(t, "unknown load balancer", se, code, "LoadBalancerNotFound")
	_, se, code = cli(t, s, "elb", "create-load-balancer", "--load-balancer-name", "web",
		"--listeners", "Protocol=TCP,LoadBalancerPort=80,InstanceProtocol=TCP,InstancePort=30081", "--subnets", inst.SubnetID)
	failed(t, "the same name, other settings", se, code, "DuplicateLoadBalancerName")

	reg, se, code := cli(t, s, "elb", "register-instances-with-load-balancer", "--load-balancer-name", "web", "--instances", inst.ID)
	if code != 0 || len(reg["Instances"].([]any)) != 1 || reg["Instances"].([]any)[0].(map[string]any)["InstanceId"] != inst.ID {
		t.Errorf("register-instances-with-load-balancer: %v %s", reg, se)
	}
	_, se, code = cli(t, s, "elb", "register-instances-with-load-balancer", "--load-balancer-name", "web", "--instances", "i-0123456789abcdef0")
	failed(t, "an unknown instance", se, code, "InvalidInstance")
	h, se, code := cli(t, s, "elb", "describe-instance-health", "--load-balancer-name", "web")
	if code != 0 {
		t.Fatal(se)
	}
	st := h["InstanceStates"].([]any)[0].(map[string]any)
	if st["InstanceId"] != inst.ID || st["State"] != "OutOfService" || st["ReasonCode"] != "ELB" {
		t.Errorf("describe-instance-health while registering: %v", st)
	}
	s.SetTargetHealthDelay(0)
	if h, se, code = cli(t, s, "elb", "describe-instance-health", "--load-balancer-name", "web"); code != 0 || h["InstanceStates"].([]any)[0].(map[string]any)["State"] != "InService" {
		t.Errorf("describe-instance-health after the delay: %v %s", h, se)
	}
	if _, se, code := cli(t, s, "elb", "delete-load-balancer", "--load-balancer-name", "web"); code != 0 {
		t.Fatal(se)
	}
	if _, se, code := cli(t, s, "elb", "delete-load-balancer", "--load-balancer-name", "web"); code != 0 {
		t.Errorf("deleting a deleted load balancer: %s", se)
	}
}
