package gce

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Operation is a compute#operation, as the API sends it.
type Operation struct {
	Kind                string          `json:"kind"`
	ID                  uint64          `json:"id,string"`
	Name                string          `json:"name"`
	Zone                string          `json:"zone,omitempty"`
	Region              string          `json:"region,omitempty"`
	OperationType       string          `json:"operationType"`
	TargetLink          string          `json:"targetLink"`
	TargetID            uint64          `json:"targetId,string,omitempty"`
	Status              string          `json:"status"`
	User                string          `json:"user"`
	Progress            int             `json:"progress"`
	InsertTime          string          `json:"insertTime"`
	StartTime           string          `json:"startTime,omitempty"`
	EndTime             string          `json:"endTime,omitempty"`
	Error               *OperationError `json:"error,omitempty"`
	HTTPErrorStatusCode int             `json:"httpErrorStatusCode,omitempty"`
	HTTPErrorMessage    string          `json:"httpErrorMessage,omitempty"`
	SelfLink            string          `json:"selfLink"`
}

// OperationError is an operation's error: what went wrong, in codes such
// as QUOTA_EXCEEDED or RESOURCE_NOT_READY.
type OperationError struct {
	Errors []OperationErrorItem `json:"errors"`
}

// OperationErrorItem is one entry of an operation's error.
type OperationErrorItem struct {
	Code     string `json:"code"`
	Message  string `json:"message"`
	Location string `json:"location,omitempty"`
}

// Operation statuses.
const (
	OpPending = "PENDING"
	OpRunning = "RUNNING"
	OpDone    = "DONE"
)

func (o Operation) render(base string) Operation {
	o.Zone = link(base, o.Zone)
	o.Region = link(base, o.Region)
	o.TargetLink = link(base, o.TargetLink)
	o.SelfLink = link(base, o.SelfLink)
	if o.Error != nil {
		o.Error = &OperationError{Errors: append([]OperationErrorItem(nil), o.Error.Errors...)}
	}
	return o
}

// operation is the fake's state for one operation.
type operation struct {
	wire       Operation // links relative
	collection string    // "forwardingRules"
	created    time.Time
	doneAt     time.Time
	// apply makes the operation's change when it completes; an error
	// fails the operation instead.
	apply func() *opError
	fail  *opError // injected failure
}

// opError is why an operation failed.
type opError struct {
	code    string
	message string
	http    int
}

// OperationFailure describes the error FailOperations makes operations
// end with.
type OperationFailure struct {
	// Match selects operations as "collection.operationType", e.g.
	// "forwardingRules.insert", "targetPools.addInstance"; "*" stands for
	// either part ("*.insert", "firewalls.*"), and "" matches all.
	Match string
	// Code is the error code, e.g. "QUOTA_EXCEEDED" or
	// "RESOURCE_NOT_READY"; "" means "INTERNAL_ERROR".
	Code string
	// Message is the error's message; "" gives a generic one per code.
	Message string
	// HTTPStatus is the operation's httpErrorStatusCode; 0 picks the one
	// the API uses for Code (403 for QUOTA_EXCEEDED, 400 for
	// RESOURCE_NOT_READY, 500 otherwise).
	HTTPStatus int
}

type opFailure struct {
	OperationFailure
	remaining int
}

func (f *opFailure) matches(collection, opType string) bool {
	if f.Match == "" || f.Match == "*" {
		return true
	}
	c, t, ok := strings.Cut(f.Match, ".")
	if !ok {
		return false
	}
	return (c == "*" || c == collection) && (t == "*" || t == opType)
}

// FailOperations makes the next n operations matching f.Match finish DONE
// with f's error instead of taking effect.
func (s *Server) FailOperations(n int, f OperationFailure) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opFailures = append(s.opFailures, &opFailure{OperationFailure: f, remaining: n})
}

func (s *Server) takeFailureLocked(collection, opType string) *opError {
	for k, f := range s.opFailures {
		if !f.matches(collection, opType) {
			continue
		}
		f.remaining--
		if f.remaining == 0 {
			s.opFailures = append(s.opFailures[:k], s.opFailures[k+1:]...)
		}
		code := cmp.Or(f.Code, "INTERNAL_ERROR")
		status := f.HTTPStatus
		if status == 0 {
			switch code {
			case "QUOTA_EXCEEDED":
				status = http.StatusForbidden
			case "RESOURCE_NOT_READY", "RESOURCE_IN_USE_BY_ANOTHER_RESOURCE", "IP_IN_USE_BY_ANOTHER_RESOURCE":
				status = http.StatusBadRequest
			case "RESOURCE_NOT_FOUND":
				status = http.StatusNotFound
			case "RESOURCE_ALREADY_EXISTS":
				status = http.StatusConflict
			default:
				status = http.StatusInternalServerError
			}
		}
		msg := f.Message
		if msg == "" {
			msg = fmt.Sprintf("Injected %s failure of %s.%s.", code, collection, opType)
		}
		return &opError{code: code, message: msg, http: status}
	}
	return nil
}

// opSpec is what a mutating handler hands startOpLocked.
type opSpec struct {
	scope      string // "zones/z", "regions/r" or "global"
	opType     string // "insert", "delete", "addInstance", ...
	collection string // "targetPools"
	target     string // relative path of the resource
	targetID   uint64
	apply      func() *opError
}

// startOpLocked starts an operation and answers with it.
func (s *Server) startOpLocked(c *call, spec opSpec) (int, any) {
	now := s.now()
	id := s.newIDLocked()
	op := &operation{
		collection: spec.collection,
		created:    now,
		doneAt:     now.Add(s.opDelay),
		apply:      spec.apply,
		fail:       s.takeFailureLocked(spec.collection, spec.opType),
	}
	name := opName(now, id)
	w := Operation{
		Kind:          "compute#operation",
		ID:            id,
		Name:          name,
		OperationType: spec.opType,
		TargetLink:    spec.target,
		TargetID:      spec.targetID,
		Status:        OpRunning,
		User:          "polyccm-test@" + s.project + ".iam.gserviceaccount.com",
		Progress:      0,
		InsertTime:    timestamp(now),
		StartTime:     timestamp(now),
	}
	prefix := "projects/" + s.project + "/"
	switch {
	case strings.HasPrefix(spec.scope, "zones/"):
		w.Zone = prefix + spec.scope
	case strings.HasPrefix(spec.scope, "regions/"):
		w.Region = prefix + spec.scope
	}
	w.SelfLink = prefix + spec.scope + "/operations/" + name
	op.wire = w
	s.ops[w.SelfLink] = op
	s.pending = append(s.pending, op)
	if spec.target != "" {
		s.busy[spec.target] = op
	}
	if rid := c.r.URL.Query().Get("requestId"); rid != "" {
		s.requestIDs[rid] = op
	}
	if s.syncOps && s.opDelay <= 0 {
		s.pending = s.pending[:len(s.pending)-1] // op, just appended
		s.finishLocked(op, now)
	}
	return http.StatusOK, op.wire.render(c.base)
}

// opName builds a name of the API's shape,
// "operation-1712345678901-6123abc4d5e6f-1a2b3c4d-5e6f7a8b".
func opName(now time.Time, id uint64) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d", id)
	sum := h.Sum64()
	return fmt.Sprintf("operation-%d-%013x-%08x-%08x", now.UnixMilli(), sum&0xfffffffffffff, uint32(id), uint32(sum>>32))
}

// settleLocked completes the operations that are due: their change takes
// effect (or their failure is recorded) and they turn DONE.
func (s *Server) settleLocked() {
	if len(s.pending) == 0 {
		return
	}
	now := s.now()
	keep := s.pending[:0]
	for _, op := range s.pending {
		if now.Before(op.doneAt) {
			keep = append(keep, op)
			continue
		}
		s.finishLocked(op, now)
	}
	clear(s.pending[len(keep):])
	s.pending = keep
}

func (s *Server) finishLocked(op *operation, now time.Time) {
	if s.busy[op.wire.TargetLink] == op {
		delete(s.busy, op.wire.TargetLink)
	}
	err := op.fail
	if err == nil && op.apply != nil {
		err = op.apply()
	}
	op.apply = nil
	op.wire.Status = OpDone
	op.wire.Progress = 100
	op.wire.EndTime = timestamp(now)
	if err != nil {
		op.wire.Error = &OperationError{Errors: []OperationErrorItem{{Code: err.code, Message: err.message}}}
		op.wire.HTTPErrorStatusCode = err.http
		op.wire.HTTPErrorMessage = strings.ToUpper(http.StatusText(err.http))
	}
}

// checkBusyLocked refuses a mutation of a resource another operation is
// still changing. An insert racing a pending insert of the same name is a
// conflict, as the name is taken.
func (s *Server) checkBusyLocked(path string, insert bool) (int, any) {
	op := s.busy[path]
	if op == nil {
		return 0, nil
	}
	if insert && op.wire.OperationType == "insert" {
		return errAlreadyExists(path)
	}
	return errNotReady(path)
}

// requestIDRE is a UUID, the format the API requires of requestId.
var requestIDRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// replayLocked handles a mutation's requestId: a malformed one is refused,
// and one seen before answers with the operation it started, without
// doing the work again. It returns status 0 to go on.
func (s *Server) replayLocked(c *call) (int, any) {
	rid := c.r.URL.Query().Get("requestId")
	if rid == "" {
		return 0, nil
	}
	if !requestIDRE.MatchString(rid) || rid == "00000000-0000-0000-0000-000000000000" {
		return errInvalidField("requestId", rid, "The request ID must be a valid UUID with the exception that zero UUID is not supported.")
	}
	if op := s.requestIDs[rid]; op != nil {
		return http.StatusOK, op.wire.render(c.base)
	}
	return 0, nil
}

// Operations returns every operation, oldest first.
func (s *Server) Operations() []Operation {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked()
	ops := make([]*operation, 0, len(s.ops))
	for _, op := range s.ops {
		ops = append(ops, op)
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].wire.ID < ops[j].wire.ID })
	out := make([]Operation, len(ops))
	for k, op := range ops {
		out[k] = op.wire.render(s.baseLocked())
	}
	return out
}

func (s *Server) registerOperations() {
	for _, scope := range []string{"zones/{zone}", "regions/{region}", "global"} {
		coll := "projects/{project}/" + scope + "/operations"
		s.handle("GET", coll, s.listOps)
		s.handle("GET", coll+"/{operation}", s.getOp)
		s.handle("DELETE", coll+"/{operation}", s.deleteOp)
		s.handleUnlocked("POST", coll+"/{operation}/wait", s.waitOp)
	}
}

// opScope is the scope of an operations request ("zones/z", ...).
func opScope(p params) string {
	switch {
	case p["zone"] != "":
		return "zones/" + p["zone"]
	case p["region"] != "":
		return "regions/" + p["region"]
	}
	return "global"
}

func (s *Server) opPath(p params) string {
	return "projects/" + s.project + "/" + opScope(p) + "/operations/" + p["operation"]
}

func (s *Server) getOp(c *call) (int, any) {
	op := s.ops[s.opPath(c.p)]
	if op == nil {
		return errNotFound(s.opPath(c.p))
	}
	return http.StatusOK, op.wire.render(c.base)
}

// deleteOp forgets an operation; the API answers with an empty body.
func (s *Server) deleteOp(c *call) (int, any) {
	path := s.opPath(c.p)
	if s.ops[path] == nil {
		return errNotFound(path)
	}
	delete(s.ops, path)
	return http.StatusOK, struct{}{}
}

func (s *Server) listOps(c *call) (int, any) {
	prefix := "projects/" + s.project + "/" + opScope(c.p) + "/operations/"
	var items []listItem
	for path, op := range s.ops {
		if strings.HasPrefix(path, prefix) {
			items = append(items, listItem{name: op.wire.Name, created: op.created, doc: op.wire.render(c.base)})
		}
	}
	return s.listResponse(c, "compute#operationList", strings.TrimSuffix(prefix, "/"), items)
}

// waitOp holds until the operation is DONE or the wait limit passes, then
// answers with the operation as it is, as operations.wait does.
func (s *Server) waitOp(c *call) (int, any) {
	s.mu.Lock()
	limit := s.waitLimit
	s.mu.Unlock()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		s.mu.Lock()
		s.settleLocked()
		if status, body := s.checkScopeLocked(c.rt, c.p); status != 0 {
			s.mu.Unlock()
			return status, body
		}
		op := s.ops[s.opPath(c.p)]
		if op == nil {
			path := s.opPath(c.p)
			s.mu.Unlock()
			return errNotFound(path)
		}
		if op.wire.Status == OpDone || !time.Now().Before(deadline) {
			w := op.wire.render(c.base)
			s.mu.Unlock()
			return http.StatusOK, w
		}
		s.mu.Unlock()
		select {
		case <-c.r.Context().Done():
			// The client gave up or the server is closing: nobody reads
			// the answer.
			return http.StatusOK, nil
		case <-tick.C:
		}
	}
}
