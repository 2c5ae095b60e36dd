package aws_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	awsccm "github.com/polyccm/polyccm/drivers/aws"
	fakeaws "github.com/polyccm/polyccm/test/fakecloud/aws"
)

// Access logs on an NLB are its access_logs.s3.* attributes, as the AWS
// CCM sets them; turning them off leaves the bucket as it was (ELBv2
// refuses an empty one).
func TestNLBAccessLogs(t *testing.T) {
	e := newEnv(t)
	nodes, _ := e.nodes(1)
	ann := map[string]string{
		awsccm.AnnAccessLogEnabled: "true", awsccm.AnnAccessLogS3BucketName: "shop-logs", awsccm.AnnAccessLogS3BucketPrefix: "nlb/web",
	}
	e.ensure(service(ann), nodes)
	attrs := e.nlb().Attributes
	if attrs["access_logs.s3.enabled"] != "true" || attrs["access_logs.s3.bucket"] != "shop-logs" || attrs["access_logs.s3.prefix"] != "nlb/web" {
		t.Errorf("attributes with access logs on: %v", attrs)
	}
	ann[awsccm.AnnAccessLogEnabled] = "false"
	e.ensure(service(ann), nodes)
	attrs = e.nlb().Attributes
	if attrs["access_logs.s3.enabled"] != "false" || attrs["access_logs.s3.bucket"] != "shop-logs" {
		t.Errorf("attributes with access logs off: %v", attrs)
	}
	// On without a bucket is refused before any change.
	before := e.fake.Faults().Total()
	if _, err := e.lbs.EnsureLoadBalancer(ctx(t), cluster, service(map[string]string{awsccm.AnnAccessLogEnabled: "true"}), nodes); err == nil {
		t.Error("access logs without a bucket were accepted")
	}
	if n := e.fake.Faults().Total() - before; n != 0 {
		t.Errorf("a refused Service made %d calls", n)
	}
	if n := e.calls("ModifyLoadBalancerAttributes"); n != 2 {
		t.Errorf("%d ModifyLoadBalancerAttributes calls, want 2 (logs on, logs off)", n)
	}
}

// security-groups gives the NLB the Service's own groups and no group of
// polyccm's; a Service that moves to its own groups has polyccm's group
// detached and deleted.
func TestNLBOwnSecurityGroups(t *testing.T) {
	e := newEnv(t)
	nodes, _ := e.nodes(1)
	own := e.fake.AddSecurityGroup(fakeaws.SecurityGroup{Name: "shop-nlb", Description: "the shop's", VPCID: e.vpc.ID})
	before := len(e.fake.SecurityGroups())

	e.ensure(service(map[string]string{awsccm.AnnSecurityGroups: own.ID}), nodes)
	if got := e.nlb().SecurityGroups; !slices.Equal(got, []string{own.ID}) {
		t.Errorf("NLB groups %v, want the Service's %s", got, own.ID)
	}
	if n := len(e.fake.SecurityGroups()); n != before {
		t.Errorf("%d security groups, want %d: polyccm made one besides the Service's", n, before)
	}
	if sg, _ := e.fake.SecurityGroup(own.ID); len(sg.Ingress) != 0 {
		t.Errorf("the Service's group was changed: %+v", sg.Ingress)
	}
}

func TestNLBMovesToOwnSecurityGroups(t *testing.T) {
	e := newEnv(t)
	nodes, _ := e.nodes(1)
	e.ensure(service(nil), nodes)
	managed := e.nlb().SecurityGroups
	if len(managed) != 1 {
		t.Fatalf("NLB groups %v, want polyccm's one", managed)
	}
	own := e.fake.AddSecurityGroup(fakeaws.SecurityGroup{Name: "shop-nlb", Description: "the shop's", VPCID: e.vpc.ID})
	svc := service(map[string]string{awsccm.AnnSecurityGroups: own.ID})
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := e.lbs.EnsureLoadBalancer(ctx(t), cluster, svc, nodes)
		if err == nil {
			break
		}
		var retry interface{ RetryAfter() time.Duration }
		if !errors.As(err, &retry) || time.Now().After(deadline) {
			t.Fatalf("EnsureLoadBalancer: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := e.nlb().SecurityGroups; !slices.Equal(got, []string{own.ID}) {
		t.Errorf("NLB groups %v, want %s", got, own.ID)
	}
	if _, ok := e.fake.SecurityGroup(managed[0]); ok {
		t.Errorf("polyccm's detached group %s was left behind", managed[0])
	}
}

// Every certificate of ssl-cert is on the TLS listener: the first as its
// default, the others beside it; a changed list is followed, and a
// converged listener costs no changing call.
func TestNLBListenerCertificates(t *testing.T) {
	e := newEnv(t)
	nodes, _ := e.nodes(1)
	cert := func(n string) string { return "arn:aws:acm:eu-west-1:123456789012:certificate/" + n }
	check := func(certs ...string) {
		t.Helper()
		svc := service(map[string]string{awsccm.AnnSSLCert: strings.Join(certs, ","), awsccm.AnnSSLPorts: "443"}, tcp("https", 443, 30443))
		e.ensure(svc, nodes)
		ls := e.listeners(e.nlb().ARN)[443]
		if len(ls.Certificates) != 1 || ls.Certificates[0].ARN != certs[0] {
			t.Errorf("default certificate %+v, want %s", ls.Certificates, certs[0])
		}
		want := slices.Clone(certs[1:])
		slices.Sort(want)
		got := slices.Clone(ls.ExtraCertificates)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("other certificates %v, want %v", got, want)
		}
		before := e.mutating()
		e.ensure(svc, nodes)
		if n := e.mutating() - before; n != 0 {
			t.Errorf("a converged listener made %d changing calls", n)
		}
	}
	check(cert("a"), cert("b"), cert("c"))
	check(cert("a"), cert("c"), cert("d"))
	check(cert("d"))
}
