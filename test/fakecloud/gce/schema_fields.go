// Code generated from compute-api.json (google.golang.org/api v0.304.0,
// discovery revision 20261007) by a one-off script. DO NOT EDIT.

package gce

// schemaFields lists, per request schema, the top-level properties the
// discovery document defines. The fake refuses a body with any other
// property, as the real API refuses unknown names.
var schemaFields = map[string][]string{
	"Address": {
		"address", "addressType", "creationTimestamp", "description", "id",
		"ipCollection", "ipVersion", "ipv6EndpointType", "kind",
		"labelFingerprint", "labels", "name", "network", "networkTier",
		"prefixLength", "purpose", "region", "selfLink", "status", "subnetwork",
		"users",
	},
	"BackendService": {
		"affinityCookieTtlSec", "backends", "cdnPolicy", "circuitBreakers",
		"compressionMode", "connectionDraining", "connectionTrackingPolicy",
		"consistentHash", "creationTimestamp", "customMetrics",
		"customRequestHeaders", "customResponseHeaders", "description",
		"edgeSecurityPolicy", "enableCDN", "externalManagedMigrationState",
		"externalManagedMigrationTestingPercentage", "failoverPolicy",
		"fingerprint", "haPolicy", "healthChecks", "iap", "id",
		"ipAddressSelectionPolicy", "kind", "loadBalancingScheme",
		"localityLbPolicies", "localityLbPolicy", "logConfig", "maxStreamDuration",
		"metadatas", "name", "network", "networkPassThroughLbTrafficPolicy",
		"orchestrationInfo", "outlierDetection", "params", "port", "portName",
		"protocol", "region", "securityPolicy", "securitySettings", "selfLink",
		"serviceBindings", "serviceLbPolicy", "sessionAffinity",
		"strongSessionAffinityCookie", "subsetting", "timeoutSec", "tlsSettings",
		"usedBy",
	},
	"Firewall": {
		"allowed", "creationTimestamp", "denied", "description",
		"destinationRanges", "direction", "disabled", "id", "kind", "logConfig",
		"name", "network", "params", "priority", "selfLink", "sourceRanges",
		"sourceServiceAccounts", "sourceTags", "targetServiceAccounts",
		"targetTags",
	},
	"ForwardingRule": {
		"IPAddress", "IPProtocol", "allPorts", "allowGlobalAccess",
		"allowPscGlobalAccess", "attachedExtensions", "backendService",
		"baseForwardingRule", "creationTimestamp", "description",
		"externalManagedBackendBucketMigrationState",
		"externalManagedBackendBucketMigrationTestingPercentage", "fingerprint",
		"id", "ipCollection", "ipVersion", "isMirroringCollector", "kind",
		"labelFingerprint", "labels", "loadBalancingScheme", "metadataFilters",
		"name", "network", "networkTier", "noAutomateDnsZone", "portRange",
		"ports", "pscConnectionId", "pscConnectionStatus", "region", "selfLink",
		"selfLinkWithId", "serviceDirectoryRegistrations", "serviceLabel",
		"serviceName", "sourceIpRanges", "subnetwork", "target",
	},
	"HealthCheck": {
		"checkIntervalSec", "creationTimestamp", "description", "grpcHealthCheck",
		"grpcTlsHealthCheck", "healthyThreshold", "http2HealthCheck",
		"httpHealthCheck", "httpsHealthCheck", "id", "kind", "logConfig", "name",
		"region", "selfLink", "sourceRegions", "sslHealthCheck", "tcpHealthCheck",
		"timeoutSec", "type", "unhealthyThreshold",
	},
	"HttpHealthCheck": {
		"checkIntervalSec", "creationTimestamp", "description", "healthyThreshold",
		"host", "id", "kind", "name", "port", "requestPath", "selfLink",
		"timeoutSec", "unhealthyThreshold",
	},
	"InstanceGroup": {
		"creationTimestamp", "description", "fingerprint", "id", "kind", "name",
		"namedPorts", "network", "region", "selfLink", "size", "subnetwork",
		"zone",
	},
	"InstanceGroupsAddInstancesRequest": {
		"instances",
	},
	"InstanceGroupsListInstancesRequest": {
		"instanceState",
	},
	"InstanceGroupsRemoveInstancesRequest": {
		"instances",
	},
	"Route": {
		"asPaths", "creationTimestamp", "description", "destRange", "id", "kind",
		"name", "network", "nextHopGateway", "nextHopHub", "nextHopIlb",
		"nextHopInstance", "nextHopInterRegionCost",
		"nextHopInterconnectAttachment", "nextHopIp", "nextHopMed",
		"nextHopNetwork", "nextHopOrigin", "nextHopPeering", "nextHopVpnTunnel",
		"params", "priority", "routeStatus", "routeType", "selfLink", "tags",
		"warnings",
	},
	"TargetPool": {
		"backupPool", "creationTimestamp", "description", "failoverRatio",
		"healthChecks", "id", "instances", "kind", "name", "region",
		"securityPolicy", "selfLink", "sessionAffinity",
	},
	"TargetPoolsAddHealthCheckRequest": {
		"healthChecks",
	},
	"TargetPoolsAddInstanceRequest": {
		"instances",
	},
	"TargetPoolsRemoveHealthCheckRequest": {
		"healthChecks",
	},
	"TargetPoolsRemoveInstanceRequest": {
		"instances",
	},
	"TargetReference": {
		"target",
	},
}
