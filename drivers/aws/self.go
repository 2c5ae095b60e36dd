package aws

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
)

// self is what the instance metadata service says of the instance polyccm
// runs on: the AWS CCM takes the cluster's VPC, its fallback subnet and
// (when not configured) the cluster ID from it.
type self struct {
	instanceID, vpc, subnet string
}

// selfInstance asks the instance metadata service once; a failure is not
// remembered, so the next call asks again.
func (c *Cloud) selfInstance(ctx context.Context) (*self, error) {
	c.mu.Lock()
	cached := c.self
	c.mu.Unlock()
	if cached != nil {
		return cached, nil
	}
	// The body is read inside the call: its context ends when the call does.
	get := func(path string) (string, error) {
		return cloudapi.Call(ctx, c.api, "imds.GetMetadata", func(ctx context.Context) (string, error) {
			out, err := c.metadata.GetMetadata(ctx, &imds.GetMetadataInput{Path: path})
			if err != nil {
				return "", err
			}
			defer out.Content.Close()
			b, err := io.ReadAll(out.Content)
			return strings.TrimSpace(string(b)), err
		})
	}
	var s self
	var err error
	if s.instanceID, err = get("instance-id"); err != nil {
		return nil, err
	}
	mac, err := get("mac")
	if err != nil {
		return nil, err
	}
	if s.vpc, err = get("network/interfaces/macs/" + mac + "/vpc-id"); err != nil {
		return nil, err
	}
	if s.subnet, err = get("network/interfaces/macs/" + mac + "/subnet-id"); err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.self = &s
	c.mu.Unlock()
	return &s, nil
}

// vpcID is the cluster's VPC: from the config, else the VPC of the
// instance polyccm runs on, from the instance metadata service.
func (c *Cloud) vpcID(ctx context.Context, _ *clients) (string, error) {
	if c.cfg.VPCID != "" {
		return c.cfg.VPCID, nil
	}
	s, err := c.selfInstance(ctx)
	if err != nil {
		return "", fmt.Errorf("aws: drivers.aws.vpcID is not set and the instance metadata service did not say: %w", err)
	}
	return s.vpc, nil
}

// clusterIdentity is the cluster's ID, which tags and target group names
// carry, and how it was found (for logs and `polyccm plan`).
type clusterIdentity struct {
	mu     sync.Mutex
	id     string
	source string
}

// clusterIDSource says where the cluster ID comes from, for `polyccm plan`.
func (c *Cloud) clusterIDSource() string {
	c.ident.mu.Lock()
	defer c.ident.mu.Unlock()
	return c.ident.source
}

// resolveClusterID finds the cluster ID once, as the AWS CCM does: the
// configured one (drivers.aws.clusterID, else clusterName when the config
// sets it), else the kubernetes.io/cluster/<id> or KubernetesCluster tag
// of the instance polyccm runs on. A failure is not remembered.
func (c *Cloud) resolveClusterID(ctx context.Context, cl *clients) (string, error) {
	c.ident.mu.Lock()
	defer c.ident.mu.Unlock()
	if c.ident.id != "" {
		return c.ident.id, nil
	}
	switch {
	case c.cfg.ClusterID != "":
		c.ident.id, c.ident.source = c.cfg.ClusterID, "drivers.aws.clusterID"
	case !c.deps.ClusterNameDefault:
		c.ident.id, c.ident.source = c.deps.ClusterName, "clusterName"
	default:
		id, source, err := c.clusterIDFromInstance(ctx, cl)
		if err != nil {
			return "", err
		}
		c.ident.id, c.ident.source = id, source
	}
	c.cluster.Store(&c.ident.id)
	klog.InfoS("AWS cluster ID", "clusterID", c.ident.id, "from", c.ident.source)
	return c.ident.id, nil
}

func (c *Cloud) clusterIDFromInstance(ctx context.Context, cl *clients) (id, source string, err error) {
	fix := "set clusterName (or drivers.aws.clusterID) in the config to the cluster ID the AWS CCM used"
	s, err := c.selfInstance(ctx)
	if err != nil {
		return "", "", fmt.Errorf("aws: clusterName is not set and the instance metadata service did not say which instance polyccm runs on (%w); %s", err, fix)
	}
	insts, err := c.describeInstances(ctx, cl, []ec2types.Filter{{Name: aws.String("instance-id"), Values: []string{s.instanceID}}})
	if err != nil {
		return "", "", fmt.Errorf("aws: clusterName is not set and reading the tags of instance %s failed: %w", s.instanceID, err)
	}
	if len(insts) == 0 {
		return "", "", fmt.Errorf("aws: clusterName is not set and instance %s, where polyccm runs, was not found; %s", s.instanceID, fix)
	}
	legacy, current, err := clusterIDsOf(insts[0].Tags)
	if err != nil {
		return "", "", fmt.Errorf("aws: clusterName is not set and instance %s: %v; %s", s.instanceID, err, fix)
	}
	switch {
	case legacy != "" && current != "" && legacy != current:
		return "", "", fmt.Errorf("aws: clusterName is not set and instance %s names two clusters (%s=%s, %s%s); %s", s.instanceID, TagClusterLegacy, legacy, TagClusterPrefix, current, fix)
	case legacy != "":
		return legacy, fmt.Sprintf("the %s tag of instance %s", TagClusterLegacy, s.instanceID), nil
	case current != "":
		return current, fmt.Sprintf("the %s%s tag of instance %s", TagClusterPrefix, current, s.instanceID), nil
	}
	return "", "", fmt.Errorf("aws: clusterName is not set and instance %s, where polyccm runs, has no %s<id> or %s tag; %s", s.instanceID, TagClusterPrefix, TagClusterLegacy, fix)
}

// clusterIDsOf reads the legacy and current cluster tags, refusing two of
// either kind, as the AWS CCM does.
func clusterIDsOf(tags []ec2types.Tag) (legacy, current string, err error) {
	for _, t := range tags {
		k := aws.ToString(t.Key)
		if id, ok := strings.CutPrefix(k, TagClusterPrefix); ok {
			if current != "" {
				return "", "", fmt.Errorf("it has two cluster tags (%s%s and %s)", TagClusterPrefix, current, k)
			}
			current = id
		}
		if k == TagClusterLegacy {
			if legacy != "" {
				return "", "", fmt.Errorf("it has two %s tags", TagClusterLegacy)
			}
			legacy = aws.ToString(t.Value)
		}
	}
	return legacy, current, nil
}

// Facts are what polyccm resolves from AWS as the AWS CCM would, for
// `polyccm plan`: the cluster ID and where it came from, the VPC, and the
// subnets each scheme of load balancer would get when a Service names
// none.
func (c *Cloud) Facts(ctx context.Context) ([]driver.Fact, error) {
	cl, err := c.clusterClient(ctx)
	if err != nil {
		return nil, err
	}
	facts := []driver.Fact{{Name: "cluster ID", Value: c.clusterID(), Source: c.clusterIDSource()}}
	vpc, err := c.vpcID(ctx, cl)
	if err != nil {
		return facts, err
	}
	vpcSource := "drivers.aws.vpcID"
	if c.cfg.VPCID == "" {
		vpcSource = "the instance metadata service"
	}
	facts = append(facts, driver.Fact{Name: "VPC", Value: vpc, Source: vpcSource})
	for _, internal := range []bool{false, true} {
		name, role := "subnets, internet-facing", TagRoleELB
		if internal {
			name, role = "subnets, internal", TagRoleInternalELB
		}
		f := driver.Fact{Name: name, Source: "discovered as the AWS CCM does (cluster or no cluster tag, " + role + " preferred"}
		if !internal {
			f.Source += ", a route to an internet gateway"
		}
		f.Source += "); a Service's " + AnnSubnets + " overrides"
		found, err := c.lbs.discoverSubnets(ctx, cl, vpc, internal)
		var none *noSubnetError
		switch {
		case errors.As(err, &none):
			f.Value = "none: " + none.Error()
		case err != nil:
			return facts, err
		}
		var parts []string
		for _, s := range found {
			parts = append(parts, aws.ToString(s.SubnetId)+" ("+aws.ToString(s.AvailabilityZone)+")")
		}
		if len(parts) > 0 {
			f.Value = strings.Join(parts, ", ")
		}
		facts = append(facts, f)
	}
	return facts, nil
}
