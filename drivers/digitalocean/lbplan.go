package digitalocean

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/digitalocean/godo"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/polyccm/polyccm/core/annotations"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// status is what the Service publishes.
func status(svc *v1.Service, lb *godo.LoadBalancer) *v1.LoadBalancerStatus {
	if h := strings.ToLower(svc.Annotations[AnnHostname]); h != "" { // lower-cased, as upstream publishes it
		return &v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{{Hostname: h}}}
	}
	st := &v1.LoadBalancerStatus{}
	if lb.IP != "" {
		st.Ingress = append(st.Ingress, v1.LoadBalancerIngress{IP: lb.IP})
	}
	if lb.IPv6 != "" {
		st.Ingress = append(st.Ingress, v1.LoadBalancerIngress{IP: lb.IPv6})
	}
	return st
}

// keepNetworkStack keeps an existing load balancer's network stack. The
// stack is chosen when a load balancer is made, and the DigitalOcean CCM
// has chosen differently over its releases (DUALSTACK for REGIONAL since
// v0.1.63): a load balancer it made must not freeze its Service on a
// switch. A network-stack annotation that asks for another stack is said
// in a Warning event; the rest of the Service is applied.
func keepNetworkStack(rec record.EventRecorder, svc *v1.Service, a *annotations.Values, lb *godo.LoadBalancer, req *godo.LoadBalancerRequest) {
	have := cmp.Or(lb.NetworkStack, "IPV4")
	// Said only when the Service asks for it with the annotation: the
	// defaults have changed over that CCM's releases, not the Service.
	if a.Has(AnnNetworkStack) && req.NetworkStack != have && rec != nil {
		rec.Eventf(svc, v1.EventTypeWarning, "LoadBalancerNetworkStackKept",
			"network stack %s (%s) applies when a load balancer is made; load balancer %s keeps %s. Delete and recreate the Service to change it",
			req.NetworkStack, AnnNetworkStack, lb.ID, have)
	}
	req.NetworkStack = have
}

// createOnly drops what applies only when a load balancer is made: the
// ip annotation (a BYOIP address), said in a Normal event when the load
// balancer has another address, as the DigitalOcean CCM ignores it.
func createOnly(a *annotations.Values, lb *godo.LoadBalancer, req *godo.LoadBalancerRequest) {
	if req.IP != "" && req.IP != lb.IP {
		a.NotApplied(AnnIP, fmt.Sprintf("applies when a load balancer is made; load balancer %s keeps its address %s", lb.ID, lb.IP))
	}
	req.IP = ""
	if req.VPCSubnetUUID == "" {
		req.VPCSubnetUUID = lb.VPCSubnetUUID
	}
}

// immutableChanged refuses changes DigitalOcean cannot make in place.
func immutableChanged(lb *godo.LoadBalancer, req *godo.LoadBalancerRequest) error {
	orDefault := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	var bad []string
	if orDefault(lb.Network, "EXTERNAL") != req.Network {
		bad = append(bad, fmt.Sprintf("network %s -> %s (%s)", orDefault(lb.Network, "EXTERNAL"), req.Network, AnnNetwork))
	}
	if orDefault(lb.Type, "REGIONAL") != req.Type {
		bad = append(bad, fmt.Sprintf("type %s -> %s (%s)", orDefault(lb.Type, "REGIONAL"), req.Type, AnnType))
	}
	if lb.Region != nil && req.Region != "" && lb.Region.Slug != req.Region {
		bad = append(bad, fmt.Sprintf("region %s -> %s (drivers.digitalocean.region, or the nodes' region)", lb.Region.Slug, req.Region))
	}
	if req.VPCSubnetUUID != "" && lb.VPCSubnetUUID != req.VPCSubnetUUID {
		bad = append(bad, fmt.Sprintf("subnet %s -> %s (%s)", cmp.Or(lb.VPCSubnetUUID, "none"), req.VPCSubnetUUID, AnnSubnetUUID))
	}
	if req.VPCUUID != "" && lb.VPCUUID != "" && lb.VPCUUID != req.VPCUUID {
		bad = append(bad, fmt.Sprintf("VPC %s -> %s (drivers.digitalocean.vpcID)", lb.VPCUUID, req.VPCUUID))
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("load balancer %s cannot change %s in place; put the old value back, or delete and recreate the Service", lb.ID, strings.Join(bad, ", "))
}

// diffLB lists the fields polyccm manages in which the LB differs from
// what req asks for: none in a steady state, which then costs no update
// call.
func diffLB(lb *godo.LoadBalancer, req *godo.LoadBalancerRequest) []loadbalancers.Field {
	cur := lb.AsRequest()
	if lb.Region != nil {
		cur.Region = lb.Region.Slug
	}
	norm := func(r *godo.LoadBalancerRequest) godo.LoadBalancerRequest {
		c := *r
		c.DropletIDs = slices.Clone(c.DropletIDs)
		sort.Ints(c.DropletIDs)
		c.ForwardingRules = slices.Clone(c.ForwardingRules)
		sort.Slice(c.ForwardingRules, func(i, j int) bool { return c.ForwardingRules[i].EntryPort < c.ForwardingRules[j].EntryPort })
		if c.Firewall != nil && len(c.Firewall.Allow) == 0 && len(c.Firewall.Deny) == 0 {
			c.Firewall = nil
		}
		if c.Firewall != nil {
			fw := *c.Firewall
			fw.Allow, fw.Deny = slices.Clone(fw.Allow), slices.Clone(fw.Deny)
			sort.Strings(fw.Allow)
			sort.Strings(fw.Deny)
			c.Firewall = &fw
		}
		if c.SizeSlug != "" {
			c.SizeUnit = 0 // a slug LB reports a unit too
		}
		// Fields polyccm does not manage, or that only apply on create.
		c.Tags, c.Tag, c.ProjectID, c.TLSCipherPolicy, c.Domains, c.GLBSettings = nil, "", "", "", nil, nil
		c.TargetLoadBalancerIDs, c.VPCSubnetUUID, c.ValidateOnly, c.IP = nil, "", false, ""
		if c.Algorithm == "round_robin" {
			c.Algorithm = ""
		}
		if c.DisableLetsEncryptDNSRecords != nil && !*c.DisableLetsEncryptDNSRecords {
			c.DisableLetsEncryptDNSRecords = nil
		}
		return c
	}
	a, b := norm(cur), norm(req)
	if b.HealthCheck != nil && b.HealthCheck.ProxyProtocol == nil && a.HealthCheck != nil {
		// Not sent: the load balancer keeps its own.
		hc := *b.HealthCheck
		hc.ProxyProtocol = a.HealthCheck.ProxyProtocol
		b.HealthCheck = &hc
	}
	if b.VPCUUID == "" {
		a.VPCUUID = "" // the API fills in the region's default VPC
	}
	if b.SizeSlug == "" && a.SizeSlug != "" && b.SizeUnit != 0 {
		a.SizeSlug = ""
	}
	if b.HTTPIdleTimeoutSeconds == nil {
		// Not sent for REGIONAL_NETWORK; the API still reports its default.
		a.HTTPIdleTimeoutSeconds = nil
	}
	return loadbalancers.Diff(a, b)
}
