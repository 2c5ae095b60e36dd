package aws

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// attachedTargetGroups are the target groups the NLB's listeners use now.
func (l *loadBalancers) attachedTargetGroups(ctx context.Context, cl *clients, lbARN string) ([]string, error) {
	out, err := cloudapi.Call(ctx, l.c.api, "elbv2.DescribeTargetGroups", func(ctx context.Context) (*elbv2.DescribeTargetGroupsOutput, error) {
		return cl.elb.DescribeTargetGroups(ctx, &elbv2.DescribeTargetGroupsInput{LoadBalancerArn: aws.String(lbARN)})
	})
	if cloudapi.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var arns []string
	for _, tg := range out.TargetGroups {
		arns = append(arns, aws.ToString(tg.TargetGroupArn))
	}
	return arns, nil
}

// ensureTargetGroups makes one target group per listener, with the right
// health check, attributes and targets; it returns their ARNs by name.
func (l *loadBalancers) ensureTargetGroups(ctx context.Context, cl *clients, svc *v1.Service, vpc string, spec *nlbSpec, targets []string) (map[string]string, error) {
	arns := map[string]string{}
	for _, ls := range spec.listeners {
		tg, err := l.findTargetGroup(ctx, cl, ls.tg.name)
		if err != nil {
			return nil, err
		}
		if tg == nil {
			if tg, err = l.createTargetGroup(ctx, cl, vpc, spec, ls.tg); err != nil {
				return nil, err
			}
		} else if v, err := l.checkOwned(ctx, cl, svc, "target group", aws.ToString(tg.TargetGroupArn), ls.tg.name); err != nil {
			return nil, err
		} else if v == loadbalancers.Adopted {
			if err := l.ensureTags(ctx, cl, aws.ToString(tg.TargetGroupArn), spec.tags); err != nil {
				return nil, err
			}
		}
		arn := aws.ToString(tg.TargetGroupArn)
		if !sameHealthCheck(tg, spec.healthCheck) {
			if _, err := cloudapi.Call(ctx, l.c.api, "elbv2.ModifyTargetGroup", func(ctx context.Context) (*elbv2.ModifyTargetGroupOutput, error) {
				return cl.elb.ModifyTargetGroup(ctx, healthCheckModify(arn, spec.healthCheck))
			}); err != nil {
				return nil, err
			}
		}
		if err := l.ensureTargetGroupAttributes(ctx, cl, arn, spec.tgAttrs); err != nil {
			return nil, err
		}
		if err := l.ensureTargets(ctx, cl, arn, ls.tg.port, targets); err != nil {
			return nil, err
		}
		arns[ls.tg.name] = arn
	}
	return arns, nil
}

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
		return nil, fmt.Errorf("creating target group %s: %w", tg.name, err)
	}
	if len(out.TargetGroups) == 0 {
		return nil, fmt.Errorf("creating target group %s: AWS returned no target group", tg.name)
	}
	return &out.TargetGroups[0], nil
}

func sameHealthCheck(tg *elbtypes.TargetGroup, hc healthCheckSpec) bool {
	return tg.HealthCheckProtocol == hc.protocol &&
		aws.ToString(tg.HealthCheckPort) == hc.port &&
		aws.ToString(tg.HealthCheckPath) == hc.path &&
		aws.ToInt32(tg.HealthCheckIntervalSeconds) == hc.interval &&
		aws.ToInt32(tg.HealthCheckTimeoutSeconds) == hc.timeout &&
		aws.ToInt32(tg.HealthyThresholdCount) == hc.healthy &&
		aws.ToInt32(tg.UnhealthyThresholdCount) == hc.unhealthy
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

func (l *loadBalancers) ensureTargetGroupAttributes(ctx context.Context, cl *clients, arn string, want map[string]string) error {
	if len(want) == 0 {
		return nil
	}
	out, err := cloudapi.Call(ctx, l.c.api, "elbv2.DescribeTargetGroupAttributes", func(ctx context.Context) (*elbv2.DescribeTargetGroupAttributesOutput, error) {
		return cl.elb.DescribeTargetGroupAttributes(ctx, &elbv2.DescribeTargetGroupAttributesInput{TargetGroupArn: aws.String(arn)})
	})
	if err != nil {
		return err
	}
	have := map[string]string{}
	for _, at := range out.Attributes {
		have[aws.ToString(at.Key)] = aws.ToString(at.Value)
	}
	var change []elbtypes.TargetGroupAttribute
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if have[k] != want[k] {
			change = append(change, elbtypes.TargetGroupAttribute{Key: aws.String(k), Value: aws.String(want[k])})
		}
	}
	if len(change) == 0 {
		return nil
	}
	_, err = cloudapi.Call(ctx, l.c.api, "elbv2.ModifyTargetGroupAttributes", func(ctx context.Context) (*elbv2.ModifyTargetGroupAttributesOutput, error) {
		return cl.elb.ModifyTargetGroupAttributes(ctx, &elbv2.ModifyTargetGroupAttributesInput{TargetGroupArn: aws.String(arn), Attributes: change})
	})
	return err
}

// ensureTargets registers the node instances on the node port and
// deregisters the rest.
func (l *loadBalancers) ensureTargets(ctx context.Context, cl *clients, arn string, port int32, ids []string) error {
	out, err := cloudapi.Call(ctx, l.c.api, "elbv2.DescribeTargetHealth", func(ctx context.Context) (*elbv2.DescribeTargetHealthOutput, error) {
		return cl.elb.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: aws.String(arn)})
	})
	if err != nil {
		return err
	}
	type target struct {
		id   string
		port int32
	}
	have := map[target]bool{}
	for _, d := range out.TargetHealthDescriptions {
		if d.Target == nil {
			continue
		}
		if d.TargetHealth != nil && d.TargetHealth.State == elbtypes.TargetHealthStateEnumDraining {
			continue // already on its way out
		}
		have[target{aws.ToString(d.Target.Id), aws.ToInt32(d.Target.Port)}] = true
	}
	want := map[target]bool{}
	for _, id := range ids {
		want[target{id, port}] = true
	}
	add, remove := loadbalancers.Delta(want, have, func(a, b target) int {
		return cmp.Or(strings.Compare(a.id, b.id), cmp.Compare(a.port, b.port))
	})
	describe := func(ts []target) []elbtypes.TargetDescription {
		var out []elbtypes.TargetDescription
		for _, t := range ts {
			out = append(out, elbtypes.TargetDescription{Id: aws.String(t.id), Port: aws.Int32(t.port)})
		}
		return out
	}
	reg, dereg := describe(add), describe(remove)
	if len(reg) > 0 {
		if _, err := cloudapi.Call(ctx, l.c.api, "elbv2.RegisterTargets", func(ctx context.Context) (*elbv2.RegisterTargetsOutput, error) {
			return cl.elb.RegisterTargets(ctx, &elbv2.RegisterTargetsInput{TargetGroupArn: aws.String(arn), Targets: reg})
		}); err != nil {
			return err
		}
	}
	if len(dereg) > 0 {
		if _, err := cloudapi.Call(ctx, l.c.api, "elbv2.DeregisterTargets", func(ctx context.Context) (*elbv2.DeregisterTargetsOutput, error) {
			return cl.elb.DeregisterTargets(ctx, &elbv2.DeregisterTargetsInput{TargetGroupArn: aws.String(arn), Targets: dereg})
		}); err != nil && !cloudapi.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// ensureListeners gives each Service port a listener forwarding to its
// target group, and removes listeners of ports that are gone.
func (l *loadBalancers) ensureListeners(ctx context.Context, cl *clients, lbARN string, spec *nlbSpec, tgs map[string]string) error {
	out, err := cloudapi.Call(ctx, l.c.api, "elbv2.DescribeListeners", func(ctx context.Context) (*elbv2.DescribeListenersOutput, error) {
		return cl.elb.DescribeListeners(ctx, &elbv2.DescribeListenersInput{LoadBalancerArn: aws.String(lbARN)})
	})
	if err != nil {
		return err
	}
	have := map[int32]elbtypes.Listener{}
	for _, ls := range out.Listeners {
		have[aws.ToInt32(ls.Port)] = ls
	}
	for _, want := range spec.listeners {
		tgARN := tgs[want.tg.name]
		action := []elbtypes.Action{{Type: elbtypes.ActionTypeEnumForward, TargetGroupArn: aws.String(tgARN)}}
		var certs []elbtypes.Certificate
		if len(want.certs) > 0 {
			certs = []elbtypes.Certificate{{CertificateArn: aws.String(want.certs[0])}}
		}
		cur, ok := have[want.port]
		delete(have, want.port)
		if !ok {
			in := &elbv2.CreateListenerInput{LoadBalancerArn: aws.String(lbARN), Port: aws.Int32(want.port), Protocol: want.protocol, DefaultActions: action, Certificates: certs}
			if want.sslPolicy != "" {
				in.SslPolicy = aws.String(want.sslPolicy)
			}
			_, err := cloudapi.Call(ctx, l.c.api, "elbv2.CreateListener", func(ctx context.Context) (*elbv2.CreateListenerOutput, error) {
				return cl.elb.CreateListener(ctx, in)
			}, cloudapi.Creates())
			if err != nil && cloudapi.KindOf(err) != cloudapi.KindExists {
				return fmt.Errorf("creating the listener on port %d: %w", want.port, err)
			}
			continue
		}
		if listenerMatches(cur, want, tgARN) {
			continue
		}
		in := &elbv2.ModifyListenerInput{ListenerArn: cur.ListenerArn, Port: aws.Int32(want.port), Protocol: want.protocol, DefaultActions: action, Certificates: certs}
		if want.sslPolicy != "" {
			in.SslPolicy = aws.String(want.sslPolicy)
		}
		if _, err := cloudapi.Call(ctx, l.c.api, "elbv2.ModifyListener", func(ctx context.Context) (*elbv2.ModifyListenerOutput, error) {
			return cl.elb.ModifyListener(ctx, in)
		}); err != nil {
			return fmt.Errorf("updating the listener on port %d: %w", want.port, err)
		}
	}
	for port, ls := range have {
		if _, err := cloudapi.Call(ctx, l.c.api, "elbv2.DeleteListener", func(ctx context.Context) (*elbv2.DeleteListenerOutput, error) {
			return cl.elb.DeleteListener(ctx, &elbv2.DeleteListenerInput{ListenerArn: ls.ListenerArn})
		}); err != nil && !cloudapi.IsNotFound(err) {
			return fmt.Errorf("removing the listener on port %d: %w", port, err)
		}
	}
	return nil
}

func listenerMatches(cur elbtypes.Listener, want listenerSpec, tgARN string) bool {
	if cur.Protocol != want.protocol || len(cur.DefaultActions) != 1 || aws.ToString(cur.DefaultActions[0].TargetGroupArn) != tgARN {
		return false
	}
	if want.protocol != elbtypes.ProtocolEnumTls {
		return true
	}
	return aws.ToString(cur.SslPolicy) == want.sslPolicy && len(cur.Certificates) > 0 && len(want.certs) > 0 &&
		aws.ToString(cur.Certificates[0].CertificateArn) == want.certs[0]
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

// serviceTargetGroups finds the Service's target groups by name prefix,
// confirmed by their tags (a prefix can be shared by another Service).
func (l *loadBalancers) serviceTargetGroups(ctx context.Context, cl *clients, svc *v1.Service, spec *nlbSpec) ([]string, error) {
	prefix := tgName(svc, 0, "", 0)
	prefix = prefix[:strings.LastIndexByte(prefix, '-')+1]
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
			if strings.HasPrefix(aws.ToString(tg.TargetGroupName), prefix) {
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
		if r := l.resource("target group", c.arn, c.name, tags); r.OurCluster && r.Service == spec.service {
			owned = append(owned, c.arn)
		}
	}
	return owned, nil
}
