// Package volumelabels labels PersistentVolumes backed by the cloud's disks
// with the zone and region of the disk (topology.kubernetes.io/zone and
// /region), so the scheduler's VolumeZone filter puts the pods that use
// them where the disk can be attached. It is the CCM design's
// PersistentVolumeLabel controller, which Kubernetes no longer ships.
//
// Only PVs whose disk belongs to the configured cloud are touched (the
// driver says which, see volumes.Source); only their two labels are
// written, with a merge patch, and only when they differ. A disk the cloud
// definitively does not have gets a Warning event on its PV and nothing
// else; an ambiguous failure is retried with backoff.
package volumelabels

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
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
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/controllers/workers"
	"github.com/polyccm/polyccm/core/volumes"
)

// ControllerName is the controller's name among the upstream ones (logs,
// health checks, the controller manager's controller list).
const ControllerName = "volume-labels-controller"

// Event reasons.
const (
	// ReasonDiskNotFound: the cloud definitively has no such disk.
	ReasonDiskNotFound = "DiskNotFound"
	// ReasonInvalidVolumeID: the PV is this cloud's but names no disk in
	// a form the cloud knows. A PV's source cannot change, so it is not
	// looked at again.
	ReasonInvalidVolumeID = "InvalidVolumeID"
)

const (
	// Lookups are batched across workers: more workers mean bigger
	// batches at start (every PV is seen at once), not more cloud calls.
	defaultWorkers = 50
	retryBase      = time.Second
	retryMax       = 5 * time.Minute
)

// Options are what the controller needs.
type Options struct {
	Client kubernetes.Interface
	// PersistentVolumes is the shared PV informer.
	PersistentVolumes coreinformers.PersistentVolumeInformer
	// Volumes is core's batched, cached disk lookup over the driver.
	Volumes  *volumes.Volumes
	Recorder record.EventRecorder
	// RetryBase and RetryMax bound the backoff after ambiguous failures;
	// zero means 1s and 5m.
	RetryBase, RetryMax time.Duration
}

// Controller keeps PV topology labels in line with the cloud.
type Controller struct {
	client   kubernetes.Interface
	volumes  *volumes.Volumes
	recorder record.EventRecorder
	pvs      corelisters.PersistentVolumeLister
	synced   cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
}

// New builds the controller and registers its PV event handlers; Run
// starts it.
func New(o Options) (*Controller, error) {
	c := &Controller{
		client:   o.Client,
		volumes:  o.Volumes,
		recorder: o.Recorder,
		pvs:      o.PersistentVolumes.Lister(),
		synced:   o.PersistentVolumes.Informer().HasSynced,
		queue:    workers.Queue("volume_labels", o.RetryBase, retryBase, o.RetryMax, retryMax),
	}
	_, err := o.PersistentVolumes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueue,
		UpdateFunc: func(old, cur any) {
			// Status updates (Bound, Released) and resyncs say nothing
			// new about the disk; labels changed by someone else do.
			o, ok1 := old.(*v1.PersistentVolume)
			n, ok2 := cur.(*v1.PersistentVolume)
			if ok1 && ok2 && maps.Equal(o.Labels, n.Labels) {
				return
			}
			c.enqueue(cur)
		},
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller) enqueue(obj any) {
	pv, ok := obj.(*v1.PersistentVolume)
	if !ok {
		return
	}
	if _, ours, _ := c.volumes.KeyOf(pv); ours {
		c.queue.Add(pv.Name)
	}
}

// Run works until ctx is done.
func (c *Controller) Run(ctx context.Context, n int) {
	defer utilruntime.HandleCrash()
	defer c.queue.ShutDown()
	if n <= 0 {
		n = defaultWorkers
	}
	klog.InfoS("Starting controller", "controller", ControllerName, "driver", c.volumes.Driver())
	if !cache.WaitForNamedCacheSync(ControllerName, ctx.Done(), c.synced) {
		return
	}
	workers.Run(ctx, c.queue, n, func(ctx context.Context, name string) bool {
		if err := c.sync(ctx, name); err != nil {
			klog.ErrorS(err, "Could not label a PersistentVolume; will retry", "controller", ControllerName, "pv", name)
			return true
		}
		return false
	})
}

// sync labels one PV. An error means "try again later".
func (c *Controller) sync(ctx context.Context, name string) error {
	pv, err := c.pvs.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pv.DeletionTimestamp != nil {
		return nil
	}
	key, ours, err := c.volumes.KeyOf(pv)
	if !ours {
		return nil
	}
	if err != nil {
		c.recorder.Eventf(pv, v1.EventTypeWarning, ReasonInvalidVolumeID, "Not labelled with the disk's zone and region: %v", err)
		return nil
	}
	vol, err := c.volumes.Lookup(ctx, key)
	if err != nil {
		return fmt.Errorf("looking up %s disk %s: %w", c.volumes.Driver(), key, err)
	}
	if vol == nil {
		c.recorder.Eventf(pv, v1.EventTypeWarning, ReasonDiskNotFound, "The %s disk %s does not exist; not labelled with its zone and region", c.volumes.Driver(), key)
		return nil
	}
	want := vol.Labels()
	patch := map[string]string{}
	for k, v := range want {
		if pv.Labels[k] != v {
			patch[k] = v
		}
	}
	if len(patch) == 0 {
		return nil
	}
	// Only the labels that differ, and the UID as a precondition, so a PV
	// deleted and made again under the same name meanwhile is left alone.
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": pv.UID, "labels": patch}})
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().PersistentVolumes().Patch(ctx, pv.Name, types.MergePatchType, body, metav1.PatchOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case apierrors.IsConflict(err):
		// The UID precondition failed: another PV now has the name, and
		// its own add event brings it here.
		klog.V(2).InfoS("PersistentVolume replaced while labelling it", "pv", pv.Name)
		return nil
	case apierrors.IsInvalid(err):
		// Asking again would be refused again.
		klog.ErrorS(err, "The API server refused the PersistentVolume's topology labels", "pv", pv.Name, "labels", patch)
		return nil
	case err != nil:
		return err
	}
	klog.V(2).InfoS("Labelled PersistentVolume with its disk's topology", "pv", pv.Name, "disk", key, "labels", patch)
	return nil
}
