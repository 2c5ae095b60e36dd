package readonly

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/loadbalancers"
)

func TestCloudLetsReadsThroughOnly(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got = append(got, r.Method+" "+r.URL.Path+" "+string(body))
	}))
	defer srv.Close()
	g := NewCloud()
	hc := &http.Client{Transport: g.Wrap(nil)}
	form := func(action string) *http.Request {
		r, _ := http.NewRequest(http.MethodPost, srv.URL+"/", strings.NewReader("Action="+action+"&Version=2016-11-15"))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
		return r
	}
	req := func(method, path string) *http.Request {
		r, _ := http.NewRequest(method, srv.URL+path, strings.NewReader("{}"))
		return r
	}
	reads := []*http.Request{
		req(http.MethodGet, "/v2/droplets"),
		form("DescribeInstances"),
		form("GetCallerIdentity"),
		req(http.MethodPost, "/compute/v1/projects/p/zones/z/instanceGroups/g/listInstances"),
	}
	writes := []*http.Request{
		req(http.MethodPost, "/v2/load_balancers"),
		req(http.MethodPut, "/v2/load_balancers/x"),
		req(http.MethodDelete, "/v2/load_balancers/x"),
		req(http.MethodPatch, "/compute/v1/projects/p/global/firewalls/f"),
		form("CreateSecurityGroup"),
		form("RegisterInstancesWithLoadBalancer"),
		req(http.MethodPost, "/"), // a POST that says nothing of itself
	}
	for _, r := range reads {
		if _, err := hc.Do(r); err != nil {
			t.Errorf("%s %s refused: %v", r.Method, r.URL.Path, err)
		}
	}
	for _, r := range writes {
		_, err := hc.Do(r)
		if !errors.Is(err, cloudapi.ErrReadOnly) {
			t.Errorf("%s %s: %v, want refused", r.Method, r.URL.Path, err)
		}
	}
	if len(got) != len(reads) {
		t.Errorf("the server saw %q, want the %d reads only", got, len(reads))
	}
	// The AWS body reaches the server whole after being read.
	if !strings.Contains(got[1], "Action=DescribeInstances") {
		t.Errorf("the query body arrived as %q", got[1])
	}
	if r := g.Refused(); len(r) != len(writes) || r[4] != "CreateSecurityGroup" {
		t.Errorf("refused: %q", r)
	}
	if g.Reads() != int64(len(reads)) {
		t.Errorf("reads: %d", g.Reads())
	}
}

func TestKubeRecordsWritesAndSendsReadsOnly(t *testing.T) {
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Method+" "+r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"Service","metadata":{"name":"web"}}`)
	}))
	defer srv.Close()
	k := NewKube()
	hc := &http.Client{Transport: k.Wrap(http.DefaultTransport)}
	ctx, dry := loadbalancers.WithDryRun(context.Background())

	patch, _ := http.NewRequestWithContext(ctx, http.MethodPatch, srv.URL+"/api/v1/namespaces/shop/services/web/status", strings.NewReader(`{"status":{}}`))
	resp, err := hc.Do(patch)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("patch: %v %v", resp, err)
	}
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), `"web"`) {
		t.Errorf("a patch is answered with the object as it is, got %s", body)
	}
	create, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/api/v1/namespaces/kube-system/configmaps", strings.NewReader(`{"metadata":{"name":"x"}}`))
	create.Header.Set("Content-Type", "application/json")
	resp, err = hc.Do(create)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %v %v", resp, err)
	}
	if got := strings.Join(seen, ","); got != "GET /api/v1/namespaces/shop/services/web" {
		t.Errorf("the API server saw %q, want one GET of the object (not of its status)", got)
	}
	want := []string{"PATCH services shop/web status", "POST configmaps in kube-system"}
	if got := k.Writes(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("writes %q, want %q", got, want)
	}
	if got := dry.Writes(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("the dry run has %q, want %q", got, want)
	}
}
