package gce

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/googleapis/gax-go/v2/apierror"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
	"google.golang.org/api/googleapi"
	"google.golang.org/protobuf/proto"
)

func firewall(name string) *computepb.Firewall {
	return &computepb.Firewall{
		Name:    proto.String(name),
		Allowed: []*computepb.Allowed{{IPProtocol: proto.String("tcp"), Ports: []string{"80", "443"}}},
	}
}

func TestOperationLifecycle(t *testing.T) {
	s := start(t)
	wait := waiter(t)
	fw := client(t, s, compute.NewFirewallsRESTClient)
	ops := client(t, s, compute.NewGlobalOperationsRESTClient)
	ctx := context.Background()

	// Delay 0: the operation answers RUNNING and is DONE at the first poll.
	op, err := fw.Insert(ctx, &computepb.InsertFirewallRequest{Project: testProject, FirewallResource: firewall("a")})
	if err != nil {
		t.Fatal(err)
	}
	p := op.Proto()
	if op.Done() || p.GetStatus() != computepb.Operation_RUNNING || p.GetOperationType() != "insert" ||
		!strings.HasSuffix(p.GetTargetLink(), "/global/firewalls/a") || !strings.HasPrefix(p.GetName(), "operation-") {
		t.Errorf("operation = %v", p)
	}
	wait(op, nil)
	if p := op.Proto(); p.GetStatus() != computepb.Operation_DONE || p.GetProgress() != 100 || p.GetEndTime() == "" {
		t.Errorf("done operation = %v", p)
	}
	got, err := ops.Get(ctx, &computepb.GetGlobalOperationRequest{Project: testProject, Operation: op.Name()})
	if err != nil || got.GetStatus() != computepb.Operation_DONE || got.GetTargetId() == 0 {
		t.Errorf("get = %v, %v", got, err)
	}

	// With a delay the change shows only once the operation is DONE, and
	// the wait endpoint holds until then.
	s.SetOperationDelay(300 * time.Millisecond)
	op, err = fw.Insert(ctx, &computepb.InsertFirewallRequest{Project: testProject, FirewallResource: firewall("b")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Get(ctx, &computepb.GetFirewallRequest{Project: testProject, Firewall: "b"}); err == nil {
		t.Error("firewall visible before its operation is done")
	}
	// Another mutation of it meanwhile: the name is taken.
	_, err = fw.Insert(ctx, &computepb.InsertFirewallRequest{Project: testProject, FirewallResource: firewall("b")})
	apiErr(t, err, http.StatusConflict, "alreadyExists")
	start := time.Now()
	w, err := ops.Wait(ctx, &computepb.WaitGlobalOperationRequest{Project: testProject, Operation: op.Name()})
	if err != nil || w.GetStatus() != computepb.Operation_DONE || time.Since(start) < 200*time.Millisecond {
		t.Errorf("wait = %v, %v after %v", w, err, time.Since(start))
	}
	if _, err := fw.Get(ctx, &computepb.GetFirewallRequest{Project: testProject, Firewall: "b"}); err != nil {
		t.Error(err)
	}

	// A delete while the resource changes: not ready.
	op, err = fw.Delete(ctx, &computepb.DeleteFirewallRequest{Project: testProject, Firewall: "b"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = fw.Patch(ctx, &computepb.PatchFirewallRequest{Project: testProject, Firewall: "b", FirewallResource: &computepb.Firewall{Priority: proto.Int32(10)}})
	apiErr(t, err, http.StatusBadRequest, "resourceNotReady")
	wait(op, nil)

	// The wait endpoint gives up after its limit, still RUNNING.
	s.SetOperationDelay(time.Hour)
	s.SetOperationWaitLimit(50 * time.Millisecond)
	op, err = fw.Insert(ctx, &computepb.InsertFirewallRequest{Project: testProject, FirewallResource: firewall("c")})
	if err != nil {
		t.Fatal(err)
	}
	if w, err := ops.Wait(ctx, &computepb.WaitGlobalOperationRequest{Project: testProject, Operation: op.Name()}); err != nil || w.GetStatus() != computepb.Operation_RUNNING {
		t.Errorf("wait = %v, %v", w, err)
	}

	// Listing and deleting operations; unknown ones are 404.
	n := 0
	for _, err := range ops.List(ctx, &computepb.ListGlobalOperationsRequest{Project: testProject}).All() {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 4 {
		t.Errorf("%d operations listed", n)
	}
	if _, err := ops.Delete(ctx, &computepb.DeleteGlobalOperationRequest{Project: testProject, Operation: op.Name()}); err != nil {
		t.Error(err)
	}
	_, err = ops.Get(ctx, &computepb.GetGlobalOperationRequest{Project: testProject, Operation: op.Name()})
	apiErr(t, err, http.StatusNotFound, "notFound")
}

func TestOperationClock(t *testing.T) {
	s := start(t)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s.SetClock(func() time.Time { return now })
	s.SetOperationDelay(time.Minute)
	fw := client(t, s, compute.NewFirewallsRESTClient)
	op, err := fw.Insert(context.Background(), &computepb.InsertFirewallRequest{Project: testProject, FirewallResource: firewall("a")})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Poll(context.Background()); err != nil || op.Done() {
		t.Fatalf("poll: %v, done %v", err, op.Done())
	}
	now = now.Add(time.Minute)
	if err := op.Poll(context.Background()); err != nil || !op.Done() {
		t.Fatalf("poll: %v, done %v", err, op.Done())
	}
	if len(s.Firewalls()) != 1 || op.Proto().GetInsertTime() != "2026-01-01T20:04:05.000-07:00" {
		t.Errorf("firewalls %v, op %v", s.Firewalls(), op.Proto())
	}
}

func TestOperationFailures(t *testing.T) {
	s := start(t)
	wait := waiter(t)
	fw := client(t, s, compute.NewFirewallsRESTClient)
	ctx := context.Background()
	s.FailOperations(1, OperationFailure{Match: "firewalls.insert", Code: "QUOTA_EXCEEDED", Message: "Quota 'FIREWALLS' exceeded.  Limit: 100.0 globally."})
	s.FailOperations(1, OperationFailure{Match: "*.delete", Code: "RESOURCE_NOT_READY"})

	op, err := fw.Insert(ctx, &computepb.InsertFirewallRequest{Project: testProject, FirewallResource: firewall("a")})
	if err != nil {
		t.Fatal(err)
	}
	err = op.Wait(ctx)
	var ge *googleapi.Error
	var ae *apierror.APIError
	if !errors.As(err, &ge) || ge.Code != http.StatusForbidden || !strings.Contains(ge.Message, "QUOTA_EXCEEDED") || !errors.As(err, &ae) {
		t.Fatalf("wait = %v", err)
	}
	p := op.Proto()
	if p.GetStatus() != computepb.Operation_DONE || p.GetHttpErrorStatusCode() != 403 || p.GetHttpErrorMessage() != "FORBIDDEN" ||
		p.GetError().GetErrors()[0].GetCode() != "QUOTA_EXCEEDED" {
		t.Errorf("operation = %v", p)
	}
	if len(s.Firewalls()) != 0 || s.Stats()["firewalls"].Created != 0 {
		t.Error("a failed insert created the firewall")
	}

	// The rule is spent: the retry works; then the delete fails once.
	wait(fw.Insert(ctx, &computepb.InsertFirewallRequest{Project: testProject, FirewallResource: firewall("a")}))
	op, err = fw.Delete(ctx, &computepb.DeleteFirewallRequest{Project: testProject, Firewall: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Wait(ctx); !errors.As(err, &ge) || ge.Code != 400 || !strings.Contains(ge.Message, "RESOURCE_NOT_READY") {
		t.Errorf("delete wait = %v", err)
	}
	if len(s.Firewalls()) != 1 {
		t.Error("a failed delete deleted")
	}
	wait(fw.Delete(ctx, &computepb.DeleteFirewallRequest{Project: testProject, Firewall: "a"}))
	if st := s.Stats()["firewalls"]; st != (ResourceStats{Created: 1, Deleted: 1, Live: 0, Peak: 1}) {
		t.Errorf("stats = %+v", st)
	}
}

func TestRequestIDReplaysAfterLostAnswer(t *testing.T) {
	s := start(t)
	wait := waiter(t)
	fw := client(t, s, compute.NewFirewallsRESTClient)
	ctx := context.Background()
	const rid = "1b4e28ba-2fa1-11d2-883f-0016d3cca427"
	// The insert takes effect but its answer is lost.
	s.Faults().AddRule(faults.Rule{Match: "POST /compute/v1/projects/{project}/global/firewalls", Status: 500, AfterCommit: true, Remaining: 1})
	_, err := fw.Insert(ctx, &computepb.InsertFirewallRequest{Project: testProject, RequestId: proto.String(rid), FirewallResource: firewall("a")})
	apiErr(t, err, 500, "backendError")
	// The retry with the same request id gets the same operation back.
	op, err := fw.Insert(ctx, &computepb.InsertFirewallRequest{Project: testProject, RequestId: proto.String(rid), FirewallResource: firewall("a")})
	wait(op, err)
	if st := s.Stats()["firewalls"]; st.Created != 1 {
		t.Errorf("stats = %+v", st)
	}
	ops := s.Operations()
	if len(ops) != 1 || ops[0].Name != op.Name() {
		t.Errorf("operations = %+v", ops)
	}
	// A retry without one is refused: the name is taken.
	_, err = fw.Insert(ctx, &computepb.InsertFirewallRequest{Project: testProject, FirewallResource: firewall("a")})
	apiErr(t, err, http.StatusConflict, "alreadyExists")
	_, err = fw.Insert(ctx, &computepb.InsertFirewallRequest{Project: testProject, RequestId: proto.String("not-a-uuid"), FirewallResource: firewall("b")})
	apiErr(t, err, http.StatusBadRequest, "invalid")
}
