package loadbalancers

import (
	"context"
	"errors"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/polyccm/polyccm/core/cloudapi"
)

// updates records the Services UpdateLoadBalancer was given.
type updates struct {
	cloudprovider.LoadBalancer
	got []*v1.Service
}

func (u *updates) UpdateLoadBalancer(_ context.Context, _ string, svc *v1.Service, _ []*v1.Node) error {
	u.got = append(u.got, svc)
	return nil
}

func lbService(uid string, ports ...int32) *v1.Service {
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: types.UID(uid)}, Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer}}
	for _, p := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, v1.ServicePort{Port: p})
	}
	return svc
}

func TestNodeSyncUsesTheNewestService(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	rec := &updates{}
	lb := Rules(rec, RuleOptions{Services: corelisters.NewServiceLister(idx)})
	stale := lbService("u1", 80)
	newer := lbService("u1", 80, 443)
	if err := idx.Add(newer); err != nil {
		t.Fatal(err)
	}
	if err := lb.UpdateLoadBalancer(context.Background(), "c", stale, nil); err != nil {
		t.Fatal(err)
	}
	if len(rec.got) != 1 || len(rec.got[0].Spec.Ports) != 2 {
		t.Fatalf("driver got %+v, want the newest Service with both ports", rec.got)
	}

	// Recreated, being deleted, no longer a load balancer, gone: skipped.
	recreated := lbService("u2", 80)
	deleting := lbService("u1", 80)
	deleting.DeletionTimestamp = &metav1.Time{}
	clusterIP := lbService("u1", 80)
	clusterIP.Spec.Type = v1.ServiceTypeClusterIP
	for _, cur := range []*v1.Service{recreated, deleting, clusterIP, nil} {
		_ = idx.Delete(newer)
		_ = idx.Delete(recreated)
		if cur != nil {
			if err := idx.Add(cur); err != nil {
				t.Fatal(err)
			}
		}
		rec.got = nil
		if err := lb.UpdateLoadBalancer(context.Background(), "c", stale, nil); err != nil || len(rec.got) != 0 {
			t.Errorf("current %+v: err %v, driver called with %d Services; want skipped", cur, err, len(rec.got))
		}
	}
}

// creating is a driver that tries to create on every call, as a driver
// whose load balancer is missing does, and records the Nodes it got.
type creating struct {
	cloudprovider.LoadBalancer
	nodes [][]string
}

func (c *creating) call(ctx context.Context, nodes []*v1.Node) error {
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	c.nodes = append(c.nodes, names)
	return cloudapi.New(cloudapi.Options{Driver: "fake", Classify: func(error) cloudapi.Classification { return cloudapi.Classification{} }}).Do(ctx, "lb.create", func(context.Context) error { return nil }, cloudapi.Creates())
}

func (c *creating) EnsureLoadBalancer(ctx context.Context, _ string, _ *v1.Service, nodes []*v1.Node) (*v1.LoadBalancerStatus, error) {
	return &v1.LoadBalancerStatus{}, c.call(ctx, nodes)
}

func (c *creating) UpdateLoadBalancer(ctx context.Context, _ string, _ *v1.Service, nodes []*v1.Node) error {
	return c.call(ctx, nodes)
}

// The rules every driver gets: excluded Nodes never reach it, the node
// sync never creates (and that is no error), and a Service being deleted
// or no longer a load balancer is not synced.
func TestRules(t *testing.T) {
	ctx := context.Background()
	nodes := []*v1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "a"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "out", Labels: map[string]string{v1.LabelNodeExcludeBalancers: "true"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: map[string]string{v1.LabelNodeExcludeBalancers: "false"}}},
	}
	d := &creating{}
	lb := Rules(d, RuleOptions{})
	svc := lbService("u1", 80)
	if _, err := lb.EnsureLoadBalancer(ctx, "c", svc, nodes); err != nil {
		t.Fatalf("EnsureLoadBalancer creates: %v", err)
	}
	if err := lb.UpdateLoadBalancer(ctx, "c", svc, nodes); err != nil {
		t.Fatalf("UpdateLoadBalancer = %v; a skipped create is success", err)
	}
	for i, got := range d.nodes {
		if want := []string{"a", "b"}; !slices.Equal(got, want) {
			t.Errorf("call %d got Nodes %v, want %v", i, got, want)
		}
	}
	// A skipped create is still an error to the driver itself: the rule
	// lives in the wrapper.
	if err := d.UpdateLoadBalancer(cloudapi.WithoutCreates(ctx), "c", svc, nil); !errors.Is(err, cloudapi.ErrCreateSkipped) {
		t.Errorf("a create under WithoutCreates = %v, want ErrCreateSkipped", err)
	}

	deleting := lbService("u1", 80)
	deleting.DeletionTimestamp = &metav1.Time{}
	clusterIP := lbService("u1", 80)
	clusterIP.Spec.Type = v1.ServiceTypeClusterIP
	d.nodes = nil
	for _, s := range []*v1.Service{deleting, clusterIP} {
		if err := lb.UpdateLoadBalancer(ctx, "c", s, nodes); err != nil {
			t.Fatal(err)
		}
	}
	if len(d.nodes) != 0 {
		t.Errorf("the driver was called %d times for Services not to sync", len(d.nodes))
	}
}
