package loadbalancers_test

import (
	"context"
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"

	"github.com/polyccm/polyccm/core/loadbalancers"
)

// stubLB answers every call with err.
type stubLB struct {
	cloudprovider.LoadBalancer
	err error
}

func (s stubLB) EnsureLoadBalancer(context.Context, string, *v1.Service, []*v1.Node) (*v1.LoadBalancerStatus, error) {
	return nil, s.err
}

func (s stubLB) UpdateLoadBalancer(context.Context, string, *v1.Service, []*v1.Node) error {
	return s.err
}

// failure is the event the upstream service controller records for an
// error of EnsureLoadBalancer (k8s.io/cloud-provider/controllers/service).
func failure(svc *v1.Service, err error) *v1.Event {
	return &v1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: svc.Name + ".1", Namespace: svc.Namespace},
		InvolvedObject: v1.ObjectReference{Kind: "Service", Namespace: svc.Namespace, Name: svc.Name, UID: svc.UID},
		Type:           v1.EventTypeWarning,
		Reason:         "SyncLoadBalancerFailed",
		Message:        "Error syncing load balancer: failed to ensure load balancer: " + err.Error(),
	}
}

func TestPendingIsProgressNotFailure(t *testing.T) {
	svc := service("shop", "web", uidA, nil, "")
	pending := loadbalancers.Pending(5*time.Second, "load balancer %s is being created", "lb-1")
	var re *api.RetryError
	if !errors.As(pending, &re) || re.RetryAfter() != 5*time.Second {
		t.Fatalf("Pending is not a RetryError of 5s: %v", pending)
	}

	p := loadbalancers.NewProgress()
	kube := k8sfake.NewClientset()
	events := p.Events(kube).CoreV1().Events("")

	lb := p.Track(stubLB{err: pending})
	_, err := lb.EnsureLoadBalancer(context.Background(), "k", svc, nil)
	if !errors.As(err, &re) {
		t.Fatalf("Ensure = %v, want the RetryError passed on", err)
	}
	if err := lb.UpdateLoadBalancer(context.Background(), "k", svc, nil); err != nil {
		t.Errorf("Update = %v, want nil: the pending Ensure takes in the nodes", err)
	}
	got, err := events.CreateWithEventNamespace(failure(svc, err))
	if err != nil {
		t.Fatal(err)
	}
	if got.Type != v1.EventTypeNormal || got.Reason != loadbalancers.ReasonPending || got.Message != pending.Error() {
		t.Errorf("event %s %s %q, want Normal %s %q", got.Type, got.Reason, got.Message, loadbalancers.ReasonPending, pending.Error())
	}

	// A real failure stays a Warning, and clears the wait.
	broken := errors.New("quota exceeded")
	lb = p.Track(stubLB{err: broken})
	if _, err := lb.EnsureLoadBalancer(context.Background(), "k", svc, nil); err != broken {
		t.Fatalf("Ensure = %v", err)
	}
	ev := failure(svc, broken)
	ev.Name = svc.Name + ".2"
	if got, err := events.CreateWithEventNamespace(ev); err != nil || got.Type != v1.EventTypeWarning || got.Reason != "SyncLoadBalancerFailed" {
		t.Errorf("event %+v, %v; want the Warning as it was", got, err)
	}
	if err := lb.UpdateLoadBalancer(context.Background(), "k", svc, nil); err != broken {
		t.Errorf("Update = %v, want the failure", err)
	}
}
