package gce

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"cloud.google.com/go/compute/apiv1/computepb"
)

// Without drivers.gce.nodeTags the firewall rules target, as upstream's
// computeHostTags, each node instance's longest network tag that its name
// starts with (kube-up names nodes <tag>-xxxx and tags them <tag>). The
// tags come from the instance listings the node controllers make anyway;
// an instance not seen yet costs one get.

// tagCache holds instances' network tags by short instance URL.
type tagCache struct {
	mu sync.Mutex
	m  map[string][]string
}

func (t *tagCache) put(url string, tags []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string][]string{}
	}
	t.m[url] = slices.Clone(tags)
}

// retain drops the instances not in keep once the cache has grown well
// past it (instances that are gone), so it stays about the cluster's size.
func (t *tagCache) retain(keep map[string]bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.m) <= 2*len(keep)+tagCacheSlack {
		return
	}
	for url := range t.m {
		if !keep[url] {
			delete(t.m, url)
		}
	}
}

// tagCacheSlack is how many instances beyond twice the nodes the cache
// holds before it is pruned: small clusters never prune.
const tagCacheSlack = 256

func (t *tagCache) get(url string) ([]string, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tags, ok := t.m[url]
	return tags, ok
}

// rememberTags keeps an instance's tags from a listing or a get.
func (c *Cloud) rememberTags(project, zone string, in *computepb.Instance) {
	c.tags.put(instanceURL(project, zone, in.GetName()), in.GetTags().GetItems())
}

// targetTags are the tags the firewall rules target for the nodes'
// instances byZone: drivers.gce.nodeTags, else discovered.
func (l *loadBalancers) targetTags(ctx context.Context, cl *clients, env *environment, byZone map[string][]string) ([]string, error) {
	if len(env.nodeTags) > 0 {
		return env.nodeTags, nil
	}
	set := map[string]bool{}
	seen := map[string]bool{}
	defer func() { l.c.tags.retain(seen) }()
	for _, zone := range slices.Sorted(maps.Keys(byZone)) {
		for _, name := range byZone[zone] {
			url := instanceURL(env.project, zone, name)
			seen[url] = true
			tags, ok := l.c.tags.get(url)
			if !ok {
				in, err := call(ctx, l.c, "instances.get", func(ctx context.Context) (*computepb.Instance, error) {
					return cl.instances.Get(ctx, &computepb.GetInstanceRequest{Project: env.project, Zone: zone, Instance: name})
				})
				if err != nil {
					return nil, fmt.Errorf("gce: reading the network tags of instance %s/%s (drivers.gce.nodeTags is not set): %w", zone, name, err)
				}
				l.c.rememberTags(env.project, zone, in)
				tags = in.GetTags().GetItems()
			}
			tag := longestPrefixTag(name, tags)
			if tag == "" {
				return nil, fmt.Errorf("gce: instance %s/%s has no network tag its name starts with, so the firewall rules cannot target it: set drivers.gce.nodeTags to the nodes' tags", zone, name)
			}
			set[tag] = true
		}
	}
	if len(set) == 0 {
		// No rule may go out without targets: it would open every
		// instance of the network.
		return nil, fmt.Errorf("gce: no nodes to take the firewall rules' network tags from: set drivers.gce.nodeTags")
	}
	return slices.Sorted(maps.Keys(set)), nil
}

// longestPrefixTag is upstream's pick: the longest tag the name starts
// with.
func longestPrefixTag(name string, tags []string) string {
	best := ""
	for _, t := range tags {
		if strings.HasPrefix(name, t) && len(t) > len(best) {
			best = t
		}
	}
	return best
}
