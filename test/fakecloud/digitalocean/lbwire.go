package digitalocean

import (
	"slices"
	"time"
)

// wireLBOf renders a load balancer as the API does.
func wireLBOf(lb LoadBalancer) wireLoadBalancer {
	rules := make([]wireForwardingRule, len(lb.ForwardingRules))
	for k, fr := range lb.ForwardingRules {
		rules[k] = wireForwardingRule{
			EntryProtocol: fr.EntryProtocol, EntryPort: fr.EntryPort,
			TargetProtocol: fr.TargetProtocol, TargetPort: fr.TargetPort,
			CertificateID: fr.CertificateID, TLSPassthrough: fr.TLSPassthrough,
		}
	}
	// A test may have cleared these through UpdateLoadBalancer; the API
	// always has them.
	hc := defaultHealthCheck()
	if lb.HealthCheck != nil {
		hc = *lb.HealthCheck
	}
	sticky := wireStickySessions{Type: stickyNone}
	if ss := lb.StickySessions; ss != nil {
		sticky.Type = ss.Type
		if ss.Type == stickyCookies {
			sticky.CookieName, sticky.CookieTTLSeconds = ss.CookieName, ss.CookieTTLSeconds
		}
	}
	w := wireLoadBalancer{
		ID:              lb.ID,
		Name:            lb.Name,
		ProjectID:       lb.ProjectID,
		SizeUnit:        lb.SizeUnit,
		Size:            lb.SizeSlug,
		Algorithm:       lb.Algorithm,
		Status:          lb.Status,
		CreatedAt:       lb.CreatedAt.UTC().Format(time.RFC3339),
		ForwardingRules: rules,
		HealthCheck: wireHealthCheck{
			Protocol: hc.Protocol, Port: hc.Port, Path: hc.Path,
			CheckIntervalSeconds: hc.CheckIntervalSeconds, ResponseTimeoutSeconds: hc.ResponseTimeoutSeconds,
			HealthyThreshold: hc.HealthyThreshold, UnhealthyThreshold: hc.UnhealthyThreshold,
			ProxyProtocol: hc.ProxyProtocol,
		},
		StickySessions:               sticky,
		RedirectHTTPToHTTPS:          lb.RedirectHTTPToHTTPS,
		EnableProxyProtocol:          lb.EnableProxyProtocol,
		EnableBackendKeepalive:       lb.EnableBackendKeepalive,
		HTTPIdleTimeoutSeconds:       lb.HTTPIdleTimeoutSeconds,
		VPCUUID:                      lb.VPCUUID,
		SubnetUUID:                   lb.SubnetUUID,
		DisableLetsEncryptDNSRecords: lb.DisableLetsEncryptDNSRecords,
		Firewall: wireLBFirewall{
			Deny:  emptyIfNil(slices.Clone(lb.Firewall.Deny)),
			Allow: emptyIfNil(slices.Clone(lb.Firewall.Allow)),
		},
		Network:         lb.Network,
		NetworkStack:    lb.NetworkStack,
		Type:            lb.Type,
		TLSCipherPolicy: lb.TLSCipherPolicy,
		Tag:             lb.Tag,
		DropletIDs:      emptyIfNil(slices.Clone(lb.DropletIDs)),
	}
	if lb.SizeSlug != "" {
		w.SizeUnit = 0 // sized by slug: size only
	}
	// Addresses appear once the load balancer is up.
	if lb.Status != StatusNew {
		w.IP, w.IPv6 = lb.IP, lb.IPv6
	}
	if lb.Region != "" {
		region := wireRegionOf(lb.Region)
		w.Region = &region
	}
	return w
}
