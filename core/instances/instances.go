// Package instances implements cloudprovider.InstancesV2 once for every
// driver. The upstream node controllers ask about one node at a time; here
// those questions are answered from a short-lived cache or coalesced into
// batch lookups against the driver's Source, so N nodes joining together
// cost about N/batch-size cloud calls instead of N.
package instances

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	v1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/polyccm/polyccm/core/batch"
	"github.com/polyccm/polyccm/core/cloudapi"
)

// Key names the instance behind a Node: by provider ID when the Node has
// one, else by the Node's name.
type Key struct {
	ProviderID string
	NodeName   string
}

func (k Key) String() string {
	if k.ProviderID != "" {
		return k.ProviderID
	}
	return "node " + k.NodeName
}

// Instance is what a driver knows about one cloud instance.
type Instance struct {
	ProviderID   string
	Name         string // the cloud's name, matched against Node names; "" if names are not unique
	InstanceType string
	Zone         string
	Region       string
	Addresses    []v1.NodeAddress
	Shutdown     bool
	Labels       map[string]string
	// PodCIDRs are the pod ranges the cloud gives the instance (GCE's
	// alias IP ranges), in the cluster's IP family order; nil when it
	// gives none. Only a PodCIDRSource fills them.
	PodCIDRs []string
}

// Result answers one Key. Instance nil with Err nil means the cloud says
// definitively that there is no such instance.
type Result struct {
	Instance *Instance
	Err      error
}

// Answer is a driver's reply to a batch lookup.
type Answer struct {
	// Results is aligned with the keys asked for.
	Results []Result
	// Seen lists other instances the call happened to return (a listing
	// returns whole pages); they are cached so later lookups are free.
	Seen []Instance
}

// Source is the one thing a driver implements for nodes: resolve many keys
// in as few cloud calls as it can. A returned error fails the whole batch
// and is ambiguous. A key the driver cannot resolve for sure gets a Result
// with Err set, never Instance == nil.
type Source interface {
	LookupInstances(ctx context.Context, keys []Key) (Answer, error)
}

// PodCIDRSource is a Source whose clouds allocate pod ranges to instances
// (VPC-native networking), so its Instances carry PodCIDRs for the
// node-ipam controller. Other drivers need not implement it.
type PodCIDRSource interface {
	Source
	// PodCIDRHint says what gives an instance its pod ranges, for the
	// event on a Node whose instance has none.
	PodCIDRHint() string
}

// Options configure batching and caching.
type Options struct {
	Driver      string
	BatchWindow time.Duration
	BatchSize   int
	CacheTTL    time.Duration
	// Timeout bounds a whole batched lookup, retries included, as a last
	// resort (batch.Options.Timeout); 0 is its default. One cloud call's
	// time is bounded by the cloud client (cloudAPI.timeout), not here.
	Timeout time.Duration
}

// Instances is the batched, cached InstancesV2 for one driver.
type Instances struct {
	driver string
	lookup *batch.Lookup[Key, *Instance]
	ttl    time.Duration
}

// NotReadyRecheck is how old an answer about a NotReady Node's instance may
// be, once it was learnt after the Node went NotReady. The lifecycle
// controller asks about every NotReady Node every few seconds: the first
// question after the Node turns NotReady goes to the cloud (so a deleted or
// stopped instance is seen at once), later ones are answered from what
// that learnt for this long. A Node NotReady for hours (a broken kubelet)
// costs a lookup per NotReadyRecheck, not one per cache TTL.
const NotReadyRecheck = 5 * time.Minute

var _ cloudprovider.InstancesV2 = (*Instances)(nil)

// New returns Instances over src.
func New(src Source, o Options) *Instances {
	return &Instances{
		driver: o.Driver,
		ttl:    o.CacheTTL,
		lookup: batch.NewLookup(sourceOf(src), batch.LookupOptions[Key, *Instance]{
			Driver: o.Driver,
			Kind:   "instance",
			Batch: batch.Options{
				Window:  o.BatchWindow,
				MaxSize: o.BatchSize,
				Timeout: o.Timeout,
			},
			CacheTTL:   o.CacheTTL,
			Keep:       NotReadyRecheck,
			IsNotFound: IsNotFound,
			Keys:       identities,
			// Answers are indexed by the instance's own identities too, so
			// a Node first looked up by name is found by its provider ID
			// afterwards.
			IndexAnswers: true,
			CacheKey:     cacheKey,
			Metrics:      "instances",
		}),
	}
}

// sourceOf adapts src to the shape batch.Lookup asks for.
func sourceOf(src Source) batch.Source[Key, *Instance] {
	return func(ctx context.Context, keys []Key) (batch.Answer[*Instance], error) {
		ans, err := src.LookupInstances(ctx, keys)
		result := func(i int) (*Instance, error) { return ans.Results[i].Instance, ans.Results[i].Err }
		return batch.AnswerOf(len(ans.Results), result, ans.Seen), err
	}
}

// identities are the keys an instance is known by: its provider ID and,
// where names are unique, its name.
func identities(inst *Instance) []Key {
	if inst == nil {
		return nil
	}
	var ks []Key
	if inst.ProviderID != "" {
		ks = append(ks, Key{ProviderID: inst.ProviderID})
	}
	if inst.Name != "" {
		ks = append(ks, Key{NodeName: inst.Name})
	}
	return ks
}

// cacheKey is the key k is cached under: its provider ID when it has one,
// else its node name, so the same instance asked about with and without
// the node name shares one entry.
func cacheKey(k Key) Key {
	if k.ProviderID != "" {
		return Key{ProviderID: k.ProviderID}
	}
	return Key{NodeName: k.NodeName}
}

// Lookup returns the instance behind key; (nil, nil) means it definitively
// does not exist. Other controllers (CSR approval, volume labels) use it too.
func (in *Instances) Lookup(ctx context.Context, key Key) (*Instance, error) {
	return in.lookup.Get(ctx, key)
}

// Forget drops what the cache knows about node's instance, so the next
// question about it goes to the cloud.
func (in *Instances) Forget(node *v1.Node) { in.lookup.Forget(keyOf(node)) }

func keyOf(node *v1.Node) Key {
	return Key{ProviderID: node.Spec.ProviderID, NodeName: node.Name}
}

func (in *Instances) lookupNode(ctx context.Context, node *v1.Node) (*Instance, error) {
	inst, err := in.Lookup(ctx, keyOf(node))
	if err != nil {
		return nil, fmt.Errorf("looking up the %s instance of node %q: %w", in.driver, node.Name, err)
	}
	return inst, nil
}

// lifecycleLookup is the lookup the node lifecycle controller's questions
// make: for a Node that is not Ready, an answer learnt since it stopped
// being Ready, kept up to NotReadyRecheck; else as any lookup.
func (in *Instances) lifecycleLookup(ctx context.Context, node *v1.Node) (*Instance, error) {
	age := in.ttl
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady && c.Status != v1.ConditionTrue && !c.LastTransitionTime.IsZero() && in.ttl > 0 {
			age = min(max(time.Since(c.LastTransitionTime.Time), 0), max(NotReadyRecheck, in.ttl))
		}
	}
	inst, err := in.lookup.GetWithin(ctx, keyOf(node), age)
	if err != nil {
		return nil, fmt.Errorf("looking up the %s instance of node %q: %w", in.driver, node.Name, err)
	}
	return inst, nil
}

// InstanceExists is false only on a definitive not-found; any doubt is an
// error, so the node lifecycle controller never deletes a Node on it.
func (in *Instances) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	inst, err := in.lifecycleLookup(ctx, node)
	if err != nil {
		return false, err
	}
	return inst != nil, nil
}

// InstanceShutdown reports whether the node's instance is stopped.
func (in *Instances) InstanceShutdown(ctx context.Context, node *v1.Node) (bool, error) {
	inst, err := in.lifecycleLookup(ctx, node)
	if err != nil {
		return false, err
	}
	if inst == nil {
		return false, fmt.Errorf("node %q: %w", node.Name, cloudprovider.InstanceNotFound)
	}
	return inst.Shutdown, nil
}

// InstanceMetadata returns what the cloud node controller puts on a Node.
func (in *Instances) InstanceMetadata(ctx context.Context, node *v1.Node) (*cloudprovider.InstanceMetadata, error) {
	inst, err := in.lookupNode(ctx, node)
	if err != nil {
		return nil, err
	}
	if inst == nil {
		return nil, fmt.Errorf("node %q has no %s instance: %w", node.Name, in.driver, cloudprovider.InstanceNotFound)
	}
	return &cloudprovider.InstanceMetadata{
		ProviderID:       inst.ProviderID,
		InstanceType:     inst.InstanceType,
		NodeAddresses:    append([]v1.NodeAddress(nil), inst.Addresses...),
		Zone:             inst.Zone,
		Region:           inst.Region,
		AdditionalLabels: maps.Clone(inst.Labels),
	}, nil
}

// IsNotFound reports whether err means the instance definitively does not
// exist, whichever layer said so.
func IsNotFound(err error) bool {
	return errors.Is(err, cloudprovider.InstanceNotFound) || cloudapi.IsNotFound(err)
}
