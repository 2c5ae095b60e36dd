package loadbalancers

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
)

// turns runs one Service's load-balancer calls one at a time.
//
// The upstream service controller calls EnsureLoadBalancer from its
// Service worker and UpdateLoadBalancer from its node sync, each on its
// own goroutine and with no lock between them. Each driver call observes
// the cloud, plans and writes; when two run at once for one Service, the
// later write is built from what was observed before the earlier one
// landed. Where a write replaces the whole object (a DigitalOcean load
// balancer PUT carries every rule and every droplet) it undoes the other
// one: a Node the node sync just added disappears again, or a port the
// Service sync just set goes back. The controller has by then recorded
// both as done, so nothing syncs the Service again until the next Node or
// Service change. Taking turns per Service makes each call observe what
// the one before it wrote.
//
// Waiting for a turn also ages the Node list a call carries: the calls
// list the Nodes just before they come here, so the one that arrived last
// holds the newest list, and every call that runs uses that one.
type turns struct {
	mu sync.Mutex
	m  map[string]*turn
}

type turn struct {
	sem   chan struct{} // holds one token while a call runs
	users int           // calls running or waiting; the turn is dropped at 0
	nodes []*v1.Node    // the newest Node list a call brought
}

// take waits for svc's turn. With withNodes, nodes is the list this call
// brought; the list to use once the turn is taken is returned.
func (ts *turns) take(ctx context.Context, svc *v1.Service, nodes []*v1.Node, withNodes bool) ([]*v1.Node, func(), error) {
	key := svc.Namespace + "/" + svc.Name
	ts.mu.Lock()
	if ts.m == nil {
		ts.m = map[string]*turn{}
	}
	t := ts.m[key]
	if t == nil {
		t = &turn{sem: make(chan struct{}, 1)}
		ts.m[key] = t
	}
	t.users++
	if withNodes {
		t.nodes = nodes
	}
	ts.mu.Unlock()

	leave := func() {
		ts.mu.Lock()
		t.users--
		if t.users == 0 {
			delete(ts.m, key)
		}
		ts.mu.Unlock()
	}
	select {
	case t.sem <- struct{}{}:
	case <-ctx.Done():
		leave()
		return nil, nil, ctx.Err()
	}
	ts.mu.Lock()
	if withNodes {
		nodes = t.nodes
	}
	ts.mu.Unlock()
	return nodes, func() { <-t.sem; leave() }, nil
}
