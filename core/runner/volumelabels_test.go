package runner

import (
	"context"
	"github.com/polyccm/polyccm/core/assembly"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	genericcontrollermanager "k8s.io/controller-manager/app"

	"github.com/polyccm/polyccm/core/cloudapi"
	"github.com/polyccm/polyccm/core/driver"
	"github.com/polyccm/polyccm/core/instances"
	"github.com/polyccm/polyccm/core/volumes"
)

type noInstances struct{}

func (noInstances) LookupInstances(context.Context, []instances.Key) (instances.Answer, error) {
	return instances.Answer{}, nil
}

type noVolumes struct{}

func (noVolumes) VolumeKey(*v1.PersistentVolume) (volumes.Key, bool, error) {
	return volumes.Key{}, false, nil
}

func (noVolumes) LookupVolumes(context.Context, []volumes.Key) (volumes.Answer, error) {
	return volumes.Answer{}, nil
}

// plainCloud has instances only; diskCloud can look up disks too.
type plainCloud struct{}

func (plainCloud) Instances() instances.Source { return noInstances{} }

type diskCloud struct{ plainCloud }

func (diskCloud) Volumes() volumes.Source { return noVolumes{} }

func testDriver(caps ...driver.Capability) driver.Driver {
	return driver.Driver{
		Name:         "fake",
		Capabilities: append([]driver.Capability{driver.Instances}, caps...),
		Classify:     func(error) cloudapi.Classification { return cloudapi.Classification{} },
	}
}

func TestAssembleChecksVolumeSupport(t *testing.T) {
	o := instances.Options{Driver: "fake"}
	c, err := assembly.Assemble(testDriver(driver.Volumes), diskCloud{}, o, nil)
	if err != nil || c.Volumes() == nil {
		t.Fatalf("assemble = %+v, %v; want volumes", c, err)
	}
	if c, err := assembly.Assemble(testDriver(), plainCloud{}, o, nil); err != nil || c.Volumes() != nil {
		t.Fatalf("assemble = %+v, %v; want no volumes", c, err)
	}
	for _, tc := range []struct {
		d  driver.Driver
		dc driver.Cloud
	}{{testDriver(driver.Volumes), plainCloud{}}, {testDriver(), diskCloud{}}} {
		if _, err := assembly.Assemble(tc.d, tc.dc, o, nil); err == nil || !strings.Contains(err.Error(), "volume support") {
			t.Errorf("assembly.Assemble(%v, %T) = %v, want a mismatch error", tc.d.Capabilities, tc.dc, err)
		}
	}
}

// A driver that cannot look up disks leaves the controller idle: not
// started, no error, nothing touched (the nil config would panic if used).
func TestVolumeLabelsIdleWithoutVolumes(t *testing.T) {
	c, err := assembly.Assemble(testDriver(), plainCloud{}, instances.Options{Driver: "fake"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	init := volumeLabelsController.Constructor(volumeLabelsController.InitContext, nil, c)
	ctrl, started, err := init(context.Background(), genericcontrollermanager.ControllerContext{})
	if ctrl != nil || started || err != nil {
		t.Errorf("init = %v, %v, %v; want an idle controller", ctrl, started, err)
	}
}
