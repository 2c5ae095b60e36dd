package aws

import (
	"net/http"
	"sync"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
)

// A group just created reads as not found for a while, and a deleted
// NLB's interfaces keep its group in use for a while, as on AWS.
func TestEventualConsistencyAndLingeringDependencies(t *testing.T) {
	s, c := start(t)
	vpc, subs := network(t, s, "consistency")
	var mu sync.Mutex
	clock := time.Now()
	s.SetClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return clock })
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	s.SetConsistencyDelay(2 * time.Second)
	s.SetDependencyLinger(time.Minute)

	created := must[*ec2.CreateSecurityGroupOutput](t)(c.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{
		GroupName: awssdk.String("new"), Description: awssdk.String("new"), VpcId: awssdk.String(vpc.ID),
	}))
	id := awssdk.ToString(created.GroupId)
	_, err := c.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{id}})
	apiErr(t, err, "InvalidGroup.NotFound", http.StatusBadRequest)
	_, err = c.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: awssdk.String(id), IpPermissions: []ec2types.IpPermission{{
		IpProtocol: awssdk.String("tcp"), FromPort: awssdk.Int32(80), ToPort: awssdk.Int32(80), IpRanges: []ec2types.IpRange{{CidrIp: awssdk.String("0.0.0.0/0")}},
	}}})
	apiErr(t, err, "InvalidGroup.NotFound", http.StatusBadRequest)
	listed := must[*ec2.DescribeSecurityGroupsOutput](t)(c.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{{Name: awssdk.String("group-name"), Values: []string{"new"}}}}))
	if len(listed.SecurityGroups) != 0 {
		t.Fatalf("a group not yet consistent is listed: %v", listed.SecurityGroups)
	}
	_, err = createNLB(c, "too-soon", subs, id)
	apiErr(t, err, "InvalidSecurityGroup", http.StatusBadRequest)
	// Creating it again is still a duplicate: the name is taken at once.
	_, err = c.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: awssdk.String("new"), Description: awssdk.String("new"), VpcId: awssdk.String(vpc.ID)})
	apiErr(t, err, "InvalidGroup.Duplicate", http.StatusBadRequest)

	advance(2 * time.Second)
	must[*ec2.DescribeSecurityGroupsOutput](t)(c.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{id}}))
	lb := must[*elbv2.CreateLoadBalancerOutput](t)(createNLB(c, "with-new", subs, id)).LoadBalancers[0]
	must[*elbv2.DeleteLoadBalancerOutput](t)(c.elb.DeleteLoadBalancer(ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: lb.LoadBalancerArn}))
	_, err = c.ec2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: awssdk.String(id)})
	apiErr(t, err, "DependencyViolation", http.StatusBadRequest)
	advance(time.Minute)
	must[*ec2.DeleteSecurityGroupOutput](t)(c.ec2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: awssdk.String(id)}))
}
