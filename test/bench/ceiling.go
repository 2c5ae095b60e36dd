package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/polyccm/polyccm/test/simcloud"
)

// ceilingResult is the bare client's run: the same Node writes polyccm
// made (an update of the spec and labels, a patch of the addresses), to
// Nodes registered beforehand, with no cloud, no client-side rate limit
// and no registrations competing: the most the apiserver takes.
type ceilingResult struct {
	Workers      int     `json:"workers"`
	TotalSeconds float64 `json:"totalSeconds"`
	// NodesPerSecond is N over TotalSeconds.
	NodesPerSecond float64      `json:"nodesPerSecond"`
	Curve          [][2]float64 `json:"curve"`
}

// ceiling deletes polyccm's Nodes, registers them again (not timed), then
// times workers writing to each what polyccm wrote into final.
func ceiling(ctx context.Context, o options, kube kubernetes.Interface, nodes []simcloud.Node, final []v1.Node) (*ceilingResult, error) {
	want := make(map[string]*v1.Node, len(final))
	for i := range final {
		want[final[i].Name] = &final[i]
	}
	if err := kube.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return nil, fmt.Errorf("deleting polyccm's Nodes: %w", err)
	}
	for {
		l, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return nil, err
		}
		if len(l.Items) == 0 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	registered := make([]*v1.Node, len(nodes))
	if err := register(ctx, kube, nodes, o.Creators, func(i int, n *v1.Node) { registered[i] = n }); err != nil {
		return nil, err
	}

	done := make([]time.Time, len(nodes))
	var next, finished atomic.Int64
	errs := make(chan error, o.Workers)
	var wg sync.WaitGroup
	t0 := time.Now()
	for range o.Workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(registered) {
					return
				}
				if err := initialize(ctx, kube, registered[i], want[registered[i].Name]); err != nil {
					errs <- err
					return
				}
				done[i] = time.Now()
				finished.Add(1)
			}
		})
	}
	stop := make(chan struct{})
	go func() {
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				progressf(o, "N=%d: bare client: initialized %d/%d · %d workers · %s", len(nodes), finished.Load(), len(nodes), o.Workers, time.Since(t0).Round(100*time.Millisecond))
			}
		}
	}()
	wg.Wait()
	close(stop)
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	ts := make([]float64, len(done))
	for i, t := range done {
		ts[i] = t.Sub(t0).Seconds()
	}
	total := slices.Max(ts)
	progressf(o, "N=%d: bare client: initialized %d/%d · %d workers · %.1fs", len(nodes), len(nodes), len(nodes), o.Workers, total)
	return &ceilingResult{Workers: o.Workers, TotalSeconds: round3(total), NodesPerSecond: round3(float64(len(nodes)) / total), Curve: curveOf(ts, 200)}, nil
}

// initialize writes what polyccm wrote: the spec (providerID, taint gone)
// and labels in one update, then the addresses as a status patch.
func initialize(ctx context.Context, kube kubernetes.Interface, n, want *v1.Node) error {
	if want == nil {
		return fmt.Errorf("node %s: polyccm left no such Node to copy", n.Name)
	}
	u := n.DeepCopy()
	u.Spec.ProviderID = want.Spec.ProviderID
	u.Spec.Taints = nil
	for k, v := range want.Labels {
		if u.Labels == nil {
			u.Labels = map[string]string{}
		}
		u.Labels[k] = v
	}
	if _, err := kube.CoreV1().Nodes().Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating node %s: %w", n.Name, err)
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"addresses": want.Status.Addresses}})
	if err != nil {
		return err
	}
	if _, err := kube.CoreV1().Nodes().Patch(ctx, n.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("patching the addresses of node %s: %w", n.Name, err)
	}
	return nil
}
