package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/polyccm/polyccm/test/cluster"
)

// PolyccmUser is the identity polyccm runs as in tests, bound by
// packaging/kubernetes/rbac.yaml.
const PolyccmUser = "system:polyccm"

// ControlPlane is a local cluster with polyccm's RBAC applied and a
// kubeconfig for polyccm's own identity.
type ControlPlane struct {
	*cluster.Cluster
	// PolyccmKubeconfig authenticates as PolyccmUser, who has only what
	// rbac.yaml (and rbac-gce.yaml) grant.
	PolyccmKubeconfig string
}

// StartControlPlane starts etcd and kube-apiserver and applies the shipped
// RBAC.
func StartControlPlane(ctx context.Context, o cluster.Options) (*ControlPlane, error) {
	c, err := cluster.Start(ctx, o)
	if err != nil {
		return nil, err
	}
	cp := &ControlPlane{Cluster: c}
	if err := cp.setUp(ctx); err != nil {
		_ = c.Stop()
		return nil, err
	}
	return cp, nil
}

func (cp *ControlPlane) setUp(ctx context.Context) error {
	// rbac-gce.yaml too, as an operator on GCE applies it: one control
	// plane serves every driver's tests, and the others never use it.
	for _, f := range []string{"rbac.yaml", "rbac-gce.yaml"} {
		rbac, err := os.ReadFile(filepath.Join(RepoRoot(), "packaging", "kubernetes", f))
		if err != nil {
			return err
		}
		if err := cp.Apply(ctx, rbac, false); err != nil {
			return fmt.Errorf("applying packaging/kubernetes/%s: %w", f, err)
		}
	}
	var err error
	cp.PolyccmKubeconfig, err = cp.KubeconfigFor(PolyccmUser)
	return err
}

// UninitializedTaint is the taint kubelet --cloud-provider=external puts
// on a new Node.
var UninitializedTaint = v1.Taint{Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "true", Effect: v1.TaintEffectNoSchedule}

// ShutdownTaint is the taint polyccm puts on a Node whose instance is off.
const ShutdownTaint = "node.cloudprovider.kubernetes.io/shutdown"

// UninitializedNode is a Node as a kubelet with --cloud-provider=external
// registers it: tainted, no cloud labels, no addresses. providerID may be
// empty (kubelets usually leave it to the CCM).
func UninitializedNode(name, providerID string) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Spec:       v1.NodeSpec{ProviderID: providerID, Taints: []v1.Taint{UninitializedTaint}},
	}
}

// HasTaint reports whether node carries a taint with key.
func HasTaint(node *v1.Node, key string) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}
