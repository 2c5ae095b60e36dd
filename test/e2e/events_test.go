//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/polyccm/polyccm/drivers/hetzner"
)

// maxEventMessage is the bound polyccm keeps every event message within
// (core/redact.MaxEvent), whoever records it.
const maxEventMessage = 1024

// allEvents are the events on a Service in default, as the API holds them.
func allEvents(t *testing.T, name string) []v1.Event {
	t.Helper()
	list, err := cp.Admin.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// eventsSummary is the events, each cut short, for a failure message.
func eventsSummary(evs []v1.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "\n  %s %s ×%d (%d bytes): %.300s", ev.Type, ev.Reason, ev.Count, len(ev.Message), ev.Message)
	}
	return b.String()
}

// A Service whose annotation holds a huge invalid value (100 KB for the
// Hetzner load balancer type, which polyccm looks up and reports as
// unknown, quoting it) gets events of at most 1 KiB, on every retry: the
// upstream service controller's SyncLoadBalancerFailed, made of the error
// polyccm returns, as well as polyccm's own InvalidLoadBalancerConfig. The
// whole value is in polyccm's log, as the events' tail says.
func TestHugeAnnotationMakesShortEvents(t *testing.T) {
	e, _ := newHZEnv(t, hzOptions{})
	e.nodeServers(2, "fsn1")
	huge := "lb11-" + strings.Repeat("x0y1z2", 100<<10/6)
	const name = "ev-huge-type"
	createService(t, name, map[string]string{hetzner.AnnType: huge, hetzner.AnnLocation: "fsn1"}, tcp(80))

	// The first sync and one retry (the controller comes back after 5s).
	eventually(t, 60*time.Second, "two SyncLoadBalancerFailed and an InvalidLoadBalancerConfig event", func() (bool, string) {
		evs := allEvents(t, name)
		failed, invalid := int32(0), false
		for _, ev := range evs {
			switch ev.Reason {
			case "SyncLoadBalancerFailed":
				failed += ev.Count
			case "InvalidLoadBalancerConfig":
				invalid = true
			}
		}
		return failed >= 2 && invalid, eventsSummary(evs)
	})
	evs := allEvents(t, name)
	for _, ev := range evs {
		if len(ev.Message) > maxEventMessage {
			t.Errorf("%s %s event of %d bytes", ev.Type, ev.Reason, len(ev.Message))
		}
		if ev.Reason == "SyncLoadBalancerFailed" && (!strings.Contains(ev.Message, hetzner.AnnType) || !strings.Contains(ev.Message, "see polyccm's log")) {
			t.Errorf("the failure does not say what failed, or where the rest is: %.300s", ev.Message)
		}
	}
	t.Logf("events:%s", eventsSummary(evs))
	if !strings.Contains(e.ccm.Log(), huge) {
		t.Errorf("polyccm's log does not hold the whole value the events leave out")
	}
	deleteServiceAndWait(t, name, time.Minute)
}

// While the cloud rejects polyccm's credentials, a Service's sync fails
// on every retry, each time with a new request ID in the cloud's answer.
// The Warning events leave the ID out (polyccm's log keeps it), so the
// recorder folds the retries into one event with a count instead of a new
// event per retry.
func TestCredentialOutageEventsAggregate(t *testing.T) {
	for _, c := range []struct {
		cloud string
		// start makes the cloud's environment with two Nodes and returns
		// how to revoke and restore polyccm's credentials.
		start func(t *testing.T) (e *env, revoke, restore func())
		// requestID matches the cloud's request ID as its SDK quotes it.
		requestID *regexp.Regexp
		ann       map[string]string
	}{
		{"hetzner", func(t *testing.T) (*env, func(), func()) {
			e, _ := newHZEnv(t, hzOptions{})
			e.nodeServers(2, "fsn1")
			return e.env, func() { e.fake.SetToken("hz" + strings.Repeat("0thr", 15) + "tk") }, func() { e.fake.SetToken(e.token) }
		}, regexp.MustCompile(`\((?:unauthorized|unknown_error), [0-9a-f]{8,}\)`), map[string]string{hetzner.AnnLocation: "fsn1"}},
		{"digitalocean", func(t *testing.T) (*env, func(), func()) {
			e, _ := lbNodes(t, 2, nil)
			return e.env, func() { e.fake.SetToken("dop_v1_" + strings.Repeat("0ther", 12)) }, func() { e.fake.SetToken(e.token) }
		}, regexp.MustCompile(`\(request "[^"]*"\)`), nil},
	} {
		t.Run(c.cloud, func(t *testing.T) {
			e, revoke, restore := c.start(t)
			revoke()
			name := "ev-outage-" + c.cloud
			createService(t, name, c.ann, tcp(80))
			// The controller retries after 5s, 10s, 20s: three failures
			// within about 15s.
			eventually(t, 60*time.Second, "three failed syncs of "+name, func() (bool, string) {
				evs := allEvents(t, name)
				n := int32(0)
				for _, ev := range evs {
					if ev.Reason == "SyncLoadBalancerFailed" {
						n += ev.Count
					}
				}
				return n >= 3, eventsSummary(evs)
			})
			evs := allEvents(t, name)
			var failed []v1.Event
			for _, ev := range evs {
				if c.requestID.MatchString(ev.Message) {
					t.Errorf("%s event carries the cloud's request ID: %s", ev.Reason, ev.Message)
				}
				if ev.Reason == "SyncLoadBalancerFailed" {
					failed = append(failed, ev)
				}
			}
			if len(failed) != 1 || failed[0].Count < 3 {
				t.Errorf("%d SyncLoadBalancerFailed events; want one, counted 3 times or more:%s", len(failed), eventsSummary(failed))
			}
			t.Logf("events:%s", eventsSummary(evs))
			if !c.requestID.MatchString(e.ccm.Log()) {
				t.Errorf("polyccm's log does not keep the request IDs the events leave out")
			}
			restore()
			deleteServiceAndWait(t, name, 2*time.Minute)
		})
	}
}
