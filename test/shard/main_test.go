package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// Longest first, each to the least loaded shard: the soak alone, the rest
// spread so no shard waits on another by more than one test.
func TestDealBalances(t *testing.T) {
	w := map[string]float64{"TestSoak": 100, "A": 40, "B": 35, "C": 30, "D": 25, "E": 5}
	shards := deal([]string{"A", "B", "C", "D", "E", "TestSoak"}, w, 3)
	if len(shards) != 3 {
		t.Fatalf("%d shards, want 3", len(shards))
	}
	if !slices.Equal(shards[0], []string{"TestSoak"}) {
		t.Errorf("shard 0 = %v, want the soak alone", shards[0])
	}
	var all []string
	for _, s := range shards {
		all = append(all, s...)
	}
	slices.Sort(all)
	if !slices.Equal(all, []string{"A", "B", "C", "D", "E", "TestSoak"}) {
		t.Errorf("dealt %v: every test exactly once", all)
	}
	load := func(s []string) (sum float64) {
		for _, n := range s {
			sum += w[n]
		}
		return sum
	}
	if l1, l2 := load(shards[1]), load(shards[2]); l1 > 70 || l2 > 70 {
		t.Errorf("shards 1 and 2 carry %v and %v seconds, want at most 70 each", l1, l2)
	}
}

// A test with no recorded duration counts as the median; more shards
// than tests gives a shard a test.
func TestDealUnknownAndFew(t *testing.T) {
	shards := deal([]string{"New", "A", "B"}, map[string]float64{"A": 10, "B": 30}, 8)
	if len(shards) != 3 {
		t.Fatalf("%d shards for 3 tests, want 3", len(shards))
	}
	for _, s := range shards {
		if len(s) != 1 {
			t.Errorf("shards %v: want one test each", shards)
		}
	}
}

func TestDurationsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "testdata", "durations.tsv")
	want := map[string]float64{"TestA": 1.5, "TestB": 120}
	if err := writeDurations(path, want); err != nil {
		t.Fatal(err)
	}
	got := readDurations(path)
	if len(got) != 2 || got["TestA"] != 1.5 || got["TestB"] != 120 {
		t.Errorf("read back %v, want %v", got, want)
	}
	if err := os.WriteFile(path, []byte("# comment\nbroken line\nTestC\tx\nTestD\t2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := readDurations(path); len(got) != 1 || got["TestD"] != 2 {
		t.Errorf("read %v from a file with bad lines, want only TestD", got)
	}
	if got := readDurations(filepath.Join(t.TempDir(), "none")); len(got) != 0 {
		t.Errorf("a missing file gave %v", got)
	}
}
