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

// Options configure batching and caching.
type Options struct {
	Driver      string
	BatchWindow time.Duration
	BatchSize   int
	CacheTTL    time.Duration
	Timeout     time.Duration
}

// Instances is the batched, cached InstancesV2 for one driver.
type Instances struct {
	driver  string
	src     Source
	cache   *cache
	batcher *batch.Batcher[Key, Result]
}

var _ cloudprovider.InstancesV2 = (*Instances)(nil)

// New returns Instances over src.
func New(src Source, o Options) *Instances {
	registerMetrics()
	in := &Instances{driver: o.Driver, src: src, cache: newCache(o.CacheTTL)}
	in.batcher = batch.New(in.fetch, batch.Options{
		Window:  o.BatchWindow,
		MaxSize: o.BatchSize,
		Timeout: o.Timeout,
		Observe: func(n int) { batchSize.WithLabelValues(o.Driver).Observe(float64(n)) },
	})
	return in
}

func (in *Instances) fetch(ctx context.Context, keys []Key) ([]Result, error) {
	ans, err := in.src.LookupInstances(ctx, keys)
	if err != nil {
		if IsNotFound(err) {
			// A batch error is ambiguous for every key (see Source) even
			// when it says "not found" (say, a listing that 404ed): drop
			// the kind so no Node is deleted on it.
			return nil, fmt.Errorf("driver %s failed a batch of %d instance lookups: %v", in.driver, len(keys), err)
		}
		return nil, err
	}
	if len(ans.Results) != len(keys) {
		return nil, fmt.Errorf("driver %s answered %d of %d instance lookups", in.driver, len(ans.Results), len(keys))
	}
	now := time.Now()
	for i := range ans.Seen {
		in.cache.putInstance(&ans.Seen[i], now)
	}
	for i := range ans.Results {
		r := &ans.Results[i]
		if r.Err != nil && IsNotFound(r.Err) {
			// A per-key not-found is as definitive as a nil instance;
			// one form keeps every caller consistent.
			r.Instance, r.Err = nil, nil
		}
		if r.Err != nil {
			continue
		}
		in.cache.put(keys[i], r.Instance, now)
	}
	return ans.Results, nil
}

// Lookup returns the instance behind key; (nil, nil) means it definitively
// does not exist. Other controllers (CSR approval, volume labels) use it too.
func (in *Instances) Lookup(ctx context.Context, key Key) (*Instance, error) {
	if inst, ok := in.cache.get(key); ok {
		lookups.WithLabelValues(in.driver, "cache").Inc()
		return inst, nil
	}
	lookups.WithLabelValues(in.driver, "cloud").Inc()
	r, err := in.batcher.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	return r.Instance, r.Err
}

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

// InstanceExists is false only on a definitive not-found; any doubt is an
// error, so the node lifecycle controller never deletes a Node on it.
func (in *Instances) InstanceExists(ctx context.Context, node *v1.Node) (bool, error) {
	inst, err := in.lookupNode(ctx, node)
	if err != nil {
		return false, err
	}
	return inst != nil, nil
}

// InstanceShutdown reports whether the node's instance is stopped.
func (in *Instances) InstanceShutdown(ctx context.Context, node *v1.Node) (bool, error) {
	inst, err := in.lookupNode(ctx, node)
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
