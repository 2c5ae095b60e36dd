package deploy

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polyccm/polyccm/config"
	fakedo "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
	"github.com/polyccm/polyccm/test/harness"
)

// notifySocket listens where systemd would (NOTIFY_SOCKET) and hands on
// each datagram.
type notifySocket struct {
	path string
	msgs chan string
}

func listenNotify(t *testing.T) *notifySocket {
	t.Helper()
	dir, err := os.MkdirTemp("", "pcn") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	n := &notifySocket{path: filepath.Join(dir, "notify"), msgs: make(chan string, 1000)}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: n.path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	go func() {
		defer close(n.msgs)
		buf := make([]byte, 4096)
		for {
			k, _, err := conn.ReadFromUnix(buf)
			if err != nil {
				return
			}
			n.msgs <- string(buf[:k])
		}
	}()
	return n
}

// states splits one sd_notify datagram into its VAR=value assignments.
func states(msg string) []string { return strings.Fields(msg) }

// TestRunsAsTheUnitRuns starts the binary with the unit's ExecStart and the
// environment systemd gives it: NOTIFY_SOCKET (Type=notify), WATCHDOG_USEC
// (WatchdogSec=), CREDENTIALS_DIRECTORY (LoadCredential=), with the cloud
// token read as {credential: NAME}. It must say READY=1 only once its
// secure port serves, ping the watchdog, and on SIGTERM say STOPPING=1 and
// exit 0 within TimeoutStopSec.
func TestRunsAsTheUnitRuns(t *testing.T) {
	u := parseUnit(t, string(repoFile(t, unitPath)))
	cp := controlPlane(t)
	bin := polyccmBin(t)

	execStart, _ := u.last("Service", "ExecStart")
	argv := strings.Fields(execStart)
	if len(argv) == 0 || argv[0] != "/usr/bin/polyccm" {
		t.Fatalf("ExecStart=%s, want /usr/bin/polyccm ...", execStart)
	}
	timeoutStop := 90 * time.Second // systemd's default
	if v, ok := u.last("Service", "TimeoutStopSec"); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("TimeoutStopSec=%s: this test reads Go durations only: %v", v, err)
		}
		timeoutStop = d
	}

	// The cloud, and its token as the systemd credential the unit loads.
	token := "dop_v1_" + strings.Repeat("d3p1", 12)
	fake := fakedo.New(token)
	if err := fake.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	credName := unitCredential(t, "digitalocean", "token")
	dir := t.TempDir()
	creds := filepath.Join(dir, "credentials")
	if err := os.Mkdir(creds, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(creds, credName), []byte(token+"\n"), 0o400); err != nil {
		t.Fatal(err)
	}

	port, err := harness.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg := harness.Settings{
		Driver:      "digitalocean",
		Kubeconfig:  cp.PolyccmKubeconfig,
		Port:        port,
		DriverBlock: fmt.Sprintf("token: {credential: %s}\napiURL: %s", credName, fake.URL()),
	}.Config()
	cfgPath := filepath.Join(dir, "polyccm.yaml") // where StartCCM writes it
	args := make([]string, 0, len(argv)-1)
	for _, a := range argv[1:] {
		if a == config.DefaultPath {
			a = cfgPath
		}
		args = append(args, a)
	}

	notify := listenNotify(t)
	const watchdog = time.Second // pings every 500ms
	ccm, err := harness.StartCCM(harness.CCMOptions{
		Bin: bin, Dir: dir, Config: cfg, Port: port, Args: args,
		Env: []string{
			"NOTIFY_SOCKET=" + notify.path,
			fmt.Sprintf("WATCHDOG_USEC=%d", watchdog.Microseconds()),
			"CREDENTIALS_DIRECTORY=" + creds,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !ccm.Exited() {
			ccm.Kill()
		}
		if strings.Contains(ccm.Log(), token) {
			t.Error("polyccm's log contains the cloud token")
		}
		if t.Failed() {
			t.Logf("polyccm log (%s), last lines:\n%s", ccm.LogPath, ccm.LogTail(60))
		}
	})

	var seen []string
	// await reads notifications until one carries want, failing on timeout
	// or if polyccm exits first.
	await := func(want string, within time.Duration) {
		t.Helper()
		deadline := time.After(within)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				if ccm.Exited() && len(notify.msgs) == 0 && want != "STOPPING=1" {
					code, _ := ccm.Wait(0)
					t.Fatalf("polyccm exited with code %d before %s; got %q", code, want, seen)
				}
			case m, ok := <-notify.msgs:
				if !ok {
					t.Fatalf("notify socket closed before %s", want)
				}
				seen = append(seen, states(m)...)
				for _, s := range states(m) {
					if s == want {
						return
					}
				}
			case <-deadline:
				code, _ := ccm.Wait(0)
				t.Fatalf("no %s on NOTIFY_SOCKET within %s (exited: %v, code %d); got %q", want, within, ccm.Exited(), code, seen)
			}
		}
	}

	// READY=1 only once the port serves: the first request after it, with
	// no retry, succeeds. The probes' paths need no credentials; /metrics
	// does.
	await("READY=1", 60*time.Second)
	for _, p := range append([]string{"/healthz"}, probePaths(t)...) {
		code, body, err := ccm.Get(p)
		if err != nil || code != http.StatusOK {
			t.Errorf("after READY=1, GET %s without credentials = %d %q, %v; want 200", p, code, body, err)
		}
	}
	if code, _, err := ccm.Get("/metrics"); err != nil || (code != http.StatusUnauthorized && code != http.StatusForbidden) {
		t.Errorf("GET /metrics without credentials = %d, %v; want 401 or 403", code, err)
	}

	// Watchdog pings at half WATCHDOG_USEC.
	start := time.Now()
	await("WATCHDOG=1", 3*watchdog)
	await("WATCHDOG=1", 3*watchdog)
	if el := time.Since(start); el > 3*watchdog {
		t.Errorf("two watchdog pings took %s, want them every %s", el, watchdog/2)
	}

	if err := ccm.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	stopAt := time.Now()
	await("STOPPING=1", timeoutStop)
	code, err := ccm.Wait(timeoutStop - time.Since(stopAt))
	if err != nil {
		t.Fatalf("polyccm did not exit within TimeoutStopSec=%s of SIGTERM: %v", timeoutStop, err)
	}
	if code != 0 {
		t.Errorf("polyccm exited %d after SIGTERM, want 0 (systemd would count a failure)", code)
	}
	ready := 0
	for _, s := range seen {
		if s == "READY=1" {
			ready++
		}
	}
	if ready != 1 {
		t.Errorf("READY=1 sent %d times, want once", ready)
	}
}
