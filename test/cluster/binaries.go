package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Environment variables that locate the binaries.
const (
	// EnvKubeAPIServer overrides the path of the kube-apiserver binary.
	EnvKubeAPIServer = "CCMTEST_KUBE_APISERVER"
	// EnvEtcd overrides the path of the etcd binary.
	EnvEtcd = "CCMTEST_ETCD"
	// EnvToolsDir overrides the directory test/tools/build.sh builds into.
	EnvToolsDir = "CCMTEST_TOOLS_DIR"
	// EnvRequireCluster, when "1" or "true", makes ForTest (and this
	// package's own tests) fail instead of skip when the binaries are missing.
	// CI sets it so that a missing build step cannot pass silently.
	EnvRequireCluster = "CCMTEST_REQUIRE_CLUSTER"
)

// Modules in test/tools/go.mod whose versions name the binaries.
const (
	kubernetesModule = "k8s.io/kubernetes"
	etcdModule       = "go.etcd.io/etcd/server/v3"
)

// ErrNoBinaries is wrapped by the error Binaries returns when a binary is
// missing.
var ErrNoBinaries = errors.New("test binaries not built")

// ToolsDir is the directory test/tools/build.sh builds into:
// $CCMTEST_TOOLS_DIR, else $XDG_CACHE_HOME/polyccm-tools, else
// $HOME/.cache/polyccm-tools.
func ToolsDir() (string, error) {
	if d := os.Getenv(EnvToolsDir); d != "" {
		return d, nil
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("locating the tools directory: %w (set %s)", err, EnvToolsDir)
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "polyccm-tools"), nil
}

// ToolVersions reads the pinned kube-apiserver (k8s.io/kubernetes) and etcd
// (go.etcd.io/etcd/server/v3) versions from test/tools/go.mod, the one place
// they are recorded.
func ToolVersions() (kubeAPIServer, etcd string, err error) {
	path, err := toolsGoMod()
	if err != nil {
		return "", "", err
	}
	f, err := os.Open(path)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	versions := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 0 && fields[0] == "require" {
			fields = fields[1:]
		}
		if len(fields) >= 2 && (fields[0] == kubernetesModule || fields[0] == etcdModule) && strings.HasPrefix(fields[1], "v") {
			if _, seen := versions[fields[0]]; !seen {
				versions[fields[0]] = fields[1]
			}
		}
	}
	if err := sc.Err(); err != nil {
		return "", "", fmt.Errorf("reading %s: %w", path, err)
	}
	kubeAPIServer, etcd = versions[kubernetesModule], versions[etcdModule]
	if kubeAPIServer == "" || etcd == "" {
		return "", "", fmt.Errorf("%s does not require both %s and %s", path, kubernetesModule, etcdModule)
	}
	return kubeAPIServer, etcd, nil
}

// ToolModule is the go.mod of the module test/tools/<name> that pins a
// tool of the tests of its own (helm, the upstream CCMs).
func ToolModule(name string) (string, error) {
	tools, err := toolsGoMod()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(tools), name, "go.mod"), nil
}

// RequiredVersion reads module's version from the require lines of the
// go.mod at path.
func RequiredVersion(path, module string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 0 && fields[0] == "require" {
			fields = fields[1:]
		}
		if len(fields) >= 2 && fields[0] == module && strings.HasPrefix(fields[1], "v") {
			return fields[1], nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return "", fmt.Errorf("%s does not require %s", path, module)
}

// toolsGoMod finds test/tools/go.mod: next to this source file when the
// package was built from a checkout, else in the nearest ancestor of the
// working directory that has test/tools/go.mod (go test runs in the package
// directory, which is inside the repository).
func toolsGoMod() (string, error) {
	var tried []string
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		p := filepath.Join(filepath.Dir(file), "..", "tools", "go.mod")
		if fileExists(p) {
			return p, nil
		}
		tried = append(tried, p)
	}
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			p := filepath.Join(d, "test", "tools", "go.mod")
			if fileExists(p) {
				return p, nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
		tried = append(tried, "test/tools/go.mod in the ancestors of "+wd)
	}
	return "", fmt.Errorf("cannot find test/tools/go.mod (tried %s); set %s and %s",
		strings.Join(tried, ", "), EnvKubeAPIServer, EnvEtcd)
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// Binaries returns the paths of the kube-apiserver and etcd binaries:
// $CCMTEST_KUBE_APISERVER and $CCMTEST_ETCD when set, else
// ToolsDir()/kube-apiserver-<version> and ToolsDir()/etcd-<version> with the
// versions of test/tools/go.mod. A missing binary gives an error wrapping
// ErrNoBinaries that says how to build it.
func Binaries() (apiserver, etcd string, err error) {
	apiserver, etcd = os.Getenv(EnvKubeAPIServer), os.Getenv(EnvEtcd)
	if apiserver == "" || etcd == "" {
		dir, err := ToolsDir()
		if err != nil {
			return "", "", err
		}
		kv, ev, err := ToolVersions()
		if err != nil {
			return "", "", err
		}
		if apiserver == "" {
			apiserver = filepath.Join(dir, "kube-apiserver-"+kv)
		}
		if etcd == "" {
			etcd = filepath.Join(dir, "etcd-"+ev)
		}
	}
	var problems []string
	for _, p := range []string{apiserver, etcd} {
		st, err := os.Stat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			problems = append(problems, p+" does not exist")
		case err != nil:
			problems = append(problems, err.Error())
		case !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0:
			problems = append(problems, p+" is not an executable file")
		}
	}
	if len(problems) > 0 {
		return "", "", fmt.Errorf("%w: %s; run `make tools` (or `bash test/tools/build.sh`, about 5-10 minutes the first time) to build them, or set %s and %s",
			ErrNoBinaries, strings.Join(problems, "; "), EnvKubeAPIServer, EnvEtcd)
	}
	return apiserver, etcd, nil
}
