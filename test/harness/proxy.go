package harness

import (
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// Proxy is a loopback TCP proxy in front of one server, so a test can cut a
// single client off it (a network partition) while the server stays up for
// everyone else. It copies bytes only: TLS passes through end to end, and
// the client still verifies the server's certificate, which for the test
// apiserver names 127.0.0.1, the proxy's address too.
type Proxy struct {
	// Addr is where clients connect, 127.0.0.1:PORT.
	Addr string

	target string
	ln     net.Listener
	wg     sync.WaitGroup

	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	accepted int
	cut      bool
}

// StartProxy listens on a free loopback port and forwards each connection
// to target (host:port).
func StartProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // the listener was closed by Cut or Close
		}
		if !p.track(c, true) {
			continue
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// track registers c so Cut closes it; it closes c instead and returns false
// if the proxy is already cut.
func (p *Proxy) track(c net.Conn, accepted bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	if accepted {
		p.accepted++
	}
	return true
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		c.Close()
	}
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		p.untrack(client)
		return
	}
	if !p.track(server, false) {
		p.untrack(client)
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	// One direction ending ends the connection: closing both sockets (in
	// untrack) stops the other copy.
	<-done
	p.untrack(client, server)
	<-done
}

// Accepted is how many connections the proxy has taken so far: a test can
// check its client really goes through it.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// Cut closes every open connection and stops listening, so the client's
// requests in flight fail at once and its new connections are refused, as
// when it loses its path to the server. It cannot be undone.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cut = true
	conns := make([]net.Conn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	_ = p.ln.Close()
	for _, c := range conns {
		// A reset rather than an orderly close: the client must not
		// mistake it for a server that finished a response.
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		_ = c.Close()
	}
}

// Close cuts the proxy and waits for its goroutines.
func (p *Proxy) Close() {
	p.Cut()
	p.wg.Wait()
}

// Kubeconfig writes to dst a copy of the kubeconfig src whose clusters are
// reached through the proxy (https://Addr); credentials and CA stay.
func (p *Proxy) Kubeconfig(src, dst string) error {
	kc, err := clientcmd.LoadFromFile(src)
	if err != nil {
		return err
	}
	if len(kc.Clusters) == 0 {
		return fmt.Errorf("%s names no cluster", src)
	}
	for _, c := range kc.Clusters {
		c.Server = "https://" + p.Addr
	}
	return clientcmd.WriteToFile(*kc, dst)
}
