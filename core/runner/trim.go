package runner

import (
	"math/rand/v2"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
)

// trimForCache drops from an object, before the shared informers cache
// it, what no polyccm controller reads: managedFields on every object, and
// a Node's status.images (kubelets list up to 50 images with their sizes).
// At thousands of Nodes they are most of the cache. Writes are unaffected:
// controllers patch from diffs, and an update without managedFields keeps
// the server's.
func trimForCache(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	if n, ok := obj.(*v1.Node); ok {
		n.Status.Images = nil
	}
	return obj, nil
}

// trimmedInformers is the shared informer factory the controller manager
// would build (its resync: MinResyncPeriod times a random 1 to 2, drawn
// once for the factory, as upstream's), caching trimmed objects.
func trimmedInformers(client kubernetes.Interface, minResync time.Duration) informers.SharedInformerFactory {
	resync := time.Duration(float64(minResync) * (1 + rand.Float64()))
	return informers.NewSharedInformerFactoryWithOptions(client, resync, informers.WithTransform(trimForCache))
}
