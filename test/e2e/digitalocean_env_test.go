//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/digitalocean/godo"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fakedo "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
	"github.com/polyccm/polyccm/test/harness"
)

// doEnv is one polyccm with the DigitalOcean driver against a fresh fake.
type doEnv struct {
	t      *testing.T
	fake   *fakedo.Server
	ccm    *harness.CCM
	user   *godo.Client // acts as a DigitalOcean user would (power off, delete)
	token  string
	prefix string // node names of this test start with it
	dir    string
	opts   harness.CCMOptions
}

var nonName = regexp.MustCompile(`[^a-z0-9-]+`)

// newDOEnv starts a fake DigitalOcean holding droplets and a polyccm
// process for it. tweak may adjust the config settings.
func newDOEnv(t *testing.T, droplets []fakedo.Droplet, tweak func(*harness.Settings)) *doEnv {
	t.Helper()
	return newDOEnvWith(t, droplets, tweak, nil)
}

// newDOEnvWith is newDOEnv with extra environment variables for polyccm.
func newDOEnvWith(t *testing.T, droplets []fakedo.Droplet, tweak func(*harness.Settings), env []string) *doEnv {
	t.Helper()
	e := &doEnv{t: t, token: "dop_v1_" + strings.Repeat("e2e0", 12)}
	e.prefix = strings.Trim(nonName.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(e.prefix) > 40 {
		e.prefix = e.prefix[:40]
	}
	e.dir = filepath.Join(workDir, e.prefix)
	if err := os.MkdirAll(e.dir, 0o755); err != nil {
		t.Fatal(err)
	}

	e.fake = fakedo.New(e.token)
	if err := e.fake.Start(); err != nil {
		t.Fatal(err)
	}
	for i := range droplets {
		droplets[i] = e.fake.AddDroplet(droplets[i])
	}
	e.user = e.userClient()

	tokenFile := filepath.Join(e.dir, "do-token")
	if err := os.WriteFile(tokenFile, []byte(e.token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	s := harness.Settings{
		Driver:      "digitalocean",
		Kubeconfig:  cp.PolyccmKubeconfig,
		Port:        port,
		DriverBlock: fmt.Sprintf("token: {file: %s}\napiURL: %s", tokenFile, e.fake.URL()),
	}
	if tweak != nil {
		tweak(&s)
	}
	e.opts = harness.CCMOptions{Bin: polyccmBin, Dir: e.dir, Config: s.Config(), Port: port, Env: env}
	t.Cleanup(e.cleanup)
	e.start()
	return e
}

func (e *doEnv) start() {
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
func (e *doEnv) restart() {
	e.t.Helper()
	e.opts.Name += "-again"
	if e.opts.Name == "-again" {
		e.opts.Name = "polyccm-again"
	}
	e.start()
}

func (e *doEnv) userClient() *godo.Client {
	hc := &http.Client{Transport: bearer{token: e.token, base: http.DefaultTransport}}
	c, err := godo.New(hc, godo.SetBaseURL(e.fake.URL()))
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

func (e *doEnv) cleanup() {
	t := e.t
	code, err := e.ccm.Stop(15 * time.Second)
	switch {
	case err != nil:
		t.Errorf("stopping polyccm: %v", err)
	case code != 0:
		t.Errorf("polyccm exited with %d after SIGTERM, want 0", code)
	}
	log := e.ccm.Log()
	if strings.Contains(log, e.token) {
		t.Errorf("polyccm's log contains the API token")
	}
	if t.Failed() {
		t.Logf("polyccm log (%s), last lines:\n%s", e.ccm.LogPath, e.ccm.LogTail(60))
	}
	ctx := context.Background()
	nodes, err := cp.Admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err == nil {
		for _, n := range nodes.Items {
			if strings.HasPrefix(n.Name, e.prefix) {
				_ = cp.Admin.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{})
			}
		}
	}
	// The next test's polyccm should not wait out this one's lease.
	_ = cp.Admin.CoordinationV1().Leases("kube-system").Delete(ctx, "cloud-controller-manager", metav1.DeleteOptions{})
	e.fake.Close()
}

// nodeName names the i-th node of this test.
func (e *doEnv) nodeName(i int) string { return fmt.Sprintf("%s-%03d", e.prefix, i) }

// register creates a Node as kubelet --cloud-provider=external would.
func (e *doEnv) register(name, providerID string) {
	e.t.Helper()
	_, err := cp.Admin.CoreV1().Nodes().Create(context.Background(), harness.UninitializedNode(name, providerID), metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("creating node %s: %v", name, err)
	}
}

func (e *doEnv) node(name string) (*v1.Node, error) {
	return cp.Admin.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
}

func (e *doEnv) waitInitialized(names []string, timeout time.Duration) {
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

func (e *doEnv) exists(name string) bool {
	_, err := e.node(name)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		e.t.Fatalf("getting node %s: %v", name, err)
	}
	return true
}

// dropletCalls is how many calls polyccm made to the droplet endpoints.
func (e *doEnv) dropletCalls() int {
	n := 0
	for ep, c := range e.fake.Faults().Calls() {
		if strings.Contains(ep, "/v2/droplets") {
			n += c
		}
	}
	return n
}
