package aws_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	awsccm "github.com/polyccm/polyccm/drivers/aws"
	fakeaws "github.com/polyccm/polyccm/test/fakecloud/aws"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

// Nodes of instance types with a network topology get the AWS CCM's
// topology.k8s.aws/network-node-layer-N labels, from DescribeInstanceTopology
// asked a hundred instances at a time; other types get none, and are asked
// about once.
func TestTopologyLabels(t *testing.T) {
	w := newWorld(t)
	e := w.env(w.config())
	var nodes []*v1.Node
	typeOf := map[string]string{}
	for i := range 150 {
		typ := "p5.48xlarge"
		if i%3 == 0 {
			typ = "m6i.large"
		}
		in := w.fake.AddInstance(fakeaws.Instance{SubnetID: w.private[[]string{zoneA, zoneB}[i%2]].ID, InstanceType: typ})
		n := node(in, nil)
		nodes = append(nodes, n)
		typeOf[n.Name] = typ
	}
	mds := make([]*cloudprovider.InstanceMetadata, len(nodes))
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() { mds[i], errs[i] = e.inst.InstanceMetadata(ctx(t), n) })
	}
	wg.Wait()
	for i, n := range nodes {
		if errs[i] != nil {
			t.Fatalf("%s: %v", n.Name, errs[i])
		}
		l := mds[i].AdditionalLabels
		has := l[awsccm.LabelNetworkNodePrefix+"1"] != "" && l[awsccm.LabelNetworkNodePrefix+"3"] != ""
		if want := typeOf[n.Name] == "p5.48xlarge"; has != want || (want && !strings.HasPrefix(l[awsccm.LabelNetworkNodePrefix+"1"], "nn-")) {
			t.Errorf("%s (%s): labels %v; want network node labels: %v", n.Name, typeOf[n.Name], l, want)
		}
	}
	// 100 p5 Nodes and one m6i probe: two calls of at most 100.
	if n := w.calls("DescribeInstanceTopology"); n < 2 || n > 3 {
		t.Errorf("%d DescribeInstanceTopology calls for 100 p5 and 50 m6i instances; want 2 (3 if the batches split)", n)
	}
	before := w.calls("DescribeInstanceTopology")
	w.fake.AddInstance(fakeaws.Instance{SubnetID: w.private[zoneA].ID, InstanceType: "m6i.large"})
	if _, err := e.inst.InstanceMetadata(ctx(t), nodes[0]); err != nil {
		t.Fatal(err)
	}
	if n := w.calls("DescribeInstanceTopology") - before; n != 0 {
		t.Errorf("%d more DescribeInstanceTopology calls for known instances", n)
	}
}

// A type that has a topology is not initialized without it: a failure of
// DescribeInstanceTopology fails its lookup (never "gone"), and other
// Nodes go on.
func TestTopologyFailureFailsOnlyItsTypes(t *testing.T) {
	w := newWorld(t)
	e := w.env(w.config())
	p5 := node(w.fake.AddInstance(fakeaws.Instance{SubnetID: w.private[zoneA].ID, InstanceType: "p5.48xlarge"}), nil)
	m6 := node(w.fake.AddInstance(fakeaws.Instance{SubnetID: w.private[zoneA].ID, InstanceType: "m6i.large"}), nil)
	w.fake.Faults().AddRule(faults.Rule{Match: "ec2 DescribeInstanceTopology", Status: 500})
	if _, err := e.inst.InstanceMetadata(ctx(t), m6); err != nil {
		t.Errorf("m6i: %v", err)
	}
	_, err := e.inst.InstanceMetadata(ctx(t), p5)
	if err == nil || errors.Is(err, cloudprovider.InstanceNotFound) {
		t.Errorf("p5 lookup = %v, want a failure that is not InstanceNotFound", err)
	}
	if exists, err := e.inst.InstanceExists(ctx(t), p5); err == nil && !exists {
		t.Error("the p5 instance was called gone")
	}
}
