package runner

import (
	"context"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

func TestCheckAccess(t *testing.T) {
	for _, allowed := range []bool{true, false} {
		kube := k8sfake.NewClientset()
		var asked []string
		kube.PrependReactor("create", "selfsubjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
			r := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
			asked = append(asked, r.Spec.ResourceAttributes.Verb+" "+r.Spec.ResourceAttributes.Resource)
			r.Status.Allowed = allowed
			return true, r, nil
		})
		got := checkAccess(context.Background(), kube, "volume-labels-controller", "system:polyccm:volume-labeller", "rbac-volume-labels.yaml",
			[]authorizationv1.ResourceAttributes{{Resource: "persistentvolumes", Verb: "watch"}, {Resource: "persistentvolumes", Verb: "patch"}})
		if got != allowed || len(asked) != 2 {
			t.Errorf("allowed %v: checkAccess = %v after asking %v", allowed, got, asked)
		}
	}
}
