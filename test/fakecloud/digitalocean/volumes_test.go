package digitalocean

import (
	"context"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/digitalocean/godo"
)

func TestVolumesListAndGet(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	s.SetClock(func() time.Time { return now })
	var want []string
	for _, region := range []string{"fra1", "nyc3", "fra1"} {
		v := s.AddVolume(Volume{Region: region})
		if !uuidRE.MatchString(v.ID) || v.SizeGigaBytes != 10 || !v.CreatedAt.Equal(now) {
			t.Errorf("AddVolume = %+v", v)
		}
		want = append(want, v.ID)
	}

	// Every page through godo, two at a time, in creation order.
	var got []string
	opt := &godo.ListOptions{PerPage: 2, Page: 1}
	for {
		vols, resp, err := c.Storage.ListVolumes(ctx, &godo.ListVolumeParams{ListOptions: opt})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Meta == nil || resp.Meta.Total != 3 {
			t.Fatalf("meta = %+v", resp.Meta)
		}
		for _, v := range vols {
			got = append(got, v.ID)
		}
		if resp.Links == nil || resp.Links.IsLastPage() {
			break
		}
		opt.Page++
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("listed %v, want %v", got, want)
	}

	fra, _, err := c.Storage.ListVolumes(ctx, &godo.ListVolumeParams{Region: "fra1"})
	if err != nil || len(fra) != 2 {
		t.Errorf("region filter: %d volumes, %v", len(fra), err)
	}

	v, _, err := c.Storage.GetVolume(ctx, want[1])
	if err != nil {
		t.Fatal(err)
	}
	if v.ID != want[1] || v.Region == nil || v.Region.Slug != "nyc3" || v.Name != "volume-2" ||
		v.SizeGigaBytes != 10 || !v.CreatedAt.Equal(now) || v.DropletIDs == nil || v.Tags == nil {
		t.Errorf("GetVolume = %+v", v)
	}

	if !s.RemoveVolume(want[1]) {
		t.Fatal("RemoveVolume")
	}
	_, _, err = c.Storage.GetVolume(ctx, want[1])
	apiErr(t, err, http.StatusNotFound)
	if n := len(s.Volumes()); n != 2 {
		t.Errorf("%d volumes left", n)
	}
}
