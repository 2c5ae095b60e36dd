package aws

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/cloudapi"
)

// LabelNetworkNodePrefix + the layer (1 is the top) names a Node's network
// node, from DescribeInstanceTopology, as the AWS CCM labels them.
const LabelNetworkNodePrefix = "topology.k8s.aws/network-node-layer-"

// defaultTopologyTypes are the instance types the AWS CCM expects a
// network topology for (its defaultSupportedTopologyInstanceTypePattern):
// a failure to get theirs fails the lookup, so the Node is initialized
// with its labels or not at all. Other types are asked about once, and
// left alone for a day when EC2 has nothing for them.
var defaultTopologyTypes = regexp.MustCompile(`^(hpc|trn|p)[0-9]+[a-z]*(-[a-z0-9]+)?(\.[0-9a-z]*)$`)

// topologyBatch is how many instances one DescribeInstanceTopology takes.
const topologyBatch = 100

// unsupportedFor is how long a type, an instance or the region without a
// topology is not asked about again (the AWS CCM's cache timeout).
const unsupportedFor = 24 * time.Hour

// topologies holds the network nodes of instances, which do not change
// while an instance runs, and what has no topology.
type topologies struct {
	mu          sync.Mutex
	nodes       map[string][]string  // instance ID -> network nodes, top first
	unsupported map[string]time.Time // type, instance ID or "region" -> until
	required    *regexp.Regexp
}

func newTopologies(pattern string) (*topologies, error) {
	t := &topologies{nodes: map[string][]string{}, unsupported: map[string]time.Time{}, required: defaultTopologyTypes}
	if pattern != "" {
		re, err := regexp.Compile(pattern)
		if err != nil {
			return nil, err
		}
		t.required = re
	}
	return t, nil
}

func (t *topologies) skipLocked(key string, now time.Time) bool {
	until, ok := t.unsupported[key]
	if ok && now.After(until) {
		delete(t.unsupported, key)
		return false
	}
	return ok
}

// labels are the topology labels of an instance already looked up.
func (t *topologies) labels(id string) map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	nodes := t.nodes[id]
	if len(nodes) == 0 {
		return nil
	}
	out := make(map[string]string, len(nodes))
	for i, n := range nodes {
		out[LabelNetworkNodePrefix+strconv.Itoa(i+1)] = n
	}
	return out
}

// ensure looks up the topology of the live instances not known yet,
// a hundred a call: every instance of a type that has one, and one of each
// type not known either way. It returns, by instance ID, the failure of
// instances whose type must have a topology; others go without labels.
func (c *Cloud) ensureTopology(ctx context.Context, cl *clients, insts []ec2types.Instance) map[string]error {
	t := c.topology
	now := time.Now()
	t.mu.Lock()
	if t.skipLocked("region", now) {
		t.mu.Unlock()
		return nil
	}
	var ask []string
	typeOf := map[string]string{}
	probed := map[string]bool{}
	for i := range insts {
		in := &insts[i]
		id, typ := aws.ToString(in.InstanceId), string(in.InstanceType)
		if typ == "" || in.State == nil || (in.State.Name != ec2types.InstanceStateNameRunning && in.State.Name != ec2types.InstanceStateNamePending) {
			continue
		}
		if _, known := t.nodes[id]; known || t.skipLocked(id, now) || t.skipLocked(typ, now) {
			continue
		}
		if !t.required.MatchString(typ) {
			if probed[typ] {
				continue
			}
			probed[typ] = true
		}
		ask = append(ask, id)
		typeOf[id] = typ
	}
	t.mu.Unlock()
	if len(ask) == 0 {
		return nil
	}
	slices.Sort(ask)
	failed := map[string]error{}
	for chunk := range slices.Chunk(ask, topologyBatch) {
		got, err := c.describeTopology(ctx, cl, chunk)
		var apiErr smithy.APIError
		if errors.As(err, &apiErr) && (apiErr.ErrorCode() == "UnsupportedOperation" || apiErr.ErrorCode() == "UnauthorizedOperation") {
			// Not in this region, or not allowed: as the AWS CCM, go on
			// without the labels and do not ask again for a day.
			klog.InfoS("No instance topology labels: DescribeInstanceTopology is not available", "region", cl.region, "err", err)
			t.mu.Lock()
			t.unsupported["region"] = now.Add(unsupportedFor)
			t.mu.Unlock()
			return nil
		}
		if err != nil {
			for _, id := range chunk {
				if t.required.MatchString(typeOf[id]) {
					failed[id] = fmt.Errorf("instance %s is a %s, which has a network topology, and DescribeInstanceTopology failed: %w", id, typeOf[id], err)
				}
			}
			continue
		}
		t.mu.Lock()
		for _, id := range chunk {
			nodes, ok := got[id]
			switch {
			case ok:
				t.nodes[id] = nodes
			case t.required.MatchString(typeOf[id]):
				// It may be stopping: not the type's fault.
				t.unsupported[id] = now.Add(unsupportedFor)
			default:
				t.unsupported[typeOf[id]] = now.Add(unsupportedFor)
			}
		}
		t.mu.Unlock()
	}
	return failed
}

// forget drops what is known of instances that are gone.
func (t *topologies) forget(ids []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range ids {
		delete(t.nodes, id)
	}
}

func (c *Cloud) describeTopology(ctx context.Context, cl *clients, ids []string) (map[string][]string, error) {
	out := map[string][]string{}
	in := &ec2.DescribeInstanceTopologyInput{InstanceIds: ids}
	for {
		page, err := cloudapi.Call(ctx, c.api, "ec2.DescribeInstanceTopology", func(ctx context.Context) (*ec2.DescribeInstanceTopologyOutput, error) {
			return cl.ec2.DescribeInstanceTopology(ctx, in)
		}, cloudapi.ResourcePermission()) // a missing permission for this one action, not bad credentials
		if err != nil {
			return nil, err
		}
		for _, it := range page.Instances {
			out[aws.ToString(it.InstanceId)] = it.NetworkNodes
		}
		if aws.ToString(page.NextToken) == "" {
			return out, nil
		}
		in.NextToken = page.NextToken
	}
}
