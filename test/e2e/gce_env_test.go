//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/polyccm/polyccm/drivers/gce"

	"github.com/polyccm/polyccm/test/simcloud"

	fakegce "github.com/polyccm/polyccm/test/fakecloud/gce"
	"github.com/polyccm/polyccm/test/harness"
)

const (
	gceProject = "polyccm-e2e"
	gceRegion  = "us-central1"
	gceNodeTag = "k8s-node"
)

// gceEnv is one polyccm with the GCE driver against a fresh fake Compute
// API, authenticating with a service-account key the fake issued.
type gceEnv struct {
	*env
	fake *fakegce.Server
}

func newGCEEnv(t *testing.T, tweak func(*harness.Settings)) *gceEnv {
	t.Helper()
	e := &gceEnv{env: newEnv(t)}
	token := "ya29.e2e-" + strings.Repeat("x", 20)
	e.secret = token
	proj, err := simcloud.StartGCE(simcloud.Options{ClusterName: "e2e"}, gceProject, token)
	if err != nil {
		t.Fatal(err)
	}
	e.fake = proj.Fake
	e.closer = append(e.closer, e.fake.Close)
	block, err := proj.Config(e.dir, "default", gceNodeTag)
	if err != nil {
		t.Fatal(err)
	}
	s := harness.Settings{Driver: "gce", DriverBlock: block}
	if tweak != nil {
		tweak(&s)
	}
	e.run(s, nil)
	return e
}

// nodesHC is the name of the nodes' shared health check, cloud-provider-
// gcp's k8s-<cluster ID>-node, with the ID polyccm keeps where upstream
// does (it makes one for a cluster that has none).
func (e *gceEnv) nodesHC(t *testing.T) string {
	t.Helper()
	cm, err := cp.Admin.CoreV1().ConfigMaps(gce.ClusterIDNamespace).Get(context.Background(), gce.ClusterIDConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the cluster ID: %v", err)
	}
	return "k8s-" + cm.Data["provider-uid"] + "-node"
}

// instance adds a running instance for node i in zone.
func (e *gceEnv) instance(i int, zone string) fakegce.Instance {
	return e.fake.AddInstance(fakegce.Instance{Name: e.nodeName(i), Zone: zone, MachineType: "e2-standard-4", Status: fakegce.StatusRunning, Tags: []string{gceNodeTag}})
}

func (e *gceEnv) providerID(in fakegce.Instance) string {
	return "gce://" + gceProject + "/" + in.Zone + "/" + in.Name
}

// calls sums polyccm's calls whose endpoint contains part.
func (e *gceEnv) calls(part string) int {
	n := 0
	for ep, c := range e.fake.Faults().Calls() {
		if strings.Contains(ep, part) {
			n += c
		}
	}
	return n
}
