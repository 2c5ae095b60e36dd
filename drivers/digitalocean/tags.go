package digitalocean

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/digitalocean/godo"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
)

// tagSyncPeriod is the DigitalOcean CCM's: the cluster tag is a label for
// DigitalOcean's tooling, not something traffic depends on.
const tagSyncPeriod = 15 * time.Minute

// tagTask keeps the k8s:<clusterID> tag on the cluster's load balancers,
// as the DigitalOcean CCM's tag syncer does: the API takes tags only when
// a load balancer is made, so ones made before the cluster ID was set, or
// by another release, get it here.
func (c *Cloud) tagTask() (driver.Task, bool) {
	if c.cfg.ClusterID == "" || c.lbs.deps.Informers == nil {
		return driver.Task{}, false
	}
	return driver.Task{Name: "digitalocean-cluster-tag", Run: c.runTagSync}, true
}

func (c *Cloud) runTagSync(ctx context.Context) {
	inf := c.lbs.deps.Informers.Core().V1().Services()
	lister := inf.Lister()
	if !cache.WaitForCacheSync(ctx.Done(), inf.Informer().HasSynced) {
		return
	}
	tag := clusterTag(c.cfg.ClusterID)
	wait.JitterUntilWithContext(ctx, func(ctx context.Context) {
		n, err := c.syncTags(ctx, lister)
		switch {
		case err != nil && ctx.Err() == nil:
			klog.ErrorS(err, "Tagging load balancers with the cluster tag failed; trying again later", "tag", tag, "retryIn", tagSyncPeriod)
		case n > 0:
			klog.InfoS("Tagged load balancers with the cluster tag", "tag", tag, "count", n)
		}
	}, tagSyncPeriod, 0.1, true)
}

// syncTags tags the load balancers the Services record (by the ID
// annotation) that are theirs by the ownership rule: an annotation alone
// may name another cluster's load balancer, which must never carry this
// cluster's tag (DigitalOcean's tooling acts on it). It returns how many
// it tagged. Disowned Services' load balancers are left alone.
func (c *Cloud) syncTags(ctx context.Context, services corelisters.ServiceLister) (int, error) {
	svcs, err := services.List(labels.Everything())
	if err != nil {
		return 0, err
	}
	byID := map[string]*v1.Service{}
	for _, svc := range svcs {
		if svc.Spec.Type != v1.ServiceTypeLoadBalancer || svc.Annotations[AnnDisown] == "true" {
			continue
		}
		if id := svc.Annotations[AnnLoadBalancerID]; id != "" {
			byID[id] = svc
		}
	}
	if len(byID) == 0 {
		return 0, nil
	}
	// Listed first: a recorded load balancer that is gone would fail the
	// whole tagging call.
	lbs, err := c.lbs.list(ctx)
	if err != nil {
		return 0, err
	}
	tag := clusterTag(c.cfg.ClusterID)
	var res []godo.Resource
	for i := range lbs {
		lb := &lbs[i]
		svc := byID[lb.ID]
		if svc == nil || slices.Contains(lb.Tags, tag) {
			continue
		}
		owns, err := c.lbs.own.Owns(ctx, svc, resource(lb, "the annotation "+AnnLoadBalancerID))
		if err != nil {
			return 0, err
		}
		if owns {
			res = append(res, godo.Resource{ID: lb.ID, Type: godo.LoadBalancerResourceType})
		}
	}
	if len(res) == 0 {
		return 0, nil
	}
	sort.Slice(res, func(i, j int) bool { return res[i].ID < res[j].ID })
	err = c.tagResources(ctx, tag, res)
	if cloudapi.IsNotFound(err) {
		// The tag is made with the first load balancer that carries it;
		// load balancers made before the cluster ID was set never made it.
		err = c.api.Do(ctx, "tags.create", func(ctx context.Context) error {
			_, _, err := c.client.Tags.Create(ctx, &godo.TagCreateRequest{Name: tag})
			return err
		})
		if err != nil {
			return 0, fmt.Errorf("creating tag %s: %w", tag, err)
		}
		err = c.tagResources(ctx, tag, res)
	}
	if err != nil {
		return 0, fmt.Errorf("tagging %d load balancers with %s: %w", len(res), tag, err)
	}
	return len(res), nil
}

func (c *Cloud) tagResources(ctx context.Context, tag string, res []godo.Resource) error {
	return c.api.Do(ctx, "tags.tag_resources", func(ctx context.Context) error {
		_, err := c.client.Tags.TagResources(ctx, tag, &godo.TagResourcesRequest{Resources: res})
		return err
	})
}
