// Command demo shows polyccm's main job end to end on this machine: a real
// etcd and kube-apiserver, a simulated cloud, and the real polyccm binary
// initializing a few dozen Nodes that register at once, then serving a
// Service of type LoadBalancer and reacting to a powered-off and a deleted
// instance. Run it with `make demo` (DigitalOcean), `make demo DRIVER=gce`,
// `make demo DRIVER=aws`, `make demo DRIVER=hetzner` or `make demo
// DRIVER=openstack` (no load balancer: polyccm serves none there yet).
//
// The simulated clouds are test/simcloud's, shared with the benchmark.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/polyccm/polyccm/test/cluster"
	"github.com/polyccm/polyccm/test/harness"
	"github.com/polyccm/polyccm/test/simcloud"
)

// clusterName is the polyccm clusterName of the demo, which names and tags
// what it creates in the cloud.
const clusterName = "demo"

func main() {
	driverName := flag.String("driver", "digitalocean", "the simulated cloud: "+strings.Join(simcloud.Names(), ", "))
	n := flag.Int("nodes", 36, "how many nodes register at once (at least 3)")
	latency := flag.Duration("latency", 30*time.Millisecond, "simulated cloud API latency per call")
	keep := flag.Bool("keep", false, "keep everything running until Ctrl-C (prints a kubeconfig to explore with kubectl)")
	flag.Parse()
	if err := run(*driverName, *n, *latency, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "\ndemo failed:", err)
		os.Exit(1)
	}
}

type demo struct {
	ctx    context.Context
	driver string
	dir    string
	cp     *harness.ControlPlane
	kube   kubernetes.Interface
	cloud  simcloud.Cloud
	ccm    *harness.CCM
	nodes  []simcloud.Node
}

func run(driverName string, n int, latency time.Duration, keep bool) (err error) {
	if !slices.Contains(simcloud.Names(), driverName) {
		return fmt.Errorf("no simulated cloud for driver %q; run make demo DRIVER=NAME with one of: %s", driverName, strings.Join(simcloud.Names(), ", "))
	}
	if n < 3 {
		return fmt.Errorf("-nodes %d: the demo powers off node 1 and deletes node 2, so it needs at least 3", n)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	d := &demo{ctx: ctx, driver: driverName}
	if d.dir, err = os.MkdirTemp("", "polyccm-demo-"); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\n\nEverything the demo wrote (configs, logs) stays in %s", err, d.dir)
		}
	}()
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
	if err := checkDriver(ctx, bin, driverName); err != nil {
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

	if d.cloud, err = simcloud.New(driverName, simcloud.Options{ClusterName: clusterName, Latency: latency}); err != nil {
		return fmt.Errorf("starting the simulated %s API: %w", driverName, err)
	}
	defer d.cloud.Close()
	// A driver without load balancers refuses services: true.
	lbs := simcloud.HasLoadBalancers(driverName)
	behaviour := "load balancers provision, operations take time, the API throttles as the real one does"
	if !lbs {
		behaviour = "the API throttles as the real one does"
	}
	step("Starting the simulated %s API with %d running instances (%s profile: %s)", d.cloud.Title(), n, simcloud.Realistic.Name, behaviour)
	d.nodes = d.cloud.AddInstances(n)

	step("Starting polyccm")
	port, err := harness.FreePort()
	if err != nil {
		return err
	}
	block, err := d.cloud.ConfigBlock(d.dir)
	if err != nil {
		return err
	}
	s := harness.Settings{
		Driver: driverName, Kubeconfig: d.cp.PolyccmKubeconfig, Port: port, ClusterName: clusterName,
		DriverBlock: block, MonitorPeriod: 2 * time.Second, CacheTTL: 2 * time.Second, LeaseDuration: 15 * time.Second,
		Controllers: fmt.Sprintf("nodes: true\nnodeLifecycle: true\nservices: %v", lbs),
	}
	d.ccm, err = harness.StartCCM(harness.CCMOptions{Bin: bin, Dir: d.dir, Config: s.Config(), Port: port, Env: d.cloud.Env(d.dir)})
	if err != nil {
		return err
	}
	defer d.ccm.Stop(10 * time.Second)
	if err := d.ccm.WaitReady(ctx); err != nil {
		return fmt.Errorf("%w\n\nCheck the config %s against the log %s", err, d.ccm.ConfigPath, d.ccm.LogPath)
	}
	done("ready: https://127.0.0.1:%d/readyz; config %s; log %s", port, d.ccm.ConfigPath, d.ccm.LogPath)

	step("Registering %d nodes at once, tainted %s (as kubelet --cloud-provider=external does)", n, harness.UninitializedTaint.Key)
	if err := d.registerAll(); err != nil {
		return err
	}
	if err := d.waitInitialized(); err != nil {
		return err
	}
	if err := d.printNodes(); err != nil {
		return err
	}

	if lbs {
		if err := d.loadBalancer(); err != nil {
			return err
		}
	} else {
		step("No Service of type LoadBalancer: polyccm serves no %s load balancers yet", d.cloud.Title())
	}

	off, gone := d.nodes[1].Name, d.nodes[2].Name
	step("Powering off the instance of %s", off)
	if err := d.cloud.PowerOff(1); err != nil {
		return fmt.Errorf("powering off the instance of %s in the simulated cloud: %w", off, err)
	}
	if err := d.waitFor(off+" gets the shutdown taint", func() (bool, error) {
		node, err := d.kube.CoreV1().Nodes().Get(ctx, off, metav1.GetOptions{})
		return err == nil && harness.HasTaint(node, harness.ShutdownTaint), nil
	}); err != nil {
		return err
	}
	step("Deleting the instance of %s", gone)
	if err := d.cloud.Remove(2); err != nil {
		return fmt.Errorf("deleting the instance of %s in the simulated cloud: %w", gone, err)
	}
	if err := d.waitFor(gone+" is deleted from the cluster", func() (bool, error) {
		_, err := d.kube.CoreV1().Nodes().Get(ctx, gone, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	}); err != nil {
		return err
	}

	what := fmt.Sprintf("%d nodes", n)
	if lbs {
		what += " and one load balancer"
	}
	fmt.Printf("\nDone. %s in all for %s.\n", calls(d.cloud.Calls()), what)
	if keep {
		fmt.Printf("\nStill running. Explore with:\n  kubectl --kubeconfig %s get nodes -o wide\n  curl -k https://127.0.0.1:%d/readyz?verbose\nCtrl-C to stop.\n", d.cp.AdminKubeconfig, port)
		<-ctx.Done()
		fmt.Printf("Logs stay in %s\n", d.dir)
	}
	fmt.Println("Stopping polyccm, kube-apiserver and etcd.")
	if code, err := d.ccm.Stop(10 * time.Second); err != nil || code != 0 {
		fmt.Printf("polyccm exit code %d (%v); its log: %s\n", code, err, d.ccm.LogPath)
	}
	if !keep {
		os.RemoveAll(d.dir)
	}
	return nil
}

// checkDriver makes sure the binary has the demo's driver: a build with
// DRIVERS=... may leave it out.
func checkDriver(ctx context.Context, bin, driverName string) error {
	out, err := exec.CommandContext(ctx, bin, "drivers").Output()
	if err != nil {
		return fmt.Errorf("%s drivers: %w; rebuild it with make build", bin, err)
	}
	have := strings.Fields(string(out))
	if !slices.Contains(have, driverName) {
		return fmt.Errorf("%s has no %s driver (only %s); rebuild it with every driver (make build, without DRIVERS) or with DRIVERS=%s",
			bin, driverName, strings.Join(have, ", "), driverName)
	}
	return nil
}

// loadBalancer creates a Service of type LoadBalancer, shows its ingress
// and load balancer, then deletes it and shows the load balancer go.
func (d *demo) loadBalancer() error {
	ports := d.cloud.LBPorts()
	var desc []string
	for _, p := range ports {
		desc = append(desc, fmt.Sprintf("%d/%s", p.Port, p.Protocol))
	}
	step("Creating Service default/hello of type LoadBalancer (ports %s)", strings.Join(desc, " and "))
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
		Spec: v1.ServiceSpec{
			Type:     v1.ServiceTypeLoadBalancer,
			Selector: map[string]string{"app": "hello"},
			Ports:    ports,
		},
	}
	if _, err := d.kube.CoreV1().Services("default").Create(d.ctx, svc, metav1.CreateOptions{}); err != nil {
		return err
	}
	var ingress v1.LoadBalancerIngress
	var id string
	if err := d.waitFor("default/hello has an external address", func() (bool, error) {
		s, err := d.kube.CoreV1().Services("default").Get(d.ctx, "hello", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if len(s.Status.LoadBalancer.Ingress) == 0 {
			return false, nil
		}
		ingress = s.Status.LoadBalancer.Ingress[0]
		id = d.cloud.LBID(s)
		return true, nil
	}); err != nil {
		return fmt.Errorf("%w\n\nThe Service's events: kubectl --kubeconfig %s describe service hello", err, d.cp.AdminKubeconfig)
	}
	if ingress.IP != "" {
		fmt.Printf("\n    EXTERNAL-IP %s\n", ingress.IP)
	} else {
		fmt.Printf("\n    EXTERNAL-HOSTNAME %s\n", ingress.Hostname)
	}
	if desc, ok := d.cloud.DescribeLB(id); ok {
		fmt.Printf("    %s\n\n", desc)
	} else {
		return fmt.Errorf("the Service has an ingress (%+v) but the simulated cloud has no load balancer for it (found %q); see %s", ingress, id, d.ccm.LogPath)
	}
	step("Deleting Service default/hello")
	if err := d.kube.CoreV1().Services("default").Delete(d.ctx, "hello", metav1.DeleteOptions{}); err != nil {
		return err
	}
	var left []string
	err := d.waitFor("its load balancer is deleted and the Service is gone", func() (bool, error) {
		_, err := d.kube.CoreV1().Services("default").Get(d.ctx, "hello", metav1.GetOptions{})
		left = d.cloud.LBLeftovers()
		return apierrors.IsNotFound(err) && len(left) == 0, nil
	})
	if err != nil && len(left) > 0 {
		return fmt.Errorf("%w\n\nStill in the simulated cloud: %s", err, strings.Join(left, ", "))
	}
	return err
}

func (d *demo) registerAll() error {
	var wg sync.WaitGroup
	errs := make([]error, len(d.nodes))
	for i, n := range d.nodes {
		wg.Go(func() {
			_, errs[i] = d.kube.CoreV1().Nodes().Create(d.ctx, harness.UninitializedNode(n.Name, n.ProviderID), metav1.CreateOptions{})
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// waitInitialized shows progress until every node lost the taint: one
// line rewritten in place on a terminal, a line per change otherwise.
func (d *demo) waitInitialized() error {
	start := time.Now()
	n := len(d.nodes)
	tty := isTerminal(os.Stdout)
	last, lastAt := -1, time.Time{}
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
		progress := fmt.Sprintf("    nodes initialized %d/%d · cloud API calls so far %d · %s", ready, n, d.cloud.Calls(), since(start))
		switch {
		case tty:
			fmt.Printf("\r%s   ", progress)
			if ready == n {
				fmt.Println()
			}
		case ready != last || time.Since(lastAt) > 10*time.Second:
			fmt.Println(progress)
			last, lastAt = ready, time.Now()
		}
		if ready == n {
			done("all %d nodes initialized in %s with %s (batched: not one call per node)", n, since(start), calls(d.cloud.Calls()))
			return nil
		}
		if time.Since(start) > initTimeout {
			if tty {
				fmt.Println()
			}
			return d.stuck(fmt.Sprintf("only %d of %d nodes initialized after %s", ready, n, initTimeout))
		}
		select {
		case <-d.ctx.Done():
			if tty {
				fmt.Println()
			}
			return d.ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// How long polyccm gets for each step; every one takes seconds at most
// when things work.
const (
	initTimeout = time.Minute
	stepTimeout = time.Minute
)

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func (d *demo) printNodes() error {
	type row struct {
		node                            *v1.Node
		internal, external, hostname    string
		providerID, typ, region, zoneID string
	}
	var rows []row
	// A HOSTNAME column when some hostname is not the Node's name; none
	// when no node has one (OpenStack gives one only from server metadata).
	withZone, sameHost, anyHost := false, true, false
	for _, n := range d.nodes {
		node, err := d.kube.CoreV1().Nodes().Get(d.ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		addr := map[v1.NodeAddressType][]string{}
		for _, a := range node.Status.Addresses {
			addr[a.Type] = append(addr[a.Type], a.Address)
		}
		r := row{node: node, providerID: node.Spec.ProviderID,
			internal: strings.Join(addr[v1.NodeInternalIP], ","), external: strings.Join(addr[v1.NodeExternalIP], ","),
			hostname: strings.Join(addr[v1.NodeHostName], ",")}
		if node.Labels[v1.LabelTopologyZone] != "" {
			withZone = true
		}
		if r.hostname != node.Name {
			sameHost = false
		}
		anyHost = anyHost || r.hostname != ""
		rows = append(rows, r)
	}
	fmt.Println()
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	cols := []string{"NAME", "PROVIDER ID", "TYPE", "REGION"}
	if withZone {
		cols = append(cols, "ZONE")
	}
	cols = append(cols, "INTERNAL IP", "EXTERNAL IP")
	if !sameHost && anyHost {
		cols = append(cols, "HOSTNAME")
	}
	fmt.Fprintln(w, strings.Join(cols, "\t"))
	for _, r := range rows {
		l := r.node.Labels
		f := []string{r.node.Name, r.providerID, l[v1.LabelInstanceTypeStable], l[v1.LabelTopologyRegion]}
		if withZone {
			f = append(f, l[v1.LabelTopologyZone])
		}
		f = append(f, r.internal, r.external)
		if !sameHost && anyHost {
			f = append(f, r.hostname)
		}
		fmt.Fprintln(w, strings.Join(f, "\t"))
	}
	w.Flush()
	if sameHost {
		fmt.Println("(every node's Hostname address is its name)")
	}
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
		if time.Since(start) > stepTimeout {
			return d.stuck(fmt.Sprintf("%s: not after %s", what, stepTimeout))
		}
		select {
		case <-d.ctx.Done():
			return d.ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// stuck is the error for something polyccm did not do in time, with the
// last errors in its log, where the reason is.
func (d *demo) stuck(what string) error {
	state := "polyccm is still running"
	if d.ccm.Exited() {
		code, _ := d.ccm.Wait(0)
		state = fmt.Sprintf("polyccm exited with code %d", code)
	}
	errs := lastErrors(d.ccm.Log(), 4)
	if len(errs) == 0 {
		return fmt.Errorf("%s; %s and logged no errors. Its log %s ends with:\n%s\n\nA controller may be off or stuck: check the config %s",
			what, state, d.ccm.LogPath, indentLines(d.ccm.LogTail(10), "    | "), d.ccm.ConfigPath)
	}
	return fmt.Errorf("%s; %s. The last errors in its log %s:\n%s\n\n"+
		"A cloud API error there means polyccm's %s driver and the simulated cloud disagree: "+
		"fix drivers/%s (or test/fakecloud/%s if the fake is wrong), then make build and make demo DRIVER=%s again",
		what, state, d.ccm.LogPath, indentLines(strings.Join(errs, "\n"), "    | "), d.driver, d.driver, d.driver, d.driver)
}

// lastErrors returns the last n distinct error messages of a klog log,
// without their headers and cut to a readable length.
func lastErrors(log string, n int) []string {
	lines := strings.Split(log, "\n")
	var out []string
	seen := map[string]bool{}
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		l := lines[i]
		if !strings.HasPrefix(l, "E") {
			continue
		}
		if _, msg, ok := strings.Cut(l, "] "); ok {
			l = msg
		}
		if seen[l] {
			continue
		}
		seen[l] = true
		if len(l) > 400 {
			l = l[:400] + " ..."
		}
		out = append(out, l)
	}
	slices.Reverse(out)
	return out
}

func indentLines(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}

func calls(n int) string {
	if n == 1 {
		return "1 cloud API call"
	}
	return fmt.Sprintf("%d cloud API calls", n)
}

func step(format string, args ...any) { fmt.Printf("==> "+format+"\n", args...) }
func done(format string, args ...any) { fmt.Printf("    "+format+"\n", args...) }
func since(t time.Time) string        { return time.Since(t).Round(10 * time.Millisecond).String() }
