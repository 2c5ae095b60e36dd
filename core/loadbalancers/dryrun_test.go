package loadbalancers

import (
	"context"
	"errors"
	"testing"
)

func TestDryRunStopsBeforeApplying(t *testing.T) {
	applied := 0
	p := Plan{}
	p.Add(Change{Action: Create, Kind: "load balancer", Name: "a1", Apply: func(context.Context) error { applied++; return nil }})
	ctx, dry := WithDryRun(context.Background())
	if err := p.Apply(ctx); !errors.Is(err, ErrPlanned) {
		t.Fatalf("Apply under a dry run: %v, want ErrPlanned", err)
	}
	if applied != 0 {
		t.Error("a dry run applied a change")
	}
	if got := dry.Changes(); len(got) != 1 || got[0].Name != "a1" || got[0].Apply != nil {
		t.Errorf("recorded %+v", got)
	}
	var empty Plan
	if err := empty.Apply(ctx); err != nil {
		t.Errorf("an empty plan under a dry run: %v, want nil (the sync goes on)", err)
	}
	if err := p.Apply(context.Background()); err != nil || applied != 1 {
		t.Errorf("without a dry run: %v, applied %d", err, applied)
	}
}
