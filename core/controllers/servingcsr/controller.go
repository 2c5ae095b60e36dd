// Package servingcsr approves kubelet serving-certificate requests (signer
// kubernetes.io/kubelet-serving) that the cloud can vouch for: the node
// asks for its own name, in the shape kube-controller-manager's signer
// accepts, and every DNS name and IP address in the request is an address
// the cloud reports for that node's instance. kube-controller-manager never
// approves this signer itself, because only the cloud knows a node's
// addresses; that is the "chicken and egg" the CCM design leaves open.
//
// A forged request (a non-node, or a node naming another node) is denied; any
// other request that fails a check is left pending with an event saying why,
// for a person or another approver. The controller never signs anything.
package servingcsr

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	certv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	certinformers "k8s.io/client-go/informers/certificates/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/controllers/workers"
)

// ControllerName is the controller's name among the upstream ones (logs,
// health checks, the controller manager's controller list).
const ControllerName = "kubelet-serving-csr-approving-controller"

const (
	// Requests are few (one per node per certificate rotation), but a
	// whole node pool joining at once should share batched cloud lookups,
	// which needs concurrent workers.
	defaultWorkers = 4
	// retryFor is how long after its creation a request that may yet pass
	// (its Node or its addresses not there yet, the cloud unreachable) is
	// looked at again. The kubelet waits 15 minutes for a certificate and
	// then asks again with a new request, so an older one is abandoned.
	retryFor = 15 * time.Minute
	// Retry backoff: the first retry catches a Node registering a moment
	// after its request; later ones wait for the cloud.
	retryBase = 2 * time.Second
	retryMax  = 2 * time.Minute
)

// Options are what the controller needs.
type Options struct {
	Client kubernetes.Interface
	// Nodes is the shared Node informer (the node controllers use it too).
	Nodes coreinformers.NodeInformer
	// Instances is core's batched, cached InstancesV2.
	Instances cloudprovider.InstancesV2
	Recorder  record.EventRecorder
	// Cloud names the driver in approval messages.
	Cloud string
}

// Controller approves, denies or leaves kubelet serving requests.
type Controller struct {
	client    kubernetes.Interface
	instances cloudprovider.InstancesV2
	recorder  record.EventRecorder
	cloud     string

	nodes       corelisters.NodeLister
	nodesSynced cache.InformerSynced
	csrInformer cache.SharedIndexInformer
	csrs        certlisters.CertificateSigningRequestLister
	queue       workqueue.TypedRateLimitingInterface[string]

	retryFor time.Duration
	now      func() time.Time
}

// New builds the controller and registers its informers; Run starts it.
func New(o Options) (*Controller, error) {
	registerMetrics()
	c := &Controller{
		client:      o.Client,
		instances:   o.Instances,
		recorder:    o.Recorder,
		cloud:       o.Cloud,
		nodes:       o.Nodes.Lister(),
		nodesSynced: o.Nodes.Informer().HasSynced,
		queue:       workers.Queue("kubelet_serving_csr", 0, retryBase, 0, retryMax),
		retryFor:    retryFor,
		now:         time.Now,
	}
	// Its own informer, filtered by the API server to this signer, so the
	// (far more numerous) client-certificate requests are never fetched.
	c.csrInformer = certinformers.NewFilteredCertificateSigningRequestInformer(o.Client, 0, cache.Indexers{},
		func(lo *metav1.ListOptions) {
			lo.FieldSelector = fields.OneTermEqualSelector("spec.signerName", SignerName).String()
		})
	c.csrs = certlisters.NewCertificateSigningRequestLister(c.csrInformer.GetIndexer())
	if _, err := c.csrInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
	}); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller) enqueue(obj any) {
	csr, ok := obj.(*certv1.CertificateSigningRequest)
	if !ok || csr.Spec.SignerName != SignerName || !Undecided(csr) {
		return
	}
	c.queue.Add(csr.Name)
}

// Run works until ctx is done.
func (c *Controller) Run(ctx context.Context, n int) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	if n <= 0 {
		n = defaultWorkers
	}
	go c.csrInformer.RunWithContext(ctx)
	klog.InfoS("Starting controller", "controller", ControllerName, "signer", SignerName)
	if !cache.WaitForNamedCacheSync(ControllerName, ctx.Done(), c.csrInformer.HasSynced, c.nodesSynced) {
		return
	}
	workers.Run(ctx, c.queue, n, c.sync)
}

// sync decides on one request and acts; it returns whether to look again.
func (c *Controller) sync(ctx context.Context, name string) (again bool) {
	csr, err := c.csrs.Get(name)
	if err != nil {
		return false // deleted
	}
	if csr.Spec.SignerName != SignerName || !Undecided(csr) {
		return false
	}
	mayRetry := c.now().Sub(csr.CreationTimestamp.Time) < c.retryFor

	v, err := c.decide(ctx, csr)
	if err != nil {
		// Ambiguous (throttled, unreachable, a 5xx): never a reason to
		// approve, deny or give up early.
		decisions.WithLabelValues(Leave.String(), ReasonLookupFailed).Inc()
		c.recorder.Eventf(csr, v1.EventTypeWarning, ReasonLookupFailed, "Could not verify the request's addresses with %s yet: %v", c.cloud, err)
		klog.ErrorS(err, "Could not verify a kubelet serving certificate request", "csr", name, "retry", mayRetry)
		return mayRetry
	}
	decisions.WithLabelValues(v.Outcome.String(), v.Reason).Inc()
	switch v.Outcome {
	case Approve, Deny:
		if err := c.setCondition(ctx, csr, v); err != nil {
			if apierrors.IsNotFound(err) {
				return false
			}
			// A conflict means a newer version is on its way; anything
			// else (RBAC, the API server) is worth another try.
			klog.ErrorS(err, "Could not record the decision on a kubelet serving certificate request", "csr", name, "decision", v.Outcome)
			return true
		}
		if v.Outcome == Deny {
			c.recorder.Event(csr, v1.EventTypeWarning, v.Reason, "Denied: "+v.Message)
		}
		klog.InfoS("Kubelet serving certificate request "+v.Outcome.String(), "csr", name, "reason", v.Reason, "message", v.Message)
		return false
	default:
		c.recorder.Event(csr, v1.EventTypeWarning, v.Reason, "Not approved: "+v.Message)
		klog.V(2).InfoS("Kubelet serving certificate request left pending", "csr", name, "reason", v.Reason, "message", v.Message, "retry", v.Retry && mayRetry)
		return v.Retry && mayRetry
	}
}

// decide checks the request, then the Node and the cloud. An error means
// the cloud or the API server gave no clear answer.
func (c *Controller) decide(ctx context.Context, csr *certv1.CertificateSigningRequest) (*Verdict, error) {
	req, v := Inspect(csr)
	if v != nil {
		return v, nil
	}
	node, err := c.node(ctx, req.NodeName)
	if apierrors.IsNotFound(err) {
		return leave(ReasonNodeNotFound, true, "there is no Node %q to look up in %s", req.NodeName, c.cloud), nil
	}
	if err != nil {
		return nil, fmt.Errorf("getting Node %q: %w", req.NodeName, err)
	}
	// A kubelet chooses its Node's providerID when it registers; one that
	// names another node's instance would borrow that instance's addresses.
	if pid := node.Spec.ProviderID; pid != "" {
		if others, err := c.sharing(node); err != nil {
			return nil, err
		} else if len(others) > 0 {
			return leave(ReasonProviderIDShared, true, "Node %q's providerID %s is also that of Node %s, so its instance's addresses do not identify one node",
				node.Name, pid, strings.Join(others, ", ")), nil
		}
	}
	md, err := c.instances.InstanceMetadata(ctx, node)
	if errors.Is(err, cloudprovider.InstanceNotFound) {
		return leave(ReasonInstanceNotFound, true, "%s reports no instance for Node %q", c.cloud, node.Name), nil
	}
	if err != nil {
		return nil, err
	}
	if md == nil {
		return nil, fmt.Errorf("%s returned no metadata for Node %q", c.cloud, node.Name)
	}
	instance := md.ProviderID
	if instance == "" {
		instance = "(no provider ID)"
	}
	if missing := req.Unverified(md.NodeAddresses); len(missing) > 0 {
		return leave(ReasonAddressUnverified, true, "%s does not report %s for Node %q's instance %s, which has %s",
			c.cloud, strings.Join(missing, ", "), node.Name, instance, addressList(md.NodeAddresses)), nil
	}
	return &Verdict{Outcome: Approve, Reason: ReasonApproved, Message: fmt.Sprintf(
		"polyccm verified with %s that %s are addresses of Node %q's instance %s",
		c.cloud, strings.Join(req.names(), ", "), node.Name, instance)}, nil
}

// node reads the Node from the shared cache, or from the API server when
// the cache has not seen a Node registered a moment ago.
func (c *Controller) node(ctx context.Context, name string) (*v1.Node, error) {
	n, err := c.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	}
	return n, err
}

// sharing names the other Nodes with node's providerID.
func (c *Controller) sharing(node *v1.Node) ([]string, error) {
	all, err := c.nodes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var others []string
	for _, n := range all {
		if n.Name != node.Name && n.Spec.ProviderID == node.Spec.ProviderID {
			others = append(others, n.Name)
		}
	}
	return others, nil
}

func (c *Controller) setCondition(ctx context.Context, csr *certv1.CertificateSigningRequest, v *Verdict) error {
	typ := certv1.CertificateApproved
	if v.Outcome == Deny {
		typ = certv1.CertificateDenied
	}
	csr = csr.DeepCopy()
	csr.Status.Conditions = append(csr.Status.Conditions, certv1.CertificateSigningRequestCondition{
		Type:           typ,
		Status:         v1.ConditionTrue,
		Reason:         v.Reason,
		Message:        v.Message,
		LastUpdateTime: metav1.NewTime(c.now()),
	})
	_, err := c.client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
	return err
}

func (r *Request) names() []string {
	out := append([]string(nil), r.DNSNames...)
	for _, ip := range r.IPs {
		out = append(out, ip.String())
	}
	return out
}

func addressList(addrs []v1.NodeAddress) string {
	if len(addrs) == 0 {
		return "no addresses"
	}
	var parts []string
	for _, a := range addrs {
		parts = append(parts, string(a.Type)+" "+a.Address)
	}
	return strings.Join(parts, ", ")
}

var (
	decisions = metrics.NewCounterVec(&metrics.CounterOpts{
		Namespace:      "polyccm",
		Subsystem:      "kubelet_serving_csr",
		Name:           "decisions_total",
		Help:           "Decisions on kubelet serving certificate requests, by outcome (approved, denied, pending) and reason; a pending request counts once per look.",
		StabilityLevel: metrics.ALPHA,
	}, []string{"outcome", "reason"})

	metricsOnce sync.Once
)

func registerMetrics() {
	metricsOnce.Do(func() { legacyregistry.MustRegister(decisions) })
}
