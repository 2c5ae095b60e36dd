package loadbalancers

import (
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
