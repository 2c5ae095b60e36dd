package runner

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/cloud-provider/app"
	genericcontrollermanager "k8s.io/controller-manager/app"
	"k8s.io/controller-manager/controller"
	"k8s.io/klog/v2"
)

// leaseRelease gives the Lease up on a clean stop, so a standby takes over
// within one retryPeriod instead of waiting out leaseDuration. Upstream's
// app.Run never releases it (kubernetes/kubernetes#132599) and keeps its
// identity to itself, so the identity is read from the Lease when the
// first controller starts: controllers start only once this replica holds
// it.
type leaseRelease struct {
	client    kubernetes.Interface
	namespace string
	name      string

	once   sync.Once
	mu     sync.Mutex
	holder string // our identity, once we lead
}

// wrap makes each initializer note who holds the Lease before the first
// controller starts.
func (r *leaseRelease) wrap(inits map[string]app.InitFunc) map[string]app.InitFunc {
	out := make(map[string]app.InitFunc, len(inits))
	for name, init := range inits {
		out[name] = func(ctx context.Context, cc genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
			r.once.Do(func() { r.learn(ctx) })
			return init(ctx, cc)
		}
	}
	return out
}

func (r *leaseRelease) learn(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	l, err := r.client.CoordinationV1().Leases(r.namespace).Get(ctx, r.name, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		klog.ErrorS(err, "Reading the Lease this replica acquired; it will not be released on a clean stop", "lease", klog.KRef(r.namespace, r.name))
		return
	}
	r.mu.Lock()
	r.holder = *l.Spec.HolderIdentity
	r.mu.Unlock()
}

// release empties the Lease if this replica still holds it, as client-go's
// ReleaseOnCancel does. It must run last, after app.Run returned: the
// process exits right after, so no controller acts once a standby can take
// over. The update is conditional on the Lease's resourceVersion, so a
// Lease someone else took meanwhile is left alone.
func (r *leaseRelease) release(timeout time.Duration) {
	r.mu.Lock()
	holder := r.holder
	r.mu.Unlock()
	if holder == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	leases := r.client.CoordinationV1().Leases(r.namespace)
	l, err := leases.Get(ctx, r.name, metav1.GetOptions{})
	if err != nil {
		klog.ErrorS(err, "Releasing the Lease; a standby takes over once it expires", "lease", klog.KRef(r.namespace, r.name))
		return
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != holder {
		return
	}
	now := metav1.NewMicroTime(time.Now())
	empty, one := "", int32(1)
	l.Spec.HolderIdentity = &empty
	l.Spec.LeaseDurationSeconds = &one
	l.Spec.AcquireTime, l.Spec.RenewTime = &now, &now
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		klog.ErrorS(err, "Releasing the Lease; a standby takes over once it expires", "lease", klog.KRef(r.namespace, r.name))
		return
	}
	klog.InfoS("Released the Lease for a standby to take over", "lease", klog.KRef(r.namespace, r.name))
}
