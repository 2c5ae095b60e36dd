package aws

import (
	"context"
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/annotations"
)

// The security groups a Service names in security-groups and
// extra-security-groups are put on its load balancer, and the first one
// (a Classic Load Balancer's) is let into the nodes' groups with "every
// protocol from that group", as the AWS CCM does. Two rules keep one
// Service from reaching another's load balancer through them:
//   - a group that is another Service's managed group (by its tags, its
//     name or its description) is refused, with a Warning event;
//   - the node rule for a named group is revoked (when the Service stops
//     naming it, or is deleted) only while no other Service's load
//     balancer uses that group, and only in its upstream form (no
//     description): an operator's own rule naming the group stays.

// classicSGNameRE matches the managed group of any Classic Load Balancer.
var classicSGNameRE = regexp.MustCompile(`^k8s-elb-a[0-9a-f]{31}$`)

// checkNamedGroups reads the groups the Service names and refuses, in a,
// those that do not exist in the VPC and those that are another Service's
// managed group.
func (l *loadBalancers) checkNamedGroups(ctx context.Context, cl *clients, vpc string, svc *v1.Service, named map[string][]string, a *annotations.Values) (map[string]ec2types.SecurityGroup, error) {
	var ids []string
	for _, list := range named {
		ids = append(ids, list...)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	found := map[string]ec2types.SecurityGroup{}
	if len(ids) == 0 {
		return found, nil
	}
	// A filter, not GroupIds: one missing ID would fail the whole call.
	sgs, err := l.describeGroups(ctx, cl, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{
		{Name: aws.String("vpc-id"), Values: []string{vpc}},
		{Name: aws.String("group-id"), Values: ids},
	}})
	if err != nil {
		return nil, err
	}
	for _, sg := range sgs {
		found[aws.ToString(sg.GroupId)] = sg
	}
	for _, ann := range slices.Sorted(func(yield func(string) bool) {
		for k := range named {
			if !yield(k) {
				return
			}
		}
	}) {
		for _, id := range named[ann] {
			sg, ok := found[id]
			if !ok {
				a.Fail(ann, "no security group %s in %s; name groups of the cluster's VPC", annotations.Quote(id), vpc)
				continue
			}
			if owner := l.managedGroupOwner(sg, svc); owner != "" {
				a.Fail(ann, "security group %s (%s) is %s's managed load balancer group, which this Service may not use; name a group of your own", id, aws.ToString(sg.GroupName), owner)
			}
		}
	}
	return found, nil
}

// managedGroupOwner names the other Service (or "another Service") whose
// managed load balancer group sg is; "" when it is not one, or is svc's.
func (l *loadBalancers) managedGroupOwner(sg ec2types.SecurityGroup, svc *v1.Service) string {
	me := svc.Namespace + "/" + svc.Name
	name, desc := aws.ToString(sg.GroupName), aws.ToString(sg.Description)
	if owner := ec2TagMap(sg.Tags)[TagServiceName]; owner != "" && owner != me {
		return "Service " + owner
	}
	mine := name == classicSGName(lbName(svc)) || name == sgName(l.c.clusterName(), svc) || name == legacySGName(svc)
	if mine {
		return ""
	}
	switch {
	case classicSGNameRE.MatchString(name):
		return "another Service"
	case strings.HasPrefix(desc, "Security group for Kubernetes ELB "):
		if _, owner, ok := strings.Cut(strings.TrimSuffix(desc, ")"), " ("); ok && owner != me {
			return "Service " + owner
		}
		return "another Service"
	case desc == sgDescription:
		return "another Service"
	}
	return ""
}

// lbGroupOf is the group a Classic Service lets into its nodes' groups,
// by ID when it names one, else by its managed group's name.
func lbGroupOf(svc *v1.Service) (id, name string) {
	for _, g := range strings.Split(svc.Annotations[AnnSecurityGroups], ",") {
		if g = strings.TrimSpace(g); g != "" {
			return g, ""
		}
	}
	return "", classicSGName(lbName(svc))
}

// groupUsers are the other Services whose Classic Load Balancer lets group
// (id, name) into its nodes: while any is there, its rule stays.
func (l *loadBalancers) groupUsers(id, name string, except *v1.Service) []string {
	if l.c.services == nil {
		return nil
	}
	svcs, err := l.c.services.List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range svcs {
		if s.UID == except.UID || s.Spec.Type != v1.ServiceTypeLoadBalancer || s.DeletionTimestamp != nil || elsewhere(s) || !l.wantsClassic(s) {
			continue
		}
		gid, gname := lbGroupOf(s)
		if (gid != "" && gid == id) || (gname != "" && gname == name) {
			out = append(out, s.Namespace+"/"+s.Name)
		}
	}
	slices.Sort(out)
	return out
}

// releaseNamedGroup takes the rule letting a group the Service named (and
// no longer does, or is deleted) into node groups out of them: the rule
// in its upstream form only, and only while no other Service uses the
// group.
func (l *loadBalancers) releaseNamedGroup(ctx context.Context, cl *clients, vpc string, svc *v1.Service, id string) error {
	if l.c.cfg.DisableSecurityGroupIngress || id == "" {
		return nil
	}
	if users := l.groupUsers(id, "", svc); len(users) > 0 {
		klog.V(2).InfoS("Keeping the node rule of a security group other Services use", "service", klog.KObj(svc), "group", id, "services", users)
		return nil
	}
	sgs, err := l.groupsLetting(ctx, cl, vpc, id)
	if err != nil {
		return err
	}
	for _, sg := range sgs {
		for _, p := range sg.IpPermissions {
			if !isGroupRule(p, id) || !slices.ContainsFunc(p.UserIdGroupPairs, func(g ec2types.UserIdGroupPair) bool {
				return aws.ToString(g.GroupId) == id && aws.ToString(g.Description) == ""
			}) {
				continue
			}
			if err := l.revokeGroupRule(ctx, cl, aws.ToString(sg.GroupId), id); err != nil {
				return err
			}
			klog.InfoS("Revoked the node rule of a security group the Service no longer names", "service", klog.KObj(svc), "group", id, "nodeGroup", aws.ToString(sg.GroupId))
		}
	}
	return nil
}
