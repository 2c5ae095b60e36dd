package cluster

import (
	"context"
	"os"
	"testing"
)

// RequireCluster reports whether $CCMTEST_REQUIRE_CLUSTER asks for missing
// binaries to fail tests rather than skip them.
func RequireCluster() bool {
	v := os.Getenv(EnvRequireCluster)
	return v == "1" || v == "true"
}

// SkipIfNoBinaries skips tb (or fails it, under $CCMTEST_REQUIRE_CLUSTER)
// when Binaries reports an error.
func SkipIfNoBinaries(tb testing.TB) {
	tb.Helper()
	if _, _, err := Binaries(); err != nil {
		if RequireCluster() {
			tb.Fatalf("%s is set but: %v", EnvRequireCluster, err)
		}
		tb.Skipf("skipping: no local control plane: %v", err)
	}
}

// ForTest starts a cluster for tb and stops it when tb ends. It skips tb (or
// fails it, under $CCMTEST_REQUIRE_CLUSTER) when the binaries are missing.
// Logf defaults to tb.Logf.
func ForTest(tb testing.TB, opts Options) *Cluster {
	tb.Helper()
	SkipIfNoBinaries(tb)
	if opts.Logf == nil {
		opts.Logf = tb.Logf
	}
	c, err := Start(context.Background(), opts)
	if err != nil {
		tb.Fatalf("starting the local control plane: %v", err)
	}
	tb.Cleanup(func() {
		if err := c.Stop(); err != nil {
			tb.Errorf("stopping the local control plane: %v", err)
		}
	})
	return c
}
