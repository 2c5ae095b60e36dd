package loadbalancers

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	cloudprovider "k8s.io/cloud-provider"
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
	lb := Newest(rec, corelisters.NewServiceLister(idx))
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
