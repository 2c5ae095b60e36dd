package aws

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/instances"
)

const (
	// filterChunk bounds the values of one DescribeInstances filter.
	filterChunk = 200
	// describePage is the page size of DescribeInstances.
	describePage = 1000
	// LabelZoneID is the AWS CCM's label for the zone ID, which names the
	// same physical zone in every account (zone names do not).
	LabelZoneID = "topology.k8s.aws/zone-id"
)

var instanceIDRE = regexp.MustCompile(`^i-[0-9a-f]{8,17}$`)

// ProviderID is the Node spec.providerID for an instance.
func ProviderID(az, instanceID string) string { return "aws:///" + az + "/" + instanceID }

// instanceID parses aws:///<az>/<id> (and the aws:///<id> form).
func instanceID(providerID string) (string, error) {
	rest, ok := strings.CutPrefix(providerID, "aws://")
	if !ok {
		return "", cloudapi.Invalid("providerID %q is not an AWS one (want aws:///<zone>/<instance-id>)", providerID)
	}
	id := rest[strings.LastIndexByte(rest, '/')+1:]
	if !instanceIDRE.MatchString(id) {
		return "", cloudapi.Invalid("providerID %q has no instance ID (want aws:///<zone>/<instance-id>)", providerID)
	}
	return id, nil
}

// resourceName returns the instance ID a resource-based hostname names:
// the part before the first dot, if it is an instance ID.
func resourceName(nodeName string) (string, bool) {
	id, _, _ := strings.Cut(nodeName, ".")
	return id, instanceIDRE.MatchString(id)
}

// LookupInstances resolves a batch with as few DescribeInstances calls as
// the filters allow: instance IDs and private DNS names, up to 200 values a
// filter, paginated. An instance a filtered listing did not return is
// confirmed absent with a direct lookup before it is reported gone.
func (c *Cloud) LookupInstances(ctx context.Context, keys []instances.Key) (instances.Answer, error) {
	cl, err := c.client(ctx)
	if err != nil {
		return instances.Answer{}, err
	}
	g := instances.Group(keys, instanceID)
	results, byID, byName := g.Results, g.ByRef, g.ByName
	// A Node named after its instance (EC2's resource-based hostnames,
	// i-0abc… or i-0abc….<region>.compute.internal) is looked up by that
	// ID, as the AWS CCM does: its private DNS name is not its name.
	for name, idx := range byName {
		if id, ok := resourceName(name); ok {
			byID[id] = append(byID[id], idx...)
			delete(byName, name)
		}
	}

	var all []ec2types.Instance
	ids, names := slices.Sorted(maps.Keys(byID)), slices.Sorted(maps.Keys(byName))
	filtered := (len(ids)+filterChunk-1)/filterChunk + (len(names)+filterChunk-1)/filterChunk
	if vpc := c.knownVPC(); vpc != "" && c.listSizes.PreferFullFor(ctx, vpc, filtered, len(keys), describePage) {
		// One listing of the cluster's VPC answers this batch and, through
		// the cache, the lookups right behind it.
		got, err := c.describeInstances(ctx, cl, []ec2types.Filter{{Name: aws.String("vpc-id"), Values: []string{vpc}}})
		if err != nil {
			return instances.Answer{}, err
		}
		c.listSizes.Set(vpc, len(got))
		all = got
		listed := map[string]bool{}
		for i := range got {
			listed[aws.ToString(got[i].PrivateDnsName)] = true
		}
		// Names outside the VPC listing get the filtered lookup below;
		// IDs are confirmed one by one, as after a filtered listing.
		ids, names = nil, slices.DeleteFunc(names, func(n string) bool { return listed[n] })
	}
	for chunk := range slices.Chunk(ids, filterChunk) {
		got, err := c.describeInstances(ctx, cl, []ec2types.Filter{{Name: aws.String("instance-id"), Values: chunk}})
		if err != nil {
			return instances.Answer{}, err
		}
		all = append(all, got...)
	}
	for chunk := range slices.Chunk(names, filterChunk) {
		got, err := c.describeInstances(ctx, cl, []ec2types.Filter{{Name: aws.String("private-dns-name"), Values: chunk}})
		if err != nil {
			return instances.Answer{}, err
		}
		all = append(all, got...)
	}
	if err := c.zones.ensureFor(ctx, c, cl, all); err != nil {
		return instances.Answer{}, err
	}
	topologyErr := c.ensureTopology(ctx, cl, all)

	found := map[string]*instances.Instance{}
	failed := map[string]error{}               // by instance ID and private DNS name
	live := map[string][]*instances.Instance{} // private DNS name -> live instances
	var seen []instances.Instance
	for i := range all {
		inst := c.toInstance(&all[i], cl.region)
		id := aws.ToString(all[i].InstanceId)
		found[id] = inst // nil when terminated
		switch {
		case inst == nil:
			c.topology.forget([]string{id})
		case topologyErr[id] != nil:
			// Not answered without its topology labels, nor cached.
			failed[id] = topologyErr[id]
			failed[aws.ToString(all[i].PrivateDnsName)] = topologyErr[id]
		default:
			live[inst.Name] = append(live[inst.Name], inst)
			seen = append(seen, *inst)
		}
	}
	for id, idx := range byID {
		r := instances.Result{}
		var ok bool
		if err := failed[id]; err != nil {
			r.Err = err
		} else if r.Instance, ok = found[id]; !ok {
			// Not in the listing: ask for it by ID, which answers a
			// definitive InvalidInstanceID.NotFound.
			r.Instance, r.Err = c.confirmInstance(ctx, cl, id)
		}
		for _, i := range idx {
			results[i] = r
		}
	}
	for name, idx := range byName {
		var r instances.Result
		switch insts := live[name]; {
		case failed[name] != nil && len(insts) == 0:
			r.Err = failed[name]
		case len(insts) == 0: // a private DNS name with no live instance: gone
		case len(insts) == 1:
			r.Instance = insts[0]
		default:
			r.Err = fmt.Errorf("%d running instances have the private DNS name %q; set the Node's spec.providerID to say which", len(insts), name)
		}
		for _, i := range idx {
			results[i] = r
		}
	}
	return instances.Answer{Results: results, Seen: seen}, nil
}

func (c *Cloud) describeInstances(ctx context.Context, cl *clients, filters []ec2types.Filter) ([]ec2types.Instance, error) {
	var out []ec2types.Instance
	in := &ec2.DescribeInstancesInput{Filters: filters, MaxResults: aws.Int32(describePage)}
	for {
		var page *ec2.DescribeInstancesOutput
		err := c.api.Do(ctx, "ec2.DescribeInstances", func(ctx context.Context) error {
			var err error
			page, err = cl.ec2.DescribeInstances(ctx, in)
			return err
		})
		if err != nil {
			return nil, err
		}
		for _, r := range page.Reservations {
			out = append(out, r.Instances...)
		}
		if aws.ToString(page.NextToken) == "" {
			return out, nil
		}
		in.NextToken = page.NextToken
	}
}

// confirmInstance looks one instance up by ID: nil, nil only when EC2 says
// it does not exist (or it is terminated).
func (c *Cloud) confirmInstance(ctx context.Context, cl *clients, id string) (*instances.Instance, error) {
	got, err := c.describeByID(ctx, cl, id)
	if cloudapi.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := c.zones.ensureFor(ctx, c, cl, got); err != nil {
		return nil, err
	}
	for i := range got {
		if aws.ToString(got[i].InstanceId) == id {
			return c.toInstance(&got[i], cl.region), nil
		}
	}
	return nil, nil
}

func (c *Cloud) describeByID(ctx context.Context, cl *clients, ids ...string) ([]ec2types.Instance, error) {
	var out []ec2types.Instance
	err := c.api.Do(ctx, "ec2.DescribeInstances", func(ctx context.Context) error {
		page, err := cl.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: ids})
		if err != nil {
			return err
		}
		out = out[:0]
		for _, r := range page.Reservations {
			out = append(out, r.Instances...)
		}
		return nil
	})
	return out, err
}

// toInstance maps an EC2 instance; nil for a terminated one, which no
// longer exists as far as Kubernetes is concerned.
func (c *Cloud) toInstance(in *ec2types.Instance, region string) *instances.Instance {
	state := ec2types.InstanceStateNamePending
	if in.State != nil {
		state = in.State.Name
	}
	if state == ec2types.InstanceStateNameTerminated {
		return nil
	}
	az := ""
	if in.Placement != nil {
		az = aws.ToString(in.Placement.AvailabilityZone)
	}
	inst := &instances.Instance{
		ProviderID:   ProviderID(az, aws.ToString(in.InstanceId)),
		Name:         aws.ToString(in.PrivateDnsName),
		InstanceType: string(in.InstanceType),
		Zone:         az,
		Region:       region,
		Shutdown: state == ec2types.InstanceStateNameStopped || state == ec2types.InstanceStateNameStopping ||
			state == ec2types.InstanceStateNameShuttingDown,
	}
	inst.Labels = c.topology.labels(aws.ToString(in.InstanceId))
	if id := c.zones.get(az); id != "" {
		if inst.Labels == nil {
			inst.Labels = map[string]string{}
		}
		inst.Labels[LabelZoneID] = id
	}
	inst.Addresses = addresses(in, c.cfg.ipFamilies())
	return inst
}

// addresses lists the instance's addresses family by family, in the
// order drivers.aws.nodeIPFamilies gives, as the AWS CCM does, so a switch
// changes no Node's addresses:
//   - ipv4: the private IPv4 addresses of the interfaces in use, the
//     primary interface's first (kubelet takes the first InternalIP as the
//     node IP); the public IPv4 as ExternalIP; the private DNS name as
//     InternalDNS and Hostname; the public DNS name as ExternalDNS;
//   - ipv6: the first IPv6 address of each interface in use, as
//     InternalIP (EC2 gives IPv6 addresses no DNS names).
func addresses(in *ec2types.Instance, families []string) []v1.NodeAddress {
	var out []v1.NodeAddress
	seen := map[v1.NodeAddress]bool{}
	add := func(t v1.NodeAddressType, a string) {
		na := v1.NodeAddress{Type: t, Address: a}
		if a != "" && !seen[na] {
			seen[na] = true
			out = append(out, na)
		}
	}
	enis := slices.Clone(in.NetworkInterfaces)
	slices.SortStableFunc(enis, func(a, b ec2types.InstanceNetworkInterface) int {
		// Attached interfaces by device index; unattached ones last.
		switch {
		case a.Attachment == nil && b.Attachment == nil:
			return 0
		case a.Attachment == nil:
			return 1
		case b.Attachment == nil:
			return -1
		}
		return int(aws.ToInt32(a.Attachment.DeviceIndex) - aws.ToInt32(b.Attachment.DeviceIndex))
	})
	enis = slices.DeleteFunc(enis, func(ni ec2types.InstanceNetworkInterface) bool {
		return ni.Status != ec2types.NetworkInterfaceStatusInUse
	})
	for _, f := range families {
		switch f {
		case "ipv4":
			if len(enis) == 0 {
				// An answer without interfaces still names the primary
				// address.
				add(v1.NodeInternalIP, aws.ToString(in.PrivateIpAddress))
			}
			for _, ni := range enis {
				for _, p := range ni.PrivateIpAddresses {
					add(v1.NodeInternalIP, aws.ToString(p.PrivateIpAddress))
				}
			}
			add(v1.NodeExternalIP, aws.ToString(in.PublicIpAddress))
			add(v1.NodeInternalDNS, aws.ToString(in.PrivateDnsName))
			add(v1.NodeHostName, aws.ToString(in.PrivateDnsName))
			add(v1.NodeExternalDNS, aws.ToString(in.PublicDnsName))
		case "ipv6":
			for _, ni := range enis {
				if len(ni.Ipv6Addresses) > 0 {
					add(v1.NodeInternalIP, aws.ToString(ni.Ipv6Addresses[0].Ipv6Address))
				}
			}
		}
	}
	return out
}

// zoneCache holds each zone's ID and type; zones do not change, so one
// DescribeAvailabilityZones answers for the life of the process.
type zoneCache struct {
	mu    sync.RWMutex
	ids   map[string]string
	types map[string]string // availability-zone, local-zone, wavelength-zone, outpost
}

func (z *zoneCache) get(zone string) string {
	z.mu.RLock()
	defer z.mu.RUnlock()
	return z.ids[zone]
}

// zoneType is the zone's type, "" when unknown.
func (z *zoneCache) zoneType(zone string) string {
	z.mu.RLock()
	defer z.mu.RUnlock()
	return z.types[zone]
}

// ensureFor makes sure the zones of insts are known.
func (z *zoneCache) ensureFor(ctx context.Context, c *Cloud, cl *clients, insts []ec2types.Instance) error {
	var zones []string
	for i := range insts {
		if insts[i].Placement != nil {
			zones = append(zones, aws.ToString(insts[i].Placement.AvailabilityZone))
		}
	}
	return z.ensure(ctx, c, cl, zones)
}

// ensure makes sure the named zones are known, with one call for all of
// them the first time.
func (z *zoneCache) ensure(ctx context.Context, c *Cloud, cl *clients, zones []string) error {
	missing := false
	for _, name := range zones {
		if name != "" && z.get(name) == "" {
			missing = true
		}
	}
	if !missing {
		return nil
	}
	var out *ec2.DescribeAvailabilityZonesOutput
	err := c.api.Do(ctx, "ec2.DescribeAvailabilityZones", func(ctx context.Context) error {
		var err error
		out, err = cl.ec2.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{AllAvailabilityZones: aws.Bool(true)})
		return err
	})
	if err != nil {
		return err
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.ids == nil {
		z.ids, z.types = map[string]string{}, map[string]string{}
	}
	for _, az := range out.AvailabilityZones {
		z.ids[aws.ToString(az.ZoneName)] = aws.ToString(az.ZoneId)
		z.types[aws.ToString(az.ZoneName)] = aws.ToString(az.ZoneType)
	}
	return nil
}
