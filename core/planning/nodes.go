package planning

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"
	cloudapi "k8s.io/cloud-provider/api"

	"github.com/polyccm/polyccm/core/instances"
)

// What a plan says of a Node.
const (
	Initialize = "initialize" // the cloud-node controller sets its providerID, labels and addresses and lifts the taint
	Unresolved = "unresolved" // no instance answers for it: it stays tainted (or, NotReady, the plan cannot say)
	Taint      = "taint"      // the lifecycle controller taints it: its instance is shut down
	Remove     = "delete"     // the lifecycle controller deletes it: its instance is gone
	Keep       = "keep"       // nothing to do
)

// planNodes asks the cloud about every Node as the node controllers would,
// through core's batched lookups (one listing for many Nodes), from a few
// workers at once so lookups share batches.
func planNodes(ctx context.Context, inst *instances.Instances, nodes []*v1.Node, initialize, lifecycle bool) []NodePlan {
	out := make([]NodePlan, len(nodes))
	work := make(chan int)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			for i := range work {
				out[i] = planNode(ctx, inst, nodes[i], initialize, lifecycle)
			}
		})
	}
	for i := range nodes {
		work <- i
	}
	close(work)
	wg.Wait()
	slices.SortFunc(out, func(a, b NodePlan) int { return strings.Compare(a.Node, b.Node) })
	return out
}

func planNode(ctx context.Context, inst *instances.Instances, n *v1.Node, initialize, lifecycle bool) NodePlan {
	p := NodePlan{Node: n.Name, ProviderID: n.Spec.ProviderID, Action: Keep}
	if hasTaint(n, cloudapi.TaintExternalCloudProvider) {
		if !initialize {
			p.Message = "tainted uninitialized, but controllers.nodes is off"
			return p
		}
		md, err := inst.InstanceMetadata(ctx, n)
		switch {
		case err == nil && md != nil:
			p.Action = Initialize
			p.ProviderID = md.ProviderID
			p.Message = fmt.Sprintf("instance type %s, zone %s, region %s", orNone(md.InstanceType), orNone(md.Zone), orNone(md.Region))
		case errors.Is(err, cloudprovider.InstanceNotFound):
			p.Action, p.Message = Unresolved, "no instance of this name or providerID; the Node keeps its taint"
		default:
			p.Action, p.Message = Unresolved, errText(err)
		}
		return p
	}
	if !lifecycle || ready(n) {
		return p
	}
	exists, err := inst.InstanceExists(ctx, n)
	if err != nil {
		p.Action, p.Message = Unresolved, errText(err)
		return p
	}
	if !exists {
		p.Action, p.Message = Remove, "NotReady and its instance is gone"
		return p
	}
	down, err := inst.InstanceShutdown(ctx, n)
	switch {
	case err != nil:
		p.Action, p.Message = Unresolved, errText(err)
	case down && !hasTaint(n, cloudapi.TaintNodeShutdown):
		p.Action, p.Message = Taint, "NotReady and its instance is shut down: tainted "+cloudapi.TaintNodeShutdown
	}
	return p
}

// probeNode is a Node no cloud has an instance for.
func probeNode() *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "polyccm-plan-probe-no-such-instance"}}
}

func hasTaint(n *v1.Node, key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == key })
}

func ready(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func errText(err error) string {
	if err == nil {
		return "no answer"
	}
	return err.Error()
}
