//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/polyccm/polyccm/test/harness"
)

// env is one polyccm process for one test, whatever the cloud: its config,
// its Nodes, and cleanup. The per-cloud environments embed it.
type env struct {
	t      *testing.T
	ccm    *harness.CCM
	prefix string // node names of this test start with it
	dir    string // the test's files: config, secrets, logs
	opts   harness.CCMOptions
	secret string   // a credential that must never appear in the log
	closer []func() // the fake cloud's shutdown
}

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// newEnv prepares a test's directory and name prefix; start runs polyccm.
func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t}
	e.prefix = strings.Trim(nonName.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(e.prefix) > 40 {
		e.prefix = e.prefix[:40]
	}
	e.dir = filepath.Join(workDir, e.prefix)
	if err := os.MkdirAll(e.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.cleanup)
	return e
}

// writeFile writes a file into the test's directory and returns its path.
func (e *env) writeFile(name, content string) string {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// run starts polyccm with the settings (Kubeconfig and Port filled in)
// and extra environment variables, and waits until it is ready.
func (e *env) run(s harness.Settings, extraEnv []string) {
	e.t.Helper()
	port, err := harness.FreePort()
	if err != nil {
		e.t.Fatal(err)
	}
	if s.Kubeconfig == "" {
		s.Kubeconfig = cp.PolyccmKubeconfig
	}
	s.Port = port
	// The optional controllers' permissions are opt-in roles, granted as
	// an operator would: only for a polyccm that runs them.
	for controller, file := range map[string]string{
		"kubeletServingCSR: true": "rbac-kubelet-serving-csr.yaml",
		"volumeLabels: true":      "rbac-volume-labels.yaml",
	} {
		if strings.Contains(s.Controllers, controller) {
			grantOptional(e.t, file)
		}
	}
	e.opts = harness.CCMOptions{Bin: polyccmBin, Dir: e.dir, Config: s.Config(), Port: port, Env: extraEnv}
	e.start()
}

// grantOptional applies one of the opt-in RBAC files of
// packaging/kubernetes for the test, and takes it away after.
func grantOptional(t *testing.T, file string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(harness.RepoRoot(), "packaging", "kubernetes", file))
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.Apply(context.Background(), data, false); err != nil {
		t.Fatalf("applying %s: %v", file, err)
	}
	name := "system:polyccm:" + map[string]string{
		"rbac-kubelet-serving-csr.yaml": "kubelet-serving-csr-approver",
		"rbac-volume-labels.yaml":       "volume-labeller",
	}[file]
	t.Cleanup(func() {
		ctx := context.Background()
		_ = cp.Admin.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = cp.Admin.RbacV1().ClusterRoles().Delete(ctx, name, metav1.DeleteOptions{})
	})
}

func (e *env) start() {
	e.t.Helper()
	var err error
	if e.ccm, err = harness.StartCCM(e.opts); err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.ccm.WaitReady(ctx); err != nil {
		e.t.Fatal(err)
	}
}

// restart starts polyccm again after the test stopped it, keeping the log
// of the first run beside the new one.
func (e *env) restart() {
	e.t.Helper()
	e.opts.Name += "-again"
	if e.opts.Name == "-again" {
		e.opts.Name = "polyccm-again"
	}
	e.start()
}

func (e *env) cleanup() {
	t := e.t
	if e.ccm != nil {
		code, err := e.ccm.Stop(15 * time.Second)
		switch {
		case err != nil:
			t.Errorf("stopping polyccm: %v", err)
		case code != 0:
			t.Errorf("polyccm exited with %d after SIGTERM, want 0", code)
		}
		if e.secret != "" && strings.Contains(e.ccm.Log(), e.secret) {
			t.Errorf("polyccm's log contains a cloud credential")
		}
		if t.Failed() {
			t.Logf("polyccm log (%s), last lines:\n%s", e.ccm.LogPath, e.ccm.LogTail(60))
		}
	}
	ctx := context.Background()
	if nodes, err := cp.Admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
		for _, n := range nodes.Items {
			if strings.HasPrefix(n.Name, e.prefix) {
				_ = cp.Admin.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{})
			}
		}
	}
	// The next test's polyccm should not wait out this one's lease.
	_ = cp.Admin.CoordinationV1().Leases("kube-system").Delete(ctx, "cloud-controller-manager", metav1.DeleteOptions{})
	for _, c := range e.closer {
		c()
	}
}

// nodeName names the i-th node of this test.
func (e *env) nodeName(i int) string { return fmt.Sprintf("%s-%03d", e.prefix, i) }

// register creates a Node as kubelet --cloud-provider=external would.
func (e *env) register(name, providerID string) {
	e.t.Helper()
	e.registerNode(harness.UninitializedNode(name, providerID))
}

func (e *env) registerNode(n *v1.Node) {
	e.t.Helper()
	if _, err := cp.Admin.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
		e.t.Fatalf("creating node %s: %v", n.Name, err)
	}
}

func (e *env) node(name string) (*v1.Node, error) {
	return cp.Admin.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
}

func (e *env) waitInitialized(names []string, timeout time.Duration) {
	e.t.Helper()
	eventually(e.t, timeout, "nodes initialized", func() (bool, string) {
		pending := 0
		for _, n := range names {
			node, err := e.node(n)
			if err != nil || harness.HasTaint(node, harness.UninitializedTaint.Key) {
				pending++
			}
		}
		return pending == 0, fmt.Sprintf("%d of %d still tainted", pending, len(names))
	})
}

func (e *env) exists(name string) bool {
	_, err := e.node(name)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		e.t.Fatalf("getting node %s: %v", name, err)
	}
	return true
}
