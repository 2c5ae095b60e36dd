package loadbalancers_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	v1core "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
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

func (s stubLB) EnsureLoadBalancerDeleted(context.Context, string, *v1.Service) error {
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

// Through the recorder the upstream service controller uses: the wait is
// recorded as it repeats, first created and then counted by a patch, and
// stays a Normal event with the wait's message.
func TestPendingThroughTheRecorder(t *testing.T) {
	svc := service("shop", "web", uidA, nil, "")
	p := loadbalancers.NewProgress()
	kube := k8sfake.NewClientset()
	b := record.NewBroadcaster(record.WithContext(context.Background()))
	defer b.Shutdown()
	rec := b.NewRecorder(scheme.Scheme, v1.EventSource{Component: "service-controller"})
	b.StartRecordingToSink(&v1core.EventSinkImpl{Interface: p.Events(kube).CoreV1().Events("")})

	pending := loadbalancers.Pending(5*time.Second, "load balancer %s is being created", "lb-1")
	lb := p.Track(stubLB{err: pending})
	var list *v1.EventList
	for i := 1; i <= 3; i++ {
		_, err := lb.EnsureLoadBalancer(context.Background(), "k", svc, nil)
		// As k8s.io/cloud-provider/controllers/service records it.
		rec.Eventf(svc, v1.EventTypeWarning, "SyncLoadBalancerFailed", "Error syncing load balancer: %v", fmt.Errorf("failed to ensure load balancer: %w", err))
		deadline := time.Now().Add(10 * time.Second)
		for {
			var err error
			if list, err = kube.CoreV1().Events("shop").List(context.Background(), metav1.ListOptions{}); err != nil {
				t.Fatal(err)
			}
			if len(list.Items) == 1 && list.Items[0].Count == int32(i) || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if len(list.Items) != 1 {
		t.Fatalf("%d events, want 1: %+v", len(list.Items), list.Items)
	}
	ev := list.Items[0]
	if ev.Type != v1.EventTypeNormal || ev.Reason != loadbalancers.ReasonPending || ev.Message != pending.Error() || ev.Count != 3 {
		t.Errorf("event %s %s %q count %d, want Normal %s %q count 3", ev.Type, ev.Reason, ev.Message, ev.Count, loadbalancers.ReasonPending, pending.Error())
	}
}

// A deletion that waits for the cloud (a security group an NLB's network
// interfaces still hold) is reported as progress too.
func TestPendingDeletion(t *testing.T) {
	svc := service("shop", "web", uidA, nil, "")
	p := loadbalancers.NewProgress()
	events := p.Events(k8sfake.NewClientset()).CoreV1().Events("")
	pending := loadbalancers.Pending(10*time.Second, "security group %s is still in use", "sg-1")
	err := p.Track(stubLB{err: pending}).EnsureLoadBalancerDeleted(context.Background(), "k", svc)
	// As the service controller's finalizer path words it.
	ev := failure(svc, fmt.Errorf("failed to delete load balancer: %v", err))
	got, err := events.CreateWithEventNamespace(ev)
	if err != nil {
		t.Fatal(err)
	}
	if got.Type != v1.EventTypeNormal || got.Reason != loadbalancers.ReasonPendingDelete || got.Message != pending.Error() {
		t.Errorf("event %s %s %q, want Normal %s %q", got.Type, got.Reason, got.Message, loadbalancers.ReasonPendingDelete, pending.Error())
	}
}
