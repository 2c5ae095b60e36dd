package loadbalancers

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

type rule struct{ Port int }

type lbRequest struct {
	Name        string  `json:"name"`
	DropletIDs  []int   `json:"droplet_ids,omitempty"`
	Rules       []rule  `json:"forwarding_rules"`
	Idle        *uint64 `json:"http_idle_timeout_seconds,omitempty"`
	Untagged    string
	notExported string
}

func TestDiffNamesFieldsAsTheAPIDoes(t *testing.T) {
	sixty := uint64(60)
	from := lbRequest{Name: "a", DropletIDs: []int{1, 2}, Rules: []rule{{80}}, notExported: "x"}
	to := lbRequest{Name: "a", DropletIDs: []int{1, 2, 3}, Rules: []rule{{80}, {443}}, Idle: &sixty, Untagged: "u", notExported: "y"}
	got := Diff(&from, to)
	want := []Field{
		{Name: "droplet_ids", From: "[1 2]", To: "[1 2 3]"},
		{Name: "forwarding_rules", From: "[{Port:80}]", To: "[{Port:80} {Port:443}]"},
		{Name: "http_idle_timeout_seconds", From: "none", To: "60"},
		{Name: "Untagged", From: `""`, To: "u"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Diff =\n%+v\nwant\n%+v", got, want)
	}
	if d := Diff(from, from); len(d) != 0 {
		t.Fatalf("Diff of equal values = %+v", d)
	}
}

func TestPlanLeavesOutEmptyUpdates(t *testing.T) {
	var p Plan
	p.Add(Change{Action: Update, Kind: "load balancer", Name: "lb-1"})
	if !p.Empty() || p.String() != "no changes" {
		t.Fatalf("plan with an empty update = %q", p.String())
	}
	p.Add(Change{Action: Update, Kind: "load balancer", Name: "lb-1", Fields: []Field{{Name: "droplet_ids", From: "[1]", To: "[1 2]"}}})
	p.Add(Change{Action: Delete, Kind: "security group", Name: "sg-1"})
	if got, want := p.String(), "update load balancer lb-1 (droplet_ids [1] -> [1 2]); delete security group sg-1"; got != want {
		t.Fatalf("plan = %q, want %q", got, want)
	}
}

// Apply runs the changes in order, stops at the first error and names it;
// changes without Apply are skipped.
func TestPlanApply(t *testing.T) {
	var done []string
	step := func(name string, err error) func(context.Context) error {
		return func(context.Context) error {
			done = append(done, name)
			return err
		}
	}
	var p Plan
	p.Add(Change{Action: Create, Kind: "security group", Name: "sg", Apply: step("sg", nil)})
	p.Add(Change{Action: Update, Kind: "load balancer", Name: "lb", Fields: []Field{{Name: "ports"}}})
	p.Add(Change{Action: Create, Kind: "listener", Name: "80", Apply: step("80", errors.New("boom"))})
	p.Add(Change{Action: Create, Kind: "listener", Name: "443", Apply: step("443", nil)})
	named := Plan{Changes: []Change{{Action: Delete, Kind: "listener", Name: "8080", Apply: step("8080", errors.New("deleting listener 8080: gone wrong"))}}}
	if err := named.Apply(context.Background()); err == nil || err.Error() != "deleting listener 8080: gone wrong" {
		t.Errorf("Apply = %v, want the change's own error, which names it", err)
	}
	done = nil
	err := p.Apply(context.Background())
	if err == nil || err.Error() != "create listener 80: boom" {
		t.Errorf("Apply = %v, want the failing change named", err)
	}
	if !reflect.DeepEqual(done, []string{"sg", "80"}) {
		t.Errorf("applied %v, want [sg 80]", done)
	}
}
