package gce

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// groupsMaxAge bounds how long what a node-only sync made of the shared
// instance groups stands in for reading them: long enough to cover the
// syncs of every internal Service after one node change, short enough
// that a group changed behind polyccm's back is read again soon.
const groupsMaxAge = 5 * time.Minute

// groupMemo is what the cluster's instance groups hold, per zone, as the
// latest node-only sync that changed or read them left them. Every
// internal load balancer uses the same groups, so after a node change the
// first Service's node-only sync brings them to the new nodes and the
// others find them so here, without a call. mu is held across every
// change of the groups' members in this process (node-only or full sync)
// and a change drops what it changed from the memo, so the memo never
// claims what another change may have undone; the deletion of a group
// drops it too.
type groupMemo struct {
	mu    sync.Mutex
	zones map[string]groupSeen
}

type groupSeen struct {
	members map[string]bool // short instance URLs
	at      time.Time
}

// holdsLocked reports whether every zone of want is known to hold exactly
// its members.
func (g *groupMemo) holdsLocked(want map[string]map[string]bool) bool {
	for zone, members := range want {
		seen, ok := g.zones[zone]
		if !ok || time.Since(seen.at) > groupsMaxAge || !maps.Equal(seen.members, members) {
			return false
		}
	}
	return true
}

func (g *groupMemo) rememberLocked(want map[string]map[string]bool) {
	if g.zones == nil {
		g.zones = map[string]groupSeen{}
	}
	now := time.Now()
	for zone, members := range want {
		g.zones[zone] = groupSeen{members: members, at: now}
	}
}

func (g *groupMemo) forgetLocked(zones ...string) {
	for _, z := range zones {
		delete(g.zones, z)
	}
}

// forgetAll drops every zone: groups were deleted.
func (g *groupMemo) forgetAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	clear(g.zones)
}

// planInternalNodes plans the node-only sync of an internal load balancer
// (lbnodes.go): one read of the backend service, which must still list
// the groups of the nodes' zones with the Service's health check (what
// the full sync left), then the shared groups (syncGroups). A backend
// service gone or changed falls back to the full sync.
func (l *loadBalancers) planInternalNodes(ctx context.Context, cl *clients, env *environment, svc *v1.Service, spec *lbSpec, byZone map[string][]string) (*loadbalancers.SyncPlan, bool, error) {
	bs, err := l.getBackendService(ctx, cl, env, spec.bsName)
	if err != nil {
		return nil, true, err
	}
	if bs == nil {
		fallBack(svc, "the backend service is gone")
		return nil, false, nil
	}
	want := backendService(env, spec, instanceGroupName(spec.cid), slices.Sorted(maps.Keys(byZone)))
	if d := loadbalancers.Diff(viewBackendService(bs), viewBackendService(want)); len(d) > 0 {
		fallBack(svc, "the backend service changed since the last full sync")
		return nil, false, nil
	}
	return l.planGroups(ctx, cl, env, svc, spec, byZone)
}

// planGroups plans bringing the cluster's instance groups of the nodes'
// zones to the nodes' instances: nothing when the memo knows them so
// already, else one listing per zone and the additions and removals,
// awaited. Groups are shared, so shared is held for reading (no group is
// deleted meanwhile), and the memo's lock across the read and the
// changes: both are taken here and released by the plan's Hold once
// applied. A group gone falls back to the full sync, which makes it.
func (l *loadBalancers) planGroups(ctx context.Context, cl *clients, env *environment, svc *v1.Service, spec *lbSpec, byZone map[string][]string) (*loadbalancers.SyncPlan, bool, error) {
	want := map[string]map[string]bool{}
	for zone, names := range byZone {
		want[zone] = map[string]bool{}
		for _, n := range names {
			want[zone][instanceURL(env.project, zone, n)] = true
		}
	}
	l.shared.RLock()
	g := &l.groups
	g.mu.Lock()
	unlock := func() {
		g.mu.Unlock()
		l.shared.RUnlock()
	}
	if g.holdsLocked(want) {
		unlock()
		return nil, true, nil
	}
	name := instanceGroupName(spec.cid)
	zones := slices.Sorted(maps.Keys(want))
	var p loadbalancers.Plan
	for _, zone := range zones {
		have, err := l.groupMembers(ctx, cl, env, name, zone)
		if cloudapi.IsNotFound(err) {
			unlock()
			fallBack(svc, "the instance group of "+zone+" is gone")
			return nil, false, nil
		}
		if err != nil {
			unlock()
			return nil, true, err
		}
		add, remove := loadbalancers.Delta(want[zone], have, strings.Compare)
		p.Add(loadbalancers.Change{Action: loadbalancers.Update, Kind: kindGroup, Name: zone + "/" + name, Fields: memberFields(add, remove),
			Apply: func(ctx context.Context) error {
				return l.changeGroupMembers(ctx, cl, env, name, zone, add, remove)
			}})
	}
	// A change that fails halfway leaves the groups unknown.
	g.forgetLocked(zones...)
	sp := l.nodePlan(svc, spec, p)
	sp.Hold = func(ctx context.Context) (context.Context, func(bool)) {
		return ctx, func(applied bool) {
			if applied && loadbalancers.DryRunFrom(ctx) == nil {
				g.rememberLocked(want)
			}
			unlock()
		}
	}
	return sp, true, nil
}

// lockGroupChange is taken by the full sync's changes of a group's
// members: they wait for a node-only sync's, and what they change drops
// from the memo (the full sync planned from its own read, which may be
// older than the memo).
func (l *loadBalancers) lockGroupChange(zone string) func() {
	g := &l.groups
	g.mu.Lock()
	g.forgetLocked(zone)
	return func() {
		g.forgetLocked(zone)
		g.mu.Unlock()
	}
}
