package aws

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	clb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
)

const (
	testAccessKey = "AKIAIOSFODNN7EXAMPLE"
	testSecretKey = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
)

var ctx = context.Background()

// clients are real, unmodified SDK clients pointed at the fake.
type clients struct {
	ec2 *ec2.Client
	clb *clb.Client // Classic ELB
	elb *elbv2.Client
	sts *sts.Client
}

// start runs a fake for the test and returns it with clients signing with
// the test key, without retries so every fault is visible.
func start(t *testing.T) (*Server, clients) {
	t.Helper()
	s := New(testAccessKey, testSecretKey)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, newClients(t, s, loadConfig(t, DefaultRegion, credentials.NewStaticCredentialsProvider(testAccessKey, testSecretKey, "")))
}

// loadConfig builds a config the way a driver does, with static
// credentials and a region, and no retries.
func loadConfig(t *testing.T, region string, creds awssdk.CredentialsProvider, opts ...func(*config.LoadOptions) error) awssdk.Config {
	t.Helper()
	base := []func(*config.LoadOptions) error{
		config.WithRegion(region),
		config.WithCredentialsProvider(creds),
		config.WithSharedConfigFiles([]string{}),
		config.WithSharedCredentialsFiles([]string{}),
		config.WithRetryer(func() awssdk.Retryer { return awssdk.NopRetryer{} }),
	}
	cfg, err := config.LoadDefaultConfig(ctx, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func newClients(t *testing.T, s *Server, cfg awssdk.Config) clients {
	t.Helper()
	return clients{
		ec2: ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = awssdk.String(s.EC2URL()) }),
		clb: clb.NewFromConfig(cfg, func(o *clb.Options) { o.BaseEndpoint = awssdk.String(s.ELBURL()) }),
		elb: elbv2.NewFromConfig(cfg, func(o *elbv2.Options) { o.BaseEndpoint = awssdk.String(s.ELBv2URL()) }),
		sts: sts.NewFromConfig(cfg, func(o *sts.Options) { o.BaseEndpoint = awssdk.String(s.STSURL()) }),
	}
}

// clientsWith returns clients signing with other static credentials.
func clientsWith(t *testing.T, s *Server, region, key, secret, token string) clients {
	t.Helper()
	return newClients(t, s, loadConfig(t, region, credentials.NewStaticCredentialsProvider(key, secret, token)))
}

// apiErr asserts err is an API error with the code and HTTP status.
func apiErr(t *testing.T, err error, code string, status int) smithy.APIError {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s (%d)", code, status)
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("error = %v (%T), want an API error %s", err, err, code)
	}
	if ae.ErrorCode() != code {
		t.Fatalf("code = %q, want %q (%v)", ae.ErrorCode(), code, err)
	}
	var st interface{ HTTPStatusCode() int }
	if !errors.As(err, &st) {
		t.Fatalf("error %v carries no HTTP status", err)
	}
	if st.HTTPStatusCode() != status {
		t.Fatalf("status = %d, want %d (%v)", st.HTTPStatusCode(), status, err)
	}
	return ae
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// rawResponse is a response with its body read.
type rawResponse struct {
	status int
	header http.Header
	body   []byte
}

// post sends a form-encoded query request to path, signed for service
// with the test credentials unless unsigned.
func post(t *testing.T, s *Server, path, service string, form url.Values, signed bool) rawResponse {
	t.Helper()
	body := form.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	if signed {
		sum := sha256.Sum256([]byte(body))
		creds := awssdk.Credentials{AccessKeyID: testAccessKey, SecretAccessKey: testSecretKey}
		if err := v4.NewSigner().SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), service, s.Region(), time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) rawResponse {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return rawResponse{status: resp.StatusCode, header: resp.Header, body: b}
}

// node is a generic XML tree, to check wire shapes independently of any
// client's decoding.
type node struct {
	XMLName  xml.Name
	Attrs    []xml.Attr `xml:",any,attr"`
	Text     string     `xml:",chardata"`
	Children []node     `xml:",any"`
}

func parseXML(t *testing.T, b []byte) node {
	t.Helper()
	var n node
	if err := xml.Unmarshal(b, &n); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
	return n
}

// child follows a path of element names.
func (n node) child(path ...string) (node, bool) {
	cur := n
	for _, p := range path {
		found := false
		for _, c := range cur.Children {
			if c.XMLName.Local == p {
				cur, found = c, true
				break
			}
		}
		if !found {
			return node{}, false
		}
	}
	return cur, true
}

func (n node) text(path ...string) string {
	c, _ := n.child(path...)
	return strings.TrimSpace(c.Text)
}

// network builds a VPC with two tagged subnets in two zones and returns
// them.
func network(t *testing.T, s *Server, cluster string) (VPC, []Subnet) {
	t.Helper()
	vpc := s.AddVPC(VPC{CIDRBlock: "10.0.0.0/16", Tags: map[string]string{"Name": cluster}})
	zones := s.AvailabilityZones()
	var subs []Subnet
	for k := range 2 {
		subs = append(subs, s.AddSubnet(Subnet{
			VPCID: vpc.ID, AvailabilityZone: zones[k].Name,
			Tags: map[string]string{"kubernetes.io/cluster/" + cluster: "owned", "kubernetes.io/role/elb": "1"},
		}))
	}
	return vpc, subs
}
