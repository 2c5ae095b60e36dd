package aws

// XML documents of the ELBv2 AWS query protocol, written from the API
// reference: UpperCamelCase element names, lists of "member"s, the result
// inside <ActionResult>.

type xmlLBState struct {
	Code   string `xml:"Code"`
	Reason string `xml:"Reason,omitempty"`
}

type xmlLBAddress struct {
	IPAddress          string `xml:"IpAddress,omitempty"`
	AllocationID       string `xml:"AllocationId,omitempty"`
	PrivateIPv4Address string `xml:"PrivateIPv4Address,omitempty"`
	IPv6Address        string `xml:"IPv6Address,omitempty"`
}

type xmlLBZone struct {
	ZoneName              string          `xml:"ZoneName"`
	SubnetID              string          `xml:"SubnetId"`
	LoadBalancerAddresses *[]xmlLBAddress `xml:"LoadBalancerAddresses>member,omitempty"`
}

type xmlLoadBalancer struct {
	LoadBalancerArn       string      `xml:"LoadBalancerArn"`
	DNSName               string      `xml:"DNSName"`
	CanonicalHostedZoneID string      `xml:"CanonicalHostedZoneId"`
	CreatedTime           string      `xml:"CreatedTime"`
	LoadBalancerName      string      `xml:"LoadBalancerName"`
	Scheme                string      `xml:"Scheme"`
	VpcID                 string      `xml:"VpcId"`
	State                 xmlLBState  `xml:"State"`
	Type                  string      `xml:"Type"`
	AvailabilityZones     []xmlLBZone `xml:"AvailabilityZones>member"`
	SecurityGroups        []string    `xml:"SecurityGroups>member,omitempty"`
	IPAddressType         string      `xml:"IpAddressType"`
	EnforceSGInbound      string      `xml:"EnforceSecurityGroupInboundRulesOnPrivateLinkTraffic,omitempty"`
}

type xmlLoadBalancers struct {
	LoadBalancers []xmlLoadBalancer `xml:"LoadBalancers>member"`
	NextMarker    string            `xml:"NextMarker,omitempty"`
}

type xmlKV struct {
	Key   string `xml:"Key"`
	Value string `xml:"Value"`
}

type xmlAttributes struct {
	Attributes []xmlKV `xml:"Attributes>member"`
}

type xmlSetSecurityGroups struct {
	SecurityGroupIDs []string `xml:"SecurityGroupIds>member"`
	EnforceSGInbound string   `xml:"EnforceSecurityGroupInboundRulesOnPrivateLinkTraffic,omitempty"`
}

type xmlSetSubnets struct {
	AvailabilityZones []xmlLBZone `xml:"AvailabilityZones>member"`
	IPAddressType     string      `xml:"IpAddressType"`
}

type xmlSetIPAddressType struct {
	IPAddressType string `xml:"IpAddressType"`
}

type xmlMatcher struct {
	HTTPCode string `xml:"HttpCode"`
}

type xmlTargetGroup struct {
	TargetGroupArn             string      `xml:"TargetGroupArn"`
	TargetGroupName            string      `xml:"TargetGroupName"`
	Protocol                   string      `xml:"Protocol,omitempty"`
	Port                       int32       `xml:"Port,omitempty"`
	VpcID                      string      `xml:"VpcId,omitempty"`
	HealthCheckProtocol        string      `xml:"HealthCheckProtocol"`
	HealthCheckPort            string      `xml:"HealthCheckPort"`
	HealthCheckEnabled         bool        `xml:"HealthCheckEnabled"`
	HealthCheckIntervalSeconds int32       `xml:"HealthCheckIntervalSeconds"`
	HealthCheckTimeoutSeconds  int32       `xml:"HealthCheckTimeoutSeconds"`
	HealthyThresholdCount      int32       `xml:"HealthyThresholdCount"`
	UnhealthyThresholdCount    int32       `xml:"UnhealthyThresholdCount"`
	HealthCheckPath            string      `xml:"HealthCheckPath,omitempty"`
	Matcher                    *xmlMatcher `xml:"Matcher,omitempty"`
	LoadBalancerArns           []string    `xml:"LoadBalancerArns>member"`
	TargetType                 string      `xml:"TargetType"`
	IPAddressType              string      `xml:"IpAddressType,omitempty"`
}

type xmlTargetGroups struct {
	TargetGroups []xmlTargetGroup `xml:"TargetGroups>member"`
	NextMarker   string           `xml:"NextMarker,omitempty"`
}

type xmlTargetDescription struct {
	ID               string `xml:"Id"`
	Port             int32  `xml:"Port,omitempty"`
	AvailabilityZone string `xml:"AvailabilityZone,omitempty"`
}

type xmlTargetHealth struct {
	State       string `xml:"State"`
	Reason      string `xml:"Reason,omitempty"`
	Description string `xml:"Description,omitempty"`
}

type xmlTargetHealthDescription struct {
	Target          xmlTargetDescription `xml:"Target"`
	HealthCheckPort string               `xml:"HealthCheckPort"`
	TargetHealth    xmlTargetHealth      `xml:"TargetHealth"`
}

type xmlTargetHealthDescriptions struct {
	TargetHealthDescriptions []xmlTargetHealthDescription `xml:"TargetHealthDescriptions>member"`
}

type xmlCertificate struct {
	CertificateArn string `xml:"CertificateArn"`
	IsDefault      *bool  `xml:"IsDefault,omitempty"`
}

type xmlTGTuple struct {
	TargetGroupArn string `xml:"TargetGroupArn"`
	Weight         int32  `xml:"Weight"`
}

type xmlStickiness struct {
	Enabled         bool   `xml:"Enabled"`
	DurationSeconds *int32 `xml:"DurationSeconds,omitempty"`
}

type xmlForwardConfig struct {
	TargetGroups []xmlTGTuple   `xml:"TargetGroups>member"`
	Stickiness   *xmlStickiness `xml:"TargetGroupStickinessConfig,omitempty"`
}

type xmlAction struct {
	Type           string            `xml:"Type"`
	TargetGroupArn string            `xml:"TargetGroupArn,omitempty"`
	Order          *int32            `xml:"Order,omitempty"`
	ForwardConfig  *xmlForwardConfig `xml:"ForwardConfig,omitempty"`
}

type xmlListener struct {
	ListenerArn     string           `xml:"ListenerArn"`
	LoadBalancerArn string           `xml:"LoadBalancerArn"`
	Port            int32            `xml:"Port"`
	Protocol        string           `xml:"Protocol"`
	Certificates    []xmlCertificate `xml:"Certificates>member,omitempty"`
	SslPolicy       string           `xml:"SslPolicy,omitempty"`
	DefaultActions  []xmlAction      `xml:"DefaultActions>member"`
	AlpnPolicy      []string         `xml:"AlpnPolicy>member,omitempty"`
}

type xmlListeners struct {
	Listeners  []xmlListener `xml:"Listeners>member"`
	NextMarker string        `xml:"NextMarker,omitempty"`
}

type xmlTagDescription struct {
	ResourceArn string  `xml:"ResourceArn"`
	Tags        []xmlKV `xml:"Tags>member"`
}

type xmlTagDescriptions struct {
	TagDescriptions []xmlTagDescription `xml:"TagDescriptions>member"`
}

func xmlKVs(m map[string]string) []xmlKV {
	out := []xmlKV{}
	for _, k := range sortedKeys(m) {
		out = append(out, xmlKV{Key: k, Value: m[k]})
	}
	return out
}
