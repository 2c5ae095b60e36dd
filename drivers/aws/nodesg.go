package aws

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// The descriptions of the rules an NLB needs in its nodes' security
// groups, as the AWS CCM writes them: a rule is the load balancer's when
// its description is "<kind>=<load balancer name>". polyccm changes only
// rules with these descriptions, so an operator's own rules stay.
const (
	ruleDescClient = "kubernetes.io/rule/nlb/client"
	ruleDescHealth = "kubernetes.io/rule/nlb/health"
	// One MTU-discovery rule per client source, shared by every NLB of
	// the group (its description names no load balancer).
	ruleDescMTU = "kubernetes.io/rule/nlb/mtu"
)

// nodeRule is one ingress rule of a node security group: one protocol,
// port range and source, with its description.
type nodeRule struct {
	proto    string
	from, to int32
	cidr     string
	desc     string
}

func (r nodeRule) String() string {
	return fmt.Sprintf("%s:%d-%d from %s (%s)", r.proto, r.from, r.to, r.cidr, r.desc)
}

func compareNodeRules(a, b nodeRule) int {
	return cmp.Or(strings.Compare(a.desc, b.desc), strings.Compare(a.proto, b.proto),
		cmp.Compare(a.from, b.from), cmp.Compare(a.to, b.to), strings.Compare(a.cidr, b.cidr))
}

// nodeRulesOf splits a group's permissions into one rule per source.
// Rules naming other groups or prefix lists are never polyccm's and are
// left out.
func nodeRulesOf(perms []ec2types.IpPermission) []nodeRule {
	var out []nodeRule
	for _, p := range perms {
		base := nodeRule{proto: aws.ToString(p.IpProtocol), from: aws.ToInt32(p.FromPort), to: aws.ToInt32(p.ToPort)}
		for _, r := range p.IpRanges {
			x := base
			x.cidr, x.desc = aws.ToString(r.CidrIp), aws.ToString(r.Description)
			out = append(out, x)
		}
		for _, r := range p.Ipv6Ranges {
			x := base
			x.cidr, x.desc = aws.ToString(r.CidrIpv6), aws.ToString(r.Description)
			out = append(out, x)
		}
	}
	return out
}

// nodePermissions turns rules into the permissions EC2 takes, one a rule.
func nodePermissions(rules []nodeRule) []ec2types.IpPermission {
	rules = slices.Clone(rules)
	slices.SortFunc(rules, compareNodeRules)
	out := make([]ec2types.IpPermission, 0, len(rules))
	for _, r := range rules {
		p := ec2types.IpPermission{IpProtocol: aws.String(r.proto), FromPort: aws.Int32(r.from), ToPort: aws.Int32(r.to)}
		if strings.Contains(r.cidr, ":") {
			p.Ipv6Ranges = []ec2types.Ipv6Range{{CidrIpv6: aws.String(r.cidr), Description: aws.String(r.desc)}}
		} else {
			p.IpRanges = []ec2types.IpRange{{CidrIp: aws.String(r.cidr), Description: aws.String(r.desc)}}
		}
		out = append(out, p)
	}
	return out
}

// nodeGroupFor picks the security group of an instance that the load
// balancers' rules go into, by the AWS CCM's rule: the one group tagged
// for the cluster; without one, the instance's only group; otherwise
// none can be chosen, and the error says how to fix it. "" means the
// instance has no group at all.
func nodeGroupFor(instanceID string, groups []ec2types.GroupIdentifier, clusterGroup func(id string) bool) (string, error) {
	var tagged, untagged []string
	for _, g := range groups {
		id := aws.ToString(g.GroupId)
		switch {
		case id == "":
		case clusterGroup(id):
			tagged = append(tagged, id)
		default:
			untagged = append(untagged, id)
		}
	}
	switch {
	case len(tagged) == 1:
		return tagged[0], nil
	case len(tagged) > 1:
		return "", fmt.Errorf("instance %s has %d security groups tagged for the cluster (%s); tag only the one load balancers may open", instanceID, len(tagged), strings.Join(tagged, ", "))
	case len(untagged) == 1:
		return untagged[0], nil
	case len(untagged) > 1:
		return "", fmt.Errorf("instance %s has %d security groups and none is tagged for the cluster (%s); tag the one load balancers may open with kubernetes.io/cluster/<clusterName>", instanceID, len(untagged), strings.Join(untagged, ", "))
	}
	return "", nil
}

// nlbTraffic is what one NLB sends to its nodes.
type nlbTraffic struct {
	lb string
	// clientProto is "udp" when any port is UDP, else "tcp", as upstream.
	clientProto string
	clientPorts []int32 // node ports
	healthPorts []int32 // the ports health checks reach
	// clientCIDRs are the Service's source ranges, or 0.0.0.0/0;
	// healthCIDRs the CIDRs of the NLB's subnets, where health checks
	// come from.
	clientCIDRs, healthCIDRs []string
}

// rules are the NLB's rules in one node group. The health rules are left
// out when the client rules already let them in (every address, TCP, the
// same ports), as upstream does.
func (t nlbTraffic) rules() []nodeRule {
	var out []nodeRule
	add := func(desc, proto string, ports []int32, cidrs []string) {
		for _, p := range ports {
			for _, c := range cidrs {
				out = append(out, nodeRule{proto: proto, from: p, to: p, cidr: c, desc: desc + "=" + t.lb})
			}
		}
	}
	subsumed := len(t.clientCIDRs) == 1 && t.clientCIDRs[0] == "0.0.0.0/0" && t.clientProto == "tcp" &&
		slices.Equal(sortedPorts(t.healthPorts), sortedPorts(t.clientPorts))
	if !subsumed {
		add(ruleDescHealth, "tcp", t.healthPorts, t.healthCIDRs)
	}
	add(ruleDescClient, t.clientProto, t.clientPorts, t.clientCIDRs)
	return dedupRules(out)
}

func sortedPorts(ports []int32) []int32 {
	out := slices.Clone(ports)
	slices.Sort(out)
	return slices.Compact(out)
}

func dedupRules(rules []nodeRule) []nodeRule {
	slices.SortFunc(rules, compareNodeRules)
	return slices.Compact(rules)
}

// nodeGroupChange is what one node group needs: rules to grant and to
// revoke. Only rules with this NLB's descriptions (and the shared MTU
// ones) are ever revoked.
type nodeGroupChange struct {
	grant, revoke []nodeRule
}

func (c nodeGroupChange) empty() bool { return len(c.grant) == 0 && len(c.revoke) == 0 }

// planNodeGroup compares a node group's rules with what the NLB wants in
// it (nothing, for a group no target uses any more or an NLB being
// deleted). The MTU-discovery rules (ICMP "fragmentation needed", type 3
// code 4) follow the client rules of every NLB left in the group.
func planNodeGroup(lb string, current, want []nodeRule) nodeGroupChange {
	var ch nodeGroupChange
	mine := func(r nodeRule) bool {
		return r.desc == ruleDescClient+"="+lb || r.desc == ruleDescHealth+"="+lb
	}
	has := func(rules []nodeRule, r nodeRule) bool { return slices.Contains(rules, r) }
	// A rule with the same protocol, ports and source but another
	// description already lets the traffic in; EC2 would refuse the
	// duplicate.
	allowed := func(r nodeRule) bool {
		return slices.ContainsFunc(current, func(c nodeRule) bool {
			return c.proto == r.proto && c.from == r.from && c.to == r.to && c.cidr == r.cidr
		})
	}
	for _, r := range want {
		if !has(current, r) && !allowed(r) {
			ch.grant = append(ch.grant, r)
		}
	}
	var after []nodeRule
	for _, r := range current {
		if mine(r) && !has(want, r) {
			ch.revoke = append(ch.revoke, r)
			continue
		}
		after = append(after, r)
	}
	after = append(after, ch.grant...)

	m := planMTU(current, after)
	ch.grant, ch.revoke = append(ch.grant, m.grant...), append(ch.revoke, m.revoke...)
	ch.grant, ch.revoke = dedupRules(ch.grant), dedupRules(ch.revoke)
	return ch
}

// planMTU is the change that makes a group's MTU-discovery rules (ICMP
// "fragmentation needed", type 3 code 4) match the client rules it will
// hold (after), given the rules it holds now.
func planMTU(current, after []nodeRule) nodeGroupChange {
	var ch nodeGroupChange
	var mtu []nodeRule
	for _, r := range after {
		if strings.HasPrefix(r.desc, ruleDescClient+"=") {
			mtu = append(mtu, nodeRule{proto: "icmp", from: 3, to: 4, cidr: r.cidr, desc: ruleDescMTU})
		}
	}
	mtu = dedupRules(mtu)
	for _, r := range mtu {
		// Any rule with this protocol, type and source lets it in already.
		if !slices.ContainsFunc(current, func(c nodeRule) bool {
			return c.proto == r.proto && c.from == r.from && c.to == r.to && c.cidr == r.cidr
		}) {
			ch.grant = append(ch.grant, r)
		}
	}
	for _, r := range current {
		if r.desc == ruleDescMTU && !slices.Contains(mtu, r) {
			ch.revoke = append(ch.revoke, r)
		}
	}
	return ch
}

// nodeGroups are the node security groups an NLB's rules may be in: the
// cluster's (tagged) groups and the groups its targets use, with their
// rules, as observed.
type nodeGroups struct {
	rules map[string][]nodeRule // by group ID
	want  map[string]bool       // the groups of the NLB's targets
	// of is each target's group ("" none) and tagged the cluster's
	// groups, which the node-only sync reuses (lbnodes.go).
	of     map[string]string
	tagged map[string]bool
}

// observeNodeGroups reads the cluster's node groups and picks the group of
// each target instance. A group that cannot be chosen (several tagged)
// is an error naming the instance: opening the wrong group would be
// worse than waiting for the operator.
func (l *loadBalancers) observeNodeGroups(ctx context.Context, cl *clients, vpc string, targets []string) (*nodeGroups, error) {
	ng := &nodeGroups{rules: map[string][]nodeRule{}, want: map[string]bool{}, of: map[string]string{}, tagged: map[string]bool{}}
	tagged, err := l.clusterGroups(ctx, cl, vpc)
	if err != nil {
		return nil, err
	}
	for _, sg := range tagged {
		ng.rules[aws.ToString(sg.GroupId)] = nodeRulesOf(sg.IpPermissions)
		ng.tagged[aws.ToString(sg.GroupId)] = true
	}
	for chunk := range slices.Chunk(targets, filterChunk) {
		insts, err := l.c.describeInstances(ctx, cl, []ec2types.Filter{{Name: aws.String("instance-id"), Values: chunk}})
		if err != nil {
			return nil, err
		}
		for _, in := range insts {
			id, err := nodeGroupFor(aws.ToString(in.InstanceId), in.SecurityGroups, func(id string) bool { _, ok := ng.rules[id]; return ok })
			if err != nil {
				return nil, err
			}
			ng.of[aws.ToString(in.InstanceId)] = id
			if id != "" {
				ng.want[id] = true
			}
		}
	}
	// An untagged group a target uses alone (the AWS CCM allows it, for
	// clusters from before the tag): read it too.
	var untagged []string
	for id := range ng.want {
		if _, ok := ng.rules[id]; !ok {
			untagged = append(untagged, id)
		}
	}
	if len(untagged) > 0 {
		slices.Sort(untagged)
		sgs, err := l.describeGroups(ctx, cl, &ec2.DescribeSecurityGroupsInput{GroupIds: untagged})
		if err != nil {
			return nil, err
		}
		for _, sg := range sgs {
			ng.rules[aws.ToString(sg.GroupId)] = nodeRulesOf(sg.IpPermissions)
		}
	}
	return ng, nil
}

// clusterGroups are the VPC's security groups tagged for the cluster.
func (l *loadBalancers) clusterGroups(ctx context.Context, cl *clients, vpc string) ([]ec2types.SecurityGroup, error) {
	sgs, err := l.describeGroups(ctx, cl, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{
		{Name: aws.String("vpc-id"), Values: []string{vpc}},
		{Name: aws.String("tag-key"), Values: []string{l.c.clusterTag()}},
	}})
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(sgs, func(sg ec2types.SecurityGroup) bool { return !l.c.ec2Tagged(sg.Tags) }), nil
}

func (l *loadBalancers) describeGroups(ctx context.Context, cl *clients, in *ec2.DescribeSecurityGroupsInput) ([]ec2types.SecurityGroup, error) {
	var all []ec2types.SecurityGroup
	for {
		out, err := cloudapi.Call(ctx, l.c.api, "ec2.DescribeSecurityGroups", func(ctx context.Context) (*ec2.DescribeSecurityGroupsOutput, error) {
			return cl.ec2.DescribeSecurityGroups(ctx, in)
		})
		if err != nil {
			return nil, err
		}
		all = append(all, out.SecurityGroups...)
		if aws.ToString(out.NextToken) == "" {
			return all, nil
		}
		in.NextToken = out.NextToken
	}
}

// nlbTrafficOf is what the Service's NLB sends to its nodes: its node
// ports from its source ranges (everyone when none), and its health
// checks from its subnets.
func nlbTrafficOf(spec *nlbSpec, subnets []subnet) nlbTraffic {
	t := nlbTraffic{lb: spec.name, clientProto: "tcp"}
	for _, ls := range spec.listeners {
		t.clientPorts = append(t.clientPorts, ls.tg.port)
		hc := ls.tg.port
		if p, err := strconv.Atoi(spec.healthCheck.port); err == nil {
			hc = int32(p)
		}
		t.healthPorts = append(t.healthPorts, hc)
		if ls.tg.protocol == elbtypes.ProtocolEnumUdp || ls.tg.protocol == elbtypes.ProtocolEnumTcpUdp {
			t.clientProto = "udp"
		}
	}
	t.clientPorts, t.healthPorts = sortedPorts(t.clientPorts), sortedPorts(t.healthPorts)
	// Upstream opens nodes to IPv4 clients only when no range is given.
	t.clientCIDRs = slices.DeleteFunc(slices.Clone(spec.sources), func(c string) bool { return c == "::/0" })
	for _, s := range subnets {
		if s.cidr != "" {
			t.healthCIDRs = append(t.healthCIDRs, s.cidr)
		}
	}
	slices.Sort(t.healthCIDRs)
	t.healthCIDRs = slices.Compact(t.healthCIDRs)
	return t
}

// planNodeGroups adds a change for each node group whose rules for this
// NLB differ: its targets' groups get the traffic rules, every other
// cluster group loses them. want nil takes them out everywhere (the NLB
// is being deleted).
func planNodeGroups(p *loadbalancers.Plan, lb string, want []nodeRule, ng *nodeGroups, ap *applier) {
	for _, id := range slices.Sorted(maps.Keys(ng.rules)) {
		var w []nodeRule
		if ng.want[id] {
			w = want
		}
		ch := planNodeGroup(lb, ng.rules[id], w)
		if ch.empty() {
			continue
		}
		p.Add(change{Action: loadbalancers.Update, Kind: kindNodeSG, Name: id, Fields: nodeRuleFields(ch),
			Apply: ap.run(func(ctx context.Context, a *applier) error { return a.l.updateNodeGroup(ctx, a.cl, id, ch) })})
	}
}

func nodeRuleFields(ch nodeGroupChange) []field {
	show := func(rules []nodeRule) string {
		if len(rules) == 0 {
			return "none"
		}
		parts := make([]string, len(rules))
		for i, r := range rules {
			parts[i] = r.String()
		}
		return strings.Join(parts, ", ")
	}
	var out []field
	if len(ch.grant) > 0 {
		out = append(out, field{Name: "IngressGranted", From: "none", To: show(ch.grant)})
	}
	if len(ch.revoke) > 0 {
		out = append(out, field{Name: "IngressRevoked", From: show(ch.revoke), To: "none"})
	}
	return out
}

// updateNodeGroup revokes, then grants, this NLB's rules; then brings the
// shared MTU-discovery rules in line with the client rules the group holds
// now, read afresh. Changes to one group are made one at a time: the MTU
// rules follow every NLB of the group, and two NLBs deleted together must
// not each keep them for the other. A rule already gone or already there
// is no error: another sync (or the operator) got there first.
func (l *loadBalancers) updateNodeGroup(ctx context.Context, cl *clients, id string, ch nodeGroupChange) error {
	mu := l.groupLock(id)
	mu.Lock()
	defer mu.Unlock()
	notMTU := func(r nodeRule) bool { return r.desc != ruleDescMTU }
	own := nodeGroupChange{grant: filterRules(ch.grant, notMTU), revoke: filterRules(ch.revoke, notMTU)}
	if err := l.changeNodeGroup(ctx, cl, id, own); err != nil {
		return err
	}
	sgs, err := l.describeGroups(ctx, cl, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{id}})
	if err != nil {
		return err
	}
	if len(sgs) == 0 {
		return nil
	}
	current := nodeRulesOf(sgs[0].IpPermissions)
	return l.changeNodeGroup(ctx, cl, id, planMTU(current, current))
}

func filterRules(rules []nodeRule, keep func(nodeRule) bool) []nodeRule {
	var out []nodeRule
	for _, r := range rules {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// groupLock is the in-process lock of one node group.
func (l *loadBalancers) groupLock(id string) *sync.Mutex {
	mu, _ := l.groupLocks.LoadOrStore(id, &sync.Mutex{})
	return mu.(*sync.Mutex)
}

func (l *loadBalancers) changeNodeGroup(ctx context.Context, cl *clients, id string, ch nodeGroupChange) error {
	if len(ch.revoke) > 0 {
		_, err := cloudapi.Call(ctx, l.c.api, "ec2.RevokeSecurityGroupIngress", func(ctx context.Context) (*ec2.RevokeSecurityGroupIngressOutput, error) {
			return cl.ec2.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(id), IpPermissions: nodePermissions(ch.revoke)})
		})
		if err != nil && !cloudapi.IsNotFound(err) {
			return fmt.Errorf("revoking the load balancer's rules from node security group %s: %w", id, err)
		}
	}
	if len(ch.grant) > 0 {
		_, err := cloudapi.Call(ctx, l.c.api, "ec2.AuthorizeSecurityGroupIngress", func(ctx context.Context) (*ec2.AuthorizeSecurityGroupIngressOutput, error) {
			return cl.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(id), IpPermissions: nodePermissions(ch.grant)})
		})
		if err != nil && cloudapi.KindOf(err) != cloudapi.KindExists {
			return fmt.Errorf("letting the load balancer into node security group %s: %w", id, err)
		}
	}
	return nil
}

// revokeNodeRules takes a deleted NLB's rules out of every group they may
// be in: the cluster's tagged groups, and every group of every Node's
// instance, since a sync puts them into the instance's only group when
// none is tagged (the AWS CCM looks in the tagged groups only, and leaves
// them there). Only rules with this NLB's descriptions are revoked, so
// reading more groups than the sync chose can take nothing else.
func (l *loadBalancers) revokeNodeRules(ctx context.Context, cl *clients, vpc, lb string) error {
	if l.c.cfg.DisableSecurityGroupIngress {
		return nil
	}
	ng := &nodeGroups{rules: map[string][]nodeRule{}}
	tagged, err := l.clusterGroups(ctx, cl, vpc)
	if err != nil {
		return err
	}
	for _, sg := range tagged {
		ng.rules[aws.ToString(sg.GroupId)] = nodeRulesOf(sg.IpPermissions)
	}
	ids, err := l.nodeInstanceIDs()
	if err != nil {
		return err
	}
	var more []string
	for chunk := range slices.Chunk(ids, filterChunk) {
		insts, err := l.c.describeInstances(ctx, cl, []ec2types.Filter{{Name: aws.String("instance-id"), Values: chunk}})
		if err != nil {
			return err
		}
		for _, in := range insts {
			for _, g := range in.SecurityGroups {
				if id := aws.ToString(g.GroupId); id != "" && ng.rules[id] == nil && !slices.Contains(more, id) {
					more = append(more, id)
				}
			}
		}
	}
	if len(more) > 0 {
		slices.Sort(more)
		sgs, err := l.describeGroups(ctx, cl, &ec2.DescribeSecurityGroupsInput{GroupIds: more})
		if err != nil {
			return err
		}
		for _, sg := range sgs {
			ng.rules[aws.ToString(sg.GroupId)] = nodeRulesOf(sg.IpPermissions)
		}
	}
	var p loadbalancers.Plan
	planNodeGroups(&p, lb, nil, ng, &applier{l: l, cl: cl})
	return p.Apply(ctx)
}

// nodeInstanceIDs are the instances of the cluster's Nodes.
func (l *loadBalancers) nodeInstanceIDs() ([]string, error) {
	if l.c.nodes == nil {
		return nil, nil
	}
	nodes, err := l.c.nodes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	ids, _ := targetNodes(nodes, nil)
	return ids, nil
}
