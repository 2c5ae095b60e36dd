package aws

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// DescribeInstanceTopology: where running instances sit in the network,
// as a list of network node ids from the top of the hierarchy down. Only
// the instance types AWS documents (ec2-instance-topology-prerequisites)
// have a topology; instances of other types, and instances that are not
// running, are left out without an error, as EC2 leaves them out. The
// action exists only in the regions AWS lists; elsewhere it is an
// UnsupportedOperation.

// topologyTypes3 and topologyTypes4 are the instance types whose topology
// has three and four layers of network nodes.
var (
	topologyTypes3 = regexp.MustCompile(`^(g6e\.(xlarge|2xlarge|4xlarge|8xlarge|12xlarge|16xlarge|24xlarge|48xlarge)|` +
		`g7e\.(2xlarge|4xlarge|8xlarge|12xlarge|24xlarge|48xlarge)|` +
		`hpc6a\.48xlarge|hpc6id\.32xlarge|hpc7g\.(4xlarge|8xlarge|16xlarge)|hpc7a\.(12xlarge|24xlarge|48xlarge|96xlarge)|hpc8a\.96xlarge|` +
		`p3dn\.24xlarge|p4d\.24xlarge|p4de\.24xlarge|p5\.48xlarge|p5e\.48xlarge|p5en\.48xlarge|p6e-gb200\.36xlarge|` +
		`trn1\.2xlarge|trn1\.32xlarge|trn1n\.32xlarge|trn2\.48xlarge|trn2u\.48xlarge)$`)
	topologyTypes4 = regexp.MustCompile(`^p6-b[23]00\.48xlarge$`)
)

// topologyRegions are the regions where EC2 answers DescribeInstanceTopology.
var topologyRegions = []string{
	"us-east-1", "us-east-2", "us-west-1", "us-west-2", "af-south-1",
	"ap-southeast-3", "ap-east-1", "ap-south-2", "ap-southeast-4", "ap-south-1", "ap-northeast-3",
	"ap-northeast-2", "ap-southeast-1", "ap-southeast-2", "ap-northeast-1", "ca-central-1",
	"eu-central-1", "eu-west-1", "eu-west-2", "eu-west-3", "eu-south-2", "eu-north-1", "eu-central-2",
	"il-central-1", "me-south-1", "me-central-1", "sa-east-1", "us-gov-west-1",
}

// topologyDepth is how many network nodes an instance type has: 0 for a
// type without topology.
func topologyDepth(instanceType string) int {
	switch {
	case topologyTypes4.MatchString(instanceType):
		return 4
	case topologyTypes3.MatchString(instanceType):
		return 3
	}
	return 0
}

// networkNodeID is a stable "nn-" id with EC2's 17 hex digits for a node
// named by parts. AWS hashes the node ids per account, so the account is
// part of the name.
func networkNodeID(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return "nn-" + hex.EncodeToString(sum[:])[:17]
}

// networkNodesLocked is the topology of an instance of a type that has
// one, top layer first: the instance's own NetworkNodes if set, else a hierarchy derived from its
// zone, placement group and id. Every instance of a zone shares the top
// node; a placement group (else one of two spines picked by the instance
// id) shares the second; the third is shared by a few instances under the
// same spine; a four-layer type adds one more below it. The same instance
// always gets the same nodes.
func (s *Server) networkNodesLocked(i *instanceRec) []string {
	if len(i.NetworkNodes) > 0 {
		return slices.Clone(i.NetworkNodes)
	}
	depth := topologyDepth(i.InstanceType)
	if depth == 0 {
		return nil
	}
	h := sha256.Sum256([]byte(i.ID))
	spine := i.PlacementGroup
	if spine == "" {
		spine = "spine-" + strconv.Itoa(int(h[0]%2))
	}
	leaf := strconv.Itoa(int(h[1] % 4))
	nodes := []string{
		networkNodeID(s.account, i.AvailabilityZone),
		networkNodeID(s.account, i.AvailabilityZone, spine),
		networkNodeID(s.account, i.AvailabilityZone, spine, leaf),
	}
	if depth == 4 {
		nodes = append(nodes, networkNodeID(s.account, i.AvailabilityZone, spine, leaf, strconv.Itoa(int(h[2]%2))))
	}
	return nodes
}

// NetworkNodes is the topology DescribeInstanceTopology gives the
// instance, top layer first; nil for an instance of a type without one.
func (s *Server) NetworkNodes(instanceID string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := s.ec2.instances[instanceID]; i != nil {
		return s.networkNodesLocked(i)
	}
	return nil
}

var topologyFilters = []string{"availability-zone", "instance-type", "zone-id"}

const (
	topologyDefaultMax = 20
	topologyMaxIDs     = 100
)

func (s *Server) describeInstanceTopology(c *call) (any, *apiError) {
	if !slices.Contains(topologyRegions, s.region) {
		return nil, badRequest("UnsupportedOperation", "The functionality you requested is not available in this region.")
	}
	fs := c.p.filters()
	for _, f := range fs {
		// No tag filters here: only the three the API documents.
		if !slices.Contains(topologyFilters, f.name) {
			return nil, badRequest("InvalidParameterValue", "The filter '%s' is invalid", f.name)
		}
	}
	ids, groups := c.p.flat("InstanceId"), c.p.flat("GroupName")
	if len(ids) > topologyMaxIDs {
		return nil, badRequest("InvalidParameterValue", "The maximum number of instance IDs that can be specified is %d.", topologyMaxIDs)
	}
	if len(groups) > topologyMaxIDs {
		return nil, badRequest("InvalidParameterValue", "The maximum number of placement group names that can be specified is %d.", topologyMaxIDs)
	}
	// Without instance ids the answer comes in pages of MaxResults (1 to
	// 100, default 20); with them, whole, and MaxResults is refused.
	pg := ec2Paging{max: topologyDefaultMax}
	if len(ids) > 0 {
		pg.max = 0
	}
	if mr := c.p.integer("MaxResults"); mr.sent {
		switch {
		case len(ids) > 0:
			return nil, badRequest("InvalidParameterCombination", "The parameter instanceIds cannot be used with the parameter maxResults")
		case !mr.ok:
			return nil, badRequest("InvalidParameterValue", "Invalid value '%s' for maxResults", mr.raw)
		case mr.n < 1 || mr.n > 100:
			return nil, badRequest("InvalidParameterValue", "Value ( %d ) for parameter maxResults is invalid. Expecting a value between 1 and 100.", mr.n)
		}
		pg.max = int(mr.n)
	}
	if tok, ok := c.p.str("NextToken"); ok {
		after, good := decodeToken(tok)
		if !good {
			return nil, badRequest("InvalidParameterValue", "Value ( %s ) for parameter NextToken is invalid. The token is invalid.", tok)
		}
		pg.after = after
	}
	var missing []string
	for _, id := range ids {
		if !validID("i", id) {
			return nil, badRequest("InvalidInstanceID.Malformed", "Invalid id: \"%s\"", id)
		}
		if s.ec2.instances[id] == nil {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return nil, badRequest("InvalidInstanceID.NotFound", "%s", notFoundIDs("instance", missing))
	}

	var sel []*instanceRec
	for _, i := range sortedBySeq(s.ec2.instances, func(r *instanceRec) int { return r.seq }) {
		if i.State != InstanceStateRunning || topologyDepth(i.InstanceType) == 0 {
			continue
		}
		if len(ids) > 0 && !slices.Contains(ids, i.ID) || len(groups) > 0 && !slices.Contains(groups, i.PlacementGroup) {
			continue
		}
		zone, _ := s.zoneLocked(i.AvailabilityZone)
		fields := func(name string) []string {
			switch name {
			case "availability-zone":
				return []string{i.AvailabilityZone}
			case "instance-type":
				return []string{i.InstanceType}
			case "zone-id":
				return []string{zone.ID}
			}
			return nil
		}
		if matches(fs, fields, nil) {
			sel = append(sel, i)
		}
	}
	sel, next := page(pg, sel, func(r *instanceRec) int { return r.seq }, one)
	out := &xmlDescribeInstanceTopology{Instances: []xmlInstanceTopology{}, NextToken: next}
	for _, i := range sel {
		zone, _ := s.zoneLocked(i.AvailabilityZone)
		out.Instances = append(out.Instances, xmlInstanceTopology{
			InstanceID: i.ID, InstanceType: i.InstanceType, GroupName: i.PlacementGroup,
			NetworkNodes: s.networkNodesLocked(i), AvailabilityZone: i.AvailabilityZone, ZoneID: zone.ID,
			CapacityBlockID: i.CapacityBlockID,
		})
	}
	return out, nil
}

type xmlDescribeInstanceTopology struct {
	ec2Head
	Instances []xmlInstanceTopology `xml:"instanceSet>item"`
	NextToken string                `xml:"nextToken,omitempty"`
}

type xmlInstanceTopology struct {
	InstanceID       string   `xml:"instanceId"`
	InstanceType     string   `xml:"instanceType"`
	GroupName        string   `xml:"groupName,omitempty"`
	NetworkNodes     []string `xml:"networkNodeSet>item"`
	AvailabilityZone string   `xml:"availabilityZone"`
	ZoneID           string   `xml:"zoneId"`
	CapacityBlockID  string   `xml:"capacityBlockId,omitempty"`
}
