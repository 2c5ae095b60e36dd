package aws

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// Ownership tags, as the AWS CCM writes and reads them.
const (
	// TagClusterPrefix + clusterName marks resources of a cluster; the
	// value says whether the cluster owns the resource or shares it.
	TagClusterPrefix = "kubernetes.io/cluster/"
	// TagClusterLegacy = clusterName is the older form of the cluster
	// tag, which the AWS CCM still reads as owned (tags.go there).
	TagClusterLegacy = "KubernetesCluster"
	TagOwned         = "owned"
	TagShared        = "shared"
	// TagServiceName names the Service a load balancer belongs to.
	TagServiceName = "kubernetes.io/service-name"
	// Subnet roles for load balancer subnet discovery.
	TagRoleELB         = "kubernetes.io/role/elb"
	TagRoleInternalELB = "kubernetes.io/role/internal-elb"
)

func (c *Cloud) clusterTag() string { return TagClusterPrefix + c.clusterID() }

// ec2Tagged reports whether tags carry this cluster's tag (owned or
// shared, or the legacy tag), as the AWS CCM's hasClusterTag.
func (c *Cloud) ec2Tagged(tags []ec2types.Tag) bool {
	for _, t := range tags {
		k, v := aws.ToString(t.Key), aws.ToString(t.Value)
		if k == c.clusterTag() || (k == TagClusterLegacy && v == c.clusterID()) {
			return true
		}
	}
	return false
}

// ec2Owned reports whether tags mark the resource as owned by this
// cluster (not only shared with it), or carry the legacy tag.
func (c *Cloud) ec2Owned(tags []ec2types.Tag) bool {
	m := ec2TagMap(tags)
	return m[c.clusterTag()] == TagOwned || m[TagClusterLegacy] == c.clusterID()
}

// tagSafe keeps characters AWS accepts in role session names and tags.
func tagSafe(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("=,.@-_", r):
			return r
		}
		return '-'
	}, s)
}
