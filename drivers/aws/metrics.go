package aws

import (
	"errors"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/smithy-go"

	"github.com/polyccm/polyccm/core/cloudapi"
)

// upstreamMetrics are cloud-provider-aws's API metrics
// (pkg/providers/v1/aws_metrics.go), written by core/cloudapi from
// polyccm's calls; docs/metrics.md has the table.
var upstreamMetrics = []cloudapi.UpstreamFamily{&cloudapi.AWSAPI{
	// The calls upstream's recordAWSMetric times, under its names for
	// them. It times DescribeNetworkInterfaces and DeleteTags too, which
	// polyccm never calls.
	Requests: map[string]string{
		"ec2.DescribeInstances":      "describe_instance",
		"ec2.DescribeSecurityGroups": "describe_security_groups",
		"ec2.DescribeRouteTables":    "describe_route_tables",
		"ec2.CreateTags":             "create_tags",
	},
	// The clients upstream's response status middleware is on; its
	// metadata client has none, so imds.* is left out.
	Services: map[string]string{
		"ec2":   ec2.ServiceID,
		"elb":   elb.ServiceID,
		"elbv2": elbv2.ServiceID,
	},
	Throttled: requestLimitExceeded,
}}

// requestLimitExceeded is upstream's test for a throttled call: only EC2's
// RequestLimitExceeded, not the Throttling code of the ELB APIs.
func requestLimitExceeded(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && strings.Contains(ae.Error(), "RequestLimitExceeded")
}
