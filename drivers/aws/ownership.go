package aws

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// fixedAddresses are the Elastic IP allocations and private addresses a
// Service's NLB holds: those its annotations ask for, once it has an NLB.
func fixedAddresses(svc *v1.Service) []string {
	if len(svc.Status.LoadBalancer.Ingress) == 0 {
		return nil
	}
	var out []string
	for _, key := range []string{AnnEIPAllocations, AnnPrivateIPv4Addresses} {
		for _, v := range strings.Split(svc.Annotations[key], ",") {
			if v = strings.TrimSpace(v); v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

// taggedResource reads an ELBv2 resource's tags and returns them (for
// planning their changes) with what the ownership rule knows of it: core
// judges it before the sync changes anything (one this cluster did not
// make for this Service is refused; one that carries no cluster tag is
// adopted only if the operator allowed it, then tagged as its own).
func (l *loadBalancers) taggedResource(ctx context.Context, cl *clients, kind, arn, name string) (map[string]string, loadbalancers.Resource, error) {
	tags, err := l.tags(ctx, cl, arn)
	if err != nil {
		return nil, loadbalancers.Resource{}, err
	}
	return tags, l.resource(kind, arn, name, tags), nil
}

// resource is what the ownership rule knows of an AWS resource: its name
// and its cluster and Service tags.
func (l *loadBalancers) resource(kind, id, name string, tags map[string]string) loadbalancers.Resource {
	r := loadbalancers.Resource{
		Kind: kind, ID: id, Name: name, Marks: true,
		Service: tags[TagServiceName],
		UIDMark: loadbalancers.UIDMark(strings.TrimPrefix(name, legacySGPrefix)),
	}
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		c, ok := strings.CutPrefix(k, TagClusterPrefix)
		switch {
		case !ok:
		case c == l.c.clusterID() && tags[k] == TagOwned:
			r.OurCluster = true
		case c == l.c.clusterID():
			r.Shared = true
		case r.OtherCluster == "":
			r.OtherCluster = c
		}
	}
	// The legacy tag names its cluster in its value and means owned, as
	// the AWS CCM reads it (hasClusterTagOwned).
	if c, ok := tags[TagClusterLegacy]; ok {
		switch {
		case c == l.c.clusterID():
			r.OurCluster = true
		case r.OtherCluster == "":
			r.OtherCluster = c
		}
	}
	return r
}

// marksOf is what the resources of svc are tagged with, for messages.
func (c *Cloud) marksOf(svc *v1.Service) string {
	return fmt.Sprintf("tagged %s=%s and %s=%s", c.clusterTag(), TagOwned, TagServiceName, svc.Namespace+"/"+svc.Name)
}

func ec2TagMap(tags []ec2types.Tag) map[string]string {
	m := map[string]string{}
	for _, t := range tags {
		m[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return m
}

func (l *loadBalancers) tags(ctx context.Context, cl *clients, arn string) (map[string]string, error) {
	out, err := cloudapi.Call(ctx, l.c.api, "elbv2.DescribeTags", func(ctx context.Context) (*elbv2.DescribeTagsOutput, error) {
		return cl.elb.DescribeTags(ctx, &elbv2.DescribeTagsInput{ResourceArns: []string{arn}})
	})
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, td := range out.TagDescriptions {
		for _, t := range td.Tags {
			m[aws.ToString(t.Key)] = aws.ToString(t.Value)
		}
	}
	return m, nil
}

func elbTags(m map[string]string) []elbtypes.Tag {
	var out []elbtypes.Tag
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, elbtypes.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}

func ec2Tags(m map[string]string) []ec2types.Tag {
	var out []ec2types.Tag
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, ec2types.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}
