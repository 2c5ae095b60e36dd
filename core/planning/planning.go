// Package planning is `polyccm plan`: with the config `run` uses, it reads
// the cluster and the cloud and says what polyccm would do to them, before
// an operator switches from a per-cloud CCM. It runs the controllers' own
// driver code under a dry run (core/loadbalancers.WithDryRun): each
// Service's sync observes and plans as the service controller's would,
// then stops before applying. What keeps it read-only is below the
// drivers: the cloud clients' transport refuses every call that could
// change the cloud, and the Kubernetes client's records writes instead of
// sending them (core/readonly).
package planning

import (
	"context"
	"errors"
	"fmt"
	"github.com/polyccm/polyccm/core/assembly"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/instances"
	"github.com/polyccm/polyccm/core/loadbalancers"
	"github.com/polyccm/polyccm/core/readonly"
)

// Settings are what a plan needs: the runner's, and the Kubernetes
// connection.
type Settings struct {
	Driver       driver.Driver
	DriverConfig any
	ClusterName  string
	// ClusterNameDefault is passed to the driver (driver.Deps).
	ClusterNameDefault bool
	CloudAPI           cloudapi.Options
	Instances          instances.Options
	// AdoptUnmarkedLoadBalancers is services.adoptUnmarkedLoadBalancers.
	AdoptUnmarkedLoadBalancers bool
	// Kube is polyccm's connection to the API server.
	Kube *rest.Config
	// Which controllers the config runs: a plan says nothing of what
	// polyccm would not do.
	Nodes, NodeLifecycle, Services bool
	// Timeout bounds the whole plan.
	Timeout time.Duration
}

// UnreachableError says which side a plan could not read; the plan has
// nothing to say then, and must not look like "nothing to do".
type UnreachableError struct {
	What string // "cluster" or "cloud"
	Err  error
}

func (e *UnreachableError) Error() string {
	fix := "check kubeconfig in the config (or the in-cluster service account) and that the API server is up"
	if e.What == "cloud" {
		fix = "check the driver's endpoint and credentials in the config, and the network to the cloud API"
	}
	return fmt.Sprintf("cannot read the %s: %v; %s", e.What, e.Err, fix)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// Run makes the plan.
func Run(ctx context.Context, s Settings) (*Report, error) {
	if s.Timeout <= 0 {
		s.Timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()

	guard := readonly.NewKube()
	kcfg := rest.CopyConfig(s.Kube)
	kcfg.Wrap(guard.Wrap)
	kcfg.UserAgent = "polyccm-plan"
	kube, err := kubernetes.NewForConfig(kcfg)
	if err != nil {
		return nil, &UnreachableError{What: "cluster", Err: err}
	}
	if _, err := kube.Discovery().ServerVersion(); err != nil {
		return nil, &UnreachableError{What: "cluster", Err: err}
	}

	factory := informers.NewSharedInformerFactory(kube, 0)
	events := newRecorder()
	ao := s.CloudAPI
	// One retry at most: a plan reports a failure rather than wait it out.
	ao.MaxAttempts = 2
	cloudGuard := readonly.NewCloud()
	// The driver as `run` builds it, below the read-only guard.
	cloud, err := assembly.New(assembly.Options{
		Driver: s.Driver, Config: s.DriverConfig,
		ClusterName: s.ClusterName, ClusterNameDefault: s.ClusterNameDefault,
		CloudAPI: ao, Instances: s.Instances,
		ClientBuilder: clientBuilder{kube: kube}, Informers: factory, Recorder: events,
		AdoptUnmarkedLoadBalancers: s.AdoptUnmarkedLoadBalancers,
		Transport:                  cloudGuard.Wrap,
	})
	if err != nil {
		return nil, err
	}
	dc, inst := cloud.Driver(), cloud.Lookups()
	nodeInformer := factory.Core().V1().Nodes()
	svcInformer := factory.Core().V1().Services()
	nodeInformer.Informer()
	svcInformer.Informer()
	informerCtx, stopInformers := context.WithCancel(ctx)
	factory.Start(informerCtx.Done())
	defer func() {
		stopInformers() // Shutdown waits for the informers to stop
		factory.Shutdown()
	}()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return nil, &UnreachableError{What: "cluster", Err: fmt.Errorf("listing %v did not finish", typ)}
		}
	}
	r := &Report{Driver: s.Driver.Name, Cluster: s.ClusterName}
	nodes, err := nodeInformer.Lister().List(everything())
	if err != nil {
		return nil, err
	}
	// The cloud must answer before anything is said of it: a probe
	// lookup of a Node that does not exist costs one call and shows
	// credentials and endpoint work.
	if err := probe(ctx, inst); err != nil {
		return nil, &UnreachableError{What: "cloud", Err: err}
	}
	if fc, ok := dc.(driver.FactsCloud); ok {
		facts, err := fc.Facts(ctx)
		if err != nil {
			r.Incomplete = append(r.Incomplete, "what the driver resolves from the cloud: "+err.Error())
		}
		r.Facts = facts
	}
	if s.Nodes || s.NodeLifecycle {
		r.Nodes = planNodes(ctx, inst, nodes, s.Nodes, s.NodeLifecycle)
	} else {
		r.Notes = append(r.Notes, "controllers.nodes and controllers.nodeLifecycle are off: polyccm would not touch Nodes")
	}

	lb, hasLB := cloud.LoadBalancer()
	switch {
	case !s.Services:
		r.Notes = append(r.Notes, "controllers.services is off: polyccm would not touch load balancers")
	case !hasLB:
		r.Notes = append(r.Notes, "driver "+s.Driver.Name+" has no load balancers")
	default:
		svcs, err := svcInformer.Lister().List(everything())
		if err != nil {
			return nil, err
		}
		r.Services = planServices(ctx, lb, s.ClusterName, svcs, nodes, events)
		if ic, ok := dc.(driver.InventoryCloud); ok {
			r.Unowned, err = unowned(ctx, ic, svcs)
			if err != nil {
				r.Notes = append(r.Notes, "listing the cloud's load balancers for ones no Service owns failed: "+err.Error())
			}
		}
		// The driver's own loops run beside the service controller.
		if tasks := cloud.Tasks(); len(tasks) > 0 {
			var notes []string
			r.Tasks, notes = planTasks(ctx, tasks, events)
			r.Notes = append(r.Notes, notes...)
		}
	}
	r.RefusedCloudCalls = cloudGuard.Refused()
	r.CloudReads = cloudGuard.Reads()
	r.KubernetesWrites = guard.Writes()
	r.decide()
	return r, nil
}

// planTasks makes one pass of each task that can say what it would do,
// under a dry run, as planServices does a Service's sync. A task that
// cannot is named in a note: the plan does not cover it.
func planTasks(ctx context.Context, tasks []driver.Task, events *recorder) ([]TaskPlan, []string) {
	var out []TaskPlan
	var notes []string
	for _, t := range tasks {
		if t.Plan == nil {
			notes = append(notes, "task "+t.Name+" cannot say what it would change; the plan does not cover it")
			continue
		}
		events.takeAll() // what the Services' syncs said of other objects is not the task's
		dctx, dry := loadbalancers.WithDryRun(ctx)
		err := t.Plan(dctx)
		p := TaskPlan{Task: t.Name, Action: Nothing}
		for _, c := range dry.Changes() {
			p.Changes = append(p.Changes, changeOf(c))
		}
		if len(p.Changes) > 0 {
			p.Action = "change"
		}
		switch {
		case err == nil, errors.Is(err, loadbalancers.ErrPlanned):
		case errors.Is(err, cloudapi.ErrReadOnly):
			p.Action, p.Message = Failed, "the task would change the cloud outside its plan, which polyccm plan refused: "+err.Error()
		default:
			p.Action, p.Message = Failed, err.Error()
		}
		p.Writes = dry.Writes()
		p.Events = events.takeAll()
		out = append(out, p)
	}
	return out, notes
}

// probe looks up a Node no cloud has: a definitive "no such instance" is
// the answer of a cloud that works.
func probe(ctx context.Context, inst *instances.Instances) error {
	_, err := inst.InstanceExists(ctx, probeNode())
	if err == nil || errors.Is(err, cloudprovider.InstanceNotFound) {
		return nil
	}
	return err
}

// clientBuilder hands the drivers the guarded client.
type clientBuilder struct{ kube kubernetes.Interface }

func (b clientBuilder) Config(string) (*rest.Config, error) {
	return nil, errors.New("polyccm plan gives drivers a client, not a config")
}
func (b clientBuilder) ConfigOrDie(string) *rest.Config { panic("polyccm plan: ConfigOrDie") }
func (b clientBuilder) Client(string) (kubernetes.Interface, error) {
	return b.kube, nil
}
func (b clientBuilder) ClientOrDie(string) kubernetes.Interface { return b.kube }
