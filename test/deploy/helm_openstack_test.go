package deploy

import (
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// driverSettings are the keys a driver has no default for, which its
// "driver=NAME" chart case sets beside the default credential keys:
// OpenStack's Keystone, region, user and project (the password path,
// where the chart goes without an application credential's ID).
var driverSettings = map[string]string{
	"openstack": ",config.drivers.openstack.authURL=https://keystone.example.com:5000/v3" +
		",config.drivers.openstack.region=RegionOne,config.drivers.openstack.username=ccm" +
		",config.drivers.openstack.userDomainName=Default,config.drivers.openstack.projectID=0123456789abcdef0123456789abcdef",
}

// OpenStack takes a clouds.yaml, an application credential or a password,
// one of them: the chart mounts the Secret key of the one the config
// picks (a cloud names a clouds.yaml entry; an applicationCredentialID or
// Name an application credential), and fails with none.
func TestHelmOpenStackCredential(t *testing.T) {
	for _, c := range []struct {
		name  string
		flags []string
		want  []string // drivers.openstack secret fields given as files
	}{
		{"application credential (the example)", []string{"-f", exampleValues("openstack")}, []string{"drivers.openstack.applicationCredentialSecret"}},
		{"application credential by name", []string{"--set", "driver=openstack" + driverSettings["openstack"] + ",config.drivers.openstack.applicationCredentialName=ccm"},
			[]string{"drivers.openstack.applicationCredentialSecret"}},
		{"password", []string{"--set", "driver=openstack" + driverSettings["openstack"]}, []string{"drivers.openstack.password"}},
		{"clouds.yaml", []string{"--set", "driver=openstack,config.drivers.openstack.cloud=prod"}, []string{"drivers.openstack.clouds"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var cm corev1.ConfigMap
			renderChart(t, chartRelease, chartNamespace, c.flags...).one(t, "ConfigMap").into(t, &cm)
			files := secretFiles(t, []byte(cm.Data["ccm.yaml"]))
			if got := slices.Sorted(maps.Keys(files)); !slices.Equal(got, c.want) {
				t.Errorf("secret files %v, want %v:\n%s", got, c.want, cm.Data["ccm.yaml"])
			}
		})
	}
	_, err := templateChart(t, chartRelease, chartNamespace, "--set", "driver=openstack,credentials.existingSecret="+driverSettings["openstack"])
	if err == nil || !strings.Contains(err.Error(), "driver openstack needs a credential") {
		t.Errorf("no Secret and no credential: %v", err)
	}
}
