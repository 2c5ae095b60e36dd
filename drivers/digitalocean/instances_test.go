package digitalocean_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/config/secret"
	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/instances"
	"github.com/polyccm/polyccm/drivers/digitalocean"
	fake "github.com/polyccm/polyccm/test/fakecloud/digitalocean"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

const (
	testToken = "dop_v1_unit_test"
	listCalls = "GET /v2/droplets"
	getCalls  = "GET /v2/droplets/{id}"
)

// startFake runs a fake DigitalOcean API for the test.
func startFake(t *testing.T) *fake.Server {
	t.Helper()
	s := fake.New(testToken)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// newSource builds the cloud exactly as the runner does: through the
// registered driver, with its registered classifier, against url. Backoff
// is tiny so retries do not slow the tests.
func newSource(t *testing.T, url string, token secret.Secret) instances.Source {
	t.Helper()
	d, ok := driver.Default().Lookup(digitalocean.Name)
	if !ok {
		t.Fatal("the digitalocean driver is not registered")
	}
	api := cloudapi.New(cloudapi.Options{
		Driver:      digitalocean.Name,
		Classify:    d.Classify,
		QPS:         1000,
		Burst:       1000,
		Timeout:     10 * time.Second,
		BaseBackoff: time.Millisecond,
		MaxBackoff:  5 * time.Millisecond,
	})
	cloud, err := d.New(&digitalocean.Config{Token: token, APIURL: url}, driver.Deps{API: api})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return cloud.Instances()
}

func inline(tok string) secret.Secret { return secret.Secret{Value: tok} }

func lookup(t *testing.T, src instances.Source, keys ...instances.Key) (instances.Answer, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return src.LookupInstances(ctx, keys)
}

// mustLookup fails the test on a batch-wide error and checks alignment.
func mustLookup(t *testing.T, src instances.Source, keys ...instances.Key) instances.Answer {
	t.Helper()
	a, err := lookup(t, src, keys...)
	if err != nil {
		t.Fatalf("LookupInstances: %v", err)
	}
	if len(a.Results) != len(keys) {
		t.Fatalf("%d results for %d keys", len(a.Results), len(keys))
	}
	return a
}

func byID(id int) instances.Key {
	return instances.Key{ProviderID: "digitalocean://" + strconv.Itoa(id)}
}

func byName(name string) instances.Key { return instances.Key{NodeName: name} }

// found asserts the result is an instance with the droplet's provider ID.
func found(t *testing.T, r instances.Result, id int) *instances.Instance {
	t.Helper()
	if r.Err != nil {
		t.Fatalf("droplet %d: error %v", id, r.Err)
	}
	if r.Instance == nil {
		t.Fatalf("droplet %d reported absent", id)
	}
	if want := digitalocean.ProviderID(id); r.Instance.ProviderID != want {
		t.Fatalf("ProviderID = %q, want %q", r.Instance.ProviderID, want)
	}
	return r.Instance
}

// absent asserts a definitive "no such instance".
func absent(t *testing.T, r instances.Result) {
	t.Helper()
	if r.Err != nil || r.Instance != nil {
		t.Fatalf("result = %+v (err %v), want definitively absent", r.Instance, r.Err)
	}
}

func sortedAddrs(a []v1.NodeAddress) []string {
	out := make([]string, len(a))
	for i, x := range a {
		out[i] = string(x.Type) + "=" + x.Address
	}
	sort.Strings(out)
	return out
}

func TestLookupMapsEveryField(t *testing.T) {
	f := startFake(t)
	d := f.AddDroplet(fake.Droplet{
		Name: "web-1", SizeSlug: "s-2vcpu-4gb", Region: "fra1",
		PrivateIPv4: "10.20.0.5", PublicIPv4: "198.18.7.5", IPv6: "2001:db8:1::5",
	})
	src := newSource(t, f.URL(), inline(testToken))

	a := mustLookup(t, src, byID(d.ID), byName("web-1"))
	want := []string{
		"ExternalIP=198.18.7.5",
		"ExternalIP=2001:db8:1::5",
		"Hostname=web-1",
		"InternalIP=10.20.0.5",
	}
	for i, how := range []string{"by providerID", "by name"} {
		inst := found(t, a.Results[i], d.ID)
		if inst.Name != "web-1" || inst.InstanceType != "s-2vcpu-4gb" || inst.Region != "fra1" || inst.Zone != "" || inst.Shutdown {
			t.Errorf("%s: instance = %+v", how, inst)
		}
		if got := sortedAddrs(inst.Addresses); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: addresses = %q, want %q", how, got, want)
		}
	}
}

func TestLookupWithoutAddresses(t *testing.T) {
	// A droplet without public networking has only its private address
	// and hostname; nothing is invented.
	f := startFake(t)
	d := f.AddDroplet(fake.Droplet{Name: "private-1", PublicIPv4: fake.NoIP, PrivateIPv4: "10.20.0.9"})
	src := newSource(t, f.URL(), inline(testToken))
	inst := found(t, mustLookup(t, src, byID(d.ID)).Results[0], d.ID)
	if got := sortedAddrs(inst.Addresses); strings.Join(got, ",") != "Hostname=private-1,InternalIP=10.20.0.9" {
		t.Errorf("addresses = %q", got)
	}
}

func TestLookupShutdown(t *testing.T) {
	cases := []struct {
		status   string
		shutdown bool
	}{
		{fake.StatusActive, false},
		{fake.StatusNew, false},
		{fake.StatusOff, true},
		{fake.StatusArchive, true},
	}
	f := startFake(t)
	src := newSource(t, f.URL(), inline(testToken))
	for _, c := range cases {
		t.Run(c.status, func(t *testing.T) {
			d := f.AddDroplet(fake.Droplet{Name: "node-" + c.status})
			if err := f.SetDropletStatus(d.ID, c.status); err != nil {
				t.Fatal(err)
			}
			inst := found(t, mustLookup(t, src, byID(d.ID)).Results[0], d.ID)
			if inst.Shutdown != c.shutdown {
				t.Errorf("status %s: Shutdown = %v, want %v", c.status, inst.Shutdown, c.shutdown)
			}
		})
	}
}

func TestLookupTripleSlashProviderID(t *testing.T) {
	f := startFake(t)
	d := f.AddDroplet(fake.Droplet{Name: "n1"})
	src := newSource(t, f.URL(), inline(testToken))
	a := mustLookup(t, src, instances.Key{ProviderID: "digitalocean:///" + strconv.Itoa(d.ID)})
	// The answer carries the canonical form.
	found(t, a.Results[0], d.ID)
}

func TestLookupForeignProviderIDs(t *testing.T) {
	bad := []string{
		"aws:///us-east-1a/i-0123456789abcdef0",
		"gce://project/zone/name",
		"garbage",
		"digitalocean://",
		"digitalocean://abc",
		"digitalocean://-5",
		"digitalocean://0",
		"digitalocean://12/34",
		"DigitalOcean://123",
	}
	f := startFake(t)
	d := f.AddDroplet(fake.Droplet{Name: "good"})
	src := newSource(t, f.URL(), inline(testToken))

	keys := make([]instances.Key, len(bad))
	for i, p := range bad {
		keys[i] = instances.Key{ProviderID: p}
	}
	a := mustLookup(t, src, keys...)
	for i, r := range a.Results {
		// Invalid, not "not found": a Node with someone else's provider ID
		// must never be deleted as if its instance were gone.
		if r.Err == nil || r.Instance != nil {
			t.Errorf("%q: result %+v, err %v; want an error", bad[i], r.Instance, r.Err)
			continue
		}
		if k := cloudapi.KindOf(r.Err); k != cloudapi.KindInvalid {
			t.Errorf("%q: kind %v, want %v (%v)", bad[i], k, cloudapi.KindInvalid, r.Err)
		}
	}
	if n := f.Faults().Total(); n != 0 {
		t.Errorf("%d API calls for a batch of only invalid keys, want 0", n)
	}

	// A bad key does not spoil the rest of its batch.
	a = mustLookup(t, src, instances.Key{ProviderID: "garbage"}, byID(d.ID))
	if cloudapi.KindOf(a.Results[0].Err) != cloudapi.KindInvalid {
		t.Errorf("garbage: %v", a.Results[0].Err)
	}
	found(t, a.Results[1], d.ID)
}

func TestLookupMissingIDConfirmedByGet(t *testing.T) {
	f := startFake(t)
	d := f.AddDroplet(fake.Droplet{Name: "present"})
	src := newSource(t, f.URL(), inline(testToken))
	const gone = 999
	a := mustLookup(t, src, byID(d.ID), byID(gone))
	found(t, a.Results[0], d.ID)
	absent(t, a.Results[1])
	if n := f.Faults().CallCount(listCalls); n != 1 {
		t.Errorf("%d list calls, want 1", n)
	}
	// Exactly one direct GET, for the droplet the listing lacked.
	if n := f.Faults().CallCount(getCalls); n != 1 {
		t.Errorf("%d GETs, want 1 to confirm the missing droplet", n)
	}
}

func TestLookupRacedListingFoundByGet(t *testing.T) {
	// A droplet created just after the listing was served is missing from
	// it, but the confirming GET finds it: it must not be reported absent.
	f := startFake(t)
	const lateID = 7000001
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.Handler().ServeHTTP(w, r)
		if r.Method == http.MethodGet && r.URL.Path == "/v2/droplets" {
			once.Do(func() { f.AddDroplet(fake.Droplet{ID: lateID, Name: "late"}) })
		}
	}))
	t.Cleanup(srv.Close)
	src := newSource(t, srv.URL+"/", inline(testToken))

	a := mustLookup(t, src, byID(lateID))
	found(t, a.Results[0], lateID)
	if n := f.Faults().CallCount(getCalls); n != 1 {
		t.Errorf("%d GETs, want 1", n)
	}
}

func TestLookupConfirmingGetFails(t *testing.T) {
	f := startFake(t)
	d := f.AddDroplet(fake.Droplet{Name: "present"})
	f.Faults().AddRule(faults.Rule{Match: getCalls, Status: http.StatusInternalServerError})
	src := newSource(t, f.URL(), inline(testToken))

	a := mustLookup(t, src, byID(d.ID), byID(999))
	found(t, a.Results[0], d.ID)
	r := a.Results[1]
	if r.Err == nil || r.Instance != nil {
		t.Fatalf("result = %+v, err %v; a failed confirmation must be an error, never absent", r.Instance, r.Err)
	}
	if k := cloudapi.KindOf(r.Err); k != cloudapi.KindUnavailable {
		t.Errorf("kind = %v, want %v", k, cloudapi.KindUnavailable)
	}
	if n := f.Faults().CallCount(getCalls); n < 2 {
		t.Errorf("%d GETs; a 500 should have been retried", n)
	}
}

func TestLookupMissingNameConfirmedByFilteredListing(t *testing.T) {
	f := startFake(t)
	d := f.AddDroplet(fake.Droplet{Name: "web-1"})
	src := newSource(t, f.URL(), inline(testToken))

	// The full listing is matched exactly; the name-filtered one, like the
	// API, ignores case. Finding "WEB-1" proves the second listing ran.
	a := mustLookup(t, src, byName("WEB-1"))
	found(t, a.Results[0], d.ID)
	if n := f.Faults().CallCount(listCalls); n != 2 {
		t.Errorf("%d list calls, want 2 (full, then by name)", n)
	}

	f.Faults().Reset()
	a = mustLookup(t, src, byName("ghost"))
	absent(t, a.Results[0])
	if n := f.Faults().CallCount(listCalls); n != 2 {
		t.Errorf("%d list calls, want 2 (full, then by name)", n)
	}
	if n := f.Faults().CallCount(getCalls); n != 0 {
		t.Errorf("%d GETs for a name lookup, want 0", n)
	}
}

func TestLookupDuplicateNames(t *testing.T) {
	f := startFake(t)
	d1 := f.AddDroplet(fake.Droplet{Name: "dup"})
	d2 := f.AddDroplet(fake.Droplet{Name: "dup"})
	src := newSource(t, f.URL(), inline(testToken))

	a := mustLookup(t, src, byName("dup"), byID(d2.ID))
	r := a.Results[0]
	if r.Err == nil || r.Instance != nil {
		t.Fatalf("ambiguous name: result %+v, err %v; want an error", r.Instance, r.Err)
	}
	if !strings.Contains(r.Err.Error(), "providerID") || !strings.Contains(r.Err.Error(), "2 droplets") {
		t.Errorf("error %q should say 2 droplets share the name and to set providerID", r.Err)
	}
	// By ID it is unambiguous, but the name cannot identify it.
	if inst := found(t, a.Results[1], d2.ID); inst.Name != "" {
		t.Errorf("Name = %q for a droplet whose name is not unique, want empty", inst.Name)
	}
	for _, s := range a.Seen {
		if s.Name != "" {
			t.Errorf("Seen %s has Name %q though %d and %d share it", s.ProviderID, s.Name, d1.ID, d2.ID)
		}
	}
}

func TestLookupDuplicateNamesFromFilteredListing(t *testing.T) {
	// Names differing only in case are distinct in the full listing but the
	// same to the name filter: still ambiguous.
	f := startFake(t)
	f.AddDroplet(fake.Droplet{Name: "Dup"})
	f.AddDroplet(fake.Droplet{Name: "dUP"})
	src := newSource(t, f.URL(), inline(testToken))
	r := mustLookup(t, src, byName("dup")).Results[0]
	if r.Err == nil || !strings.Contains(r.Err.Error(), "providerID") {
		t.Fatalf("result %+v, err %v; want an ambiguity error", r.Instance, r.Err)
	}
}

func TestLookupPaginates(t *testing.T) {
	f := startFake(t)
	keys := make([]instances.Key, 250)
	ids := make([]int, 250)
	for i := range keys {
		d := f.AddDroplet(fake.Droplet{Name: fmt.Sprintf("n-%03d", i)})
		keys[i], ids[i] = byID(d.ID), d.ID
	}
	src := newSource(t, f.URL(), inline(testToken))

	a := mustLookup(t, src, keys...)
	for i, r := range a.Results {
		found(t, r, ids[i])
	}
	if n := f.Faults().CallCount(listCalls); n != 2 {
		t.Errorf("%d list calls for 250 droplets, want 2 pages of 200", n)
	}
	if n := f.Faults().CallCount(getCalls); n != 0 {
		t.Errorf("%d GETs, want 0", n)
	}
	// Every listed droplet is offered for caching, once.
	seen := map[string]int{}
	for _, s := range a.Seen {
		seen[s.ProviderID]++
	}
	for _, id := range ids {
		if seen[digitalocean.ProviderID(id)] != 1 {
			t.Errorf("droplet %d appears %d times in Seen, want 1", id, seen[digitalocean.ProviderID(id)])
		}
	}
	if len(a.Seen) != len(ids) {
		t.Errorf("len(Seen) = %d, want %d", len(a.Seen), len(ids))
	}
}

func TestLookupPrefersGetsWhenCheaper(t *testing.T) {
	f := startFake(t)
	var ids []int
	for i := 0; i < 450; i++ {
		ids = append(ids, f.AddDroplet(fake.Droplet{Name: fmt.Sprintf("n-%03d", i)}).ID)
	}
	src := newSource(t, f.URL(), inline(testToken))

	// The first lookup knows nothing of the account's size: it lists.
	mustLookup(t, src, byID(ids[0]))
	if n := f.Faults().CallCount(listCalls); n != 3 {
		t.Fatalf("%d list calls for 450 droplets, want 3", n)
	}

	cases := []struct {
		name        string
		keys        []instances.Key
		lists, gets int
	}{
		{"one key: one GET beats three pages", []instances.Key{byID(ids[1])}, 0, 1},
		{"two keys: two GETs", []instances.Key{byID(ids[2]), byID(ids[3])}, 0, 2},
		{"three keys: listing is as cheap", []instances.Key{byID(ids[4]), byID(ids[5]), byID(ids[6])}, 3, 0},
		{"a name forces a listing", []instances.Key{byName("n-007")}, 3, 0},
		{"absent by GET", []instances.Key{byID(999)}, 0, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f.Faults().Reset()
			a := mustLookup(t, src, c.keys...)
			for i, r := range a.Results {
				if c.keys[i].ProviderID == "digitalocean://999" {
					absent(t, r)
				} else if r.Err != nil || r.Instance == nil {
					t.Errorf("key %v: %+v %v", c.keys[i], r.Instance, r.Err)
				}
			}
			if l, g := f.Faults().CallCount(listCalls), f.Faults().CallCount(getCalls); l != c.lists || g != c.gets {
				t.Errorf("%d list calls and %d GETs, want %d and %d", l, g, c.lists, c.gets)
			}
		})
	}
}

// When the cache expires and a refresh of every Node comes round one Node
// at a time (the node controller's workers), the first lookups are GETs;
// once the lookups made lately outnumber the listing's pages, one listing
// answers the rest through the cache: not a GET per droplet.
func TestRefreshOfEveryNodeEndsInAListing(t *testing.T) {
	f := startFake(t)
	var ids []int
	for i := 0; i < 450; i++ {
		ids = append(ids, f.AddDroplet(fake.Droplet{Name: fmt.Sprintf("n-%03d", i)}).ID)
	}
	const ttl = 2 * time.Second
	in := instances.New(newSource(t, f.URL(), inline(testToken)), instances.Options{Driver: digitalocean.Name, BatchWindow: time.Millisecond, BatchSize: 200, CacheTTL: ttl})
	get := func(id int) {
		t.Helper()
		if got, err := in.Lookup(context.Background(), byID(id)); err != nil || got == nil {
			t.Fatalf("lookup of %d: %v %v", id, got, err)
		}
	}
	get(ids[0]) // learns the account's size: a listing
	time.Sleep(ttl + 500*time.Millisecond)
	f.Faults().Reset()
	for _, id := range ids {
		get(id)
	}
	if l, g := f.Faults().CallCount(listCalls), f.Faults().CallCount(getCalls); l != 3 || g != 2 {
		t.Errorf("%d list calls and %d GETs for a refresh of 450 droplets one at a time, want 3 pages after 2 GETs", l, g)
	}
}

func TestLookupListingFails(t *testing.T) {
	f := startFake(t)
	d := f.AddDroplet(fake.Droplet{Name: "n"})
	f.Faults().AddRule(faults.Rule{Match: listCalls, Status: http.StatusInternalServerError})
	src := newSource(t, f.URL(), inline(testToken))

	a, err := lookup(t, src, byID(d.ID), byName("n"))
	if err == nil {
		t.Fatalf("LookupInstances succeeded with %+v; a failed listing must fail the batch", a)
	}
	if k := cloudapi.KindOf(err); k != cloudapi.KindUnavailable {
		t.Errorf("kind = %v, want %v (%v)", k, cloudapi.KindUnavailable, err)
	}
	// Retried to the client's limit (4 attempts by default), then given up.
	if n := f.Faults().CallCount(listCalls); n != 4 {
		t.Errorf("%d list attempts, want 4", n)
	}
	if n := f.Faults().CallCount(getCalls); n != 0 {
		t.Errorf("%d GETs after a failed listing, want 0", n)
	}
}

func TestLookupRetriesThrottling(t *testing.T) {
	f := startFake(t)
	d := f.AddDroplet(fake.Droplet{Name: "n"})
	f.Faults().AddRule(faults.Rule{Match: listCalls, Status: http.StatusTooManyRequests, RetryAfter: time.Second, Remaining: 1})
	src := newSource(t, f.URL(), inline(testToken))

	start := time.Now()
	found(t, mustLookup(t, src, byID(d.ID)).Results[0], d.ID)
	if n := f.Faults().CallCount(listCalls); n != 2 {
		t.Errorf("%d list calls, want 2 (throttled, then served)", n)
	}
	// The retry waited for Retry-After (1s), not just the tiny backoff.
	if el := time.Since(start); el < 900*time.Millisecond {
		t.Errorf("retried after %v; Retry-After: 1 was not honoured", el)
	}
}

func TestLookupUnauthorized(t *testing.T) {
	f := startFake(t)
	d := f.AddDroplet(fake.Droplet{Name: "n"})
	f.SetToken("other")
	src := newSource(t, f.URL(), inline(testToken))

	_, err := lookup(t, src, byID(d.ID))
	if k := cloudapi.KindOf(err); err == nil || k != cloudapi.KindUnauthorized {
		t.Fatalf("err = %v (kind %v), want %v", err, k, cloudapi.KindUnauthorized)
	}
	if n := f.Faults().CallCount(listCalls); n != 1 {
		t.Errorf("%d list calls; a rejected token is not retried", n)
	}
	if strings.Contains(err.Error(), testToken) {
		t.Errorf("error contains the token: %v", err)
	}
}

func TestLookupRereadsTokenFile(t *testing.T) {
	f := startFake(t)
	d := f.AddDroplet(fake.Droplet{Name: "n"})
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("revoked\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := newSource(t, f.URL(), secret.Secret{File: tokenFile})

	if _, err := lookup(t, src, byID(d.ID)); cloudapi.KindOf(err) != cloudapi.KindUnauthorized {
		t.Fatalf("with the old token: err = %v, want unauthorized", err)
	}
	// Rotating the file fixes it without rebuilding the cloud.
	if err := os.WriteFile(tokenFile, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	found(t, mustLookup(t, src, byID(d.ID)).Results[0], d.ID)
}

func TestLookupUnreadableToken(t *testing.T) {
	// A token we cannot read is a credentials problem, and nothing is sent.
	f := startFake(t)
	src := newSource(t, f.URL(), secret.Secret{File: filepath.Join(t.TempDir(), "missing")})
	_, err := lookup(t, src, byID(123))
	if k := cloudapi.KindOf(err); err == nil || k != cloudapi.KindUnauthorized {
		t.Fatalf("err = %v (kind %v), want %v", err, k, cloudapi.KindUnauthorized)
	}
	if n := f.Faults().Total(); n != 0 {
		t.Errorf("%d requests reached the API without a token", n)
	}
}

// A token file with a second line (a note, an old token) used to be sent
// as it was; the HTTP client refused the header and the call was retried
// as if the network were down. It is a credentials problem, said once,
// with nothing sent; a byte-order mark before the token is dropped.
func TestLookupTokenFileShape(t *testing.T) {
	f := startFake(t)
	d := f.AddDroplet(fake.Droplet{Name: "n"})
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(testToken+"\nthe old one: dop_v1_old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := newSource(t, f.URL(), secret.Secret{File: tokenFile})
	_, err := lookup(t, src, byID(d.ID))
	if cloudapi.KindOf(err) != cloudapi.KindUnauthorized || !strings.Contains(err.Error(), "holds 2 lines") || strings.Contains(err.Error(), "attempts") {
		t.Fatalf("err = %v, want one unauthorized error saying the file holds 2 lines", err)
	}
	if n := f.Faults().Total(); n != 0 {
		t.Errorf("%d requests reached the API", n)
	}
	if err := os.WriteFile(tokenFile, []byte("\ufeff"+testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	found(t, mustLookup(t, src, byID(d.ID)).Results[0], d.ID)
}

func TestLookupAPIURLWithPathPrefix(t *testing.T) {
	// A proxy that serves the API under a path: the prefix must be kept
	// even when the configured URL lacks a trailing slash.
	f := startFake(t)
	d := f.AddDroplet(fake.Droplet{Name: "n"})
	mux := http.NewServeMux()
	mux.Handle("/do/", http.StripPrefix("/do", f.Handler()))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	src := newSource(t, srv.URL+"/do", inline(testToken))
	found(t, mustLookup(t, src, byID(d.ID)).Results[0], d.ID)
}

func TestLookupEmptyBatch(t *testing.T) {
	f := startFake(t)
	src := newSource(t, f.URL(), inline(testToken))
	a := mustLookup(t, src)
	if len(a.Results) != 0 || f.Faults().Total() != 0 {
		t.Errorf("empty batch: %+v, %d calls", a, f.Faults().Total())
	}
}
