package gce

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// The cluster ID names the resources a cluster's load balancers share (the
// nodes' health check, its firewall rules, the instance groups).
// cloud-provider-gcp keeps it in this ConfigMap (gce_clusterid.go), and so
// does polyccm, so a switch finds the same names.
const (
	ClusterIDNamespace = "kube-system"
	ClusterIDConfigMap = "ingress-uid"
	clusterIDKey       = "uid"
	providerIDKey      = "provider-uid"
)

// clusterIDRE: the ID goes into resource names ("k8s-<id>-node-http-hc"
// is at most 63 characters).
var clusterIDRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,38}[a-z0-9])?$`)

// clusterID resolves the ID once: drivers.gce.clusterID, else the
// ConfigMap's provider-uid, else its uid; upstream creates the ConfigMap
// with a new ID when there is none, and so does polyccm. A failure is not
// remembered.
type clusterID struct {
	c  *Cloud
	mu sync.Mutex
	id string
}

func (ci *clusterID) get(ctx context.Context) (string, error) {
	if ci.c.cfg.ClusterID != "" {
		return ci.c.cfg.ClusterID, nil
	}
	ci.mu.Lock()
	defer ci.mu.Unlock()
	if ci.id != "" {
		return ci.id, nil
	}
	id, err := ci.read(ctx)
	if err != nil {
		return "", fmt.Errorf("gce: the cluster ID (ConfigMap %s/%s, or drivers.gce.clusterID): %w", ClusterIDNamespace, ClusterIDConfigMap, err)
	}
	ci.id = id
	return id, nil
}

func (ci *clusterID) read(ctx context.Context) (string, error) {
	if ci.c.deps.ClientBuilder == nil {
		return "", errors.New("no Kubernetes client to read it with; set drivers.gce.clusterID")
	}
	kube, err := ci.c.deps.ClientBuilder.Client("polyccm-gce-cluster-id")
	if err != nil {
		return "", err
	}
	cms := kube.CoreV1().ConfigMaps(ClusterIDNamespace)
	cm, err := cms.Get(ctx, ClusterIDConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		var b [8]byte
		_, _ = rand.Read(b[:])
		id := hex.EncodeToString(b[:])
		cm = &v1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: ClusterIDConfigMap, Namespace: ClusterIDNamespace},
			Data:       map[string]string{clusterIDKey: id, providerIDKey: id},
		}
		var created *v1.ConfigMap
		created, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
			// Another writer won; use its ID.
			cm, err = cms.Get(ctx, ClusterIDConfigMap, metav1.GetOptions{})
		case err == nil:
			klog.InfoS("Created the cluster ID", "configMap", ClusterIDNamespace+"/"+ClusterIDConfigMap, "clusterID", id)
			cm = created
		}
	}
	if err != nil {
		return "", err
	}
	id := cm.Data[providerIDKey]
	if id == "" {
		id = cm.Data[clusterIDKey]
	}
	if id == "" {
		return "", fmt.Errorf("it has neither %q nor %q: set one, or drivers.gce.clusterID", providerIDKey, clusterIDKey)
	}
	if !clusterIDRE.MatchString(id) {
		return "", fmt.Errorf("%q is not usable in GCE resource names (lower-case letters, digits, dashes, at most 40)", id)
	}
	return id, nil
}
