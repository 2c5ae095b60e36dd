// Package upstream runs the real upstream cloud-controller-managers, the
// ones polyccm is a drop-in replacement for, against the local control
// plane (test/cluster) and the fake clouds (test/fakecloud), so that tests
// can make a cloud account hold exactly what upstream makes and then hand
// it to polyccm.
//
// Today it runs kubernetes/cloud-provider-aws' aws-cloud-controller-manager
// at the version pinned in test/tools/upstream-aws/go.mod, which
// test/tools/build.sh (make tools) builds into the tools cache:
//
//	acct, _ := simcloud.StartAWS(simcloud.Options{}, "eu-west-1", key, secret)
//	net := acct.Fake.AddNetwork(fakeaws.NetworkSpec{...})
//	up := upstream.StartAWS(t, upstream.AWSOptions{Cluster: cp.Cluster, Account: acct, ClusterID: "e2e", VPCID: net.VPC.ID})
//	... create a LoadBalancer Service ...
//	ing := up.WaitForIngress(t, "default", "web", 2*time.Minute)
//	up.Stop(t) // before polyccm takes over
package upstream

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/polyccm/polyccm/test/cluster"
	fakeaws "github.com/polyccm/polyccm/test/fakecloud/aws"
	"github.com/polyccm/polyccm/test/harness"
	"github.com/polyccm/polyccm/test/simcloud"
)

// EnvAWSBin overrides the path of the upstream aws-cloud-controller-manager.
const EnvAWSBin = "CCMTEST_UPSTREAM_AWS_CCM"

// awsModule is the module in test/tools/upstream-aws/go.mod whose version
// names the binary.
const awsModule = "k8s.io/cloud-provider-aws"

// AWSVersion is the upstream version test/tools/upstream-aws/go.mod pins.
func AWSVersion() (string, error) {
	path, err := cluster.ToolModule("upstream-aws")
	if err != nil {
		return "", err
	}
	return cluster.RequiredVersion(path, awsModule)
}

// AWSBinary is the upstream aws-cloud-controller-manager: $CCMTEST_UPSTREAM_AWS_CCM,
// else aws-cloud-controller-manager-<version> in the tools directory. A
// missing binary is an error wrapping cluster.ErrNoBinaries that says how to
// build it.
func AWSBinary() (string, error) {
	if p := os.Getenv(EnvAWSBin); p != "" {
		return p, checkExecutable(p)
	}
	dir, err := cluster.ToolsDir()
	if err != nil {
		return "", err
	}
	v, err := AWSVersion()
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "aws-cloud-controller-manager-"+v)
	return p, checkExecutable(p)
}

func checkExecutable(p string) error {
	st, err := os.Stat(p)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %v; run `make tools` (or `bash test/tools/build.sh`, a few minutes the first time) to build it, or set %s", cluster.ErrNoBinaries, err, EnvAWSBin)
	case !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%w: %s is not an executable file", cluster.ErrNoBinaries, p)
	}
	return nil
}

// AWSOptions configure StartAWS. Cluster, Account, ClusterID and VPCID are
// required.
type AWSOptions struct {
	// Cluster is the control plane upstream runs against; it authenticates
	// as a member of system:masters.
	Cluster *cluster.Cluster
	// Account is the fake AWS account and the static key upstream uses
	// (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY).
	Account *simcloud.AWSAccount
	// ClusterID is [Global] KubernetesClusterID and --cluster-name: the
	// cluster tag upstream puts on what it creates and looks for on
	// subnets and security groups.
	ClusterID string
	// VPCID is [Global] VPC, the cluster's VPC.
	VPCID string
	// InstanceID is the instance upstream runs on, which the fake's
	// instance metadata service then describes: upstream reads its VPC and
	// subnet from it at start. Empty: StartAWS adds a control-plane
	// instance to the VPC's first subnet.
	InstanceID string
	// NLBSecurityGroups sets [Global] NLBSecurityGroupMode = Managed:
	// upstream then gives every NLB a security group of its own. Without
	// it an NLB has none and the node security groups admit its clients.
	NLBSecurityGroups bool
	// DisableSecurityGroupIngress sets the [Global] option of that name:
	// upstream then leaves the nodes' security groups alone.
	DisableSecurityGroupIngress bool
	// Controllers are the controllers to run; default "service" only.
	Controllers []string
	// ExtraGlobal are more "Key = value" lines for [Global].
	ExtraGlobal []string
	// Dir holds the cloud config, the kubeconfig and the log; default a
	// test temporary directory.
	Dir string
}

// AWS is a running upstream aws-cloud-controller-manager.
type AWS struct {
	// ConfigPath is the cloud config, LogPath its output, InstanceID the
	// instance it believes it runs on.
	ConfigPath, LogPath, InstanceID string

	cluster *cluster.Cluster
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
	stop    sync.Once
}

// StartAWS starts upstream and returns once it has started its
// controllers; it stops it when t ends, logging the tail of its output if
// t failed. It skips t when the binary is missing (fails it under
// $CCMTEST_REQUIRE_CLUSTER), and fails t on bad options or if upstream
// exits or does not start.
func StartAWS(t testing.TB, o AWSOptions) *AWS {
	t.Helper()
	bin, err := AWSBinary()
	if err != nil {
		if errors.Is(err, cluster.ErrNoBinaries) && !cluster.RequireCluster() {
			t.Skipf("skipping: no upstream aws-cloud-controller-manager: %v", err)
		}
		t.Fatal(err)
	}
	switch {
	case o.Cluster == nil || o.Account == nil:
		t.Fatal("upstream.StartAWS: AWSOptions.Cluster and Account are required")
	case o.ClusterID == "" || o.VPCID == "":
		t.Fatal("upstream.StartAWS: AWSOptions.ClusterID and VPCID are required (KubernetesClusterID and VPC of the cloud config)")
	}
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	fake := o.Account.Fake
	if o.InstanceID == "" {
		o.InstanceID = controlPlaneInstance(t, fake, o.ClusterID, o.VPCID)
	}
	if err := fake.SetIMDSInstance(o.InstanceID); err != nil {
		t.Fatalf("upstream.StartAWS: AWSOptions.InstanceID: %v", err)
	}
	kubeconfig, err := o.Cluster.KubeconfigFor("aws-cloud-controller-manager", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	u := &AWS{
		ConfigPath: filepath.Join(o.Dir, "aws-cloud-config.ini"),
		LogPath:    filepath.Join(o.Dir, "aws-cloud-controller-manager.log"),
		InstanceID: o.InstanceID,
		cluster:    o.Cluster,
		done:       make(chan struct{}),
	}
	if err := os.WriteFile(u.ConfigPath, []byte(cloudConfig(o)), 0o600); err != nil {
		t.Fatal(err)
	}
	controllers := o.Controllers
	if len(controllers) == 0 {
		controllers = []string{"service"}
	}
	args := []string{
		"--cloud-provider=aws", "--cloud-config=" + u.ConfigPath,
		"--controllers=" + strings.Join(controllers, ","),
		"--kubeconfig=" + kubeconfig, "--cluster-name=" + o.ClusterID,
		"--leader-elect=false", "--use-service-account-credentials=false",
		// No serving: tests watch the API, and a port would only collide.
		"--secure-port=0",
		"--configure-cloud-routes=false",
		"--v=2",
	}
	logf, err := os.Create(u.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	u.cmd = exec.Command(bin, args...)
	u.cmd.Stdout, u.cmd.Stderr = logf, logf
	u.cmd.Env = append(harness.CleanEnv(), o.Account.Env(o.Dir)...)
	u.cmd.Env = append(u.cmd.Env,
		"AWS_ACCESS_KEY_ID="+o.Account.AccessKey, "AWS_SECRET_ACCESS_KEY="+o.Account.SecretKey,
		// aws-sdk-go-v2 reads the metadata endpoint from here: the fake's.
		"AWS_EC2_METADATA_SERVICE_ENDPOINT="+fake.IMDSURL(),
	)
	// The child dies with the test binary, and in its own process group
	// so that a stop reaches nothing else.
	u.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := u.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	go func() {
		u.waitErr = u.cmd.Wait()
		close(u.done)
	}()
	t.Cleanup(func() {
		u.Stop(t)
		if t.Failed() {
			t.Logf("upstream aws-cloud-controller-manager log (%s), last lines:\n%s", u.LogPath, u.LogTail(80))
		}
	})
	// Ready once it has started its controllers; a bad cloud config or an
	// unreachable cloud ends it before.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(u.Log(), `Started "`) {
		select {
		case <-u.done:
			t.Fatalf("upstream aws-cloud-controller-manager exited at start (%v):\n%s", u.waitErr, u.LogTail(40))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("upstream aws-cloud-controller-manager started no controller in 30s:\n%s", u.LogTail(40))
		}
	}
	return u
}

// controlPlaneInstance adds the instance upstream runs on, as a control
// plane node of the cluster, to the VPC's first subnet.
func controlPlaneInstance(t testing.TB, fake *fakeaws.Server, clusterID, vpcID string) string {
	t.Helper()
	for _, sub := range fake.Subnets() {
		if sub.VPCID == vpcID {
			return fake.AddInstance(fakeaws.Instance{
				SubnetID: sub.ID, InstanceType: "m6i.large",
				Tags: map[string]string{"Name": clusterID + "-control-plane", fakeaws.TagClusterPrefix + clusterID: "owned"},
			}).ID
		}
	}
	t.Fatalf("upstream.StartAWS: VPC %s has no subnet for the control-plane instance", vpcID)
	return ""
}

// cloudConfig is upstream's cloud config (gcfg INI, pkg/providers/v1/config)
// with every API upstream calls pointed at the fake.
func cloudConfig(o AWSOptions) string {
	region, fake := o.Account.Region, o.Account.Fake
	var b strings.Builder
	fmt.Fprintf(&b, "[Global]\nRegion = %s\nVPC = %s\nKubernetesClusterID = %s\nDisableSecurityGroupIngress = %t\n",
		region, o.VPCID, o.ClusterID, o.DisableSecurityGroupIngress)
	if o.NLBSecurityGroups {
		b.WriteString("NLBSecurityGroupMode = Managed\n")
	}
	for _, l := range o.ExtraGlobal {
		b.WriteString(l + "\n")
	}
	// Service is the SDK client's ServiceID; the signing name must be set
	// too, as upstream passes it to the client as is.
	for k, ov := range []struct{ service, url, signingName string }{
		{"EC2", fake.EC2URL(), "ec2"},
		{"Elastic Load Balancing", fake.ELBURL(), "elasticloadbalancing"},
		{"Elastic Load Balancing v2", fake.ELBv2URL(), "elasticloadbalancing"},
	} {
		fmt.Fprintf(&b, "\n[ServiceOverride %q]\nService = %q\nRegion = %s\nURL = %s\nSigningRegion = %s\nSigningName = %s\n",
			fmt.Sprint(k+1), ov.service, region, ov.url, region, ov.signingName)
	}
	return b.String()
}

// Stop ends upstream (SIGTERM, which it does not catch, then SIGKILL after
// 10s) and waits for it; later calls do nothing. It fails t only if upstream
// had to be killed or had already died of something else.
func (u *AWS) Stop(t testing.TB) {
	t.Helper()
	u.stop.Do(func() {
		select {
		case <-u.done:
			if u.waitErr != nil {
				t.Errorf("upstream aws-cloud-controller-manager had exited before the end of the test: %v\n%s", u.waitErr, u.LogTail(40))
			}
			return
		default:
		}
		pgid := u.cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-u.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-u.done
			t.Errorf("upstream aws-cloud-controller-manager ignored SIGTERM for 10s and was killed")
		}
	})
}

// Log is everything upstream printed so far.
func (u *AWS) Log() string {
	b, _ := os.ReadFile(u.LogPath)
	return string(b)
}

// LogTail is the last n lines of the log.
func (u *AWS) LogTail(n int) string {
	lines := strings.Split(strings.TrimRight(u.Log(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// klogError is a klog line at error level: "E1128 15:04:05.000000 ...".
var klogError = regexp.MustCompile(`^E\d{4} \d\d:\d\d:\d\d`)

// ErrorLines are the lines upstream logged at error level: a call the
// fake refused or answered in a way upstream could not read shows here.
func (u *AWS) ErrorLines() []string {
	var out []string
	for _, l := range strings.Split(u.Log(), "\n") {
		if klogError.MatchString(l) {
			out = append(out, l)
		}
	}
	return out
}

// WaitForIngress waits until upstream has written the Service's load
// balancer address and returns it, failing t after timeout with the
// Service's events and upstream's log.
func (u *AWS) WaitForIngress(t testing.TB, namespace, name string, timeout time.Duration) v1.LoadBalancerIngress {
	t.Helper()
	var last string
	var ing v1.LoadBalancerIngress
	u.poll(t, timeout, func(ctx context.Context) bool {
		svc, err := u.cluster.Admin.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false
		}
		if in := svc.Status.LoadBalancer.Ingress; len(in) > 0 && (in[0].Hostname != "" || in[0].IP != "") {
			ing = in[0]
			return true
		}
		last = "no ingress yet"
		return false
	}, func() string {
		return fmt.Sprintf("Service %s/%s ingress (%s); events:\n%s", namespace, name, last, u.events(namespace, name))
	})
	return ing
}

// WaitForDeleted waits until a deleted Service is gone, which upstream
// allows (by removing its finalizer) once the load balancer is deleted.
func (u *AWS) WaitForDeleted(t testing.TB, namespace, name string, timeout time.Duration) {
	t.Helper()
	var last string
	u.poll(t, timeout, func(ctx context.Context) bool {
		svc, err := u.cluster.Admin.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true
		}
		if err == nil {
			last = fmt.Sprintf("still there, finalizers %v", svc.Finalizers)
		}
		return false
	}, func() string {
		return fmt.Sprintf("Service %s/%s to be gone (%s); events:\n%s", namespace, name, last, u.events(namespace, name))
	})
}

// poll checks cond every 200ms until it holds or timeout passes; a dead
// upstream fails at once.
func (u *AWS) poll(t testing.TB, timeout time.Duration, cond func(context.Context) bool, what func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ok := cond(ctx)
		cancel()
		if ok {
			return
		}
		select {
		case <-u.done:
			t.Fatalf("upstream aws-cloud-controller-manager exited (%v) while waiting for %s", u.waitErr, what())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// events lists a Service's events, for failure messages.
func (u *AWS) events(namespace, name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	evs, err := u.cluster.Admin.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, e := range evs.Items {
		fmt.Fprintf(&b, "  %s %s: %s\n", e.Type, e.Reason, e.Message)
	}
	return b.String()
}
