//go:build e2e

package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	fakedo "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
	"github.com/polyccm/polyccm/test/harness"
)

// The in-cluster manifests run polyccm as the ServiceAccount
// kube-system/polyccm; every other e2e runs it as the user system:polyccm.
// This one runs it with that ServiceAccount's token (as the DaemonSet's pod
// would have it) and checks rbac.yaml gives it all it needs: the Lease,
// initializing a Node, a load balancer through its life, the secure port's
// delegated authentication.
func TestRunsAsTheServiceAccount(t *testing.T) {
	tr, err := cp.Admin.CoreV1().ServiceAccounts("kube-system").CreateToken(context.Background(), "polyccm",
		&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: ptrTo[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for kube-system/polyccm (rbac.yaml creates it): %v", err)
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["e2e"] = &clientcmdapi.Cluster{Server: cp.AdminConfig.Host, CertificateAuthorityData: cp.AdminConfig.CAData}
	kc.AuthInfos["polyccm"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "polyccm"}
	kc.CurrentContext = "e2e"
	path := filepath.Join(t.TempDir(), "polyccm-sa.kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}

	e := newDOEnv(t, nil, func(s *harness.Settings) {
		withServices(s)
		s.Kubeconfig = path
	})
	e.fake.SetLoadBalancerActivationDelay(300 * time.Millisecond)
	d := e.fake.AddDroplet(fakedo.Droplet{Name: e.nodeName(0), Status: fakedo.StatusActive, SizeSlug: "s-2vcpu-4gb", Region: "fra1"})
	e.register(d.Name, "")
	e.waitInitialized([]string{d.Name}, 30*time.Second)
	lease, err := cp.Admin.CoordinationV1().Leases("kube-system").Get(context.Background(), "cloud-controller-manager", metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		t.Fatalf("the Lease: %+v, %v", lease, err)
	}
	lifecycle(t, "as-sa", func() bool { return len(e.fake.LoadBalancers()) == 0 })
	if code, body, err := e.ccm.Get("/readyz"); err != nil || code != http.StatusOK {
		t.Errorf("/readyz = %d %q, %v", code, body, err)
	}
	scrapeWith(t, e.ccm, scraperToken(t))
}
