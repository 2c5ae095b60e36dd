package gce_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/cloud-provider/api"

	"github.com/polyccm/polyccm/config/secret"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/instances"
	"github.com/polyccm/polyccm/drivers/gce"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
	fakegce "github.com/polyccm/polyccm/test/fakecloud/gce"
)

// operationEvents are the GCEOperationFailed events recorded.
func (e *env) operationEvents() []string {
	var out []string
	for _, ev := range e.events() {
		if strings.HasPrefix(ev, "Warning GCEOperationFailed ") {
			out = append(out, ev)
		}
	}
	return out
}

// TestFailedOperationIsAnError: a change GCE accepted but whose Operation
// ended in an error is reported, with GCE's code and message, and an event
// on the Service; the next pass completes the load balancer.
func TestFailedOperationIsAnError(t *testing.T) {
	t.Parallel()
	for _, poll := range []bool{false, true} {
		name := "operation answered done"
		if poll {
			name = "operation polled"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var opts []envOpt
			if poll {
				opts = append(opts, withPolling())
			}
			e := newEnv(t, opts...)
			nodes := e.nodes("n", 2, testZone)
			svc := service(nil)
			const msg = "Quota 'FORWARDING_RULES' exceeded.  Limit: 15.0 in region us-central1."
			e.fake.FailOperations(1, fakegce.OperationFailure{Match: "forwardingRules.insert", Code: "QUOTA_EXCEEDED", Message: msg})
			st, err := e.ensure(svc, nodes)
			if err == nil {
				t.Fatalf("Ensure = %+v after the forwarding rule's operation failed", st)
			}
			if !strings.Contains(err.Error(), "QUOTA_EXCEEDED") || !strings.Contains(err.Error(), msg) {
				t.Errorf("error %q does not carry GCE's code and message", err)
			}
			if ev := e.operationEvents(); len(ev) != 1 || !strings.Contains(ev[0], "QUOTA_EXCEEDED") || !strings.Contains(ev[0], msg) {
				t.Errorf("events %q, want one GCEOperationFailed with the quota error", ev)
			}
			if _, ok := e.fake.ForwardingRule(testRegion, e.lbName(svc)); ok {
				t.Error("the failed forwarding rule exists")
			}
			// What was made is still found, so deletion would clean it up.
			if _, exists := e.get(svc); !exists {
				t.Error("GetLoadBalancer does not see the resources already made")
			}
			e.mustEnsure(svc, nodes)
			e.checkExternal(svc, nodes)
		})
	}
}

func TestServerErrorsOnCreateAreErrors(t *testing.T) {
	t.Parallel()
	for _, status := range []int{500, 503, 429} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			nodes := e.nodes("n", 1, testZone)
			svc := service(nil)
			e.fake.Faults().AddRule(faults.Rule{Match: epFRInsert, Status: status})
			_, err := e.ensure(svc, nodes)
			if err == nil {
				t.Fatal("Ensure succeeded while every forwarding rule insert failed")
			}
			want := cloudapi.KindUnavailable
			if status == 429 {
				want = cloudapi.KindThrottled
			}
			if k := kind(err); k != want {
				t.Errorf("kind %v (%v), want %v", k, err, want)
			}
			// Retried a few times, not forever.
			if n := e.calls(epFRInsert); n < 2 || n > 10 {
				t.Errorf("%d insert attempts", n)
			}
			if len(e.fake.ForwardingRules()) != 0 {
				t.Error("forwarding rule exists")
			}
		})
	}
}

// TestLostAnswersAreRetriedOnce: a change that took effect but whose
// answer was lost (a 5xx after commit) is retried with the same request
// ID, which GCE answers with the first operation instead of doing it again.
func TestLostAnswersAreRetriedOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := e.nodes("n", 3, testZone)
	svc := service(nil)
	e.fake.Faults().AddRule(faults.Rule{Match: epTPInsert, Status: 500, AfterCommit: true, Remaining: 1})
	e.fake.Faults().AddRule(faults.Rule{Match: epFRInsert, Status: 502, AfterCommit: true, Remaining: 1})
	e.mustEnsure(svc, nodes[:1])
	if n := e.calls(epTPInsert); n != 2 {
		t.Errorf("%d target pool inserts, want 2 (one lost answer, one retry)", n)
	}
	for _, kind := range []string{"targetPools", "forwardingRules"} {
		if st := e.fake.Stats()[kind]; st.Created != 1 {
			t.Errorf("%s created %d times", kind, st.Created)
		}
	}
	// Adding a member twice is an error (memberAlreadyExists), so only
	// the request ID makes this retry safe.
	e.fake.Faults().AddRule(faults.Rule{Match: epTPAdd, Status: 500, AfterCommit: true, Remaining: 1})
	if err := e.lb.UpdateLoadBalancer(ctx(t), "kubernetes", svc, nodes); err != nil {
		t.Fatalf("UpdateLoadBalancer after a lost addInstance answer: %v", err)
	}
	if n := e.calls(epTPAdd); n != 2 {
		t.Errorf("%d addInstance calls, want 2", n)
	}
	e.checkExternal(svc, nodes)

	// The same for a delete.
	e.fake.Faults().AddRule(faults.Rule{Match: epFRDelete, Status: 500, AfterCommit: true, Remaining: 1})
	e.mustDelete(svc)
	if st := e.fake.Stats()["forwardingRules"]; st.Deleted != 1 || st.Live != 0 {
		t.Errorf("forwarding rules %+v", st)
	}
	if live := e.live(); len(live) != 0 {
		t.Errorf("left: %v", live)
	}
}

// TestDeleteFailuresAreNotSuccess: whatever stops a delete, the finalizer
// stays: EnsureLoadBalancerDeleted returns an error and the resource is
// still there to retry on.
func TestDeleteFailuresAreNotSuccess(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		inject func(*fakegce.Server)
		gone   []string // kinds the failed pass still removed
		kind   cloudapi.Kind
		event  string
	}{
		{"forwarding rule 500", func(f *fakegce.Server) {
			f.Faults().AddRule(faults.Rule{Match: epFRDelete, Status: 500})
		}, nil, cloudapi.KindUnavailable, ""},
		{"forwarding rule 503", func(f *fakegce.Server) {
			f.Faults().AddRule(faults.Rule{Match: epFRDelete, Status: 503})
		}, nil, cloudapi.KindUnavailable, ""},
		{"forwarding rule throttled", func(f *fakegce.Server) {
			f.Faults().AddRule(faults.Rule{Match: epFRDelete, Status: 429})
		}, nil, cloudapi.KindThrottled, ""},
		// A health check's firewall rule goes right after it (the
		// Service's own check's rule is tried even when the check is
		// gone, so none leaks), the traffic rule last.
		{"firewall 500", func(f *fakegce.Server) {
			f.Faults().AddRule(faults.Rule{Match: epFWDelete, Status: 500})
		}, []string{"forwardingRules", "targetPools"}, cloudapi.KindUnavailable, ""},
		{"firewall operation fails", func(f *fakegce.Server) {
			f.FailOperations(1, fakegce.OperationFailure{Match: "firewalls.delete", Code: "INTERNAL_ERROR", Message: "Internal error. Please try again."})
		}, []string{"forwardingRules", "targetPools", "httpHealthChecks"}, cloudapi.KindUnknown, "INTERNAL_ERROR"},
		{"health check 500", func(f *fakegce.Server) {
			f.Faults().AddRule(faults.Rule{Match: "DELETE /compute/v1/projects/{project}/global/httpHealthChecks/*", Status: 500})
		}, []string{"forwardingRules", "targetPools"}, cloudapi.KindUnavailable, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			nodes := e.nodes("n", 1, testZone)
			svc := service(nil)
			e.mustEnsure(svc, nodes)
			before := e.live()
			e.events()
			c.inject(e.fake)
			err := e.lb.EnsureLoadBalancerDeleted(ctx(t), "kubernetes", svc)
			if err == nil {
				t.Fatalf("EnsureLoadBalancerDeleted reported success; left: %v", e.live())
			}
			if c.kind != cloudapi.KindUnknown && kind(err) != c.kind {
				t.Errorf("kind %v (%v), want %v", kind(err), err, c.kind)
			}
			if kind(err) == cloudapi.KindNotFound {
				t.Errorf("a failed delete says not found: %v", err)
			}
			after := e.live()
			for k, names := range before {
				if slices.Contains(c.gone, k) {
					if len(after[k]) != 0 {
						t.Errorf("%s %v not deleted", k, after[k])
					}
				} else if len(after[k]) == 0 {
					t.Errorf("%s %v deleted", k, names)
				}
			}
			if _, exists := e.get(svc); !exists {
				t.Error("GetLoadBalancer says the half-deleted load balancer is gone")
			}
			if c.event != "" {
				if ev := e.operationEvents(); len(ev) != 1 || !strings.Contains(ev[0], c.event) {
					t.Errorf("events %q, want one naming %s", ev, c.event)
				}
			}
			// Once the API works again the delete completes.
			e.fake.Faults().ClearRules()
			e.mustDelete(svc)
			if live := e.live(); len(live) != 0 {
				t.Errorf("left: %v", live)
			}
		})
	}
}

func TestTransientDeleteErrorsAreRetried(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	nodes := e.nodes("n", 1, testZone)
	svc := service(nil)
	e.mustEnsure(svc, nodes)
	e.fake.Faults().FailNext(epFRDelete, 1, 503)
	e.fake.Faults().FailNext(epFWDelete, 1, 429)
	e.mustDelete(svc)
	if live := e.live(); len(live) != 0 {
		t.Errorf("left: %v", live)
	}
}

// TestFollowingAnOperationFails: when the operation cannot be read, the
// outcome is unknown: an error, not success.
func TestFollowingAnOperationFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withPolling())
	nodes := e.nodes("n", 1, testZone)
	svc := service(nil)
	e.mustEnsure(svc, nodes)
	e.fake.Faults().AddRule(faults.Rule{Match: "POST /compute/v1/projects/{project}/regions/{region}/operations/{operation}/wait", Status: 500})
	err := e.lb.EnsureLoadBalancerDeleted(ctx(t), "kubernetes", svc)
	if err == nil || !strings.Contains(err.Error(), "following operation") {
		t.Fatalf("EnsureLoadBalancerDeleted = %v, want an error following the operation", err)
	}
	e.fake.Faults().ClearRules()
	e.mustDelete(svc)
	if live := e.live(); len(live) != 0 {
		t.Errorf("left: %v", live)
	}
}

// TestSlowOperationAsksToRetry: an operation still running after the
// driver's budget (10s) gives the controller a RetryError instead of
// holding its worker; the next pass finds the change made.
func TestSlowOperationAsksToRetry(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the driver's 10s operation budget")
	}
	t.Parallel()
	e := newEnv(t, withPolling())
	nodes := e.nodes("n", 1, testZone)
	svc := service(nil)
	// The fake's clock, which its operations finish by, moves only when
	// the test says.
	var mu sync.Mutex
	now := time.Now()
	e.fake.SetClock(func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	})
	e.fake.SetOperationDelay(time.Hour)
	_, err := e.ensure(svc, nodes)
	var re *api.RetryError
	if !errors.As(err, &re) || re.RetryAfter() <= 0 {
		t.Fatalf("Ensure = %v, want a RetryError", err)
	}
	if !strings.Contains(err.Error(), "still running") {
		t.Errorf("error %q does not say the operation is still running", err)
	}
	mu.Lock()
	now = now.Add(2 * time.Hour)
	mu.Unlock()
	e.fake.SetOperationDelay(0)
	e.mustEnsure(svc, nodes)
	if st := e.fake.Stats()["httpHealthChecks"]; st.Created != 1 {
		t.Errorf("health checks %+v, want the first insert's only", st)
	}
	e.checkExternal(svc, nodes)
}

// TestRejectedCredentialsAreReread: a 401 drops the clients, so the next
// call fetches a new token with the service-account key.
func TestRejectedCredentialsAreReread(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	in := e.instance("n-0", testZone)
	iv2 := e.instancesV2(instances.Options{})
	n := node(in.Name, providerID(in))
	if ok, err := iv2.InstanceExists(ctx(t), n); err != nil || !ok {
		t.Fatalf("InstanceExists = %v, %v", ok, err)
	}
	e.fake.SetToken("ya29.rotated-token")
	_, err := iv2.InstanceExists(ctx(t), n)
	if err == nil {
		t.Fatal("InstanceExists succeeded with a revoked token")
	}
	if k := kind(err); k != cloudapi.KindUnauthorized {
		t.Errorf("kind %v (%v), want unauthorized", k, err)
	}
	if instances.IsNotFound(err) {
		t.Error("a rejected token reads as not found")
	}
	if ok, err := iv2.InstanceExists(ctx(t), n); err != nil || !ok {
		t.Errorf("InstanceExists with the new token = %v, %v", ok, err)
	}
}

func TestBadCredentials(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(func(c *gce.Config) { c.Credentials = secret.Secret{Value: `{"type":"authorized_user"}`} }))
	in := e.instance("n-0", testZone)
	_, err := e.instancesV2(instances.Options{}).InstanceExists(ctx(t), node(in.Name, providerID(in)))
	if err == nil || kind(err) != cloudapi.KindUnauthorized || !strings.Contains(err.Error(), "drivers.gce.credentials") {
		t.Errorf("InstanceExists = %v (kind %v), want unauthorized naming drivers.gce.credentials", err, kind(err))
	}
	if _, err := e.ensure(service(nil), nil); err == nil {
		t.Error("EnsureLoadBalancer succeeded without credentials")
	}
	if n := e.fake.Faults().Total(); n != 0 {
		t.Errorf("%d API calls without credentials", n)
	}
}

// TestRevokedKeyIsReplacedWithoutRestart: a key the token endpoint refuses
// is a credentials rejection, and the key file is read again once it is
// replaced.
func TestRevokedKeyIsReplacedWithoutRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// A key the fake never issued (another fake's, sent to this fake's
	// token endpoint) is refused there, as a deleted key is by Google.
	stranger := fakegce.New(testProject, "ya29.stranger")
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	strangerKey, err := stranger.ServiceAccountKey("polyccm@" + testProject + ".iam.gserviceaccount.com")
	if err != nil {
		t.Fatal(err)
	}
	var key map[string]string
	if err := json.Unmarshal(strangerKey, &key); err != nil {
		t.Fatal(err)
	}
	key["token_uri"] = e.fake.URL() + fakegce.TokenPath
	badKey, err := json.Marshal(key)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "key.json")
	if err := os.WriteFile(file, badKey, 0o600); err != nil {
		t.Fatal(err)
	}
	e2 := newEnv(t, withFake(e.fake), withConfig(func(c *gce.Config) { c.Credentials = secret.Secret{File: file} }))
	in := e.instance("n-0", testZone)
	n := node(in.Name, providerID(in))
	iv2 := e2.instancesV2(instances.Options{})
	_, err = iv2.InstanceExists(ctx(t), n)
	if err == nil {
		t.Fatal("InstanceExists succeeded with a refused key")
	}
	if k := kind(err); k != cloudapi.KindUnauthorized {
		t.Errorf("kind %v (%v), want unauthorized", k, err)
	}
	if e.calls(epListInstances)+e.calls(epGetInstance) != 0 {
		t.Error("requests reached the API without a token")
	}
	goodKey, err := e.fake.ServiceAccountKey("polyccm@" + testProject + ".iam.gserviceaccount.com")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, goodKey, 0o600); err != nil {
		t.Fatal(err)
	}
	if ok, err := iv2.InstanceExists(ctx(t), n); err != nil || !ok {
		t.Errorf("InstanceExists with the replaced key = %v, %v", ok, err)
	}
}
