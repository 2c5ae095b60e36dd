package aws

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// The group the rules go into, by the AWS CCM's findSecurityGroupForInstance
// (pkg/providers/v1/aws.go): the one cluster-tagged group, else the only
// group, else an error naming the groups.
func TestNodeGroupFor(t *testing.T) {
	g := func(ids ...string) []ec2types.GroupIdentifier {
		var out []ec2types.GroupIdentifier
		for _, id := range ids {
			out = append(out, ec2types.GroupIdentifier{GroupId: aws.String(id)})
		}
		return out
	}
	tagged := func(id string) bool { return strings.HasPrefix(id, "sg-tag") }
	for _, c := range []struct {
		groups []ec2types.GroupIdentifier
		want   string
		err    string
	}{
		{g("sg-other", "sg-tag1"), "sg-tag1", ""},
		{g("sg-only"), "sg-only", ""},
		{g("sg-tag1", "sg-tag2"), "", "2 security groups tagged for the cluster (sg-tag1, sg-tag2)"},
		{g("sg-a", "sg-b"), "", "none is tagged for the cluster"},
		{nil, "", ""},
	} {
		got, err := nodeGroupFor("i-0123", c.groups, tagged)
		if got != c.want || (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("groups %v: %q, %v; want %q, %q", c.groups, got, err, c.want, c.err)
		}
	}
}

// What upstream's updateInstanceSecurityGroupsForNLB writes
// (pkg/providers/v1/aws_loadbalancer.go): client rules per node port and
// source with "kubernetes.io/rule/nlb/client=<lb>", health rules from the
// subnets' CIDRs unless the client rules already cover them, and one
// ICMP 3/4 MTU rule per client source.
func TestNLBNodeRules(t *testing.T) {
	open := nlbTraffic{lb: "lb1", clientProto: "tcp", clientPorts: []int32{30080}, healthPorts: []int32{30080},
		clientCIDRs: []string{"0.0.0.0/0"}, healthCIDRs: []string{"10.0.0.0/20", "10.0.16.0/20"}}
	if got := open.rules(); len(got) != 1 || got[0] != (nodeRule{"tcp", 30080, 30080, "0.0.0.0/0", "kubernetes.io/rule/nlb/client=lb1"}) {
		t.Errorf("open TCP on the health port: %v; want the client rule alone", got)
	}
	local := open
	local.healthPorts = []int32{31999} // externalTrafficPolicy: Local
	local.clientCIDRs = []string{"203.0.113.0/24"}
	want := []nodeRule{
		{"tcp", 30080, 30080, "203.0.113.0/24", "kubernetes.io/rule/nlb/client=lb1"},
		{"tcp", 31999, 31999, "10.0.0.0/20", "kubernetes.io/rule/nlb/health=lb1"},
		{"tcp", 31999, 31999, "10.0.16.0/20", "kubernetes.io/rule/nlb/health=lb1"},
	}
	if got := local.rules(); !slices.Equal(got, want) {
		t.Errorf("source ranges and a health port:\n got %v\nwant %v", got, want)
	}

	// Converging a group: the operator's rule and another NLB's stay; this
	// NLB's stale rule goes; MTU follows the client sources left.
	current := []nodeRule{
		{"tcp", 22, 22, "10.0.0.0/8", "ssh"},
		{"tcp", 30090, 30090, "0.0.0.0/0", "kubernetes.io/rule/nlb/client=lb2"},
		{"icmp", 3, 4, "0.0.0.0/0", ruleDescMTU},
		{"tcp", 30070, 30070, "0.0.0.0/0", "kubernetes.io/rule/nlb/client=lb1"},
	}
	ch := planNodeGroup("lb1", current, local.rules())
	wantGrant := dedupRules(append(local.rules(), nodeRule{"icmp", 3, 4, "203.0.113.0/24", ruleDescMTU}))
	if !slices.Equal(ch.grant, wantGrant) {
		t.Errorf("grant\n got %v\nwant %v", ch.grant, wantGrant)
	}
	if want := []nodeRule{current[3]}; !slices.Equal(ch.revoke, want) {
		t.Errorf("revoke %v, want %v (lb2's client rule keeps the 0.0.0.0/0 MTU rule)", ch.revoke, want)
	}
	// Converged: nothing to do.
	after := append(slices.Clone(current[:3]), wantGrant...)
	if ch := planNodeGroup("lb1", after, local.rules()); !ch.empty() {
		t.Errorf("a converged group changes: %+v", ch)
	}
	// The NLB goes: its rules and the MTU rule only it needed go; the
	// rest stays.
	ch = planNodeGroup("lb1", after, nil)
	wantRevoke := dedupRules(append(local.rules(), nodeRule{"icmp", 3, 4, "203.0.113.0/24", ruleDescMTU}))
	if len(ch.grant) != 0 || !slices.Equal(ch.revoke, wantRevoke) {
		t.Errorf("deleting: grant %v revoke\n %v\nwant %v", ch.grant, ch.revoke, wantRevoke)
	}
	// Traffic an operator's rule already lets in is not granted again:
	// EC2 refuses a duplicate rule whatever its description.
	hand := []nodeRule{{"tcp", 30080, 30080, "0.0.0.0/0", "opened by hand"}, {"icmp", 3, 4, "0.0.0.0/0", "by hand too"}}
	if ch := planNodeGroup("lb1", hand, open.rules()); !ch.empty() {
		t.Errorf("rules an operator wrote are granted again: %+v", ch)
	}
}

// Permissions read from EC2 split into one rule per source, and back.
func TestNodeRulesRoundTrip(t *testing.T) {
	rules := []nodeRule{
		{"tcp", 30080, 30080, "0.0.0.0/0", "kubernetes.io/rule/nlb/client=lb1"},
		{"tcp", 30080, 30080, "::/0", "kubernetes.io/rule/nlb/client=lb1"},
		{"icmp", 3, 4, "0.0.0.0/0", ruleDescMTU},
	}
	got := dedupRules(nodeRulesOf(nodePermissions(rules)))
	if !slices.Equal(got, dedupRules(slices.Clone(rules))) {
		t.Errorf("round trip %v, want %v", got, rules)
	}
}
