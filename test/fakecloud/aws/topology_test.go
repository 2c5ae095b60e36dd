package aws

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func topologyByID(out []types.InstanceTopology) map[string]types.InstanceTopology {
	m := map[string]types.InstanceTopology{}
	for _, t := range out {
		m[*t.InstanceId] = t
	}
	return m
}

func TestDescribeInstanceTopology(t *testing.T) {
	s, c := start(t)
	zones := s.AvailabilityZones()
	in := func(typ, zone, group string) Instance {
		return s.AddInstance(Instance{InstanceType: typ, AvailabilityZone: zone, PlacementGroup: group})
	}
	a1 := in("p5.48xlarge", zones[0].Name, "train")
	a2 := in("p5.48xlarge", zones[0].Name, "train")
	b := in("trn1.32xlarge", zones[0].Name, "")
	other := in("hpc7g.16xlarge", zones[1].Name, "")
	deep := in("p6-b200.48xlarge", zones[1].Name, "")
	plain := in("m6i.large", zones[0].Name, "")      // no topology: absent, no error
	stopped := in("p4d.24xlarge", zones[0].Name, "") // not running: absent
	if err := s.SetInstanceState(stopped.ID, InstanceStateStopped); err != nil {
		t.Fatal(err)
	}
	ultra := s.AddInstance(Instance{InstanceType: "p6e-gb200.36xlarge", AvailabilityZone: zones[2].Name, CapacityBlockID: "cr-0123456789abcdef0"})

	all := must[*ec2.DescribeInstanceTopologyOutput](t)(c.ec2.DescribeInstanceTopology(ctx, &ec2.DescribeInstanceTopologyInput{}))
	got := topologyByID(all.Instances)
	if len(got) != 6 || all.NextToken != nil {
		t.Fatalf("topology of %d instances (next %v), want the 6 running ones of supported types: %v", len(got), all.NextToken, slices.Sorted(maps.Keys(got)))
	}
	for _, absent := range []Instance{plain, stopped} {
		if _, ok := got[absent.ID]; ok {
			t.Errorf("%s (%s, %s) listed", absent.ID, absent.InstanceType, absent.State)
		}
	}
	ta := got[a1.ID]
	if !slices.Equal(s.NetworkNodes(a1.ID), ta.NetworkNodes) || s.NetworkNodes(plain.ID) != nil {
		t.Errorf("NetworkNodes() = %v and %v, want %v and nil", s.NetworkNodes(a1.ID), s.NetworkNodes(plain.ID), ta.NetworkNodes)
	}
	if *ta.InstanceType != "p5.48xlarge" || *ta.GroupName != "train" || *ta.AvailabilityZone != zones[0].Name || *ta.ZoneId != zones[0].ID ||
		len(ta.NetworkNodes) != 3 || ta.CapacityBlockId != nil {
		t.Errorf("a1 = %+v", ta)
	}
	for _, n := range ta.NetworkNodes {
		if !validID("nn", n) || len(n) != len("nn-")+17 {
			t.Errorf("network node id %q, want nn- and 17 hex digits", n)
		}
	}
	// The same placement group shares the upper layers; the same zone the
	// top one; another zone nothing.
	ta2, tb, to := got[a2.ID], got[b.ID], got[other.ID]
	if !slices.Equal(ta.NetworkNodes[:2], ta2.NetworkNodes[:2]) {
		t.Errorf("one placement group, different upper layers: %v %v", ta.NetworkNodes, ta2.NetworkNodes)
	}
	if ta.NetworkNodes[0] != tb.NetworkNodes[0] || ta.NetworkNodes[0] == to.NetworkNodes[0] {
		t.Errorf("top layer: zone-mates %s %s, other zone %s", ta.NetworkNodes[0], tb.NetworkNodes[0], to.NetworkNodes[0])
	}
	if n := got[deep.ID].NetworkNodes; len(n) != 4 || n[0] != to.NetworkNodes[0] {
		t.Errorf("p6-b200 nodes = %v, want 4 under the zone's top node %s", n, to.NetworkNodes[0])
	}
	if tu := got[ultra.ID]; awssdk.ToString(tu.CapacityBlockId) != "cr-0123456789abcdef0" || len(tu.NetworkNodes) != 3 {
		t.Errorf("UltraServer instance = %+v", tu)
	}
	// Stable: asked again, by id, the same nodes.
	again := must[*ec2.DescribeInstanceTopologyOutput](t)(c.ec2.DescribeInstanceTopology(ctx, &ec2.DescribeInstanceTopologyInput{
		InstanceIds: []string{a1.ID, plain.ID, stopped.ID}}))
	if len(again.Instances) != 1 || !slices.Equal(again.Instances[0].NetworkNodes, ta.NetworkNodes) {
		t.Errorf("by id = %+v, want only %s with nodes %v", again.Instances, a1.ID, ta.NetworkNodes)
	}

	// Filters and placement groups.
	for _, tc := range []struct {
		name string
		in   ec2.DescribeInstanceTopologyInput
		want []string
	}{
		{"instance family wildcard", ec2.DescribeInstanceTopologyInput{Filters: []types.Filter{{Name: awssdk.String("instance-type"), Values: []string{"p5*"}}}}, []string{a1.ID, a2.ID}},
		{"zone", ec2.DescribeInstanceTopologyInput{Filters: []types.Filter{{Name: awssdk.String("availability-zone"), Values: []string{zones[1].Name}}}}, []string{other.ID, deep.ID}},
		{"zone id", ec2.DescribeInstanceTopologyInput{Filters: []types.Filter{{Name: awssdk.String("zone-id"), Values: []string{zones[2].ID}}}}, []string{ultra.ID}},
		{"group", ec2.DescribeInstanceTopologyInput{GroupNames: []string{"train"}}, []string{a1.ID, a2.ID}},
	} {
		out, err := c.ec2.DescribeInstanceTopology(ctx, &tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		var ids []string
		for _, i := range out.Instances {
			ids = append(ids, *i.InstanceId)
		}
		if !slices.Equal(ids, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, ids, tc.want)
		}
	}

	// Pages of MaxResults, followed by the SDK's paginator.
	p := ec2.NewDescribeInstanceTopologyPaginator(c.ec2, &ec2.DescribeInstanceTopologyInput{MaxResults: awssdk.Int32(4)})
	var pages, total int
	for p.HasMorePages() {
		out := must[*ec2.DescribeInstanceTopologyOutput](t)(p.NextPage(ctx))
		pages++
		total += len(out.Instances)
	}
	if pages != 2 || total != 6 {
		t.Errorf("pages of 4: %d pages, %d instances; want 2 and 6", pages, total)
	}

	for _, bad := range []struct {
		in   ec2.DescribeInstanceTopologyInput
		code string
	}{
		{ec2.DescribeInstanceTopologyInput{InstanceIds: []string{a1.ID}, MaxResults: awssdk.Int32(5)}, "InvalidParameterCombination"},
		{ec2.DescribeInstanceTopologyInput{MaxResults: awssdk.Int32(0)}, "InvalidParameterValue"},
		{ec2.DescribeInstanceTopologyInput{MaxResults: awssdk.Int32(101)}, "InvalidParameterValue"},
		{ec2.DescribeInstanceTopologyInput{InstanceIds: make101IDs()}, "InvalidParameterValue"},
		{ec2.DescribeInstanceTopologyInput{InstanceIds: []string{"i-0123456789abcdef0"}}, "InvalidInstanceID.NotFound"},
		{ec2.DescribeInstanceTopologyInput{Filters: []types.Filter{{Name: awssdk.String("tag:Name"), Values: []string{"x"}}}}, "InvalidParameterValue"},
	} {
		_, err := c.ec2.DescribeInstanceTopology(ctx, &bad.in)
		apiErr(t, err, bad.code, http.StatusBadRequest)
	}

	// Outside the regions AWS lists, the action does not exist.
	s2, _ := start(t)
	s2.SetRegion("eu-south-1")
	c2 := clientsWith(t, s2, "eu-south-1", testAccessKey, testSecretKey, "")
	_, err := c2.ec2.DescribeInstanceTopology(ctx, &ec2.DescribeInstanceTopologyInput{})
	apiErr(t, err, "UnsupportedOperation", http.StatusBadRequest)
}

func make101IDs() []string {
	ids := make([]string, 101)
	for k := range ids {
		ids[k] = fmt.Sprintf("i-%017x", k)
	}
	return ids
}

func TestAWSCLIDescribeInstanceTopology(t *testing.T) {
	needCLI(t)
	t.Parallel()
	s, _ := start(t)
	for range 5 {
		s.AddInstance(Instance{InstanceType: "trn1.32xlarge"})
	}
	s.AddInstance(Instance{InstanceType: "t3.micro"})
	// The CLI follows NextToken itself: 5 instances in pages of 2.
	out, se, code := cli(t, s, "ec2", "describe-instance-topology", "--page-size", "2")
	if code != 0 {
		t.Fatalf("describe-instance-topology: exit %d: %s", code, se)
	}
	insts := out["Instances"].([]any)
	if len(insts) != 5 {
		t.Fatalf("%d instances, want the 5 trn1", len(insts))
	}
	first := insts[0].(map[string]any)
	if nodes := first["NetworkNodes"].([]any); len(nodes) != 3 || !strings.HasPrefix(nodes[0].(string), "nn-") ||
		first["InstanceType"] != "trn1.32xlarge" || first["ZoneId"] == nil || first["AvailabilityZone"] == nil {
		t.Errorf("instance = %v", first)
	}
	out, se, code = cli(t, s, "ec2", "describe-instance-topology", "--filters", "Name=instance-type,Values=t3.*")
	if code != 0 || len(out["Instances"].([]any)) != 0 {
		t.Errorf("t3 filter: exit %d, %v, %s; want no instances and no error", code, out, se)
	}
	_, se, code = cli(t, s, "ec2", "describe-instance-topology", "--instance-ids", "i-0123456789abcdef0", "--max-results", "5")
	failed(t, "instance ids with max results", se, code, "InvalidParameterCombination")
}
