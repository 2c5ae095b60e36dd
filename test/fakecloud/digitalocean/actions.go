package digitalocean

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// actionEffects maps the droplet action types the fake models to the
// status the droplet ends in. "create" is the action behind a new droplet.
var actionEffects = map[string]string{
	"create":      StatusActive,
	"power_on":    StatusActive,
	"power_off":   StatusOff,
	"shutdown":    StatusOff,
	"reboot":      StatusActive,
	"power_cycle": StatusActive,
}

type actionState struct {
	id         int
	typ        string
	dropletID  int
	region     string
	startedAt  time.Time
	completeAt time.Time
	done       bool
}

// startActionLocked records an action on d that completes after delay.
func (s *Server) startActionLocked(typ string, d *Droplet, delay time.Duration) *actionState {
	now := s.now()
	a := &actionState{
		id:         s.nextActionID,
		typ:        typ,
		dropletID:  d.ID,
		region:     d.Region,
		startedAt:  now,
		completeAt: now.Add(delay),
	}
	s.nextActionID++
	s.actions[a.id] = a
	return a
}

// settleLocked completes the actions whose time has come, oldest first, and
// applies their effect. State moves lazily, on reads, so the fake needs no
// goroutines and tests can drive time with SetClock.
func (s *Server) settleLocked() {
	now := s.now()
	var due []*actionState
	for _, a := range s.actions {
		if !a.done && !now.Before(a.completeAt) {
			due = append(due, a)
		}
	}
	slices.SortFunc(due, func(a, b *actionState) int {
		if c := a.completeAt.Compare(b.completeAt); c != 0 {
			return c
		}
		return a.id - b.id
	})
	for _, a := range due {
		a.done = true
		d, ok := s.droplets[a.dropletID]
		if !ok {
			continue
		}
		// A create only activates a droplet still waiting for it.
		if a.typ == "create" && d.Status != StatusNew {
			continue
		}
		d.Status = actionEffects[a.typ]
	}
}

func (s *Server) pendingActionLocked(dropletID int) bool {
	for _, a := range s.actions {
		if !a.done && a.dropletID == dropletID {
			return true
		}
	}
	return false
}

func (s *Server) registerActions() {
	s.handle(http.MethodPost, "/v2/droplets/{id}/actions", s.postDropletAction)
	s.handle(http.MethodGet, "/v2/droplets/{id}/actions/{action_id}", s.getDropletAction)
	s.handle(http.MethodGet, "/v2/actions/{id}", s.getAction)
}

// postDropletAction: POST /v2/droplets/{id}/actions with {"type": ...}.
// Answers 201 with the action; with no action delay it is already
// completed and the droplet's status changed.
func (s *Server) postDropletAction(r *http.Request, p params) (int, any) {
	id, ok := parseID(p["id"])
	if !ok {
		return errNotFound()
	}
	var req struct {
		Type string `json:"type"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		return errNotJSON(err)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	d, ok := s.droplets[id]
	if !ok {
		return errNotFound()
	}
	if _, modelled := actionEffects[req.Type]; !modelled || req.Type == "create" {
		return errUnprocessable(fmt.Sprintf("%q is not a valid droplet action type.", req.Type))
	}
	if s.pendingActionLocked(id) {
		return errUnprocessable("Droplet already has a pending event.")
	}
	a := s.startActionLocked(req.Type, d, s.actionDelay)
	s.settleLocked()
	return http.StatusCreated, &actionRoot{Action: wireActionOf(a)}
}

// getDropletAction: GET /v2/droplets/{id}/actions/{action_id}.
func (s *Server) getDropletAction(_ *http.Request, p params) (int, any) {
	id, ok1 := parseID(p["id"])
	actionID, ok2 := parseID(p["action_id"])
	if !ok1 || !ok2 {
		return errNotFound()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	a, ok := s.actions[actionID]
	if !ok || a.dropletID != id {
		return errNotFound()
	}
	return http.StatusOK, &actionRoot{Action: wireActionOf(a)}
}

// getAction: GET /v2/actions/{id}, where create links point.
func (s *Server) getAction(_ *http.Request, p params) (int, any) {
	id, ok := parseID(p["id"])
	if !ok {
		return errNotFound()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	a, ok := s.actions[id]
	if !ok {
		return errNotFound()
	}
	return http.StatusOK, &actionRoot{Action: wireActionOf(a)}
}

func wireActionOf(a *actionState) wireAction {
	region := wireRegionOf(a.region)
	w := wireAction{
		ID:           a.id,
		Status:       "in-progress",
		Type:         a.typ,
		StartedAt:    a.startedAt.UTC().Format(time.RFC3339),
		ResourceID:   a.dropletID,
		ResourceType: "droplet",
		Region:       &region,
		RegionSlug:   a.region,
	}
	if a.done {
		w.Status = "completed"
		done := a.completeAt.UTC().Format(time.RFC3339)
		w.CompletedAt = &done
	}
	return w
}
