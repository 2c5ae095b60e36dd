package aws

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// EnsureLoadBalancerDeleted deletes the NLB, the Service's target groups
// and its security group, each only if it carries this cluster's tag. The
// finalizer is released only when all are gone; anything in doubt is
// retried.
func (l *loadBalancers) Delete(ctx context.Context, svc *v1.Service) error {
	if elsewhere(svc) {
		return cloudprovider.ImplementedElsewhere
	}
	if _, err := l.c.clusterClient(ctx); err != nil {
		return err // ownership needs the cluster ID
	}
	if l.isClassic(svc) {
		return l.deleteClassic(ctx, svc)
	}
	spec := &nlbSpec{name: lbName(svc), service: svc.Namespace + "/" + svc.Name}
	cl, err := l.c.clusterClient(ctx)
	if err != nil {
		return err
	}
	lb, err := l.findLB(ctx, cl, spec.name)
	if err != nil {
		return err
	}
	if lb != nil {
		arn := aws.ToString(lb.LoadBalancerArn)
		tags, err := l.tags(ctx, cl, arn)
		if err != nil {
			return err // the tags could not be read: ownership unknown
		}
		ok, err := l.own.CheckDelete(ctx, svc, l.resource("load balancer", arn, spec.name, tags))
		if err != nil {
			return err
		}
		if ok {
			_, err := cloudapi.Call(ctx, l.c.api, "elbv2.DeleteLoadBalancer", func(ctx context.Context) (*elbv2.DeleteLoadBalancerOutput, error) {
				return cl.elb.DeleteLoadBalancer(ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: aws.String(arn)})
			})
			if err != nil && !cloudapi.IsNotFound(err) {
				return fmt.Errorf("deleting load balancer %s: %w", arn, err)
			}
			klog.InfoS("Deleted load balancer", "service", klog.KObj(svc), "loadBalancer", arn)
		}
	}
	if err := l.deleteServiceTargetGroups(ctx, cl, svc, spec); err != nil {
		return err
	}
	vpc, err := l.c.vpcID(ctx, cl)
	if err != nil {
		return err
	}
	// The rules name the load balancer, whose name comes from this
	// Service's UID: they are this Service's alone.
	if err := l.revokeNodeRules(ctx, cl, vpc, spec.name); err != nil {
		return err
	}
	sgs, err := l.serviceSecurityGroups(ctx, cl, vpc, svc)
	if err != nil {
		return err
	}
	for _, sg := range sgs {
		if err := l.deleteSecurityGroup(ctx, cl, svc, sg); err != nil {
			return err
		}
	}
	return nil
}

// serviceSecurityGroups are the Service's security groups found by name:
// the one with the AWS CCM's name, and one with polyccm's earlier name
// (see lbobserve.go) if it is tagged with the Service, as polyccm tagged
// it: the AWS CCM gives a Classic ELB's group that name without the tag.
func (l *loadBalancers) serviceSecurityGroups(ctx context.Context, cl *clients, vpc string, svc *v1.Service) ([]ec2types.SecurityGroup, error) {
	var out []ec2types.SecurityGroup
	sg, err := l.findSecurityGroup(ctx, cl, vpc, sgName(l.c.clusterName(), svc))
	if err != nil {
		return nil, err
	}
	if sg != nil {
		out = append(out, *sg)
	}
	sg, err = l.findSecurityGroup(ctx, cl, vpc, legacySGName(svc))
	if err != nil {
		return nil, err
	}
	if sg != nil && ec2TagMap(sg.Tags)[TagServiceName] == svc.Namespace+"/"+svc.Name {
		out = append(out, *sg)
	}
	// The AWS CCM's group under another name, tagged with the Service
	// when polyccm took it over (see planSecurityGroup).
	tagged, err := l.describeGroups(ctx, cl, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{
		{Name: aws.String("vpc-id"), Values: []string{vpc}},
		{Name: aws.String("tag:" + TagServiceName), Values: []string{svc.Namespace + "/" + svc.Name}},
	}})
	if err != nil {
		return nil, err
	}
	for _, sg := range tagged {
		if aws.ToString(sg.Description) == sgDescription && l.c.ec2Owned(sg.Tags) &&
			!slices.ContainsFunc(out, func(o ec2types.SecurityGroup) bool { return aws.ToString(o.GroupId) == aws.ToString(sg.GroupId) }) {
			out = append(out, sg)
		}
	}
	return out, nil
}

// deleteSecurityGroup deletes sg if it is the Service's by the ownership
// rule.
func (l *loadBalancers) deleteSecurityGroup(ctx context.Context, cl *clients, svc *v1.Service, sg ec2types.SecurityGroup) error {
	if ok, err := l.own.CheckDelete(ctx, svc, l.resource(kindSG, aws.ToString(sg.GroupId), aws.ToString(sg.GroupName), ec2TagMap(sg.Tags))); err != nil || !ok {
		return err
	}
	_, err := cloudapi.Call(ctx, l.c.api, "ec2.DeleteSecurityGroup", func(ctx context.Context) (*ec2.DeleteSecurityGroupOutput, error) {
		return cl.ec2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: sg.GroupId})
	})
	switch {
	case err == nil || cloudapi.IsNotFound(err):
		return nil
	case cloudapi.KindOf(err) == cloudapi.KindConflict:
		// The NLB's network interfaces hold on to the group for a while
		// after it is deleted.
		return loadbalancers.Pending(deletePollInterval, "security group %s is still in use by the deleted load balancer; retrying in %s", aws.ToString(sg.GroupId), deletePollInterval)
	}
	return fmt.Errorf("deleting security group %s: %w", aws.ToString(sg.GroupId), err)
}
