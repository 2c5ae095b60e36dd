package digitalocean

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/digitalocean/godo"
)

func TestListPaginatesThroughGodoLinks(t *testing.T) {
	s, c := start(t)
	var want []int
	for _, d := range addN(s, 7, Droplet{}) {
		want = append(want, d.ID)
	}

	var got []int
	opt := &godo.ListOptions{PerPage: 2, Page: 1}
	for pages := 0; ; pages++ {
		if pages > 4 {
			t.Fatal("pagination did not end")
		}
		ds, resp, err := c.Droplets.List(context.Background(), opt)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Meta == nil || resp.Meta.Total != 7 {
			t.Fatalf("meta = %+v, want total 7", resp.Meta)
		}
		cur, err := resp.Links.CurrentPage()
		if err != nil || cur != opt.Page {
			t.Fatalf("CurrentPage = %d, %v; want %d", cur, err, opt.Page)
		}
		p := resp.Links.Pages
		if opt.Page == 1 && (p.First != "" || p.Prev != "") {
			t.Errorf("page 1 has first/prev links: %+v", p)
		}
		if opt.Page > 1 && (p.First == "" || p.Prev == "") {
			t.Errorf("page %d lacks first/prev links: %+v", opt.Page, p)
		}
		for _, d := range ds {
			got = append(got, d.ID)
		}
		if resp.Links.IsLastPage() {
			if p.Last != "" {
				t.Errorf("last page has a last link: %+v", p)
			}
			break
		}
		if !strings.HasPrefix(p.Next, s.URL()+"v2/droplets?page=") || !strings.Contains(p.Next, "per_page=2") {
			t.Errorf("next link %q is not an absolute link to the same listing", p.Next)
		}
		opt.Page = cur + 1
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("listed ids %v, want %v", got, want)
	}
	if opt.Page != 4 {
		t.Errorf("ended on page %d, want 4", opt.Page)
	}
}

func TestListDefaultsAndClampsPageSize(t *testing.T) {
	s, c := start(t)
	addN(s, 201, Droplet{})

	ds, resp, err := c.Droplets.List(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != defaultPerPage || resp.Links.IsLastPage() {
		t.Errorf("default page: %d droplets, last=%v; want 20 and more pages", len(ds), resp.Links.IsLastPage())
	}

	ds, resp, err = c.Droplets.List(context.Background(), &godo.ListOptions{PerPage: 500})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 200 {
		t.Errorf("per_page=500 gave %d droplets, want 200", len(ds))
	}
	if resp.Links.IsLastPage() {
		t.Error("per_page=500 claims to be the only page of 201")
	}

	// A page past the end is empty but still knows where the data is.
	ds, resp, err = c.Droplets.List(context.Background(), &godo.ListOptions{PerPage: 200, Page: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 0 || resp.Meta.Total != 201 || resp.Links.Pages.First == "" {
		t.Errorf("page 5: %d droplets, meta %+v, links %+v", len(ds), resp.Meta, resp.Links.Pages)
	}
}

func TestListFilters(t *testing.T) {
	s, c := start(t)
	a := s.AddDroplet(Droplet{Name: "Web-1", Tags: []string{"k8s:abc", "web"}})
	b := s.AddDroplet(Droplet{Name: "web-2", Tags: []string{"k8s:abc"}})
	s.AddDroplet(Droplet{Name: "db-1", Tags: []string{"db"}})
	ctx := context.Background()

	ds, _, err := c.Droplets.ListByTag(ctx, "k8s:abc", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 || ds[0].ID != a.ID || ds[1].ID != b.ID {
		t.Errorf("ListByTag = %v, want droplets %d and %d", ids(ds), a.ID, b.ID)
	}

	// godo documents name matching as exact and case-insensitive.
	ds, _, err = c.Droplets.ListByName(ctx, "web-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].ID != a.ID {
		t.Errorf("ListByName = %v, want only %d", ids(ds), a.ID)
	}

	ds, resp, err := c.Droplets.ListByTag(ctx, "nope", &godo.ListOptions{PerPage: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 0 || resp.Meta.Total != 0 || !resp.Links.IsLastPage() {
		t.Errorf("unknown tag: %v, meta %+v", ids(ds), resp.Meta)
	}

	// Filters survive into the page links.
	_, resp, err = c.Droplets.ListByTag(ctx, "k8s:abc", &godo.ListOptions{PerPage: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resp.Links.Pages.Next, "tag_name=k8s%3Aabc") {
		t.Errorf("next link %q lost the tag filter", resp.Links.Pages.Next)
	}
}

func ids(ds []godo.Droplet) []int {
	out := make([]int, len(ds))
	for k, d := range ds {
		out[k] = d.ID
	}
	return out
}

func TestGetDecodesEveryField(t *testing.T) {
	s, c := start(t)
	created := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	want := s.AddDroplet(Droplet{
		Name: "node-a", SizeSlug: "s-2vcpu-4gb", Region: "fra1",
		PublicIPv4: "203.0.113.10", PrivateIPv4: "10.114.0.5", IPv6: "2001:db8:1::5",
		VPCUUID: "11111111-2222-4333-8444-555555555555", Tags: []string{"k8s"},
		CreatedAt: created,
	})

	d, _, err := c.Droplets.Get(context.Background(), want.ID)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := d.PublicIPv4()
	priv, _ := d.PrivateIPv4()
	v6, _ := d.PublicIPv6()
	checks := []struct {
		name      string
		got, want any
	}{
		{"id", d.ID, want.ID},
		{"name", d.Name, "node-a"},
		{"status", d.Status, StatusActive},
		{"size_slug", d.SizeSlug, "s-2vcpu-4gb"},
		{"size.slug", d.Size.Slug, "s-2vcpu-4gb"},
		{"memory", d.Memory, 4096},
		{"vcpus", d.Vcpus, 2},
		{"disk", d.Disk, 80},
		{"region.slug", d.Region.Slug, "fra1"},
		{"region.name", d.Region.Name, "Frankfurt 1"},
		{"image.slug", d.Image.Slug, defaultImage},
		{"public", pub, "203.0.113.10"},
		{"private", priv, "10.114.0.5"},
		{"ipv6", v6, "2001:db8:1::5"},
		{"vpc_uuid", d.VPCUUID, "11111111-2222-4333-8444-555555555555"},
		{"tags", d.Tags, []string{"k8s"}},
		{"created_at", d.Created, "2025-03-04T05:06:07Z"},
		{"volume_ids", d.VolumeIDs, []string{}},
		{"features", d.Features, []string{"private_networking", "ipv6"}},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
	if d.Networks.V6[0].Netmask != 64 || d.Networks.V6[0].Gateway != "2001:db8:1::1" {
		t.Errorf("v6 network = %+v", d.Networks.V6[0])
	}
}

func TestAddDropletDefaults(t *testing.T) {
	s := New(testToken)
	a := s.AddDroplet(Droplet{})
	b := s.AddDroplet(Droplet{PublicIPv4: NoIP})
	if a.ID == 0 || b.ID == a.ID {
		t.Fatalf("ids %d, %d: want distinct non-zero", a.ID, b.ID)
	}
	if a.Status != StatusActive || a.Region != defaultRegion || a.SizeSlug != defaultSize ||
		a.Memory != 1024 || a.VCPUs != 1 || a.Disk != 25 || a.VPCUUID != defaultVPC(defaultRegion) {
		t.Errorf("defaults = %+v", a)
	}
	if a.PublicIPv4 == "" || a.PrivateIPv4 == "" || a.PublicIPv4 == b.PublicIPv4 || a.PrivateIPv4 == b.PrivateIPv4 {
		t.Errorf("addresses not allocated uniquely: %+v / %+v", a, b)
	}
	if b.PublicIPv4 != NoIP || len(wireNetworksOf(&b).V4) != 1 {
		t.Errorf("NoIP droplet has networks %+v", wireNetworksOf(&b))
	}
	if a.IPv6 != "" || a.CreatedAt.IsZero() || a.Tags == nil {
		t.Errorf("defaults = %+v", a)
	}

	c := s.AddDroplet(Droplet{ID: 42})
	if c.ID != 42 {
		t.Errorf("chosen id = %d, want 42", c.ID)
	}
	defer func() {
		if recover() == nil {
			t.Error("AddDroplet with a taken id did not panic")
		}
	}()
	s.AddDroplet(Droplet{ID: 42})
}

func TestHelpersReturnCopies(t *testing.T) {
	s := New(testToken)
	d := s.AddDroplet(Droplet{Tags: []string{"a"}})
	d.Tags[0] = "changed"
	got, _ := s.Droplet(d.ID)
	if got.Tags[0] != "a" {
		t.Error("AddDroplet's result aliases the stored tags")
	}
	all := s.Droplets()
	all[0].Tags[0] = "changed"
	if got, _ := s.Droplet(d.ID); got.Tags[0] != "a" {
		t.Error("Droplets aliases the stored tags")
	}

	if err := s.UpdateDroplet(d.ID, func(d *Droplet) { d.PublicIPv4 = "203.0.113.99" }); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Droplet(d.ID); got.PublicIPv4 != "203.0.113.99" {
		t.Errorf("UpdateDroplet did not stick: %+v", got)
	}
	if err := s.UpdateDroplet(d.ID, func(d *Droplet) { d.ID++ }); err == nil {
		t.Error("UpdateDroplet let the id change")
	}
	if err := s.SetDropletStatus(d.ID, "exploded"); err == nil {
		t.Error("SetDropletStatus accepted an invalid status")
	}
	if err := s.SetDropletStatus(12345, StatusOff); err == nil {
		t.Error("SetDropletStatus accepted an unknown droplet")
	}
	if !s.RemoveDroplet(d.ID) || s.RemoveDroplet(d.ID) {
		t.Error("RemoveDroplet should report true, then false")
	}
	if _, ok := s.Droplet(d.ID); ok {
		t.Error("removed droplet still there")
	}
}

func TestGetUnknownDropletIs404(t *testing.T) {
	_, c := start(t)
	_, resp, err := c.Droplets.Get(context.Background(), 999)
	e := apiErr(t, err, http.StatusNotFound)
	if e.Message != "The resource you were accessing could not be found." {
		t.Errorf("message = %q", e.Message)
	}
	if e.RequestID == "" || e.RequestID != resp.Header.Get("X-Request-Id") {
		t.Errorf("request id %q, header %q", e.RequestID, resp.Header.Get("X-Request-Id"))
	}
}

func TestCreateThenActivate(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	d, resp, err := c.Droplets.Create(ctx, &godo.DropletCreateRequest{
		Name: "n1", Region: "sfo3", Size: "s-2vcpu-2gb",
		Image: godo.DropletCreateImage{Slug: "ubuntu-22-04-x64"},
		IPv6:  true, Tags: []string{"k8s"}, VPCUUID: "22222222-2222-4222-8222-222222222222",
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusAccepted {
		t.Errorf("status = %d, want 202", resp.StatusCode)
	}
	if d.Status != StatusNew || len(d.Networks.V4) != 0 {
		t.Errorf("created droplet: status %q networks %+v; want new without addresses", d.Status, d.Networks)
	}
	if d.Memory != 2048 || d.Vcpus != 2 || d.Region.Slug != "sfo3" || d.Image.Slug != "ubuntu-22-04-x64" ||
		d.VPCUUID != "22222222-2222-4222-8222-222222222222" || !reflect.DeepEqual(d.Tags, []string{"k8s"}) {
		t.Errorf("created droplet = %+v", d)
	}
	if len(resp.Links.Actions) != 1 || resp.Links.Actions[0].Rel != "create" {
		t.Fatalf("links = %+v, want one create action", resp.Links)
	}

	// The create action the link points at completes with activation.
	act, _, err := c.Actions.Get(ctx, resp.Links.Actions[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if act.Type != "create" || act.ResourceID != d.ID || act.Status != "completed" {
		t.Errorf("create action = %+v", act)
	}

	got, _, err := c.Droplets.Get(ctx, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := got.PublicIPv4()
	v6, _ := got.PublicIPv6()
	if got.Status != StatusActive || pub == "" || v6 == "" {
		t.Errorf("after activation: status %q public %q v6 %q", got.Status, pub, v6)
	}
	if st, _ := s.Droplet(d.ID); st.PublicIPv4 != pub || st.IPv6 != v6 {
		t.Errorf("state %+v disagrees with the API (%s, %s)", st, pub, v6)
	}
}

func TestActivationDelay(t *testing.T) {
	s, c := start(t)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s.SetClock(func() time.Time { return now })
	s.SetActivationDelay(time.Minute)
	ctx := context.Background()

	ds, _, err := c.Droplets.CreateMultiple(ctx, &godo.DropletMultiCreateRequest{
		Names: []string{"a", "b"}, Region: "nyc1", Size: "s-1vcpu-1gb",
		Image: godo.DropletCreateImage{ID: 170000003},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 2 || ds[0].Image.Slug != "debian-12-x64" {
		t.Fatalf("created %+v", ds)
	}
	now = now.Add(59 * time.Second)
	if got, _, _ := c.Droplets.Get(ctx, ds[0].ID); got.Status != StatusNew {
		t.Errorf("before the delay status = %q, want new", got.Status)
	}
	// Actions wait for the create to finish, like the real API.
	_, _, err = c.DropletActions.PowerOff(ctx, ds[0].ID)
	apiErr(t, err, http.StatusUnprocessableEntity)

	now = now.Add(time.Second)
	if got, _, _ := c.Droplets.Get(ctx, ds[1].ID); got.Status != StatusActive {
		t.Errorf("after the delay status = %q, want active", got.Status)
	}
	if d, _ := s.Droplet(ds[0].ID); !d.CreatedAt.Equal(now.Add(-time.Minute)) {
		t.Errorf("created_at = %v", d.CreatedAt)
	}
}

func TestCreateValidation(t *testing.T) {
	_, c := start(t)
	ok := godo.DropletCreateRequest{Name: "x", Region: "nyc3", Size: "s-1vcpu-1gb", Image: godo.DropletCreateImage{Slug: defaultImage}}
	cases := map[string]func(r *godo.DropletCreateRequest){
		"no name":    func(r *godo.DropletCreateRequest) { r.Name = "" },
		"bad region": func(r *godo.DropletCreateRequest) { r.Region = "mars1" },
		"bad size":   func(r *godo.DropletCreateRequest) { r.Size = "huge" },
		"bad image":  func(r *godo.DropletCreateRequest) { r.Image = godo.DropletCreateImage{Slug: "windows"} },
	}
	for name, mutate := range cases {
		r := ok
		mutate(&r)
		_, _, err := c.Droplets.Create(context.Background(), &r)
		if e := apiErr(t, err, http.StatusUnprocessableEntity); e.Message == "" {
			t.Errorf("%s: empty message", name)
		}
	}
}

func TestDelete(t *testing.T) {
	s, c := start(t)
	d := s.AddDroplet(Droplet{})
	resp, err := c.Droplets.Delete(context.Background(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("status = %d, want 204", resp.StatusCode)
	}
	if _, ok := s.Droplet(d.ID); ok {
		t.Error("droplet still exists")
	}
	_, err = c.Droplets.Delete(context.Background(), d.ID)
	apiErr(t, err, http.StatusNotFound)
}
