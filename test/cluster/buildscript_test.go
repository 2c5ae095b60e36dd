package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// fakeGo stands in for the go command in test/tools/build.sh: `go list
// -deps` names 40 packages, and `go build -v` compiles 30 of them slowly,
// downloading two modules first, then writes a binary that reports the
// version build.sh asks for.
const fakeGo = `#!/bin/sh
case "$1" in
list) i=0; while [ $i -lt 40 ]; do echo "example.com/pkg$i"; i=$((i+1)); done ;;
build)
	out=""; while [ $# -gt 0 ]; do [ "$1" = -o ] && out="$2"; shift; done
	echo "go: downloading example.com/mod1 v1.0.0" >&2
	echo "go: downloading example.com/mod2 v1.0.0" >&2
	i=0; while [ $i -lt 30 ]; do echo "example.com/pkg$i" >&2; sleep 0.1; i=$((i+1)); done
	printf '#!/bin/sh\necho "Kubernetes $FAKE_KUBE_VERSION"\necho "etcd Version: $FAKE_ETCD_VERSION"\n' > "$out"
	chmod +x "$out" ;;
esac
`

// The first build of kube-apiserver takes up to half an hour on a busy
// machine: build.sh must say how far it is while it runs, not only "about
// 5 minutes" at the start.
func TestBuildScriptShowsProgress(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(fakeGo), 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	kube, etcd, err := ToolVersions()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join(root, "test/tools/build.sh"))
	cmd.Env = append(os.Environ(),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"CCMTEST_TOOLS_DIR="+t.TempDir(),
		"CCMTEST_TOOLS_PROGRESS_SECONDS=1",
		"FAKE_KUBE_VERSION="+kube, "FAKE_ETCD_VERSION="+strings.TrimPrefix(etcd, "v"),
	)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("build.sh: %v\n%s", err, out)
	}
	lines := regexp.MustCompile(`(?m)^  kube-apiserver: (\d+) of 40 packages compiled \(2 modules downloaded\), \d+s$`).FindAllStringSubmatch(string(out), -1)
	// 30 packages 0.1 s apart: about 3 s, so two or more progress lines.
	if len(lines) < 2 {
		t.Fatalf("%d progress lines for kube-apiserver in %s, want at least 2:\n%s", len(lines), time.Since(start).Round(time.Millisecond), out)
	}
	if lines[0][1] == lines[len(lines)-1][1] {
		t.Errorf("progress does not move: %q", lines)
	}
	if strings.Contains(string(out), "example.com/pkg") {
		t.Errorf("package names leaked into the output:\n%s", out)
	}
}
