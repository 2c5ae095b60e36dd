package aws

import (
	"context"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/volumes"
)

const (
	// CSIDriverEBS is the EBS CSI driver's name; its volume handles are
	// volume IDs.
	CSIDriverEBS = "ebs.csi.aws.com"
	// volumePage is DescribeVolumes' largest page.
	volumePage = 500
)

var volumeIDRE = regexp.MustCompile(`^vol-[0-9a-f]{8,17}$`)

// Volumes returns the disk lookups for volume labels.
func (c *Cloud) Volumes() volumes.Source { return c }

// VolumeKey claims in-tree awsElasticBlockStore PVs and CSI PVs of the EBS
// driver. In-tree volume IDs come as vol-..., aws://<zone>/vol-... or
// aws:///vol-...; the zone in them is not trusted, EC2 is asked.
func (c *Cloud) VolumeKey(pv *v1.PersistentVolume) (volumes.Key, bool, error) {
	var raw string
	if ebs := pv.Spec.AWSElasticBlockStore; ebs != nil {
		raw = ebs.VolumeID
		if rest, ok := strings.CutPrefix(raw, "aws://"); ok {
			raw = rest[strings.LastIndexByte(rest, '/')+1:]
		}
	} else if h, ok := volumes.CSIHandle(pv, CSIDriverEBS); ok {
		raw = h
	} else {
		return volumes.Key{}, false, nil
	}
	if !volumeIDRE.MatchString(raw) {
		return volumes.Key{}, true, cloudapi.Invalid("%q is not an EBS volume ID (want vol-...)", raw)
	}
	return volumes.Key{ID: raw}, true, nil
}

// LookupVolumes resolves a batch with DescribeVolumes filtered on
// volume-id, up to 200 IDs a call, paginated. The filter, unlike
// VolumeIds, does not fail the whole call for one missing volume; a volume
// it did not return is confirmed absent by ID before it is reported gone.
func (c *Cloud) LookupVolumes(ctx context.Context, keys []volumes.Key) (volumes.Answer, error) {
	cl, err := c.client(ctx)
	if err != nil {
		return volumes.Answer{}, err
	}
	results := make([]volumes.Result, len(keys))
	byID := map[string][]int{}
	for i, k := range keys {
		if !volumeIDRE.MatchString(k.ID) {
			results[i].Err = cloudapi.Invalid("%q is not an EBS volume ID", k.ID)
			continue
		}
		byID[k.ID] = append(byID[k.ID], i)
	}
	found := map[string]*volumes.Volume{}
	for chunk := range slices.Chunk(slices.Sorted(maps.Keys(byID)), filterChunk) {
		got, err := c.describeVolumes(ctx, cl, &ec2.DescribeVolumesInput{
			Filters:    []ec2types.Filter{{Name: aws.String("volume-id"), Values: chunk}},
			MaxResults: aws.Int32(volumePage),
		})
		if err != nil {
			return volumes.Answer{}, err
		}
		for i := range got {
			found[aws.ToString(got[i].VolumeId)] = toVolume(&got[i], cl.region)
		}
	}
	for id, idx := range byID {
		var r volumes.Result
		v, ok := found[id]
		if ok {
			r.Volume = v
		} else {
			r.Volume, r.Err = c.confirmVolume(ctx, cl, id)
		}
		for _, i := range idx {
			results[i] = r
		}
	}
	return volumes.Answer{Results: results}, nil
}

func (c *Cloud) describeVolumes(ctx context.Context, cl *clients, in *ec2.DescribeVolumesInput) ([]ec2types.Volume, error) {
	var out []ec2types.Volume
	for {
		var page *ec2.DescribeVolumesOutput
		err := c.api.Do(ctx, "ec2.DescribeVolumes", func(ctx context.Context) error {
			var err error
			page, err = cl.ec2.DescribeVolumes(ctx, in)
			return err
		})
		if err != nil {
			return nil, err
		}
		out = append(out, page.Volumes...)
		if aws.ToString(page.NextToken) == "" {
			return out, nil
		}
		in.NextToken = page.NextToken
	}
}

// confirmVolume asks for one volume by ID: (nil, nil) only when EC2 says it
// does not exist (InvalidVolume.NotFound) or it is deleted.
func (c *Cloud) confirmVolume(ctx context.Context, cl *clients, id string) (*volumes.Volume, error) {
	got, err := c.describeVolumes(ctx, cl, &ec2.DescribeVolumesInput{VolumeIds: []string{id}})
	if cloudapi.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for i := range got {
		if aws.ToString(got[i].VolumeId) == id {
			return toVolume(&got[i], cl.region), nil
		}
	}
	return nil, nil
}

// toVolume maps an EBS volume; nil for a deleted one, which no PV can use.
func toVolume(v *ec2types.Volume, region string) *volumes.Volume {
	if v.State == ec2types.VolumeStateDeleted {
		return nil
	}
	out := &volumes.Volume{ID: aws.ToString(v.VolumeId), Region: region}
	if az := aws.ToString(v.AvailabilityZone); az != "" {
		out.Zones = []string{az}
	}
	return out
}
