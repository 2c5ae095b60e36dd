package hetzner

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Action statuses, as the API spells them.
const (
	ActionRunning = "running"
	ActionSuccess = "success"
	ActionError   = "error"
)

// resourceRef names a resource an action works on.
type resourceRef struct {
	ID   int64  `json:"id"`
	Type string `json:"type"`
}

type actionState struct {
	id        int64
	command   string
	resources []resourceRef
	started   time.Time
	due       time.Time
	finished  time.Time
	status    string
	errCode   string
	errMsg    string
	// effect applies the change when the action succeeds; undo releases
	// what the request reserved (addresses) when it fails. Both run under
	// s.mu and look resources up again, since they may be gone by then.
	effect, undo func()
}

// failRule makes the next action of a command end in error.
type failRule struct {
	command, code, message string
}

type wireActionError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type wireAction struct {
	ID        int64            `json:"id"`
	Command   string           `json:"command"`
	Status    string           `json:"status"`
	Progress  int              `json:"progress"`
	Started   string           `json:"started"`
	Finished  *string          `json:"finished"`
	Resources []resourceRef    `json:"resources"`
	Error     *wireActionError `json:"error"`
}

// FailNextAction makes the next action with command (any command for "")
// end in error with code and message instead of taking effect, as an
// action the cloud could not carry out does ("action_failed").
func (s *Server) FailNextAction(command, code, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failNext = append(s.failNext, failRule{command: command, code: cmp.Or(code, "action_failed"), message: cmp.Or(message, "Action failed")})
}

// lock takes the state lock and brings the state up to date: every
// handler and knob starts with it.
func (s *Server) lock() {
	s.mu.Lock()
	s.settleLocked()
}

// startActionLocked records an action that completes after delay (at once
// for 0, within this request) and returns it.
func (s *Server) startActionLocked(command string, delay time.Duration, res []resourceRef, effect, undo func()) *actionState {
	now := s.now()
	a := &actionState{id: s.newIDLocked("action"), command: command, resources: res,
		started: now, due: now.Add(delay), status: ActionRunning, effect: effect, undo: undo}
	for k, f := range s.failNext {
		if f.command == "" || f.command == command {
			a.errCode, a.errMsg = f.code, f.message
			s.failNext = slices.Delete(s.failNext, k, k+1)
			break
		}
	}
	s.actions[a.id] = a
	s.running[a.id] = a
	if delay <= 0 {
		s.completeLocked(a)
	}
	return a
}

func (s *Server) completeLocked(a *actionState) {
	delete(s.running, a.id)
	a.finished = a.due
	if a.errCode != "" {
		a.status = ActionError
		if a.undo != nil {
			a.undo()
		}
		return
	}
	a.status = ActionSuccess
	if a.effect != nil {
		a.effect()
	}
}

// settleLocked completes the actions whose time has come, in the order
// they end.
func (s *Server) settleLocked() {
	now := s.now()
	var due []*actionState
	for _, a := range s.running {
		if !now.Before(a.due) {
			due = append(due, a)
		}
	}
	slices.SortFunc(due, func(a, b *actionState) int {
		return cmp.Or(a.due.Compare(b.due), cmp.Compare(a.id, b.id))
	})
	for _, a := range due {
		s.completeLocked(a)
	}
}

// busyLocked says whether an action running now works on ref.
func (s *Server) busyLocked(ref resourceRef) bool {
	for _, a := range s.running {
		if slices.Contains(a.resources, ref) {
			return true
		}
	}
	return false
}

// lockedLocked is the answer to a new action on resources another action
// runs on: a network is busy ("conflict", as its reference says), other
// resources are locked. It returns 0 when all are free.
func (s *Server) lockedLocked(refs ...resourceRef) (int, any) {
	for _, ref := range refs {
		if !s.busyLocked(ref) {
			continue
		}
		if ref.Type == "network" {
			return errConflict("network is busy with another action, please retry")
		}
		return errLocked(strings.ReplaceAll(ref.Type, "_", " ") + " is locked by another action")
	}
	return 0, nil
}

func (s *Server) wireActionOf(a *actionState) wireAction {
	w := wireAction{ID: a.id, Command: a.command, Status: a.status, Started: stamp(a.started),
		Resources: slices.Clone(a.resources)}
	switch a.status {
	case ActionRunning:
		if total := a.due.Sub(a.started); total > 0 {
			w.Progress = min(99, max(0, int(100*s.now().Sub(a.started)/total)))
		}
	default:
		w.Progress = 100
		w.Finished = stampPtr(a.finished)
	}
	if a.status == ActionError {
		w.Error = &wireActionError{Code: a.errCode, Message: a.errMsg}
	}
	return w
}

// actionDoc is the {"action": ...} answer of every action request; 201
// Created, as the API answers them.
func (s *Server) actionDoc(a *actionState) (int, any) {
	return http.StatusCreated, map[string]any{"action": s.wireActionOf(a)}
}

// resourcePaths are the resources with action endpoints of their own.
var resourcePaths = map[string]string{
	"servers": "server", "networks": "network", "volumes": "volume",
	"load_balancers": "load_balancer", "certificates": "certificate",
}

func (s *Server) registerActions() {
	s.handle(http.MethodGet, "/v1/actions", s.listActions(""))
	s.handle(http.MethodGet, "/v1/actions/{id}", s.getAction(""))
	for path, typ := range resourcePaths {
		s.handle(http.MethodGet, "/v1/"+path+"/actions", s.listActions(typ))
		s.handle(http.MethodGet, "/v1/"+path+"/actions/{id}", s.getAction(typ))
		s.handle(http.MethodGet, "/v1/"+path+"/{id}/actions", s.listActions(typ))
		s.handle(http.MethodGet, "/v1/"+path+"/{id}/actions/{action_id}", s.getAction(typ))
	}
}

// listActions: GET /v1/actions?id=..., which hcloud-go's WaitFor polls,
// and the per-resource lists. The global list has required an id filter
// since 2025-01-30.
func (s *Server) listActions(typ string) handlerFunc {
	return func(r *http.Request, p params) (int, any) {
		lq, st, body := parseList(r)
		if st != 0 {
			return st, body
		}
		q := r.URL.Query()
		var ids []int64
		for _, v := range q["id"] {
			id, ok := parseID(v)
			if !ok {
				return errInvalid("id", "must be a positive integer")
			}
			ids = append(ids, id)
		}
		if typ == "" && len(ids) == 0 {
			return errInvalid("id", "is required")
		}
		for _, st := range q["status"] {
			if st != ActionRunning && st != ActionSuccess && st != ActionError {
				return errInvalid("status", "is invalid")
			}
		}
		var owner int64
		if p["id"] != "" {
			var ok bool
			if owner, ok = parseID(p["id"]); !ok {
				return errNotFound("not found")
			}
		}
		s.lock()
		defer s.mu.Unlock()
		// WaitFor polls by ID: look those up rather than scan every action.
		candidates := s.actions
		if len(ids) > 0 {
			candidates = map[int64]*actionState{}
			for _, id := range ids {
				if a := s.actions[id]; a != nil {
					candidates[id] = a
				}
			}
		}
		var out []*actionState
		for _, a := range candidates {
			if (len(ids) > 0 && !slices.Contains(ids, a.id)) ||
				(len(q["status"]) > 0 && !slices.Contains(q["status"], a.status)) ||
				(typ != "" && !hasType(a, typ, owner)) {
				continue
			}
			out = append(out, a)
		}
		slices.SortFunc(out, func(a, b *actionState) int { return cmp.Compare(a.id, b.id) })
		return page(r, lq, "actions", out, s.wireActionOf)
	}
}

// hasType says whether a works on a resource of typ (with ID owner, if
// not 0).
func hasType(a *actionState, typ string, owner int64) bool {
	return slices.ContainsFunc(a.resources, func(ref resourceRef) bool {
		return ref.Type == typ && (owner == 0 || ref.ID == owner)
	})
}

// getAction: GET /v1/actions/{id} and the per-resource forms.
func (s *Server) getAction(typ string) handlerFunc {
	return func(_ *http.Request, p params) (int, any) {
		raw := cmp.Or(p["action_id"], p["id"])
		id, ok := parseID(raw)
		var owner int64
		if p["action_id"] != "" {
			var okOwner bool
			owner, okOwner = parseID(p["id"])
			ok = ok && okOwner
		}
		s.lock()
		defer s.mu.Unlock()
		a := s.actions[id]
		if !ok || a == nil || (typ != "" && !hasType(a, typ, owner)) {
			return errNotFound("action with ID '" + raw + "' not found")
		}
		return http.StatusOK, map[string]any{"action": s.wireActionOf(a)}
	}
}
