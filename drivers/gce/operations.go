package gce

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

// Every Compute change returns an Operation. polyccm waits for it a short,
// bounded while, through the API's operations.wait, which answers once the
// operation is DONE (or after about two minutes): one call where polling
// takes several (a target pool's addInstance runs for seconds). Then it
// lets the controller come back instead of holding a worker.
const (
	opBudget       = 10 * time.Second
	opFirstPoll    = 200 * time.Millisecond
	opMaxPoll      = 2 * time.Second
	opRetryAfter   = 5 * time.Second
	opMaxErrorsLen = 3
)

// operationError is an Operation that finished with errors.
type operationError struct {
	what   string
	op     string
	code   string
	detail string
}

func (e *operationError) Error() string {
	return fmt.Sprintf("%s: operation %s failed: %s: %s", e.what, e.op, e.code, e.detail)
}

// kind: what a failed operation means for the caller.
func (e *operationError) kind() cloudapi.Kind {
	switch e.code {
	case "RESOURCE_NOT_FOUND", "NOT_FOUND":
		return cloudapi.KindNotFound
	case "ALREADY_EXISTS", "RESOURCE_ALREADY_EXISTS":
		return cloudapi.KindExists
	case "RESOURCE_NOT_READY", "RESOURCE_IN_USE_BY_ANOTHER_RESOURCE", "RESOURCE_OPERATION_RATE_EXCEEDED":
		return cloudapi.KindConflict
	case "RATE_LIMIT_EXCEEDED":
		return cloudapi.KindThrottled
	case "INTERNAL_ERROR", "SERVICE_UNAVAILABLE":
		return cloudapi.KindUnavailable
	}
	return cloudapi.KindInvalid
}

// wait follows op until it is done, for at most opBudget. It returns nil
// when the change is made, an *operationError when it failed, and an
// api.RetryError when it is still running: the resource will be looked at
// again on the next pass.
func (c *Cloud) wait(ctx context.Context, cl *clients, p *computepb.Operation, what string) error {
	deadline := time.Now().Add(opBudget)
	pause := opFirstPoll
	for {
		if p.GetStatus() == computepb.Operation_DONE {
			return operationResult(p, what)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return loadbalancers.Pending(opRetryAfter, "%s: operation %s is still running; checking again in %s", what, p.GetName(), opRetryAfter)
		}
		// Cut before the HTTP client's own bound (cloudAPI.timeout), so
		// that the end of the budget reads as "still running", not as a
		// failed call.
		next, err := c.waitOnce(ctx, cl, p, min(left, c.api.AttemptTimeout()*9/10))
		if err != nil {
			return fmt.Errorf("%s: following operation %s: %w", what, p.GetName(), err)
		}
		if next == nil || next.GetStatus() == computepb.Operation_DONE {
			if next != nil {
				p = next
			}
			continue
		}
		p = next
		// operations.wait may answer early ("best effort"): a pause keeps
		// that from turning into a busy loop.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(pause, time.Until(deadline))):
		}
		pause = min(pause*2, opMaxPoll)
	}
}

// waitOnce is one operations.wait of at most d. It returns nil, nil when
// d passed first: the operation is still running as far as anyone knows.
func (c *Cloud) waitOnce(ctx context.Context, cl *clients, p *computepb.Operation, d time.Duration) (*computepb.Operation, error) {
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	next, err := call(wctx, c, "operations.wait", func(ctx context.Context) (*computepb.Operation, error) {
		return waitOperation(ctx, cl, p)
	})
	if err != nil && wctx.Err() != nil && ctx.Err() == nil {
		return nil, nil
	}
	return next, err
}

// waitOperation is the scope's operations.wait for p.
func waitOperation(ctx context.Context, cl *clients, p *computepb.Operation) (*computepb.Operation, error) {
	project := projectOf(p.GetSelfLink())
	switch {
	case p.GetZone() != "":
		return cl.zoneOps.Wait(ctx, &computepb.WaitZoneOperationRequest{Project: project, Zone: lastSegment(p.GetZone()), Operation: p.GetName()})
	case p.GetRegion() != "":
		return cl.regionOps.Wait(ctx, &computepb.WaitRegionOperationRequest{Project: project, Region: lastSegment(p.GetRegion()), Operation: p.GetName()})
	}
	return cl.globalOps.Wait(ctx, &computepb.WaitGlobalOperationRequest{Project: project, Operation: p.GetName()})
}

// operationResult reads a done Operation's errors.
func operationResult(p *computepb.Operation, what string) error {
	errs := p.GetError().GetErrors()
	if len(errs) == 0 {
		return nil
	}
	var msgs []string
	for i, e := range errs {
		if i == opMaxErrorsLen {
			break
		}
		msgs = append(msgs, e.GetMessage())
	}
	return &operationError{what: what, op: p.GetName(), code: errs[0].GetCode(), detail: strings.Join(msgs, "; ")}
}

// projectOf reads the project from a resource URL.
func projectOf(selfLink string) string {
	_, rest, ok := strings.Cut("/"+selfLink, "/projects/")
	if !ok {
		return ""
	}
	p, _, _ := strings.Cut(rest, "/")
	return p
}

// change runs a mutating call and waits for its Operation. Each change
// carries a request ID that stays the same across retries, so GCE carries
// out a repeated request once: a change whose answer was lost (a 5xx) is
// retried safely. An insert that meets an existing resource counts as done.
func (c *Cloud) change(ctx context.Context, cl *clients, opName, what string, fn func(ctx context.Context, rid *string) (*compute.Operation, error), extra ...cloudapi.CallOption) error {
	rid := newRequestID()
	opts := extra
	insert := strings.HasSuffix(opName, ".insert")
	if insert {
		opts = append(opts, cloudapi.Creates())
	}
	op, err := call(ctx, c, opName, func(ctx context.Context) (*compute.Operation, error) { return fn(ctx, &rid) }, opts...)
	if err != nil {
		if cloudapi.KindOf(err) == cloudapi.KindExists && insert {
			return nil
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	return c.wait(ctx, cl, op.Proto(), what)
}

// newRequestID is a UUID, the form GCE's requestId takes.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// globalOperation stands for an Operation the discovery-based client
// returned, so wait follows it with the same machinery (its first wait
// reads the real status and errors).
func globalOperation(project, name string) *computepb.Operation {
	return &computepb.Operation{Name: &name, SelfLink: ptr("projects/" + project + "/global/operations/" + name)}
}

func ptr[T any](v T) *T { return &v }
