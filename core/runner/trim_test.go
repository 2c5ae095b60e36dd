package runner

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTrimForCache(t *testing.T) {
	mf := []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}}
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"a": "b"}, ManagedFields: mf},
		Spec:       v1.NodeSpec{ProviderID: "gce://p/z/n"},
		Status: v1.NodeStatus{
			Images:    []v1.ContainerImage{{Names: []string{"registry.k8s.io/pause:3.10"}, SizeBytes: 1 << 20}},
			Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.1"}},
		},
	}
	got, err := trimForCache(node)
	if err != nil {
		t.Fatal(err)
	}
	n := got.(*v1.Node)
	if n.ManagedFields != nil || n.Status.Images != nil {
		t.Errorf("kept managedFields %v, images %v", n.ManagedFields, n.Status.Images)
	}
	if n.Labels["a"] != "b" || n.Spec.ProviderID == "" || len(n.Status.Addresses) != 1 {
		t.Errorf("trimmed what controllers read: %+v", n)
	}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s", Annotations: map[string]string{"k": "v"}, ManagedFields: mf}}
	if s, _ := trimForCache(svc); s.(*v1.Service).ManagedFields != nil || s.(*v1.Service).Annotations["k"] != "v" {
		t.Errorf("service trimmed to %+v", s)
	}
	if _, err := trimForCache("not an object"); err != nil {
		t.Errorf("a value that is no object: %v", err)
	}
}
