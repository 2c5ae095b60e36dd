// Command demo shows polyccm's main job end to end on this machine: a real
// etcd and kube-apiserver, a simulated cloud, and the real polyccm binary
// initializing a few dozen Nodes that register at once, then reacting to a
// powered-off and a deleted instance. Run it with `make demo`.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/digitalocean/godo"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/polyccm/polyccm/test/cluster"
	fakedo "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
	"github.com/polyccm/polyccm/test/harness"
)

func main() {
	driverName := flag.String("driver", "digitalocean", "the simulated cloud (digitalocean)")
	n := flag.Int("nodes", 36, "how many nodes register at once")
	latency := flag.Duration("latency", 30*time.Millisecond, "simulated cloud API latency per call")
	keep := flag.Bool("keep", false, "keep everything running until Ctrl-C (prints a kubeconfig to explore with kubectl)")
	flag.Parse()
	if err := run(*driverName, *n, *latency, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

type demo struct {
	ctx   context.Context
	dir   string
	cp    *harness.ControlPlane
	kube  kubernetes.Interface
	cloud cloud
	ccm   *harness.CCM
}

// cloud is what the demo needs from a simulated cloud.
type cloud interface {
	// configBlock is the drivers.<name> config section for polyccm.
	configBlock(dir string) (string, error)
	// addInstances creates n running instances named name(i) and returns
	// the providerIDs kubelets would know (some empty: found by name).
	addInstances(n int, name func(int) string) []string
	powerOff(i int) error
	remove(i int) error
	// describeLB summarises the load balancer with this ID, if it exists.
	describeLB(id string) (string, bool)
	calls() int
	close()
}

func run(driverName string, n int, latency time.Duration, keep bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	d := &demo{ctx: ctx}
	var err error
	if d.dir, err = os.MkdirTemp("", "polyccm-demo-"); err != nil {
		return err
	}
	step("polyccm demo: driver %s, %d nodes, %s simulated API latency", driverName, n, latency)

	if p := os.Getenv(harness.EnvPolyccmBin); p != "" {
		step("Using %s", p)
	} else {
		step("Building polyccm")
	}
	bin, err := harness.Polyccm(ctx, d.dir)
	if err != nil {
		return err
	}

	step("Starting the local control plane: etcd and kube-apiserver (RBAC on)")
	start := time.Now()
	d.cp, err = harness.StartControlPlane(ctx, cluster.Options{Dir: filepath.Join(d.dir, "cluster")})
	if err != nil {
		return err
	}
	defer d.cp.Stop()
	d.kube = d.cp.Admin
	done("kube-apiserver at %s in %s; polyccm runs as user %s with packaging/kubernetes/rbac.yaml", d.cp.URL, since(start), harness.PolyccmUser)

	switch driverName {
	case "digitalocean":
		d.cloud = newDigitalOcean(latency)
	default:
		return fmt.Errorf("no simulated cloud for driver %q yet (have: digitalocean)", driverName)
	}
	defer d.cloud.close()
	name := func(i int) string { return fmt.Sprintf("node-%02d", i) }
	step("Starting the simulated %s API with %d running instances", driverName, n)
	providerIDs := d.cloud.addInstances(n, name)

	step("Starting polyccm")
	port, err := harness.FreePort()
	if err != nil {
		return err
	}
	block, err := d.cloud.configBlock(d.dir)
	if err != nil {
		return err
	}
	s := harness.Settings{
		Driver: driverName, Kubeconfig: d.cp.PolyccmKubeconfig, Port: port, ClusterName: "demo",
		DriverBlock: block, MonitorPeriod: 2 * time.Second, CacheTTL: 2 * time.Second, LeaseDuration: 15 * time.Second,
		Controllers: "nodes: true\nnodeLifecycle: true\nservices: true",
	}
	d.ccm, err = harness.StartCCM(harness.CCMOptions{Bin: bin, Dir: d.dir, Config: s.Config(), Port: port})
	if err != nil {
		return err
	}
	defer d.ccm.Stop(10 * time.Second)
	if err := d.ccm.WaitReady(ctx); err != nil {
		return err
	}
	done("ready: https://127.0.0.1:%d/readyz; config %s; log %s", port, d.ccm.ConfigPath, d.ccm.LogPath)

	step("Registering %d nodes at once, tainted %s (as kubelet --cloud-provider=external does)", n, harness.UninitializedTaint.Key)
	if err := d.registerAll(n, name, providerIDs); err != nil {
		return err
	}
	if err := d.waitInitialized(n, name); err != nil {
		return err
	}
	if err := d.printNodes(n, name); err != nil {
		return err
	}

	if err := d.loadBalancer(driverName); err != nil {
		return err
	}

	step("Powering off the instance of %s", name(1))
	if err := d.cloud.powerOff(1); err != nil {
		return err
	}
	if err := d.waitFor(name(1)+" gets the shutdown taint", func() (bool, error) {
		node, err := d.kube.CoreV1().Nodes().Get(ctx, name(1), metav1.GetOptions{})
		return err == nil && harness.HasTaint(node, harness.ShutdownTaint), nil
	}); err != nil {
		return err
	}
	step("Deleting the instance of %s", name(2))
	if err := d.cloud.remove(2); err != nil {
		return err
	}
	if err := d.waitFor(name(2)+" is deleted from the cluster", func() (bool, error) {
		_, err := d.kube.CoreV1().Nodes().Get(ctx, name(2), metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		return err
	}

	fmt.Printf("\nDone. %d cloud API calls in all for %d nodes.\n", d.cloud.calls(), n)
	if keep {
		fmt.Printf("\nStill running. Explore with:\n  kubectl --kubeconfig %s get nodes -o wide\n  curl -k https://127.0.0.1:%d/readyz?verbose\nCtrl-C to stop.\n", d.cp.AdminKubeconfig, port)
		<-ctx.Done()
		fmt.Printf("Logs stay in %s\n", d.dir)
	}
	fmt.Println("Stopping polyccm, kube-apiserver and etcd.")
	if code, err := d.ccm.Stop(10 * time.Second); err != nil || code != 0 {
		fmt.Printf("polyccm exit code %d (%v)\n", code, err)
	}
	if !keep {
		os.RemoveAll(d.dir)
	}
	return nil
}

// loadBalancer creates a Service of type LoadBalancer, shows its ingress
// and load balancer, then deletes it and shows the load balancer go.
func (d *demo) loadBalancer(driverName string) error {
	step("Creating Service default/hello of type LoadBalancer (ports 80/TCP and 53/UDP)")
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
		Spec: v1.ServiceSpec{
			Type:     v1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": "hello"},
			Ports: []v1.ServicePort{
				{Name: "http", Protocol: v1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)},
				{Name: "dns", Protocol: v1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(5353)},
			},
		},
	}
	if _, err := d.kube.CoreV1().Services("default").Create(d.ctx, svc, metav1.CreateOptions{}); err != nil {
		return err
	}
	var ingress, id string
	if err := d.waitFor("default/hello has an external IP", func() (bool, error) {
		s, err := d.kube.CoreV1().Services("default").Get(d.ctx, "hello", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if len(s.Status.LoadBalancer.Ingress) == 0 {
			return false, nil
		}
		ingress = s.Status.LoadBalancer.Ingress[0].IP
		id = s.Annotations[lbIDAnnotation[driverName]]
		return true, nil
	}); err != nil {
		return err
	}
	fmt.Printf("\n    EXTERNAL-IP %s\n", ingress)
	if desc, ok := d.cloud.describeLB(id); ok {
		fmt.Printf("    %s\n\n", desc)
	}
	step("Deleting Service default/hello")
	if err := d.kube.CoreV1().Services("default").Delete(d.ctx, "hello", metav1.DeleteOptions{}); err != nil {
		return err
	}
	return d.waitFor("its load balancer is deleted and the Service is gone", func() (bool, error) {
		_, err := d.kube.CoreV1().Services("default").Get(d.ctx, "hello", metav1.GetOptions{})
		_, exists := d.cloud.describeLB(id)
		return apierrors.IsNotFound(err) && !exists, nil
	})
}

// lbIDAnnotation is where each driver records a Service's load balancer.
var lbIDAnnotation = map[string]string{"digitalocean": "kubernetes.digitalocean.com/load-balancer-id"}

func (d *demo) registerAll(n int, name func(int) string, providerIDs []string) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = d.kube.CoreV1().Nodes().Create(d.ctx, harness.UninitializedNode(name(i), providerIDs[i]), metav1.CreateOptions{})
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// waitInitialized shows progress until every node lost the taint.
func (d *demo) waitInitialized(n int, name func(int) string) error {
	start := time.Now()
	for {
		nodes, err := d.kube.CoreV1().Nodes().List(d.ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		ready := 0
		for i := range nodes.Items {
			if !harness.HasTaint(&nodes.Items[i], harness.UninitializedTaint.Key) && nodes.Items[i].Spec.ProviderID != "" {
				ready++
			}
		}
		fmt.Printf("\r  nodes initialized %d/%d · cloud API calls so far %d · %s   ", ready, n, d.cloud.calls(), since(start))
		if ready == n {
			fmt.Println()
			done("all %d nodes initialized in %s with %d cloud API calls (batched: not one call per node)", n, since(start), d.cloud.calls())
			return nil
		}
		if time.Since(start) > 2*time.Minute {
			fmt.Println()
			return fmt.Errorf("only %d of %d nodes initialized after 2 minutes; see %s", ready, n, d.ccm.LogPath)
		}
		select {
		case <-d.ctx.Done():
			return d.ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (d *demo) printNodes(n int, name func(int) string) error {
	fmt.Println()
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tPROVIDER ID\tTYPE\tREGION\tINTERNAL IP\tEXTERNAL IP\tHOSTNAME")
	for i := range n {
		node, err := d.kube.CoreV1().Nodes().Get(d.ctx, name(i), metav1.GetOptions{})
		if err != nil {
			return err
		}
		addr := map[v1.NodeAddressType][]string{}
		for _, a := range node.Status.Addresses {
			addr[a.Type] = append(addr[a.Type], a.Address)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", node.Name, node.Spec.ProviderID,
			node.Labels[v1.LabelInstanceTypeStable], node.Labels[v1.LabelTopologyRegion],
			strings.Join(addr[v1.NodeInternalIP], ","), strings.Join(addr[v1.NodeExternalIP], ","),
			strings.Join(addr[v1.NodeHostName], ","))
	}
	w.Flush()
	fmt.Println()
	return nil
}

func (d *demo) waitFor(what string, cond func() (bool, error)) error {
	start := time.Now()
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			done("%s after %s", what, since(start))
			return nil
		}
		if time.Since(start) > time.Minute {
			return fmt.Errorf("%s: not after a minute; see %s", what, d.ccm.LogPath)
		}
		select {
		case <-d.ctx.Done():
			return d.ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func step(format string, args ...any) { fmt.Printf("==> "+format+"\n", args...) }
func done(format string, args ...any) { fmt.Printf("    "+format+"\n", args...) }
func since(t time.Time) string        { return time.Since(t).Round(10 * time.Millisecond).String() }

// digitalOcean is the simulated DigitalOcean cloud.
type digitalOcean struct {
	fake     *fakedo.Server
	user     *godo.Client
	token    string
	droplets []fakedo.Droplet
}

func newDigitalOcean(latency time.Duration) *digitalOcean {
	tok := "dop_v1_demo_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	f := fakedo.New(tok)
	f.Faults().SetLatency(latency)
	f.SetLoadBalancerActivationDelay(2 * time.Second)
	if err := f.Start(); err != nil {
		panic(err)
	}
	user, _ := godo.New(&http.Client{Transport: bearer(tok)}, godo.SetBaseURL(f.URL()))
	return &digitalOcean{fake: f, user: user, token: tok}
}

func (c *digitalOcean) configBlock(dir string) (string, error) {
	p := filepath.Join(dir, "digitalocean-token")
	if err := os.WriteFile(p, []byte(c.token+"\n"), 0o600); err != nil {
		return "", err
	}
	return fmt.Sprintf("token: {file: %s}\napiURL: %s", p, c.fake.URL()), nil
}

func (c *digitalOcean) addInstances(n int, name func(int) string) []string {
	sizes := []string{"s-2vcpu-4gb", "s-4vcpu-8gb", "c-8"}
	// One region: a DigitalOcean cluster lives in one, like its VPC.
	regions := []string{"fra1"}
	ids := make([]string, n)
	for i := range n {
		d := fakedo.Droplet{Name: name(i), Status: fakedo.StatusActive, SizeSlug: sizes[i%len(sizes)], Region: regions[i%len(regions)]}
		if i%3 == 0 {
			d.IPv6 = fmt.Sprintf("2a03:b0c0:2:d0::%x:1", i+1)
		}
		d = c.fake.AddDroplet(d)
		c.droplets = append(c.droplets, d)
		if i%2 == 0 {
			ids[i] = "digitalocean://" + strconv.Itoa(d.ID)
		}
	}
	return ids
}

// powerOff goes through the API, as a user would.
func (c *digitalOcean) powerOff(i int) error {
	_, _, err := c.user.DropletActions.PowerOff(context.Background(), c.droplets[i].ID)
	return err
}

func (c *digitalOcean) remove(i int) error {
	_, err := c.user.Droplets.Delete(context.Background(), c.droplets[i].ID)
	return err
}

// calls counts polyccm's calls, not the demo's own power-off and delete.
func (c *digitalOcean) calls() int {
	n := 0
	for ep, k := range c.fake.Faults().Calls() {
		if ep != "POST /v2/droplets/{id}/actions" && ep != "DELETE /v2/droplets/{id}" {
			n += k
		}
	}
	return n
}

func (c *digitalOcean) describeLB(id string) (string, bool) {
	lb, ok := c.fake.LoadBalancer(id)
	if !ok {
		return "", false
	}
	var rules []string
	for _, r := range lb.ForwardingRules {
		rules = append(rules, fmt.Sprintf("%s:%d->%s:%d", r.EntryProtocol, r.EntryPort, r.TargetProtocol, r.TargetPort))
	}
	hc := ""
	if lb.HealthCheck != nil {
		hc = fmt.Sprintf("%s :%d%s", lb.HealthCheck.Protocol, lb.HealthCheck.Port, lb.HealthCheck.Path)
	}
	return fmt.Sprintf("DigitalOcean load balancer %s (%s) in %s, %s: rules %s, %d droplets, health check %s",
		lb.Name, lb.ID, lb.Region, lb.Status, strings.Join(rules, " "), len(lb.DropletIDs), hc), true
}

func (c *digitalOcean) close() { c.fake.Close() }

// bearer authenticates the demo's own API calls, as a user's client would.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}
