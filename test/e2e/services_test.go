//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

// createService creates a Service of type LoadBalancer in "default"; the
// test's cleanup deletes it if the test did not.
func createService(t *testing.T, name string, ann map[string]string, ports ...v1.ServicePort) *v1.Service {
	t.Helper()
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: ann},
		Spec: v1.ServiceSpec{
			Type:     v1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": name},
			Ports:    ports,
		},
	}
	got, err := cp.Admin.CoreV1().Services("default").Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Service %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cp.Admin.CoreV1().Services("default").Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return got
}

// deleteServiceAndWait deletes a Service and waits until its finalizer is
// released and it is gone.
func deleteServiceAndWait(t *testing.T, name string, timeout time.Duration) {
	t.Helper()
	if err := cp.Admin.CoreV1().Services("default").Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	eventually(t, timeout, "Service "+name+" gone (finalizer released)", func() (bool, string) {
		svc, err := cp.Admin.CoreV1().Services("default").Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("finalizers %v", svc.Finalizers)
	})
}

// deleteServicesAndWait deletes the Services together, as a namespace
// teardown does, then waits for each to be gone: the controller works on
// them in parallel, as it would in a cluster.
func deleteServicesAndWait(t *testing.T, names []string, timeout time.Duration) {
	t.Helper()
	for _, name := range names {
		if err := cp.Admin.CoreV1().Services("default").Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
	for _, name := range names {
		deleteServiceAndWait(t, name, timeout)
	}
}

// serviceNames are prefix-00 ... prefix-(n-1).
func serviceNames(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%02d", prefix, i)
	}
	return out
}

// faultRule fails a share of the matching requests (0: all) with status.
func faultRule(match string, probability float64, status int) faults.Rule {
	return faults.Rule{Match: match, Probability: probability, Status: status}
}
