package fakehttp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

func TestServerLifecycleAndInjection(t *testing.T) {
	s := New("test fake")
	if s.URL() != "" {
		t.Fatalf("URL before Start = %q, want empty", s.URL())
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, _, done := s.Intercept(r, "GET /thing")
		defer done()
		status := http.StatusOK
		if d.Status != 0 {
			status = d.Status
		}
		WriteJSON(w, status, map[string]string{"ok": "yes"})
		s.Record("GET /thing", status)
	})
	if err := s.Start(h); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(h); err == nil {
		t.Fatal("second Start succeeded")
	}
	s.Faults().FailNext("GET /thing", 1, 503)
	for _, want := range []int{503, 200} {
		resp, err := http.Get(s.URL())
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("status %d, want %d", resp.StatusCode, want)
		}
	}
	if got := s.Faults().Responses("GET /thing"); got[503] != 1 || got[200] != 1 {
		t.Fatalf("counted %v", got)
	}

	// A request held by a Timeout rule is released by Close rather than
	// holding Close forever, and the client sees a broken connection.
	s.Faults().AddRule(faults.Rule{Match: "GET /thing", Timeout: true})
	errc := make(chan error, 1)
	go func() {
		resp, err := http.Get(s.URL())
		if err == nil {
			resp.Body.Close()
			err = errors.New("answered")
		}
		errc <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for s.Faults().CallCount("GET /thing") < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return with a request held")
	}
	if err := <-errc; err == nil || err.Error() == "answered" {
		t.Fatalf("held request: %v, want a broken connection", err)
	}
	select {
	case <-s.Closing():
	default:
		t.Fatal("Closing not done after Close")
	}
}

func TestInterceptContextEndsWithClient(t *testing.T) {
	s := New("test fake")
	s.Faults().AddRule(faults.Rule{Match: "*", Timeout: true})
	ctx, cancel := context.WithCancel(context.Background())
	r := httptest.NewRequest("GET", "/", nil).WithContext(ctx)
	cancel()
	defer func() {
		if v := recover(); v != http.ErrAbortHandler {
			t.Fatalf("recovered %v, want http.ErrAbortHandler", v)
		}
		if got := s.Faults().Responses("GET /"); got[faults.NoResponse] != 1 {
			t.Fatalf("abandoned request counted as %v", got)
		}
	}()
	s.Intercept(r, "GET /")
}

func TestRequestIDIsUUIDv4(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	a, b := RequestID(), RequestID()
	if !re.MatchString(a) || a == b {
		t.Fatalf("request IDs %q, %q", a, b)
	}
}

func TestRetryAfterRoundsUp(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "", 100 * time.Millisecond: "1", time.Second: "1", 1500 * time.Millisecond: "2"} {
		h := http.Header{}
		SetRetryAfter(h, d)
		if got := h.Get("Retry-After"); got != want {
			t.Errorf("SetRetryAfter(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestEncodeXMLHasHeader(t *testing.T) {
	type doc struct {
		XMLName struct{} `xml:"Doc"`
		A       string   `xml:"A"`
	}
	if got, want := string(EncodeXML(doc{A: "x"})), XMLHeader+"<Doc><A>x</A></Doc>"; got != want {
		t.Fatalf("EncodeXML = %q, want %q", got, want)
	}
}
