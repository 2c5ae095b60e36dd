package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// EnvHelm overrides the path of the helm binary the chart tests run.
const EnvHelm = "CCMTEST_HELM"

// helmModule in test/tools/helm/go.mod names the helm binary's version.
const helmModule = "helm.sh/helm/v3"

// HelmVersion reads the pinned helm version from test/tools/helm/go.mod, a
// module of its own next to test/tools/go.mod (helm's Kubernetes libraries
// are not kube-apiserver's).
func HelmVersion() (string, error) {
	path, err := ToolModule("helm")
	if err != nil {
		return "", err
	}
	return RequiredVersion(path, helmModule)
}

// HelmBinary returns the path of helm: $CCMTEST_HELM when set, else
// ToolsDir()/helm-<version> with the version of test/tools/helm/go.mod,
// where test/tools/build.sh builds it. A missing binary gives an error
// wrapping ErrNoBinaries that says how to build it.
func HelmBinary() (string, error) {
	path := os.Getenv(EnvHelm)
	if path == "" {
		dir, err := ToolsDir()
		if err != nil {
			return "", err
		}
		v, err := HelmVersion()
		if err != nil {
			return "", err
		}
		path = filepath.Join(dir, "helm-"+v)
	}
	st, err := os.Stat(path)
	var problem string
	switch {
	case errors.Is(err, fs.ErrNotExist):
		problem = path + " does not exist"
	case err != nil:
		problem = err.Error()
	case !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0:
		problem = path + " is not an executable file"
	}
	if problem != "" {
		return "", fmt.Errorf("%w: %s; run `make tools` (or `bash test/tools/build.sh`, a few minutes for helm the first time) to build it, or set %s",
			ErrNoBinaries, problem, EnvHelm)
	}
	return path, nil
}

// HelmForTest returns HelmBinary's path, or skips tb (fails it under
// $CCMTEST_REQUIRE_CLUSTER, as a missing kube-apiserver does) without it.
func HelmForTest(tb testing.TB) string {
	tb.Helper()
	path, err := HelmBinary()
	if err != nil {
		if RequireCluster() {
			tb.Fatalf("%s is set but: %v", EnvRequireCluster, err)
		}
		tb.Skipf("skipping: no helm: %v", err)
	}
	return path
}
