package volumelabels_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/controllers/volumelabels"
	"github.com/polyccm/polyccm/core/volumes"
)

const csiDriver = "disk.example.com"

// source is a cloud whose disks are "disk-<zone>" in region "r1";
// "missing-*" do not exist, and "flaky-*" fail while flaky is set.
type source struct {
	mu      sync.Mutex
	batches [][]volumes.Key
	flaky   atomic.Bool
}

func (s *source) VolumeKey(pv *v1.PersistentVolume) (volumes.Key, bool, error) {
	h, ok := volumes.CSIHandle(pv, csiDriver)
	if !ok {
		return volumes.Key{}, false, nil
	}
	if h == "" || strings.Contains(h, " ") {
		return volumes.Key{}, true, fmt.Errorf("volume handle %q is not a disk name", h)
	}
	return volumes.Key{ID: h}, true, nil
}

func (s *source) LookupVolumes(_ context.Context, keys []volumes.Key) (volumes.Answer, error) {
	s.mu.Lock()
	s.batches = append(s.batches, slices.Clone(keys))
	s.mu.Unlock()
	out := make([]volumes.Result, len(keys))
	for i, k := range keys {
		switch {
		case strings.HasPrefix(k.ID, "missing-"):
		case strings.HasPrefix(k.ID, "flaky-") && s.flaky.Load():
			out[i].Err = &cloudapi.Error{Kind: cloudapi.KindUnavailable, Status: 503, Err: errors.New("503")}
		default:
			zone := k.ID[strings.LastIndexByte(k.ID, '-')+1:]
			out[i].Volume = &volumes.Volume{ID: k.ID, Zones: strings.Split(zone, "+"), Region: "r1"}
		}
	}
	return volumes.Answer{Results: out}, nil
}

func (s *source) lookedUp() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, b := range s.batches {
		for _, k := range b {
			out = append(out, k.ID)
		}
	}
	slices.Sort(out)
	return out
}

func (s *source) batchCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.batches)
}

func pv(name, driver, handle string, labels map[string]string) *v1.PersistentVolume {
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Labels: labels},
		Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
			CSI: &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: handle},
		}},
	}
}

func zr(zone, region string) map[string]string {
	return map[string]string{v1.LabelTopologyZone: zone, v1.LabelTopologyRegion: region}
}

type env struct {
	t    *testing.T
	kube *k8sfake.Clientset
	src  *source
	rec  *record.FakeRecorder
}

func start(t *testing.T, src *source, pvs ...*v1.PersistentVolume) *env {
	t.Helper()
	e := &env{t: t, kube: k8sfake.NewClientset(), src: src, rec: record.NewFakeRecorder(100)}
	for _, p := range pvs {
		if err := e.kube.Tracker().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	factory := informers.NewSharedInformerFactory(e.kube, 0)
	vs := volumes.New(src, volumes.Options{Driver: "fake", BatchWindow: 20 * time.Millisecond, CacheTTL: time.Hour, Timeout: 10 * time.Second})
	c, err := volumelabels.New(volumelabels.Options{
		Client:            e.kube,
		PersistentVolumes: factory.Core().V1().PersistentVolumes(),
		Volumes:           vs,
		Recorder:          e.rec,
		RetryBase:         10 * time.Millisecond,
		RetryMax:          50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	go c.Run(ctx, 0)
	return e
}

func (e *env) labels(name string) map[string]string {
	e.t.Helper()
	p, err := e.kube.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return p.Labels
}

func (e *env) waitLabels(name string, want map[string]string) {
	e.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return maps.Equal(e.labels(name), want), nil
	})
	if err != nil {
		e.t.Fatalf("%s has labels %v, want %v", name, e.labels(name), want)
	}
}

// patches are the bodies of the patches sent, by PV name.
func (e *env) patches() map[string][]string {
	out := map[string][]string{}
	for _, a := range e.kube.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok {
			out[p.GetName()] = append(out[p.GetName()], string(p.GetPatch()))
		}
	}
	return out
}

func (e *env) waitEvent(want string) {
	e.t.Helper()
	select {
	case ev := <-e.rec.Events:
		if !strings.Contains(ev, want) {
			e.t.Fatalf("event %q, want one containing %q", ev, want)
		}
	case <-time.After(10 * time.Second):
		e.t.Fatalf("no event %q", want)
	}
}

func (e *env) noEvents() {
	e.t.Helper()
	select {
	case ev := <-e.rec.Events:
		e.t.Errorf("unexpected event %q", ev)
	default:
	}
}

func TestLabelsPVsOfTheCloud(t *testing.T) {
	src := &source{}
	e := start(t, src,
		pv("bare", csiDriver, "disk-z1", nil),
		pv("other-labels", csiDriver, "disk-z2", map[string]string{"team": "a"}),
		pv("regional", csiDriver, "disk-z2+z1", nil),
		pv("right", csiDriver, "disk-z1", zr("z1", "r1")),
		pv("wrong-zone", csiDriver, "disk-z3", zr("z1", "r1")),
		pv("foreign", "nfs.example.com", "disk-z1", nil),
	)
	e.waitLabels("bare", zr("z1", "r1"))
	e.waitLabels("other-labels", map[string]string{"team": "a", v1.LabelTopologyZone: "z2", v1.LabelTopologyRegion: "r1"})
	e.waitLabels("regional", zr("z1__z2", "r1"))
	e.waitLabels("wrong-zone", zr("z3", "r1"))

	// Wait for every lookup (the right PV's too) before judging patches.
	wantLookups := []string{"disk-z1", "disk-z2", "disk-z2+z1", "disk-z3"}
	if err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return slices.Equal(slices.Compact(src.lookedUp()), wantLookups), nil
	}); err != nil {
		t.Fatalf("looked up %v, want %v (the foreign PV never)", src.lookedUp(), wantLookups)
	}
	time.Sleep(100 * time.Millisecond)
	p := e.patches()
	if len(p["right"]) != 0 || len(p["foreign"]) != 0 {
		t.Errorf("patched PVs that needed nothing: %v", p)
	}
	// Only the label that differs, with the UID as a precondition.
	if got, want := p["wrong-zone"], []string{`{"metadata":{"labels":{"topology.kubernetes.io/zone":"z3"},"uid":"uid-wrong-zone"}}`}; !slices.Equal(got, want) {
		t.Errorf("wrong-zone patches = %v, want %v", got, want)
	}
	if e.labels("foreign") != nil {
		t.Errorf("the foreign PV got labels %v", e.labels("foreign"))
	}
	// PVs seen together share batches.
	if n := src.batchCount(); n > 2 {
		t.Errorf("%d lookup batches for one burst of PVs", n)
	}
	e.noEvents()
}

func TestMissingDiskGetsAWarningOnly(t *testing.T) {
	e := start(t, &source{}, pv("gone", csiDriver, "missing-z1", map[string]string{"keep": "me"}))
	e.waitEvent("Warning DiskNotFound The fake disk missing-z1 does not exist")
	time.Sleep(100 * time.Millisecond)
	if p := e.patches(); len(p) != 0 {
		t.Errorf("patches %v for a PV whose disk is missing", p)
	}
	if got := e.labels("gone"); !maps.Equal(got, map[string]string{"keep": "me"}) {
		t.Errorf("labels %v", got)
	}
}

func TestInvalidHandleGetsAWarningAndNoLookup(t *testing.T) {
	src := &source{}
	e := start(t, src, pv("bad", csiDriver, "not a disk", nil))
	e.waitEvent("Warning InvalidVolumeID")
	time.Sleep(100 * time.Millisecond)
	if got := src.lookedUp(); len(got) != 0 {
		t.Errorf("looked up %v", got)
	}
}

func TestAmbiguousFailuresAreRetried(t *testing.T) {
	src := &source{}
	src.flaky.Store(true)
	e := start(t, src, pv("flaky", csiDriver, "flaky-z1", nil))
	if err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return len(src.lookedUp()) >= 3, nil
	}); err != nil {
		t.Fatal("the failed lookup was not retried")
	}
	if p := e.patches(); len(p) != 0 {
		t.Errorf("patched on an ambiguous failure: %v", p)
	}
	e.noEvents()
	src.flaky.Store(false)
	e.waitLabels("flaky", zr("z1", "r1"))
}

func TestLabelsRemovedByHandAreRestored(t *testing.T) {
	e := start(t, &source{}, pv("edited", csiDriver, "disk-z1", nil))
	e.waitLabels("edited", zr("z1", "r1"))
	p, err := e.kube.CoreV1().PersistentVolumes().Get(context.Background(), "edited", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Labels = map[string]string{v1.LabelTopologyRegion: "r1"}
	if _, err := e.kube.CoreV1().PersistentVolumes().Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitLabels("edited", zr("z1", "r1"))
}
