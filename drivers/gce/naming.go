package gce

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Resource names and descriptions exactly as cloud-provider-gcp makes them
// (gce_loadbalancer_naming.go), so a cluster switching from it keeps its
// load balancers. A Service's own resources are named for its UID ("a" +
// the UID without dashes, 32 characters, cloudprovider's default); what
// its load balancers share is named for the cluster ID.

// nodesHealthCheckName is the health check of kube-proxy's health port
// that every Service with externalTrafficPolicy Cluster shares; a legacy
// HTTP health check for target pools, a global health check for backend
// services, the same name for both.
func nodesHealthCheckName(cid string) string { return "k8s-" + cid + "-node" }

// firewallName is the rule that lets clients reach the nodes.
func firewallName(lb string) string { return "k8s-fw-" + lb }

// denyFirewallName is the rule of cloud-provider-gcp's opt-in L4 deny
// firewall (MakeFirewallDenyName), which denies all else to the address.
func denyFirewallName(lb string) string { return firewallName(lb) + "-deny" }

// externalHCFirewallName lets Google's health checkers reach a target
// pool's health check port.
func externalHCFirewallName(cid, hcName string, shared bool) string {
	if shared {
		return nodesHealthCheckName(cid) + "-http-hc"
	}
	return "k8s-" + hcName + "-http-hc"
}

// internalHCFirewallName is the same for a backend service's health check.
func internalHCFirewallName(lb, cid string, shared bool) string {
	if shared {
		return nodesHealthCheckName(cid) + "-hc"
	}
	return lb + "-hc"
}

// instanceGroupName is the cluster's unmanaged group of one zone, shared
// by its internal load balancers (and GKE's ingress).
func instanceGroupName(cid string) string {
	if cid == "" {
		return "k8s-ig"
	}
	return "k8s-ig--" + cid
}

// sharedBackendServiceName is the backend service Services share with
// cloud.google.com/load-balancer-backend-share: one per protocol and
// session affinity.
func sharedBackendServiceName(cid, protocol string, affinity v1.ServiceAffinity) string {
	h := sha1.Sum([]byte(affinity))
	return fmt.Sprintf("k8s-%s-internal-%s-nmv1-%s", cid, strings.ToLower(protocol), hex.EncodeToString(h[:])[:16])
}

// serviceDescription marks forwarding rules, target pools, addresses and
// a Service's own backend service and health check.
func serviceDescription(service string) string {
	return fmt.Sprintf(`{"kubernetes.io/service-name":"%s"}`, service)
}

// firewallDescription marks a Service's firewall rules; the space after
// the comma is upstream's.
func firewallDescription(service, ip string) string {
	return fmt.Sprintf(`{"kubernetes.io/service-name":"%s", "kubernetes.io/service-ip":"%s"}`, service, ip)
}

// nodesFirewallDescription marks the firewall rule of the nodes' shared
// legacy health check.
func nodesFirewallDescription(cid string) string {
	return fmt.Sprintf(`{"kubernetes.io/cluster-id":"%s"}`, cid)
}
