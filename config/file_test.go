package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func loadPath(path string) error {
	_, _, err := Load(Source{Path: path, Environ: []string{}, Registry: testRegistry()})
	return err
}

// Only a regular file of sane size is read: /dev/zero used to die with a
// Go out-of-memory dump, a named pipe would wait forever.
func TestConfigFileMustBeARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte(minimal+"# "+strings.Repeat("x", MaxFileSize)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"/dev/zero": "config file /dev/zero is not a regular file",
		fifo:        "is not a regular file",
		dir:         "is a directory",
		big:         "is larger than 1024 KiB",
		// Opens, then fails to read: a read error, not "not valid YAML".
		"/proc/self/mem": "cannot read config file /proc/self/mem: input/output error",
	} {
		err := loadPath(path)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "not valid YAML") {
			t.Errorf("%s: %v, want an error containing %q", path, err, want)
		}
	}
}

// A mapping too large for the YAML decoder's pairwise duplicate check
// (100 000 keys took a minute and printed 100 000 lines) is refused as
// such, and a repeated key names both lines.
func TestConfigFileShape(t *testing.T) {
	var b strings.Builder
	b.WriteString(minimal + "nodes:\n")
	for i := range 100_000 { // short keys, so the file stays under MaxFileSize
		fmt.Fprintf(&b, "  k%s:\n", strconv.FormatInt(int64(i), 36))
	}
	_, _, err := load(t, b.String())
	if err == nil || !strings.Contains(err.Error(), "a mapping of 100000 keys") || strings.Count(err.Error(), "\n") > 2 {
		t.Errorf("100 000 keys: %v", err)
	}
	_, _, err = load(t, minimal+"nodes:\n  monitorPeriod: 1s\n  monitorPeriod: 2s\n")
	if err == nil || !strings.Contains(err.Error(), `key "monitorPeriod" is already set on line`) {
		t.Errorf("repeated key: %v", err)
	}
}

// Many problems are listed up to a point, then counted.
func TestManyProblemsAreCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString(minimal + "nodes:\n")
	for i := range 120 {
		fmt.Fprintf(&b, "  key%03d: 1\n", i)
	}
	_, _, err := load(t, b.String())
	ps := problemsOf(t, err)
	if len(ps.List) != 120 {
		t.Errorf("%d problems, want 120", len(ps.List))
	}
	msg := err.Error()
	if n := strings.Count(msg, "\n  - "); n != maxShown || !strings.Contains(msg, "… and 70 more problems") {
		t.Errorf("the error lists %d problems; want %d and a count of the rest:\n%s", n, maxShown, msg)
	}
}

func BenchmarkLoadManyUnknownKeys(b *testing.B) {
	var body strings.Builder
	body.WriteString(minimal + "nodes:\n")
	for i := range maxMappingKeys {
		fmt.Fprintf(&body, "  key%d: 1\n", i)
	}
	path := filepath.Join(b.TempDir(), "ccm.yaml")
	if err := os.WriteFile(path, []byte(body.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := loadPath(path); err == nil {
			b.Fatal("loaded")
		}
	}
}
