// Package harness runs polyccm the way operators do, for the e2e tests, the
// demo and the benchmark: the real binary, built with chosen driver tags,
// started with a YAML config file against the local control plane
// (test/cluster) under the least-privilege identity from
// packaging/kubernetes/rbac.yaml, talking to a fake cloud.
package harness

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/polyccm/polyccm/core/driver"
)

// EnvPolyccmBin names a prebuilt polyccm binary to use instead of building
// one (the Makefile passes bin/polyccm).
const EnvPolyccmBin = "CCMTEST_POLYCCM_BIN"

// RepoRoot is the directory holding polyccm's go.mod, found upwards from
// the working directory (go test runs in the package directory, make in the
// root). Source paths are no help: builds use -trimpath.
func RepoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.HasPrefix(b, []byte("module github.com/polyccm/polyccm\n")) {
			return d
		}
		if filepath.Dir(d) == d {
			panic("harness: not inside the polyccm repository (no go.mod for github.com/polyccm/polyccm above " + dir + ")")
		}
	}
}

// BuildPolyccm builds ./cmd/polyccm into out, with only the named drivers
// (nil: every driver), exactly as `make build DRIVERS=...` does.
func BuildPolyccm(ctx context.Context, out string, drivers []string) error {
	args := []string{"build", "-trimpath", "-o", out}
	if drivers != nil {
		args = append(args, "-tags", driver.BuildTags(drivers))
	}
	args = append(args, "./cmd/polyccm")
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = RepoRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, buf.String())
	}
	return nil
}

// Polyccm returns the binary to test: $CCMTEST_POLYCCM_BIN if set, else a
// fresh build of every driver into dir.
func Polyccm(ctx context.Context, dir string) (string, error) {
	if p := os.Getenv(EnvPolyccmBin); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvPolyccmBin, p, err)
		}
		return p, nil
	}
	out := filepath.Join(dir, "polyccm")
	return out, BuildPolyccm(ctx, out, nil)
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// CCMOptions describe one polyccm process.
type CCMOptions struct {
	Bin  string
	Dir  string // the config file and log go here
	Name string // names the files; default "polyccm"
	// Config is the YAML config file's content.
	Config string
	// Env is added to a clean environment (no POLYCCM_* or CCMTEST_*
	// variables leak in from the test's own).
	Env []string
	// Args replace the default arguments ("run --config FILE").
	Args []string
	// Port is the secure port the config sets, for WaitReady.
	Port int
}

// CCM is a running polyccm process.
type CCM struct {
	ConfigPath string
	LogPath    string
	Port       int

	cmd     *exec.Cmd
	done    chan struct{}
	mu      sync.Mutex
	waitErr error
}

// StartCCM writes the config and starts polyccm.
func StartCCM(o CCMOptions) (*CCM, error) {
	if o.Name == "" {
		o.Name = "polyccm"
	}
	c := &CCM{
		ConfigPath: filepath.Join(o.Dir, o.Name+".yaml"),
		LogPath:    filepath.Join(o.Dir, o.Name+".log"),
		Port:       o.Port,
		done:       make(chan struct{}),
	}
	if err := os.WriteFile(c.ConfigPath, []byte(o.Config), 0o600); err != nil {
		return nil, err
	}
	args := o.Args
	if args == nil {
		args = []string{"run", "--config", c.ConfigPath}
	}
	logf, err := os.Create(c.LogPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	c.cmd = exec.Command(o.Bin, args...)
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	c.cmd.Env = append(CleanEnv(), o.Env...)
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", o.Bin, err)
	}
	go func() {
		err := c.cmd.Wait()
		c.mu.Lock()
		c.waitErr = err
		c.mu.Unlock()
		close(c.done)
	}()
	return c, nil
}

// CleanEnv is the test's environment without variables polyccm would read
// as config overrides.
func CleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "POLYCCM_") || strings.HasPrefix(kv, "CCMTEST_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// Pid is the process ID.
func (c *CCM) Pid() int { return c.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (c *CCM) Exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Wait waits up to timeout for the process to end and returns its exit
// code, or an error if it is still running.
func (c *CCM) Wait(timeout time.Duration) (int, error) {
	// Done first: a select over both picks at random when the process has
	// ended and the timer (say, Wait(0)) has too.
	if !c.Exited() {
		select {
		case <-c.done:
		case <-time.After(timeout):
			return 0, fmt.Errorf("polyccm still running after %s", timeout)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var ee *exec.ExitError
	if errors.As(c.waitErr, &ee) {
		return ee.ExitCode(), nil
	}
	if c.waitErr != nil {
		return -1, c.waitErr
	}
	return 0, nil
}

// Signal sends sig to the process.
func (c *CCM) Signal(sig syscall.Signal) error { return c.cmd.Process.Signal(sig) }

// Stop sends SIGTERM and waits; SIGKILL after grace.
func (c *CCM) Stop(grace time.Duration) (exitCode int, err error) {
	if c.Exited() {
		return c.Wait(0)
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	code, err := c.Wait(grace)
	if err != nil {
		c.Kill()
		return c.Wait(5 * time.Second)
	}
	return code, nil
}

// Kill sends SIGKILL and waits for the process to end.
func (c *CCM) Kill() {
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
}

// Log returns everything the process printed so far.
func (c *CCM) Log() string {
	b, _ := os.ReadFile(c.LogPath)
	return string(b)
}

// LogTail returns the last n lines of the log.
func (c *CCM) LogTail(n int) string {
	lines := strings.Split(strings.TrimRight(c.Log(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// insecure is for polling health endpoints of a self-signed polyccm.
var insecure = &http.Client{
	Timeout:   3 * time.Second,
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // test client for a self-signed local server
}

// Get fetches https://127.0.0.1:PORT/path without credentials.
func (c *CCM) Get(path string) (int, string, error) {
	resp, err := insecure.Get(fmt.Sprintf("https://127.0.0.1:%d%s", c.Port, path))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String(), nil
}

// WaitReady waits until /readyz answers 200, failing early with the log
// tail if the process exits.
func (c *CCM) WaitReady(ctx context.Context) error {
	for {
		if c.Exited() {
			code, _ := c.Wait(0)
			return fmt.Errorf("polyccm exited with code %d before it was ready:\n%s", code, c.LogTail(30))
		}
		if code, _, err := c.Get("/readyz"); err == nil && code == http.StatusOK {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("polyccm not ready: %w\n%s", ctx.Err(), c.LogTail(30))
		case <-time.After(100 * time.Millisecond):
		}
	}
}
