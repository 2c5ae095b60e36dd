package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// process is a child process whose stdout and stderr are appended to a log
// file.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	// logOffset is the size of the log file when this run started, so that
	// diagnostics show only this run's output.
	logOffset int64
	done      chan struct{}
	waitErr   error // valid once done is closed
}

// startProcess starts bin with args in its own process group. The child gets
// SIGKILL when the thread that started it (and so the test binary) dies, so
// it cannot outlive the test even if the test panics or is killed.
func startProcess(name, bin string, args []string, logPath string) (*process, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer f.Close() // the child has its own copy of the descriptor
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	offset := st.Size()
	fmt.Fprintf(f, "==== %s: starting %s %s\n", time.Now().Format(time.RFC3339Nano), bin, strings.Join(args, " "))

	cmd := exec.Command(bin, args...)
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s (%s): %w", name, bin, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, logOffset: offset, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitDescription describes how the process exited; call only after done.
func (p *process) exitDescription() string {
	if p.waitErr == nil {
		return "exited with status 0"
	}
	return p.waitErr.Error()
}

// stop sends SIGTERM to the process group, then SIGKILL if the process has
// not exited after grace. It returns once the process has exited.
func (p *process) stop(grace time.Duration) (killed bool) {
	if p.exited() {
		return false
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
		return false
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.done
	return true
}

// logTail returns up to the last n lines this run of the process wrote to
// its log.
func (p *process) logTail(n int) string {
	data, err := p.logSinceStart()
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", p.logPath, err)
	}
	return tailLines(data, n)
}

func (p *process) logSinceStart() ([]byte, error) {
	f, err := os.Open(p.logPath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(p.logOffset, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}

// addressInUse reports whether this run of the process failed because a port
// it was given was taken in the meantime.
func (p *process) addressInUse() bool {
	data, err := p.logSinceStart()
	return err == nil && bytes.Contains(data, []byte("address already in use"))
}

func tailLines(data []byte, n int) string {
	const maxBytes = 8 << 10
	if len(data) > maxBytes {
		data = data[len(data)-maxBytes:]
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freePorts returns n distinct TCP ports on 127.0.0.1 that were free a
// moment ago. Another process may take one before it is used; callers detect
// that ("address already in use") and retry with new ports.
func freePorts(n int) ([]int, error) {
	var (
		ports     []int
		listeners []net.Listener
	)
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func hostPort(port int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// errPortInUse marks a start that failed because its port was taken.
var errPortInUse = errors.New("address already in use")
