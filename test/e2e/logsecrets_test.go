//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fakedo "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
	"github.com/polyccm/polyccm/test/harness"
)

// No credential reaches polyccm's log at the highest verbosity the config
// accepts, in either format: not the bearer token of a /metrics scraper
// (delegated authentication sends it to the API server in a TokenReview,
// whose body client-go logs from -v=8), not the cloud's credentials, while a
// load balancer goes through its whole life.
func TestNoCredentialInLogsAtMaxVerbosity(t *testing.T) {
	token := scraperToken(t)
	loud := func(format string) func(*harness.Settings) {
		return func(s *harness.Settings) {
			withServices(s)
			s.Verbosity = 10
			s.LogFormat = format
		}
	}
	check := func(t *testing.T, e *env, secrets map[string]string) {
		t.Helper()
		scrapeWith(t, e.ccm, token)
		secrets["the /metrics scraper's token"] = token
		log := e.ccm.Log()
		if !strings.Contains(log, "TokenReview") {
			t.Errorf("the log shows no TokenReview: not at a verbosity that logs bodies? (%d bytes)", len(log))
		}
		for what, s := range secrets {
			if strings.Contains(log, s) {
				t.Errorf("polyccm's log (%s) contains %s", e.ccm.LogPath, what)
			}
		}
	}

	for _, format := range []string{"text", "json"} {
		t.Run("digitalocean/"+format, func(t *testing.T) {
			e := newDOEnv(t, nil, loud(format))
			e.fake.SetLoadBalancerActivationDelay(300 * time.Millisecond)
			d := e.fake.AddDroplet(fakedo.Droplet{Name: e.nodeName(0), Status: fakedo.StatusActive, SizeSlug: "s-2vcpu-4gb", Region: "fra1"})
			e.register(d.Name, "")
			e.waitInitialized([]string{d.Name}, 30*time.Second)
			lifecycle(t, "logs", func() bool { return len(e.fake.LoadBalancers()) == 0 })
			check(t, e.env, map[string]string{"the DigitalOcean token": e.token})
		})
	}
	t.Run("aws/text", func(t *testing.T) {
		e := newAWSEnv(t, loud("text"))
		in := e.instance(0, awsZones[0])
		e.register(in.PrivateDNSName, "")
		e.waitInitialized([]string{in.PrivateDNSName}, 30*time.Second)
		lifecycle(t, "logs", func() bool { return e.fake.Stats().LoadBalancers.Live == 0 })
		check(t, e.env, map[string]string{"the AWS secret key": awsSecretKey})
	})
	t.Run("gce/text", func(t *testing.T) {
		e := newGCEEnv(t, loud("text"))
		in := e.instance(0, "us-central1-a")
		e.register(in.Name, "")
		e.waitInitialized([]string{in.Name}, 30*time.Second)
		lifecycle(t, "logs", func() bool { return e.live()["forwardingRules"] == 0 })
		check(t, e.env, map[string]string{"the GCE access token": e.secret, "the GCE private key": gcePrivateKeyPart(t, e.dir)})
	})
}

// lifecycle runs a LoadBalancer Service through its life: created, served,
// deleted, and gone from the cloud (gone reports that).
func lifecycle(t *testing.T, name string, gone func() bool) {
	t.Helper()
	createService(t, name, nil, tcp(80))
	eventually(t, 90*time.Second, "Service "+name+" ingress", func() (bool, string) {
		ing := getSvc(t, name).Status.LoadBalancer.Ingress
		return len(ing) > 0, fmt.Sprintf("ingress %v", ing)
	})
	deleteServiceAndWait(t, name, 90*time.Second)
	eventually(t, 60*time.Second, "the load balancer gone from the cloud", func() (bool, string) { return gone(), "" })
}

// scraperToken returns a token of a ServiceAccount bound to the shipped
// polyccm:metrics-reader role, as a Prometheus in the cluster would have.
func scraperToken(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	const ns, name = "default", "e2e-scraper"
	_, err := cp.Admin.CoreV1().ServiceAccounts(ns).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	_, err = cp.Admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-scraper-metrics"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "polyccm:metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: name}},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cp.Admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), "e2e-scraper-metrics", metav1.DeleteOptions{})
	})
	tr, err := cp.Admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest: %v", err)
	}
	return tr.Status.Token
}

// scrapeWith reads /metrics with a bearer token; delegated authentication
// reviews the token with the API server.
func scrapeWith(t *testing.T, c *harness.CCM, token string) {
	t.Helper()
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		InsecureSkipVerify: true, //nolint:gosec // polyccm's self-signed serving cert
	}}}
	eventually(t, 30*time.Second, "/metrics with the scraper's token", func() (bool, string) {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", c.Port), nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(req)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK && strings.Contains(string(b), "polyccm_cloud_api_requests_total"), fmt.Sprintf("status %d", resp.StatusCode)
	})
}

// gcePrivateKeyPart is a piece of the service-account key's private key,
// from the key file the test wrote for polyccm.
func gcePrivateKeyPart(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "gce-service-account.json"))
	if err != nil {
		t.Fatal(err)
	}
	var key struct {
		PrivateKey string `json:"private_key"`
	}
	if err := json.Unmarshal(b, &key); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(key.PrivateKey, "\n")
	if len(lines) < 4 {
		t.Fatalf("a private key of %d lines", len(lines))
	}
	return lines[2]
}
