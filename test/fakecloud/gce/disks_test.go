package gce

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	compute "cloud.google.com/go/compute/apiv1"
	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

func TestRegionalDisks(t *testing.T) {
	s := start(t)
	ctx := context.Background()
	s.AddDisk(Disk{Name: "zonal", Zone: "us-central1-a"})
	s.AddDisk(Disk{Name: "replicated", Region: "us-central1", ReplicaZones: []string{"us-central1-b", "us-central1-a"}})

	regional := client(t, s, compute.NewRegionDisksRESTClient)
	d, err := regional.Get(ctx, &computepb.GetRegionDiskRequest{Project: testProject, Region: "us-central1", Disk: "replicated"})
	if err != nil {
		t.Fatal(err)
	}
	var zones []string
	for _, z := range d.GetReplicaZones() {
		zones = append(zones, z[strings.LastIndexByte(z, '/')+1:])
	}
	if d.GetZone() != "" || !strings.HasSuffix(d.GetRegion(), "/regions/us-central1") ||
		!slices.Equal(zones, []string{"us-central1-b", "us-central1-a"}) ||
		!strings.HasSuffix(d.GetSelfLink(), "/regions/us-central1/disks/replicated") {
		t.Errorf("regional disk = %v", d)
	}
	_, err = regional.Get(ctx, &computepb.GetRegionDiskRequest{Project: testProject, Region: "us-central1", Disk: "zonal"})
	apiErr(t, err, http.StatusNotFound, "notFound")

	var listed []string
	for d, err := range regional.List(ctx, &computepb.ListRegionDisksRequest{Project: testProject, Region: "us-central1", Filter: proto.String(`(name = "replicated") OR (name = "nope")`)}).All() {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, d.GetName())
	}
	if !slices.Equal(listed, []string{"replicated"}) {
		t.Errorf("regional list = %v", listed)
	}

	// The zonal list does not show the regional disk; the aggregated list
	// shows both, under their own scopes.
	zonal := client(t, s, compute.NewDisksRESTClient)
	var inZone []string
	for d, err := range zonal.List(ctx, &computepb.ListDisksRequest{Project: testProject, Zone: "us-central1-a"}).All() {
		if err != nil {
			t.Fatal(err)
		}
		inZone = append(inZone, d.GetName())
	}
	if !slices.Equal(inZone, []string{"zonal"}) {
		t.Errorf("zonal list = %v", inZone)
	}
	scopes := map[string]string{}
	for pair, err := range zonal.AggregatedList(ctx, &computepb.AggregatedListDisksRequest{Project: testProject}).All() {
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range pair.Value.GetDisks() {
			scopes[d.GetName()] = pair.Key
		}
	}
	if scopes["zonal"] != "zones/us-central1-a" || scopes["replicated"] != "regions/us-central1" || len(scopes) != 2 {
		t.Errorf("aggregated scopes = %v", scopes)
	}
}
