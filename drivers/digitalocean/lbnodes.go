package digitalocean

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/annotations"
)

// nodeStacks is what the DigitalOcean CCM (v0.1.68, filterAndClassifyNodes)
// reads of the nodes the service controller passes: which may serve a load
// balancer, and the address families of those that may.
type nodeStacks struct {
	ready []*v1.Node
	// Names, for messages.
	v4Only, v6Only, noPublic []string
	dual                     int
}

// classifyNodes picks a load balancer's targets as the DigitalOcean CCM
// does. INTERNAL load balancers take every node. EXTERNAL ones take nodes
// with a public (ExternalIP) IPv4; an IPv6-only node cannot be reached
// from them. An EXTERNAL REGIONAL load balancer also takes private-only
// nodes (it proxies to the VPC address); a REGIONAL_NETWORK one cannot,
// since it passes packets straight to the droplet's public interface.
func classifyNodes(nodes []*v1.Node, typ, network string) nodeStacks {
	var s nodeStacks
	for _, n := range nodes {
		if network == "INTERNAL" {
			s.ready = append(s.ready, n)
			continue
		}
		v4, v6 := families(n, v1.NodeExternalIP)
		if !v4 && !v6 && typ == typeRegional {
			v4, _ = families(n, v1.NodeInternalIP)
		}
		switch {
		case v4 && v6:
			s.dual++
		case v4:
			s.v4Only = append(s.v4Only, n.Name)
		case v6:
			s.v6Only = append(s.v6Only, n.Name)
			continue
		default:
			s.noPublic = append(s.noPublic, n.Name)
			continue
		}
		s.ready = append(s.ready, n)
	}
	return s
}

// families says which address families a node has among addresses of kind.
func families(n *v1.Node, kind v1.NodeAddressType) (v4, v6 bool) {
	for _, a := range n.Status.Addresses {
		if a.Type != kind {
			continue
		}
		ip, err := netip.ParseAddr(a.Address)
		switch {
		case err != nil:
		case ip.Is4() || ip.Is4In6():
			v4 = true
		default:
			v6 = true
		}
	}
	return v4, v6
}

// check fails a REGIONAL_NETWORK EXTERNAL load balancer that no node can
// serve for want of a public address (the DigitalOcean CCM's
// ErrNoEligibleBackends), saying what to change.
func (s nodeStacks) check(a *annotations.Values, typ, network string) {
	if typ == typeRegionalNetwork && network == "EXTERNAL" && len(s.ready) == 0 && len(s.noPublic) > 0 {
		a.Fail("nodes", "REGIONAL_NETWORK EXTERNAL load balancers need a node with a public IPv4 address, and nodes %s have none; for private-only nodes set %s: REGIONAL or %s: INTERNAL",
			names(s.noPublic), AnnType, AnnNetwork)
	}
}

// networkStack is the stack of a new load balancer, as the DigitalOcean
// CCM v0.1.68 decides it (getNetworkStack): the annotation, else IPV4 for
// INTERNAL, DUALSTACK for REGIONAL (it terminates connections, so IPv6
// clients reach IPv4 nodes), and for REGIONAL_NETWORK DUALSTACK only when
// every target has both families (packets go straight to the nodes). With
// no target yet, REGIONAL_NETWORK takes IPV4, as that CCM does when it
// cannot see the nodes.
func networkStack(a *annotations.Values, typ, network string, s nodeStacks) string {
	stack := a.String(AnnNetworkStack, "")
	if stack == "" {
		switch {
		case network == "INTERNAL":
			return "IPV4"
		case typ == typeRegional:
			return "DUALSTACK"
		case s.dual > 0 && len(s.v4Only) == 0:
			return "DUALSTACK"
		}
		return "IPV4"
	}
	if stack == "DUALSTACK" {
		switch {
		case network == "INTERNAL":
			a.Fail(AnnNetworkStack, "DUALSTACK is not supported for INTERNAL load balancers (as in the DigitalOcean CCM); use IPV4 or remove the annotation")
		case typ == typeRegionalNetwork && len(s.v4Only) > 0:
			a.Fail(AnnNetworkStack, "DUALSTACK REGIONAL_NETWORK load balancers need every node to have an IPv6 address, and nodes %s have none; use IPV4, or give the nodes IPv6", names(s.v4Only))
		}
	}
	return stack
}

// names lists up to three node names, for messages.
func names(n []string) string {
	n = append([]string(nil), n...)
	sort.Strings(n)
	if len(n) > 3 {
		return fmt.Sprintf("%s [+%d more]", strings.Join(n[:3], ", "), len(n)-3)
	}
	return strings.Join(n, ", ")
}
