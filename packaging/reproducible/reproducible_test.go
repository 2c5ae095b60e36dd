package reproducible

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSourceDateEpoch(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1764115200")
	got, err := SourceDateEpoch("make dist")
	if err != nil || !got.Equal(time.Date(2025, 11, 26, 0, 0, 0, 0, time.UTC)) || got.Location() != time.UTC {
		t.Errorf("SourceDateEpoch = %v, %v", got, err)
	}
	for v, want := range map[string]string{"": "make image sets it", "yesterday": "not a number", "-5": "not a number"} {
		t.Setenv("SOURCE_DATE_EPOCH", v)
		if _, err := SourceDateEpoch("make image"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("SOURCE_DATE_EPOCH=%q: %v, want an error saying %q", v, err, want)
		}
	}
}

func TestBuildSettingsRefusesWhatIsNoGoBinary(t *testing.T) {
	p := filepath.Join(t.TempDir(), "polyccm")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := BuildSettings(p); err == nil || !strings.Contains(err.Error(), "build information of "+p) {
		t.Errorf("BuildSettings(a script) = %v", err)
	}
}
