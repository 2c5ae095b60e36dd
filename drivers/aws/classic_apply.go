package aws

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbctypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// classicApplier makes a Classic plan's changes. A Classic Load Balancer
// is named, not given an ID, so only its managed group's ID (known once
// made) and its DNS name are carried between changes.
type classicApplier struct {
	l       *loadBalancers
	cl      *clients
	svc     *v1.Service
	vpc     string
	spec    *classicSpec
	subnets []string
	// j judges what turns up while applying; nil for a node-only sync,
	// which makes nothing.
	j    *loadbalancers.Judgement
	sgID string // the managed group, once known
	dns  string
}

func (a *classicApplier) run(f func(ctx context.Context, a *classicApplier) error) func(context.Context) error {
	if a == nil {
		return nil
	}
	return func(ctx context.Context) error { return f(ctx, a) }
}

// nlb is an NLB applier sharing this one's client and tags, for the
// security group code both kinds use.
func (a *classicApplier) nlb() *applier {
	return &applier{l: a.l, cl: a.cl, svc: a.svc, vpc: a.vpc, spec: &nlbSpec{tags: a.spec.tags}, j: a.j}
}

// sgs are the load balancer's groups, the managed one by its ID.
func (a *classicApplier) sgs() []string {
	own := a.spec.ownSGs
	if len(own) == 0 {
		own = []string{a.sgID}
	}
	return slices.Concat(own, a.spec.extraSGs)
}

// createSG makes the managed group with upstream's name and description,
// then gives it its ingress.
func (a *classicApplier) createSG(ctx context.Context) error {
	l, cl, name := a.l, a.cl, classicSGName(a.spec.name)
	// Retried on a server error too: a group's name is unique in its VPC,
	// so a repeat of a create that did happen answers
	// InvalidGroup.Duplicate, which finds the group below.
	_, err := cloudapi.Call(ctx, l.c.api, "ec2.CreateSecurityGroup", func(ctx context.Context) (*ec2.CreateSecurityGroupOutput, error) {
		return cl.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{
			GroupName: aws.String(name), Description: aws.String(classicSGDescription(a.spec.name, a.spec.service)), VpcId: aws.String(a.vpc),
			TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeSecurityGroup, Tags: ec2Tags(a.spec.tags)}},
		})
	}, cloudapi.Creates())
	if err != nil && cloudapi.KindOf(err) != cloudapi.KindExists {
		return err
	}
	sg, err := l.findSecurityGroup(ctx, cl, a.vpc, name)
	if err != nil {
		return err
	}
	if sg == nil {
		return loadbalancers.Pending(consistencyRetry, "security group %s was created and is not listed by EC2 yet; looking again in %s", name, consistencyRetry)
	}
	id := aws.ToString(sg.GroupId)
	// A group that already existed (a lost answer, or made meanwhile) is
	// held to the ownership rule like an observed one.
	v, err := a.j.Found(ctx, l.classicResource(kindSG, id, name, a.spec.name, ec2TagMap(sg.Tags)))
	if err != nil {
		return err
	}
	add, remove := loadbalancers.Delta(classicIngress(a.spec), ingressOf(sg), compareIngress)
	if err := a.nlb().updateSecurityGroup(ctx, id, a.adoptTags(v == loadbalancers.Adopted), add, remove); err != nil {
		return err
	}
	a.sgID = id
	return nil
}

// create makes the load balancer with its listeners, subnets, groups and
// tags; the plan's later changes give it the rest.
func (a *classicApplier) create(ctx context.Context) error {
	l, cl, spec := a.l, a.cl, a.spec
	in := &elb.CreateLoadBalancerInput{LoadBalancerName: aws.String(spec.name), Subnets: a.subnets, SecurityGroups: a.sgs()}
	if spec.internal {
		in.Scheme = aws.String("internal")
	}
	for _, ls := range spec.listeners {
		in.Listeners = append(in.Listeners, *awsListener(ls))
	}
	for _, k := range slices.Sorted(maps.Keys(spec.tags)) {
		in.Tags = append(in.Tags, elbctypes.Tag{Key: aws.String(k), Value: aws.String(spec.tags[k])})
	}
	out, err := cloudapi.Call(ctx, l.c.api, "elb.CreateLoadBalancer", func(ctx context.Context) (*elb.CreateLoadBalancerOutput, error) {
		return cl.clb.CreateLoadBalancer(ctx, in)
	}, cloudapi.Creates())
	if err == nil {
		a.dns = aws.ToString(out.DNSName)
		return nil
	}
	if cloudapi.KindOf(err) != cloudapi.KindExists {
		return err
	}
	// Made already (a lost answer, or meanwhile): held to the ownership
	// rule like one observed; the next sync converges it.
	tags, err := l.classicTags(ctx, cl, spec.name)
	if err != nil {
		return err
	}
	if _, err := a.j.Found(ctx, l.classicResource(kindLB, spec.name, spec.name, spec.name, tags)); err != nil {
		return err
	}
	return loadbalancers.Pending(consistencyRetry, "load balancer %s already existed; converging it in %s", spec.name, consistencyRetry)
}

// classicLBUpdate is what changes on an existing load balancer.
type classicLBUpdate struct {
	attach, detach []string
	sgs            bool
	tags           map[string]string
}

func (a *classicApplier) updateLB(ctx context.Context, u classicLBUpdate) error {
	l, cl, name := a.l, a.cl, aws.String(a.spec.name)
	if len(u.attach) > 0 {
		if _, err := cloudapi.Call(ctx, l.c.api, "elb.AttachLoadBalancerToSubnets", func(ctx context.Context) (*elb.AttachLoadBalancerToSubnetsOutput, error) {
			return cl.clb.AttachLoadBalancerToSubnets(ctx, &elb.AttachLoadBalancerToSubnetsInput{LoadBalancerName: name, Subnets: u.attach})
		}); err != nil {
			return err
		}
	}
	if len(u.detach) > 0 {
		if _, err := cloudapi.Call(ctx, l.c.api, "elb.DetachLoadBalancerFromSubnets", func(ctx context.Context) (*elb.DetachLoadBalancerFromSubnetsOutput, error) {
			return cl.clb.DetachLoadBalancerFromSubnets(ctx, &elb.DetachLoadBalancerFromSubnetsInput{LoadBalancerName: name, Subnets: u.detach})
		}); err != nil {
			return err
		}
	}
	if u.sgs {
		if _, err := cloudapi.Call(ctx, l.c.api, "elb.ApplySecurityGroupsToLoadBalancer", func(ctx context.Context) (*elb.ApplySecurityGroupsToLoadBalancerOutput, error) {
			return cl.clb.ApplySecurityGroupsToLoadBalancer(ctx, &elb.ApplySecurityGroupsToLoadBalancerInput{LoadBalancerName: name, SecurityGroups: a.sgs()})
		}); err != nil {
			return err
		}
	}
	if len(u.tags) == 0 {
		return nil
	}
	var tags []elbctypes.Tag
	for _, k := range slices.Sorted(maps.Keys(u.tags)) {
		tags = append(tags, elbctypes.Tag{Key: aws.String(k), Value: aws.String(u.tags[k])})
	}
	_, err := cloudapi.Call(ctx, l.c.api, "elb.AddTags", func(ctx context.Context) (*elb.AddTagsOutput, error) {
		return cl.clb.AddTags(ctx, &elb.AddTagsInput{LoadBalancerNames: []string{a.spec.name}, Tags: tags})
	})
	return err
}

func (a *classicApplier) createListener(ctx context.Context, ls classicListener) error {
	_, err := cloudapi.Call(ctx, a.l.c.api, "elb.CreateLoadBalancerListeners", func(ctx context.Context) (*elb.CreateLoadBalancerListenersOutput, error) {
		return a.cl.clb.CreateLoadBalancerListeners(ctx, &elb.CreateLoadBalancerListenersInput{LoadBalancerName: aws.String(a.spec.name), Listeners: []elbctypes.Listener{*awsListener(ls)}})
	})
	if err != nil && cloudapi.KindOf(err) != cloudapi.KindExists {
		return err
	}
	return nil
}

func (a *classicApplier) deleteListener(ctx context.Context, port int32) error {
	_, err := cloudapi.Call(ctx, a.l.c.api, "elb.DeleteLoadBalancerListeners", func(ctx context.Context) (*elb.DeleteLoadBalancerListenersOutput, error) {
		return a.cl.clb.DeleteLoadBalancerListeners(ctx, &elb.DeleteLoadBalancerListenersInput{LoadBalancerName: aws.String(a.spec.name), LoadBalancerPorts: []int32{port}})
	})
	return err
}

func (a *classicApplier) createPolicy(ctx context.Context, name, typ, attr, value string) error {
	_, err := cloudapi.Call(ctx, a.l.c.api, "elb.CreateLoadBalancerPolicy", func(ctx context.Context) (*elb.CreateLoadBalancerPolicyOutput, error) {
		return a.cl.clb.CreateLoadBalancerPolicy(ctx, &elb.CreateLoadBalancerPolicyInput{
			LoadBalancerName: aws.String(a.spec.name), PolicyName: aws.String(name), PolicyTypeName: aws.String(typ),
			PolicyAttributes: []elbctypes.PolicyAttribute{{AttributeName: aws.String(attr), AttributeValue: aws.String(value)}},
		})
	})
	if err != nil && cloudapi.KindOf(err) != cloudapi.KindExists {
		return err
	}
	return nil
}

func (a *classicApplier) createProxyPolicy(ctx context.Context) error {
	return a.createPolicy(ctx, proxyProtocolPolicy, "ProxyProtocolPolicyType", "ProxyProtocol", "true")
}

func (a *classicApplier) createSSLPolicy(ctx context.Context, name string) error {
	return a.createPolicy(ctx, name, "SSLNegotiationPolicyType", "Reference-Security-Policy", a.spec.sslPolicy)
}

func (a *classicApplier) setListenerPolicies(ctx context.Context, port int32, policy string) error {
	_, err := cloudapi.Call(ctx, a.l.c.api, "elb.SetLoadBalancerPoliciesOfListener", func(ctx context.Context) (*elb.SetLoadBalancerPoliciesOfListenerOutput, error) {
		return a.cl.clb.SetLoadBalancerPoliciesOfListener(ctx, &elb.SetLoadBalancerPoliciesOfListenerInput{LoadBalancerName: aws.String(a.spec.name), LoadBalancerPort: port, PolicyNames: []string{policy}})
	})
	return err
}

func (a *classicApplier) setBackendPolicies(ctx context.Context, port int32, names []string) error {
	_, err := cloudapi.Call(ctx, a.l.c.api, "elb.SetLoadBalancerPoliciesForBackendServer", func(ctx context.Context) (*elb.SetLoadBalancerPoliciesForBackendServerOutput, error) {
		return a.cl.clb.SetLoadBalancerPoliciesForBackendServer(ctx, &elb.SetLoadBalancerPoliciesForBackendServerInput{
			LoadBalancerName: aws.String(a.spec.name), InstancePort: aws.Int32(port), PolicyNames: append([]string{}, names...)})
	})
	return err
}

func (a *classicApplier) configureHealthCheck(ctx context.Context) error {
	h := a.spec.health
	_, err := cloudapi.Call(ctx, a.l.c.api, "elb.ConfigureHealthCheck", func(ctx context.Context) (*elb.ConfigureHealthCheckOutput, error) {
		return a.cl.clb.ConfigureHealthCheck(ctx, &elb.ConfigureHealthCheckInput{LoadBalancerName: aws.String(a.spec.name), HealthCheck: &elbctypes.HealthCheck{
			Target: aws.String(h.Target), Interval: aws.Int32(h.Interval), Timeout: aws.Int32(h.Timeout),
			HealthyThreshold: aws.Int32(h.HealthyThreshold), UnhealthyThreshold: aws.Int32(h.UnhealthyThreshold),
		}})
	})
	return err
}

func (a *classicApplier) modifyAttributes(ctx context.Context, at classicAttrs) error {
	attrs := &elbctypes.LoadBalancerAttributes{
		CrossZoneLoadBalancing: &elbctypes.CrossZoneLoadBalancing{Enabled: at.CrossZone},
		ConnectionDraining:     &elbctypes.ConnectionDraining{Enabled: at.Draining},
		ConnectionSettings:     &elbctypes.ConnectionSettings{IdleTimeout: aws.Int32(at.IdleTimeout)},
		AccessLog:              &elbctypes.AccessLog{Enabled: at.AccessLog},
	}
	if at.DrainingTimeout != 0 {
		attrs.ConnectionDraining.Timeout = aws.Int32(at.DrainingTimeout)
	}
	if at.EmitInterval != 0 {
		attrs.AccessLog.EmitInterval = aws.Int32(at.EmitInterval)
	}
	if at.Bucket != "" {
		attrs.AccessLog.S3BucketName = aws.String(at.Bucket)
	}
	if at.Prefix != "" {
		attrs.AccessLog.S3BucketPrefix = aws.String(at.Prefix)
	}
	_, err := cloudapi.Call(ctx, a.l.c.api, "elb.ModifyLoadBalancerAttributes", func(ctx context.Context) (*elb.ModifyLoadBalancerAttributesOutput, error) {
		return a.cl.clb.ModifyLoadBalancerAttributes(ctx, &elb.ModifyLoadBalancerAttributesInput{LoadBalancerName: aws.String(a.spec.name), LoadBalancerAttributes: attrs})
	})
	return err
}

// syncInstances registers and deregisters in batches.
func (a *classicApplier) syncInstances(ctx context.Context, register, deregister []string) error {
	name := aws.String(a.spec.name)
	for chunk := range slices.Chunk(register, instanceBatch) {
		if _, err := cloudapi.Call(ctx, a.l.c.api, "elb.RegisterInstancesWithLoadBalancer", func(ctx context.Context) (*elb.RegisterInstancesWithLoadBalancerOutput, error) {
			return a.cl.clb.RegisterInstancesWithLoadBalancer(ctx, &elb.RegisterInstancesWithLoadBalancerInput{LoadBalancerName: name, Instances: classicInstances(chunk)})
		}); err != nil {
			return err
		}
	}
	for chunk := range slices.Chunk(deregister, instanceBatch) {
		if _, err := cloudapi.Call(ctx, a.l.c.api, "elb.DeregisterInstancesFromLoadBalancer", func(ctx context.Context) (*elb.DeregisterInstancesFromLoadBalancerOutput, error) {
			return a.cl.clb.DeregisterInstancesFromLoadBalancer(ctx, &elb.DeregisterInstancesFromLoadBalancerInput{LoadBalancerName: name, Instances: classicInstances(chunk)})
		}); err != nil {
			return err
		}
	}
	return nil
}

func classicInstances(ids []string) []elbctypes.Instance {
	out := make([]elbctypes.Instance, len(ids))
	for i, id := range ids {
		out[i] = elbctypes.Instance{InstanceId: aws.String(id)}
	}
	return out
}

// grantNodeGroup lets the load balancer's first group into a node group.
func (a *classicApplier) grantNodeGroup(ctx context.Context, id string) error {
	lbSG := a.sgs()[0]
	_, err := cloudapi.Call(ctx, a.l.c.api, "ec2.AuthorizeSecurityGroupIngress", func(ctx context.Context) (*ec2.AuthorizeSecurityGroupIngressOutput, error) {
		return a.cl.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(id), IpPermissions: groupRule(lbSG)})
	})
	if err != nil && cloudapi.KindOf(err) != cloudapi.KindExists {
		return fmt.Errorf("letting the load balancer's group %s into node security group %s: %w", lbSG, id, err)
	}
	return nil
}

// revokeGroupRule takes the rule letting lbSG in out of node group id.
func (l *loadBalancers) revokeGroupRule(ctx context.Context, cl *clients, id, lbSG string) error {
	_, err := cloudapi.Call(ctx, l.c.api, "ec2.RevokeSecurityGroupIngress", func(ctx context.Context) (*ec2.RevokeSecurityGroupIngressOutput, error) {
		return cl.ec2.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(id), IpPermissions: groupRule(lbSG)})
	})
	if err != nil && !cloudapi.IsNotFound(err) {
		return fmt.Errorf("revoking the load balancer's group %s from node security group %s: %w", lbSG, id, err)
	}
	return nil
}

// adoptTags are the tags an adopted group gets: the load balancer's, as
// when made.
func (a *classicApplier) adoptTags(adopted bool) map[string]string {
	if !adopted {
		return nil
	}
	return a.spec.tags
}
