//go:build e2e

// Package e2e runs the real polyccm binary against a real etcd and
// kube-apiserver and fake clouds that speak the clouds' wire formats. Run
// with `make test` (or go test -tags e2e ./test/e2e after `make tools`).
package e2e

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/polyccm/polyccm/test/cluster"
	"github.com/polyccm/polyccm/test/harness"
)

var (
	cp         *harness.ControlPlane
	polyccmBin string
	workDir    string
)

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var err error
	workDir, err = os.MkdirTemp("", "polyccm-e2e-")
	if err != nil {
		log.Print(err)
		return 1
	}
	if polyccmBin, err = harness.Polyccm(ctx, workDir); err != nil {
		log.Printf("building polyccm: %v", err)
		return 1
	}
	start := time.Now()
	cp, err = harness.StartControlPlane(ctx, cluster.Options{
		Dir: filepath.Join(workDir, "cluster"),
		// Dual-stack Service addresses, for dual-stack load balancers.
		ExtraAPIServerArgs: []string{"--service-cluster-ip-range=" + cluster.ServiceClusterIPRange + ",fd00:10:96::/112"},
	})
	if err != nil {
		log.Printf("starting the local control plane: %v", err)
		return 1
	}
	log.Printf("control plane up at %s in %s", cp.URL, time.Since(start).Round(time.Millisecond))
	code := m.Run()
	if err := cp.Stop(); err != nil {
		log.Printf("stopping the control plane: %v", err)
	}
	if code == 0 {
		os.RemoveAll(workDir)
	} else {
		fmt.Fprintf(os.Stderr, "e2e: kept %s (polyccm and control-plane logs)\n", workDir)
	}
	return code
}

// eventually polls cond until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, status := cond()
		if ok {
			return
		}
		last = status
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s; last: %s", timeout, what, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// never checks cond stays false for d.
func never(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if bad, status := cond(); bad {
			t.Fatalf("%s: %s", what, status)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
