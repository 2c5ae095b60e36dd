package aws

import (
	"net/http"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// With AWS's buckets, a burst of EC2 describes drains only that API's
// bucket: other describes, EC2 writes, ELBv2 and STS still answer.
func TestThrottlingBucketsPerServiceAndAction(t *testing.T) {
	s, c := start(t)
	vpc, _ := network(t, s, "throttle")
	s.Faults().SetFamilies(Throttling)

	var throttledAt int
	for k := 1; k <= 150 && throttledAt == 0; k++ {
		if _, err := c.ec2.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{}); err != nil {
			apiErr(t, err, "RequestLimitExceeded", http.StatusServiceUnavailable)
			throttledAt = k
		}
	}
	// 100 tokens, plus what refilled at 20/s while the loop ran.
	if throttledAt <= 100 {
		t.Fatalf("DescribeVpcs throttled at call %d, want after its bucket of 100", throttledAt)
	}
	if _, err := c.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{}); err != nil {
		t.Fatalf("DescribeSubnets shares DescribeVpcs' bucket: %v", err)
	}
	if _, err := c.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{vpc.ID}, Tags: []ec2types.Tag{{Key: awssdk.String("k"), Value: awssdk.String("v")}}}); err != nil {
		t.Fatalf("a mutation throttled by a describe burst: %v", err)
	}
	if _, err := c.elb.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{}); err != nil {
		t.Fatalf("ELBv2 throttled by EC2's bucket: %v", err)
	}
	if _, err := c.sts.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}); err != nil {
		t.Fatalf("STS throttled by EC2's bucket: %v", err)
	}

	// ELBv2's describes share one bucket of 40.
	throttledAt = 0
	for k := 1; k <= 80 && throttledAt == 0; k++ {
		var err error
		if k%2 == 0 {
			_, err = c.elb.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{})
		} else {
			_, err = c.elb.DescribeLoadBalancers(ctx, &elbv2.DescribeLoadBalancersInput{})
		}
		if err != nil {
			apiErr(t, err, "Throttling", http.StatusBadRequest)
			throttledAt = k
		}
	}
	if throttledAt <= 39 || throttledAt > 70 {
		t.Fatalf("ELBv2 describes throttled at call %d, want just after their shared bucket of 40", throttledAt)
	}
}
