package aws_test

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/polyccm/polyccm/config"
	"github.com/polyccm/polyccm/config/secret"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/instances"
	awsccm "github.com/polyccm/polyccm/drivers/aws"
	fakeaws "github.com/polyccm/polyccm/test/fakecloud/aws"
)

// problems flattens Validate's joined error into messages by key.
func problems(t *testing.T, err error) map[string]string {
	t.Helper()
	out := map[string]string{}
	if err == nil {
		return out
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var p config.Problem
		if !errors.As(e, &p) {
			t.Fatalf("Validate returned %T (%v), want config.Problem", e, e)
		}
		out[p.Key] = p.Msg
	}
	return out
}

func TestConfigValidate(t *testing.T) {
	key := secret.Secret{File: "/run/secrets/aws-key-id"}
	sec := secret.Secret{File: "/run/secrets/aws-secret"}
	const role = "arn:aws:iam::123456789012:role/polyccm"
	cases := []struct {
		name string
		cfg  awsccm.Config
		bad  map[string]string // key -> message fragment
	}{
		{"empty: everything from the SDK chain and IMDS", awsccm.Config{}, nil},
		{"everything set", awsccm.Config{
			Region: "eu-west-1", Profile: "prod", AccessKeyID: key, SecretAccessKey: sec,
			RoleARN: role, ExternalID: "ext-1", VPCID: "vpc-0123456789abcdef0",
			Endpoints: awsccm.Endpoints{EC2: "https://ec2.eu-west-1.amazonaws.com", ELBv2: "http://127.0.0.1:8080/elbv2/", STS: "https://sts.eu-west-1.amazonaws.com", IMDS: "http://169.254.169.254"},
		}, nil},
		{"GovCloud region and partition", awsccm.Config{Region: "us-gov-west-1", RoleARN: "arn:aws-us-gov:iam::123456789012:role/x"}, nil},
		{"short VPC ID", awsccm.Config{VPCID: "vpc-0123abcd"}, nil},
		{"region not a region", awsccm.Config{Region: "Ireland"}, map[string]string{"region": `"Ireland" is not an AWS region`}},
		{"region is a zone", awsccm.Config{Region: "eu-west-1a"}, map[string]string{"region": "not an AWS region"}},
		{"key ID without secret", awsccm.Config{AccessKeyID: key}, map[string]string{"accessKeyID": "together"}},
		{"secret without key ID", awsccm.Config{SecretAccessKey: sec}, map[string]string{"accessKeyID": "together"}},
		{"role not an ARN", awsccm.Config{RoleARN: "polyccm"}, map[string]string{"roleARN": "not an IAM role ARN"}},
		{"role ARN of a user", awsccm.Config{RoleARN: "arn:aws:iam::123456789012:user/polyccm"}, map[string]string{"roleARN": "not an IAM role ARN"}},
		{"external ID without role", awsccm.Config{ExternalID: "ext-1"}, map[string]string{"externalID": "only applies with roleARN"}},
		{"VPC ID malformed", awsccm.Config{VPCID: "vpc-XYZ"}, map[string]string{"vpcID": "not a VPC ID"}},
		{"VPC ID is a subnet", awsccm.Config{VPCID: "subnet-0123456789abcdef0"}, map[string]string{"vpcID": "not a VPC ID"}},
		{"ec2 endpoint without scheme", awsccm.Config{Endpoints: awsccm.Endpoints{EC2: "ec2.eu-west-1.amazonaws.com"}}, map[string]string{"endpoints.ec2": "absolute http(s) URL"}},
		{"elbv2 endpoint other scheme", awsccm.Config{Endpoints: awsccm.Endpoints{ELBv2: "ftp://elb.example"}}, map[string]string{"endpoints.elbv2": "absolute http(s) URL"}},
		{"sts endpoint without host", awsccm.Config{Endpoints: awsccm.Endpoints{STS: "https:///sts"}}, map[string]string{"endpoints.sts": "absolute http(s) URL"}},
		{"imds endpoint unparseable", awsccm.Config{Endpoints: awsccm.Endpoints{IMDS: "http://[::1"}}, map[string]string{"endpoints.imds": "absolute http(s) URL"}},
		{"dual-stack, IPv6 first", awsccm.Config{NodeIPFamilies: []string{"ipv6", "ipv4"}}, nil},
		{"unknown IP family", awsccm.Config{NodeIPFamilies: []string{"ipv4", "IPv6"}}, map[string]string{"nodeIPFamilies[1]": `"IPv6" is not an address family`}},
		{"IP family twice", awsccm.Config{NodeIPFamilies: []string{"ipv4", "ipv4"}}, map[string]string{"nodeIPFamilies[1]": "listed twice"}},
		{"everything wrong at once", awsccm.Config{
			Region: "x", AccessKeyID: key, RoleARN: "y", VPCID: "z",
			Endpoints: awsccm.Endpoints{EC2: "a", ELBv2: "b", STS: "c", IMDS: "d"},
		}, map[string]string{
			"region": "region", "accessKeyID": "together", "roleARN": "ARN", "vpcID": "VPC",
			"endpoints.ec2": "URL", "endpoints.elbv2": "URL", "endpoints.sts": "URL", "endpoints.imds": "URL",
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := problems(t, c.cfg.Validate())
			var gotKeys, wantKeys []string
			for k := range got {
				gotKeys = append(gotKeys, k)
			}
			for k := range c.bad {
				wantKeys = append(wantKeys, k)
			}
			sort.Strings(gotKeys)
			sort.Strings(wantKeys)
			if strings.Join(gotKeys, ",") != strings.Join(wantKeys, ",") {
				t.Fatalf("problems at %q, want %q: %v", gotKeys, wantKeys, got)
			}
			for k, frag := range c.bad {
				if !strings.Contains(got[k], frag) {
					t.Errorf("%s: %q does not contain %q", k, got[k], frag)
				}
			}
		})
	}
}

func TestRegistration(t *testing.T) {
	isolate(t)
	d, ok := driver.Default().Lookup(awsccm.Name)
	if !ok {
		t.Fatal("aws is not registered")
	}
	if _, ok := d.NewConfig().(*awsccm.Config); !ok {
		t.Fatalf("NewConfig returns %T", d.NewConfig())
	}
	if !d.Has(driver.Instances) || !d.Has(driver.LoadBalancers) || !d.Has(driver.Routes) || !d.Has(driver.Volumes) {
		t.Errorf("capabilities = %v, want instances, load balancers, routes and volumes", d.Capabilities)
	}
	// New calls nobody: no region, no credentials, no IMDS needed yet.
	cloud, err := d.New(&awsccm.Config{}, driver.Deps{ClusterName: cluster})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, ok := cloud.(driver.LoadBalancerCloud); !ok {
		t.Error("the cloud has no load balancers")
	}
	if _, ok := cloud.(driver.RouteCloud); !ok {
		t.Error("the cloud has no routes")
	}
	if _, ok := cloud.(driver.VolumeCloud); !ok {
		t.Error("the cloud has no volumes")
	}
	if _, err := d.New(struct{}{}, driver.Deps{}); err == nil {
		t.Error("New accepted a config of the wrong type")
	}
	if !strings.Contains(d.CredentialsHint, "drivers.aws.accessKeyID") || !strings.Contains(d.CredentialsHint, "roleARN") {
		t.Errorf("CredentialsHint %q does not name the keys", d.CredentialsHint)
	}
}

// apiErr is an AWS error answer as the SDK returns it.
func apiErr(status int, code string) error {
	return &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
		Err:      &smithy.GenericAPIError{Code: code, Message: "m"},
	}}
}

func TestClassify(t *testing.T) {
	d, _ := driver.Default().Lookup(awsccm.Name)
	bare404 := &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 404}}, Err: errors.New("not found"),
	}}
	bare503 := &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: 503}}, Err: errors.New("unavailable"),
	}}
	cases := []struct {
		err  error
		want cloudapi.Kind
	}{
		// EC2 throttles with 503: the code decides, never the status.
		{apiErr(503, "RequestLimitExceeded"), cloudapi.KindThrottled},
		{apiErr(400, "Throttling"), cloudapi.KindThrottled},
		{apiErr(400, "InvalidInstanceID.NotFound"), cloudapi.KindNotFound},
		{apiErr(400, "InvalidGroup.NotFound"), cloudapi.KindNotFound},
		{apiErr(400, "LoadBalancerNotFound"), cloudapi.KindNotFound},
		{apiErr(400, "TargetGroupNotFound"), cloudapi.KindNotFound},
		{apiErr(401, "AuthFailure"), cloudapi.KindUnauthorized},
		{apiErr(403, "InvalidClientTokenId"), cloudapi.KindUnauthorized},
		{apiErr(403, "SignatureDoesNotMatch"), cloudapi.KindUnauthorized},
		{apiErr(403, "AccessDenied"), cloudapi.KindUnauthorized},
		{apiErr(403, "UnauthorizedOperation"), cloudapi.KindUnauthorized},
		{apiErr(400, "ExpiredToken"), cloudapi.KindUnauthorized},
		{apiErr(400, "RouteAlreadyExists"), cloudapi.KindExists},
		{apiErr(400, "InvalidPermission.Duplicate"), cloudapi.KindExists},
		{apiErr(400, "DuplicateLoadBalancerName"), cloudapi.KindExists},
		{apiErr(400, "DependencyViolation"), cloudapi.KindConflict},
		{apiErr(400, "ResourceInUse"), cloudapi.KindConflict},
		{apiErr(500, "InternalError"), cloudapi.KindUnavailable},
		{apiErr(503, "Unavailable"), cloudapi.KindUnavailable},
		{apiErr(400, "ValidationError"), cloudapi.KindInvalid},
		{apiErr(400, "InvalidParameterValue"), cloudapi.KindInvalid},
		// A 404 without an AWS code is a wrong endpoint, not a missing
		// resource: nothing may be deleted on it.
		{bare404, cloudapi.KindInvalid},
		{bare503, cloudapi.KindUnavailable},
	}
	for _, c := range cases {
		if got := d.Classify(c.err).Kind; got != c.want {
			t.Errorf("%v: kind %v, want %v", c.err, got, c.want)
		}
	}
}

// Static keys come from {file:} secrets and sign every call.
func TestStaticKeysFromFiles(t *testing.T) {
	e := newEnv(t)
	in := e.instance(zoneA)
	ok, err := e.inst.InstanceExists(ctx(t), node(in, nil))
	if err != nil || !ok {
		t.Fatalf("InstanceExists = %v, %v; want true", ok, err)
	}
	if _, _, err := e.lbs.GetLoadBalancer(ctx(t), cluster, service(nil)); err != nil {
		t.Fatalf("GetLoadBalancer: %v", err)
	}
	if e.api.AuthError() != nil {
		t.Errorf("AuthError = %v", e.api.AuthError())
	}
}

// A rejected key is an auth error on every API, and no error text carries
// a secret.
func TestRejectedKeysAreAuthErrors(t *testing.T) {
	const wrongSecret = "wrongSecret/ThisMustNotLeakIntoErrors+01"
	for _, c := range []struct {
		name, id, secret string
	}{
		{"wrong secret", testKeyID, wrongSecret},
		{"unknown key ID", "AKIAUNKNOWN000000099", wrongSecret},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			in := w.instance(zoneA)
			cfg := w.config()
			cfg.AccessKeyID = secret.Secret{File: w.writeFile("other-id", c.id)}
			cfg.SecretAccessKey = secret.Secret{File: w.writeFile("other-secret", c.secret)}
			e := w.env(cfg)

			_, ierr := e.inst.InstanceExists(ctx(t), node(in, nil))
			_, _, lerr := e.lbs.GetLoadBalancer(ctx(t), cluster, service(nil))
			_, rerr := e.routes.ListRoutes(ctx(t), cluster)
			for what, err := range map[string]error{"instances": ierr, "load balancers": lerr, "routes": rerr} {
				if k := cloudapi.KindOf(err); k != cloudapi.KindUnauthorized {
					t.Errorf("%s: err = %v (kind %v), want %v", what, err, k, cloudapi.KindUnauthorized)
					continue
				}
				if strings.Contains(err.Error(), c.secret) || strings.Contains(err.Error(), testSecret) {
					t.Errorf("%s: the error carries the secret: %v", what, err)
				}
			}
			if e.api.AuthError() == nil {
				t.Error("the cloudapi client does not report the rejected credentials")
			}
			if w.mutating() != 0 {
				t.Errorf("calls that change something were made: %v", w.fake.Faults().Calls())
			}
		})
	}
}

// A key file polyccm cannot read is reported like a rejected key, naming
// the config key.
func TestUnreadableKeyFile(t *testing.T) {
	w := newWorld(t)
	in := w.instance(zoneA)
	cfg := w.config()
	cfg.SecretAccessKey = secret.Secret{File: w.dir + "/missing-secret"}
	e := w.env(cfg)
	_, err := e.inst.InstanceExists(ctx(t), node(in, nil))
	if k := cloudapi.KindOf(err); k != cloudapi.KindUnauthorized {
		t.Fatalf("err = %v (kind %v), want %v", err, k, cloudapi.KindUnauthorized)
	}
	if !strings.Contains(err.Error(), "drivers.aws.secretAccessKey") {
		t.Errorf("error %q does not name drivers.aws.secretAccessKey", err)
	}
	if n := w.fake.Faults().Total(); n != 0 {
		t.Errorf("%d requests reached AWS without credentials", n)
	}
}

const testRole = "arn:aws:iam::123456789012:role/polyccm-unit"

// With roleARN, the keys only assume the role (with the external ID the
// trust policy wants); everything else is signed by the session.
func TestAssumeRole(t *testing.T) {
	w := newWorld(t)
	w.fake.SetRoleExternalID(testRole, "ext-42")
	in := w.instance(zoneA)
	cfg := w.config()
	cfg.RoleARN, cfg.ExternalID = testRole, "ext-42"
	e := w.env(cfg)
	if ok, err := e.inst.InstanceExists(ctx(t), node(in, nil)); err != nil || !ok {
		t.Fatalf("InstanceExists = %v, %v; want true", ok, err)
	}
	if n := w.fake.Faults().CallCount("sts AssumeRole"); n != 1 {
		t.Errorf("AssumeRole called %d times, want 1", n)
	}
	// The long-term key stops working; the session's credentials carry on.
	w.fake.SetCredentials("AKIAROTATED000000001", "rotated/secret+0000000000000000000000000")
	if _, _, err := e.lbs.GetLoadBalancer(ctx(t), cluster, service(nil)); err != nil {
		t.Fatalf("GetLoadBalancer with the session after the key was rotated: %v", err)
	}
	if n := w.fake.Faults().CallCount("sts AssumeRole"); n != 1 {
		t.Errorf("AssumeRole called %d times, want 1 (the session is cached)", n)
	}
}

func TestAssumeRoleWrongExternalID(t *testing.T) {
	w := newWorld(t)
	w.fake.SetRoleExternalID(testRole, "ext-42")
	in := w.instance(zoneA)
	cfg := w.config()
	cfg.RoleARN, cfg.ExternalID = testRole, "ext-41"
	e := w.env(cfg)
	_, err := e.inst.InstanceExists(ctx(t), node(in, nil))
	if k := cloudapi.KindOf(err); k != cloudapi.KindUnauthorized {
		t.Fatalf("err = %v (kind %v), want %v", err, k, cloudapi.KindUnauthorized)
	}
	if strings.Contains(err.Error(), testSecret) {
		t.Errorf("the error carries the secret: %v", err)
	}
	if n := w.calls("ec2 "); n != 0 {
		t.Errorf("%d EC2 calls went out without the role", n)
	}
}

// Without region and vpcID in the config, both come from the instance
// metadata service of the instance polyccm runs on, once.
func TestRegionAndVPCFromIMDS(t *testing.T) {
	w := newWorld(t)
	self := w.instance(zoneB)
	if err := w.fake.SetIMDSInstance(self.ID); err != nil {
		t.Fatal(err)
	}
	cfg := w.config()
	cfg.Region, cfg.VPCID = "", ""
	e := w.env(cfg)

	md, err := e.inst.InstanceMetadata(ctx(t), node(self, nil))
	if err != nil {
		t.Fatalf("InstanceMetadata: %v", err)
	}
	if md.Region != fakeaws.DefaultRegion || md.Zone != zoneB {
		t.Errorf("region %q zone %q, want %s and %s", md.Region, md.Zone, fakeaws.DefaultRegion, zoneB)
	}
	// The VPC decides the subnets: the cluster's, not the default VPC's.
	nodes, _ := e.nodes(1)
	e.ensure(service(nil), nodes)
	lb := w.nlb()
	if lb.VPCID != w.vpc.ID {
		t.Errorf("NLB in %s, want the metadata instance's VPC %s", lb.VPCID, w.vpc.ID)
	}
	if got, want := sortedSubnets(lb), sorted(w.public[zoneA].ID, w.public[zoneB].ID); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("subnets %v, want %v", got, want)
	}
	e.ensure(service(nil), nodes)
	for _, ep := range []string{"imds GET /latest/dynamic/instance-identity/document", "imds GET /latest/meta-data/mac"} {
		if n := w.fake.Faults().CallCount(ep); n != 1 {
			t.Errorf("%s: %d calls, want 1 (remembered)", ep, n)
		}
	}
}

// An assumed role works with the region from IMDS too: STS is asked in
// the cluster's region.
func TestAssumeRoleWithRegionFromIMDS(t *testing.T) {
	w := newWorld(t)
	self := w.instance(zoneA)
	if err := w.fake.SetIMDSInstance(self.ID); err != nil {
		t.Fatal(err)
	}
	cfg := w.config()
	cfg.Region = ""
	cfg.RoleARN = testRole
	e := w.env(cfg)
	if ok, err := e.inst.InstanceExists(ctx(t), node(self, nil)); err != nil || !ok {
		t.Fatalf("InstanceExists = %v, %v; want true", ok, err)
	}
	if n := w.fake.Faults().CallCount("sts AssumeRole"); n != 1 {
		t.Errorf("AssumeRole called %d times, want 1", n)
	}
}

// Session names stay within STS's 64 characters whatever the cluster's
// name.
func TestAssumeRoleLongClusterName(t *testing.T) {
	w := newWorld(t)
	w.clusterName = strings.Repeat("c", 63)
	in := w.instance(zoneA)
	cfg := w.config()
	cfg.RoleARN = testRole
	e := w.env(cfg)
	if ok, err := e.inst.InstanceExists(ctx(t), node(in, nil)); err != nil || !ok {
		t.Fatalf("InstanceExists = %v, %v; want true", ok, err)
	}
}

// Without a region and no metadata service answer, calls fail with an
// error naming drivers.aws.region, and succeed once it answers.
func TestRegionUnknown(t *testing.T) {
	w := newWorld(t)
	self := w.instance(zoneA)
	cfg := w.config()
	cfg.Region = ""
	e := w.env(cfg)
	_, err := e.inst.InstanceExists(ctx(t), node(self, nil))
	if err == nil || !strings.Contains(err.Error(), "drivers.aws.region") {
		t.Fatalf("err = %v, want one naming drivers.aws.region", err)
	}
	if instancesNotFound(err) {
		t.Fatalf("err = %v is a not-found", err)
	}
	if err := w.fake.SetIMDSInstance(self.ID); err != nil {
		t.Fatal(err)
	}
	if ok, err := e.inst.InstanceExists(ctx(t), node(self, nil)); err != nil || !ok {
		t.Fatalf("after IMDS answers: InstanceExists = %v, %v; want true", ok, err)
	}
}

// Without a vpcID and no metadata service answer, load balancers and
// routes fail naming drivers.aws.vpcID, and nothing is made.
func TestVPCUnknown(t *testing.T) {
	w := newWorld(t)
	cfg := w.config()
	cfg.VPCID = ""
	e := w.env(cfg)
	nodes, _ := e.nodes(1)
	_, err := e.lbs.EnsureLoadBalancer(ctx(t), cluster, service(nil), nodes)
	if err == nil || !strings.Contains(err.Error(), "drivers.aws.vpcID") {
		t.Fatalf("EnsureLoadBalancer err = %v, want one naming drivers.aws.vpcID", err)
	}
	if _, err := e.routes.ListRoutes(ctx(t), cluster); err == nil || !strings.Contains(err.Error(), "drivers.aws.vpcID") {
		t.Fatalf("ListRoutes err = %v, want one naming drivers.aws.vpcID", err)
	}
	if w.mutating() != 0 {
		t.Errorf("calls that change something were made: %v", w.fake.Faults().Calls())
	}
}

func instancesNotFound(err error) bool { return instances.IsNotFound(err) }
