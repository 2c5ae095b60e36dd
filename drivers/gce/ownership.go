package gce

import (
	"context"
	"encoding/json"
	"fmt"

	"cloud.google.com/go/compute/apiv1/computepb"

	"github.com/polyccm/polyccm/core/loadbalancers"
)

// resource is what the ownership rule knows of one of the Service's
// resources, found by the name derived from the Service UID (upstream's
// naming): the UID marks the Service, in this cluster, for good, and the
// description names the Service. GCE resources carry no cluster mark.
func (l *loadBalancers) resource(name, desc, ip string) loadbalancers.Resource {
	var d map[string]string
	_ = json.Unmarshal([]byte(desc), &d) // another tool's description names no Service
	return loadbalancers.Resource{
		Kind: "forwarding rule", ID: name, Name: name, Addresses: []string{ip},
		Service: d["kubernetes.io/service-name"],
		UIDMark: loadbalancers.UIDMark(name),
	}
}

// addressClaim is spec.loadBalancerIP's claim: core refuses it when
// another Service's load balancer has that address (its status shows it),
// or when the reserved address is used by forwarding rules that are not
// this Service's or its namespace's (another cluster's, or made by hand):
// GCE lets rules on different ports share a static address, so the
// Service would serve on someone else's address. It reads the reservation
// into spec.ipHolder; on a failed read the claim still comes back, for
// core to judge what was known before the error.
func (l *loadBalancers) addressClaim(ctx context.Context, cl *clients, env *environment, spec *lbSpec, cur *computepb.ForwardingRule) (*loadbalancers.AddressClaim, error) {
	c := &loadbalancers.AddressClaim{Via: "spec.loadBalancerIP", Want: []string{spec.ip}, Held: loadbalancers.StatusAddresses}
	if cur != nil && cur.GetIPAddress() == spec.ip {
		return c, nil // already the rule's own
	}
	addrs, err := pages(ctx, l.c, "addresses.list", func(ctx context.Context, token string) ([]*computepb.Address, string, error) {
		it := cl.addresses.List(ctx, &computepb.ListAddressesRequest{Project: env.project, Region: env.region, Filter: ptr(fmt.Sprintf("address = %q", spec.ip))})
		return nextPage[*computepb.Address](it, token)
	})
	if err != nil {
		return c, err
	}
	spec.ipHolder = &reservation{}
	for _, a := range addrs {
		if a.GetAddress() == spec.ip {
			spec.ipHolder.addr = a
		}
		for _, u := range a.GetUsers() {
			if name := lastSegment(u); name != spec.base {
				c.Users = append(c.Users, loadbalancers.AddressUser{Address: "GCE address " + spec.ip, Holder: "the reserved address " + a.GetName(), Kind: "forwarding rule", Name: name})
			}
		}
	}
	return c, nil
}
