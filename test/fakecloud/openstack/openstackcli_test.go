package openstack

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The openstack command-line client (python-openstackclient with
// openstacksdk, novaclient-free, and python-octaviaclient, from Debian) is
// a client we did not write: these tests check the fake's catalog, wire
// formats, errors and Octavia's state machine against it, not only against
// gophercloud, which our driver uses.

// needOpenStackCLI skips without the openstack command, unless CI (which
// installs it from Debian) requires it.
func needOpenStackCLI(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("openstack"); err != nil {
		if os.Getenv("CCMTEST_REQUIRE_PKGTOOLS") != "" {
			t.Fatal("the openstack command is required (apt-get install python3-openstackclient python3-octaviaclient)")
		}
		t.Skip("no openstack command; apt-get install python3-openstackclient python3-octaviaclient to run this test")
	}
}

// osCLI runs the openstack client against s with the account's password,
// and returns its JSON output (nil when it printed none), its error
// output and its exit status.
func osCLI(t *testing.T, s *Server, password string, args ...string) (out any, stderr string, code int) {
	t.Helper()
	needOpenStackCLI(t)
	a := s.Account()
	cmd := exec.Command("openstack", args...)
	cmd.Env = append(os.Environ(), "OS_AUTH_URL="+s.AuthURL(), "OS_USERNAME="+a.UserName, "OS_PASSWORD="+password,
		"OS_PROJECT_ID="+a.ProjectID, "OS_USER_DOMAIN_NAME="+a.DomainName, "OS_REGION_NAME="+a.Region,
		"OS_IDENTITY_API_VERSION=3", "OS_INTERFACE=public", "OS_CLIENT_CONFIG_FILE=/dev/null", "HOME="+t.TempDir())
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("openstack %v: %v", args, err)
	}
	if strings.TrimSpace(so.String()) != "" && code == 0 && strings.Contains(strings.Join(args, " "), "-f json") {
		if err := json.Unmarshal([]byte(so.String()), &out); err != nil {
			t.Fatalf("openstack %v printed no JSON: %v\n%s", args, err, so.String())
		}
	}
	return out, se.String(), code
}

// ok runs a command that must succeed, as the account's user.
func ok(t *testing.T, s *Server, args ...string) any {
	t.Helper()
	out, stderr, code := osCLI(t, s, s.Account().Password, args...)
	if code != 0 {
		t.Fatalf("openstack %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
	}
	return out
}

func rows(t *testing.T, v any) []map[string]any {
	t.Helper()
	list, isList := v.([]any)
	if !isList {
		t.Fatalf("not a list: %v", v)
	}
	var out []map[string]any
	for _, r := range list {
		out = append(out, r.(map[string]any))
	}
	return out
}

func TestOpenStackCLIComputeNetworkVolume(t *testing.T) {
	needOpenStackCLI(t)
	s := start(t)
	_, servers := cluster(s, 5)
	vol := s.AddVolume(VolumeSpec{Name: "pvc-1", Size: 3, AvailabilityZone: "nova"})

	// Nova: every server, paged by the client's markers (--limit -1
	// pages until an empty page).
	list := rows(t, ok(t, s, "server", "list", "--no-name-lookup", "--limit", "-1", "-f", "json"))
	if len(list) != 5 {
		t.Fatalf("server list: %d servers, want 5: %v", len(list), list)
	}
	show := ok(t, s, "server", "show", servers[2], "-f", "json").(map[string]any)
	if show["name"] != "node-2" || show["status"] != "ACTIVE" || show["OS-EXT-AZ:availability_zone"] == "" {
		t.Errorf("server show: %v", show)
	}
	// A missing server: the client reads Nova's 404 as "no such server".
	if _, stderr, code := osCLI(t, s, s.Account().Password, "server", "show", "00000000-0000-4000-8000-000000000000"); code != 1 || !strings.Contains(stderr, "No server with a name or ID") {
		t.Errorf("server show of a missing server: exit %d, %s", code, stderr)
	}

	// Neutron: the server's port, found by its device_id filter.
	ports := rows(t, ok(t, s, "port", "list", "--device-id", servers[2], "-f", "json"))
	if len(ports) != 1 || !strings.Contains(toJSON(ports[0]["Fixed IP Addresses"]), "10.0.0.") {
		t.Errorf("port list --device-id: %v", ports)
	}

	// Cinder.
	v := ok(t, s, "volume", "show", vol, "-f", "json").(map[string]any)
	if v["name"] != "pvc-1" || v["size"] != float64(3) || v["availability_zone"] != "nova" {
		t.Errorf("volume show: %v", v)
	}

	// A wrong password: Keystone's 401, as the client reports it.
	if _, stderr, code := osCLI(t, s, "wrong", "network", "list"); code == 0 || !strings.Contains(stderr, "401") {
		t.Errorf("a wrong password: exit %d, %s", code, stderr)
	}
}

// Octavia's state machine as the client waits on it (--wait polls the
// provisioning status until ACTIVE), and cascade deletion.
func TestOpenStackCLILoadBalancer(t *testing.T) {
	needOpenStackCLI(t)
	s := start(t)
	cluster(s, 1)
	s.SetLoadBalancerProvisioningDelay(1500 * time.Millisecond)
	subnet := ""
	for _, n := range s.Networks() {
		if n.Name == "private" {
			subnet = n.Subnets[0].ID
		}
	}

	began := time.Now()
	lb := ok(t, s, "loadbalancer", "create", "--name", "lb-1", "--vip-subnet-id", subnet, "--wait", "-f", "json").(map[string]any)
	if lb["provisioning_status"] == "ERROR" || time.Since(began) < time.Second {
		t.Errorf("loadbalancer create --wait: %v after %s", lb, time.Since(began))
	}
	got := ok(t, s, "loadbalancer", "show", "lb-1", "-f", "json").(map[string]any)
	if got["provisioning_status"] != "ACTIVE" || got["vip_address"] == "" || got["vip_port_id"] == "" {
		t.Errorf("loadbalancer show: %v", got)
	}
	// A change while it is PENDING_UPDATE: Octavia's 409.
	ok(t, s, "loadbalancer", "listener", "create", "--name", "l-80", "--protocol", "TCP", "--protocol-port", "80", "lb-1")
	if _, stderr, code := osCLI(t, s, s.Account().Password, "loadbalancer", "listener", "create", "--name", "l-81", "--protocol", "TCP", "--protocol-port", "81", "lb-1"); code == 0 || !strings.Contains(stderr, "immutable") {
		t.Errorf("a listener while the load balancer is PENDING_UPDATE: exit %d, %s", code, stderr)
	}
	// Wait as --wait does: poll the status until ACTIVE.
	for deadline := time.Now().Add(20 * time.Second); ; {
		st := ok(t, s, "loadbalancer", "show", "lb-1", "-f", "json").(map[string]any)["provisioning_status"]
		if st == "ACTIVE" {
			break
		}
		if st != "PENDING_UPDATE" || time.Now().After(deadline) {
			t.Fatalf("after a listener create the load balancer is %v", st)
		}
		time.Sleep(200 * time.Millisecond)
	}
	ok(t, s, "loadbalancer", "pool", "create", "--name", "p-80", "--protocol", "TCP", "--lb-algorithm", "ROUND_ROBIN", "--listener", "l-80", "--wait")
	listeners := rows(t, ok(t, s, "loadbalancer", "listener", "list", "--loadbalancer", "lb-1", "-f", "json"))
	if len(listeners) != 1 || listeners[0]["protocol_port"] != float64(80) {
		t.Errorf("listener list: %v", listeners)
	}
	// Delete without cascade is refused while it has children; with it,
	// the whole tree goes, and its VIP port with it.
	if _, stderr, code := osCLI(t, s, s.Account().Password, "loadbalancer", "delete", "lb-1"); code == 0 || !strings.Contains(stderr, "children") {
		t.Errorf("delete without cascade: exit %d, %s", code, stderr)
	}
	ok(t, s, "loadbalancer", "delete", "--cascade", "--wait", "lb-1")
	if left := rows(t, ok(t, s, "loadbalancer", "list", "-f", "json")); len(left) != 0 {
		t.Errorf("after a cascade delete: %v", left)
	}
	if ports := rows(t, ok(t, s, "port", "list", "--device-owner", "Octavia", "-f", "json")); len(ports) != 0 {
		t.Errorf("the VIP port outlived its load balancer: %v", ports)
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
