package cluster

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// One cluster serves every test in this file; TestMain stops it.
var (
	sharedOnce    sync.Once
	sharedCluster *Cluster
	sharedErr     error
	sharedLog     strings.Builder
	sharedLogMu   sync.Mutex
)

func TestMain(m *testing.M) {
	code := m.Run()
	if sharedCluster != nil {
		if err := sharedCluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the shared cluster:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// testCluster returns the shared cluster, starting it on first use.
func testCluster(t *testing.T) *Cluster {
	t.Helper()
	SkipIfNoBinaries(t)
	sharedOnce.Do(func() {
		logf := func(format string, args ...any) {
			sharedLogMu.Lock()
			defer sharedLogMu.Unlock()
			fmt.Fprintf(&sharedLog, time.Now().Format("15:04:05.000 ")+format+"\n", args...)
		}
		sharedCluster, sharedErr = Start(context.Background(), Options{Logf: logf})
		sharedLogMu.Lock()
		t.Logf("start log:\n%s", sharedLog.String())
		sharedLogMu.Unlock()
	})
	if sharedErr != nil {
		t.Fatalf("starting the cluster: %v", sharedErr)
	}
	return sharedCluster
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestBinaries(t *testing.T) {
	kv, ev, err := ToolVersions()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(kv, "v1.") || !strings.HasPrefix(ev, "v3.") {
		t.Errorf("ToolVersions() = %q, %q; want v1.x and v3.x", kv, ev)
	}
	t.Setenv(EnvKubeAPIServer, "/nonexistent/kube-apiserver")
	t.Setenv(EnvEtcd, "/nonexistent/etcd")
	_, _, err = Binaries()
	if err == nil || !strings.Contains(err.Error(), "test/tools/build.sh") {
		t.Errorf("Binaries() with missing files: err = %v, want one that says how to build them", err)
	}
}

func TestDecodeManifest(t *testing.T) {
	manifest := `
# comment only
---
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a}
---
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}
- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}
`
	objs, err := decodeManifest([]byte(manifest))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.obj.GetName())
	}
	if got := strings.Join(names, ","); got != "a,b,c" {
		t.Errorf("names = %s, want a,b,c", got)
	}
}

func TestAdminListsNamespaces(t *testing.T) {
	c := testCluster(t)
	ctx := testContext(t)
	nss, err := c.Admin.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, ns := range nss.Items {
		found[ns.Name] = true
	}
	for _, want := range []string{"default", "kube-system", "kube-public"} {
		if !found[want] {
			t.Errorf("namespace %s missing; have %v", want, found)
		}
	}
	// The admin kubeconfig file works too.
	cfg, err := clientcmd.BuildConfigFromFlags("", c.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("admin kubeconfig: listing secrets: %v", err)
	}
	// The kubernetes Service got the first address of the range. The
	// apiserver's bootstrap controller creates it shortly after readyz.
	var svc *corev1.Service
	deadline := time.Now().Add(20 * time.Second)
	for {
		svc, err = c.Admin.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err == nil || !apierrors.IsNotFound(err) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP != KubernetesServiceIP {
		t.Errorf("kubernetes Service ClusterIP = %s, want %s", svc.Spec.ClusterIP, KubernetesServiceIP)
	}
}

const testUser = "system:polyccm"

func userClient(t *testing.T, c *Cluster) kubernetes.Interface {
	t.Helper()
	path, err := c.KubeconfigFor(testUser)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestRBACForbidsUnprivilegedUser(t *testing.T) {
	c := testCluster(t)
	ctx := testContext(t)
	_, err := userClient(t, c).CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("listing secrets as %s: err = %v, want Forbidden", testUser, err)
	}
	if !strings.Contains(err.Error(), testUser) {
		t.Errorf("Forbidden error does not name the user: %v", err)
	}
}

const rbacManifest = `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: polyccm-test-secret-reader
rules:
- apiGroups: [""]
  resources: ["secrets"]
  verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: polyccm-test-secret-reader
  namespace: ignored-for-cluster-scoped-kinds
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: system:polyccm
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: polyccm-test-secret-reader
`

func TestApplyGrantsPermissions(t *testing.T) {
	c := testCluster(t)
	ctx := testContext(t)
	if err := Apply(ctx, c.AdminConfig, []byte(rbacManifest), false); err != nil {
		t.Fatal(err)
	}
	// Applying again is a no-op, not a conflict.
	if err := c.Apply(ctx, []byte(rbacManifest), false); err != nil {
		t.Fatalf("second apply: %v", err)
	}
	user := userClient(t, c)
	// RBAC caches are updated from informers: allow a moment.
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if _, err = user.CoreV1().Secrets("kube-system").List(ctx, metav1.ListOptions{}); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("listing secrets after granting the role: %v", err)
	}
	// The role grants reading, not writing.
	_, err = user.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("listing configmaps: err = %v, want Forbidden", err)
	}
	crb, err := c.Admin.RbacV1().ClusterRoleBindings().Get(ctx, "polyccm-test-secret-reader", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	managed := false
	for _, mf := range crb.ManagedFields {
		managed = managed || (mf.Manager == FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply)
	}
	if !managed {
		t.Errorf("ClusterRoleBinding not server-side applied by %s: %+v", FieldManager, crb.ManagedFields)
	}
}

const workloadManifest = `
apiVersion: v1
kind: Namespace
metadata:
  name: polyccm-apply-test
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: polyccm
  namespace: polyccm-apply-test
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: leases
  namespace: polyccm-apply-test
rules:
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["get", "create", "update"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: leases
  namespace: polyccm-apply-test
subjects:
- kind: ServiceAccount
  name: polyccm
  namespace: polyccm-apply-test
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: leases
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: no-namespace-given
data:
  key: value
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: polyccm
  namespace: polyccm-apply-test
spec:
  selector:
    matchLabels: {app: polyccm}
  template:
    metadata:
      labels: {app: polyccm}
    spec:
      serviceAccountName: polyccm
      hostNetwork: true
      containers:
      - name: polyccm
        image: example.invalid/polyccm:test
        securityContext:
          privileged: true
---
apiVersion: v1
kind: Pod
metadata:
  name: pod
  namespace: polyccm-apply-test
spec:
  containers:
  - name: c
    image: example.invalid/pause:test
`

func TestApplyKinds(t *testing.T) {
	c := testCluster(t)
	ctx := testContext(t)
	if err := c.Apply(ctx, []byte(workloadManifest), false); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Admin.CoreV1().ConfigMaps("default").Get(ctx, "no-namespace-given", metav1.GetOptions{}); err != nil {
		t.Errorf("ConfigMap without a namespace should land in default: %v", err)
	}
	if _, err := c.Admin.AppsV1().DaemonSets("polyccm-apply-test").Get(ctx, "polyccm", metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
	pod, err := c.Admin.CoreV1().Pods("polyccm-apply-test").Get(ctx, "pod", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.Spec.ServiceAccountName != "default" {
		t.Errorf("pod service account = %q, want default", pod.Spec.ServiceAccountName)
	}
}

func TestApplyDryRunDoesNotPersist(t *testing.T) {
	c := testCluster(t)
	ctx := testContext(t)
	manifest := `
apiVersion: v1
kind: ConfigMap
metadata:
  name: dry-run-only
  namespace: kube-system
data: {a: b}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: polyccm-dry-run-only
rules: []
`
	if err := Apply(ctx, c.AdminConfig, []byte(manifest), true); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Admin.CoreV1().ConfigMaps("kube-system").Get(ctx, "dry-run-only", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("dry-run ConfigMap: err = %v, want NotFound", err)
	}
	if _, err := c.Admin.RbacV1().ClusterRoles().Get(ctx, "polyccm-dry-run-only", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("dry-run ClusterRole: err = %v, want NotFound", err)
	}
	// Dry run still validates.
	bad := `
apiVersion: v1
kind: ConfigMap
metadata:
  name: Invalid_Name
`
	err := Apply(ctx, c.AdminConfig, []byte(bad), true)
	if err == nil || !strings.Contains(err.Error(), "ConfigMap") || !strings.Contains(err.Error(), "Invalid_Name") {
		t.Errorf("invalid object: err = %v, want an error naming the kind and name", err)
	}
}

func TestApplyErrors(t *testing.T) {
	c := testCluster(t)
	ctx := testContext(t)
	unknown := `
apiVersion: example.invalid/v1
kind: Gadget
metadata:
  name: g
`
	err := c.Apply(ctx, []byte(unknown), false)
	if err == nil || !strings.Contains(err.Error(), "Gadget") || !strings.Contains(err.Error(), `"g"`) {
		t.Errorf("unknown kind: err = %v, want an error naming the kind and name", err)
	}
	// The unprivileged user's apply is refused with the server's message.
	cfg, err := c.RESTConfigFor(testUser, "polyccm-group")
	if err != nil {
		t.Fatal(err)
	}
	err = Apply(ctx, cfg, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nope}\n"), false)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "default/nope") {
		t.Errorf("forbidden apply: err = %v, want Forbidden naming default/nope", err)
	}
}

// TestRestartAPIServer runs last: it restarts the shared apiserver.
func TestRestartAPIServer(t *testing.T) {
	c := testCluster(t)
	ctx := testContext(t)
	// A client made before the restart keeps working after it.
	admin := c.Admin
	began := time.Now()
	if err := c.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Since(began)
	if _, err := admin.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err == nil {
		t.Error("listing namespaces succeeded while the apiserver was stopped")
	}
	began = time.Now()
	if err := c.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("apiserver stopped in %.1fs, started again in %.1fs", stopped.Seconds(), time.Since(began).Seconds())
	if _, err := admin.CoreV1().Namespaces().List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("listing namespaces after the restart: %v", err)
	}
	began = time.Now()
	if err := c.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("RestartAPIServer took %.1fs", time.Since(began).Seconds())
	// Data written before the restart survives it.
	if _, err := admin.RbacV1().ClusterRoles().Get(ctx, "polyccm-test-secret-reader", metav1.GetOptions{}); err != nil {
		t.Errorf("ClusterRole applied before the restart: %v", err)
	}
}
