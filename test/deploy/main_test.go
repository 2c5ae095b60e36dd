// Package deploy checks what an operator deploys, as they deploy it:
//
//   - systemd/polyccm.service with `systemd-analyze verify` and
//     `systemd-analyze security` (exposure 2.0 or lower), its keys against
//     the drivers' secrets, and systemd/polyccm.default against the config;
//   - the binary started with the unit's command line and environment
//     (NOTIFY_SOCKET, WATCHDOG_USEC, CREDENTIALS_DIRECTORY) against a real
//     kube-apiserver, speaking sd_notify;
//   - packaging/kubernetes/*.yaml applied with server-side dry-run to a real
//     kube-apiserver, so a schema error fails, and their probes, mounts and
//     identities checked against the binary and rbac.yaml.
//
// It needs systemd-analyze (Debian package systemd) and the control-plane
// binaries of `make tools`; without the latter the cluster tests skip, or
// fail under CCMTEST_REQUIRE_CLUSTER=1. The binary is $CCMTEST_POLYCCM_BIN
// or a fresh build.
package deploy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/polyccm/polyccm/test/cluster"
	"github.com/polyccm/polyccm/test/harness"
)

// workDir holds the shared control plane and the binary; removed at the end
// unless a test failed.
var workDir string

func TestMain(m *testing.M) {
	var err error
	workDir, err = os.MkdirTemp("", "polyccm-deploy-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if shared.cp != nil {
		if err := shared.cp.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the control plane: %v\n", err)
		}
	}
	if code == 0 {
		os.RemoveAll(workDir)
	} else {
		fmt.Fprintf(os.Stderr, "deploy: kept %s (polyccm and control-plane logs)\n", workDir)
	}
	os.Exit(code)
}

var shared struct {
	cpOnce sync.Once
	cp     *harness.ControlPlane
	cpErr  error

	binOnce sync.Once
	bin     string
	binErr  error
}

// controlPlane is one etcd + kube-apiserver with rbac.yaml applied, shared
// by the package's tests. It skips t (fails under CCMTEST_REQUIRE_CLUSTER)
// without the binaries.
func controlPlane(t *testing.T) *harness.ControlPlane {
	t.Helper()
	cluster.SkipIfNoBinaries(t)
	shared.cpOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		shared.cp, shared.cpErr = harness.StartControlPlane(ctx, cluster.Options{Dir: filepath.Join(workDir, "cluster")})
	})
	if shared.cpErr != nil {
		t.Fatalf("starting the local control plane: %v", shared.cpErr)
	}
	return shared.cp
}

// polyccmBin is the binary under test: $CCMTEST_POLYCCM_BIN, else built once.
func polyccmBin(t *testing.T) string {
	t.Helper()
	shared.binOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		shared.bin, shared.binErr = harness.Polyccm(ctx, workDir)
	})
	if shared.binErr != nil {
		t.Fatalf("building polyccm: %v", shared.binErr)
	}
	return shared.bin
}

// repoFile reads a file of the repository, by its path from the root.
func repoFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(harness.RepoRoot(), rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
