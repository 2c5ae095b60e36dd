// Package nodeipam sets each Node's pod CIDRs from the pod ranges the cloud
// gives its instance (GCE alias IP ranges, for VPC-native clusters), as
// cloud-provider-gcp's cloud CIDR allocator does (kube-controller-manager's
// --allocate-node-cidrs with --cidr-allocator-type=CloudAllocator). The
// cloud allocates; this controller only copies.
//
// A Node with a providerID and no pod CIDRs, or whose NetworkUnavailable
// condition is not False, is looked up through core's batched, cached
// instances. Its spec.podCIDR and spec.podCIDRs are set when empty, never
// changed once set (the API server refuses that anyway); a Node whose
// CIDRs differ from the cloud's gets a Warning event and is otherwise left
// alone. Then NetworkUnavailable is set to False, as upstream does, for
// the VPC routes alias ranges itself. A Node whose instance has no usable
// range gets a Warning event and is retried with backoff; an ambiguous
// cloud error touches nothing and is retried.
package nodeipam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/controllers/workers"
	"github.com/polyccm/polyccm/core/instances"
)

// ControllerName is the controller's name among the upstream ones (logs,
// health checks, the controller manager's controller list).
const ControllerName = "node-ipam-controller"

// Event reasons, upstream's where it has one.
const (
	// ReasonCIDRNotAvailable: the Node's instance has no usable pod range.
	ReasonCIDRNotAvailable = "CIDRNotAvailable"
	// ReasonCIDRAssignmentFailed: the Node has other CIDRs than the
	// cloud's, or the API server refused them.
	ReasonCIDRAssignmentFailed = "CIDRAssignmentFailed"
)

// The NetworkUnavailable condition as upstream's setNetworkCondition
// writes it.
const (
	conditionReason  = "RouteCreated"
	conditionMessage = "NodeController create implicit route"
)

const (
	// Upstream's cidrUpdateWorkers. Lookups are batched across workers,
	// so more workers mean bigger batches, not more cloud calls.
	defaultWorkers = 30
	// Backoff for Nodes waiting for a range or for the cloud. Upstream
	// gives up after 20 tries; here a Node is never given up on, so a
	// range added later is still picked up.
	retryBase = time.Second
	retryMax  = 5 * time.Minute
)

// Lookup is core's batched, cached instance lookup (*instances.Instances).
type Lookup interface {
	Lookup(ctx context.Context, key instances.Key) (*instances.Instance, error)
}

// Options are what the controller needs.
type Options struct {
	Client kubernetes.Interface
	// Nodes is the shared Node informer (the node controllers use it too).
	Nodes     coreinformers.NodeInformer
	Instances Lookup
	Recorder  record.EventRecorder
	// Cloud names the driver in events; Hint says what gives an instance
	// its pod ranges (instances.PodCIDRSource).
	Cloud, Hint string
	// RetryBase and RetryMax bound the backoff; zero means 1s and 5m.
	RetryBase, RetryMax time.Duration
}

// Controller copies instances' pod ranges onto their Nodes.
type Controller struct {
	client    kubernetes.Interface
	instances Lookup
	recorder  record.EventRecorder
	cloud     string
	hint      string
	nodes     corelisters.NodeLister
	synced    cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	now       func() time.Time
}

// New builds the controller and registers its Node event handlers; Run
// starts it.
func New(o Options) (*Controller, error) {
	registerMetrics()
	c := &Controller{
		client:    o.Client,
		instances: o.Instances,
		recorder:  o.Recorder,
		cloud:     o.Cloud,
		hint:      o.Hint,
		nodes:     o.Nodes.Lister(),
		synced:    o.Nodes.Informer().HasSynced,
		queue:     workers.Queue("node_ipam", o.RetryBase, retryBase, o.RetryMax, retryMax),
		now:       time.Now,
	}
	_, err := o.Nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, cur any) { c.enqueue(cur) },
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// enqueue takes the Nodes upstream's handlers take: without a pod CIDR,
// or not yet marked network-available. One without a providerID waits for
// the cloud node controller to set it; that update brings it back.
func (c *Controller) enqueue(obj any) {
	n, ok := obj.(*v1.Node)
	if ok && pending(n) {
		c.queue.Add(n.Name)
	}
}

func pending(n *v1.Node) bool {
	if n.Spec.ProviderID == "" || n.DeletionTimestamp != nil {
		return false
	}
	return len(current(n)) == 0 || !networkAvailable(n)
}

// Run works until ctx is done.
func (c *Controller) Run(ctx context.Context, n int) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	if n <= 0 {
		n = defaultWorkers
	}
	klog.InfoS("Starting controller", "controller", ControllerName, "driver", c.cloud)
	if !cache.WaitForNamedCacheSync(ControllerName, ctx.Done(), c.synced) {
		return
	}
	workers.Run(ctx, c.queue, n, func(ctx context.Context, name string) bool {
		r := c.sync(ctx, name)
		syncs.WithLabelValues(string(r.result)).Inc()
		if r.err != nil {
			klog.ErrorS(r.err, "Could not set a Node's pod CIDRs", "controller", ControllerName, "node", name, "retry", r.retry)
		}
		return r.retry
	})
}

// result labels the syncs metric.
type result string

const (
	resultNothing    result = "nothing_to_do"
	resultAssigned   result = "assigned"
	resultAvailable  result = "network_available"
	resultNoRange    result = "no_range"
	resultMismatch   result = "mismatch"
	resultLookupErr  result = "lookup_failed"
	resultAPIRefused result = "api_failed"
)

type outcome struct {
	result result
	retry  bool
	err    error // logged
}

// sync brings one Node in line with its instance.
func (c *Controller) sync(ctx context.Context, name string) outcome {
	node, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return outcome{result: resultNothing}
	}
	if err != nil {
		return outcome{resultAPIRefused, true, err}
	}
	if !pending(node) {
		return outcome{result: resultNothing}
	}
	inst, err := c.instances.Lookup(ctx, instances.Key{ProviderID: node.Spec.ProviderID, NodeName: node.Name})
	switch {
	case err != nil && cloudapi.KindOf(err) == cloudapi.KindInvalid:
		// Definitive (a providerID not the cloud's, say), so the Node
		// hears why; still retried, in case the refusal was the cloud's
		// passing mistake.
		c.recorder.Eventf(node, v1.EventTypeWarning, ReasonCIDRNotAvailable,
			"Node %s gets no pod CIDRs: %s cannot look up its instance %s: %v", node.Name, c.cloud, node.Spec.ProviderID, err)
		return outcome{resultLookupErr, true, err}
	case err != nil:
		// Ambiguous: nothing is written, no event blames the Node.
		return outcome{resultLookupErr, true, err}
	case inst == nil:
		c.recorder.Eventf(node, v1.EventTypeWarning, ReasonCIDRNotAvailable,
			"Node %s gets no pod CIDRs: %s has no instance %s", node.Name, c.cloud, node.Spec.ProviderID)
		return outcome{result: resultNoRange, retry: true}
	}
	want, err := podCIDRs(inst.PodCIDRs)
	if err != nil || len(want) == 0 {
		why := ""
		if err != nil {
			why = " (" + err.Error() + ")"
		}
		c.recorder.Eventf(node, v1.EventTypeWarning, ReasonCIDRNotAvailable,
			"Node %s gets no pod CIDRs: its %s instance %s has no pod range for the cluster%s; give it %s, or turn controllers.nodeIPAM off and allocate pod CIDRs another way",
			node.Name, c.cloud, inst.ProviderID, why, c.hint)
		return outcome{result: resultNoRange, retry: true}
	}

	r := outcome{result: resultAvailable}
	if have := current(node); len(have) == 0 {
		if err := c.patchSpec(ctx, node, want); err != nil {
			return c.refused(node, err)
		}
		klog.InfoS("Set the Node's pod CIDRs from its instance", "controller", ControllerName, "node", node.Name, "podCIDRs", want)
		r.result = resultAssigned
	} else if !slices.Equal(canonical(have), want) {
		// Immutable: upstream's patch would be refused. Not marked
		// network-available either: the Node's pods would not be routed.
		c.recorder.Eventf(node, v1.EventTypeWarning, ReasonCIDRAssignmentFailed,
			"Node %s has pod CIDRs %s but its %s instance %s has %s; pod CIDRs cannot change, so delete the Node and let it register again",
			node.Name, strings.Join(have, ","), c.cloud, inst.ProviderID, strings.Join(want, ","))
		return outcome{result: resultMismatch}
	}
	if !networkAvailable(node) {
		if err := c.patchCondition(ctx, node); err != nil {
			return c.refused(node, err)
		}
	}
	return r
}

// refused sorts an API server error: a Node gone or replaced is done
// with; anything else is tried again.
func (c *Controller) refused(node *v1.Node, err error) outcome {
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Replaced under the same name: its own events bring it back.
		return outcome{result: resultNothing}
	case apierrors.IsInvalid(err):
		c.recorder.Eventf(node, v1.EventTypeWarning, ReasonCIDRAssignmentFailed, "Could not set Node %s's pod CIDRs: %v", node.Name, err)
	}
	return outcome{resultAPIRefused, true, err}
}

// patchSpec sets both CIDR fields, with the UID as a precondition so a
// Node deleted and registered again meanwhile is left to its own sync.
func (c *Controller) patchSpec(ctx context.Context, node *v1.Node, cidrs []string) error {
	body, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": node.UID},
		"spec":     map[string]any{"podCIDR": cidrs[0], "podCIDRs": cidrs},
	})
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, body, metav1.PatchOptions{})
	return err
}

// patchCondition sets NetworkUnavailable to False; a strategic merge
// patch merges conditions by type, leaving the kubelet's alone.
func (c *Controller) patchCondition(ctx context.Context, node *v1.Node) error {
	now := metav1.NewTime(c.now())
	cond := v1.NodeCondition{
		Type:               v1.NodeNetworkUnavailable,
		Status:             v1.ConditionFalse,
		Reason:             conditionReason,
		Message:            conditionMessage,
		LastTransitionTime: now,
		LastHeartbeatTime:  now,
	}
	body, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": node.UID},
		"status":   map[string]any{"conditions": []v1.NodeCondition{cond}},
	})
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Nodes().PatchStatus(ctx, node.Name, body)
	return err
}

// current is the Node's pod CIDRs; podCIDR alone on Nodes from before
// podCIDRs.
func current(n *v1.Node) []string {
	if len(n.Spec.PodCIDRs) > 0 {
		return n.Spec.PodCIDRs
	}
	if n.Spec.PodCIDR != "" {
		return []string{n.Spec.PodCIDR}
	}
	return nil
}

func networkAvailable(n *v1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeNetworkUnavailable {
			return c.Status == v1.ConditionFalse
		}
	}
	return false
}

// podCIDRs checks a driver's ranges as upstream's
// updateNodePodCIDRWithCidrStrings does: CIDRs, at most two, and two of
// different families. They come back in canonical form.
func podCIDRs(cidrs []string) ([]string, error) {
	if len(cidrs) > 2 {
		return nil, fmt.Errorf("%d ranges %s: at most one IPv4 and one IPv6", len(cidrs), strings.Join(cidrs, ","))
	}
	out := make([]string, len(cidrs))
	var fams []bool
	for i, s := range cidrs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("range %q is not a CIDR", s)
		}
		out[i] = p.Masked().String()
		fams = append(fams, p.Addr().Is4())
	}
	if len(fams) == 2 && fams[0] == fams[1] {
		return nil, errors.New("ranges " + strings.Join(cidrs, ",") + " are not one IPv4 and one IPv6")
	}
	return out, nil
}

// canonical spells CIDRs as podCIDRs does, so "fd00:0::/112" equals
// "fd00::/112"; an unparsable one is kept as is and never equal.
func canonical(cidrs []string) []string {
	out := make([]string, len(cidrs))
	for i, s := range cidrs {
		if p, err := netip.ParsePrefix(s); err == nil {
			s = p.Masked().String()
		}
		out[i] = s
	}
	return out
}

var (
	syncs = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "polyccm",
		Subsystem:      "node_ipam",
		Name:           "syncs_total",
		Help:           "Node pod CIDR syncs, by result: assigned, network_available, nothing_to_do, no_range, mismatch, lookup_failed, api_failed.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"result"})

	metricsOnce sync.Once
)

func registerMetrics() {
	metricsOnce.Do(func() { legacyregistry.MustRegister(syncs) })
}
