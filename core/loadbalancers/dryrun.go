package loadbalancers

import (
	"context"
	"errors"
	"slices"
	"sync"
)

// A dry run is how `polyccm plan` asks a driver what one sync would do
// without doing it: the same observe and plan steps, stopped before
// apply. The driver code is the controller's own; only the context
// differs.

// ErrPlanned ends a sync under a dry run at its first non-empty plan: what
// comes after depends on changes that were not made.
var ErrPlanned = errors.New("dry run: stopped before applying the plan")

// DryRun collects what one sync would change: the cloud changes of its
// plans and the Kubernetes writes it would make.
type DryRun struct {
	mu      sync.Mutex
	changes []Change
	writes  []string
}

type dryRunKey struct{}

// WithDryRun returns a context under which syncs plan and stop instead of
// applying, and the DryRun that collects their changes.
func WithDryRun(ctx context.Context) (context.Context, *DryRun) {
	d := &DryRun{}
	return context.WithValue(ctx, dryRunKey{}, d), d
}

// DryRunFrom returns the dry run ctx carries, or nil.
func DryRunFrom(ctx context.Context) *DryRun {
	d, _ := ctx.Value(dryRunKey{}).(*DryRun)
	return d
}

// planned hands a plan to the dry run ctx carries, if any. Under a dry
// run it records the plan's changes and returns ErrPlanned when there are
// some, so nothing is applied; an empty plan lets the sync go on (what
// follows it may only read, or would write to Kubernetes, which the dry
// run's client records). Without one it returns nil. Plan.Apply calls it:
// every change is made through a Plan.
func planned(ctx context.Context, p *Plan) error {
	d := DryRunFrom(ctx)
	if d == nil {
		return nil
	}
	if p.Empty() {
		return nil
	}
	d.mu.Lock()
	for _, c := range p.Changes {
		c.Apply = nil
		d.changes = append(d.changes, c)
	}
	d.mu.Unlock()
	return ErrPlanned
}

// Wrote records a Kubernetes write the sync would have made.
func (d *DryRun) Wrote(what string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.writes = append(d.writes, what)
}

// Changes returns the cloud changes recorded so far.
func (d *DryRun) Changes() []Change {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.changes)
}

// Writes returns the Kubernetes writes recorded so far.
func (d *DryRun) Writes() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.writes)
}
