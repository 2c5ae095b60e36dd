package aws

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// probe calls one action of each service and returns the errors.
func probe(c clients) (ec2Err, elbErr, stsErr error) {
	_, ec2Err = c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{})
	_, elbErr = c.elb.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{})
	_, stsErr = c.sts.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	return
}

func TestWrongSecretIsRejected(t *testing.T) {
	s, _ := start(t)
	e, l, st := probe(clientsWith(t, s, DefaultRegion, testAccessKey, "not-the-secret", ""))
	ae := apiErr(t, e, "AuthFailure", http.StatusUnauthorized)
	if ae.ErrorMessage() != "AWS was not able to validate the provided access credentials" {
		t.Errorf("EC2 message = %q", ae.ErrorMessage())
	}
	apiErr(t, l, "SignatureDoesNotMatch", http.StatusForbidden)
	apiErr(t, st, "SignatureDoesNotMatch", http.StatusForbidden)
	// Nothing was served.
	if n := s.Faults().Responses("ec2 DescribeInstances")[401]; n != 1 {
		t.Errorf("401s counted = %d", n)
	}
}

func TestUnknownKeyIsRejected(t *testing.T) {
	s, _ := start(t)
	e, l, st := probe(clientsWith(t, s, DefaultRegion, "AKIAUNKNOWNKEY000000", testSecretKey, ""))
	apiErr(t, e, "AuthFailure", http.StatusUnauthorized)
	ae := apiErr(t, l, "InvalidClientTokenId", http.StatusForbidden)
	if ae.ErrorMessage() != "The security token included in the request is invalid." {
		t.Errorf("message = %q", ae.ErrorMessage())
	}
	apiErr(t, st, "InvalidClientTokenId", http.StatusForbidden)
}

func TestWrongRegionIsRejected(t *testing.T) {
	s, _ := start(t)
	e, l, st := probe(clientsWith(t, s, "us-east-1", testAccessKey, testSecretKey, ""))
	apiErr(t, e, "AuthFailure", http.StatusUnauthorized)
	ae := apiErr(t, l, "SignatureDoesNotMatch", http.StatusForbidden)
	if !strings.Contains(ae.ErrorMessage(), "region") {
		t.Errorf("message = %q", ae.ErrorMessage())
	}
	apiErr(t, st, "SignatureDoesNotMatch", http.StatusForbidden)

	// After SetRegion the same clients are right.
	s.SetRegion("us-east-1")
	if e, l, st := probe(clientsWith(t, s, "us-east-1", testAccessKey, testSecretKey, "")); e != nil || l != nil || st != nil {
		t.Fatalf("after SetRegion: %v / %v / %v", e, l, st)
	}
	zones := s.AvailabilityZones()
	if zones[0].Name != "us-east-1a" || !strings.HasPrefix(zones[0].ID, "use1-az") {
		t.Errorf("zones = %+v", zones)
	}
	if sub := s.Subnets()[0]; sub.AvailabilityZone != "us-east-1a" {
		t.Errorf("default subnet zone = %s", sub.AvailabilityZone)
	}
	inst := s.AddInstance(Instance{})
	if !strings.HasSuffix(inst.PrivateDNSName, ".ec2.internal") || !strings.HasSuffix(inst.PublicDNSName, ".compute-1.amazonaws.com") {
		t.Errorf("us-east-1 names = %s %s", inst.PrivateDNSName, inst.PublicDNSName)
	}
}

func TestRotateAndRevokeCredentials(t *testing.T) {
	s, c := start(t)
	s.SetCredentials("AKIAROTATED000000000", "rotated-secret")
	e, l, _ := probe(c)
	apiErr(t, e, "AuthFailure", http.StatusUnauthorized)
	apiErr(t, l, "InvalidClientTokenId", http.StatusForbidden)
	rotated := clientsWith(t, s, DefaultRegion, "AKIAROTATED000000000", "rotated-secret", "")
	if e, l, st := probe(rotated); e != nil || l != nil || st != nil {
		t.Fatalf("rotated key: %v / %v / %v", e, l, st)
	}
	s.AddCredentials("AKIASECOND0000000000", "second")
	s.RevokeAll()
	for _, cl := range []clients{rotated, clientsWith(t, s, DefaultRegion, "AKIASECOND0000000000", "second", "")} {
		e, l, _ := probe(cl)
		apiErr(t, e, "AuthFailure", http.StatusUnauthorized)
		apiErr(t, l, "InvalidClientTokenId", http.StatusForbidden)
	}
	s.SetCredentials(testAccessKey, testSecretKey)
	if e, _, _ := probe(c); e != nil {
		t.Fatalf("new key after RevokeAll: %v", e)
	}
}

func TestUnsignedRequests(t *testing.T) {
	s, _ := start(t)
	form := url.Values{"Action": {"DescribeInstances"}, "Version": {"2016-11-15"}}
	r := post(t, s, "/ec2/", "ec2", form, false)
	doc := parseXML(t, r.body)
	if r.status != 400 || doc.XMLName.Local != "Response" || doc.text("Errors", "Error", "Code") != "MissingParameter" ||
		doc.text("RequestID") == "" || doc.text("RequestID") != r.header.Get("X-Amzn-Requestid") {
		t.Errorf("EC2 unsigned: %d %s", r.status, r.body)
	}
	form = url.Values{"Action": {"DescribeLoadBalancers"}, "Version": {"2015-12-01"}}
	r = post(t, s, "/elbv2/", "elasticloadbalancing", form, false)
	doc = parseXML(t, r.body)
	if r.status != 403 || doc.XMLName.Local != "ErrorResponse" || doc.XMLName.Space != "http://elasticloadbalancing.amazonaws.com/doc/2015-12-01/" ||
		doc.text("Error", "Type") != "Sender" || doc.text("Error", "Code") != "MissingAuthenticationToken" || doc.text("RequestId") != r.header.Get("X-Amzn-Requestid") {
		t.Errorf("ELBv2 unsigned: %d %s", r.status, r.body)
	}
}

func TestRoutingByVersionAtRoot(t *testing.T) {
	s, _ := start(t)
	cases := []struct {
		service, action, version, root string
	}{
		{"ec2", "DescribeAvailabilityZones", "2016-11-15", "DescribeAvailabilityZonesResponse"},
		{"elasticloadbalancing", "DescribeLoadBalancers", "2015-12-01", "DescribeLoadBalancersResponse"},
		{"sts", "GetCallerIdentity", "2011-06-15", "GetCallerIdentityResponse"},
	}
	for _, tc := range cases {
		r := post(t, s, "/", tc.service, url.Values{"Action": {tc.action}, "Version": {tc.version}}, true)
		if r.status != 200 || parseXML(t, r.body).XMLName.Local != tc.root {
			t.Errorf("%s at /: %d %s", tc.action, r.status, r.body)
		}
	}
	// Signed for the wrong service.
	r := post(t, s, "/elbv2/", "ec2", url.Values{"Action": {"DescribeLoadBalancers"}, "Version": {"2015-12-01"}}, true)
	if r.status != 403 || parseXML(t, r.body).text("Error", "Code") != "SignatureDoesNotMatch" {
		t.Errorf("wrong service scope: %d %s", r.status, r.body)
	}
	r = post(t, s, "/ec2/", "ec2", url.Values{"Action": {"Bogus"}, "Version": {"2016-11-15"}}, true)
	if r.status != 400 || parseXML(t, r.body).text("Errors", "Error", "Code") != "InvalidAction" {
		t.Errorf("unknown action: %d %s", r.status, r.body)
	}
}

func TestAssumeRole(t *testing.T) {
	s, c := start(t)
	role := "arn:aws:iam::123456789012:role/polyccm-controller"
	provider := stscreds.NewAssumeRoleProvider(c.sts, role, func(o *stscreds.AssumeRoleOptions) { o.RoleSessionName = "ccm" })
	assumed := newClients(t, s, loadConfig(t, DefaultRegion, awssdk.NewCredentialsCache(provider)))

	id := must[*sts.GetCallerIdentityOutput](t)(assumed.sts.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}))
	if *id.Arn != "arn:aws:sts::123456789012:assumed-role/polyccm-controller/ccm" || *id.Account != "123456789012" ||
		!strings.HasPrefix(*id.UserId, "AROA") || !strings.HasSuffix(*id.UserId, ":ccm") {
		t.Errorf("assumed identity = %s %s %s", *id.Arn, *id.UserId, *id.Account)
	}
	user := must[*sts.GetCallerIdentityOutput](t)(c.sts.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}))
	if *user.Arn != "arn:aws:iam::123456789012:user/"+DefaultUserName || !strings.HasPrefix(*user.UserId, "AIDA") {
		t.Errorf("user identity = %s %s", *user.Arn, *user.UserId)
	}
	if e, l, _ := probe(assumed); e != nil || l != nil {
		t.Fatalf("assumed-role credentials refused: %v / %v", e, l)
	}

	// The session token is verified: the right key without it, or with
	// another, fails.
	creds := must[awssdk.Credentials](t)(provider.Retrieve(ctx))
	if !strings.HasPrefix(creds.AccessKeyID, "ASIA") || creds.SessionToken == "" || !creds.CanExpire {
		t.Errorf("credentials = %+v", creds)
	}
	e, l, _ := probe(clientsWith(t, s, DefaultRegion, creds.AccessKeyID, creds.SecretAccessKey, ""))
	apiErr(t, e, "AuthFailure", http.StatusUnauthorized)
	apiErr(t, l, "InvalidClientTokenId", http.StatusForbidden)
	_, l, _ = probe(clientsWith(t, s, DefaultRegion, creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken+"x"))
	apiErr(t, l, "InvalidClientTokenId", http.StatusForbidden)

	// Expired sessions.
	s.ExpireSessions()
	stale := clientsWith(t, s, DefaultRegion, creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken)
	e, l, st := probe(stale)
	apiErr(t, e, "RequestExpired", http.StatusBadRequest)
	apiErr(t, l, "ExpiredToken", http.StatusForbidden)
	apiErr(t, st, "ExpiredToken", http.StatusForbidden)

	// Validation and trust policy.
	_, err := c.sts.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: &role, RoleSessionName: awssdk.String("x")})
	apiErr(t, err, "ValidationError", http.StatusBadRequest)
	_, err = c.sts.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: &role, RoleSessionName: awssdk.String("ccm"), DurationSeconds: awssdk.Int32(7200)})
	apiErr(t, err, "ValidationError", http.StatusBadRequest)
	s.SetRoleExternalID(role, "secret-id")
	_, err = c.sts.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: &role, RoleSessionName: awssdk.String("ccm")})
	apiErr(t, err, "AccessDenied", http.StatusForbidden)
	out := must[*sts.AssumeRoleOutput](t)(c.sts.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: &role, RoleSessionName: awssdk.String("ccm"), ExternalId: awssdk.String("secret-id"), DurationSeconds: awssdk.Int32(900)}))
	if d := time.Until(*out.Credentials.Expiration); d < 14*time.Minute || d > 16*time.Minute || *out.AssumedRoleUser.Arn != "arn:aws:sts::123456789012:assumed-role/polyccm-controller/ccm" {
		t.Errorf("assume role = %+v", out.AssumedRoleUser)
	}
}

func TestDenyAndDryRun(t *testing.T) {
	s, c := start(t)
	vpc := s.AddVPC(VPC{})
	s.Deny("ec2:CreateSecurityGroup", "elasticloadbalancing:*")
	_, err := c.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: awssdk.String("x"), Description: awssdk.String("x"), VpcId: &vpc.ID})
	ae := apiErr(t, err, "UnauthorizedOperation", http.StatusForbidden)
	if !strings.Contains(ae.ErrorMessage(), "ec2:CreateSecurityGroup") {
		t.Errorf("message = %q", ae.ErrorMessage())
	}
	_, err = c.elb.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{})
	apiErr(t, err, "AccessDenied", http.StatusForbidden)
	s.Allow("ec2:CreateSecurityGroup")
	_, err = c.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: awssdk.String("x"), Description: awssdk.String("x"), VpcId: &vpc.ID, DryRun: awssdk.Bool(true)})
	apiErr(t, err, "DryRunOperation", http.StatusPreconditionFailed)
	if len(s.SecurityGroups()) != 2 {
		t.Error("a dry run created a group")
	}
	_, err = c.ec2.DescribeRouteTables(ctx, &ec2.DescribeRouteTablesInput{Filters: []ec2types.Filter{{Name: awssdk.String("vpc-id"), Values: []string{vpc.ID}}}})
	if err != nil {
		t.Fatal(err)
	}
}
