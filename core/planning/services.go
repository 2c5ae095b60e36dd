package planning

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/polyccm/polyccm/core/annotations"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

func everything() labels.Selector { return labels.Everything() }

// What a plan says of a Service.
const (
	Adopt   = "adopt"   // the cloud is what the Service asks for: no change
	Update  = "update"  // its load balancer is changed in place
	Create  = "create"  // a new load balancer is made
	Delete  = "delete"  // its load balancer is deleted (the Service no longer wants one)
	Wait    = "wait"    // the cloud is still making it; polyccm would wait
	Refuse  = "refuse"  // the Service is refused (ownership, bad annotations): it would not be synced
	Skip    = "skip"    // not polyccm's: another controller's, or a loadBalancerClass
	Failed  = "error"   // the sync fails; the plan cannot say more
	Nothing = "nothing" // no load balancer, none wanted
)

// lbFinalizer is the service controller's.
const lbFinalizer = "service.kubernetes.io/load-balancer-cleanup"

// planServices runs each LoadBalancer Service's sync under a dry run, one
// at a time, as the service controller would run it first after the
// switch.
func planServices(ctx context.Context, lb cloudprovider.LoadBalancer, cluster string, svcs []*v1.Service, nodes []*v1.Node, events *recorder) []ServicePlan {
	targets := stableNodes(nodes)
	var out []ServicePlan
	slices.SortFunc(svcs, func(a, b *v1.Service) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	for _, svc := range svcs {
		wants := svc.Spec.Type == v1.ServiceTypeLoadBalancer && svc.Spec.LoadBalancerClass == nil
		cleanup := slices.Contains(svc.Finalizers, lbFinalizer) && (svc.DeletionTimestamp != nil || svc.Spec.Type != v1.ServiceTypeLoadBalancer)
		if !wants && !cleanup {
			if svc.Spec.Type == v1.ServiceTypeLoadBalancer {
				out = append(out, ServicePlan{Service: key(svc), Action: Skip, Addresses: loadbalancers.StatusAddresses(svc),
					Message: "spec.loadBalancerClass is " + *svc.Spec.LoadBalancerClass + ": another controller's"})
			}
			continue
		}
		p := ServicePlan{Service: key(svc), Addresses: loadbalancers.StatusAddresses(svc)}
		dctx, dry := loadbalancers.WithDryRun(ctx)
		if cleanup {
			planDelete(dctx, lb, cluster, svc, &p)
		} else {
			planEnsure(dctx, lb, cluster, svc, targets, &p)
			if !slices.Contains(svc.Finalizers, lbFinalizer) {
				p.Writes = append(p.Writes, "PATCH services "+key(svc)+" (adds the finalizer "+lbFinalizer+")")
			}
		}
		for _, c := range dry.Changes() {
			p.Changes = append(p.Changes, changeOf(c))
		}
		p.Writes = append(p.Writes, dry.Writes()...)
		p.Events = events.take(svc.Namespace, svc.Name)
		out = append(out, p)
	}
	return out
}

func planEnsure(ctx context.Context, lb cloudprovider.LoadBalancer, cluster string, svc *v1.Service, nodes []*v1.Node, p *ServicePlan) {
	_, exists, gerr := lb.GetLoadBalancer(ctx, cluster, svc)
	st, err := lb.EnsureLoadBalancer(ctx, cluster, svc, nodes)
	switch {
	case err == nil:
		p.Action = Adopt
		if st != nil {
			if got := statusAddresses(st); !slices.Equal(got, p.Addresses) {
				p.Action = Update
				p.Message = fmt.Sprintf("the Service's status would show %v (now %v)", got, p.Addresses)
			}
		}
	case errors.Is(err, loadbalancers.ErrPlanned):
		p.Action = Update
		if gerr == nil && !exists {
			p.Action = Create
		}
	case errors.Is(err, cloudprovider.ImplementedElsewhere):
		p.Action, p.Message = Skip, "another controller serves this Service (cloudprovider.ImplementedElsewhere)"
	case loadbalancers.IsNotOwned(err):
		p.Action, p.Message = Refuse, err.Error()
	case isPending(err):
		p.Action, p.Message = Wait, err.Error()
	case errors.Is(err, cloudapi.ErrReadOnly):
		p.Action, p.Message = Failed, "the sync would change the cloud outside its plan, which polyccm plan refused: "+err.Error()
	default:
		p.Action, p.Message = Failed, err.Error()
		if isAnnotationProblem(err) {
			p.Action = Refuse
		}
	}
}

func planDelete(ctx context.Context, lb cloudprovider.LoadBalancer, cluster string, svc *v1.Service, p *ServicePlan) {
	_, exists, err := lb.GetLoadBalancer(ctx, cluster, svc)
	switch {
	case err != nil:
		p.Action, p.Message = Failed, err.Error()
	case exists:
		p.Action = Delete
		p.Changes = append(p.Changes, PlanChange{Action: "delete", Kind: "load balancer", Name: lb.GetLoadBalancerName(ctx, cluster, svc)})
		p.Writes = append(p.Writes, "PATCH services "+key(svc)+" (removes the finalizer "+lbFinalizer+")")
	default:
		p.Action = Nothing
		p.Writes = append(p.Writes, "PATCH services "+key(svc)+" (removes the finalizer "+lbFinalizer+")")
	}
}

// stableNodes is the service controller's node set: Nodes not being
// deleted, not labelled out of load balancers and not tainted for deletion
// by the cluster autoscaler (k8s.io/cloud-provider's
// stableNodeSetPredicates).
func stableNodes(nodes []*v1.Node) []*v1.Node {
	var out []*v1.Node
	for _, n := range nodes {
		if n.DeletionTimestamp != nil {
			continue
		}
		if v, ok := n.Labels[v1.LabelNodeExcludeBalancers]; ok {
			if b, err := strconv.ParseBool(v); err != nil || b {
				continue
			}
		}
		if slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool { return t.Key == "ToBeDeletedByClusterAutoscaler" }) {
			continue
		}
		out = append(out, n)
	}
	return out
}

func isPending(err error) bool {
	var p *loadbalancers.PendingError
	return errors.As(err, &p)
}

// isAnnotationProblem: the drivers refuse a Service whose annotations are
// invalid before any cloud call, with one Warning event per problem.
func isAnnotationProblem(err error) bool {
	var inv *annotations.InvalidError
	return errors.As(err, &inv)
}

func statusAddresses(st *v1.LoadBalancerStatus) []string {
	var out []string
	for _, ing := range st.Ingress {
		out = append(out, ing.IP+ing.Hostname)
	}
	return out
}

func key(svc *v1.Service) string { return svc.Namespace + "/" + svc.Name }

func changeOf(c loadbalancers.Change) PlanChange {
	pc := PlanChange{Action: string(c.Action), Kind: c.Kind, Name: c.Name}
	for _, f := range c.Fields {
		pc.Fields = append(pc.Fields, PlanField{Name: f.Name, From: f.From, To: f.To})
	}
	return pc
}

// unowned lists the cloud's load balancers made for this cluster that no
// LoadBalancer Service of it owns.
func unowned(ctx context.Context, ic driver.InventoryCloud, svcs []*v1.Service) ([]UnownedResource, error) {
	res, err := ic.LoadBalancerInventory(ctx)
	if err != nil {
		return nil, err
	}
	byUID := map[string]*v1.Service{}
	byKey := map[string]*v1.Service{}
	for _, s := range svcs {
		if s.Spec.Type != v1.ServiceTypeLoadBalancer && !slices.Contains(s.Finalizers, lbFinalizer) {
			continue
		}
		byUID[strings.ReplaceAll(string(s.UID), "-", "")] = s
		byKey[key(s)] = s
	}
	var out []UnownedResource
	for _, r := range res {
		owner := ""
		if r.UIDMark != "" {
			for uid, s := range byUID {
				if strings.HasPrefix(uid, r.UIDMark) {
					owner = key(s)
				}
			}
		} else if s, ok := byKey[r.Service]; ok {
			owner = key(s)
		}
		if owner != "" {
			continue
		}
		u := UnownedResource{Kind: r.Kind, Name: cmpOr(r.Name, r.ID), ID: r.ID, Service: r.Service, Addresses: r.Addresses}
		switch {
		case r.Service != "":
			u.Why = "it names Service " + r.Service + ", which has no load balancer in this cluster (deleted, or no longer of type LoadBalancer); polyccm leaves it alone"
		default:
			u.Why = "its name comes from a Service UID no Service of this cluster has (another cluster's, or left behind); polyccm leaves it alone"
		}
		out = append(out, u)
	}
	return out, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
