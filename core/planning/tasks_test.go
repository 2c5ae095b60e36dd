package planning

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// A driver's tasks are planned under a dry run: a change is shown with the
// events the pass recorded, a failure makes the plan incomplete, and a task
// that cannot plan is named.
func TestPlanTasks(t *testing.T) {
	events := newRecorder()
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	// Left over from the Services' syncs: not the task's.
	events.Event(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, v1.EventTypeWarning, "Other", "not the task's")
	var sawDryRun bool
	tasks := []driver.Task{
		{Name: "changes", Plan: func(ctx context.Context) error {
			sawDryRun = loadbalancers.DryRunFrom(ctx) != nil
			events.Event(svc, v1.EventTypeWarning, "FirewallRuleLimitReached", "left out")
			p := loadbalancers.Plan{Changes: []loadbalancers.Change{{
				Action: loadbalancers.Update, Kind: "firewall", Name: "fw (1)",
				Fields: []loadbalancers.Field{{Name: "inbound_rules", From: "(none)", To: "inbound tcp 80 from anywhere"}},
				Apply:  func(context.Context) error { return errors.New("applied under a dry run") },
			}}}
			return p.Apply(ctx)
		}},
		{Name: "steady", Plan: func(context.Context) error { return nil }},
		{Name: "broken", Plan: func(context.Context) error { return errors.New("firewalls.list: unavailable") }},
		{Name: "blind"},
	}
	got, notes := planTasks(context.Background(), tasks, events)
	if !sawDryRun {
		t.Error("the task ran without a dry run")
	}
	if len(got) != 3 {
		t.Fatalf("plans %+v, want 3", got)
	}
	c := got[0]
	if c.Action != "change" || len(c.Changes) != 1 || c.Changes[0].Kind != "firewall" || c.Changes[0].Fields[0].To != "inbound tcp 80 from anywhere" {
		t.Errorf("changes: %+v", c)
	}
	if len(c.Events) != 1 || c.Events[0].Object != "shop/web" || c.Events[0].Reason != "FirewallRuleLimitReached" {
		t.Errorf("changes' events: %+v", c.Events)
	}
	if got[1].Action != Nothing || len(got[1].Changes) != 0 || len(got[1].Events) != 0 {
		t.Errorf("steady: %+v", got[1])
	}
	if got[2].Action != Failed || !strings.Contains(got[2].Message, "unavailable") {
		t.Errorf("broken: %+v", got[2])
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "blind") {
		t.Errorf("notes %q", notes)
	}

	r := &Report{Driver: "digitalocean", Cluster: "c", Tasks: got, Notes: notes}
	r.decide()
	if r.ExitCode() != 1 || len(r.Incomplete) != 1 || !strings.Contains(r.Incomplete[0], "task broken") {
		t.Errorf("exit %d, incomplete %q", r.ExitCode(), r.Incomplete)
	}
	var b bytes.Buffer
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"TASK     ACTION   DETAILS",
		"changes  change   update firewall fw (1) (inbound_rules: (none) -> inbound tcp 80 from anywhere); Warning FirewallRuleLimitReached on shop/web: left out",
		"steady   nothing  -", "broken   error    firewalls.list: unavailable",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}
