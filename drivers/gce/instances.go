package gce

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strings"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/api/iterator"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/instances"
)

const (
	// nameChunk bounds the names in one list filter, keeping the filter
	// well under the API's length limit.
	nameChunk = 100
	pageSize  = 500
)

// ProviderID is the Node spec.providerID for an instance.
func ProviderID(project, zone, name string) string {
	return "gce://" + project + "/" + zone + "/" + name
}

type instanceRef struct{ project, zone, name string }

// parseProviderID reads gce://<project>/<zone>/<name>.
func parseProviderID(pid string) (instanceRef, error) {
	rest, ok := strings.CutPrefix(pid, "gce://")
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return instanceRef{}, cloudapi.Invalid("providerID %q is not a GCE one (want gce://<project>/<zone>/<instance>)", pid)
	}
	return instanceRef{parts[0], parts[1], parts[2]}, nil
}

// nameFilter is the Compute list filter for any of names.
func nameFilter(names []string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("(name = %q)", n)
	}
	return strings.Join(parts, " OR ")
}

// LookupInstances resolves a batch with list calls, never one get per
// node: instances with a providerID by a per-zone list filtered on their
// names, the others by one aggregated list across zones. An instance the
// lists did not return is confirmed with a get before it is reported gone.
func (c *Cloud) LookupInstances(ctx context.Context, keys []instances.Key) (instances.Answer, error) {
	cl, err := c.client(ctx)
	if err != nil {
		return instances.Answer{}, err
	}
	env, err := c.environ(ctx)
	if err != nil {
		return instances.Answer{}, err
	}
	g := instances.Group(keys, parseProviderID)
	results, byRef, byName := g.Results, g.ByRef, g.ByName

	found := map[instanceRef]*computepb.Instance{}
	listed := map[[2]string]bool{} // project/zone pairs a full listing covered
	// Nodes without a providerID: by name, in any zone of the project.
	// First, because a full listing of the project answers the keys with
	// a providerID in its zones too.
	byNameFound := map[string][]instanceRef{}
	for _, filter := range c.filtersFor(ctx, env.project, slices.Sorted(maps.Keys(byName)), len(keys)) {
		got, err := c.listAggregated(ctx, cl, env.project, filter)
		if err != nil {
			return instances.Answer{}, err
		}
		if filter == "" {
			c.sizes.Set(env.project, len(got))
		}
		for _, zi := range got {
			ref := instanceRef{env.project, zi.zone, zi.inst.GetName()}
			found[ref] = zi.inst
			byNameFound[ref.name] = append(byNameFound[ref.name], ref)
			if filter == "" {
				listed[[2]string{env.project, zi.zone}] = true
			}
		}
	}

	// Per project and zone, the named instances.
	zones := map[[2]string][]string{}
	for ref := range byRef {
		k := [2]string{ref.project, ref.zone}
		zones[k] = append(zones[k], ref.name)
	}
	// Zones whose listing was refused for the zone itself: a providerID
	// naming a zone or project that does not exist (or is not ours to
	// see) fails its own keys, not the batch.
	refused := map[[2]string]error{}
zones:
	for pz, names := range zones {
		if listed[pz] {
			// Listed in full above. Only zones seen holding instances:
			// a zone the listing did not show may not exist, and must
			// fail its own keys as below.
			continue
		}
		sort.Strings(names)
		scope := pz[0] + "/" + pz[1]
		for _, filter := range c.filtersFor(ctx, scope, names, len(keys)) {
			insts, err := c.listZone(ctx, cl, pz[0], pz[1], filter)
			if k := cloudapi.KindOf(err); k == cloudapi.KindInvalid || k == cloudapi.KindNotFound {
				// %v: never "not found" for the instances, which would
				// delete their Nodes.
				refused[pz] = fmt.Errorf("listing the instances of zone %s: %v", scope, err)
				continue zones
			}
			if err != nil {
				return instances.Answer{}, err
			}
			if filter == "" {
				c.sizes.Set(scope, len(insts))
			}
			for _, in := range insts {
				found[instanceRef{pz[0], pz[1], in.GetName()}] = in
			}
		}
	}
	var seen []instances.Instance
	for ref, in := range found {
		seen = append(seen, *c.toInstance(ref, in))
	}
	for ref, idx := range byRef {
		r := instances.Result{}
		if err := refused[[2]string{ref.project, ref.zone}]; err != nil {
			r.Err = err
		} else if in, ok := found[ref]; ok {
			r.Instance = c.toInstance(ref, in)
		} else {
			r.Instance, r.Err = c.confirmInstance(ctx, cl, ref)
		}
		for _, i := range idx {
			results[i] = r
		}
	}
	for name, idx := range byName {
		r := instances.Result{}
		switch refs := byNameFound[name]; len(refs) {
		case 0: // no instance of that name in any zone
		case 1:
			r.Instance = c.toInstance(refs[0], found[refs[0]])
		default:
			r.Err = fmt.Errorf("instances named %q exist in %d zones; set the Node's spec.providerID (gce://project/zone/name) to say which", name, len(refs))
		}
		for _, i := range idx {
			results[i] = r
		}
	}
	return instances.Answer{Results: results, Seen: seen}, nil
}

// filtersFor returns the list filters covering names in scope, or "" for
// one unfiltered listing when that costs no more calls, counting the keys
// queued behind the batch of batchKeys (see batch.ListSizes).
func (c *Cloud) filtersFor(ctx context.Context, scope string, names []string, batchKeys int) []string {
	if len(names) == 0 {
		return nil
	}
	filtered := slices.Collect(slices.Chunk(names, nameChunk))
	if c.sizes.PreferFullFor(ctx, scope, len(filtered), batchKeys, pageSize) {
		return []string{""}
	}
	out := make([]string, 0, len(filtered))
	for _, chunk := range filtered {
		out = append(out, nameFilter(chunk))
	}
	return out
}

// pages fetches a paged list one page per call, so core retries and counts
// each page.
func pages[T any](ctx context.Context, c *Cloud, op string, list func(ctx context.Context, token string) ([]T, string, error)) ([]T, error) {
	var all []T
	token := ""
	for {
		type page struct {
			items []T
			next  string
		}
		p, err := call(ctx, c, op, func(ctx context.Context) (page, error) {
			items, next, err := list(ctx, token)
			return page{items, next}, err
		})
		if err != nil {
			return nil, err
		}
		all = append(all, p.items...)
		if p.next == "" {
			return all, nil
		}
		token = p.next
	}
}

// nextPage reads one page of a generated iterator.
func nextPage[T any](it iterator.Pageable, token string) ([]T, string, error) {
	var items []T
	next, err := iterator.NewPager(it, pageSize, token).NextPage(&items)
	return items, next, err
}

func (c *Cloud) listZone(ctx context.Context, cl *clients, project, zone, filter string) ([]*computepb.Instance, error) {
	return pages(ctx, c, "instances.list", func(ctx context.Context, token string) ([]*computepb.Instance, string, error) {
		req := &computepb.ListInstancesRequest{Project: project, Zone: zone}
		if filter != "" {
			req.Filter = proto.String(filter)
		}
		it := cl.instances.List(ctx, req)
		return nextPage[*computepb.Instance](it, token)
	})
}

type zonedInstance struct {
	zone string
	inst *computepb.Instance
}

func (c *Cloud) listAggregated(ctx context.Context, cl *clients, project, filter string) ([]zonedInstance, error) {
	pairs, err := pages(ctx, c, "instances.aggregatedList", func(ctx context.Context, token string) ([]compute.InstancesScopedListPair, string, error) {
		req := &computepb.AggregatedListInstancesRequest{Project: project}
		if filter != "" {
			req.Filter = proto.String(filter)
		}
		it := cl.instances.AggregatedList(ctx, req)
		return nextPage[compute.InstancesScopedListPair](it, token)
	})
	if err != nil {
		return nil, err
	}
	var out []zonedInstance
	for _, p := range pairs {
		zone := strings.TrimPrefix(p.Key, "zones/")
		for _, in := range p.Value.GetInstances() {
			out = append(out, zonedInstance{zone, in})
		}
	}
	return out, nil
}

// confirmInstance asks for one instance: (nil, nil) only on a 404.
func (c *Cloud) confirmInstance(ctx context.Context, cl *clients, ref instanceRef) (*instances.Instance, error) {
	in, err := call(ctx, c, "instances.get", func(ctx context.Context) (*computepb.Instance, error) {
		return cl.instances.Get(ctx, &computepb.GetInstanceRequest{Project: ref.project, Zone: ref.zone, Instance: ref.name})
	})
	if cloudapi.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return c.toInstance(ref, in), nil
}

func (c *Cloud) toInstance(ref instanceRef, in *computepb.Instance) *instances.Instance {
	c.rememberTags(ref.project, ref.zone, in) // for the firewall rules' targets
	st := in.GetStatus()
	inst := &instances.Instance{
		ProviderID:   ProviderID(ref.project, ref.zone, in.GetName()),
		Name:         in.GetName(),
		InstanceType: lastSegment(in.GetMachineType()),
		Zone:         ref.zone,
		Region:       regionOf(ref.zone),
		Shutdown:     st == "TERMINATED" || st == "STOPPING" || st == "STOPPED" || st == "SUSPENDED" || st == "SUSPENDING",
		PodCIDRs:     c.podCIDRs(in),
	}
	// Addresses as cloud-provider-gcp reports them (gce_instances.go
	// nodeAddressesFromInstance), so a switch changes no Node's: per
	// interface its IPv4, its external IPv4s, then its IPv6 (the internal
	// one, else the external one of an EXTERNAL interface) as an
	// InternalIP; then IPv4 before IPv6, unless the cluster is IPv6
	// single-stack (drivers.gce.stackType).
	var addrs []v1.NodeAddress
	seen := map[v1.NodeAddress]bool{}
	add := func(t v1.NodeAddressType, a string) {
		na := v1.NodeAddress{Type: t, Address: a}
		if a != "" && !seen[na] {
			seen[na] = true
			addrs = append(addrs, na)
		}
	}
	for _, ni := range in.GetNetworkInterfaces() {
		add(v1.NodeInternalIP, ni.GetNetworkIP())
		for _, ac := range ni.GetAccessConfigs() {
			add(v1.NodeExternalIP, ac.GetNatIP())
		}
		add(v1.NodeInternalIP, nicIPv6(ni))
	}
	preferV6 := c.cfg.StackType == StackIPv6
	isV6 := func(a v1.NodeAddress) bool {
		ip, err := netip.ParseAddr(a.Address)
		return err == nil && ip.Is6() && !ip.Is4In6()
	}
	slices.SortStableFunc(addrs, func(a, b v1.NodeAddress) int {
		pa, pb := isV6(a) == preferV6, isV6(b) == preferV6
		switch {
		case pa && !pb:
			return -1
		case pb && !pa:
			return 1
		}
		return 0
	})
	host := in.GetHostname()
	if host == "" {
		host = in.GetName()
	}
	add(v1.NodeHostName, host)
	inst.Addresses = addrs
	return inst
}
