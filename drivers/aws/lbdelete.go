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

// Deletion reads what deleting the Service's load balancer deletes: the
// NLB, the Service's target groups, the node rules naming the NLB and its
// security groups, in that order. The NLB and each group is deleted only
// if core's ownership rule says it is the Service's (a refused one stays
// and the rest goes on). The finalizer is released only when all are
// gone; anything in doubt is retried.
func (l *loadBalancers) Deletion(ctx context.Context, svc *v1.Service) (*loadbalancers.Deletion, error) {
	if elsewhere(svc) {
		return nil, cloudprovider.ImplementedElsewhere
	}
	if _, err := l.c.clusterClient(ctx); err != nil {
		return nil, err // ownership needs the cluster ID
	}
	if l.isClassic(svc) {
		return l.classicDeletion(ctx, svc)
	}
	spec := &nlbSpec{name: lbName(svc), service: svc.Namespace + "/" + svc.Name}
	cl, err := l.c.clusterClient(ctx)
	if err != nil {
		return nil, err
	}
	lb, err := l.findLB(ctx, cl, spec.name)
	if err != nil {
		return nil, err
	}
	d := &loadbalancers.Deletion{}
	if lb != nil {
		arn := aws.ToString(lb.LoadBalancerArn)
		_, r, err := l.taggedResource(ctx, cl, kindLB, arn, spec.name)
		if err != nil {
			return nil, err // the tags could not be read: ownership unknown
		}
		d.Add(loadbalancers.DeleteStep{Guard: &r, Run: func(ctx context.Context) error {
			_, err := cloudapi.Call(ctx, l.c.api, "elbv2.DeleteLoadBalancer", func(ctx context.Context) (*elbv2.DeleteLoadBalancerOutput, error) {
				return cl.elb.DeleteLoadBalancer(ctx, &elbv2.DeleteLoadBalancerInput{LoadBalancerArn: aws.String(arn)})
			})
			if err != nil && !cloudapi.IsNotFound(err) {
				return fmt.Errorf("deleting load balancer %s: %w", arn, err)
			}
			klog.InfoS("Deleted load balancer", "service", klog.KObj(svc), "loadBalancer", arn)
			return nil
		}})
	}
	// Only target groups tagged with the Service are deleted: no guard.
	d.Add(loadbalancers.DeleteStep{Run: func(ctx context.Context) error { return l.deleteServiceTargetGroups(ctx, cl, svc, spec) }})
	vpc, err := l.c.vpcID(ctx, cl)
	if err != nil {
		return d.FailAfter(err)
	}
	// The rules name the load balancer, whose name comes from this
	// Service's UID: they are this Service's alone.
	d.Add(loadbalancers.DeleteStep{Run: func(ctx context.Context) error { return l.revokeNodeRules(ctx, cl, vpc, spec.name) }})
	sgs, err := l.serviceSecurityGroups(ctx, cl, vpc, svc)
	if err != nil {
		return d.FailAfter(err)
	}
	for _, sg := range sgs {
		r := l.resource(kindSG, aws.ToString(sg.GroupId), aws.ToString(sg.GroupName), ec2TagMap(sg.Tags))
		d.Add(loadbalancers.DeleteStep{Guard: &r, Run: func(ctx context.Context) error { return l.deleteSecurityGroup(ctx, cl, sg) }})
	}
	return d, nil
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

// deleteSecurityGroup deletes sg, which core's ownership rule said is the
// Service's.
func (l *loadBalancers) deleteSecurityGroup(ctx context.Context, cl *clients, sg ec2types.SecurityGroup) error {
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
