package loadbalancers_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	"github.com/polyccm/polyccm/core/redact"
)

// seqLB fails every call with the next of errs.
type seqLB struct {
	cloudprovider.LoadBalancer
	errs []error
	n    int
}

func (s *seqLB) next() error {
	err := s.errs[min(s.n, len(s.errs)-1)]
	s.n++
	return err
}

func (s *seqLB) EnsureLoadBalancer(context.Context, string, *v1.Service, []*v1.Node) (*v1.LoadBalancerStatus, error) {
	return nil, s.next()
}

func (s *seqLB) GetLoadBalancer(context.Context, string, *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	return nil, false, s.next()
}

// upstreamEvents is the service controller's recorder, as
// k8s.io/cloud-provider/controllers/service makes it, recording through
// p's event client into a fake API server; list returns what it holds.
func upstreamEvents(t *testing.T, p *loadbalancers.Progress) (record.EventRecorder, func(ns string) []v1.Event) {
	t.Helper()
	kube := k8sfake.NewClientset()
	b := record.NewBroadcaster(record.WithContext(context.Background()))
	t.Cleanup(b.Shutdown)
	b.StartRecordingToSink(&v1core.EventSinkImpl{Interface: p.Events(kube).CoreV1().Events("")})
	list := func(ns string) []v1.Event {
		l, err := kube.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return l.Items
	}
	return b.NewRecorder(scheme.Scheme, v1.EventSource{Component: "service-controller"}), list
}

// waitEvents waits until cond holds of the namespace's events.
func waitEvents(t *testing.T, list func(string) []v1.Event, ns string, cond func([]v1.Event) bool) []v1.Event {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs := list(ns)
		if cond(evs) || time.Now().After(deadline) {
			return evs
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A cloud that rejects the credentials answers every retry with a new
// request ID. The errors the service controller gets leave it out, so its
// Warning events fold into one with a count, as the recorder folds equal
// events.
func TestFailuresDifferingInRequestIDAggregate(t *testing.T) {
	svc := service("shop", "web", uidA, nil, "")
	ids := []string{"d5064a1f0bb9de4b", "6f1c2e9a0b3d4c5e", "0a1b2c3d4e5f6a7b"}
	var errs []error
	for _, id := range ids {
		errs = append(errs, fmt.Errorf("hetzner load_balancers.list: unauthorized (HTTP 401): unable to authenticate (unauthorized, %s)", id))
	}
	p := loadbalancers.NewProgress()
	rec, list := upstreamEvents(t, p)
	lb := p.Track(&seqLB{errs: errs})
	for i := range ids {
		_, err := lb.EnsureLoadBalancer(context.Background(), "k", svc, nil)
		if err == nil || strings.Contains(err.Error(), ids[i]) {
			t.Fatalf("Ensure = %v; want the failure without its request ID", err)
		}
		// As k8s.io/cloud-provider/controllers/service records it.
		rec.Eventf(svc, v1.EventTypeWarning, "SyncLoadBalancerFailed", "Error syncing load balancer: %v", fmt.Errorf("failed to ensure load balancer: %w", err))
		waitEvents(t, list, "shop", func(evs []v1.Event) bool {
			n := int32(0)
			for _, ev := range evs {
				n += ev.Count
			}
			return n == int32(i+1)
		})
	}
	evs := list("shop")
	if len(evs) != 1 || evs[0].Count != int32(len(ids)) {
		for _, ev := range evs {
			t.Logf("count %d: %s", ev.Count, ev.Message)
		}
		t.Fatalf("%d events; want one, counted %d times", len(evs), len(ids))
	}
	for _, id := range ids {
		if strings.Contains(evs[0].Message, id) {
			t.Errorf("the event carries request ID %s: %s", id, evs[0].Message)
		}
	}
}

// A driver's error that quotes a huge value gives a Warning event of at
// most redact.MaxEvent bytes, and stays what it was: a wait is still a
// RetryError to the controller, and a wait's Normal event is as short.
func TestHugeErrorsMakeShortEvents(t *testing.T) {
	huge := strings.Repeat("lb11", 2500) // 10 KB
	svc := service("shop", "web", uidA, nil, "")
	invalid := fmt.Errorf("Service shop/web: load-balancer.hetzner.cloud/type: Hetzner Cloud has no load balancer type %q; nothing was changed in the cloud", huge)
	pending := loadbalancers.Pending(5*time.Second, "load balancer %s is being created", huge)

	for _, c := range []struct {
		name   string
		err    error
		reason string
	}{
		{"failure", invalid, "SyncLoadBalancerFailed"},
		{"wait", pending, loadbalancers.ReasonPending},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := loadbalancers.NewProgress()
			rec, list := upstreamEvents(t, p)
			_, err := p.Track(&seqLB{errs: []error{c.err}}).EnsureLoadBalancer(context.Background(), "k", svc, nil)
			if !errors.Is(err, c.err) {
				t.Errorf("the error the controller gets is not the driver's: %v", err)
			}
			var re *api.RetryError
			if errors.As(c.err, &re) && !errors.As(err, &re) {
				t.Errorf("the wait is no longer a RetryError")
			}
			rec.Eventf(svc, v1.EventTypeWarning, "SyncLoadBalancerFailed", "Error syncing load balancer: %v", fmt.Errorf("failed to ensure load balancer: %w", err))
			evs := waitEvents(t, list, "shop", func(evs []v1.Event) bool { return len(evs) > 0 })
			if len(evs) != 1 || evs[0].Reason != c.reason {
				t.Fatalf("events %+v; want one %s", evs, c.reason)
			}
			if n := len(evs[0].Message); n > redact.MaxEvent || !strings.Contains(evs[0].Message, "see polyccm's log") {
				t.Errorf("%s event of %d bytes: %.200q…", c.reason, n, evs[0].Message)
			}
		})
	}

	// The controller's own words count too: 20 long Node names.
	t.Run("the controller's words", func(t *testing.T) {
		p := loadbalancers.NewProgress()
		rec, list := upstreamEvents(t, p)
		var names []string
		for i := range 20 {
			names = append(names, fmt.Sprintf("%s-%d", strings.Repeat("n", 200), i))
		}
		rec.Eventf(svc, v1.EventTypeWarning, "UpdateLoadBalancerFailed", "Error updating load balancer with new hosts %v [node names limited, total number of nodes: %d], error: %v", names, 20, errors.New("quota"))
		evs := waitEvents(t, list, "shop", func(evs []v1.Event) bool { return len(evs) > 0 })
		if len(evs) != 1 || len(evs[0].Message) > redact.MaxEvent {
			t.Errorf("events %d, message %d bytes", len(evs), len(evs[0].Message))
		}
	})
}

// Errors that need no change reach the controller as they are: it
// compares cloudprovider.ImplementedElsewhere with ==.
func TestShortErrorsPassAsTheyAre(t *testing.T) {
	svc := service("shop", "web", uidA, nil, "")
	p := loadbalancers.NewProgress()
	lb := p.Track(&seqLB{errs: []error{cloudprovider.ImplementedElsewhere}})
	if _, err := lb.EnsureLoadBalancer(context.Background(), "k", svc, nil); err != cloudprovider.ImplementedElsewhere {
		t.Errorf("Ensure = %#v", err)
	}
	withID := errors.New(`GET https://api.digitalocean.com/v2/load_balancers/1: 401 (request "9c1e3a") Unable to authenticate you`)
	lb = p.Track(&seqLB{errs: []error{withID}})
	if _, _, err := lb.GetLoadBalancer(context.Background(), "k", svc); !errors.Is(err, withID) || strings.Contains(err.Error(), "9c1e3a") {
		t.Errorf("GetLoadBalancer = %v; want the error without its request ID", err)
	}
}
