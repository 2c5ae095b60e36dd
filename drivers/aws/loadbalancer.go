package aws

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// deletePollInterval is how soon a Service whose cloud resources are
// still being released is looked at again.
const deletePollInterval = 5 * time.Second

// consistencyRetry is how soon a Service waiting on EC2's eventual
// consistency (a group just created, not yet readable) is looked at again.
const consistencyRetry = 2 * time.Second

// loadBalancers implements cloudprovider.LoadBalancer with one Network
// Load Balancer per Service: a security group for its source ranges, one
// target group per port with the nodes' instances on the node port, and a
// listener per port.
type loadBalancers struct {
	c   *Cloud
	own *loadbalancers.Ownership
}

var _ cloudprovider.LoadBalancer = (*loadBalancers)(nil)

// LoadBalancer returns the NLB implementation.
func (c *Cloud) LoadBalancer() cloudprovider.LoadBalancer { return c.lbs }

// elsewhere reports Services the AWS Load Balancer Controller handles.
func elsewhere(svc *v1.Service) bool {
	t := strings.ToLower(strings.TrimSpace(svc.Annotations[AnnType]))
	return t == "external" || t == "nlb-ip"
}

func (l *loadBalancers) GetLoadBalancerName(_ context.Context, _ string, svc *v1.Service) string {
	return lbName(svc)
}

// GetLoadBalancer reports the NLB; exists is false only when AWS says
// there is none.
func (l *loadBalancers) GetLoadBalancer(ctx context.Context, _ string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	if elsewhere(svc) {
		return nil, false, nil
	}
	cl, err := l.c.client(ctx)
	if err != nil {
		return nil, false, err
	}
	lb, err := l.findLB(ctx, cl, lbName(svc))
	if err != nil {
		return nil, false, err
	}
	if lb != nil {
		return lbStatus(lb), true, nil
	}
	// The service controller calls EnsureLoadBalancerDeleted only when
	// this says exists: a half-deleted set must still count.
	left, err := l.leftovers(ctx, cl, svc)
	if err != nil || !left {
		return nil, false, err
	}
	return &v1.LoadBalancerStatus{}, true, nil
}

// leftovers reports whether the Service's security group or target groups
// remain without its NLB.
func (l *loadBalancers) leftovers(ctx context.Context, cl *clients, svc *v1.Service) (bool, error) {
	spec := &nlbSpec{name: lbName(svc), service: svc.Namespace + "/" + svc.Name}
	vpc, err := l.c.vpcID(ctx, cl)
	if err != nil {
		return false, err
	}
	sg, err := l.findSecurityGroup(ctx, cl, vpc, sgName(spec))
	if err != nil || sg != nil {
		return sg != nil, err
	}
	tgs, err := l.serviceTargetGroups(ctx, cl, svc, spec)
	return len(tgs) > 0, err
}

// UpdateLoadBalancer follows node changes. core/loadbalancers.Rules runs
// it without creates: it never makes an NLB.
func (l *loadBalancers) UpdateLoadBalancer(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) error {
	_, err := l.ensure(ctx, svc, nodes)
	return err
}

// EnsureLoadBalancer creates or converges the Service's NLB and everything
// around it. Invalid settings change nothing.
func (l *loadBalancers) EnsureLoadBalancer(ctx context.Context, _ string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	return l.ensure(ctx, svc, nodes)
}

func (l *loadBalancers) ensure(ctx context.Context, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	if elsewhere(svc) {
		return nil, cloudprovider.ImplementedElsewhere
	}
	a := LBAnnotations.Parse(svc)
	spec := desiredNLB(svc, a, l.c.cluster)
	// Problems so far stop here; ignored annotations are said once, below,
	// with what the subnets add.
	if a.Err() != nil {
		return nil, a.Report(l.c.deps.Recorder)
	}
	// Fixed addresses are one NLB's at a time: another Service's are
	// refused here, naming it, before AWS would refuse them anyway.
	if err := l.own.CheckAddresses(ctx, svc, AnnEIPAllocations+" or "+AnnPrivateIPv4Addresses, slices.Concat(spec.eips, spec.privateIPs), fixedAddresses); err != nil {
		return nil, err
	}
	cl, err := l.c.client(ctx)
	if err != nil {
		return nil, err
	}
	vpc, err := l.c.vpcID(ctx, cl)
	if err != nil {
		return nil, err
	}
	subnets, err := l.subnets(ctx, cl, vpc, spec, a)
	if err != nil {
		return nil, err
	}
	if err := a.Report(l.c.deps.Recorder); err != nil {
		return nil, err
	}
	targets, skipped := targetNodes(nodes, spec.nodeLabels)
	if len(skipped) > 0 {
		klog.V(2).InfoS("Nodes without an AWS providerID are not targets yet", "service", klog.KObj(svc), "nodes", skipped)
	}

	lb, err := l.findLB(ctx, cl, spec.name)
	if err != nil {
		return nil, err
	}
	if lb == nil && !cloudapi.MayCreate(ctx) {
		// A node sync: no NLB, nothing to follow the nodes.
		return nil, cloudapi.ErrCreateSkipped
	}
	if lb != nil {
		if _, err := l.checkOwned(ctx, cl, svc, "load balancer", aws.ToString(lb.LoadBalancerArn), spec.name); err != nil {
			return nil, err
		}
	}
	sg := ""
	if lb != nil && len(lb.SecurityGroups) == 0 {
		// An NLB made without security groups (the AWS CCM's default) can
		// never get one: adopt it as it is, and say what that costs.
		if len(svc.Spec.LoadBalancerSourceRanges) > 0 && l.c.deps.Recorder != nil {
			l.c.deps.Recorder.Eventf(svc, v1.EventTypeWarning, "SourceRangesNotEnforced",
				"load balancer %s was created without security groups, so loadBalancerSourceRanges cannot be enforced on it; restrict the nodes' security groups, or delete and recreate the Service to get an NLB with a managed security group", spec.name)
		}
	} else if sg, err = l.ensureSecurityGroup(ctx, cl, svc, vpc, spec); err != nil {
		return nil, err
	}
	if lb == nil {
		if lb, err = l.createLB(ctx, cl, svc, spec, subnets, sg); err != nil {
			return nil, err
		}
	} else if err := l.convergeLB(ctx, cl, lb, spec, subnets, sg); err != nil {
		return nil, err
	}
	arn := aws.ToString(lb.LoadBalancerArn)
	if err := l.ensureLBAttributes(ctx, cl, arn, spec); err != nil {
		return nil, err
	}
	attached, err := l.attachedTargetGroups(ctx, cl, arn)
	if err != nil {
		return nil, err
	}
	tgs, err := l.ensureTargetGroups(ctx, cl, svc, vpc, spec, targets)
	if err != nil {
		return nil, err
	}
	if err := l.ensureListeners(ctx, cl, arn, spec, tgs); err != nil {
		return nil, err
	}
	// Target groups that listeners no longer use (a port went away or
	// changed protocol).
	for _, tg := range attached {
		if !slices.Contains(slices.Collect(maps.Values(tgs)), tg) {
			if err := l.deleteTargetGroup(ctx, cl, tg); err != nil {
				return nil, err
			}
		}
	}
	return lbStatus(lb), nil
}
