// Package cluster runs a local Kubernetes control plane for tests: a real
// etcd and a real kube-apiserver (the versions pinned in test/tools/go.mod,
// built by test/tools/build.sh) on free loopback ports, with a generated PKI,
// RBAC on, and API Priority and Fairness off so tests and benchmarks are not
// throttled.
//
// There is no kube-controller-manager, scheduler or kubelet: objects are
// stored and served, and nothing acts on them (pods stay Pending, DaemonSets
// create no pods, Namespaces are not garbage-collected). The one controller
// behaviour emulated is the "default" ServiceAccount, which Start creates in
// the built-in namespaces and Apply creates in each Namespace it applies, so
// that Pods pass the ServiceAccount admission plugin.
//
// Typical use:
//
//	c := cluster.ForTest(t, cluster.Options{})
//	nodes, err := c.Admin.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Fixed cluster parameters.
const (
	// ServiceClusterIPRange is the --service-cluster-ip-range.
	ServiceClusterIPRange = "10.96.0.0/12"
	// KubernetesServiceIP is the ClusterIP of the "kubernetes" Service.
	KubernetesServiceIP = "10.96.0.1"
	// ServiceAccountIssuer is the --service-account-issuer and the only
	// --api-audiences entry.
	ServiceAccountIssuer = "https://kubernetes.default.svc.cluster.local"
	// FieldManager is the server-side apply field manager Apply uses.
	FieldManager = "polyccm-test"

	defaultStartTimeout = 60 * time.Second
	apiserverStopGrace  = 5 * time.Second
	etcdStopGrace       = 5 * time.Second
	portAttempts        = 3
)

// Options configures Start.
type Options struct {
	// Dir is the work directory (certificates, kubeconfigs, etcd data, logs).
	// Empty means a new temporary directory, removed by Stop. A given Dir is
	// kept; its etcd-data subdirectory is wiped at Start so the cluster is
	// always new.
	Dir string
	// Logf receives progress and diagnostic messages. Nil discards them.
	Logf func(format string, args ...any)
	// ExtraAPIServerArgs are appended to the kube-apiserver command line
	// (a later flag overrides an earlier one of the same name).
	ExtraAPIServerArgs []string
	// StartTimeout bounds each wait for etcd and kube-apiserver to become
	// ready (also on restart). Zero means 60s.
	StartTimeout time.Duration
}

// Cluster is a running etcd + kube-apiserver.
type Cluster struct {
	// URL is the kube-apiserver's address, https://127.0.0.1:PORT.
	URL string
	// Dir is the work directory.
	Dir string
	// AdminKubeconfig is the path of a kubeconfig for user "admin" in group
	// system:masters (certificates embedded).
	AdminKubeconfig string
	// AdminConfig is the same credentials as a rest.Config, with client-side
	// rate limiting off (QPS -1). Copy it (rest.CopyConfig) before changing it.
	AdminConfig *rest.Config
	// Admin is a clientset built from AdminConfig.
	Admin kubernetes.Interface
	// CAFile is the path of the cluster CA certificate (PEM), which signs the
	// serving certificate and all client certificates.
	CAFile string
	// EtcdURL is etcd's client URL, http://127.0.0.1:PORT.
	EtcdURL string
	// APIServerLog and EtcdLog are the paths of the processes' logs (stdout
	// and stderr; restarts append).
	APIServerLog string
	EtcdLog      string

	logf         func(format string, args ...any)
	ownDir       bool
	startTimeout time.Duration
	apiserverBin string
	etcdBin      string
	ca           *certAuthority
	readyClient  *http.Client

	mu            sync.Mutex
	apiserverArgs []string
	apiserver     *process
	etcd          *process
	stopped       bool
}

// Start generates the PKI, starts etcd and kube-apiserver, waits until the
// apiserver is ready and its bootstrap objects exist, and writes the admin
// kubeconfig. On error nothing is left running; the work directory is kept
// (without the etcd data) so its logs can be read.
func Start(ctx context.Context, opts Options) (_ *Cluster, retErr error) {
	began := time.Now()
	apiserverBin, etcdBin, err := Binaries()
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		Dir:          opts.Dir,
		logf:         opts.Logf,
		startTimeout: opts.StartTimeout,
		apiserverBin: apiserverBin,
		etcdBin:      etcdBin,
	}
	if c.logf == nil {
		c.logf = func(string, ...any) {}
	}
	if c.startTimeout <= 0 {
		c.startTimeout = defaultStartTimeout
	}
	if c.Dir == "" {
		if c.Dir, err = os.MkdirTemp("", "polyccm-cluster-"); err != nil {
			return nil, err
		}
		c.ownDir = true
	} else if c.Dir, err = filepath.Abs(c.Dir); err != nil {
		return nil, err
	}
	for _, sub := range []string{"pki", "logs", "kubeconfig", "apiserver-certs"} {
		if err := os.MkdirAll(filepath.Join(c.Dir, sub), 0o700); err != nil {
			return nil, err
		}
	}
	if err := os.RemoveAll(c.etcdDataDir()); err != nil {
		return nil, err
	}
	c.APIServerLog = filepath.Join(c.Dir, "logs", "kube-apiserver.log")
	c.EtcdLog = filepath.Join(c.Dir, "logs", "etcd.log")
	c.logf("cluster: work dir %s", c.Dir)
	defer func() {
		if retErr != nil {
			c.stopProcesses()
			// Keep the logs; the etcd data (a 64 MB preallocated WAL) is of
			// no use.
			_ = os.RemoveAll(c.etcdDataDir())
			retErr = fmt.Errorf("%w (work dir %s kept for its logs)", retErr, c.Dir)
		}
	}()

	if err := c.writePKI(); err != nil {
		return nil, fmt.Errorf("generating certificates: %w", err)
	}
	if err := c.startEtcd(ctx); err != nil {
		return nil, err
	}
	if err := c.firstStartAPIServer(ctx, opts.ExtraAPIServerArgs); err != nil {
		return nil, err
	}
	if err := c.ensureDefaultServiceAccounts(ctx, "default", "kube-system", "kube-public", "kube-node-lease"); err != nil {
		return nil, err
	}
	kubeconfig := filepath.Join(c.Dir, "kubeconfig", "admin.kubeconfig")
	if err := writeKubeconfig(kubeconfig, c.AdminConfig, "admin"); err != nil {
		return nil, fmt.Errorf("writing the admin kubeconfig: %w", err)
	}
	c.AdminKubeconfig = kubeconfig
	c.logf("cluster: ready at %s in %.1fs (admin kubeconfig %s)", c.URL, time.Since(began).Seconds(), kubeconfig)
	return c, nil
}

func (c *Cluster) pki(name string) string { return filepath.Join(c.Dir, "pki", name) }
func (c *Cluster) etcdDataDir() string    { return filepath.Join(c.Dir, "etcd-data") }

// writePKI generates the CA, the serving, front-proxy and admin certificates
// and the service-account key pair, and builds AdminConfig.
func (c *Cluster) writePKI() error {
	ca, err := newCA("polyccm-test-ca")
	if err != nil {
		return err
	}
	c.ca = ca
	servingCert, servingKey, err := ca.issueServing("kube-apiserver",
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
		[]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1"), net.ParseIP(KubernetesServiceIP)})
	if err != nil {
		return err
	}
	saKey, saPub, err := serviceAccountKeyPair()
	if err != nil {
		return err
	}
	adminCert, adminKey, err := ca.issueClient("admin", "system:masters")
	if err != nil {
		return err
	}
	// The front-proxy (request-header) CA and client, as kubeadm sets them
	// up, so that extension-apiserver-authentication carries a complete
	// request-header configuration for components that delegate authn.
	frontProxyCA, err := newCA("polyccm-test-front-proxy-ca")
	if err != nil {
		return err
	}
	frontProxyCert, frontProxyKey, err := frontProxyCA.issueClient("front-proxy-client")
	if err != nil {
		return err
	}
	if err := writeFiles(map[string][]byte{
		c.pki("ca.crt"):                 ca.certPEM,
		c.pki("ca.key"):                 ca.keyPEM,
		c.pki("apiserver.crt"):          servingCert,
		c.pki("apiserver.key"):          servingKey,
		c.pki("sa.key"):                 saKey,
		c.pki("sa.pub"):                 saPub,
		c.pki("admin.crt"):              adminCert,
		c.pki("admin.key"):              adminKey,
		c.pki("front-proxy-ca.crt"):     frontProxyCA.certPEM,
		c.pki("front-proxy-client.crt"): frontProxyCert,
		c.pki("front-proxy-client.key"): frontProxyKey,
	}); err != nil {
		return err
	}
	c.CAFile = c.pki("ca.crt")
	c.AdminConfig = c.restConfig(adminCert, adminKey)
	return nil
}

// restConfig returns a config for the apiserver (c.URL may still be empty
// and is filled in by firstStartAPIServer for AdminConfig).
func (c *Cluster) restConfig(certPEM, keyPEM []byte) *rest.Config {
	return &rest.Config{
		Host: c.URL,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   c.ca.certPEM,
			CertData: certPEM,
			KeyData:  keyPEM,
		},
		QPS:     -1, // no client-side rate limiting
		Timeout: 30 * time.Second,
	}
}

func (c *Cluster) startEtcd(ctx context.Context) error {
	began := time.Now()
	var lastErr error
	for attempt := 1; attempt <= portAttempts; attempt++ {
		ports, err := freePorts(2)
		if err != nil {
			return err
		}
		clientURL := "http://" + hostPort(ports[0])
		peerURL := "http://" + hostPort(ports[1])
		args := []string{
			"--name=default",
			"--data-dir=" + c.etcdDataDir(),
			"--listen-client-urls=" + clientURL,
			"--advertise-client-urls=" + clientURL,
			"--listen-peer-urls=" + peerURL,
			"--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=default=" + peerURL,
			"--initial-cluster-state=new",
			"--unsafe-no-fsync",
			"--log-level=warn",
		}
		p, err := startProcess("etcd", c.etcdBin, args, c.EtcdLog)
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.etcd = p
		c.mu.Unlock()
		err = c.waitEtcd(ctx, p, clientURL)
		if err == nil {
			c.EtcdURL = clientURL
			c.logf("cluster: etcd ready at %s in %.1fs", clientURL, time.Since(began).Seconds())
			return nil
		}
		p.stop(etcdStopGrace)
		if !errors.Is(err, errPortInUse) {
			return err
		}
		lastErr = err
		c.logf("cluster: etcd port taken, retrying with new ports: %v", err)
		if err := os.RemoveAll(c.etcdDataDir()); err != nil {
			return err
		}
	}
	return lastErr
}

func (c *Cluster) waitEtcd(ctx context.Context, p *process, clientURL string) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	check := func(ctx context.Context) (bool, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientURL+"/health", nil)
		if err != nil {
			return false, err.Error()
		}
		resp, err := hc.Do(req)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if resp.StatusCode == http.StatusOK && strings.Contains(string(body), `"health":"true"`) {
			return true, ""
		}
		return false, fmt.Sprintf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return c.waitReady(ctx, p, "etcd /health", check)
}

// waitReady polls check until it succeeds, the process exits, ctx ends or
// the start timeout passes; errors carry the tail of the process's log.
func (c *Cluster) waitReady(ctx context.Context, p *process, what string, check func(context.Context) (bool, string)) error {
	ctx, cancel := context.WithTimeout(ctx, c.startTimeout)
	defer cancel()
	last := "no answer yet"
	for {
		if p.exited() {
			err := fmt.Errorf("%s exited before %s was ok (%s); log %s ends with:\n%s",
				p.name, what, p.exitDescription(), p.logPath, p.logTail(40))
			if p.addressInUse() {
				return fmt.Errorf("%w: %w", errPortInUse, err)
			}
			return err
		}
		ok, detail := check(ctx)
		if ok {
			return nil
		}
		if detail != "" {
			last = detail
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not ok after %s (%v); last answer: %s; log %s ends with:\n%s",
				what, c.startTimeout, context.Cause(ctx), last, p.logPath, p.logTail(40))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// firstStartAPIServer picks the apiserver's port (retrying with another if
// it was taken) and fixes its command line for later restarts.
func (c *Cluster) firstStartAPIServer(ctx context.Context, extra []string) error {
	hc, err := rest.HTTPClientFor(c.AdminConfig)
	if err != nil {
		return err
	}
	hc.Timeout = 5 * time.Second
	c.readyClient = hc
	var lastErr error
	for attempt := 1; attempt <= portAttempts; attempt++ {
		ports, err := freePorts(1)
		if err != nil {
			return err
		}
		c.URL = "https://" + hostPort(ports[0])
		c.AdminConfig.Host = c.URL
		c.mu.Lock()
		c.apiserverArgs = append(c.baseAPIServerArgs(ports[0]), extra...)
		c.mu.Unlock()
		err = c.StartAPIServer(ctx)
		if err == nil || !errors.Is(err, errPortInUse) {
			return err
		}
		lastErr = err
		c.logf("cluster: kube-apiserver port taken, retrying with another: %v", err)
	}
	return lastErr
}

// baseAPIServerArgs is the kube-apiserver command line for port.
func (c *Cluster) baseAPIServerArgs(port int) []string {
	return []string{
		"--etcd-servers=" + c.EtcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(c.Dir, "apiserver-certs"),
		"--tls-cert-file=" + c.pki("apiserver.crt"),
		"--tls-private-key-file=" + c.pki("apiserver.key"),
		"--client-ca-file=" + c.pki("ca.crt"),
		"--service-account-key-file=" + c.pki("sa.pub"),
		"--service-account-signing-key-file=" + c.pki("sa.key"),
		"--service-account-issuer=" + ServiceAccountIssuer,
		"--api-audiences=" + ServiceAccountIssuer,
		"--authorization-mode=Node,RBAC",
		"--service-cluster-ip-range=" + ServiceClusterIPRange,
		"--allow-privileged=true",
		"--requestheader-client-ca-file=" + c.pki("front-proxy-ca.crt"),
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + c.pki("front-proxy-client.crt"),
		"--proxy-client-key-file=" + c.pki("front-proxy-client.key"),
		// Tests and benchmarks must not be throttled by API Priority and
		// Fairness; the plain in-flight limits apply instead, set high.
		"--enable-priority-and-fairness=false",
		"--max-requests-inflight=2000",
		"--max-mutating-requests-inflight=1000",
		"--profiling=false",
	}
}

// APIServerArgs returns the kube-apiserver command line (without the binary).
func (c *Cluster) APIServerArgs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.apiserverArgs...)
}

// StartAPIServer starts kube-apiserver (after StopAPIServer) on the same port
// with the same arguments and waits until it is ready. It is a no-op if the
// apiserver is running.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	began := time.Now()
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return errors.New("cluster is stopped")
	}
	if c.apiserver != nil && !c.apiserver.exited() {
		c.mu.Unlock()
		return nil
	}
	p, err := startProcess("kube-apiserver", c.apiserverBin, c.apiserverArgs, c.APIServerLog)
	if err != nil {
		c.mu.Unlock()
		return err
	}
	c.apiserver = p
	c.mu.Unlock()

	fail := func(err error) error {
		p.stop(apiserverStopGrace)
		return err
	}
	if err := c.waitReady(ctx, p, "kube-apiserver /readyz", c.checkReadyz); err != nil {
		return fail(err)
	}
	readyAfter := time.Since(began)
	if c.Admin == nil {
		cs, err := kubernetes.NewForConfig(c.AdminConfig)
		if err != nil {
			return fail(err)
		}
		c.Admin = cs
	}
	if err := c.waitBootstrapObjects(ctx, p); err != nil {
		return fail(err)
	}
	c.logf("cluster: kube-apiserver ready at %s (readyz after %.1fs, bootstrap objects after %.1fs)",
		c.URL, readyAfter.Seconds(), time.Since(began).Seconds())
	return nil
}

func (c *Cluster) checkReadyz(ctx context.Context) (bool, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL+"/readyz", nil)
	if err != nil {
		return false, err.Error()
	}
	resp, err := c.readyClient.Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<10))
	if resp.StatusCode == http.StatusOK {
		return true, ""
	}
	// The failing checks are the lines with "[-]".
	var failing []string
	for _, line := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(line, "[-]") {
			failing = append(failing, strings.TrimSpace(line))
		}
	}
	if len(failing) == 0 {
		return false, fmt.Sprintf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return false, fmt.Sprintf("%s: %s", resp.Status, strings.Join(failing, "; "))
}

// waitBootstrapObjects waits for the objects that components delegating
// authentication and authorization need, and for the default namespace.
func (c *Cluster) waitBootstrapObjects(ctx context.Context, p *process) error {
	check := func(ctx context.Context) (bool, string) {
		if _, err := c.Admin.CoreV1().ConfigMaps("kube-system").Get(ctx, "extension-apiserver-authentication", metav1.GetOptions{}); err != nil {
			return false, "ConfigMap kube-system/extension-apiserver-authentication: " + err.Error()
		}
		if _, err := c.Admin.RbacV1().ClusterRoles().Get(ctx, "system:auth-delegator", metav1.GetOptions{}); err != nil {
			return false, "ClusterRole system:auth-delegator: " + err.Error()
		}
		if _, err := c.Admin.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return false, "Namespace default: " + err.Error()
		}
		return true, ""
	}
	return c.waitReady(ctx, p, "bootstrap objects", check)
}

// ensureDefaultServiceAccounts creates the "default" ServiceAccount in each
// namespace, as kube-controller-manager would, so Pods can be created there.
func (c *Cluster) ensureDefaultServiceAccounts(ctx context.Context, namespaces ...string) error {
	return ensureDefaultServiceAccounts(ctx, c.Admin, namespaces...)
}

func ensureDefaultServiceAccounts(ctx context.Context, cs kubernetes.Interface, namespaces ...string) error {
	for _, ns := range namespaces {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
		_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ServiceAccount %s/default: %w", ns, err)
		}
	}
	return nil
}

// StopAPIServer stops kube-apiserver (SIGTERM, then SIGKILL after 5s). Clients
// get connection errors until StartAPIServer.
func (c *Cluster) StopAPIServer() error {
	c.mu.Lock()
	p := c.apiserver
	c.mu.Unlock()
	if p == nil {
		return nil
	}
	began := time.Now()
	if p.stop(apiserverStopGrace) {
		c.logf("cluster: kube-apiserver did not exit on SIGTERM within %s; killed", apiserverStopGrace)
	} else {
		c.logf("cluster: kube-apiserver stopped in %.1fs", time.Since(began).Seconds())
	}
	return nil
}

// RestartAPIServer stops kube-apiserver and starts it again on the same port
// with the same arguments, waiting until it is ready.
func (c *Cluster) RestartAPIServer(ctx context.Context) error {
	if err := c.StopAPIServer(); err != nil {
		return err
	}
	return c.StartAPIServer(ctx)
}

func (c *Cluster) stopProcesses() {
	c.mu.Lock()
	api, etcd := c.apiserver, c.etcd
	c.mu.Unlock()
	if api != nil && api.stop(apiserverStopGrace) {
		c.logf("cluster: kube-apiserver did not exit on SIGTERM within %s; killed", apiserverStopGrace)
	}
	if etcd != nil && etcd.stop(etcdStopGrace) {
		c.logf("cluster: etcd did not exit on SIGTERM within %s; killed", etcdStopGrace)
	}
}

// Stop stops kube-apiserver, then etcd (SIGTERM, then SIGKILL after 5s), and
// removes the work directory if Start created it. It is safe to call twice.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return nil
	}
	c.stopped = true
	c.mu.Unlock()
	began := time.Now()
	c.stopProcesses()
	if c.readyClient != nil {
		c.readyClient.CloseIdleConnections()
	}
	c.logf("cluster: stopped in %.1fs", time.Since(began).Seconds())
	if c.ownDir {
		if err := os.RemoveAll(c.Dir); err != nil {
			return fmt.Errorf("removing %s: %w", c.Dir, err)
		}
	}
	return nil
}
