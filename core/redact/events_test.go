package redact_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/digitalocean/godo"
	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	computev1 "google.golang.org/api/compute/v1"
	"google.golang.org/api/option"

	"github.com/polyccm/polyccm/core/redact"
)

// cloudError makes the errors a cloud's own SDK makes of two 401 answers
// of one server, the first carrying the request ID id1 and the second id2,
// as that cloud sends them.
type cloudError func(t *testing.T, id1, id2 string) (error, error)

// serve answers the n-th request with status, and body and header in which
// "$ID" is ids[n].
func serve(t *testing.T, ids []string, status int, body string, header map[string]string) string {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		id := ids[min(int(n.Add(1))-1, len(ids)-1)]
		for k, v := range header {
			w.Header().Set(k, strings.ReplaceAll(v, "$ID", id))
		}
		w.WriteHeader(status)
		fmt.Fprint(w, strings.ReplaceAll(body, "$ID", id))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// twice makes the two errors of call.
func twice(call func() error) (error, error) { return call(), call() }

var sdkErrors = map[string]cloudError{
	"godo (DigitalOcean)": func(t *testing.T, id1, id2 string) (error, error) {
		url := serve(t, []string{id1, id2}, 401, `{"id":"unauthorized","message":"Unable to authenticate you","request_id":"$ID"}`, map[string]string{"Content-Type": "application/json"})
		c, err := godo.New(http.DefaultClient, godo.SetBaseURL(url+"/"))
		if err != nil {
			t.Fatal(err)
		}
		return twice(func() error {
			_, _, err := c.Droplets.List(context.Background(), &godo.ListOptions{PerPage: 200})
			return err
		})
	},
	"hcloud-go (Hetzner)": func(t *testing.T, id1, id2 string) (error, error) {
		url := serve(t, []string{id1, id2}, 401, `{"error":{"code":"unauthorized","message":"unable to authenticate","details":null}}`,
			map[string]string{"Content-Type": "application/json", "X-Correlation-Id": "$ID"})
		c := hcloud.NewClient(hcloud.WithEndpoint(url), hcloud.WithToken("t"))
		return twice(func() error {
			_, _, err := c.Server.GetByID(context.Background(), 1)
			return err
		})
	},
	"aws-sdk-go-v2 (EC2)": func(t *testing.T, id1, id2 string) (error, error) {
		url := serve(t, []string{id1, id2}, 401, `<?xml version="1.0" encoding="UTF-8"?><Response><Errors><Error><Code>AuthFailure</Code><Message>AWS was not able to validate the provided access credentials</Message></Error></Errors><RequestID>$ID</RequestID></Response>`,
			map[string]string{"Content-Type": "text/xml;charset=UTF-8"})
		c := ec2.New(ec2.Options{
			Region: "eu-west-1", BaseEndpoint: aws.String(url), Retryer: aws.NopRetryer{},
			Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
		})
		return twice(func() error {
			_, err := c.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{})
			return err
		})
	},
	"cloud.google.com/go/compute (GCE)": func(t *testing.T, id1, id2 string) (error, error) {
		url := serve(t, []string{id1, id2}, 401, `{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED",`+
			`"details":[{"@type":"type.googleapis.com/google.rpc.RequestInfo","requestId":"$ID","servingData":"x"}]}}`,
			map[string]string{"Content-Type": "application/json"})
		c, err := compute.NewInstancesRESTClient(context.Background(), option.WithEndpoint(url), option.WithoutAuthentication())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return twice(func() error {
			_, err := c.Get(context.Background(), &computepb.GetInstanceRequest{Project: "p", Zone: "europe-west1-b", Instance: "i"})
			return err
		})
	},
	"google.golang.org/api/compute/v1 (GCE health checks)": func(t *testing.T, id1, id2 string) (error, error) {
		url := serve(t, []string{id1, id2}, 401, `{"error":{"code":401,"message":"Request had invalid authentication credentials.","status":"UNAUTHENTICATED",`+
			`"details":[{"@type":"type.googleapis.com/google.rpc.RequestInfo","requestId":"$ID"}]}}`,
			map[string]string{"Content-Type": "application/json"})
		c, err := computev1.NewService(context.Background(), option.WithEndpoint(url+"/"), option.WithoutAuthentication())
		if err != nil {
			t.Fatal(err)
		}
		return twice(func() error {
			_, err := c.HttpHealthChecks.Get("p", "hc").Do()
			return err
		})
	},
}

// Each cloud's error, as its SDK writes it, loses the request ID in an
// event, and two failures that differ only in their request IDs make the
// same event message, which the event recorder counts as one event.
func TestEventDropsRequestIDs(t *testing.T) {
	for name, mk := range sdkErrors {
		t.Run(name, func(t *testing.T) {
			const id1, id2 = "0f8fad5b-d9cb-469f-a165-70867728950e", "7c9e6679-7425-40de-944b-e07fc1f90ae7"
			e1, e2 := mk(t, id1, id2)
			if e1 == nil || !strings.Contains(e1.Error(), id1) {
				t.Fatalf("the SDK's error %v does not carry the request ID: the test does not test anything", e1)
			}
			m1, m2 := redact.Event(e1.Error()), redact.Event(e2.Error())
			if strings.Contains(m1, id1) || strings.Contains(m2, id2) {
				t.Errorf("event message keeps the request ID:\n%s", m1)
			}
			if m1 != m2 {
				t.Errorf("two failures differing only in request ID give two messages:\n%s\n%s", m1, m2)
			}
			// What the failure was is still said.
			for _, word := range []string{"401", "nauthori", "uthenticat", "redentials"} {
				if strings.Contains(e1.Error(), word) && !strings.Contains(m1, word) {
					t.Errorf("%q lost %q: %q", e1, word, m1)
				}
			}
			t.Logf("%s\n -> %s", e1, m1)
		})
	}
	// The other forms an ID takes in error text: response headers, JSON
	// bodies (quoted again inside a quoted body), a GCE change's URL.
	for in, want := range map[string]string{
		`response headers map[X-Amzn-Requestid:[5c0e2a4d-1b3c-4d5e] Date:[x]]`:                                             `response headers map[X-Amzn-Requestid:[] Date:[x]]`,
		`X-Request-Id: 9c1e3a0b, status 503`:                                                                               `X-Request-Id: , status 503`,
		`body="{\"id\":\"unauthorized\",\"request_id\":\"9c1e3a0b-77\"}"`:                                                  `body="{\"id\":\"unauthorized\",\"request_id\":\"\"}"`,
		`{"@type": "type.googleapis.com/google.rpc.RequestInfo", "requestId": "0f8fad5b"}`:                                 `{"@type": "type.googleapis.com/google.rpc.RequestInfo", "requestId": ""}`,
		`POST https://compute.googleapis.com/compute/v1/projects/p/global/firewalls?alt=json&requestId=0f8fad5b-d9cb: 503`: `POST https://compute.googleapis.com/compute/v1/projects/p/global/firewalls?alt=json&requestId=: 503`,
		`StatusCode: 403, Request ID: 5c0e2a4d, denied`:                                                                    `StatusCode: 403, denied`,
	} {
		if got := redact.Event(in); got != want {
			t.Errorf("Event(%s)\n = %s\nwant %s", in, got, want)
		}
	}
	// Text that only looks a little like an ID stays.
	for _, keep := range []string{
		"Hetzner Cloud has no load balancer type \"lb99\" (invalid_input)",
		"load balancer a1b2c3 (droplet_ids [1 2] -> [1 2 3])",
		"ports (80, 443) are left out",
		"server (cx22, 12345678) is not a target",
		`GET http://127.0.0.1:8080/v2/droplets?page=1&per_page=200: 401 Unable to authenticate you`,
	} {
		if got := redact.Event(keep); got != keep {
			t.Errorf("Event(%q) = %q", keep, got)
		}
	}
}

// A long message is cut to MaxEvent bytes on a rune boundary, saying how
// much is left out; credentials are masked before the cut, so a cut never
// leaves half a secret.
func TestEventClips(t *testing.T) {
	for _, n := range []int{redact.MaxEvent + 1, 5000, 100 << 10} {
		msg := strings.Repeat("é", n/2) + "x"
		got := redact.Event(msg)
		if len(got) > redact.MaxEvent || !utf8.ValidString(got) {
			t.Fatalf("%d bytes: got %d bytes, valid UTF-8 %v", len(msg), len(got), utf8.ValidString(got))
		}
		kept := strings.Index(got, "… (")
		want := fmt.Sprintf("… (%d bytes more; see polyccm's log)", len(msg)-kept)
		if kept <= 0 || !strings.HasSuffix(got, want) || !strings.HasPrefix(msg, got[:kept]) {
			t.Errorf("%d bytes: got %q…%q, want the tail %q", len(msg), got[:20], got[kept:], want)
		}
	}
	exact := strings.Repeat("a", redact.MaxEvent)
	if got := redact.Event(exact); got != exact {
		t.Errorf("a message of exactly MaxEvent bytes changed")
	}
	secret := "Authorization: Bearer dop_v1_" + strings.Repeat("f", 64)
	long := strings.Repeat("a", redact.MaxEvent-40) + secret
	if got := redact.Event(long); strings.Contains(got, "dop_v1_ffff") {
		t.Errorf("a cut left part of a credential: %q", got[len(got)-120:])
	}
}

// EventError keeps what the error is (errors.As and errors.Is see through
// it), gives an event-sized text with room for a controller's prefix, and
// returns an error that needs no change as it is: the upstream service
// controller compares cloudprovider.ImplementedElsewhere with ==.
func TestEventError(t *testing.T) {
	if redact.EventError(nil) != nil {
		t.Fatal("EventError(nil) != nil")
	}
	plain := errors.New("load balancer a1b2 is not ready")
	if got := redact.EventError(plain); got != plain {
		t.Errorf("a short error without IDs was wrapped: %#v", got)
	}
	base := &kindError{kind: "invalid"}
	huge := fmt.Errorf("Service default/web: %s: %w", strings.Repeat("x", 100<<10), base)
	got := redact.EventError(huge)
	if n := len(got.Error()); n > redact.MaxEvent-200 {
		t.Errorf("the event text is %d bytes; it must leave room for the upstream controller's prefix", n)
	}
	var ke *kindError
	if !errors.As(got, &ke) || !errors.Is(got, base) || !errors.Is(got, huge) {
		t.Errorf("the wrapped error hides what it wraps")
	}
	withID := fmt.Errorf("hetzner load_balancers.list: unauthorized (HTTP 401): unable to authenticate (unauthorized, d5064a1f0bb9de4b)")
	if got := redact.EventError(withID).Error(); got != "hetzner load_balancers.list: unauthorized (HTTP 401): unable to authenticate (unauthorized)" {
		t.Errorf("EventError(%v) = %q", withID, got)
	}
}

type kindError struct{ kind string }

func (e *kindError) Error() string { return e.kind }
