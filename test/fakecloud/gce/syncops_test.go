package gce

import (
	"context"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
)

func TestSynchronousOperations(t *testing.T) {
	s := start(t)
	s.SetSynchronousOperations(true)
	fw := client(t, s, compute.NewFirewallsRESTClient)
	ctx := context.Background()

	// The insert answers DONE, and the firewall is there at once.
	op, err := fw.Insert(ctx, &computepb.InsertFirewallRequest{Project: testProject, FirewallResource: firewall("a")})
	if err != nil {
		t.Fatal(err)
	}
	if p := op.Proto(); p.GetStatus() != computepb.Operation_DONE || p.GetProgress() != 100 || p.GetError() != nil {
		t.Errorf("operation = %v, want DONE without error", p)
	}
	if _, ok := s.Firewall("a"); !ok {
		t.Error("firewall missing after a DONE insert")
	}
	// A repeated request ID answers with the same operation, not a second
	// insert.
	rid := "6d1f0b2e-3c4a-4b5c-8d9e-0f1a2b3c4d5e"
	first, err := fw.Insert(ctx, &computepb.InsertFirewallRequest{Project: testProject, RequestId: &rid, FirewallResource: firewall("b")})
	if err != nil {
		t.Fatal(err)
	}
	again, err := fw.Insert(ctx, &computepb.InsertFirewallRequest{Project: testProject, RequestId: &rid, FirewallResource: firewall("b")})
	if err != nil || again.Name() != first.Name() || !again.Done() {
		t.Errorf("replay = %v, %v; want operation %s, DONE", again, err, first.Name())
	}
	if st := s.Stats()["firewalls"]; st.Created != 2 {
		t.Errorf("stats = %+v, want 2 created", st)
	}
	// Injected operation failures still fail, at once and without effect.
	s.FailOperations(1, OperationFailure{Match: "firewalls.delete", Code: "RESOURCE_NOT_READY"})
	op, err = fw.Delete(ctx, &computepb.DeleteFirewallRequest{Project: testProject, Firewall: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if p := op.Proto(); p.GetStatus() != computepb.Operation_DONE || len(p.GetError().GetErrors()) != 1 || p.GetError().GetErrors()[0].GetCode() != "RESOURCE_NOT_READY" {
		t.Errorf("failed operation = %v", p)
	}
	if _, ok := s.Firewall("a"); !ok {
		t.Error("a failed delete took effect")
	}
	// A delay puts operations back to RUNNING.
	s.SetOperationDelay(1 << 40)
	op, err = fw.Delete(ctx, &computepb.DeleteFirewallRequest{Project: testProject, Firewall: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if op.Done() {
		t.Errorf("operation with a delay answered DONE: %v", op.Proto())
	}
}
