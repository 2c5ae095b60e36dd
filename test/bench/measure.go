package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// auditPolicy records one line per request of user (at Metadata level,
// when the response is complete) and nothing else, so the audit log counts
// exactly polyccm's apiserver requests.
func auditPolicy(user string) string {
	return fmt.Sprintf(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
  users: [%q]
- level: None
`, user)
}

// countAudit counts the audited requests received between from and to, by
// "verb resource[/subresource]". Long-running watches opened before from
// are not counted.
func countAudit(path string, from, to time.Time) (map[string]int, error) {
	// The batching backend writes within a second.
	time.Sleep(1500 * time.Millisecond)
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the apiserver's audit log: %w", err)
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev struct {
			Verb      string    `json:"verb"`
			Received  time.Time `json:"requestReceivedTimestamp"`
			ObjectRef *struct {
				Resource    string `json:"resource"`
				Subresource string `json:"subresource"`
			} `json:"objectRef"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return nil, fmt.Errorf("audit log %s: %w", path, err)
		}
		if ev.Received.Before(from) || ev.Received.After(to) {
			continue
		}
		key := ev.Verb
		if ev.ObjectRef != nil {
			key += " " + ev.ObjectRef.Resource
			if ev.ObjectRef.Subresource != "" {
				key += "/" + ev.ObjectRef.Subresource
			}
		}
		out[key]++
	}
	return out, sc.Err()
}

// clockTicks is USER_HZ, which Linux fixes at 100 for /proc.
const clockTicks = 100

// cpuSeconds is the user plus system CPU time the process used so far.
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// Fields after the command name, which is in parentheses and may hold
	// spaces: state is field 3, utime 14 and stime 15.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / clockTicks, nil
}

// statusKB reads a "Key:   123 kB" line of /proc/PID/status.
func statusKB(pid int, key string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n * 1024
		}
	}
	return 0
}

// memSampler follows a process's resident memory; the kernel's high-water
// mark (VmHWM) gives the peak between samples. Resident memory includes
// the pages of the binary itself (file-backed, shared and reclaimable,
// about 90 MiB for polyccm's SDKs and Kubernetes types); the anonymous
// part (heap and stacks) is what grows with the cluster, so it is followed
// too, by sampling.
type memSampler struct {
	pid     int
	mu      sync.Mutex
	last    int64
	max     int64
	maxAnon int64
	done    chan struct{}
	once    sync.Once
}

func newMemSampler(pid int) *memSampler {
	m := &memSampler{pid: pid, done: make(chan struct{})}
	go func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			m.sample()
			select {
			case <-m.done:
				return
			case <-t.C:
			}
		}
	}()
	return m
}

func (m *memSampler) sample() {
	rss, hwm, anon := statusKB(m.pid, "VmRSS"), statusKB(m.pid, "VmHWM"), statusKB(m.pid, "RssAnon")
	m.mu.Lock()
	defer m.mu.Unlock()
	if rss > 0 {
		m.last = rss
	}
	m.max = max(m.max, rss, hwm)
	m.maxAnon = max(m.maxAnon, anon)
}

// peakAnon is the largest anonymous resident memory sampled.
func (m *memSampler) peakAnon() int64 {
	m.sample()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.maxAnon
}

func (m *memSampler) current() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last
}

func (m *memSampler) peak() int64 {
	m.sample()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.max
}

func (m *memSampler) stop() { m.once.Do(func() { close(m.done) }) }

// countErrors counts klog error lines (what an operator would see as
// trouble), e.g. lookups that failed after their retries.
func countErrors(log string) int {
	n := 0
	for l := range strings.SplitSeq(log, "\n") {
		if strings.HasPrefix(l, "E") {
			n++
		}
	}
	return n
}

type latency struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
