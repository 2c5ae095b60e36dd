package aws

// XML documents of the EC2 query protocol, written from the API reference:
// lowercase-first element names, lists as "xxxSet" (or another name) of
// "item"s, booleans as true/false, timestamps in ISO 8601.

type xmlTag struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

func xmlTags(m map[string]string) []xmlTag {
	keys := sortedKeys(m)
	out := make([]xmlTag, 0, len(keys))
	for _, k := range keys {
		out = append(out, xmlTag{Key: k, Value: m[k]})
	}
	return out
}

type xmlGroup struct {
	GroupID   string `xml:"groupId"`
	GroupName string `xml:"groupName"`
}

// DescribeInstances.

type xmlDescribeInstances struct {
	ec2Head
	Reservations []xmlReservation `xml:"reservationSet>item"`
	NextToken    string           `xml:"nextToken,omitempty"`
}

type xmlReservation struct {
	ReservationID string        `xml:"reservationId"`
	OwnerID       string        `xml:"ownerId"`
	Groups        []xmlGroup    `xml:"groupSet>item"`
	Instances     []xmlInstance `xml:"instancesSet>item"`
}

type xmlInstanceState struct {
	Code int32  `xml:"code"`
	Name string `xml:"name"`
}

type xmlPlacement struct {
	AvailabilityZone   string `xml:"availabilityZone"`
	AvailabilityZoneID string `xml:"availabilityZoneId,omitempty"`
	GroupName          string `xml:"groupName"`
	Tenancy            string `xml:"tenancy"`
}

type xmlMonitoring struct {
	State string `xml:"state"`
}

type xmlStateReason struct {
	Code    string `xml:"code"`
	Message string `xml:"message"`
}

type xmlInstance struct {
	InstanceID            string                  `xml:"instanceId"`
	ImageID               string                  `xml:"imageId"`
	InstanceState         xmlInstanceState        `xml:"instanceState"`
	PrivateDNSName        string                  `xml:"privateDnsName"`
	DNSName               string                  `xml:"dnsName"`
	Reason                string                  `xml:"reason"`
	AmiLaunchIndex        int                     `xml:"amiLaunchIndex"`
	ProductCodes          struct{}                `xml:"productCodes"`
	InstanceType          string                  `xml:"instanceType"`
	LaunchTime            string                  `xml:"launchTime"`
	Placement             xmlPlacement            `xml:"placement"`
	Monitoring            xmlMonitoring           `xml:"monitoring"`
	SubnetID              string                  `xml:"subnetId,omitempty"`
	VPCID                 string                  `xml:"vpcId,omitempty"`
	PrivateIPAddress      string                  `xml:"privateIpAddress,omitempty"`
	IPAddress             string                  `xml:"ipAddress,omitempty"`
	SourceDestCheck       *bool                   `xml:"sourceDestCheck,omitempty"`
	Groups                []xmlGroup              `xml:"groupSet>item"`
	StateReason           *xmlStateReason         `xml:"stateReason,omitempty"`
	Architecture          string                  `xml:"architecture"`
	RootDeviceType        string                  `xml:"rootDeviceType"`
	RootDeviceName        string                  `xml:"rootDeviceName"`
	BlockDeviceMappings   []xmlBlockDeviceMapping `xml:"blockDeviceMapping>item"`
	VirtualizationType    string                  `xml:"virtualizationType"`
	Tags                  []xmlTag                `xml:"tagSet>item,omitempty"`
	Hypervisor            string                  `xml:"hypervisor"`
	NetworkInterfaces     []xmlInstanceENI        `xml:"networkInterfaceSet>item"`
	EbsOptimized          bool                    `xml:"ebsOptimized"`
	EnaSupport            bool                    `xml:"enaSupport"`
	PrivateDNSNameOptions *xmlPrivateDNSOptions   `xml:"privateDnsNameOptions,omitempty"`
}

type xmlBlockDeviceMapping struct {
	DeviceName string            `xml:"deviceName"`
	Ebs        xmlEbsBlockDevice `xml:"ebs"`
}

type xmlEbsBlockDevice struct {
	VolumeID            string `xml:"volumeId"`
	Status              string `xml:"status"`
	AttachTime          string `xml:"attachTime"`
	DeleteOnTermination bool   `xml:"deleteOnTermination"`
}

type xmlPrivateDNSOptions struct {
	HostnameType                    string `xml:"hostnameType"`
	EnableResourceNameDNSARecord    bool   `xml:"enableResourceNameDnsARecord"`
	EnableResourceNameDNSAAAARecord bool   `xml:"enableResourceNameDnsAAAARecord"`
}

type xmlInstanceENI struct {
	NetworkInterfaceID string             `xml:"networkInterfaceId"`
	SubnetID           string             `xml:"subnetId"`
	VPCID              string             `xml:"vpcId"`
	Description        string             `xml:"description"`
	OwnerID            string             `xml:"ownerId"`
	Status             string             `xml:"status"`
	MACAddress         string             `xml:"macAddress"`
	PrivateIPAddress   string             `xml:"privateIpAddress"`
	PrivateDNSName     string             `xml:"privateDnsName"`
	SourceDestCheck    bool               `xml:"sourceDestCheck"`
	Groups             []xmlGroup         `xml:"groupSet>item"`
	Attachment         xmlENIAttachment   `xml:"attachment"`
	Association        *xmlENIAssociation `xml:"association,omitempty"`
	PrivateIPAddresses []xmlENIPrivateIP  `xml:"privateIpAddressesSet>item"`
	IPv6Addresses      []xmlInstanceIPv6  `xml:"ipv6AddressesSet>item"`
	InterfaceType      string             `xml:"interfaceType"`
}

type xmlENIAttachment struct {
	AttachmentID        string `xml:"attachmentId"`
	DeviceIndex         int    `xml:"deviceIndex"`
	Status              string `xml:"status"`
	AttachTime          string `xml:"attachTime"`
	DeleteOnTermination bool   `xml:"deleteOnTermination"`
	NetworkCardIndex    int    `xml:"networkCardIndex"`
}

type xmlENIAssociation struct {
	PublicIP      string `xml:"publicIp"`
	PublicDNSName string `xml:"publicDnsName"`
	IPOwnerID     string `xml:"ipOwnerId"`
}

type xmlENIPrivateIP struct {
	PrivateIPAddress string             `xml:"privateIpAddress"`
	PrivateDNSName   string             `xml:"privateDnsName"`
	Primary          bool               `xml:"primary"`
	Association      *xmlENIAssociation `xml:"association,omitempty"`
}

type xmlInstanceIPv6 struct {
	IPv6Address   string `xml:"ipv6Address"`
	IsPrimaryIPv6 bool   `xml:"isPrimaryIpv6"`
}

// DescribeInstanceAttribute.

type xmlAttributeBool struct {
	Value bool `xml:"value"`
}

type xmlAttributeString struct {
	Value string `xml:"value"`
}

type xmlDescribeInstanceAttribute struct {
	ec2Head
	InstanceID      string              `xml:"instanceId"`
	SourceDestCheck *xmlAttributeBool   `xml:"sourceDestCheck,omitempty"`
	InstanceType    *xmlAttributeString `xml:"instanceType,omitempty"`
	Groups          *[]xmlGroup         `xml:"groupSet>item,omitempty"`
}

// DescribeAvailabilityZones.

type xmlDescribeAvailabilityZones struct {
	ec2Head
	Zones []xmlAvailabilityZone `xml:"availabilityZoneInfo>item"`
}

type xmlAvailabilityZone struct {
	ZoneName           string   `xml:"zoneName"`
	ZoneState          string   `xml:"zoneState"`
	RegionName         string   `xml:"regionName"`
	Messages           struct{} `xml:"messageSet"`
	ZoneID             string   `xml:"zoneId"`
	ZoneType           string   `xml:"zoneType"`
	OptInStatus        string   `xml:"optInStatus"`
	GroupName          string   `xml:"groupName"`
	NetworkBorderGroup string   `xml:"networkBorderGroup"`
	GroupLongName      string   `xml:"groupLongName"`
	ParentZoneName     string   `xml:"parentZoneName,omitempty"`
	ParentZoneID       string   `xml:"parentZoneId,omitempty"`
}

// DescribeVpcs.

type xmlDescribeVpcs struct {
	ec2Head
	Vpcs      []xmlVpc `xml:"vpcSet>item"`
	NextToken string   `xml:"nextToken,omitempty"`
}

type xmlCIDRState struct {
	State string `xml:"state"`
}

type xmlVpcCIDRAssoc struct {
	AssociationID string       `xml:"associationId"`
	CIDRBlock     string       `xml:"cidrBlock"`
	State         xmlCIDRState `xml:"cidrBlockState"`
}

type xmlIPv6CIDRAssoc struct {
	AssociationID      string       `xml:"associationId"`
	IPv6CIDRBlock      string       `xml:"ipv6CidrBlock"`
	State              xmlCIDRState `xml:"ipv6CidrBlockState"`
	NetworkBorderGroup string       `xml:"networkBorderGroup,omitempty"`
	IPv6Pool           string       `xml:"ipv6Pool,omitempty"`
}

type xmlVpc struct {
	VpcID               string             `xml:"vpcId"`
	OwnerID             string             `xml:"ownerId"`
	State               string             `xml:"state"`
	CIDRBlock           string             `xml:"cidrBlock"`
	CIDRBlockAssocs     []xmlVpcCIDRAssoc  `xml:"cidrBlockAssociationSet>item"`
	IPv6CIDRBlockAssocs []xmlIPv6CIDRAssoc `xml:"ipv6CidrBlockAssociationSet>item,omitempty"`
	DhcpOptionsID       string             `xml:"dhcpOptionsId"`
	Tags                []xmlTag           `xml:"tagSet>item,omitempty"`
	InstanceTenancy     string             `xml:"instanceTenancy"`
	IsDefault           bool               `xml:"isDefault"`
}

// DescribeSubnets.

type xmlDescribeSubnets struct {
	ec2Head
	Subnets   []xmlSubnet `xml:"subnetSet>item"`
	NextToken string      `xml:"nextToken,omitempty"`
}

type xmlSubnet struct {
	SubnetID                    string             `xml:"subnetId"`
	SubnetArn                   string             `xml:"subnetArn"`
	State                       string             `xml:"state"`
	OwnerID                     string             `xml:"ownerId"`
	VpcID                       string             `xml:"vpcId"`
	CIDRBlock                   string             `xml:"cidrBlock"`
	IPv6CIDRBlockAssocs         []xmlIPv6CIDRAssoc `xml:"ipv6CidrBlockAssociationSet>item"`
	AvailableIPAddressCount     int                `xml:"availableIpAddressCount"`
	AvailabilityZone            string             `xml:"availabilityZone"`
	AvailabilityZoneID          string             `xml:"availabilityZoneId"`
	DefaultForAz                bool               `xml:"defaultForAz"`
	MapPublicIPOnLaunch         bool               `xml:"mapPublicIpOnLaunch"`
	AssignIPv6AddressOnCreation bool               `xml:"assignIpv6AddressOnCreation"`
	Tags                        []xmlTag           `xml:"tagSet>item,omitempty"`
}

// DescribeRouteTables.

type xmlDescribeRouteTables struct {
	ec2Head
	RouteTables []xmlRouteTable `xml:"routeTableSet>item"`
	NextToken   string          `xml:"nextToken,omitempty"`
}

type xmlRouteTable struct {
	RouteTableID   string               `xml:"routeTableId"`
	VpcID          string               `xml:"vpcId"`
	OwnerID        string               `xml:"ownerId"`
	Routes         []xmlRoute           `xml:"routeSet>item"`
	Associations   []xmlRouteTableAssoc `xml:"associationSet>item"`
	PropagatingVgw struct{}             `xml:"propagatingVgwSet"`
	Tags           []xmlTag             `xml:"tagSet>item"`
}

type xmlRoute struct {
	DestinationCIDRBlock     string `xml:"destinationCidrBlock,omitempty"`
	DestinationIPv6CIDRBlock string `xml:"destinationIpv6CidrBlock,omitempty"`
	GatewayID                string `xml:"gatewayId,omitempty"`
	InstanceID               string `xml:"instanceId,omitempty"`
	InstanceOwnerID          string `xml:"instanceOwnerId,omitempty"`
	NetworkInterfaceID       string `xml:"networkInterfaceId,omitempty"`
	NatGatewayID             string `xml:"natGatewayId,omitempty"`
	TransitGatewayID         string `xml:"transitGatewayId,omitempty"`
	VpcPeeringConnectionID   string `xml:"vpcPeeringConnectionId,omitempty"`
	State                    string `xml:"state"`
	Origin                   string `xml:"origin"`
}

type xmlRouteTableAssoc struct {
	RouteTableAssociationID string               `xml:"routeTableAssociationId"`
	RouteTableID            string               `xml:"routeTableId"`
	SubnetID                string               `xml:"subnetId,omitempty"`
	Main                    bool                 `xml:"main"`
	AssociationState        xmlRouteTableAssocSt `xml:"associationState"`
}

type xmlRouteTableAssocSt struct {
	State string `xml:"state"`
}

// Security groups.

type xmlCreateSecurityGroup struct {
	ec2Head
	Return           bool     `xml:"return"`
	GroupID          string   `xml:"groupId"`
	SecurityGroupArn string   `xml:"securityGroupArn"`
	Tags             []xmlTag `xml:"tagSet>item,omitempty"`
}

type xmlDeleteSecurityGroup struct {
	ec2Head
	Return  bool   `xml:"return"`
	GroupID string `xml:"groupId"`
}

type xmlDescribeSecurityGroups struct {
	ec2Head
	Groups    []xmlSecurityGroup `xml:"securityGroupInfo>item"`
	NextToken string             `xml:"nextToken,omitempty"`
}

type xmlSecurityGroup struct {
	OwnerID             string            `xml:"ownerId"`
	GroupID             string            `xml:"groupId"`
	GroupName           string            `xml:"groupName"`
	GroupDescription    string            `xml:"groupDescription"`
	VpcID               string            `xml:"vpcId"`
	IPPermissions       []xmlIPPermission `xml:"ipPermissions>item"`
	IPPermissionsEgress []xmlIPPermission `xml:"ipPermissionsEgress>item"`
	Tags                []xmlTag          `xml:"tagSet>item,omitempty"`
	SecurityGroupArn    string            `xml:"securityGroupArn"`
}

type xmlIPPermission struct {
	IPProtocol    string         `xml:"ipProtocol"`
	FromPort      *int32         `xml:"fromPort,omitempty"`
	ToPort        *int32         `xml:"toPort,omitempty"`
	Groups        []xmlGroupPair `xml:"groups>item"`
	IPRanges      []xmlIPRange   `xml:"ipRanges>item"`
	IPv6Ranges    []xmlIPv6Range `xml:"ipv6Ranges>item"`
	PrefixListIDs struct{}       `xml:"prefixListIds"`
}

type xmlGroupPair struct {
	UserID      string `xml:"userId"`
	GroupID     string `xml:"groupId"`
	Description string `xml:"description,omitempty"`
}

type xmlIPRange struct {
	CidrIP      string `xml:"cidrIp"`
	Description string `xml:"description,omitempty"`
}

type xmlIPv6Range struct {
	CidrIPv6    string `xml:"cidrIpv6"`
	Description string `xml:"description,omitempty"`
}

type xmlAuthorizeIngress struct {
	ec2Head
	Return bool                   `xml:"return"`
	Rules  []xmlSecurityGroupRule `xml:"securityGroupRuleSet>item"`
}

type xmlSecurityGroupRule struct {
	SecurityGroupRuleID  string           `xml:"securityGroupRuleId"`
	GroupID              string           `xml:"groupId"`
	GroupOwnerID         string           `xml:"groupOwnerId"`
	IsEgress             bool             `xml:"isEgress"`
	IPProtocol           string           `xml:"ipProtocol"`
	FromPort             int32            `xml:"fromPort"`
	ToPort               int32            `xml:"toPort"`
	CidrIPv4             string           `xml:"cidrIpv4,omitempty"`
	CidrIPv6             string           `xml:"cidrIpv6,omitempty"`
	ReferencedGroupInfo  *xmlReferencedSG `xml:"referencedGroupInfo,omitempty"`
	Description          string           `xml:"description,omitempty"`
	SecurityGroupRuleArn string           `xml:"securityGroupRuleArn"`
	Tags                 []xmlTag         `xml:"tagSet>item,omitempty"`
}

type xmlReferencedSG struct {
	GroupID string `xml:"groupId"`
	UserID  string `xml:"userId"`
}

type xmlRevokeIngress struct {
	ec2Head
	Return       bool               `xml:"return"`
	Unknown      []xmlIPPermission  `xml:"unknownIpPermissionSet>item,omitempty"`
	RevokedRules []xmlRevokedSGRule `xml:"revokedSecurityGroupRuleSet>item,omitempty"`
}

type xmlRevokedSGRule struct {
	SecurityGroupRuleID string `xml:"securityGroupRuleId"`
	GroupID             string `xml:"groupId"`
	IsEgress            bool   `xml:"isEgress"`
	IPProtocol          string `xml:"ipProtocol"`
	FromPort            int32  `xml:"fromPort"`
	ToPort              int32  `xml:"toPort"`
	CidrIPv4            string `xml:"cidrIpv4,omitempty"`
	CidrIPv6            string `xml:"cidrIpv6,omitempty"`
	ReferencedGroupID   string `xml:"referencedGroupId,omitempty"`
	Description         string `xml:"description,omitempty"`
}

// DescribeVolumes.

type xmlDescribeVolumes struct {
	ec2Head
	Volumes   []xmlVolume `xml:"volumeSet>item"`
	NextToken string      `xml:"nextToken,omitempty"`
}

type xmlVolume struct {
	VolumeID           string                `xml:"volumeId"`
	Size               int32                 `xml:"size"`
	SnapshotID         string                `xml:"snapshotId"`
	AvailabilityZone   string                `xml:"availabilityZone"`
	AvailabilityZoneID string                `xml:"availabilityZoneId,omitempty"`
	Status             string                `xml:"status"`
	CreateTime         string                `xml:"createTime"`
	Attachments        []xmlVolumeAttachment `xml:"attachmentSet>item"`
	Tags               []xmlTag              `xml:"tagSet>item,omitempty"`
	VolumeType         string                `xml:"volumeType"`
	IOPS               int32                 `xml:"iops,omitempty"`
	Throughput         int32                 `xml:"throughput,omitempty"`
	Encrypted          bool                  `xml:"encrypted"`
	MultiAttachEnabled bool                  `xml:"multiAttachEnabled"`
}

type xmlVolumeAttachment struct {
	VolumeID            string `xml:"volumeId"`
	InstanceID          string `xml:"instanceId"`
	Device              string `xml:"device"`
	Status              string `xml:"status"`
	AttachTime          string `xml:"attachTime"`
	DeleteOnTermination bool   `xml:"deleteOnTermination"`
}
