package gce

import (
	"context"
	"encoding/json"
	"fmt"

	"cloud.google.com/go/compute/apiv1/computepb"
	v1 "k8s.io/api/core/v1"

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

// checkAddress refuses spec.loadBalancerIP when another Service's load
// balancer has that address (its status shows it), or when the reserved
// address is used by forwarding rules that are not this Service's (another
// cluster's, or made by hand): GCE lets rules on different ports share a
// static address, so the Service would serve on someone else's address.
func (l *loadBalancers) checkAddress(ctx context.Context, cl *clients, env *environment, svc *v1.Service, spec *lbSpec, cur *computepb.ForwardingRule) error {
	if err := l.own.CheckAddresses(ctx, svc, "spec.loadBalancerIP", []string{spec.ip}, loadbalancers.StatusAddresses); err != nil {
		return err
	}
	if cur != nil && cur.GetIPAddress() == spec.ip {
		return nil // already the rule's own
	}
	addrs, err := pages(ctx, l.c, "addresses.list", func(ctx context.Context, token string) ([]*computepb.Address, string, error) {
		it := cl.addresses.List(ctx, &computepb.ListAddressesRequest{Project: env.project, Region: env.region, Filter: ptr(fmt.Sprintf("address = %q", spec.ip))})
		return nextPage[*computepb.Address](it, token)
	})
	if err != nil {
		return err
	}
	spec.ipHolder = &reservation{}
	for _, a := range addrs {
		if a.GetAddress() == spec.ip {
			spec.ipHolder.addr = a
		}
		for _, u := range a.GetUsers() {
			name := lastSegment(u)
			if name == spec.base {
				continue
			}
			// A rule of a Service of the same namespace may share it (a TCP
			// and a UDP Service on one address); anything else may not.
			if mark := loadbalancers.UIDMark(name); mark != "" {
				o, err := l.own.ServiceByUIDMark(ctx, mark)
				if err != nil {
					return err
				}
				if o != nil && o.Namespace == svc.Namespace {
					continue
				}
			}
			return l.own.Refuse(svc, "GCE address "+spec.ip, fmt.Sprintf("the reserved address %s is used by forwarding rule %s, which is not this Service's", a.GetName(), name), "change spec.loadBalancerIP to an address no other load balancer uses")
		}
	}
	return nil
}
