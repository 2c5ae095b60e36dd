package gce

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/polyccm/polyccm/test/fakecloud/fakehttp/wiretest"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"golang.org/x/oauth2"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/option"
)

const (
	testProject = "test-project"
	testToken   = "ya29.test-token"
	region      = "us-central1"
	zone        = "us-central1-a"
)

// start runs a fake for the test.
func start(t *testing.T) *Server {
	t.Helper()
	s := New(testProject, testToken)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// opts points a real compute REST client at the fake, authenticating with
// token through an oauth2 token source as production code would.
func opts(s *Server, token string) []option.ClientOption {
	return []option.ClientOption{
		option.WithEndpoint(s.URL()),
		option.WithTokenSource(oauth2.StaticTokenSource(&oauth2.Token{AccessToken: token, TokenType: "Bearer"})),
	}
}

// client builds one of the compute REST clients for the fake and closes
// it when the test ends.
func client[C interface{ Close() error }](t *testing.T, s *Server, mk func(context.Context, ...option.ClientOption) (C, error)) C {
	t.Helper()
	c, err := mk(context.Background(), opts(s, testToken)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// apiErr asserts err carries a googleapi.Error with the given code and
// reason.
func apiErr(t *testing.T, err error, code int, reason string) *googleapi.Error {
	t.Helper()
	var e *googleapi.Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want a *googleapi.Error", err, err)
	}
	if e.Code != code {
		t.Fatalf("code = %d, want %d (%v)", e.Code, code, err)
	}
	if reason != "" && (len(e.Errors) == 0 || e.Errors[0].Reason != reason) {
		t.Fatalf("reasons = %+v, want %q (%v)", e.Errors, reason, err)
	}
	return e
}

// waiter returns a function that waits for an operation a call started,
// failing the test if the call or the operation does:
// wait(c.Insert(ctx, req)).
func waiter(t *testing.T) func(*compute.Operation, error) *compute.Operation {
	return func(op *compute.Operation, err error) *compute.Operation {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if err := op.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		return op
	}
}

// raw sends a request with the test token and returns the response with
// its body read.
func raw(t *testing.T, s *Server, method, path, body string) (*http.Response, []byte) {
	t.Helper()
	return wiretest.Do(t, s.URL(), testToken, method, path, body)
}

// decode parses a JSON document into generic maps.
func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	return wiretest.Decode(t, b)
}

func ptr[T any](v T) *T { return &v }

func getReq(name string) *computepb.GetInstanceRequest {
	return &computepb.GetInstanceRequest{Project: testProject, Zone: zone, Instance: name}
}
