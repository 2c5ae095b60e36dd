package batch_test

import (
	"testing"

	"github.com/polyccm/polyccm/core/batch"
)

func TestListSizesPreferFull(t *testing.T) {
	var l batch.ListSizes
	if l.PreferFull("a", 0, 500) {
		t.Error("nothing to look up, yet a full listing is preferred")
	}
	if !l.PreferFull("a", 1, 500) {
		t.Error("an unknown scope should be listed in full once to learn its size")
	}
	l.Set("a", 1200) // three pages
	for filtered, want := range map[int]bool{1: false, 2: false, 3: true, 4: true} {
		if got := l.PreferFull("a", filtered, 500); got != want {
			t.Errorf("1200 instances, %d filtered calls: PreferFull = %v, want %v", filtered, got, want)
		}
	}
	if !l.PreferFull("b", 1, 500) {
		t.Error("scopes are priced separately")
	}
}
