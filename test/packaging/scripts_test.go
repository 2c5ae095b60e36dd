package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polyccm/polyccm/test/harness"
)

// stubs puts fake id, getent, groupadd, useradd and systemctl first on a
// PATH; each logs its arguments to the returned file. uid is what `id -u`
// prints; users lists the users and groups getent finds.
func stubs(t *testing.T, uid string, users ...string) (path, log string) {
	t.Helper()
	dir := t.TempDir()
	log = filepath.Join(dir, "calls")
	write := func(name, body string) {
		script := "#!/bin/sh\necho \"" + name + " $*\" >>" + log + "\n" + body + "\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("id", "echo "+uid)
	write("getent", `for u in `+strings.Join(users, " ")+`; do [ "$2" = "$u" ] && exit 0; done; exit 2`)
	write("groupadd", "")
	write("useradd", "")
	write("systemctl", "")
	return dir + ":" + os.Getenv("PATH"), log
}

// runScript runs packaging/scripts/NAME.sh with sh (dash on Debian: no
// bashisms) and returns its output and the stubs' calls.
func runScript(t *testing.T, name string, env []string, args ...string) (out, calls string) {
	t.Helper()
	script := filepath.Join(harness.RepoRoot(), "packaging/scripts", name+".sh")
	cmd := exec.Command("sh", append([]string{script}, args...)...)
	cmd.Env = env
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, b)
	}
	for _, kv := range env {
		if log, ok := strings.CutPrefix(kv, "CALLS="); ok {
			c, _ := os.ReadFile(log)
			calls = string(c)
		}
	}
	return string(b), calls
}

func scriptEnv(t *testing.T, uid string, extra []string, users ...string) []string {
	path, log := stubs(t, uid, users...)
	return append([]string{"PATH=" + path, "CALLS=" + log}, extra...)
}

// The user is created once, as a system user without a home or a shell,
// for dpkg's and rpm's argument conventions alike.
func TestPreinstallCreatesTheUserIdempotently(t *testing.T) {
	for _, args := range [][]string{{"install"}, {"upgrade", "0.1.0-1"}, {"1"}, {"2"}} {
		_, calls := runScript(t, "preinstall", scriptEnv(t, "0", nil), args...)
		for _, want := range []string{
			"groupadd --system polyccm",
			"useradd --system --gid polyccm --no-create-home --home-dir /nonexistent --shell ",
		} {
			if !strings.Contains(calls, want) {
				t.Errorf("preinstall %v: no %q in its calls:\n%s", args, want, calls)
			}
		}
		if !strings.Contains(calls, `--comment polyccm cloud-controller-manager polyccm`+"\n") {
			t.Errorf("preinstall %v: useradd does not create polyccm:\n%s", args, calls)
		}

		_, calls = runScript(t, "preinstall", scriptEnv(t, "0", nil, "polyccm"), args...)
		if strings.Contains(calls, "add") {
			t.Errorf("preinstall %v with polyccm present created it again:\n%s", args, calls)
		}
	}
}

// Without root, or installing into another root (dpkg --root with
// --force-script-chrootless), preinstall changes nothing on the host.
func TestPreinstallLeavesOtherRootsAlone(t *testing.T) {
	for name, env := range map[string][]string{
		"not root":  scriptEnv(t, "1000", nil),
		"DPKG_ROOT": scriptEnv(t, "0", []string{"DPKG_ROOT=/tmp/elsewhere"}),
	} {
		out, calls := runScript(t, "preinstall", env, "install")
		if strings.Contains(calls, "add") {
			t.Errorf("%s: preinstall created users:\n%s", name, calls)
		}
		if !strings.Contains(out, "not creating the polyccm user") {
			t.Errorf("%s: preinstall did not say why it skipped the user:\n%s", name, out)
		}
	}
}

// No script ever enables or starts polyccm; only a first install explains
// how to; systemctl is only used where systemd runs.
func TestScriptsNeverEnableOrStart(t *testing.T) {
	systemd := false
	if st, err := os.Stat("/run/systemd/system"); err == nil && st.IsDir() {
		systemd = true
	}
	for _, c := range []struct {
		script  string
		args    []string
		message bool // prints how to enable polyccm
	}{
		{"postinstall", []string{"configure", ""}, true},
		{"postinstall", []string{"configure", "0.1.0-1"}, false},
		{"postinstall", []string{"abort-upgrade", "0.1.0-1"}, false},
		{"postinstall", []string{"1"}, true},
		{"postinstall", []string{"2"}, false},
		{"preremove", []string{"remove"}, false},
		{"preremove", []string{"upgrade", "0.2.0-1"}, false},
		{"preremove", []string{"0"}, false},
		{"preremove", []string{"1"}, false},
		{"postremove", []string{"remove"}, false},
		{"postremove", []string{"purge"}, false},
		{"postremove", []string{"0"}, false},
	} {
		out, calls := runScript(t, c.script, scriptEnv(t, "0", nil), c.args...)
		if got := strings.Contains(out, "installed but not enabled"); got != c.message {
			t.Errorf("%s %v: prints the enable hint: %v, want %v:\n%s", c.script, c.args, got, c.message, out)
		}
		for _, line := range strings.Split(calls, "\n") {
			if strings.HasPrefix(line, "systemctl") && (!systemd ||
				strings.Contains(line, " enable") || strings.Contains(line, " start") || strings.Contains(line, " restart ")) {
				t.Errorf("%s %v called %q", c.script, c.args, line)
			}
		}
		// With DPKG_ROOT set, nothing at all is called.
		_, calls = runScript(t, c.script, scriptEnv(t, "0", []string{"DPKG_ROOT=/tmp/elsewhere"}), c.args...)
		if strings.Contains(calls, "systemctl") {
			t.Errorf("%s %v with DPKG_ROOT called systemctl:\n%s", c.script, c.args, calls)
		}
	}
}
