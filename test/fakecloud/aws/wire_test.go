package aws

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// These tests read the raw XML, to check the wire shapes independently of
// the SDK's decoding (which skips what it does not know).

func TestEC2WireShape(t *testing.T) {
	s, _ := start(t)
	inst := s.AddInstance(Instance{Tags: map[string]string{"Name": "n1"}})
	r := post(t, s, "/ec2/", "ec2", url.Values{
		"Action": {"DescribeInstances"}, "Version": {"2016-11-15"},
		"Filter.1.Name": {"tag:Name"}, "Filter.1.Value.1": {"n1"},
	}, true)
	doc := parseXML(t, r.body)
	if r.status != 200 || doc.XMLName.Local != "DescribeInstancesResponse" || doc.XMLName.Space != "http://ec2.amazonaws.com/doc/2016-11-15/" {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if first := doc.Children[0]; first.XMLName.Local != "requestId" || first.Text != r.header.Get("X-Amzn-Requestid") {
		t.Errorf("first element = %+v", first.XMLName)
	}
	if r.header.Get("Content-Type") != "text/xml;charset=UTF-8" {
		t.Errorf("content type = %q", r.header.Get("Content-Type"))
	}
	item := []string{"reservationSet", "item", "instancesSet", "item"}
	if got := doc.text(append(item, "instanceId")...); got != inst.ID {
		t.Errorf("instanceId = %q in %s", got, r.body)
	}
	if got := doc.text(append(item, "instanceState", "name")...); got != "running" {
		t.Errorf("state = %q", got)
	}
	if got := doc.text(append(item, "tagSet", "item", "key")...); got != "Name" {
		t.Errorf("tag key = %q", got)
	}
	if got := doc.text(append(item, "networkInterfaceSet", "item", "macAddress")...); got != inst.MACAddress {
		t.Errorf("mac = %q", got)
	}

	r = post(t, s, "/ec2/", "ec2", url.Values{"Action": {"DescribeInstances"}, "Version": {"2016-11-15"}, "InstanceId.1": {"i-0123456789abcdef0"}}, true)
	doc = parseXML(t, r.body)
	if r.status != 400 || doc.XMLName.Local != "Response" || doc.XMLName.Space != "" ||
		doc.text("Errors", "Error", "Code") != "InvalidInstanceID.NotFound" || doc.text("RequestID") != r.header.Get("X-Amzn-Requestid") {
		t.Errorf("error = %d %s", r.status, r.body)
	}

	// A void action answers <return>true</return>.
	r = post(t, s, "/ec2/", "ec2", url.Values{
		"Action": {"CreateTags"}, "Version": {"2016-11-15"},
		"ResourceId.1": {inst.ID}, "Tag.1.Key": {"k"}, "Tag.1.Value": {"v"},
	}, true)
	if doc = parseXML(t, r.body); r.status != 200 || doc.XMLName.Local != "CreateTagsResponse" || doc.text("return") != "true" {
		t.Errorf("CreateTags = %d %s", r.status, r.body)
	}
}

func TestQueryWireShape(t *testing.T) {
	s, _ := start(t)
	_, subs := network(t, s, "c1")
	r := post(t, s, "/elbv2/", "elasticloadbalancing", url.Values{
		"Action": {"CreateLoadBalancer"}, "Version": {"2015-12-01"},
		"Name": {"wire"}, "Type": {"network"},
		"Subnets.member.1": {subs[0].ID}, "Subnets.member.2": {subs[1].ID},
		"Tags.member.1.Key": {"a"}, "Tags.member.1.Value": {"b"},
	}, true)
	doc := parseXML(t, r.body)
	if r.status != 200 || doc.XMLName.Local != "CreateLoadBalancerResponse" || doc.XMLName.Space != elbService.namespace {
		t.Fatalf("%d %s", r.status, r.body)
	}
	if doc.text("ResponseMetadata", "RequestId") != r.header.Get("X-Amzn-Requestid") || r.header.Get("X-Amzn-Requestid") == "" {
		t.Errorf("request id: %s", r.body)
	}
	lb, ok := doc.child("CreateLoadBalancerResult", "LoadBalancers", "member")
	if !ok || lb.text("LoadBalancerName") != "wire" || lb.text("State", "Code") != "provisioning" || lb.text("AvailabilityZones", "member", "SubnetId") != subs[0].ID {
		t.Errorf("result = %s", r.body)
	}

	// An action with no output still has an empty result element.
	r = post(t, s, "/elbv2/", "elasticloadbalancing", url.Values{
		"Action": {"DeleteLoadBalancer"}, "Version": {"2015-12-01"}, "LoadBalancerArn": {lb.text("LoadBalancerArn")},
	}, true)
	doc = parseXML(t, r.body)
	if _, ok := doc.child("DeleteLoadBalancerResult"); !ok || r.status != 200 {
		t.Errorf("delete = %d %s", r.status, r.body)
	}

	// Errors come in the ErrorResponse envelope.
	r = post(t, s, "/elbv2/", "elasticloadbalancing", url.Values{
		"Action": {"DescribeLoadBalancers"}, "Version": {"2015-12-01"}, "Names.member.1": {"gone"},
	}, true)
	doc = parseXML(t, r.body)
	if r.status != http.StatusBadRequest || doc.XMLName.Local != "ErrorResponse" || doc.text("Error", "Type") != "Sender" ||
		doc.text("Error", "Code") != "LoadBalancerNotFound" || doc.text("RequestId") == "" {
		t.Errorf("error = %d %s", r.status, r.body)
	}

	r = post(t, s, "/sts/", "sts", url.Values{"Action": {"GetCallerIdentity"}, "Version": {"2011-06-15"}}, true)
	doc = parseXML(t, r.body)
	if doc.XMLName.Space != "https://sts.amazonaws.com/doc/2011-06-15/" || doc.text("GetCallerIdentityResult", "Account") != DefaultAccountID {
		t.Errorf("sts = %s", r.body)
	}

	// Injected server errors are Receiver faults.
	s.Faults().FailNext("sts GetCallerIdentity", 1, 500)
	r = post(t, s, "/sts/", "sts", url.Values{"Action": {"GetCallerIdentity"}, "Version": {"2011-06-15"}}, true)
	if doc = parseXML(t, r.body); r.status != 500 || doc.text("Error", "Type") != "Receiver" || doc.text("Error", "Code") != "InternalFailure" {
		t.Errorf("injected = %d %s", r.status, r.body)
	}
}

// A GET with the parameters in the query string, as the query protocols
// also allow, signed by the SDK's signer: checks the canonical query
// string, including characters that need escaping.
func TestSignedGETWithQueryString(t *testing.T) {
	s, _ := start(t)
	s.AddInstance(Instance{Tags: map[string]string{"Name": "a b/c+d*e"}})
	q := url.Values{
		"Action": {"DescribeInstances"}, "Version": {"2016-11-15"},
		"Filter.1.Name": {"tag:Name"}, "Filter.1.Value.1": {"a b/c+d*e"},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.EC2URL()+"?"+q.Encode(), nil)
	if err != nil {
		t.Fatal(err)
	}
	const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	creds := awssdk.Credentials{AccessKeyID: testAccessKey, SecretAccessKey: testSecretKey}
	if err := v4.NewSigner().SignHTTP(ctx, creds, req, emptySHA256, "ec2", s.Region(), time.Now()); err != nil {
		t.Fatal(err)
	}
	r := do(t, req)
	doc := parseXML(t, r.body)
	if r.status != 200 || doc.text("reservationSet", "item", "instancesSet", "item", "tagSet", "item", "value") != "a b/c+d*e" {
		t.Errorf("%d %s", r.status, r.body)
	}
}

// Large answers wait a moment so the SDK can finish writing the request
// before it closes the request body (see SetLargeResponseDelay); without
// the wait a few percent of these calls fail with "use of closed network
// connection" under the race detector.
func TestLargeResponsesSurviveTheSDKBodyRace(t *testing.T) {
	s, c := start(t)
	for range 10 {
		s.AddInstance(Instance{})
	}
	for k := range 40 {
		if _, err := c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{}); err != nil {
			t.Fatalf("call %d: %v", k, err)
		}
	}
}
