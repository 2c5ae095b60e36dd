package aws

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// maxTags is the number of tags a resource may carry, on EC2 and ELBv2.
const maxTags = 50

func checkTag(key, value string) *apiError {
	switch {
	case key == "":
		return badRequest("InvalidParameterValue", "Tag key must not be empty")
	case utf8.RuneCountInString(key) > 128:
		return badRequest("InvalidParameterValue", "Tag key exceeds the maximum length of 128 characters")
	case utf8.RuneCountInString(value) > 256:
		return badRequest("InvalidParameterValue", "Tag value exceeds the maximum length of 256 characters")
	case strings.HasPrefix(strings.ToLower(key), "aws:"):
		return badRequest("InvalidParameterValue", "Tag keys starting with 'aws:' are reserved for internal use")
	}
	return nil
}

// tagsOfLocked returns a pointer to the tags of the EC2 resource an id
// names, or the error EC2 gives for an id that is malformed or unknown.
func (s *Server) tagsOfLocked(id string) (*map[string]string, *apiError) {
	prefix, _, _ := strings.Cut(id, "-")
	if !validID(prefix, id) {
		return nil, badRequest("InvalidID", "The ID '%s' is not valid", id)
	}
	switch prefix {
	case "i":
		if r := s.ec2.instances[id]; r != nil {
			return &r.Tags, nil
		}
		return nil, badRequest("InvalidInstanceID.NotFound", "%s", notFoundIDs("instance", []string{id}))
	case "vpc":
		if r := s.ec2.vpcs[id]; r != nil {
			return &r.Tags, nil
		}
		return nil, badRequest("InvalidVpcID.NotFound", "%s", notFoundIDs("vpc", []string{id}))
	case "subnet":
		if r := s.ec2.subnets[id]; r != nil {
			return &r.Tags, nil
		}
		return nil, badRequest("InvalidSubnetID.NotFound", "%s", notFoundIDs("subnet", []string{id}))
	case "rtb":
		if r := s.ec2.routeTables[id]; r != nil {
			return &r.Tags, nil
		}
		return nil, badRequest("InvalidRouteTableID.NotFound", "%s", notFoundIDs("routeTable", []string{id}))
	case "sg":
		if r := s.ec2.sgs[id]; r != nil {
			return &r.tags, nil
		}
		return nil, badRequest("InvalidGroup.NotFound", "The security group '%s' does not exist", id)
	case "igw":
		if r := s.ec2.igws[id]; r != nil {
			return &r.Tags, nil
		}
		return nil, badRequest("InvalidInternetGatewayID.NotFound", "The internetGateway ID '%s' does not exist", id)
	case "vol":
		if r := s.ec2.volumes[id]; r != nil {
			return &r.Tags, nil
		}
		return nil, badRequest("InvalidVolume.NotFound", "The volume '%s' does not exist.", id)
	}
	return nil, badRequest("InvalidID", "The ID '%s' is not valid", id)
}

func (s *Server) createTags(c *call) (any, *apiError) {
	ids := c.p.flat("ResourceId")
	if len(ids) == 0 {
		return nil, badRequest("MissingParameter", "The request must contain the parameter resourceIdSet")
	}
	tags := c.p.ec2Tags("Tag")
	if len(tags) == 0 {
		return nil, badRequest("MissingParameter", "The request must contain the parameter tagSet")
	}
	for _, t := range tags {
		if err := checkTag(t.key, t.value); err != nil {
			return nil, err
		}
	}
	// All or nothing: check every resource before tagging any.
	var targets []*map[string]string
	for _, id := range ids {
		m, err := s.tagsOfLocked(id)
		if err != nil {
			return nil, err
		}
		merged := cloneTags(*m)
		if merged == nil {
			merged = map[string]string{}
		}
		for _, t := range tags {
			merged[t.key] = t.value
		}
		if len(merged) > maxTags {
			return nil, badRequest("TagLimitExceeded", "The maximum number of Tags for a resource has been reached.")
		}
		targets = append(targets, m)
	}
	for _, m := range targets {
		if *m == nil {
			*m = map[string]string{}
		}
		for _, t := range tags {
			(*m)[t.key] = t.value
		}
	}
	return returnTrue(), nil
}

// deleteTags follows EC2: a tag given with no value is deleted whatever
// its value, one given with a value (even "") only if the value matches,
// and no tags at all deletes every tag but the aws: ones.
func (s *Server) deleteTags(c *call) (any, *apiError) {
	ids := c.p.flat("ResourceId")
	if len(ids) == 0 {
		return nil, badRequest("MissingParameter", "The request must contain the parameter resourceIdSet")
	}
	tags := c.p.ec2Tags("Tag")
	var targets []*map[string]string
	for _, id := range ids {
		m, err := s.tagsOfLocked(id)
		if err != nil {
			return nil, err
		}
		targets = append(targets, m)
	}
	for _, m := range targets {
		if len(tags) == 0 {
			for k := range *m {
				if !strings.HasPrefix(k, "aws:") {
					delete(*m, k)
				}
			}
			continue
		}
		for _, t := range tags {
			if v, ok := (*m)[t.key]; ok && (!t.valueSent || v == t.value) {
				delete(*m, t.key)
			}
		}
	}
	return returnTrue(), nil
}

var volumeFilters = []string{
	"volume-id", "availability-zone", "status", "volume-type", "size", "encrypted",
	"attachment.instance-id", "attachment.status", "attachment.device", "attachment.delete-on-termination",
}

func (s *Server) describeVolumes(c *call) (any, *apiError) {
	fs := c.p.filters()
	if err := checkFilters(fs, volumeFilters); err != nil {
		return nil, err
	}
	ids := c.p.flat("VolumeId")
	pg, err := parseEC2Paging(c.p, len(ids) > 0, "volumeIds")
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		if !validID("vol", id) {
			return nil, badRequest("InvalidVolumeID.Malformed", "Invalid id: \"%s\" (expecting \"vol-...\")", id)
		}
		if s.ec2.volumes[id] == nil {
			return nil, badRequest("InvalidVolume.NotFound", "The volume '%s' does not exist.", id)
		}
	}
	var sel []*volumeRec
	for _, v := range sortedBySeq(s.ec2.volumes, func(r *volumeRec) int { return r.seq }) {
		fields := func(name string) []string {
			var out []string
			switch name {
			case "volume-id":
				return []string{v.ID}
			case "availability-zone":
				return []string{v.AvailabilityZone}
			case "status":
				return []string{v.State}
			case "volume-type":
				return []string{v.VolumeType}
			case "size":
				return []string{itoa32(v.Size)}
			case "encrypted":
				return []string{boolStr(v.Encrypted)}
			}
			for _, a := range v.Attachments {
				switch name {
				case "attachment.instance-id":
					out = append(out, a.InstanceID)
				case "attachment.status":
					out = append(out, a.State)
				case "attachment.device":
					out = append(out, a.Device)
				case "attachment.delete-on-termination":
					out = append(out, boolStr(a.DeleteOnTermination))
				}
			}
			return out
		}
		if (len(ids) == 0 || slices.Contains(ids, v.ID)) && matches(fs, fields, v.Tags) {
			sel = append(sel, v)
		}
	}
	sel, next := page(pg, sel, func(r *volumeRec) int { return r.seq }, one)
	out := &xmlDescribeVolumes{Volumes: []xmlVolume{}, NextToken: next}
	for _, v := range sel {
		xv := xmlVolume{
			VolumeID: v.ID, Size: v.Size, AvailabilityZone: v.AvailabilityZone, Status: v.State,
			CreateTime: isoTime(v.CreateTime), Attachments: []xmlVolumeAttachment{}, Tags: xmlTags(v.Tags),
			VolumeType: v.VolumeType, IOPS: v.IOPS, Encrypted: v.Encrypted,
		}
		if z, ok := s.zoneLocked(v.AvailabilityZone); ok {
			xv.AvailabilityZoneID = z.ID
		}
		if v.VolumeType == "gp3" {
			xv.Throughput = 125
		}
		for _, a := range v.Attachments {
			xv.Attachments = append(xv.Attachments, xmlVolumeAttachment{
				VolumeID: v.ID, InstanceID: a.InstanceID, Device: a.Device, Status: a.State,
				AttachTime: isoTime(v.CreateTime), DeleteOnTermination: a.DeleteOnTermination,
			})
		}
		out.Volumes = append(out.Volumes, xv)
	}
	return out, nil
}
