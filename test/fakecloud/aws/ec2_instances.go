package aws

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func ec2Actions() map[string]actionFunc {
	return map[string]actionFunc{
		"DescribeInstances":             (*Server).describeInstances,
		"DescribeInstanceAttribute":     (*Server).describeInstanceAttribute,
		"ModifyInstanceAttribute":       (*Server).modifyInstanceAttribute,
		"DescribeAvailabilityZones":     (*Server).describeAvailabilityZones,
		"DescribeVpcs":                  (*Server).describeVpcs,
		"DescribeSubnets":               (*Server).describeSubnets,
		"DescribeRouteTables":           (*Server).describeRouteTables,
		"CreateRoute":                   (*Server).createRoute,
		"ReplaceRoute":                  (*Server).replaceRoute,
		"DeleteRoute":                   (*Server).deleteRoute,
		"CreateSecurityGroup":           (*Server).createSecurityGroup,
		"DescribeSecurityGroups":        (*Server).describeSecurityGroups,
		"DeleteSecurityGroup":           (*Server).deleteSecurityGroup,
		"AuthorizeSecurityGroupIngress": (*Server).authorizeIngress,
		"RevokeSecurityGroupIngress":    (*Server).revokeIngress,
		"AuthorizeSecurityGroupEgress":  (*Server).authorizeEgress,
		"RevokeSecurityGroupEgress":     (*Server).revokeEgress,
		"CreateTags":                    (*Server).createTags,
		"DeleteTags":                    (*Server).deleteTags,
		"DescribeVolumes":               (*Server).describeVolumes,
		"DescribeInstanceTopology":      (*Server).describeInstanceTopology,
		"CreateInternetGateway":         (*Server).createInternetGateway,
		"AttachInternetGateway":         (*Server).attachInternetGateway,
		"DetachInternetGateway":         (*Server).detachInternetGateway,
		"DeleteInternetGateway":         (*Server).deleteInternetGateway,
		"DescribeInternetGateways":      (*Server).describeInternetGateways,
	}
}

var idSuffix = regexp.MustCompile(`^([0-9a-f]{8}|[0-9a-f]{17})$`)

// validID checks an EC2 id's shape: the prefix, a dash and 8 or 17 hex
// digits.
func validID(prefix, id string) bool {
	rest, ok := strings.CutPrefix(id, prefix+"-")
	return ok && idSuffix.MatchString(rest)
}

// notFoundIDs is the message of the *.NotFound errors for ids, singular or
// plural as EC2 words it.
func notFoundIDs(kind string, ids []string) string {
	if len(ids) == 1 {
		return "The " + kind + " ID '" + ids[0] + "' does not exist"
	}
	return "The " + kind + " IDs " + joinQuoted(ids) + " do not exist"
}

var instanceFilters = []string{
	"instance-id", "instance-state-name", "instance-state-code", "private-dns-name",
	"private-ip-address", "dns-name", "ip-address", "vpc-id", "subnet-id",
	"availability-zone", "instance-type", "image-id", "reservation-id", "owner-id",
	"network-interface.network-interface-id", "network-interface.mac-address",
	"instance.group-id", "instance.group-name", "source-dest-check", "placement-group-name", "architecture",
}

func (s *Server) instanceFieldsLocked(i *instanceRec) fieldsFunc {
	return func(name string) []string {
		switch name {
		case "instance-id":
			return []string{i.ID}
		case "instance-state-name":
			return []string{i.State}
		case "instance-state-code":
			return []string{strconv.Itoa(int(instanceStateCodes[i.State]))}
		case "private-dns-name":
			return []string{i.PrivateDNSName}
		case "private-ip-address":
			return []string{i.PrivateIP}
		case "dns-name":
			return []string{i.PublicDNSName}
		case "ip-address":
			return []string{i.PublicIP}
		case "vpc-id":
			return []string{i.VPCID}
		case "subnet-id":
			return []string{i.SubnetID}
		case "availability-zone":
			return []string{i.AvailabilityZone}
		case "instance-type":
			return []string{i.InstanceType}
		case "image-id":
			return []string{i.ImageID}
		case "reservation-id":
			return []string{i.ReservationID}
		case "owner-id":
			return []string{s.account}
		case "network-interface.network-interface-id":
			return []string{i.NetworkInterfaceID}
		case "network-interface.mac-address":
			return []string{i.MACAddress}
		case "instance.group-id":
			return i.SecurityGroupIDs
		case "instance.group-name":
			var out []string
			for _, id := range i.SecurityGroupIDs {
				if g := s.ec2.sgs[id]; g != nil {
					out = append(out, g.name)
				}
			}
			return out
		case "source-dest-check":
			return []string{boolStr(i.SourceDestCheck)}
		case "placement-group-name":
			return []string{i.PlacementGroup}
		case "architecture":
			return []string{i.Architecture}
		}
		return nil
	}
}

type reservation struct {
	id        string
	seq       int
	instances []*instanceRec
}

func (s *Server) describeInstances(c *call) (any, *apiError) {
	ids := c.p.flat("InstanceId")
	fs := c.p.filters()
	if err := checkFilters(fs, instanceFilters); err != nil {
		return nil, err
	}
	pg, err := parseEC2Paging(c.p, len(ids) > 0, "instancesSet")
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	var missing []string
	for _, id := range ids {
		if !validID("i", id) {
			return nil, badRequest("InvalidInstanceID.Malformed", "Invalid id: \"%s\"", id)
		}
		if s.ec2.instances[id] == nil {
			missing = append(missing, id)
		}
		want[id] = true
	}
	if len(missing) > 0 {
		return nil, badRequest("InvalidInstanceID.NotFound", "%s", notFoundIDs("instance", missing))
	}

	var resv []*reservation
	byID := map[string]*reservation{}
	for _, i := range sortedBySeq(s.ec2.instances, func(r *instanceRec) int { return r.seq }) {
		if len(want) > 0 && !want[i.ID] || !matches(fs, s.instanceFieldsLocked(i), i.Tags) {
			continue
		}
		r := byID[i.ReservationID]
		if r == nil {
			r = &reservation{id: i.ReservationID, seq: i.seq}
			byID[i.ReservationID] = r
			resv = append(resv, r)
		}
		r.instances = append(r.instances, i)
	}
	resv, next := page(pg, resv, func(r *reservation) int { return r.seq }, func(r *reservation) int { return len(r.instances) })

	out := &xmlDescribeInstances{Reservations: []xmlReservation{}, NextToken: next}
	for _, r := range resv {
		xr := xmlReservation{ReservationID: r.id, OwnerID: s.account, Groups: []xmlGroup{}}
		for _, i := range r.instances {
			xr.Instances = append(xr.Instances, s.instanceXMLLocked(i))
		}
		out.Reservations = append(out.Reservations, xr)
	}
	return out, nil
}

func (s *Server) groupsXMLLocked(ids []string) []xmlGroup {
	out := []xmlGroup{}
	for _, id := range ids {
		name := ""
		if g := s.ec2.sgs[id]; g != nil {
			name = g.name
		}
		out = append(out, xmlGroup{GroupID: id, GroupName: name})
	}
	return out
}

// instanceXMLLocked renders an instance as DescribeInstances does for its
// state: a stopped instance has lost its public address, a terminated one
// its network interface, addresses and DNS names.
func (s *Server) instanceXMLLocked(i *instanceRec) xmlInstance {
	launch := isoTime(i.LaunchTime)
	x := xmlInstance{
		InstanceID:          i.ID,
		ImageID:             i.ImageID,
		InstanceState:       xmlInstanceState{Code: instanceStateCodes[i.State], Name: i.State},
		InstanceType:        i.InstanceType,
		LaunchTime:          launch,
		Placement:           xmlPlacement{AvailabilityZone: i.AvailabilityZone, GroupName: i.PlacementGroup, Tenancy: "default"},
		Monitoring:          xmlMonitoring{State: "disabled"},
		Architecture:        i.Architecture,
		RootDeviceType:      "ebs",
		RootDeviceName:      "/dev/xvda",
		VirtualizationType:  "hvm",
		Hypervisor:          "xen",
		EbsOptimized:        false,
		EnaSupport:          true,
		Tags:                xmlTags(i.Tags),
		Groups:              s.groupsXMLLocked(i.SecurityGroupIDs),
		NetworkInterfaces:   []xmlInstanceENI{},
		BlockDeviceMappings: []xmlBlockDeviceMapping{},
	}
	if z, ok := s.zoneLocked(i.AvailabilityZone); ok {
		x.Placement.AvailabilityZoneID = z.ID
	}
	for _, v := range sortedBySeq(s.ec2.volumes, func(r *volumeRec) int { return r.seq }) {
		for _, a := range v.Attachments {
			if a.InstanceID == i.ID {
				x.BlockDeviceMappings = append(x.BlockDeviceMappings, xmlBlockDeviceMapping{
					DeviceName: a.Device,
					Ebs:        xmlEbsBlockDevice{VolumeID: v.ID, Status: a.State, AttachTime: launch, DeleteOnTermination: a.DeleteOnTermination},
				})
			}
		}
	}
	switch i.State {
	case InstanceStateTerminated:
		x.StateReason = &xmlStateReason{Code: "Client.UserInitiatedShutdown", Message: "Client.UserInitiatedShutdown: User initiated shutdown"}
		x.Reason = "User initiated"
		x.Groups = []xmlGroup{}
		return x
	case InstanceStateStopped, InstanceStateStopping:
		x.StateReason = &xmlStateReason{Code: "Client.UserInitiatedShutdown", Message: "Client.UserInitiatedShutdown: User initiated shutdown"}
		x.Reason = "User initiated"
	}
	public := i.PublicIP != "" && i.State != InstanceStateStopped && i.State != InstanceStateStopping
	sdc := i.SourceDestCheck
	x.SourceDestCheck = &sdc
	x.SubnetID, x.VPCID = i.SubnetID, i.VPCID
	x.PrivateIPAddress, x.PrivateDNSName = i.PrivateIP, i.PrivateDNSName
	x.PrivateDNSNameOptions = &xmlPrivateDNSOptions{HostnameType: "ip-name"}
	var assoc *xmlENIAssociation
	if public {
		x.IPAddress, x.DNSName = i.PublicIP, i.PublicDNSName
		assoc = &xmlENIAssociation{PublicIP: i.PublicIP, PublicDNSName: i.PublicDNSName, IPOwnerID: "amazon"}
	}
	eni := xmlInstanceENI{
		NetworkInterfaceID: i.NetworkInterfaceID,
		SubnetID:           i.SubnetID,
		VPCID:              i.VPCID,
		OwnerID:            s.account,
		Status:             "in-use",
		MACAddress:         i.MACAddress,
		PrivateIPAddress:   i.PrivateIP,
		PrivateDNSName:     i.PrivateDNSName,
		SourceDestCheck:    i.SourceDestCheck,
		Groups:             s.groupsXMLLocked(i.SecurityGroupIDs),
		Attachment: xmlENIAttachment{
			AttachmentID: "eni-attach-" + strings.TrimPrefix(i.NetworkInterfaceID, "eni-"),
			Status:       "attached", AttachTime: launch, DeleteOnTermination: true,
		},
		Association:        assoc,
		PrivateIPAddresses: []xmlENIPrivateIP{{PrivateIPAddress: i.PrivateIP, PrivateDNSName: i.PrivateDNSName, Primary: true, Association: assoc}},
		IPv6Addresses:      []xmlInstanceIPv6{},
		InterfaceType:      "interface",
	}
	for _, a := range i.IPv6Addresses {
		eni.IPv6Addresses = append(eni.IPv6Addresses, xmlInstanceIPv6{IPv6Address: a})
	}
	x.NetworkInterfaces = []xmlInstanceENI{eni}
	return x
}

// lookupInstanceLocked finds the instance named by InstanceId.
func (s *Server) lookupInstanceLocked(id string) (*instanceRec, *apiError) {
	if id == "" {
		return nil, badRequest("MissingParameter", "The request must contain the parameter instanceId")
	}
	if !validID("i", id) {
		return nil, badRequest("InvalidInstanceID.Malformed", "Invalid id: \"%s\"", id)
	}
	i := s.ec2.instances[id]
	if i == nil {
		return nil, badRequest("InvalidInstanceID.NotFound", "%s", notFoundIDs("instance", []string{id}))
	}
	return i, nil
}

func (s *Server) describeInstanceAttribute(c *call) (any, *apiError) {
	i, err := s.lookupInstanceLocked(c.p.get("InstanceId"))
	if err != nil {
		return nil, err
	}
	out := &xmlDescribeInstanceAttribute{InstanceID: i.ID}
	switch attr := c.p.get("Attribute"); attr {
	case "sourceDestCheck":
		out.SourceDestCheck = &xmlAttributeBool{Value: i.SourceDestCheck}
	case "instanceType":
		out.InstanceType = &xmlAttributeString{Value: i.InstanceType}
	case "groupSet":
		g := s.groupsXMLLocked(i.SecurityGroupIDs)
		out.Groups = &g
	case "":
		return nil, badRequest("MissingParameter", "The request must contain the parameter attribute")
	default:
		return nil, badRequest("InvalidParameterValue", "Value (%s) for parameter attribute is invalid. Unknown attribute.", attr)
	}
	return out, nil
}

func (s *Server) modifyInstanceAttribute(c *call) (any, *apiError) {
	i, err := s.lookupInstanceLocked(c.p.get("InstanceId"))
	if err != nil {
		return nil, err
	}
	if i.State == InstanceStateTerminated || i.State == InstanceStateShuttingDown {
		return nil, badRequest("IncorrectInstanceState", "The instance '%s' is not in a state from which it can be modified.", i.ID)
	}
	// Each attribute comes either as its own structure (SourceDestCheck.Value)
	// or as Attribute plus Value.
	attr, value := c.p.get("Attribute"), c.p.get("Value")
	switch {
	case c.p.has("SourceDestCheck") || attr == "sourceDestCheck":
		v, sent, ok := c.p.boolean("SourceDestCheck.Value")
		if c.p.has("SourceDestCheck") && !sent {
			return nil, badRequest("MissingParameter", "The request must contain the parameter sourceDestCheck.value")
		}
		if !c.p.has("SourceDestCheck") {
			switch strings.ToLower(value) {
			case "true":
				v, ok = true, true
			case "false":
				v, ok = false, true
			default:
				ok = false
			}
		}
		if !ok {
			return nil, badRequest("InvalidParameterValue", "Value (%s) for parameter sourceDestCheck is invalid.", cmpOrParam(c.p, "SourceDestCheck.Value", value))
		}
		i.SourceDestCheck = v
	case c.p.has("GroupId"):
		ids := c.p.flat("GroupId")
		if err := s.checkGroupsLocked(ids, i.VPCID); err != nil {
			return nil, err
		}
		i.SecurityGroupIDs = slices.Clone(ids)
	case c.p.has("InstanceType") || attr == "instanceType":
		t := c.p.get("InstanceType.Value")
		if !c.p.has("InstanceType") {
			t = value
		}
		if i.State != InstanceStateStopped {
			return nil, badRequest("IncorrectInstanceState", "The instance '%s' is not in the 'stopped' state.", i.ID)
		}
		i.InstanceType = t
	default:
		return nil, badRequest("InvalidParameterCombination", "No attributes specified.")
	}
	return returnTrue(), nil
}

func cmpOrParam(p params, key, fallback string) string {
	if v, ok := p.str(key); ok {
		return v
	}
	return fallback
}
