//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fakedo "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
	"github.com/polyccm/polyccm/test/harness"
)

// credentialsScraper is bound to the metrics-reader role for this test
// alone, so it does not depend on (or undo) another test's binding.
const credentialsScraper = "e2e-credentials-scraper"

var credentialsValidRE = regexp.MustCompile(`(?m)^polyccm_cloud_api_credentials_valid\{driver="digitalocean"\} (\S+)$`)

// credentialsValid scrapes polyccm_cloud_api_credentials_valid.
func credentialsValid(t *testing.T, c *harness.CCM) (string, string) {
	t.Helper()
	code, body := getAs(t, c, credentialsScraper, "/metrics")
	if code != http.StatusOK {
		return "", fmt.Sprintf("GET /metrics = %d", code)
	}
	m := credentialsValidRE.FindStringSubmatch(body)
	if m == nil {
		return "", "no polyccm_cloud_api_credentials_valid{driver=\"digitalocean\"} sample"
	}
	return m[1], "credentials_valid " + m[1]
}

// responsesWith counts the fake's answers with status, over all endpoints.
func responsesWith(f *faults.Injector, status int) int {
	n := 0
	for _, ep := range f.Endpoints() {
		n += f.Responses(ep)[status]
	}
	return n
}

// authFailing says whether /readyz fails on cloud-auth (and only there)
// while the liveness endpoints still pass.
func authFailing(c *harness.CCM) (bool, string) {
	code, body, err := c.Get("/readyz")
	if err != nil {
		return false, err.Error()
	}
	if code == http.StatusOK || !strings.Contains(body, "[-]cloud-auth failed") || !strings.Contains(body, "[+]ping ok") {
		return false, fmt.Sprintf("/readyz = %d %q", code, body)
	}
	return true, ""
}

// livenessOK checks /livez and /healthz, which a revoked token must not
// fail: a restart cannot fix it, and a static pod would restart in a loop.
func livenessOK(t *testing.T, c *harness.CCM) {
	t.Helper()
	for _, p := range []string{"/livez", "/healthz"} {
		if code, body, err := c.Get(p); err != nil || code != http.StatusOK {
			t.Fatalf("GET %s = %d %q, %v while the credentials are rejected; want 200: liveness must not depend on them", p, code, body, err)
		}
	}
}

// With its token revoked, polyccm says so — an error log line naming the
// driver and what to check, credentials_valid 0, a failing cloud-auth
// readiness check while liveness stays fine — and deletes nothing: no
// Node (none of which reports Ready, so the lifecycle controller asks
// about each every second), no load balancer, not even of a Service being
// deleted. A 403 is treated the same. Once the token file holds a token
// the cloud accepts, polyccm recovers without a restart and catches up.
func TestRevokedCredentials(t *testing.T) {
	e, ds := lbNodes(t, 2, nil)
	w := watchNodeDeletions(t, e.fake, e.prefix)
	for _, d := range ds {
		w.track(d.Name, d.ID)
	}
	newToken := "dop_v1_" + strings.Repeat("r0ta", 16)
	t.Cleanup(func() {
		// env's cleanup checks the first token; this is the second.
		if strings.Contains(e.ccm.Log(), newToken) {
			t.Errorf("polyccm's log contains the rotated cloud credential")
		}
	})

	binding := `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: e2e-credentials-metrics
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "polyccm:metrics-reader"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: ` + credentialsScraper + `}]
`
	if err := cp.Apply(context.Background(), []byte(binding), false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), "e2e-credentials-metrics", metav1.DeleteOptions{})
	})

	createService(t, "kept", nil, tcp(80))
	createService(t, "doomed", nil, tcp(80))
	_, keptLB := e.waitIngress("kept", 60*time.Second)
	_, doomedLB := e.waitIngress("doomed", 60*time.Second)
	eventually(t, 15*time.Second, "credentials_valid 1", func() (bool, string) {
		v, status := credentialsValid(t, e.ccm)
		return v == "1", status
	})
	pid := e.ccm.Pid()

	// Revoked: the cloud now accepts only a token polyccm does not have.
	f := e.fake.Faults()
	e.fake.SetToken("dop_v1_" + strings.Repeat("0ther", 12))
	eventually(t, 30*time.Second, "/readyz failing on cloud-auth", func() (bool, string) { return authFailing(e.ccm) })
	livenessOK(t, e.ccm)
	eventually(t, 15*time.Second, "credentials_valid 0", func() (bool, string) {
		v, status := credentialsValid(t, e.ccm)
		return v == "0", status
	})
	var logLine string
	eventually(t, 15*time.Second, "an error log line naming the driver and what to check", func() (bool, string) {
		for _, l := range strings.Split(e.ccm.Log(), "\n") {
			// klog's text format: E for error, then the message and keys.
			if strings.HasPrefix(l, "E") && strings.Contains(l, "rejected polyccm's credentials") &&
				strings.Contains(l, `driver="digitalocean"`) && strings.Contains(l, "drivers.digitalocean.token") {
				logLine = l
				return true, ""
			}
		}
		return false, "no such line"
	})
	t.Logf("polyccm logged: %s", logLine)

	// Temptations: a Service being deleted, and a node joining that cannot
	// be looked up. Over several monitor periods nothing may go.
	if err := cp.Admin.CoreV1().Services("default").Delete(context.Background(), "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	joined := e.fake.AddDroplet(fakedo.Droplet{Name: e.nodeName(2), Status: fakedo.StatusActive, SizeSlug: "s-2vcpu-4gb", Region: "fra1"})
	w.track(joined.Name, joined.ID)
	e.register(joined.Name, "")
	rejected := responsesWith(f, http.StatusUnauthorized)
	nothingDeleted := func() (bool, string) {
		if all, _ := w.deletions(); len(all) > 0 {
			return true, fmt.Sprintf("Nodes deleted: %v", all)
		}
		for _, lb := range []fakedo.LoadBalancer{keptLB, doomedLB} {
			if _, ok := e.fake.LoadBalancer(lb.ID); !ok {
				return true, "load balancer " + lb.ID + " deleted"
			}
		}
		svc, err := cp.Admin.CoreV1().Services("default").Get(context.Background(), "doomed", metav1.GetOptions{})
		if apierrors.IsNotFound(err) || err == nil && !slices.Contains(svc.Finalizers, lbFinalizer) {
			return true, "Service doomed released although its load balancer could not be deleted"
		}
		if ok, status := authFailing(e.ccm); !ok {
			return true, "readiness recovered while the token is revoked: " + status
		}
		return false, ""
	}
	never(t, 8*time.Second, "while the credentials were revoked", nothingDeleted)
	livenessOK(t, e.ccm)
	n401 := responsesWith(f, http.StatusUnauthorized) - rejected
	if n401 < 5 {
		t.Fatalf("only %d requests rejected with 401 while revoked; polyccm was not tempted enough to prove anything", n401)
	}
	t.Logf("%d requests rejected with 401 over 8s; nothing deleted", n401)
	if node, err := e.node(joined.Name); err != nil || !harness.HasTaint(node, harness.UninitializedTaint.Key) {
		t.Fatalf("%s initialized (%v) although the cloud could not be asked", joined.Name, err)
	}

	// Rotated: the cloud accepts a new token and the operator rewrites the
	// file polyccm reads it from. No restart.
	e.fake.SetToken(newToken)
	writeAtomically(t, filepath.Join(e.dir, "digitalocean-token"), newToken+"\n")
	eventually(t, 30*time.Second, "/readyz 200 again", func() (bool, string) {
		code, body, err := e.ccm.Get("/readyz")
		return err == nil && code == http.StatusOK, fmt.Sprintf("%d %q %v", code, body, err)
	})
	eventually(t, 15*time.Second, "credentials_valid 1 again", func() (bool, string) {
		v, status := credentialsValid(t, e.ccm)
		return v == "1", status
	})
	if !strings.Contains(e.ccm.Log(), "Cloud API accepts our credentials again") {
		t.Error("polyccm did not log that the credentials work again")
	}

	// Work continues: the node that joined meanwhile and one joining now
	// are initialized, and the Service deleted meanwhile goes with its load
	// balancer. The service and node controllers back off while they
	// fail, hence the generous bounds.
	late := e.fake.AddDroplet(fakedo.Droplet{Name: e.nodeName(3), Status: fakedo.StatusActive, SizeSlug: "s-2vcpu-4gb", Region: "fra1"})
	w.track(late.Name, late.ID)
	e.register(late.Name, "")
	e.waitInitialized([]string{late.Name}, 30*time.Second)
	e.waitInitialized([]string{joined.Name}, 2*time.Minute)
	deleteServiceAndWait(t, "doomed", 2*time.Minute)
	if _, ok := e.fake.LoadBalancer(doomedLB.ID); ok {
		t.Errorf("load balancer %s outlived its Service", doomedLB.ID)
	}

	// A 403 (a token without the scopes polyccm needs) is as loud and as
	// harmless as a 401.
	forbidden := f.AddRule(faults.Rule{Match: "*", Status: http.StatusForbidden})
	eventually(t, 30*time.Second, "/readyz failing on cloud-auth after 403s", func() (bool, string) { return authFailing(e.ccm) })
	eventually(t, 15*time.Second, "credentials_valid 0 after 403s", func() (bool, string) {
		v, status := credentialsValid(t, e.ccm)
		return v == "0", status
	})
	never(t, 5*time.Second, "while every call was forbidden", func() (bool, string) {
		if all, _ := w.deletions(); len(all) > 0 {
			return true, fmt.Sprintf("Nodes deleted: %v", all)
		}
		if _, ok := e.fake.LoadBalancer(keptLB.ID); !ok {
			return true, "load balancer " + keptLB.ID + " deleted"
		}
		return false, ""
	})
	livenessOK(t, e.ccm)
	f.RemoveRule(forbidden)
	eventually(t, 30*time.Second, "/readyz 200 after the 403s stop", func() (bool, string) {
		code, body, err := e.ccm.Get("/readyz")
		return err == nil && code == http.StatusOK, fmt.Sprintf("%d %q %v", code, body, err)
	})

	if all, _ := w.deletions(); len(all) > 0 {
		t.Errorf("Nodes deleted although every droplet exists: %v", all)
	}
	if _, ok := e.fake.LoadBalancer(keptLB.ID); !ok {
		t.Errorf("load balancer %s of a live Service is gone", keptLB.ID)
	}
	if e.ccm.Exited() || e.ccm.Pid() != pid {
		t.Errorf("polyccm restarted (exited %v, pid %d, was %d); recovering must not need one", e.ccm.Exited(), e.ccm.Pid(), pid)
	}
	deleteServiceAndWait(t, "kept", time.Minute)
}

// writeAtomically replaces a file the way a secret projection does, so a
// reader never sees it half written.
func writeAtomically(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
