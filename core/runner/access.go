package runner

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// checkAccess asks the API server, once at a controller's start, whether
// polyccm may do what the controller needs, and logs one error naming the
// opt-in ClusterRole and its manifest when it may not: the optional
// controllers' permissions are not in rbac.yaml, and without this an
// operator who turned one on would see only its informer's "forbidden"
// retries. The controller starts either way and picks the permissions up
// once they are bound.
func checkAccess(ctx context.Context, kube kubernetes.Interface, controller, role, manifest string, needs []authorizationv1.ResourceAttributes) bool {
	var missing []string
	for _, attrs := range needs {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs}}
		got, err := kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			klog.V(2).InfoS("Could not check the controller's permissions", "controller", controller, "err", err)
			return true // unknown: the controller's own errors will tell
		}
		if !got.Status.Allowed {
			what := attrs.Verb + " " + attrs.Resource
			if attrs.Subresource != "" {
				what += "/" + attrs.Subresource
			}
			if attrs.Name != "" {
				what += " " + attrs.Name
			}
			missing = append(missing, what)
		}
	}
	if len(missing) == 0 {
		return true
	}
	klog.ErrorS(nil, fmt.Sprintf("%s is on but polyccm may not %s: bind the ClusterRole %s (kubectl apply -f %s)",
		controller, strings.Join(missing, ", "), role, manifest), "controller", controller)
	return false
}
