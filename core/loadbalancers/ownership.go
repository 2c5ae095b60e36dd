// Package loadbalancers holds what every driver's load balancer code
// shares: the ownership rule (which cloud load balancer a Service may
// change or delete), the record of ownership for clouds whose load
// balancers cannot carry it, and the reporting of work still in progress.
package loadbalancers

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/klog/v2"
)

// Event reasons of the ownership rule.
const (
	// ReasonNotOwned: the Service asked for a load balancer that is not
	// its own; nothing was changed or deleted.
	ReasonNotOwned = "LoadBalancerNotOwned"
	// ReasonAdopted: an unmarked load balancer was taken over because the
	// operator allowed it.
	ReasonAdopted = "LoadBalancerAdopted"
)

// AdoptKey is the config key that allows adopting unmarked load balancers.
const AdoptKey = "services.adoptUnmarkedLoadBalancers"

// Resource is a cloud resource a Service is about to change or delete, as
// the driver read it from the cloud.
type Resource struct {
	// Kind names what it is in messages: "load balancer", "target group".
	Kind string
	// ID is how the cloud identifies it (an ID, an ARN, a name).
	ID string
	// Name is its name, where the cloud has one besides the ID.
	Name string
	// Addresses are what it serves on (IPs, DNS names), to match the
	// Services whose status shows them.
	Addresses []string
	// Marks is true when the cloud shows the resource's cluster marks
	// (tags, a name prefix): then one without this cluster's mark is not
	// proven this cluster's, whatever its name. DigitalOcean's API does
	// not return a load balancer's tags, so there it is false.
	Marks bool
	// OurCluster is true when its marks say this cluster owns it;
	// OtherCluster names another cluster they name instead; Shared says
	// this cluster's mark is there but only shares it (AWS's "shared").
	OurCluster   bool
	OtherCluster string
	Shared       bool
	// Service is the Service its own marks name ("namespace/name", from a
	// tag or a description), if any.
	Service string
	// UIDMark is the UID of the Service its name was derived from (the
	// UID without dashes, or the start of it; see UIDMark), if any.
	UIDMark string
	// Via says how the Service came to ask for it, for messages: "the
	// annotation kubernetes.digitalocean.com/load-balancer-id". Empty:
	// by the name polyccm derives from the Service.
	Via string
}

func (r Resource) describe() string {
	switch {
	case r.Name != "" && r.Name != r.ID:
		return fmt.Sprintf("%s %s (%s)", r.Kind, r.Name, r.ID)
	case r.ID != "":
		return r.Kind + " " + r.ID
	}
	return r.Kind + " " + r.Name
}

// uidNameRE is the shape of cloudprovider.DefaultLoadBalancerName: "a"
// and the Service UID without dashes, cut to 32 characters.
var uidNameRE = regexp.MustCompile(`^a([0-9a-f]{31,32})$`)

// UIDMark returns the Service UID (without dashes, possibly cut short) a
// load balancer name was derived from by cloudprovider's default naming,
// or "" when the name is not of that shape. A UID is random and never
// reused, so such a name marks one Service, in one cluster, for good.
func UIDMark(name string) string {
	if m := uidNameRE.FindStringSubmatch(name); m != nil {
		return m[1]
	}
	return ""
}

// DefaultName is the load balancer name upstream CCMs derive from a
// Service: "a" + its UID without dashes, at most 32 characters.
func DefaultName(svc *v1.Service) string { return cloudprovider.DefaultLoadBalancerName(svc) }

func compactUID(svc *v1.Service) string { return strings.ReplaceAll(string(svc.UID), "-", "") }

// Options configure an Ownership.
type Options struct {
	// Cloud names the cloud in messages, e.g. "DigitalOcean".
	Cloud string
	// Informers give the cluster's Services (the shared informer the
	// service controller uses too). Nil: they are listed through the
	// client on each check, which is fine for tests only.
	Informers informers.SharedInformerFactory
	// Clients gives the Kubernetes client that writes records and reads a
	// Service afresh.
	Clients cloudprovider.ControllerClientBuilder
	// Recorder emits the events on Services.
	Recorder record.EventRecorder
	// AdoptUnmarked is services.adoptUnmarkedLoadBalancers.
	AdoptUnmarked bool
	// Records is true for a cloud whose load balancers cannot carry marks
	// polyccm can read back (DigitalOcean's API does not return a load
	// balancer's tags): the Service then keeps polyccm's record of which
	// load balancer is its own (see Record).
	Records bool
	// Asks returns the annotation by which svc asks for r, or "". Anyone
	// who may edit a Service can write one, so an annotation alone proves
	// nothing.
	Asks func(svc *v1.Service, r Resource) string
	// MarksOf describes the marks a resource of svc carries, for messages:
	// "tagged kubernetes.io/cluster/prod=owned and
	// kubernetes.io/service-name=shop/web". Nil where the cloud shows none.
	MarksOf func(svc *v1.Service) string
}

// Ownership applies the one rule every driver follows before it changes or
// deletes a cloud load balancer for a Service: the load balancer must
// belong to this cluster and to this Service, or nobody may claim it and
// the operator must have allowed adopting it.
//
// What counts as proof, strongest first:
//   - the resource's own marks: a name derived from the Service's UID, or a
//     tag or description naming the Service (only polyccm or the CCM it
//     replaces writes those);
//   - polyccm's record on the Service (a status condition; Record);
//   - the Service's status showing the resource's address (only the
//     service controller writes status).
//
// An annotation naming the resource proves nothing on its own: anyone who
// can create a Service can write one.
type Ownership struct {
	o      Options
	lister corelisters.ServiceLister
	kubeMu sync.Mutex
	kube   kubernetes.Interface
}

// NewOwnership builds the rule for one driver. It registers the Services
// informer, so call it before the informers start.
func NewOwnership(o Options) *Ownership {
	ow := &Ownership{o: o}
	if o.Informers != nil {
		ow.lister = o.Informers.Core().V1().Services().Lister()
	}
	if o.Asks == nil {
		ow.o.Asks = func(*v1.Service, Resource) string { return "" }
	}
	return ow
}

func (ow *Ownership) client() (kubernetes.Interface, error) {
	ow.kubeMu.Lock()
	defer ow.kubeMu.Unlock()
	if ow.kube == nil {
		if ow.o.Clients == nil {
			return nil, errors.New("no Kubernetes client to keep the load balancer's owner on the Service")
		}
		k, err := ow.o.Clients.Client("polyccm-load-balancers")
		if err != nil {
			return nil, err
		}
		ow.kube = k
	}
	return ow.kube, nil
}

// services lists every Service of the cluster.
func (ow *Ownership) services(ctx context.Context) ([]*v1.Service, error) {
	if ow.lister != nil {
		return ow.lister.List(labels.Everything())
	}
	kube, err := ow.client()
	if err != nil {
		return nil, err
	}
	list, err := kube.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]*v1.Service, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// Verdict is what the rule allows.
type Verdict int

const (
	// Refused: not this Service's to change or delete.
	Refused Verdict = iota
	// Owned: this Service's.
	Owned
	// Adopted: nobody's; adopting it was allowed. The driver marks it as
	// this Service's where the cloud can carry marks.
	Adopted
)

// decision is the rule's answer with its grounds.
type decision struct {
	verdict Verdict
	why     string // the grounds, for messages
	fix     string // what to do, for a refusal
	// unproven: decided for want of proof either way (only annotations
	// point at it), so proof that turns up may change it.
	unproven bool
}

// NotOwnedError is the refusal: the resource is not the Service's, and
// nothing was changed or deleted.
type NotOwnedError struct {
	Service  string // namespace/name of the Service that asked
	Resource string // what was refused, e.g. "load balancer web (4de7...)"
	Why      string
	Fix      string
}

func (e *NotOwnedError) Error() string {
	msg := fmt.Sprintf("%s is not Service %s's to change or delete: %s; nothing was changed", e.Resource, e.Service, e.Why)
	if e.Fix != "" {
		msg += ": " + e.Fix
	}
	return msg
}

// IsNotOwned reports whether err is (or wraps) a refusal by the rule.
func IsNotOwned(err error) bool {
	var no *NotOwnedError
	return errors.As(err, &no)
}

// Check applies the rule to r for svc before a change. It returns Owned or
// Adopted, or a *NotOwnedError after recording a Warning event on svc. For
// a cloud that keeps records, it records an owned or adopted r on svc.
// Only a failure to list Services or to write the record is another error.
func (ow *Ownership) Check(ctx context.Context, svc *v1.Service, r Resource) (Verdict, error) {
	v, err := ow.Verify(ctx, svc, r)
	if err != nil {
		return v, err
	}
	if ow.o.Records && r.ID != "" && !recordHolds(svc, r) {
		if err := ow.Record(ctx, svc, r); err != nil {
			return Refused, err
		}
	}
	return v, nil
}

// Verify is Check without writing a record: for a Service that only
// reports a load balancer it leaves alone (DigitalOcean's disown).
func (ow *Ownership) Verify(ctx context.Context, svc *v1.Service, r Resource) (Verdict, error) {
	d, err := ow.decideFresh(ctx, svc, r)
	if err != nil {
		return Refused, err
	}
	switch d.verdict {
	case Refused:
		err := &NotOwnedError{Service: svc.Namespace + "/" + svc.Name, Resource: ow.o.Cloud + " " + r.describe(), Why: d.why, Fix: d.fix}
		ow.event(svc, v1.EventTypeWarning, ReasonNotOwned, err.Error())
		klog.InfoS("Refused a load balancer that is not the Service's", "service", klog.KObj(svc), "resource", r.describe(), "why", d.why)
		return Refused, err
	case Adopted:
		klog.InfoS("Adopting an unmarked load balancer", "service", klog.KObj(svc), "resource", r.describe(), "setting", AdoptKey)
		ow.event(svc, v1.EventTypeNormal, ReasonAdopted, fmt.Sprintf("Adopted %s %s, which nothing marked as another's (%s is true)", ow.o.Cloud, r.describe(), AdoptKey))
	}
	return d.verdict, nil
}

// CheckDelete applies the rule before deleting r for a Service that is
// going away. It returns true when r may be deleted. A refusal is not an
// error: the load balancer stays, with a Warning event saying why, and the
// Service may go.
func (ow *Ownership) CheckDelete(ctx context.Context, svc *v1.Service, r Resource) (bool, error) {
	d, err := ow.decideFresh(ctx, svc, r)
	if err != nil {
		return false, err
	}
	if d.verdict == Owned {
		return true, nil
	}
	why := d.why
	if d.verdict == Adopted {
		why = "nothing marks it as this Service's, and polyccm never deletes a load balancer it only would have adopted"
	}
	ow.event(svc, v1.EventTypeWarning, ReasonNotOwned, fmt.Sprintf("Not deleting %s %s: %s", ow.o.Cloud, r.describe(), why))
	klog.InfoS("Not deleting a load balancer that is not the Service's", "service", klog.KObj(svc), "resource", r.describe(), "why", why)
	return false, nil
}

// Owns reports, without side effects, whether r is svc's by the rule (an
// unmarked r counts only if adopting is allowed). For GetLoadBalancer.
func (ow *Ownership) Owns(ctx context.Context, svc *v1.Service, r Resource) (bool, error) {
	d, err := ow.decideFresh(ctx, svc, r)
	if err != nil {
		return false, err
	}
	return d.verdict != Refused, nil
}

// decideFresh decides; a refusal for want of proof is decided again on
// the Service as the API server has it now, since the copy the controller
// passed may predate polyccm's own record.
func (ow *Ownership) decideFresh(ctx context.Context, svc *v1.Service, r Resource) (decision, error) {
	all, err := ow.services(ctx)
	if err != nil {
		return decision{}, fmt.Errorf("listing Services to check who owns %s: %w", r.describe(), err)
	}
	d := decide(svc, r, all, ow.o)
	if !d.unproven || !ow.o.Records {
		return d, nil
	}
	kube, err := ow.client()
	if err != nil {
		return d, nil
	}
	fresh, err := kube.CoreV1().Services(svc.Namespace).Get(ctx, svc.Name, metav1.GetOptions{})
	if err != nil || fresh.UID != svc.UID {
		return d, nil
	}
	return decide(fresh, r, all, ow.o), nil
}

func (ow *Ownership) event(svc *v1.Service, kind, reason, msg string) {
	if ow.o.Recorder != nil {
		ow.o.Recorder.Event(svc, kind, reason, msg)
	}
}

// decide is the rule itself, on the Services of the cluster as listed
// (svc among them or not).
func decide(svc *v1.Service, r Resource, all []*v1.Service, o Options) decision {
	key := svc.Namespace + "/" + svc.Name
	asks, adopt := o.Asks, o.AdoptUnmarked
	// notMarked says which marks it lacks, where the cloud has marks.
	notMarked := ""
	if o.MarksOf != nil {
		notMarked = "; it is not " + o.MarksOf(svc)
	}
	unmarkedFix := fmt.Sprintf("set %s: true to take it over (see docs/load-balancer-ownership.md), or delete it", AdoptKey)
	others := slices.DeleteFunc(slices.Clone(all), func(o *v1.Service) bool { return o.UID == svc.UID })
	slices.SortFunc(others, func(a, b *v1.Service) int { return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name) })
	removeVia := "remove the reference to it from this Service"
	if r.Via != "" {
		removeVia = "remove " + r.Via + " from this Service"
	}
	refuse := func(fix, format string, args ...any) decision {
		return decision{verdict: Refused, why: fmt.Sprintf(format, args...), fix: fix}
	}

	// 1. Another cluster's.
	switch {
	case r.OurCluster:
	case r.OtherCluster != "":
		return refuse(removeVia, "it is marked as cluster %q's, not this cluster's%s", r.OtherCluster, notMarked)
	case r.Shared:
		return refuse(removeVia, "this cluster only shares it (it is marked shared, not owned), and polyccm changes only what the cluster owns%s", notMarked)
	}

	// 2. The resource's own marks name a Service.
	markedThis := false
	if r.UIDMark != "" {
		if strings.HasPrefix(compactUID(svc), r.UIDMark) {
			markedThis = true
		} else {
			if o := byUID(others, r.UIDMark); o != nil {
				return refuse(removeVia, "its name was derived from the UID of Service %s/%s%s", o.Namespace, o.Name, notMarked)
			}
			return refuse(removeVia, "its name was derived from the UID of a Service that is not in this cluster (another cluster's, or one deleted without its load balancer)%s", notMarked)
		}
	}
	if r.Service != "" {
		switch {
		case r.Service == key:
			markedThis = true
		case markedThis:
			return refuse("fix or remove the mark on the cloud resource", "its name was derived from this Service's UID but its marks name Service %s%s", r.Service, notMarked)
		default:
			o := byKey(others, r.Service)
			if o != nil {
				return refuse(removeVia, "its marks name Service %s%s", r.Service, notMarked)
			}
			return refuse(removeVia, "its marks name Service %s, which is not this one%s", r.Service, notMarked)
		}
	}
	if markedThis {
		if r.Marks && !r.OurCluster {
			// Named for this Service, but the cloud shows no mark of this
			// cluster on it: adopted only if allowed.
			if adopt {
				return decision{verdict: Adopted, why: "it carries no cluster mark and adopting is allowed"}
			}
			return refuse(unmarkedFix, "it carries no mark of this cluster, and polyccm adopts such a resource only when %s is true%s", AdoptKey, notMarked)
		}
		return decision{verdict: Owned, why: "its own marks name this Service"}
	}

	// 3. Another Service's proof: polyccm's record, or its status.
	for _, o := range others {
		if recordMatches(o, r) {
			return refuse(removeVia, "polyccm recorded it as Service %s/%s's", o.Namespace, o.Name)
		}
	}
	for _, o := range others {
		if addr := statusShows(o, r.Addresses); addr != "" {
			return refuse(removeVia, "Service %s/%s's status shows its address %s", o.Namespace, o.Name, addr)
		}
	}

	// 4. This Service's proof.
	if recordMatches(svc, r) {
		return decision{verdict: Owned, why: "polyccm recorded it as this Service's"}
	}
	if statusShows(svc, r.Addresses) != "" {
		return decision{verdict: Owned, why: "this Service's status shows its address"}
	}

	// 5. Only annotations: nobody may take what another also asks for.
	d := func() decision {
		for _, o := range others {
			if via := asks(o, r); via != "" {
				return refuse("remove the annotation from the Service that should not have it", "Service %s/%s asks for it too (%s), and nothing shows whose it is", o.Namespace, o.Name, via)
			}
		}
		if r.OurCluster {
			return decision{verdict: Owned, why: "it is marked as this cluster's and no other Service claims it"}
		}
		if r.Marks && !adopt {
			return refuse(unmarkedFix, "it carries no mark of this cluster, and polyccm adopts such a resource only when %s is true%s", AdoptKey, notMarked)
		}
		if adopt {
			return decision{verdict: Adopted, why: "nothing marks it and adopting is allowed"}
		}
		return refuse(
			fmt.Sprintf("set %s: true to take it over (see docs/load-balancer-ownership.md), or %s to get a load balancer of its own", AdoptKey, removeVia),
			"nothing marks it as this cluster's or this Service's, and polyccm adopts such a load balancer only when %s is true", AdoptKey)
	}()
	d.unproven = true
	return d
}

func byUID(svcs []*v1.Service, mark string) *v1.Service {
	for _, o := range svcs {
		if strings.HasPrefix(compactUID(o), mark) {
			return o
		}
	}
	return nil
}

func byKey(svcs []*v1.Service, key string) *v1.Service {
	for _, o := range svcs {
		if o.Namespace+"/"+o.Name == key {
			return o
		}
	}
	return nil
}

// statusShows returns the first of addrs the Service's status shows.
func statusShows(svc *v1.Service, addrs []string) string {
	for _, in := range svc.Status.LoadBalancer.Ingress {
		for _, a := range addrs {
			if a != "" && (in.IP == a || strings.EqualFold(in.Hostname, a)) {
				return a
			}
		}
	}
	return ""
}

// CheckAddresses refuses addresses (IPs, allocation IDs) that svc asks for
// through via (e.g. "spec.loadBalancerIP") when the load balancer of a
// Service in another namespace holds them: held returns what a Service's
// load balancer holds (its status addresses, say). Services of one
// namespace, one tenant, may share an address where the cloud allows it
// (a TCP and a UDP Service on one static IP, as upstream CCMs allow). The
// refusal is a *NotOwnedError after a Warning event on svc; the other
// Service is left as it is.
func (ow *Ownership) CheckAddresses(ctx context.Context, svc *v1.Service, via string, want []string, held func(*v1.Service) []string) error {
	if len(want) == 0 {
		return nil
	}
	all, err := ow.services(ctx)
	if err != nil {
		return fmt.Errorf("listing Services to check who holds %s: %w", strings.Join(want, ", "), err)
	}
	slices.SortFunc(all, func(a, b *v1.Service) int { return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name) })
	for _, o := range all {
		if o.UID == svc.UID || o.Namespace == svc.Namespace {
			continue
		}
		for _, h := range held(o) {
			if h == "" || !slices.Contains(want, h) {
				continue
			}
			err := &NotOwnedError{
				Service:  svc.Namespace + "/" + svc.Name,
				Resource: ow.o.Cloud + " address " + h,
				Why:      fmt.Sprintf("the load balancer of Service %s/%s holds it", o.Namespace, o.Name),
				Fix:      "change " + via + " to an address no other Service uses",
			}
			ow.event(svc, v1.EventTypeWarning, ReasonNotOwned, err.Error())
			return err
		}
	}
	return nil
}

// StatusAddresses is what a Service's status shows of its load balancer:
// the usual held function of CheckAddresses.
func StatusAddresses(svc *v1.Service) []string {
	var out []string
	for _, in := range svc.Status.LoadBalancer.Ingress {
		if in.IP != "" {
			out = append(out, in.IP)
		}
	}
	return out
}

// Refuse records a refusal the driver found in the cloud itself (an
// address another load balancer uses, say) as the rule's own refusals
// are: a Warning event on svc, and a *NotOwnedError.
func (ow *Ownership) Refuse(svc *v1.Service, what, why, fix string) error {
	err := &NotOwnedError{Service: svc.Namespace + "/" + svc.Name, Resource: what, Why: why, Fix: fix}
	ow.event(svc, v1.EventTypeWarning, ReasonNotOwned, err.Error())
	return err
}

// ServiceByUIDMark returns the Service of the cluster whose UID a resource
// name was derived from (see UIDMark), or nil.
func (ow *Ownership) ServiceByUIDMark(ctx context.Context, mark string) (*v1.Service, error) {
	if mark == "" {
		return nil, nil
	}
	all, err := ow.services(ctx)
	if err != nil {
		return nil, err
	}
	return byUID(all, mark), nil
}
