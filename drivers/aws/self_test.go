package aws_test

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	awsccm "github.com/polyccm/polyccm/drivers/aws"
	fakeaws "github.com/polyccm/polyccm/test/fakecloud/aws"
)

// With clusterName left unset, the cluster ID is the one the AWS CCM
// finds: the cluster tag of the instance polyccm runs on (through the
// instance metadata service), not the default "kubernetes": a wrong ID
// would make every load balancer another cluster's.
func TestClusterIDFromTheInstanceTags(t *testing.T) {
	for _, c := range []struct {
		name string
		tags map[string]string
		want string // "" for a refusal
	}{
		// The world's subnets and groups are tagged for cluster "unit".
		{"current tag", map[string]string{clusterTag: awsccm.TagOwned}, cluster},
		{"legacy tag", map[string]string{awsccm.TagClusterLegacy: cluster}, cluster},
		{"both, agreeing", map[string]string{awsccm.TagClusterLegacy: cluster, clusterTag: awsccm.TagShared}, cluster},
		{"both, disagreeing", map[string]string{awsccm.TagClusterLegacy: "x", awsccm.TagClusterPrefix + "y": awsccm.TagShared}, ""},
		{"two cluster tags", map[string]string{awsccm.TagClusterPrefix + "x": awsccm.TagShared, awsccm.TagClusterPrefix + "y": awsccm.TagShared}, ""},
		{"no tag", map[string]string{"Name": "control-plane-1"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			w.clusterName, w.clusterNameDefault = "kubernetes", true
			self := w.fake.AddInstance(fakeaws.Instance{SubnetID: w.private[zoneA].ID, Tags: c.tags})
			if err := w.fake.SetIMDSInstance(self.ID); err != nil {
				t.Fatal(err)
			}
			e := w.env(w.config())
			nodes := []*v1.Node{node(self, nil)}
			svc := service(nil)
			_, err := e.lbs.EnsureLoadBalancer(ctx(t), "kubernetes", svc, nodes)
			if c.want == "" {
				if err == nil || !strings.Contains(err.Error(), "clusterName") || !strings.Contains(err.Error(), self.ID) {
					t.Fatalf("EnsureLoadBalancer = %v, want a refusal naming clusterName and instance %s", err, self.ID)
				}
				if n := w.mutating(); n != 0 {
					t.Errorf("%d changes made without a cluster ID", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			lb := w.nlb()
			if lb.Tags[awsccm.TagClusterPrefix+c.want] != awsccm.TagOwned || lb.Tags[awsccm.TagClusterPrefix+"kubernetes"] != "" {
				t.Errorf("NLB tags %v, want the cluster %s", lb.Tags, c.want)
			}
		})
	}
}
