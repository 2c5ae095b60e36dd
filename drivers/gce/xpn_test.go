package gce_test

import (
	"strings"
	"testing"

	"github.com/polyccm/polyccm/drivers/gce"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

// In a Shared VPC whose host project refuses the cluster's service account
// firewall changes, the load balancer is still made and deleted; each
// refused change is a Normal event with the gcloud command for the host
// project's admin, as upstream does, and the credentials are not taken
// for rejected.
func TestSharedVPCFirewallChangesLeftToTheAdmin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(func(c *gce.Config) { c.NetworkProject = "host" }))
	// The fake serves one project: the host's firewall rules read as
	// absent, and every change to them is refused as GCE refuses a caller
	// without compute.securityAdmin there.
	e.fake.Faults().AddRule(faults.Rule{Match: "POST /compute/v1/projects/{project}/global/firewalls*", Status: 403})
	e.fake.Faults().AddRule(faults.Rule{Match: "DELETE /compute/v1/projects/{project}/global/firewalls/{firewall}", Status: 403})
	nodes := e.nodes("n", 2, testZone)
	svc := service(nil, tcp(80, 30080))
	lb := e.lbName(svc)
	st := e.mustEnsure(svc, nodes)
	if fr := e.forwardingRule(lb); fr.IPAddress != st.Ingress[0].IP {
		t.Errorf("forwarding rule %s, status %s", fr.IPAddress, st.Ingress[0].IP)
	}
	if err := e.api.AuthError(); err != nil {
		t.Errorf("a refused firewall change marked the credentials rejected: %v", err)
	}
	ev := strings.Join(e.events(), "\n")
	for _, want := range []string{
		"Normal LoadBalancerManualChange Firewall change required by security admin: `gcloud compute firewall-rules create k8s-fw-" + lb + " --project host --network default",
		"--allow tcp:80 --source-ranges 0.0.0.0/0 --destination-ranges " + st.Ingress[0].IP + " --target-tags " + testNodeTag,
		"`gcloud compute firewall-rules create k8s-" + e.cfg.ClusterID + "-node-http-hc --project host",
	} {
		if !strings.Contains(ev, want) {
			t.Errorf("events lack %q:\n%s", want, ev)
		}
	}
	e.mustDelete(svc)
	if ev := strings.Join(e.events(), "\n"); !strings.Contains(ev, "`gcloud compute firewall-rules delete k8s-fw-"+lb+" --project host`") {
		t.Errorf("deletion events lack the delete command:\n%s", ev)
	}
	if live := e.live(); len(live) != 0 {
		t.Errorf("left: %v", live)
	}
}
