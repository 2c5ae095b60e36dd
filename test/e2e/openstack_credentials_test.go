//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/polyccm/polyccm/test/harness"
)

const osScraper = "e2e-openstack-scraper"

var osCredentialsValidRE = regexp.MustCompile(`(?m)^polyccm_cloud_api_credentials_valid\{driver="openstack"\} (\S+)$`)

// osCredentialsValid scrapes polyccm_cloud_api_credentials_valid as a
// scraper bound to the metrics-reader role for the test alone.
func osCredentialsValid(t *testing.T, e *osEnv) func() (string, string) {
	t.Helper()
	binding := `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: e2e-openstack-metrics
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "polyccm:metrics-reader"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: ` + osScraper + `}]
`
	if err := cp.Apply(context.Background(), []byte(binding), false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), "e2e-openstack-metrics", metav1.DeleteOptions{})
	})
	return func() (string, string) {
		code, body := getAs(t, e.ccm, osScraper, "/metrics")
		if code != http.StatusOK {
			return "", fmt.Sprintf("GET /metrics = %d", code)
		}
		m := osCredentialsValidRE.FindStringSubmatch(body)
		if m == nil {
			return "", `no polyccm_cloud_api_credentials_valid{driver="openstack"} sample`
		}
		return m[1], "credentials_valid " + m[1]
	}
}

// osRejected waits for polyccm to say the credentials are rejected: the
// cloud-auth readiness check failing (liveness fine), credentials_valid 0
// and an error log line naming the driver and, in what to check, key.
func osRejected(t *testing.T, e *osEnv, valid func() (string, string), key string) {
	t.Helper()
	eventually(t, 30*time.Second, "/readyz failing on cloud-auth", func() (bool, string) { return authFailing(e.ccm) })
	livenessOK(t, e.ccm)
	eventually(t, 15*time.Second, "credentials_valid 0", func() (bool, string) { v, s := valid(); return v == "0", s })
	eventually(t, 15*time.Second, "an error log line naming the driver and "+key, func() (bool, string) {
		for _, l := range strings.Split(e.ccm.Log(), "\n") {
			_, hint, ok := strings.Cut(l, "whatToCheck=")
			if ok && strings.HasPrefix(l, "E") && strings.Contains(l, "rejected polyccm's credentials") &&
				strings.Contains(l, `driver="openstack"`) && strings.Contains(hint, key) {
				t.Logf("polyccm says what to check: %s", hint)
				return true, ""
			}
		}
		return false, "no such line"
	})
}

// osAccepted waits for polyccm to work again, without a restart.
func osAccepted(t *testing.T, e *osEnv, valid func() (string, string), pid int) {
	t.Helper()
	eventually(t, 60*time.Second, "/readyz 200 again", func() (bool, string) {
		code, body, err := e.ccm.Get("/readyz")
		return err == nil && code == http.StatusOK, fmt.Sprintf("%d %q %v", code, body, err)
	})
	eventually(t, 15*time.Second, "credentials_valid 1 again", func() (bool, string) { v, s := valid(); return v == "1", s })
	if e.ccm.Exited() || e.ccm.Pid() != pid {
		t.Errorf("polyccm restarted; recovering must not need one")
	}
}

// With its application credential refused (the user disabled: Keystone
// answers 401 to a new token, every service to the old ones), polyccm
// says what to check and changes nothing: the Node of a server deleted
// meanwhile stays, none gets the shutdown taint, a Node joining stays
// uninitialized. Once Keystone accepts the credential again, polyccm
// carries on without a restart: the joined Node is initialized, the gone
// server's Node deleted.
func TestOpenStackRevokedCredentials(t *testing.T) {
	e := newOSEnv(t, osOptions{})
	svs := e.nodeServers(3)
	valid := osCredentialsValid(t, e)
	eventually(t, 15*time.Second, "credentials_valid 1", func() (bool, string) { v, s := valid(); return v == "1", s })
	pid := e.ccm.Pid()

	f := e.fake.Faults()
	e.fake.RevokeCredentials()
	osRejected(t, e, valid, "drivers.openstack.applicationCredential")

	// Temptations: a server gone, a Node joining.
	if err := e.fake.DeleteServer(svs[2].id); err != nil {
		t.Fatal(err)
	}
	joined := e.addServer(3, osServer{name: e.nodeName(3), flavor: "m1.medium", zone: "nova"})
	e.register(joined.name, "")
	rejected := responsesWith(f, http.StatusUnauthorized)
	never(t, 8*time.Second, "while the credentials were revoked", func() (bool, string) {
		for _, sv := range append(svs, joined) {
			node, err := e.node(sv.name)
			if err != nil {
				return true, "Node " + sv.name + ": " + err.Error()
			}
			if harness.HasTaint(node, harness.ShutdownTaint) {
				return true, "Node " + sv.name + " tainted shut down"
			}
		}
		if ok, status := authFailing(e.ccm); !ok {
			return true, "readiness recovered while the credentials are revoked: " + status
		}
		return false, ""
	})
	livenessOK(t, e.ccm)
	if n := responsesWith(f, http.StatusUnauthorized) - rejected; n < 5 {
		t.Fatalf("only %d requests rejected with 401 while revoked; polyccm was not tempted enough to prove anything", n)
	}
	if node, err := e.node(joined.name); err != nil || !harness.HasTaint(node, harness.UninitializedTaint.Key) {
		t.Fatalf("%s initialized (%v) although the cloud could not be asked", joined.name, err)
	}

	// Restored: the user is enabled again; the old tokens stay revoked.
	e.fake.RestoreCredentials()
	osAccepted(t, e, valid, pid)
	// The node controller backs off while it fails, hence the bound.
	e.waitInitialized([]string{joined.name}, 2*time.Minute)
	checkOSNode(t, e, joined, "nova")
	eventually(t, 60*time.Second, svs[2].name+" deleted once its server could be asked about", func() (bool, string) {
		return !e.exists(svs[2].name), "still there"
	})
	for _, sv := range svs[:2] {
		if !e.exists(sv.name) {
			t.Errorf("%s was deleted but its server exists", sv.name)
		}
	}
}

// A password changed in Keystone (which revokes the user's tokens) is
// rejected until the operator rewrites the password file; polyccm reads
// the new one when it authenticates again, without a restart.
func TestOpenStackRotatedPassword(t *testing.T) {
	e := newOSEnv(t, osOptions{password: true})
	svs := e.nodeServers(2)
	valid := osCredentialsValid(t, e)
	eventually(t, 15*time.Second, "credentials_valid 1", func() (bool, string) { v, s := valid(); return v == "1", s })
	pid := e.ccm.Pid()
	rotated := "e2e R0tated pa55word 0xBEEF"
	t.Cleanup(func() {
		if strings.Contains(e.ccm.Log(), rotated) {
			t.Errorf("polyccm's log contains the rotated password")
		}
	})

	e.fake.SetPassword(rotated)
	osRejected(t, e, valid, "password")
	writeAtomically(t, e.secretFile, rotated+"\n")
	osAccepted(t, e, valid, pid)
	late := e.addServer(2, osServer{name: e.nodeName(2), flavor: "m1.small", zone: "nova"})
	e.register(late.name, "")
	e.waitInitialized([]string{late.name}, 30*time.Second)
	for _, sv := range svs {
		if !e.exists(sv.name) {
			t.Errorf("%s was deleted but its server exists", sv.name)
		}
	}
}
