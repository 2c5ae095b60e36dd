//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/test/harness"
)

// polyccm holds the Lease while it runs, named as its identity says.
func TestLeaderElectionLeaseIsHeld(t *testing.T) {
	e := newDOEnv(t, nil, nil)
	host, _ := os.Hostname()
	eventually(t, 20*time.Second, "the Lease held by polyccm", func() (bool, string) {
		l, err := cp.Admin.CoordinationV1().Leases("kube-system").Get(context.Background(), "cloud-controller-manager", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		fresh := l.Spec.RenewTime != nil && time.Since(l.Spec.RenewTime.Time) < 10*time.Second
		return strings.HasPrefix(holder, host+"_") && fresh, fmt.Sprintf("holder %q, renewed %v", holder, l.Spec.RenewTime)
	})
	if strings.Contains(e.ccm.Log(), "leaderelection lost") {
		t.Error("polyccm lost its lease")
	}
}

// The secure port answers health checks to anyone and metrics only to
// callers the API server authorizes.
func TestSecurePortServesHealthAndMetrics(t *testing.T) {
	e := newDOEnv(t, nil, nil)
	e.register(e.nodeName(0), "") // makes polyccm call the cloud at least once
	for _, p := range []string{"/healthz", "/livez", "/readyz"} {
		code, body, err := e.ccm.Get(p)
		if err != nil || code != http.StatusOK || body != "ok" {
			t.Errorf("GET %s = %d %q, %v; want 200 ok", p, code, body, err)
		}
	}
	code, body, _ := e.ccm.Get("/readyz?verbose")
	for _, check := range []string{"[+]ping ok", "[+]shutdown ok", "[+]cloud-auth ok"} {
		if !strings.Contains(body, check) {
			t.Errorf("/readyz?verbose (%d) lacks %q:\n%s", code, check, body)
		}
	}

	if code, _, _ := e.ccm.Get("/metrics"); code != http.StatusForbidden && code != http.StatusUnauthorized {
		t.Errorf("anonymous GET /metrics = %d, want 401 or 403", code)
	}

	// A scraper bound to the shipped metrics-reader role gets in through
	// delegated authorization; an unbound user does not.
	binding := `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: e2e-prometheus-metrics
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "polyccm:metrics-reader"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: e2e-prometheus}]
`
	if err := cp.Apply(context.Background(), []byte(binding), false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), "e2e-prometheus-metrics", metav1.DeleteOptions{})
	})
	// The client CA is loaded asynchronously after the port opens (as in
	// every Kubernetes component): until then a client certificate is
	// "signed by unknown authority", 401. Once it is known: 403.
	code = 0
	eventually(t, 15*time.Second, "the client CA loaded", func() (bool, string) {
		code, _ = getAs(t, e.ccm, "e2e-nobody", "/metrics")
		return code != http.StatusUnauthorized, fmt.Sprintf("status %d", code)
	})
	if code != http.StatusForbidden {
		t.Errorf("GET /metrics as an unbound user = %d, want 403", code)
	}
	eventually(t, 15*time.Second, "metrics with the droplet calls", func() (bool, string) {
		code, body := getAs(t, e.ccm, "e2e-prometheus", "/metrics")
		want := `polyccm_cloud_api_requests_total{driver="digitalocean",operation="droplets.list",outcome="success"}`
		return code == http.StatusOK && strings.Contains(body, want), fmt.Sprintf("status %d, has %s: %v", code, want, strings.Contains(body, want))
	})
}

// getAs fetches path from polyccm's secure port with a client certificate
// for user, signed by the cluster CA.
func getAs(t *testing.T, c *harness.CCM, user, path string) (int, string) {
	t.Helper()
	certPEM, keyPEM, err := cp.ClientCert(user)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		Certificates:       []tls.Certificate{cert},
		InsecureSkipVerify: true, //nolint:gosec // polyccm's self-signed serving cert
	}}}
	resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d%s", c.Port, path))
	if err != nil {
		t.Fatalf("GET %s as %s: %v", path, user, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// runBinary runs polyccm with args and returns its exit code and output.
func runBinary(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	dir := t.TempDir()
	c, err := harness.StartCCM(harness.CCMOptions{Bin: polyccmBin, Dir: dir, Args: args, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	code, err := c.Wait(30 * time.Second)
	if err != nil {
		c.Kill()
		t.Fatalf("polyccm %v: %v\n%s", args, err, c.Log())
	}
	return code, c.Log()
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ccm.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A bad config stops polyccm at start with every problem named by key.
func TestBadConfigExitsNamingTheKeys(t *testing.T) {
	p := writeConfig(t, `driver: digitalocean
clusterName: e2e
kubeconfig: `+cp.PolyccmKubeconfig+`
nodes:
  concurrentSync: 5
  monitorPeriod: soon
serving:
  securePort: 70000
drivers:
  digitalocean:
    token: {env: E2E_DO_TOKEN}
`)
	code, out := runBinary(t, nil, "run", "--config", p)
	if code == 0 {
		t.Fatalf("polyccm started with a bad config:\n%s", out)
	}
	for _, want := range []string{
		"nodes.concurrentSync: unknown key; did you mean nodes.concurrentSyncs?",
		`nodes.monitorPeriod: "soon" is not a duration`,
		"serving.securePort: 70000 is not a port",
		"drivers.digitalocean.token: environment variable E2E_DO_TOKEN is not set",
		"polyccm config validate",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// config validate reports the same, and exits 1; once fixed, 0.
	code, out = runBinary(t, nil, "config", "validate", "--config", p)
	if code != 1 || !strings.Contains(out, "has 4 problems") {
		t.Errorf("config validate = %d, want 1 and 4 problems:\n%s", code, out)
	}
	code, out = runBinary(t, []string{
		"POLYCCM_NODES__CONCURRENTSYNCS=5",
		"E2E_DO_TOKEN=dop_v1_secret_e2e",
	}, "config", "validate", "--config", writeConfig(t, "driver: digitalocean\ndrivers:\n  digitalocean:\n    token: {env: E2E_DO_TOKEN}\n"))
	if code != 0 {
		t.Errorf("config validate of a good config = %d:\n%s", code, out)
	}
}

// Asking for a driver this binary lacks names the ones it has and the tag.
func TestUnknownDriverNamesCompiledInDrivers(t *testing.T) {
	p := writeConfig(t, "driver: vultr\nkubeconfig: "+cp.PolyccmKubeconfig+"\n")
	code, out := runBinary(t, nil, "run", "--config", p)
	if code == 0 {
		t.Fatalf("polyccm started with driver vultr:\n%s", out)
	}
	// The binary is built with every known driver (no tags).
	has := "this binary has: " + strings.Join(slices.Sorted(slices.Values(driver.Known)), ", ")
	for _, want := range []string{`"vultr" is not a polyccm driver`, has} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// No build has it: advising one would send the operator nowhere.
	if strings.Contains(out, "make build") || strings.Contains(out, "drivers.vultr") {
		t.Errorf("output advises a rebuild with a driver that does not exist:\n%s", out)
	}
}
