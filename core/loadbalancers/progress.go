package loadbalancers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/redact"
)

// ReasonPending is the Normal event reason of a load balancer the cloud
// is still building, as the upstream controller's own "Ensuring load
// balancer" event; ReasonPendingDelete, of one still being taken apart.
const (
	ReasonPending       = "EnsuringLoadBalancer"
	ReasonPendingDelete = "DeletingLoadBalancer"
)

// upstreamFailure is the reason the upstream service controller gives
// every error of EnsureLoadBalancer, a wait included.
const upstreamFailure = "SyncLoadBalancerFailed"

// PendingError is what a driver returns while the cloud is still building
// a Service's load balancer: it is an *api.RetryError, so the service
// controller comes back after its delay with the worker freed meanwhile,
// and it is progress, not a failure (see Progress).
type PendingError struct{ *api.RetryError }

func (e *PendingError) Unwrap() error { return e.RetryError }

// Pending returns a PendingError: the load balancer is being built; look
// again after the delay.
func Pending(after time.Duration, format string, args ...any) error {
	return &PendingError{RetryError: api.NewRetryError(fmt.Sprintf(format, args...), after)}
}

// Progress keeps the upstream service controller from reporting a load
// balancer that is still being built as a failure. The controller turns
// every error of EnsureLoadBalancer, its retry requests included, into a
// Warning "SyncLoadBalancerFailed" event; Track notes which Services are
// only waiting, and the event client from Events reports those as Normal
// events saying what is being waited for.
type Progress struct {
	mu      sync.Mutex
	pending map[types.UID]wait // Service -> what it waits for
}

// wait is one Service's wait: its message, and the reason to report it
// under.
type wait struct{ msg, reason string }

// NewProgress returns an empty Progress.
func NewProgress() *Progress { return &Progress{pending: map[types.UID]wait{}} }

// Track wraps lb: waits of EnsureLoadBalancer are noted for the event
// client, and a wait in UpdateLoadBalancer is no failure at all, since the
// EnsureLoadBalancer that is coming back takes in the nodes then. Every
// error lb returns reaches the controller fit for an event (see
// forController).
func (p *Progress) Track(lb cloudprovider.LoadBalancer) cloudprovider.LoadBalancer {
	return &tracked{LoadBalancer: lb, p: p}
}

type tracked struct {
	cloudprovider.LoadBalancer
	p *Progress
}

func (t *tracked) GetLoadBalancer(ctx context.Context, cluster string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	st, exists, err := t.LoadBalancer.GetLoadBalancer(ctx, cluster, svc)
	return st, exists, forController(svc, "GetLoadBalancer", err)
}

func (t *tracked) EnsureLoadBalancer(ctx context.Context, cluster string, svc *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	st, err := t.LoadBalancer.EnsureLoadBalancer(ctx, cluster, svc, nodes)
	t.p.note(svc.UID, err, ReasonPending)
	return st, forController(svc, "EnsureLoadBalancer", err)
}

func (t *tracked) EnsureLoadBalancerDeleted(ctx context.Context, cluster string, svc *v1.Service) error {
	err := t.LoadBalancer.EnsureLoadBalancerDeleted(ctx, cluster, svc)
	t.p.note(svc.UID, err, ReasonPendingDelete)
	return forController(svc, "EnsureLoadBalancerDeleted", err)
}

func (t *tracked) UpdateLoadBalancer(ctx context.Context, cluster string, svc *v1.Service, nodes []*v1.Node) error {
	err := t.LoadBalancer.UpdateLoadBalancer(ctx, cluster, svc, nodes)
	if pe := (*PendingError)(nil); errors.As(err, &pe) {
		return nil
	}
	return forController(svc, "UpdateLoadBalancer", err)
}

// forController is err as the upstream service controller gets it. The
// controller puts an error's whole text into a Warning event on every
// retry: a driver's error can quote a 100 KB annotation value, and a
// cloud's carries the request's ID, new on every retry, so that the events
// never fold into one with a count. Its text is made fit for an event
// (redact.EventError: at most about 1 KiB, no request IDs); what it is
// stays (errors.As still finds an api.RetryError), and polyccm logs it
// whole whenever the event's text leaves something out.
func forController(svc *v1.Service, call string, err error) error {
	shown := redact.EventError(err)
	if shown == err {
		return err
	}
	if pe := (*PendingError)(nil); errors.As(err, &pe) {
		klog.InfoS("Waiting for the cloud; the event shows this shortened", "service", klog.KObj(svc), "call", call, "wait", err.Error())
	} else {
		klog.ErrorS(err, "Load balancer call failed; the event shows this shortened", "service", klog.KObj(svc), "call", call)
	}
	return shown
}

func (p *Progress) note(uid types.UID, err error, reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pe := (*PendingError)(nil); errors.As(err, &pe) {
		// As forController words it, so that the event carrying it matches.
		p.pending[uid] = wait{msg: redact.EventError(pe).Error(), reason: reason}
		return
	}
	delete(p.pending, uid)
}

// rewrite turns the controller's failure event for a Service that is only
// waiting into a Normal event with the wait's message, and makes every
// message fit for an event (redact.Event): the controller's errors already
// are, but it adds words of its own, such as up to 20 Node names.
func (p *Progress) rewrite(ev *v1.Event) *v1.Event {
	out := p.waiting(ev)
	if out == nil {
		return out
	}
	if msg := redact.Event(out.Message); msg != out.Message {
		if out == ev {
			out = ev.DeepCopy()
		}
		out.Message = msg
	}
	return out
}

// waiting is rewrite's first step: a Normal event for a Service that is
// only waiting, else ev.
func (p *Progress) waiting(ev *v1.Event) *v1.Event {
	if ev == nil || ev.Type != v1.EventTypeWarning || ev.Reason != upstreamFailure || ev.InvolvedObject.Kind != "Service" {
		return ev
	}
	p.mu.Lock()
	w, ok := p.pending[ev.InvolvedObject.UID]
	p.mu.Unlock()
	if !ok || !strings.HasSuffix(ev.Message, w.msg) {
		return ev
	}
	out := ev.DeepCopy()
	out.Type, out.Reason, out.Message = v1.EventTypeNormal, w.reason, w.msg
	return out
}

// Events wraps the service controller's client so that its events go
// through rewrite; everything else passes through.
func (p *Progress) Events(kube kubernetes.Interface) kubernetes.Interface {
	return progressClient{Interface: kube, p: p}
}

type progressClient struct {
	kubernetes.Interface
	p *Progress
}

func (c progressClient) CoreV1() corev1client.CoreV1Interface {
	return progressCore{CoreV1Interface: c.Interface.CoreV1(), p: c.p}
}

type progressCore struct {
	corev1client.CoreV1Interface
	p *Progress
}

func (c progressCore) Events(namespace string) corev1client.EventInterface {
	return progressEvents{EventInterface: c.CoreV1Interface.Events(namespace), p: c.p}
}

type progressEvents struct {
	corev1client.EventInterface
	p *Progress
}

func (e progressEvents) CreateWithEventNamespace(ev *v1.Event) (*v1.Event, error) {
	return e.EventInterface.CreateWithEventNamespace(e.p.rewrite(ev))
}

func (e progressEvents) UpdateWithEventNamespace(ev *v1.Event) (*v1.Event, error) {
	return e.EventInterface.UpdateWithEventNamespace(e.p.rewrite(ev))
}

// PatchWithEventNamespace counts a repeat of an event. The recorder's
// patch carries the message again, which for a rewritten event must stay
// the rewritten message.
func (e progressEvents) PatchWithEventNamespace(ev *v1.Event, data []byte) (*v1.Event, error) {
	if out := e.p.rewrite(ev); out != ev {
		var patch map[string]any
		if err := json.Unmarshal(data, &patch); err == nil {
			if _, ok := patch["message"]; ok {
				patch["message"] = out.Message
				if b, err := json.Marshal(patch); err == nil {
					data = b
				}
			}
		}
	}
	return e.EventInterface.PatchWithEventNamespace(ev, data)
}
