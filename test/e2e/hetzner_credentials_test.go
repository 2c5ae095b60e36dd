//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const hzScraper = "e2e-hetzner-scraper"

var hzCredentialsValidRE = regexp.MustCompile(`(?m)^polyccm_cloud_api_credentials_valid\{driver="hetzner"\} (\S+)$`)

// With its Hetzner Cloud token revoked, polyccm says so (an error log
// line naming drivers.hetzner.token, credentials_valid 0, a failing
// cloud-auth readiness check) and deletes nothing: not the Node of a
// server that is gone meanwhile, not the load balancer of a Service being
// deleted. A rotated token file brings it back without a restart, and the
// work held back is then done.
func TestHetznerRevokedToken(t *testing.T) {
	e, _ := newHZEnv(t, hzOptions{})
	svs := e.nodeServers(3, "fsn1")
	binding := `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: e2e-hetzner-metrics
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "polyccm:metrics-reader"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: ` + hzScraper + `}]
`
	if err := cp.Apply(context.Background(), []byte(binding), false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), "e2e-hetzner-metrics", metav1.DeleteOptions{})
	})
	valid := func() (string, string) {
		code, body := getAs(t, e.ccm, hzScraper, "/metrics")
		if code != http.StatusOK {
			return "", fmt.Sprintf("GET /metrics = %d", code)
		}
		m := hzCredentialsValidRE.FindStringSubmatch(body)
		if m == nil {
			return "", `no polyccm_cloud_api_credentials_valid{driver="hetzner"} sample`
		}
		return m[1], "credentials_valid " + m[1]
	}
	newToken := "hz" + strings.Repeat("R0ta", 15) + "tk"
	t.Cleanup(func() {
		if strings.Contains(e.ccm.Log(), newToken) {
			t.Errorf("polyccm's log contains the rotated token")
		}
	})

	loc := map[string]string{"load-balancer.hetzner.cloud/location": "fsn1"}
	createService(t, "kept", loc, tcp(80))
	createService(t, "doomed", loc, tcp(80))
	e.waitLB("kept", true, true, 60*time.Second)
	_, doomedLB := e.waitLB("doomed", true, true, 60*time.Second)
	eventually(t, 15*time.Second, "credentials_valid 1", func() (bool, string) { v, s := valid(); return v == "1", s })
	pid := e.ccm.Pid()

	// Revoked: the API now accepts only a token polyccm does not have.
	f := e.fake.Faults()
	e.fake.SetToken("hz" + strings.Repeat("0thr", 15) + "tk")
	eventually(t, 30*time.Second, "/readyz failing on cloud-auth", func() (bool, string) { return authFailing(e.ccm) })
	livenessOK(t, e.ccm)
	eventually(t, 15*time.Second, "credentials_valid 0", func() (bool, string) { v, s := valid(); return v == "0", s })
	eventually(t, 15*time.Second, "an error log line naming the driver and the token's key", func() (bool, string) {
		for _, l := range strings.Split(e.ccm.Log(), "\n") {
			if strings.HasPrefix(l, "E") && strings.Contains(l, "rejected polyccm's credentials") &&
				strings.Contains(l, `driver="hetzner"`) && strings.Contains(l, "drivers.hetzner.token") {
				return true, ""
			}
		}
		return false, "no such line"
	})

	// Temptations: a server gone, a Service being deleted.
	if err := e.fake.DeleteServer(svs[2].ID); err != nil {
		t.Fatal(err)
	}
	if err := cp.Admin.CoreV1().Services("default").Delete(context.Background(), "doomed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rejected := responsesWith(f, http.StatusUnauthorized)
	never(t, 8*time.Second, "while the token was revoked", func() (bool, string) {
		for _, sv := range svs {
			if !e.exists(sv.Name) {
				return true, "Node " + sv.Name + " deleted"
			}
		}
		if _, ok := e.fake.LoadBalancer(doomedLB.ID); !ok {
			return true, "load balancer of Service doomed deleted"
		}
		if ok, status := authFailing(e.ccm); !ok {
			return true, "readiness recovered while the token is revoked: " + status
		}
		return false, ""
	})
	if n := responsesWith(f, http.StatusUnauthorized) - rejected; n < 5 {
		t.Fatalf("only %d requests rejected with 401 while revoked; polyccm was not tempted enough to prove anything", n)
	}

	// Rotated: the operator rewrites the token file. No restart.
	e.fake.SetToken(newToken)
	writeAtomically(t, filepath.Join(e.dir, "hetzner-token"), newToken+"\n")
	eventually(t, 30*time.Second, "/readyz 200 again", func() (bool, string) {
		code, body, err := e.ccm.Get("/readyz")
		return err == nil && code == http.StatusOK, fmt.Sprintf("%d %q %v", code, body, err)
	})
	eventually(t, 15*time.Second, "credentials_valid 1 again", func() (bool, string) { v, s := valid(); return v == "1", s })
	deleteServiceAndWait(t, "doomed", 2*time.Minute)
	if _, ok := e.fake.LoadBalancer(doomedLB.ID); ok {
		t.Errorf("load balancer %d outlived its Service", doomedLB.ID)
	}
	eventually(t, 60*time.Second, svs[2].Name+" deleted once its server could be asked about", func() (bool, string) {
		return !e.exists(svs[2].Name), "still there"
	})
	for _, sv := range svs[:2] {
		if !e.exists(sv.Name) {
			t.Errorf("%s was deleted but its server exists", sv.Name)
		}
	}
	if e.ccm.Exited() || e.ccm.Pid() != pid {
		t.Errorf("polyccm restarted; recovering must not need one")
	}
	deleteServiceAndWait(t, "kept", time.Minute)
}
