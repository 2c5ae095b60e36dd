package hetzner

import (
	"errors"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hetznercloud/hcloud-go/v2/hcloud"
	v1 "k8s.io/api/core/v1"

	"github.com/polyccm/polyccm/config"
	"github.com/polyccm/polyccm/config/secret"
	"github.com/polyccm/polyccm/core/cloudapi"
)

func TestServerID(t *testing.T) {
	for in, want := range map[string]int64{"hcloud://42": 42, "hcloud://1234567890": 1234567890} {
		if got, err := serverID(in); err != nil || got != want {
			t.Errorf("serverID(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"hcloud://", "hcloud://x", "hcloud://-1", "hrobot://12", "hcloud://bm-12", "digitalocean://12", "12"} {
		_, err := serverID(in)
		if err == nil || cloudapi.KindOf(err) != cloudapi.KindInvalid {
			t.Errorf("serverID(%q) = %v, want an invalid-input error", in, err)
		}
	}
	if _, err := serverID("hrobot://12"); err == nil || !strings.Contains(err.Error(), "Robot") {
		t.Errorf("a Robot providerID is not named as such: %v", err)
	}
}

// Node metadata as hcloud CCM gives it: region the location, zone the
// legacy datacenter, addresses by family, the InternalIP in the Network.
func TestToInstance(t *testing.T) {
	_, v6net, _ := net.ParseCIDR("2a01:4f8:1c1c:abcd::/64")
	s := &hcloud.Server{
		ID: 7, Name: "worker-1", Status: hcloud.ServerStatusRunning,
		ServerType: &hcloud.ServerType{Name: "cx22"},
		Location:   &hcloud.Location{Name: "fsn1", NetworkZone: hcloud.NetworkZoneEUCentral},
		PublicNet: hcloud.ServerPublicNet{
			IPv4: hcloud.ServerPublicNetIPv4{IP: net.ParseIP("203.0.113.7")},
			IPv6: hcloud.ServerPublicNetIPv6{IP: v6net.IP, Network: v6net},
		},
		PrivateNet: []hcloud.ServerPrivateNet{
			{Network: &hcloud.Network{ID: 99}, IP: net.ParseIP("10.1.0.9")},
			{Network: &hcloud.Network{ID: 5}, IP: net.ParseIP("10.0.0.7")},
		},
	}
	addr := func(typ v1.NodeAddressType, a string) v1.NodeAddress { return v1.NodeAddress{Type: typ, Address: a} }
	host := addr(v1.NodeHostName, "worker-1")
	v4, v6, internal := addr(v1.NodeExternalIP, "203.0.113.7"), addr(v1.NodeExternalIP, "2a01:4f8:1c1c:abcd::1"), addr(v1.NodeInternalIP, "10.0.0.7")
	for _, tc := range []struct {
		family string
		netID  int64
		zone   bool
		want   []v1.NodeAddress
	}{
		{FamilyIPv4, 5, true, []v1.NodeAddress{host, v4, internal}},
		{FamilyIPv6, 5, true, []v1.NodeAddress{host, v6, internal}},
		{FamilyDualStack, 0, false, []v1.NodeAddress{host, v4, v6}},
	} {
		c := &Cloud{cfg: Config{Instances: InstancesConfig{AddressFamily: tc.family, ZoneLabel: tc.zone}}}
		got := c.toInstance(s, tc.netID)
		if !reflect.DeepEqual(got.Addresses, tc.want) {
			t.Errorf("%s: addresses %v, want %v", tc.family, got.Addresses, tc.want)
		}
		wantZone := ""
		if tc.zone {
			wantZone = "fsn1-dc14"
		}
		if got.ProviderID != "hcloud://7" || got.InstanceType != "cx22" || got.Region != "fsn1" || got.Zone != wantZone || got.Shutdown {
			t.Errorf("%s: %+v", tc.family, got)
		}
		if got.Labels[LabelProvidedBy] != "cloud" {
			t.Errorf("labels %v", got.Labels)
		}
	}
	if s.PublicNet.IPv6.IP.String() != "2a01:4f8:1c1c:abcd::" {
		t.Errorf("toInstance changed the server's IPv6 network: %s", s.PublicNet.IPv6.IP)
	}
	s.Status = hcloud.ServerStatusOff
	if c := (&Cloud{cfg: Config{Instances: InstancesConfig{AddressFamily: FamilyIPv4}}}); !c.toInstance(s, 0).Shutdown {
		t.Error("a server that is off is not shut down")
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want cloudapi.Kind
	}{
		{hcloud.Error{Code: hcloud.ErrorCodeNotFound}, cloudapi.KindNotFound},
		{hcloud.Error{Code: hcloud.ErrorCodeRateLimitExceeded}, cloudapi.KindThrottled},
		{hcloud.Error{Code: hcloud.ErrorCodeUnauthorized}, cloudapi.KindUnauthorized},
		{hcloud.Error{Code: hcloud.ErrorCodeLocked}, cloudapi.KindConflict},
		{hcloud.Error{Code: hcloud.ErrorCodeUniquenessError}, cloudapi.KindExists},
		{hcloud.Error{Code: hcloud.ErrorCodeServiceError}, cloudapi.KindUnavailable},
		{hcloud.Error{Code: hcloud.ErrorCodeInvalidInput}, cloudapi.KindInvalid},
		{hcloud.ActionError{Code: "action_failed"}, cloudapi.KindUnavailable},
		{&secret.TokenError{Cloud: "Hetzner Cloud", Err: errors.New("no file")}, cloudapi.KindUnauthorized},
		{errors.New("what"), cloudapi.KindUnknown},
	} {
		if got := classify(tc.err).Kind; got != tc.want {
			t.Errorf("classify(%#v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	c := Config{APIURL: DefaultAPIURL, Instances: InstancesConfig{AddressFamily: "ipv5"}, Network: " k8s", LoadBalancer: defaultLoadBalancerConfig()}
	err := c.Validate()
	var keys []string
	for _, e := range unjoin(err) {
		var p config.Problem
		if errors.As(e, &p) {
			keys = append(keys, p.Key)
		}
	}
	if want := []string{"token", "instances.addressFamily", "network"}; !reflect.DeepEqual(keys, want) {
		t.Errorf("problems at %v, want %v (%v)", keys, want, err)
	}
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// A 429 waits for the next token, not for the whole bucket to refill.
func TestRetryAfterSpreadsTheReset(t *testing.T) {
	h := http.Header{}
	h.Set("RateLimit-Limit", "3600")
	h.Set("RateLimit-Remaining", "0")
	h.Set("RateLimit-Reset", strconv.FormatInt(time.Now().Add(3600*time.Second).Unix(), 10))
	if got := retryAfter(h); got < 500*time.Millisecond || got > 2*time.Second {
		t.Errorf("retryAfter = %v, want about a second (one token of 3600 an hour)", got)
	}
	h.Set("Retry-After", "7")
	if got := retryAfter(h); got != 7*time.Second {
		t.Errorf("with Retry-After 7: %v", got)
	}
}
