package digitalocean

import (
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/digitalocean/godo"
)

func TestPowerActionsChangeStatus(t *testing.T) {
	s, c := start(t)
	d := s.AddDroplet(Droplet{Region: "ams3"})
	ctx := context.Background()

	steps := []struct {
		do   func(context.Context, int) (*godo.Action, *godo.Response, error)
		typ  string
		want string
	}{
		{c.DropletActions.PowerOff, "power_off", StatusOff},
		{c.DropletActions.PowerOn, "power_on", StatusActive},
		{c.DropletActions.Shutdown, "shutdown", StatusOff},
		{c.DropletActions.Reboot, "reboot", StatusActive},
		{c.DropletActions.PowerCycle, "power_cycle", StatusActive},
	}
	for _, st := range steps {
		a, resp, err := st.do(ctx, d.ID)
		if err != nil {
			t.Fatalf("%s: %v", st.typ, err)
		}
		if resp.StatusCode != http.StatusCreated {
			t.Errorf("%s: status %d, want 201", st.typ, resp.StatusCode)
		}
		if a.Type != st.typ || a.Status != "completed" || a.ResourceID != d.ID || a.ResourceType != "droplet" ||
			a.RegionSlug != "ams3" || a.Region == nil || a.Region.Slug != "ams3" || a.StartedAt == nil || a.CompletedAt == nil {
			t.Errorf("%s: action = %+v", st.typ, a)
		}
		got, _, err := c.Droplets.Get(ctx, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != st.want {
			t.Errorf("after %s status = %q, want %q", st.typ, got.Status, st.want)
		}
	}
}

func TestActionDelay(t *testing.T) {
	s, c := start(t)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s.SetClock(func() time.Time { return now })
	s.SetActionDelay(10 * time.Second)
	d := s.AddDroplet(Droplet{})
	ctx := context.Background()

	a, _, err := c.DropletActions.PowerOff(ctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != "in-progress" || a.CompletedAt != nil {
		t.Errorf("action = %+v, want in-progress without completed_at", a)
	}
	if got, _ := s.Droplet(d.ID); got.Status != StatusActive {
		t.Errorf("status while in progress = %q, want active", got.Status)
	}
	_, _, err = c.DropletActions.PowerOn(ctx, d.ID)
	if e := apiErr(t, err, http.StatusUnprocessableEntity); e.Message != "Droplet already has a pending event." {
		t.Errorf("message = %q", e.Message)
	}

	now = now.Add(10 * time.Second)
	a, _, err = c.DropletActions.Get(ctx, d.ID, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != "completed" || a.CompletedAt == nil || !a.CompletedAt.Time.Equal(now) {
		t.Errorf("action = %+v, want completed at %v", a, now)
	}
	if got, _ := s.Droplet(d.ID); got.Status != StatusOff {
		t.Errorf("status after completion = %q, want off", got.Status)
	}

	// The action belongs to its droplet only.
	other := s.AddDroplet(Droplet{})
	_, _, err = c.DropletActions.Get(ctx, other.ID, a.ID)
	apiErr(t, err, http.StatusNotFound)
}

func TestActionErrors(t *testing.T) {
	s, c := start(t)
	d := s.AddDroplet(Droplet{})
	ctx := context.Background()

	req, err := c.NewRequest(ctx, http.MethodPost, "v2/droplets/"+strconv.Itoa(d.ID)+"/actions", map[string]string{"type": "explode"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Do(ctx, req, nil)
	if e := apiErr(t, err, http.StatusUnprocessableEntity); e.Message == "" {
		t.Error("422 without a message")
	}
	if got, _ := s.Droplet(d.ID); got.Status != StatusActive {
		t.Errorf("rejected action changed status to %q", got.Status)
	}

	_, _, err = c.DropletActions.PowerOff(ctx, 999)
	apiErr(t, err, http.StatusNotFound)

	resp, body := raw(t, s, http.MethodPost, "/v2/droplets/"+strconv.Itoa(d.ID)+"/actions", "{not json")
	if resp.StatusCode != http.StatusBadRequest || decode(t, body)["id"] != "bad_request" {
		t.Errorf("malformed body: %d %s", resp.StatusCode, body)
	}
}
