package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const importToken = "dop_v1_importtest_s3cr3t_token"

// writeFile writes a test input.
func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestConfigImport(t *testing.T) {
	env := writeFile(t, "do.env", "DO_ACCESS_TOKEN="+importToken+"\nDO_CLUSTER_ID=abc\nREGION=fra1\n")
	t.Run("to stdout", func(t *testing.T) {
		code, out, errOut := cli("config", "import", "--from", "digitalocean", "--env-file", env, "--flags", "ccm --cluster-name=prod --leader-elect=false")
		if code != 0 {
			t.Fatalf("exit %d, stderr:\n%s", code, errOut)
		}
		for _, w := range []string{"driver: digitalocean", "clusterName: prod", "token: {env: DO_ACCESS_TOKEN}", "clusterID: abc"} {
			if !strings.Contains(out, w) {
				t.Errorf("stdout does not contain %q:\n%s", w, out)
			}
		}
		if !strings.Contains(errOut, "note: DO_ACCESS_TOKEN:") {
			t.Errorf("stderr does not say where the token comes from:\n%s", errOut)
		}
		if strings.Contains(out+errOut, importToken) {
			t.Errorf("the token was copied:\n%s\n%s", out, errOut)
		}
	})
	t.Run("refused", func(t *testing.T) {
		bad := writeFile(t, "bad.env", "DO_ACCESS_TOKEN="+importToken+"\nMETRICS_ADDR=:9090\n")
		outFile := filepath.Join(t.TempDir(), "ccm.yaml")
		code, out, errOut := cli("config", "import", "--from", "digitalocean", "--env-file", bad, "-o", outFile)
		if code != 1 || out != "" {
			t.Fatalf("exit %d, stdout %q; want 1 and nothing", code, out)
		}
		if !strings.Contains(errOut, "refused: METRICS_ADDR:") || !strings.Contains(errOut, "--allow-unmapped") {
			t.Errorf("stderr:\n%s", errOut)
		}
		if _, err := os.Stat(outFile); !os.IsNotExist(err) {
			t.Errorf("%s was written", outFile)
		}
		// --allow-unmapped writes the rest, and lists what is missing.
		code, _, errOut = cli("config", "import", "--from", "digitalocean", "--env-file", bad, "-o", outFile, "--allow-unmapped")
		if code != 0 || !strings.Contains(errOut, "warning: not carried over: METRICS_ADDR:") {
			t.Fatalf("exit %d, stderr:\n%s", code, errOut)
		}
		b, err := os.ReadFile(outFile)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "#   METRICS_ADDR:") {
			t.Errorf("the file does not list what is missing:\n%s", b)
		}
		if st, _ := os.Stat(outFile); st.Mode().Perm() != 0o600 {
			t.Errorf("mode %v", st.Mode())
		}
		// Never over an existing file.
		code, _, errOut = cli("config", "import", "--from", "digitalocean", "--env-file", env, "-o", outFile)
		if code != 1 || !strings.Contains(errOut, "exists") {
			t.Errorf("overwrite: exit %d, stderr %q", code, errOut)
		}
	})
	t.Run("input the upstream CCM refuses too", func(t *testing.T) {
		code, out, errOut := cli("config", "import", "--from", "digitalocean", "--env-file", env, "--flags", "--frobnicate")
		if code != 1 || out != "" || !strings.Contains(errOut, "error: command line: --frobnicate is not a flag") {
			t.Errorf("exit %d, stdout %q, stderr:\n%s", code, out, errOut)
		}
	})
	for _, args := range [][]string{
		{"config", "import"},
		{"config", "import", "--from", "azure"},
		{"config", "import", "--from", "aws", "--flags", "x", "--flags-file", "y"},
		{"config", "import", "--from", "aws", "--cloud-config", "/nonexistent/cloud.conf"},
	} {
		if code, _, errOut := cli(args...); code != 1 || !strings.HasPrefix(errOut, "polyccm config import: ") {
			t.Errorf("%q: exit %d, stderr %q", args, code, errOut)
		}
	}
}

// The built binary, end to end: import from files as an operator copies
// them off a hcloud CCM, then `config validate` accepts the result with the
// token where the import said it would be read.
func TestConfigImportBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "polyccm")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	tokenFile := writeFile(t, "hcloud-token", strings.Repeat("t", 64)+"\n")
	env := writeFile(t, "hccm.env", "HCLOUD_TOKEN_FILE="+tokenFile+"\nHCLOUD_NETWORK=k8s\nHCLOUD_LOAD_BALANCERS_LOCATION=fsn1\n")
	args := writeFile(t, "args.txt", "command:\n- /bin/hcloud-cloud-controller-manager\n- --cloud-provider=hcloud\n- --allocate-node-cidrs=true\n- --cluster-cidr=10.244.0.0/16\n- --leader-elect=false\n")
	cfg := filepath.Join(dir, "ccm.yaml")

	run := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")} // nothing of the test's environment
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("config", "import", "--from", "hetzner", "--env-file", env, "--flags-file", args, "-o", cfg)
	if err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	if !strings.Contains(out, "note: HCLOUD_TOKEN_FILE: drivers.hetzner.token is {file: "+tokenFile+"}") {
		t.Errorf("import did not say where the token is read:\n%s", out)
	}
	out, err = run("config", "validate", "--config", cfg)
	if err != nil || !strings.Contains(out, "is valid: driver hetzner") {
		t.Fatalf("validate: %v\n%s", err, out)
	}
	out, err = run("config", "show", "--config", cfg)
	if err != nil {
		t.Fatalf("show: %v\n%s", err, out)
	}
	for _, w := range []string{"routes: true", "clusterCIDR: 10.244.0.0/16", "network: k8s", "location: fsn1", "enabled: false"} {
		if !strings.Contains(out, w) {
			t.Errorf("the effective config lacks %q:\n%s", w, out)
		}
	}
}
