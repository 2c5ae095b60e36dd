package aws

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

// throttle reports whether the SDK's default retry logic classifies err
// as throttling.
func throttle(err error) bool {
	return retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) == awssdk.TrueTernary
}

func TestThrottlingAsEachServiceDoesIt(t *testing.T) {
	s, c := start(t)
	s.Faults().SetRateLimit(0.001, 1)
	// The first request takes the only token; the rest are throttled.
	if e, l, st := probe(c); e != nil || l == nil || st == nil {
		t.Fatalf("first round: %v / %v / %v", e, l, st)
	}
	e, l, st := probe(c)
	apiErr(t, e, "RequestLimitExceeded", http.StatusServiceUnavailable)
	apiErr(t, l, "Throttling", http.StatusBadRequest)
	apiErr(t, st, "Throttling", http.StatusBadRequest)
	for _, err := range []error{e, l, st} {
		if !throttle(err) {
			t.Errorf("SDK does not classify %v as throttling", err)
		}
	}
	f := s.Faults()
	if f.Throttled() != 5 || f.Responses("ec2 DescribeInstances")[503] != 1 || f.Responses("elbv2 DescribeLoadBalancers")[400] != 2 {
		t.Errorf("throttled = %d, responses = %v / %v", f.Throttled(), f.Responses("ec2 DescribeInstances"), f.Responses("elbv2 DescribeLoadBalancers"))
	}

	// A rule with status 429 means throttling too.
	s.Faults().SetRateLimit(0, 0)
	s.Faults().FailNext("ec2 DescribeInstances", 1, 429)
	_, err := c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{})
	apiErr(t, err, "RequestLimitExceeded", http.StatusServiceUnavailable)
}

func TestInjectedServerErrors(t *testing.T) {
	s, c := start(t)
	f := s.Faults()
	f.FailNext("ec2 DescribeInstances", 1, 500)
	f.FailNext("elbv2 DescribeLoadBalancers", 1, 503)
	f.FailNext("sts GetCallerIdentity", 1, 500)
	e, l, st := probe(c)
	apiErr(t, e, "InternalError", http.StatusInternalServerError)
	apiErr(t, l, "ServiceUnavailable", http.StatusServiceUnavailable)
	apiErr(t, st, "InternalFailure", http.StatusInternalServerError)
	if e, l, st := probe(c); e != nil || l != nil || st != nil {
		t.Fatalf("rules should have expired: %v / %v / %v", e, l, st)
	}
	// Injected failures win over bad credentials: trouble in front of the
	// API.
	f.FailNext("ec2 DescribeInstances", 1, 503)
	e, _, _ = probe(clientsWith(t, s, DefaultRegion, testAccessKey, "wrong", ""))
	apiErr(t, e, "Unavailable", http.StatusServiceUnavailable)
}

func TestRetriesThroughThrottling(t *testing.T) {
	s, _ := start(t)
	cfg := loadConfig(t, DefaultRegion, credentials.NewStaticCredentialsProvider(testAccessKey, testSecretKey, ""),
		config.WithRetryer(func() awssdk.Retryer {
			return retry.AddWithMaxBackoffDelay(retry.NewStandard(), time.Millisecond)
		}))
	c := newClients(t, s, cfg)
	s.Faults().FailNext("ec2 DescribeInstances", 2, 429)
	if _, err := c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{}); err != nil {
		t.Fatalf("the SDK did not retry through throttling: %v", err)
	}
	if n := s.Faults().CallCount("ec2 DescribeInstances"); n != 3 {
		t.Errorf("calls = %d, want 3", n)
	}
}

func TestAfterCommitCreateLoadBalancer(t *testing.T) {
	s, c := start(t)
	_, subs := network(t, s, "c1")
	s.Faults().AddRule(faults.Rule{Match: "elbv2 CreateLoadBalancer", Status: 500, AfterCommit: true, Remaining: 1})
	_, err := createNLB(c, "committed", subs)
	apiErr(t, err, "InternalFailure", http.StatusInternalServerError)
	lbs := s.LoadBalancers()
	if len(lbs) != 1 || lbs[0].Name != "committed" {
		t.Fatalf("the create did not happen: %+v", lbs)
	}
	// A client that retries the same create gets the same load balancer.
	out := must[*elbv2.CreateLoadBalancerOutput](t)(createNLB(c, "committed", subs))
	if *out.LoadBalancers[0].LoadBalancerArn != lbs[0].ARN {
		t.Errorf("retry made %s", *out.LoadBalancers[0].LoadBalancerArn)
	}
	if st := s.Stats().LoadBalancers; st.Created != 1 || st.Live != 1 {
		t.Errorf("stats = %+v", st)
	}
	if got := s.Faults().Responses("elbv2 CreateLoadBalancer"); got[500] != 1 || got[200] != 1 {
		t.Errorf("responses = %v", got)
	}
}

func TestTimeoutRuleAndCounters(t *testing.T) {
	s, c := start(t)
	f := s.Faults()
	f.AddRule(faults.Rule{Match: "sts GetCallerIdentity", Timeout: true, Remaining: 1})
	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err := c.sts.GetCallerIdentity(tctx, &sts.GetCallerIdentityInput{})
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want a deadline", err)
	}
	s.AddInstance(Instance{})
	for range 3 {
		must[*ec2.DescribeInstancesOutput](t)(c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{}))
	}
	_, _ = c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{"i-0123456789abcdef0"}})
	if f.CallCount("ec2 DescribeInstances") != 4 || f.Responses("ec2 DescribeInstances")[200] != 3 || f.Responses("ec2 DescribeInstances")[400] != 1 {
		t.Errorf("counters = %d %v", f.CallCount("ec2 DescribeInstances"), f.Responses("ec2 DescribeInstances"))
	}
	waitFor(t, func() bool { return f.Responses("sts GetCallerIdentity")[faults.NoResponse] == 1 })

	// A hung request does not keep Close waiting.
	f.AddRule(faults.Rule{Match: "ec2 *", Timeout: true})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{})
	}()
	waitFor(t, func() bool { return f.CallCount("ec2 DescribeInstances") == 5 })
	s.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close left the request hanging")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in time")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestUnknownServiceIsCounted(t *testing.T) {
	s, _ := start(t)
	r := post(t, s, "/", "ec2", url.Values{"Action": {"Foo"}, "Version": {"1999-01-01"}}, true)
	if r.status != 400 || s.Faults().CallCount("unknown Foo") != 1 {
		t.Errorf("unknown service: %d %s, endpoints %v", r.status, r.body, s.Faults().Endpoints())
	}
}
