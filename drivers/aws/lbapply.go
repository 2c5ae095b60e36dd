package aws

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// applier makes a plan's changes. Resources refer to each other by IDs
// AWS gives only when it makes them (the NLB names its security group,
// a listener its NLB and target group): those are kept here, as observed
// or as made by an earlier change of the same plan, and read by each
// change when it runs.
type applier struct {
	l       *loadBalancers
	cl      *clients
	svc     *v1.Service
	vpc     string
	spec    *nlbSpec
	subnets []subnet
	targets []string
	// j judges what turns up while applying; nil for a node-only sync,
	// which makes nothing.
	j *loadbalancers.Judgement

	sgID   string
	lb     *elbtypes.LoadBalancer
	tgARNs map[string]string // by name
}

func newApplier(l *loadBalancers, cl *clients, svc *v1.Service, vpc string, spec *nlbSpec, subnets []subnet, targets []string, obs *observed, j *loadbalancers.Judgement) *applier {
	a := &applier{l: l, cl: cl, svc: svc, vpc: vpc, spec: spec, subnets: subnets, targets: targets, j: j, lb: obs.lb, tgARNs: map[string]string{}}
	if obs.sg != nil {
		a.sgID = aws.ToString(obs.sg.GroupId)
	}
	for name, o := range obs.tgs {
		a.tgARNs[name] = aws.ToString(o.tg.TargetGroupArn)
	}
	return a
}

// run gives a change its Apply; a plan only shown (nil applier) gets none.
func (a *applier) run(f func(ctx context.Context, a *applier) error) func(context.Context) error {
	if a == nil {
		return nil
	}
	return func(ctx context.Context) error { return f(ctx, a) }
}

// createSecurityGroup makes the NLB's security group and gives it the
// ingress the listeners and source ranges need.
func (a *applier) createSecurityGroup(ctx context.Context) error {
	l, cl, spec := a.l, a.cl, a.spec
	// Retried on a server error too: a group's name is unique in its VPC,
	// so a repeat of a create that did happen answers
	// InvalidGroup.Duplicate, which finds the group below.
	_, err := cloudapi.Call(ctx, l.c.api, "ec2.CreateSecurityGroup", func(ctx context.Context) (*ec2.CreateSecurityGroupOutput, error) {
		return cl.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{
			GroupName:   aws.String(spec.sgName),
			Description: aws.String(sgDescription),
			VpcId:       aws.String(a.vpc),
			TagSpecifications: []ec2types.TagSpecification{{
				ResourceType: ec2types.ResourceTypeSecurityGroup, Tags: ec2Tags(spec.sgTags),
			}},
		})
	}, cloudapi.Creates())
	if err != nil && cloudapi.KindOf(err) != cloudapi.KindExists {
		return err
	}
	sg, err := l.findSecurityGroup(ctx, cl, a.vpc, spec.sgName)
	if err != nil {
		return err
	}
	if sg == nil {
		// EC2 is eventually consistent: a group just created may not be
		// listed for a moment. Not a failure; look again soon.
		return loadbalancers.Pending(consistencyRetry, "security group %s was created and is not listed by EC2 yet; looking again in %s", spec.sgName, consistencyRetry)
	}
	// A group that already existed (a lost answer, or made meanwhile) is
	// held to the ownership rule like any observed one.
	id := aws.ToString(sg.GroupId)
	v, err := a.j.Found(ctx, l.resource(kindSG, id, spec.sgName, ec2TagMap(sg.Tags)))
	if err != nil {
		return err
	}
	add, remove := loadbalancers.Delta(wantedIngress(spec), ingressOf(sg), compareIngress)
	if err := a.updateSecurityGroup(ctx, id, adoptTags(v == loadbalancers.Adopted, a.spec), add, remove); err != nil {
		return err
	}
	a.sgID = id
	return nil
}

// updateSecurityGroup tags an adopted group and changes its ingress.
func (a *applier) updateSecurityGroup(ctx context.Context, id string, tags map[string]string, add, remove []ingressRule) error {
	l, cl := a.l, a.cl
	if len(tags) > 0 {
		if _, err := cloudapi.Call(ctx, l.c.api, "ec2.CreateTags", func(ctx context.Context) (*ec2.CreateTagsOutput, error) {
			return cl.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: ec2Tags(tags)})
		}); err != nil {
			return err
		}
	}
	if len(add) > 0 {
		_, err := cloudapi.Call(ctx, l.c.api, "ec2.AuthorizeSecurityGroupIngress", func(ctx context.Context) (*ec2.AuthorizeSecurityGroupIngressOutput, error) {
			return cl.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(id), IpPermissions: permissions(add)})
		})
		switch {
		case err == nil || cloudapi.KindOf(err) == cloudapi.KindExists:
		case cloudapi.IsNotFound(err):
			// Listed but not yet known to every EC2 endpoint.
			return loadbalancers.Pending(consistencyRetry, "security group %s is not yet known to EC2 everywhere; looking again in %s", id, consistencyRetry)
		default:
			return err
		}
	}
	if len(remove) > 0 {
		_, err := cloudapi.Call(ctx, l.c.api, "ec2.RevokeSecurityGroupIngress", func(ctx context.Context) (*ec2.RevokeSecurityGroupIngressOutput, error) {
			return cl.ec2.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(id), IpPermissions: permissions(remove)})
		})
		if err != nil && !cloudapi.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// createLB makes the NLB with the plan's security group, then sets its
// attributes.
func (a *applier) createLB(ctx context.Context) error {
	lb, err := a.l.createLB(ctx, a.cl, a.j, a.spec, a.subnets, a.groups())
	if err != nil {
		return err
	}
	a.lb = lb
	return a.l.ensureLBAttributes(ctx, a.cl, aws.ToString(lb.LoadBalancerArn), a.spec)
}

// lbUpdate is what changes on an existing NLB; zero values keep.
type lbUpdate struct {
	ipType  bool
	subnets []string
	sg      bool
	tags    map[string]string
	attrs   map[string]string
}

func (a *applier) updateLB(ctx context.Context, u lbUpdate) error {
	l, cl, arn := a.l, a.cl, aws.ToString(a.lb.LoadBalancerArn)
	if u.ipType {
		if _, err := cloudapi.Call(ctx, l.c.api, "elbv2.SetIpAddressType", func(ctx context.Context) (*elbv2.SetIpAddressTypeOutput, error) {
			return cl.elb.SetIpAddressType(ctx, &elbv2.SetIpAddressTypeInput{LoadBalancerArn: aws.String(arn), IpAddressType: ipAddressType(a.spec)})
		}); err != nil {
			return err
		}
	}
	if u.subnets != nil {
		if _, err := cloudapi.Call(ctx, l.c.api, "elbv2.SetSubnets", func(ctx context.Context) (*elbv2.SetSubnetsOutput, error) {
			return cl.elb.SetSubnets(ctx, &elbv2.SetSubnetsInput{LoadBalancerArn: aws.String(arn), Subnets: u.subnets})
		}); err != nil {
			return err
		}
	}
	if u.sg {
		if _, err := cloudapi.Call(ctx, l.c.api, "elbv2.SetSecurityGroups", func(ctx context.Context) (*elbv2.SetSecurityGroupsOutput, error) {
			return cl.elb.SetSecurityGroups(ctx, &elbv2.SetSecurityGroupsInput{LoadBalancerArn: aws.String(arn), SecurityGroups: a.groups()})
		}); err != nil {
			return err
		}
	}
	if err := l.addTags(ctx, cl, arn, u.tags); err != nil {
		return err
	}
	return l.setAttributes(ctx, cl, arn, u.attrs)
}

// createTargetGroup makes a target group and converges it as an existing
// one: a create whose answer was lost finds the group made then, as it is.
func (a *applier) createTargetGroup(ctx context.Context, spec tgSpec) error {
	l, cl := a.l, a.cl
	tg, err := l.createTargetGroup(ctx, cl, a.vpc, a.spec, spec)
	if err != nil {
		return err
	}
	arn := aws.ToString(tg.TargetGroupArn)
	u := tgUpdate{healthCheck: len(healthCheckDiff(tg, a.spec.healthCheck)) > 0}
	if len(a.spec.tgAttrs) > 0 {
		have, err := l.targetGroupAttributes(ctx, cl, arn)
		if err != nil {
			return err
		}
		u.attrs = attributeChanges(a.spec.tgAttrs, have)
	}
	have, err := l.targetsOf(ctx, cl, arn)
	if err != nil {
		return err
	}
	want := map[target]bool{}
	for _, id := range a.targets {
		want[target{id, spec.port}] = true
	}
	u.register, u.deregister = loadbalancers.Delta(want, have, compareTarget)
	if err := a.updateTargetGroup(ctx, arn, u); err != nil {
		return err
	}
	a.tgARNs[spec.name] = arn
	return nil
}

// tgUpdate is what changes on an existing target group.
type tgUpdate struct {
	tags                 map[string]string
	healthCheck          bool
	attrs                []elbtypes.TargetGroupAttribute
	register, deregister []target
}

func (a *applier) updateTargetGroup(ctx context.Context, arn string, u tgUpdate) error {
	l, cl := a.l, a.cl
	if err := l.addTags(ctx, cl, arn, u.tags); err != nil {
		return err
	}
	if u.healthCheck {
		if _, err := cloudapi.Call(ctx, l.c.api, "elbv2.ModifyTargetGroup", func(ctx context.Context) (*elbv2.ModifyTargetGroupOutput, error) {
			return cl.elb.ModifyTargetGroup(ctx, healthCheckModify(arn, a.spec.healthCheck))
		}); err != nil {
			return err
		}
	}
	if len(u.attrs) > 0 {
		if _, err := cloudapi.Call(ctx, l.c.api, "elbv2.ModifyTargetGroupAttributes", func(ctx context.Context) (*elbv2.ModifyTargetGroupAttributesOutput, error) {
			return cl.elb.ModifyTargetGroupAttributes(ctx, &elbv2.ModifyTargetGroupAttributesInput{TargetGroupArn: aws.String(arn), Attributes: u.attrs})
		}); err != nil {
			return err
		}
	}
	if len(u.register) > 0 {
		if _, err := cloudapi.Call(ctx, l.c.api, "elbv2.RegisterTargets", func(ctx context.Context) (*elbv2.RegisterTargetsOutput, error) {
			return cl.elb.RegisterTargets(ctx, &elbv2.RegisterTargetsInput{TargetGroupArn: aws.String(arn), Targets: describeTargets(u.register)})
		}); err != nil {
			return err
		}
	}
	if len(u.deregister) > 0 {
		if _, err := cloudapi.Call(ctx, l.c.api, "elbv2.DeregisterTargets", func(ctx context.Context) (*elbv2.DeregisterTargetsOutput, error) {
			return cl.elb.DeregisterTargets(ctx, &elbv2.DeregisterTargetsInput{TargetGroupArn: aws.String(arn), Targets: describeTargets(u.deregister)})
		}); err != nil && !cloudapi.IsNotFound(err) {
			return err
		}
	}
	return nil
}

func describeTargets(ts []target) []elbtypes.TargetDescription {
	var out []elbtypes.TargetDescription
	for _, t := range ts {
		out = append(out, elbtypes.TargetDescription{Id: aws.String(t.id), Port: aws.Int32(t.port)})
	}
	return out
}

// listenerSettings are what a listener is given, made or changed: it
// forwards to its target group, wherever in the plan that was made.
func (a *applier) listenerSettings(want listenerSpec) ([]elbtypes.Action, []elbtypes.Certificate, *string) {
	action := []elbtypes.Action{{Type: elbtypes.ActionTypeEnumForward, TargetGroupArn: aws.String(a.tgARNs[want.tg.name])}}
	var certs []elbtypes.Certificate
	if len(want.certs) > 0 {
		certs = []elbtypes.Certificate{{CertificateArn: aws.String(want.certs[0])}}
	}
	var policy *string
	if want.sslPolicy != "" {
		policy = aws.String(want.sslPolicy)
	}
	return action, certs, policy
}

func (a *applier) createListener(ctx context.Context, want listenerSpec) error {
	action, certs, policy := a.listenerSettings(want)
	in := &elbv2.CreateListenerInput{LoadBalancerArn: a.lb.LoadBalancerArn, Port: aws.Int32(want.port), Protocol: want.protocol, DefaultActions: action, Certificates: certs, SslPolicy: policy}
	out, err := cloudapi.Call(ctx, a.l.c.api, "elbv2.CreateListener", func(ctx context.Context) (*elbv2.CreateListenerOutput, error) {
		return a.cl.elb.CreateListener(ctx, in)
	}, cloudapi.Creates())
	if err != nil && cloudapi.KindOf(err) != cloudapi.KindExists {
		return err
	}
	// A listener that already existed (a lost answer) gets its other
	// certificates on the next sync, which observes it.
	if extra := extraCerts(want); err == nil && len(extra) > 0 && len(out.Listeners) == 1 {
		return a.l.setListenerCerts(ctx, a.cl, aws.ToString(out.Listeners[0].ListenerArn), extra, nil)
	}
	return nil
}

func (a *applier) modifyListener(ctx context.Context, arn string, want listenerSpec) error {
	action, certs, policy := a.listenerSettings(want)
	in := &elbv2.ModifyListenerInput{ListenerArn: aws.String(arn), Port: aws.Int32(want.port), Protocol: want.protocol, DefaultActions: action, Certificates: certs, SslPolicy: policy}
	_, err := cloudapi.Call(ctx, a.l.c.api, "elbv2.ModifyListener", func(ctx context.Context) (*elbv2.ModifyListenerOutput, error) {
		return a.cl.elb.ModifyListener(ctx, in)
	})
	return err
}

func (a *applier) deleteListener(ctx context.Context, arn string) error {
	_, err := cloudapi.Call(ctx, a.l.c.api, "elbv2.DeleteListener", func(ctx context.Context) (*elbv2.DeleteListenerOutput, error) {
		return a.cl.elb.DeleteListener(ctx, &elbv2.DeleteListenerInput{ListenerArn: aws.String(arn)})
	})
	if err != nil && !cloudapi.IsNotFound(err) {
		return err
	}
	return nil
}

// groups are the NLB's security groups: the Service's own
// (security-groups), or polyccm's.
func (a *applier) groups() []string {
	if len(a.spec.byoSGs) > 0 {
		return a.spec.byoSGs
	}
	return []string{a.sgID}
}

// adoptTags are the tags an adopted group gets: the Service's, all of
// them, as when made.
func adoptTags(adopted bool, spec *nlbSpec) map[string]string {
	if !adopted {
		return nil
	}
	return spec.sgTags
}
