package digitalocean_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"

	"github.com/polyccm/polyccm/config/secret"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/drivers/digitalocean"
	fake "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
)

// tasksOf builds the cloud with informers over kube and returns its tasks
// by name.
func tasksOf(t *testing.T, f *fake.Server, kube *k8sfake.Clientset, cfg *digitalocean.Config) (map[string]driver.Task, informers.SharedInformerFactory) {
	t.Helper()
	d, _ := driver.Default().Lookup(digitalocean.Name)
	api := cloudapi.New(cloudapi.Options{Driver: digitalocean.Name, Classify: d.Classify, QPS: 1000, Burst: 1000, Timeout: 10 * time.Second, BaseBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	inf := informers.NewSharedInformerFactory(kube, 0)
	cloud, err := d.New(cfg, driver.Deps{API: api, ClusterName: "unit", Informers: inf})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]driver.Task{}
	for _, task := range cloud.(driver.TaskCloud).Tasks() {
		out[task.Name] = task
	}
	inf.Core().V1().Services().Informer()
	return out, inf
}

func TestClusterTagTask(t *testing.T) {
	f := fake.New(lbToken)
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	kube := k8sfake.NewClientset()
	cfg := &digitalocean.Config{Token: secret.Secret{Value: lbToken}, APIURL: f.URL()}

	// Without a cluster ID there is no cluster tag, as upstream.
	if tasks, _ := tasksOf(t, f, kube, cfg); len(tasks) != 0 {
		t.Fatalf("tasks without a cluster ID or firewall: %v", tasks)
	}

	cfg.ClusterID = "5d9f1c2e-0b8a-4a62-9f5e-3c1d2b7e8a40"
	tag := "k8s:" + cfg.ClusterID
	// The Service's own: named from its UID, as the driver names it.
	const webUID = "3f1b2c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
	mine := f.AddLoadBalancer(fake.LoadBalancer{Name: "a" + strings.ReplaceAll(webUID, "-", "")[:31], Region: lbRegion, Status: fake.StatusActive})
	other := f.AddLoadBalancer(fake.LoadBalancer{Name: "other", Region: lbRegion, Status: fake.StatusActive})
	disowned := f.AddLoadBalancer(fake.LoadBalancer{Name: "disowned", Region: lbRegion, Status: fake.StatusActive})
	for name, ann := range map[string]map[string]string{
		"web":  {digitalocean.AnnLoadBalancerID: mine.ID},
		"gone": {digitalocean.AnnLoadBalancerID: "00000000-0000-4000-8000-000000000000"},
		"kept": {digitalocean.AnnLoadBalancerID: disowned.ID, digitalocean.AnnDisown: "true"},
		// Naming another's load balancer does not make it this cluster's.
		"thief": {digitalocean.AnnLoadBalancerID: other.ID},
	} {
		svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Annotations: ann}, Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer}}
		if name == "web" {
			svc.UID = webUID
		}
		if _, err := kube.CoreV1().Services("shop").Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	tasks, inf := tasksOf(t, f, kube, cfg)
	task, ok := tasks["digitalocean-cluster-tag"]
	if !ok {
		t.Fatalf("no cluster tag task among %v", tasks)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inf.Start(ctx.Done())
	go task.Run(ctx)

	deadline := time.Now().Add(20 * time.Second)
	for !slices.Contains(f.LoadBalancerTags(mine.ID), tag) {
		if time.Now().After(deadline) {
			t.Fatalf("load balancer %s has tags %v, want %s", mine.ID, f.LoadBalancerTags(mine.ID), tag)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The tag did not exist: it was made (the API's 404 on tagging).
	if _, ok := f.Tags()[tag]; !ok {
		t.Errorf("tag %s not created", tag)
	}
	for _, lb := range []fake.LoadBalancer{other, disowned} {
		if got := f.LoadBalancerTags(lb.ID); slices.Contains(got, tag) {
			t.Errorf("load balancer %s (%s) got the cluster tag: no Service owns it", lb.Name, lb.ID)
		}
	}
}
