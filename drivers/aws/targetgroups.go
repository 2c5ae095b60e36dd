package aws

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

func (l *loadBalancers) findTargetGroup(ctx context.Context, cl *clients, name string) (*elbtypes.TargetGroup, error) {
	out, err := cloudapi.Call(ctx, l.c.api, "elbv2.DescribeTargetGroups", func(ctx context.Context) (*elbv2.DescribeTargetGroupsOutput, error) {
		return cl.elb.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{Names: []string{name}})
	})
	if cloudapi.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(out.TargetGroups) == 0 {
		return nil, nil
	}
	return &out.TargetGroups[0], nil
}

func (l *loadBalancers) createTargetGroup(ctx context.Context, cl *clients, vpc string, spec *nlbSpec, tg tgSpec) (*elbtypes.TargetGroup, error) {
	hc := spec.healthCheck
	in := &elbv2.CreateTargetGroupInput{
		Name:                       aws.String(tg.name),
		Protocol:                   tg.protocol,
		Port:                       aws.Int32(tg.port),
		VpcId:                      aws.String(vpc),
		TargetType:                 elbtypes.TargetTypeEnumInstance,
		HealthCheckEnabled:         aws.Bool(true),
		HealthCheckProtocol:        hc.protocol,
		HealthCheckPort:            aws.String(hc.port),
		HealthCheckIntervalSeconds: aws.Int32(hc.interval),
		HealthCheckTimeoutSeconds:  aws.Int32(hc.timeout),
		HealthyThresholdCount:      aws.Int32(hc.healthy),
		UnhealthyThresholdCount:    aws.Int32(hc.unhealthy),
		Tags:                       elbTags(spec.tags),
	}
	if hc.path != "" {
		in.HealthCheckPath = aws.String(hc.path)
	}
	out, err := cloudapi.Call(ctx, l.c.api, "elbv2.CreateTargetGroup", func(ctx context.Context) (*elbv2.CreateTargetGroupOutput, error) {
		return cl.elb.CreateTargetGroup(ctx, in)
	}, cloudapi.Creates())
	if cloudapi.KindOf(err) == cloudapi.KindExists {
		if found, ferr := l.findTargetGroup(ctx, cl, tg.name); ferr == nil && found != nil {
			return found, nil
		}
	}
	if err != nil {
		return nil, err
	}
	if len(out.TargetGroups) == 0 {
		return nil, errors.New("AWS returned no target group")
	}
	return &out.TargetGroups[0], nil
}

func healthCheckModify(arn string, hc healthCheckSpec) *elbv2.ModifyTargetGroupInput {
	in := &elbv2.ModifyTargetGroupInput{
		TargetGroupArn:             aws.String(arn),
		HealthCheckProtocol:        hc.protocol,
		HealthCheckPort:            aws.String(hc.port),
		HealthCheckIntervalSeconds: aws.Int32(hc.interval),
		HealthCheckTimeoutSeconds:  aws.Int32(hc.timeout),
		HealthyThresholdCount:      aws.Int32(hc.healthy),
		UnhealthyThresholdCount:    aws.Int32(hc.unhealthy),
	}
	if hc.path != "" {
		in.HealthCheckPath = aws.String(hc.path)
	}
	return in
}

func (l *loadBalancers) deleteTargetGroup(ctx context.Context, cl *clients, arn string) error {
	_, err := cloudapi.Call(ctx, l.c.api, "elbv2.DeleteTargetGroup", func(ctx context.Context) (*elbv2.DeleteTargetGroupOutput, error) {
		return cl.elb.DeleteTargetGroup(ctx, &elbv2.DeleteTargetGroupInput{TargetGroupArn: aws.String(arn)})
	})
	if err != nil && !cloudapi.IsNotFound(err) {
		return fmt.Errorf("deleting target group %s: %w", arn, err)
	}
	return nil
}

// deleteServiceTargetGroups deletes every target group polyccm made for
// the Service.
func (l *loadBalancers) deleteServiceTargetGroups(ctx context.Context, cl *clients, svc *v1.Service, spec *nlbSpec) error {
	mine, err := l.serviceTargetGroups(ctx, cl, svc, spec)
	if err != nil {
		return err
	}
	for _, arn := range mine {
		err := l.deleteTargetGroup(ctx, cl, arn)
		if cloudapi.KindOf(err) == cloudapi.KindConflict {
			return loadbalancers.Pending(deletePollInterval, "target group %s is still in use; retrying in %s", arn, deletePollInterval)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// serviceTargetGroups finds the Service's target groups by name prefix
// (the AWS CCM's, or polyccm's earlier one: see lbobserve.go), confirmed
// by their tags (a prefix can be shared by another Service).
func (l *loadBalancers) serviceTargetGroups(ctx context.Context, cl *clients, svc *v1.Service, spec *nlbSpec) ([]string, error) {
	prefixes := []string{awsName(svc, ""), legacyPrefix(svc)}
	ours := func(name string) bool {
		return strings.HasPrefix(name, prefixes[0]) || strings.HasPrefix(name, prefixes[1])
	}
	in := &elbv2.DescribeTargetGroupsInput{PageSize: aws.Int32(400)}
	type candidate struct{ arn, name string }
	var candidates []candidate
	for {
		out, err := cloudapi.Call(ctx, l.c.api, "elbv2.DescribeTargetGroups", func(ctx context.Context) (*elbv2.DescribeTargetGroupsOutput, error) {
			return cl.elb.DescribeTargetGroups(ctx, in)
		})
		if err != nil {
			return nil, err
		}
		for _, tg := range out.TargetGroups {
			if ours(aws.ToString(tg.TargetGroupName)) {
				candidates = append(candidates, candidate{aws.ToString(tg.TargetGroupArn), aws.ToString(tg.TargetGroupName)})
			}
		}
		if aws.ToString(out.NextMarker) == "" {
			break
		}
		in.Marker = out.NextMarker
	}
	var owned []string
	for _, c := range candidates {
		tags, err := l.tags(ctx, cl, c.arn)
		if err != nil {
			return nil, err // ownership unknown
		}
		// Only tags can prove a target group the Service's; another
		// Service's or cluster's with the same prefix is left alone.
		if r := l.resource(kindTG, c.arn, c.name, tags); r.OurCluster && r.Service == spec.service {
			owned = append(owned, c.arn)
		}
	}
	return owned, nil
}
