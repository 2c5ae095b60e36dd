package aws

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials/ec2rolecreds"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

func metadata(t *testing.T, c *imds.Client, path string) string {
	t.Helper()
	out, err := c.GetMetadata(ctx, &imds.GetMetadataInput{Path: path})
	if err != nil {
		t.Fatalf("GetMetadata(%s): %v", path, err)
	}
	defer out.Content.Close()
	b, err := io.ReadAll(out.Content)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestIMDS(t *testing.T) {
	s, _ := start(t)
	vpc, subs := network(t, s, "c1")
	inst := s.AddInstance(Instance{SubnetID: subs[1].ID, InstanceType: "c6i.xlarge"})
	if err := s.SetIMDSInstance(inst.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.SetIMDSInstance("i-0123456789abcdef0"); err == nil {
		t.Error("unknown instance accepted")
	}
	c := imds.New(imds.Options{Endpoint: s.IMDSURL()})

	region := must[*imds.GetRegionOutput](t)(c.GetRegion(ctx, &imds.GetRegionInput{}))
	if region.Region != "eu-west-1" {
		t.Errorf("region = %s", region.Region)
	}
	for path, want := range map[string]string{
		"placement/region":            "eu-west-1",
		"placement/availability-zone": subs[1].AvailabilityZone,
		"instance-id":                 inst.ID,
		"instance-type":               "c6i.xlarge",
		"local-ipv4":                  inst.PrivateIP,
		"local-hostname":              inst.PrivateDNSName,
		"mac":                         inst.MACAddress,
		"network/interfaces/macs/" + inst.MACAddress + "/vpc-id":              vpc.ID,
		"network/interfaces/macs/" + inst.MACAddress + "/subnet-id":           subs[1].ID,
		"network/interfaces/macs/" + inst.MACAddress + "/vpc-ipv4-cidr-block": "10.0.0.0/16",
	} {
		if got := metadata(t, c, path); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	doc := must[*imds.GetInstanceIdentityDocumentOutput](t)(c.GetInstanceIdentityDocument(ctx, &imds.GetInstanceIdentityDocumentInput{}))
	if doc.InstanceID != inst.ID || doc.Region != "eu-west-1" || doc.AccountID != s.AccountID() || doc.PrivateIP != inst.PrivateIP || doc.AvailabilityZone != subs[1].AvailabilityZone {
		t.Errorf("identity document = %+v", doc.InstanceIdentityDocument)
	}
	// The private subnet gives no public address.
	if _, err := c.GetMetadata(ctx, &imds.GetMetadataInput{Path: "public-ipv4"}); err == nil {
		t.Error("public-ipv4 served for an instance without one")
	}
	if n := s.Faults().CallCount("imds GET /latest/meta-data/network/interfaces/macs/{mac}/vpc-id"); n != 1 {
		t.Errorf("counted by pattern: %d (%v)", n, s.Faults().Endpoints())
	}
	if s.Faults().CallCount("imds PUT /latest/api/token") < 1 {
		t.Error("no token was fetched")
	}
}

func TestIMDSRoleCredentials(t *testing.T) {
	s, _ := start(t)
	inst := s.AddInstance(Instance{})
	if err := s.SetIMDSInstance(inst.ID); err != nil {
		t.Fatal(err)
	}
	c := imds.New(imds.Options{Endpoint: s.IMDSURL()})
	if _, err := c.GetIAMInfo(ctx, &imds.GetIAMInfoInput{}); err == nil {
		t.Error("IAM info served without a role")
	}
	s.SetIMDSRole("node-role")
	info := must[*imds.GetIAMInfoOutput](t)(c.GetIAMInfo(ctx, &imds.GetIAMInfoInput{}))
	if info.InstanceProfileArn != "arn:aws:iam::123456789012:instance-profile/node-role" {
		t.Errorf("IAM info = %+v", info.IAMInfo)
	}
	if got := metadata(t, c, "iam/security-credentials/"); got != "node-role" {
		t.Errorf("roles = %q", got)
	}

	provider := ec2rolecreds.New(func(o *ec2rolecreds.Options) { o.Client = c })
	cl := newClients(t, s, loadConfig(t, DefaultRegion, awssdk.NewCredentialsCache(provider)))
	id := must[*sts.GetCallerIdentityOutput](t)(cl.sts.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}))
	if *id.Arn != "arn:aws:sts::123456789012:assumed-role/node-role/"+inst.ID {
		t.Errorf("identity = %s", *id.Arn)
	}
	if e, l, _ := probe(cl); e != nil || l != nil {
		t.Fatalf("IMDS credentials refused: %v / %v", e, l)
	}
	first := s.IMDSCredentials()
	creds := must[awssdk.Credentials](t)(provider.Retrieve(ctx))
	// The SDK caps IMDS credentials at an hour, whatever IMDS says.
	if creds.AccessKeyID != first || !creds.CanExpire || time.Until(creds.Expires) < 50*time.Minute {
		t.Errorf("credentials = %s expiring %v", creds.AccessKeyID, creds.Expires)
	}
	// Expired credentials are replaced on the next fetch.
	s.ExpireSessions()
	fresh := must[awssdk.Credentials](t)(provider.Retrieve(ctx))
	if fresh.AccessKeyID == first {
		t.Error("IMDS handed out the expired credentials again")
	}
}

func TestIMDSv2Enforcement(t *testing.T) {
	s, _ := start(t)
	inst := s.AddInstance(Instance{})
	if err := s.SetIMDSInstance(inst.ID); err != nil {
		t.Fatal(err)
	}
	get := func(token string) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.IMDSURL()+"/latest/meta-data/instance-id", nil)
		if token != "" {
			req.Header.Set("X-aws-ec2-metadata-token", token)
		}
		return do(t, req).status
	}
	if st := get(""); st != http.StatusUnauthorized {
		t.Errorf("without a token: %d", st)
	}
	if st := get("made-up"); st != http.StatusUnauthorized {
		t.Errorf("with a made-up token: %d", st)
	}
	put := func(ttl string) rawResponse {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, s.IMDSURL()+"/latest/api/token", nil)
		if ttl != "" {
			req.Header.Set("X-aws-ec2-metadata-token-ttl-seconds", ttl)
		}
		return do(t, req)
	}
	for _, bad := range []string{"", "0", "21601", "x"} {
		if r := put(bad); r.status != http.StatusBadRequest {
			t.Errorf("TTL %q: %d", bad, r.status)
		}
	}
	r := put("60")
	if r.status != 200 || r.header.Get("X-Aws-Ec2-Metadata-Token-Ttl-Seconds") != "60" {
		t.Fatalf("token: %d %v", r.status, r.header)
	}
	if st := get(string(r.body)); st != 200 {
		t.Errorf("with the token: %d", st)
	}
	clock := time.Now().Add(61 * time.Second)
	s.SetClock(func() time.Time { return clock })
	if st := get(string(r.body)); st != http.StatusUnauthorized {
		t.Errorf("with an expired token: %d", st)
	}
	s.SetIMDSTokenRequired(false)
	if st := get(""); st != 200 {
		t.Errorf("IMDSv1 allowed: %d", st)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.IMDSURL()+"/latest/meta-data/nothing-here", nil)
	nf := do(t, req)
	if nf.status != 404 || !strings.Contains(string(nf.body), "404 - Not Found") {
		t.Errorf("unknown path: %d %s", nf.status, nf.body)
	}
}

// TestIMDSIdentityDocument checks the document byte by byte against the
// shape AWS serves (instance-identity-documents.html), and the paths the
// upstream AWS cloud-controller-manager reads at start: the IMDSv2 token,
// the document, instance-id, and the VPC of the first interface.
func TestIMDSIdentityDocument(t *testing.T) {
	s, _ := start(t)
	_, subs := network(t, s, "c1")
	inst := s.AddInstance(Instance{SubnetID: subs[0].ID, InstanceType: "m7g.large"})
	if err := s.SetIMDSInstance(inst.ID); err != nil {
		t.Fatal(err)
	}
	tokReq := must[*http.Request](t)(http.NewRequestWithContext(ctx, http.MethodPut, s.IMDSURL()+"/latest/api/token", nil))
	tokReq.Header.Set("X-aws-ec2-metadata-token-ttl-seconds", "60")
	tok := do(t, tokReq)
	if tok.status != http.StatusOK || len(tok.body) == 0 || tok.header.Get("X-Aws-Ec2-Metadata-Token-Ttl-Seconds") != "60" {
		t.Fatalf("token: %d %q %v", tok.status, tok.body, tok.header)
	}
	get := func(path string) rawResponse {
		req := must[*http.Request](t)(http.NewRequestWithContext(ctx, http.MethodGet, s.IMDSURL()+path, nil))
		req.Header.Set("X-aws-ec2-metadata-token", string(tok.body))
		return do(t, req)
	}
	doc := get("/latest/dynamic/instance-identity/document")
	var fields map[string]any
	if err := json.Unmarshal(doc.body, &fields); err != nil || doc.status != http.StatusOK {
		t.Fatalf("document: %d %s %v", doc.status, doc.body, err)
	}
	want := map[string]any{
		"accountId": s.AccountID(), "architecture": "arm64", "availabilityZone": inst.AvailabilityZone,
		"billingProducts": nil, "devpayProductCodes": nil, "marketplaceProductCodes": nil,
		"imageId": inst.ImageID, "instanceId": inst.ID, "instanceType": "m7g.large", "kernelId": nil,
		"pendingTime": inst.LaunchTime.UTC().Format(time.RFC3339), "privateIp": inst.PrivateIP, "ramdiskId": nil,
		"region": DefaultRegion, "version": "2017-09-30",
	}
	if !reflect.DeepEqual(fields, want) {
		t.Errorf("document = %v\nwant       %v", fields, want)
	}
	// The SDK's typed reader agrees (aws-sdk-go-v2 imds, as upstream uses).
	c := imds.New(imds.Options{Endpoint: s.IMDSURL()})
	typed := must[*imds.GetInstanceIdentityDocumentOutput](t)(c.GetInstanceIdentityDocument(ctx, &imds.GetInstanceIdentityDocumentInput{}))
	if typed.Architecture != "arm64" || typed.Version != "2017-09-30" || typed.PendingTime.IsZero() || typed.InstanceType != "m7g.large" {
		t.Errorf("typed document = %+v", typed.InstanceIdentityDocument)
	}
	// upstream findVPCID: list the MACs (each ending in "/"), then read
	// macs/<mac>/vpc-id from each.
	macs := metadata(t, c, "network/interfaces/macs/")
	if macs != inst.MACAddress+"/" {
		t.Fatalf("macs = %q", macs)
	}
	if got := metadata(t, c, "network/interfaces/macs/"+macs+"vpc-id"); got != inst.VPCID {
		t.Errorf("vpc-id = %q, want %q", got, inst.VPCID)
	}
	for path, want := range map[string]string{
		"instance-id": inst.ID, "placement/availability-zone": inst.AvailabilityZone, "mac": inst.MACAddress, "local-ipv4": inst.PrivateIP,
	} {
		if got := metadata(t, c, path); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	// The x86 default; and DescribeInstances says the same architecture.
	x86 := s.AddInstance(Instance{InstanceType: "g5.xlarge"})
	cl := clientsWith(t, s, DefaultRegion, testAccessKey, testSecretKey, "")
	out := must[*ec2.DescribeInstancesOutput](t)(cl.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{inst.ID, x86.ID}}))
	arch := map[string]string{}
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			arch[*i.InstanceId] = string(i.Architecture)
		}
	}
	if arch[inst.ID] != "arm64" || arch[x86.ID] != "x86_64" {
		t.Errorf("architectures = %v", arch)
	}
}
