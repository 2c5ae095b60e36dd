package aws_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/instances"
	awsccm "github.com/polyccm/polyccm/drivers/aws"
	fakeaws "github.com/polyccm/polyccm/test/fakecloud/aws"
	"github.com/polyccm/polyccm/test/fakecloud/faults"
)

func addrStrings(a []v1.NodeAddress) []string {
	var out []string
	for _, x := range a {
		out = append(out, string(x.Type)+"="+x.Address)
	}
	slices.Sort(out)
	return out
}

func (w *world) zoneID(zone string) string {
	for _, z := range w.fake.AvailabilityZones() {
		if z.Name == zone {
			return z.ID
		}
	}
	w.t.Fatalf("no zone %s", zone)
	return ""
}

// Everything the node controllers put on a Node: provider ID, type, zone,
// region, the zone ID label and every address.
func TestInstanceMetadata(t *testing.T) {
	e := newEnv(t)
	in := e.fake.AddInstance(fakeaws.Instance{
		SubnetID: e.public[zoneB].ID, InstanceType: "c7g.xlarge",
		IPv6Addresses: []string{"2a05:d018:ab:cd02::10"},
	})
	if in.PublicIP == "" || in.PublicDNSName == "" {
		t.Fatalf("the fake gave no public address: %+v", in)
	}
	// By provider ID and, for a Node not yet initialized, by name.
	for _, n := range []*v1.Node{node(in, nil), {ObjectMeta: metav1.ObjectMeta{Name: in.PrivateDNSName}}} {
		md, err := e.inst.InstanceMetadata(ctx(t), n)
		if err != nil {
			t.Fatalf("InstanceMetadata(%q): %v", n.Spec.ProviderID, err)
		}
		if want := "aws:///" + zoneB + "/" + in.ID; md.ProviderID != want {
			t.Errorf("ProviderID %q, want %q", md.ProviderID, want)
		}
		if md.InstanceType != "c7g.xlarge" || md.Zone != zoneB || md.Region != fakeaws.DefaultRegion {
			t.Errorf("type %q zone %q region %q", md.InstanceType, md.Zone, md.Region)
		}
		if got, want := md.AdditionalLabels[awsccm.LabelZoneID], e.zoneID(zoneB); got != want || want == "" {
			t.Errorf("zone ID label %q, want %q", got, want)
		}
		// IPv4 only by default (nodeIPFamilies), as the AWS CCM.
		want := addrStrings([]v1.NodeAddress{
			{Type: v1.NodeInternalIP, Address: in.PrivateIP},
			{Type: v1.NodeExternalIP, Address: in.PublicIP},
			{Type: v1.NodeInternalDNS, Address: in.PrivateDNSName},
			{Type: v1.NodeHostName, Address: in.PrivateDNSName},
			{Type: v1.NodeExternalDNS, Address: in.PublicDNSName},
		})
		if got := addrStrings(md.NodeAddresses); !slices.Equal(got, want) {
			t.Errorf("addresses\n got %v\nwant %v", got, want)
		}
		// The primary private IPv4 comes first: kubelet picks the first
		// InternalIP as the node IP.
		if len(md.NodeAddresses) == 0 || md.NodeAddresses[0] != (v1.NodeAddress{Type: v1.NodeInternalIP, Address: in.PrivateIP}) {
			t.Errorf("first address %v, want InternalIP %s", md.NodeAddresses, in.PrivateIP)
		}
	}

	// A private instance has no external addresses.
	priv := e.fake.AddInstance(fakeaws.Instance{SubnetID: e.private[zoneA].ID, PublicIP: fakeaws.NoIP})
	md, err := e.inst.InstanceMetadata(ctx(t), node(priv, nil))
	if err != nil {
		t.Fatal(err)
	}
	want := addrStrings([]v1.NodeAddress{
		{Type: v1.NodeInternalIP, Address: priv.PrivateIP},
		{Type: v1.NodeInternalDNS, Address: priv.PrivateDNSName},
		{Type: v1.NodeHostName, Address: priv.PrivateDNSName},
	})
	if got := addrStrings(md.NodeAddresses); !slices.Equal(got, want) {
		t.Errorf("private instance addresses %v, want %v", got, want)
	}
	if md.AdditionalLabels[awsccm.LabelZoneID] != e.zoneID(zoneA) {
		t.Errorf("zone ID label %q, want %q", md.AdditionalLabels[awsccm.LabelZoneID], e.zoneID(zoneA))
	}
	// Zones are asked once.
	if n := e.fake.Faults().CallCount("ec2 DescribeAvailabilityZones"); n != 1 {
		t.Errorf("DescribeAvailabilityZones called %d times, want 1", n)
	}
}

// Stopped and stopping instances are shut down; terminated and vanished
// ones do not exist; the rest exist and run.
func TestInstanceStates(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		state              string
		exists, shutdown   bool
		remove, byNameOnly bool
	}{
		{state: fakeaws.InstanceStatePending, exists: true},
		{state: fakeaws.InstanceStateRunning, exists: true},
		{state: fakeaws.InstanceStateStopping, exists: true, shutdown: true},
		{state: fakeaws.InstanceStateStopped, exists: true, shutdown: true},
		{state: fakeaws.InstanceStateShuttingDown, exists: true, shutdown: true},
		{state: fakeaws.InstanceStateTerminated},
		{state: fakeaws.InstanceStateTerminated, remove: true},
	}
	for _, c := range cases {
		name := c.state
		if c.remove {
			name += ", removed"
		}
		t.Run(name, func(t *testing.T) {
			in := e.instance(zoneA)
			if err := e.fake.SetInstanceState(in.ID, c.state); err != nil {
				t.Fatal(err)
			}
			if c.remove {
				e.fake.RemoveInstance(in.ID)
			}
			for _, n := range []*v1.Node{node(in, nil), {ObjectMeta: metav1.ObjectMeta{Name: in.PrivateDNSName}}} {
				exists, err := e.inst.InstanceExists(ctx(t), n)
				if err != nil || exists != c.exists {
					t.Errorf("InstanceExists(%q %q) = %v, %v; want %v", n.Name, n.Spec.ProviderID, exists, err, c.exists)
				}
				shutdown, err := e.inst.InstanceShutdown(ctx(t), n)
				if c.exists {
					if err != nil || shutdown != c.shutdown {
						t.Errorf("InstanceShutdown(%q) = %v, %v; want %v", n.Spec.ProviderID, shutdown, err, c.shutdown)
					}
				} else if !errors.Is(err, cloudprovider.InstanceNotFound) {
					t.Errorf("InstanceShutdown of a gone instance: %v, %v; want InstanceNotFound", shutdown, err)
				}
			}
		})
	}
}

// ec2Proxy serves the fake's EC2 API through before, which sees each
// request's form first.
func (w *world) ec2Proxy(before func(form url.Values)) string {
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		form, _ := url.ParseQuery(string(body))
		before(form)
		w.fake.Handler().ServeHTTP(rw, r)
	}))
	w.t.Cleanup(srv.Close)
	return srv.URL + "/ec2/"
}

// Throttling (EC2's RequestLimitExceeded, HTTP 503) and server errors
// never make an instance gone, whether the listing or the confirming
// lookup by ID fails.
func TestErrorsAreNeverNotFound(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		code   int // HTTP status the client sees
		kind   cloudapi.Kind
	}{
		{"throttled", 429, 503, cloudapi.KindThrottled},
		{"unavailable", 503, 503, cloudapi.KindUnavailable},
		{"internal error", 500, 500, cloudapi.KindUnavailable},
	} {
		t.Run(c.name+" listing", func(t *testing.T) {
			e := newEnv(t)
			in := e.instance(zoneA)
			e.fake.RemoveInstance(in.ID)
			e.fake.Faults().AddRule(faults.Rule{Match: "ec2 DescribeInstances", Status: c.status})
			for _, n := range []*v1.Node{node(in, nil), {ObjectMeta: metav1.ObjectMeta{Name: in.PrivateDNSName}}} {
				exists, err := e.inst.InstanceExists(ctx(t), n)
				if err == nil || instances.IsNotFound(err) {
					t.Fatalf("InstanceExists = %v, %v; want an error that is not a not-found", exists, err)
				}
				if k := cloudapi.KindOf(err); k != c.kind {
					t.Errorf("kind %v, want %v (%v)", k, c.kind, err)
				}
			}
			if got := e.fake.Faults().Responses("ec2 DescribeInstances")[c.code]; got < 4 {
				t.Errorf("%d answers with HTTP %d, want every attempt (4 a lookup): %v", got, c.code, e.fake.Faults().Responses("ec2 DescribeInstances"))
			}
		})
		t.Run(c.name+" confirming", func(t *testing.T) {
			w := newWorld(t)
			in := w.instance(zoneA)
			w.fake.RemoveInstance(in.ID)
			confirms := 0
			cfg := w.config()
			var mu sync.Mutex
			cfg.Endpoints.EC2 = w.ec2Proxy(func(form url.Values) {
				// The listing filters by instance-id; the confirming
				// lookup names the instance: fail only that.
				if form.Get("Action") == "DescribeInstances" && form.Get("InstanceId.1") != "" {
					mu.Lock()
					confirms++
					mu.Unlock()
					w.fake.Faults().FailNext("ec2 DescribeInstances", 1, c.status)
				}
			})
			e := w.env(cfg)
			exists, err := e.inst.InstanceExists(ctx(t), node(in, nil))
			if err == nil || instances.IsNotFound(err) {
				t.Fatalf("InstanceExists = %v, %v; want an error that is not a not-found", exists, err)
			}
			if k := cloudapi.KindOf(err); k != c.kind {
				t.Errorf("kind %v, want %v (%v)", k, c.kind, err)
			}
			if confirms == 0 {
				t.Fatal("the driver never confirmed the missing instance by ID")
			}
			// Once EC2 answers, the vanished instance is gone for sure.
			cfg.Endpoints.EC2 = w.fake.EC2URL()
			e = w.env(cfg)
			if exists, err := e.inst.InstanceExists(ctx(t), node(in, nil)); err != nil || exists {
				t.Fatalf("InstanceExists = %v, %v; want false", exists, err)
			}
		})
	}
}

// Provider IDs that are not AWS's, or carry no instance ID, are errors for
// that Node only, never "no such instance", and cost no call.
func TestProviderIDErrors(t *testing.T) {
	e := newEnv(t)
	good := e.instance(zoneA)
	bad := []string{
		"gce://project/europe-west1-b/node-1",
		"digitalocean://12345",
		"aws:///eu-west-1a/",
		"aws:///eu-west-1a/node-1",
		"aws:///eu-west-1a/i-XYZ",
		"aws:///eu-west-1a/i-123",
		"i-0123456789abcdef0",
	}
	for _, pid := range bad {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: v1.NodeSpec{ProviderID: pid}}
		exists, err := e.inst.InstanceExists(ctx(t), n)
		if err == nil || instances.IsNotFound(err) {
			t.Errorf("%q: InstanceExists = %v, %v; want an error", pid, exists, err)
			continue
		}
		if k := cloudapi.KindOf(err); k != cloudapi.KindInvalid {
			t.Errorf("%q: kind %v, want %v (%v)", pid, k, cloudapi.KindInvalid, err)
		}
		if !strings.Contains(err.Error(), pid) {
			t.Errorf("%q: error %q does not name it", pid, err)
		}
	}
	if n := e.fake.Faults().Total(); n != 0 {
		t.Errorf("%d calls for malformed provider IDs", n)
	}
	// The zone-less form is an AWS provider ID too.
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: v1.NodeSpec{ProviderID: "aws:///" + good.ID}}
	if exists, err := e.inst.InstanceExists(ctx(t), n); err != nil || !exists {
		t.Errorf("aws:///%s: InstanceExists = %v, %v; want true", good.ID, exists, err)
	}
}

// Two live instances with one private DNS name cannot be told apart by
// name: an error says so, and provider IDs still work.
func TestDuplicatePrivateDNSNames(t *testing.T) {
	e := newEnv(t)
	const name = "ip-10-0-11-99.eu-west-1.compute.internal"
	a := e.fake.AddInstance(fakeaws.Instance{SubnetID: e.private[zoneA].ID, PrivateDNSName: name})
	b := e.fake.AddInstance(fakeaws.Instance{SubnetID: e.private[zoneB].ID, PrivateDNSName: name})
	byName := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	_, err := e.inst.InstanceMetadata(ctx(t), byName)
	if err == nil || !strings.Contains(err.Error(), "2 running instances") || !strings.Contains(err.Error(), "providerID") {
		t.Fatalf("InstanceMetadata by a shared name: %v; want an error about 2 instances and providerID", err)
	}
	if exists, err := e.inst.InstanceExists(ctx(t), byName); err == nil {
		t.Errorf("InstanceExists by a shared name = %v, nil; want an error", exists)
	}
	md, err := e.inst.InstanceMetadata(ctx(t), node(b, nil))
	if err != nil || md.ProviderID != awsccm.ProviderID(zoneB, b.ID) {
		t.Fatalf("by provider ID: %+v, %v", md, err)
	}
	// A terminated namesake does not count.
	if err := e.fake.SetInstanceState(a.ID, fakeaws.InstanceStateTerminated); err != nil {
		t.Fatal(err)
	}
	md, err = e.inst.InstanceMetadata(ctx(t), byName)
	if err != nil || md.ProviderID != awsccm.ProviderID(zoneB, b.ID) {
		t.Fatalf("with the namesake terminated: %+v, %v; want %s", md, err, b.ID)
	}
}

// A batch is answered with one listing of the cluster's VPC when that is
// cheaper (always, the first time: the VPC's size is unknown), else with
// instance-id filters of at most 200 values.
func TestLookupBatch(t *testing.T) {
	for _, c := range []struct {
		name     string
		vpcKnown bool
		calls    int
	}{
		{"VPC listing", true, 1},
		{"filtered by ID", false, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			cfg := w.config()
			if !c.vpcKnown {
				cfg.VPCID = "" // and IMDS not asked yet: the VPC is unknown
			}
			e := w.env(cfg)
			var keys []instances.Key
			var ins []fakeaws.Instance
			for i := range 250 {
				in := e.instance([]string{zoneA, zoneB}[i%2])
				ins = append(ins, in)
				keys = append(keys, instances.Key{ProviderID: awsccm.ProviderID(in.AvailabilityZone, in.ID), NodeName: in.PrivateDNSName})
			}
			ans, err := e.cloud.Instances().LookupInstances(ctx(t), keys)
			if err != nil {
				t.Fatal(err)
			}
			if len(ans.Results) != len(keys) {
				t.Fatalf("%d results for %d keys", len(ans.Results), len(keys))
			}
			for i, r := range ans.Results {
				if r.Err != nil || r.Instance == nil || r.Instance.ProviderID != keys[i].ProviderID || r.Instance.Name != ins[i].PrivateDNSName {
					t.Fatalf("result %d = %+v, %v; want %s", i, r.Instance, r.Err, keys[i].ProviderID)
				}
			}
			if n := w.fake.Faults().CallCount("ec2 DescribeInstances"); n != c.calls {
				t.Errorf("%d DescribeInstances calls for 250 IDs, want %d", n, c.calls)
			}
			if len(ans.Seen) != len(keys) {
				t.Errorf("%d instances seen, want %d", len(ans.Seen), len(keys))
			}
		})
	}
}

// nodeIPFamilies orders the address families as the AWS CCM does: each
// family's addresses together, in the order given; IPv6 only when asked.
func TestNodeIPFamilies(t *testing.T) {
	w := newWorld(t)
	in := w.fake.AddInstance(fakeaws.Instance{SubnetID: w.public[zoneA].ID, IPv6Addresses: []string{"2a05:d018:ab:cd01::10"}})
	v4 := []string{
		"InternalIP=" + in.PrivateIP, "ExternalIP=" + in.PublicIP,
		"InternalDNS=" + in.PrivateDNSName, "Hostname=" + in.PrivateDNSName, "ExternalDNS=" + in.PublicDNSName,
	}
	v6 := []string{"InternalIP=2a05:d018:ab:cd01::10"}
	for _, c := range []struct {
		families []string
		want     []string
	}{
		{nil, v4},
		{[]string{"ipv4"}, v4},
		{[]string{"ipv4", "ipv6"}, append(slices.Clone(v4), v6...)},
		{[]string{"ipv6", "ipv4"}, append(slices.Clone(v6), v4...)},
		{[]string{"ipv6"}, v6},
	} {
		cfg := w.config()
		cfg.NodeIPFamilies = c.families
		md, err := w.env(cfg).inst.InstanceMetadata(ctx(t), node(in, nil))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, a := range md.NodeAddresses {
			got = append(got, string(a.Type)+"="+a.Address)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("nodeIPFamilies %v:\n got %v\nwant %v", c.families, got, c.want)
		}
	}
}

// A Node named after its instance (resource-based hostnames, with or
// without the domain) is found by that ID before it has a providerID, as
// the AWS CCM finds it; one whose instance is gone is definitively gone.
func TestResourceBasedHostnames(t *testing.T) {
	e := newEnv(t)
	in := e.fake.AddInstance(fakeaws.Instance{SubnetID: e.private[zoneA].ID})
	rbn := in.ID + "." + fakeaws.DefaultRegion + ".compute.internal"
	if err := e.fake.UpdateInstance(in.ID, func(i *fakeaws.Instance) { i.PrivateDNSName = rbn }); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{in.ID, rbn} {
		md, err := e.inst.InstanceMetadata(ctx(t), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
		if err != nil {
			t.Fatalf("node %s: %v", name, err)
		}
		if want := awsccm.ProviderID(zoneA, in.ID); md.ProviderID != want {
			t.Errorf("node %s: providerID %q, want %q", name, md.ProviderID, want)
		}
	}
	gone := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "i-0123456789abcdef0"}}
	if ok, err := e.inst.InstanceExists(ctx(t), gone); ok || err != nil {
		t.Errorf("InstanceExists(%s) = %v, %v; want false, nil (EC2 says no such instance)", gone.Name, ok, err)
	}
	// A name that only looks like an ID prefix is still a DNS name.
	other := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "i-am-a-hostname"}}
	if ok, err := e.inst.InstanceExists(ctx(t), other); ok || err != nil {
		t.Errorf("InstanceExists(%s) = %v, %v; want false, nil", other.Name, ok, err)
	}
}
