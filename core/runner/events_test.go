package runner

import (
	"context"
	"errors"
	"github.com/polyccm/polyccm/core/assembly"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/instances"
	"github.com/polyccm/polyccm/core/redact"
)

// The recorder drivers and polyccm's controllers get bounds every message
// and leaves out request IDs, by whichever method it was recorded.
func TestSafeEvents(t *testing.T) {
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	fake := record.NewFakeRecorder(10)
	rec := safeEvents(fake)
	huge := strings.Repeat("lb11", 25<<10)
	withID := "unable to authenticate (unauthorized, d5064a1f0bb9de4b)"

	rec.Event(svc, v1.EventTypeWarning, "InvalidLoadBalancerConfig", "type "+huge)
	rec.Eventf(svc, v1.EventTypeWarning, "SyncFailed", "looking up: %v", withID)
	rec.AnnotatedEventf(svc, map[string]string{"a": "b"}, v1.EventTypeWarning, "Other", "%s %d%%", huge, 5)
	rec.Event(svc, v1.EventTypeNormal, "Fine", "nothing to change: 100%")
	close(fake.Events)
	var got []string
	for ev := range fake.Events {
		got = append(got, ev)
	}
	if len(got) != 4 {
		t.Fatalf("%d events, want 4", len(got))
	}
	for _, ev := range got[:3] {
		// FakeRecorder prefixes "Type Reason ".
		if len(ev) > redact.MaxEvent+64 || strings.Contains(ev, "d5064a1f0bb9de4b") {
			t.Errorf("event of %d bytes: %.200q", len(ev), ev)
		}
	}
	if got[1] != "Warning SyncFailed looking up: unable to authenticate (unauthorized)" {
		t.Errorf("event %q", got[1])
	}
	if got[3] != "Normal Fine nothing to change: 100%" {
		t.Errorf("a message that needs no change changed: %q", got[3])
	}
}

// failingRoutes fails every CreateRoute with err.
type failingRoutes struct {
	cloudprovider.Routes
	err error
}

func (f failingRoutes) CreateRoute(context.Context, string, string, *cloudprovider.Route) error {
	return f.err
}

// routeCloud has routes that fail with err.
type routeCloud struct {
	plainCloud
	err error
}

func (c routeCloud) Routes() cloudprovider.Routes { return failingRoutes{err: c.err} }

// The route controller quotes CreateRoute's error in a FailedToCreateRoute
// event: the error it gets from the cloud the runner assembles leaves the
// request ID out and is short, and is still the driver's error.
func TestSafeRoutes(t *testing.T) {
	createRoute := func(err error) error {
		t.Helper()
		c, aerr := assembly.Assemble(testDriver(driver.Routes), routeCloud{err: err}, instances.Options{Driver: "fake"}, nil)
		if aerr != nil {
			t.Fatal(aerr)
		}
		routes, _ := c.Routes()
		return routes.CreateRoute(context.Background(), "k", "hint", &cloudprovider.Route{TargetNode: types.NodeName("n1"), DestinationCIDR: "10.244.1.0/24"})
	}
	withID := errors.New("aws CreateRoute: unauthorized (HTTP 401): operation error EC2: CreateRoute, https response error StatusCode: 401, RequestID: 5c0e2a4d-1b3c-4d5e-8f90-123456789abc, api error AuthFailure: denied")
	if err := createRoute(withID); !errors.Is(err, withID) || strings.Contains(err.Error(), "5c0e2a4d") || !strings.Contains(err.Error(), "AuthFailure") {
		t.Errorf("CreateRoute = %v", err)
	}
	if err := createRoute(errors.New(strings.Repeat("x", 10<<10))); len(err.Error()) > redact.MaxEvent {
		t.Errorf("CreateRoute's error is %d bytes", len(err.Error()))
	}
	plain := errors.New("quota exceeded")
	if err := createRoute(plain); err != plain {
		t.Errorf("CreateRoute = %#v, want the error as it is", err)
	}
}
