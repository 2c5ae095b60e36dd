package aws

import "encoding/xml"

// XML documents of the Classic ELB API (2012-06-01), written from the API
// reference: the AWS query protocol's "member" lists, the result inside
// <ActionResult>. Unlike ELBv2's documents these send an empty list as
// an empty element (<Instances/>), as the service does.

// xmlList is a list sent as <Name><member>..</member></Name>, present even
// when empty.
type xmlList[T any] []T

func (l xmlList[T]) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	if err := e.EncodeToken(start); err != nil {
		return err
	}
	for _, v := range l {
		if err := e.EncodeElement(v, xml.StartElement{Name: xml.Name{Local: "member"}}); err != nil {
			return err
		}
	}
	return e.EncodeToken(start.End())
}

type xmlClassicListener struct {
	Protocol         string `xml:"Protocol"`
	LoadBalancerPort int32  `xml:"LoadBalancerPort"`
	InstanceProtocol string `xml:"InstanceProtocol"`
	InstancePort     int32  `xml:"InstancePort"`
	SSLCertificateID string `xml:"SSLCertificateId,omitempty"`
}

type xmlListenerDescription struct {
	Listener    xmlClassicListener `xml:"Listener"`
	PolicyNames xmlList[string]    `xml:"PolicyNames"`
}

type xmlBackendServer struct {
	InstancePort int32           `xml:"InstancePort"`
	PolicyNames  xmlList[string] `xml:"PolicyNames"`
}

type xmlAppCookiePolicy struct {
	PolicyName string `xml:"PolicyName"`
	CookieName string `xml:"CookieName"`
}

type xmlLBCookiePolicy struct {
	PolicyName             string `xml:"PolicyName"`
	CookieExpirationPeriod string `xml:"CookieExpirationPeriod,omitempty"`
}

type xmlClassicPolicies struct {
	AppCookieStickinessPolicies xmlList[xmlAppCookiePolicy] `xml:"AppCookieStickinessPolicies"`
	LBCookieStickinessPolicies  xmlList[xmlLBCookiePolicy]  `xml:"LBCookieStickinessPolicies"`
	OtherPolicies               xmlList[string]             `xml:"OtherPolicies"`
}

type xmlInstanceID struct {
	InstanceID string `xml:"InstanceId"`
}

type xmlClassicHealthCheck struct {
	Target             string `xml:"Target"`
	Interval           int32  `xml:"Interval"`
	Timeout            int32  `xml:"Timeout"`
	UnhealthyThreshold int32  `xml:"UnhealthyThreshold"`
	HealthyThreshold   int32  `xml:"HealthyThreshold"`
}

type xmlSourceSecurityGroup struct {
	OwnerAlias string `xml:"OwnerAlias"`
	GroupName  string `xml:"GroupName"`
}

type xmlClassicLB struct {
	LoadBalancerName          string                          `xml:"LoadBalancerName"`
	DNSName                   string                          `xml:"DNSName"`
	CanonicalHostedZoneName   string                          `xml:"CanonicalHostedZoneName,omitempty"`
	CanonicalHostedZoneNameID string                          `xml:"CanonicalHostedZoneNameID"`
	ListenerDescriptions      xmlList[xmlListenerDescription] `xml:"ListenerDescriptions"`
	Policies                  xmlClassicPolicies              `xml:"Policies"`
	BackendServerDescriptions xmlList[xmlBackendServer]       `xml:"BackendServerDescriptions"`
	AvailabilityZones         xmlList[string]                 `xml:"AvailabilityZones"`
	Subnets                   xmlList[string]                 `xml:"Subnets"`
	VPCID                     string                          `xml:"VPCId"`
	Instances                 xmlList[xmlInstanceID]          `xml:"Instances"`
	HealthCheck               xmlClassicHealthCheck           `xml:"HealthCheck"`
	SourceSecurityGroup       *xmlSourceSecurityGroup         `xml:"SourceSecurityGroup,omitempty"`
	SecurityGroups            xmlList[string]                 `xml:"SecurityGroups"`
	CreatedTime               string                          `xml:"CreatedTime"`
	Scheme                    string                          `xml:"Scheme"`
}

type xmlClassicLBs struct {
	LoadBalancerDescriptions xmlList[xmlClassicLB] `xml:"LoadBalancerDescriptions"`
	NextMarker               string                `xml:"NextMarker,omitempty"`
}

type xmlCreateClassicLB struct {
	DNSName string `xml:"DNSName"`
}

type xmlClassicInstances struct {
	Instances xmlList[xmlInstanceID] `xml:"Instances"`
}

type xmlClassicInstanceState struct {
	InstanceID  string `xml:"InstanceId"`
	State       string `xml:"State"`
	ReasonCode  string `xml:"ReasonCode"`
	Description string `xml:"Description"`
}

type xmlClassicInstanceStates struct {
	InstanceStates xmlList[xmlClassicInstanceState] `xml:"InstanceStates"`
}

type xmlHealthCheckResult struct {
	HealthCheck xmlClassicHealthCheck `xml:"HealthCheck"`
}

type xmlEnabled struct {
	Enabled bool `xml:"Enabled"`
}

type xmlAccessLog struct {
	Enabled        bool   `xml:"Enabled"`
	S3BucketName   string `xml:"S3BucketName,omitempty"`
	EmitInterval   int32  `xml:"EmitInterval,omitempty"`
	S3BucketPrefix string `xml:"S3BucketPrefix,omitempty"`
}

type xmlConnectionDraining struct {
	Enabled bool  `xml:"Enabled"`
	Timeout int32 `xml:"Timeout"`
}

type xmlConnectionSettings struct {
	IdleTimeout int32 `xml:"IdleTimeout"`
}

type xmlClassicAttributes struct {
	CrossZoneLoadBalancing xmlEnabled            `xml:"CrossZoneLoadBalancing"`
	AccessLog              xmlAccessLog          `xml:"AccessLog"`
	ConnectionDraining     xmlConnectionDraining `xml:"ConnectionDraining"`
	ConnectionSettings     xmlConnectionSettings `xml:"ConnectionSettings"`
	AdditionalAttributes   xmlList[xmlKV]        `xml:"AdditionalAttributes"`
}

type xmlDescribeClassicAttributes struct {
	LoadBalancerAttributes xmlClassicAttributes `xml:"LoadBalancerAttributes"`
}

type xmlModifyClassicAttributes struct {
	LoadBalancerName       string               `xml:"LoadBalancerName"`
	LoadBalancerAttributes xmlClassicAttributes `xml:"LoadBalancerAttributes"`
}

type xmlPolicyAttribute struct {
	AttributeName  string `xml:"AttributeName"`
	AttributeValue string `xml:"AttributeValue"`
}

type xmlPolicyDescription struct {
	PolicyName                  string                      `xml:"PolicyName"`
	PolicyTypeName              string                      `xml:"PolicyTypeName"`
	PolicyAttributeDescriptions xmlList[xmlPolicyAttribute] `xml:"PolicyAttributeDescriptions"`
}

type xmlPolicyDescriptions struct {
	PolicyDescriptions xmlList[xmlPolicyDescription] `xml:"PolicyDescriptions"`
}

type xmlSecurityGroupIDs struct {
	SecurityGroups xmlList[string] `xml:"SecurityGroups"`
}

type xmlSubnetIDs struct {
	Subnets xmlList[string] `xml:"Subnets"`
}

type xmlClassicTagDescription struct {
	LoadBalancerName string         `xml:"LoadBalancerName"`
	Tags             xmlList[xmlKV] `xml:"Tags"`
}

type xmlClassicTagDescriptions struct {
	TagDescriptions xmlList[xmlClassicTagDescription] `xml:"TagDescriptions"`
}

func classicAttributesXML(a ClassicAttributes) xmlClassicAttributes {
	x := xmlClassicAttributes{
		CrossZoneLoadBalancing: xmlEnabled{Enabled: a.CrossZoneLoadBalancing},
		AccessLog:              xmlAccessLog{Enabled: a.AccessLog},
		ConnectionDraining:     xmlConnectionDraining{Enabled: a.ConnectionDraining, Timeout: a.ConnectionDrainingTimeout},
		ConnectionSettings:     xmlConnectionSettings{IdleTimeout: a.IdleTimeout},
		AdditionalAttributes:   xmlKVs(a.Additional),
	}
	if a.AccessLog {
		x.AccessLog = xmlAccessLog{Enabled: true, S3BucketName: a.AccessLogS3BucketName, EmitInterval: a.AccessLogEmitInterval, S3BucketPrefix: a.AccessLogS3BucketPrefix}
	}
	return x
}

func classicHealthCheckXML(h ClassicHealthCheck) xmlClassicHealthCheck {
	return xmlClassicHealthCheck{Target: h.Target, Interval: h.Interval, Timeout: h.Timeout, UnhealthyThreshold: h.UnhealthyThreshold, HealthyThreshold: h.HealthyThreshold}
}

func policyXML(p ClassicPolicy) xmlPolicyDescription {
	x := xmlPolicyDescription{PolicyName: p.Name, PolicyTypeName: p.TypeName, PolicyAttributeDescriptions: xmlList[xmlPolicyAttribute]{}}
	for _, a := range p.Attributes {
		x.PolicyAttributeDescriptions = append(x.PolicyAttributeDescriptions, xmlPolicyAttribute{AttributeName: a.Name, AttributeValue: a.Value})
	}
	return x
}
