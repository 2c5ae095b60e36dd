// Package secret holds credentials from the config file without ever
// holding them in the open: a Secret names where the value lives (a file, an
// environment variable, a systemd credential) or carries it inline, and is
// read only when a cloud client needs it. Every way of printing a Secret
// prints where it comes from, never the value.
package secret

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode"
)

// Secret is one credential. Exactly one field is set.
type Secret struct {
	File       string `koanf:"file"`
	Env        string `koanf:"env"`
	Credential string `koanf:"credential"`
	Value      string `koanf:"value"`
}

// Forms lists how a secret can be given, for error messages.
const Forms = "{file: PATH}, {env: NAME}, {credential: NAME} (systemd LoadCredential=) or {value: ...}"

// IsZero reports whether no form is set.
func (s Secret) IsZero() bool { return s == Secret{} }

// IsInline reports whether the value sits in the config itself.
func (s Secret) IsInline() bool { return s.Value != "" }

func (s Secret) set() int {
	n := 0
	for _, v := range []string{s.File, s.Env, s.Credential, s.Value} {
		if v != "" {
			n++
		}
	}
	return n
}

// Source describes where the value comes from, safe to print.
func (s Secret) Source() string {
	switch {
	case s.set() != 1:
		return "unset"
	case s.File != "":
		return "file " + s.File
	case s.Env != "":
		return "environment variable " + s.Env
	case s.Credential != "":
		return "systemd credential " + s.Credential
	default:
		return "inline value"
	}
}

// Check verifies the form and that the value can be read now, without
// returning it. The error never contains the value.
func (s Secret) Check() error {
	switch s.set() {
	case 0:
		return fmt.Errorf("not set; give it as %s", Forms)
	case 1:
	default:
		return fmt.Errorf("set in more than one way; give exactly one of %s", Forms)
	}
	_, err := s.Reveal()
	return err
}

// Reveal reads the value now, so a rotated file or credential is picked up
// without a restart. Surrounding whitespace (a trailing newline) is dropped.
func (s Secret) Reveal() (string, error) {
	var raw string
	switch {
	case s.set() != 1:
		return "", fmt.Errorf("secret not set correctly; give exactly one of %s", Forms)
	case s.File != "":
		b, err := readFile(s.File)
		if err != nil {
			return "", fmt.Errorf("reading secret file: %w", err)
		}
		raw = string(b)
	case s.Env != "":
		v, ok := os.LookupEnv(s.Env)
		if !ok {
			return "", fmt.Errorf("environment variable %s is not set", s.Env)
		}
		raw = v
	case s.Credential != "":
		dir := os.Getenv("CREDENTIALS_DIRECTORY")
		if dir == "" {
			return "", fmt.Errorf("systemd credential %s: $CREDENTIALS_DIRECTORY is not set; run polyccm from a unit with LoadCredential=%s:PATH, or use {file: PATH}", s.Credential, s.Credential)
		}
		if strings.ContainsRune(s.Credential, '/') {
			return "", fmt.Errorf("systemd credential name %q must not contain '/'", s.Credential)
		}
		b, err := readFile(filepath.Join(dir, s.Credential))
		if err != nil {
			return "", fmt.Errorf("systemd credential %s: %w", s.Credential, err)
		}
		raw = string(b)
	default:
		raw = s.Value
	}
	// A byte-order mark is what some Windows editors put first in a text
	// file; nobody means it as part of a credential, and a cloud answers
	// it with a bare 401.
	v := strings.TrimSpace(strings.TrimPrefix(raw, "\ufeff"))
	if v == "" {
		return "", fmt.Errorf("%s is empty", s.Source())
	}
	return v, nil
}

// RevealToken is Reveal for a credential that is one word: an API token,
// an access key. A second line or inner spaces (a note under the token, two
// tokens pasted in) are refused with an error saying so: sent as they are,
// they fail every request in ways that look like a network fault.
func (s Secret) RevealToken() (string, error) {
	v, err := s.Reveal()
	if err != nil {
		return "", err
	}
	if n := strings.Count(v, "\n") + 1; n > 1 {
		return "", fmt.Errorf("%s holds %d lines; it must hold the credential alone, on one line: remove the other lines", s.Source(), n)
	}
	if i := strings.IndexFunc(v, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }); i >= 0 {
		return "", fmt.Errorf("%s holds a space or control character inside the credential (at byte %d); it must hold the credential alone", s.Source(), i)
	}
	return v, nil
}

// RevealLine is Reveal for a credential that is one line but may hold
// spaces inside: a password (Keystone's may). A second line (a note under
// it, two pasted in) is refused, as RevealToken refuses it; so is a
// control character, which no password typed at a prompt holds.
func (s Secret) RevealLine() (string, error) {
	v, err := s.Reveal()
	if err != nil {
		return "", err
	}
	if n := strings.Count(v, "\n") + 1; n > 1 {
		return "", fmt.Errorf("%s holds %d lines; it must hold the credential alone, on one line: remove the other lines", s.Source(), n)
	}
	if i := strings.IndexFunc(v, unicode.IsControl); i >= 0 {
		return "", fmt.Errorf("%s holds a control character inside the credential (at byte %d); it must hold the credential alone", s.Source(), i)
	}
	return v, nil
}

// CheckLine is Check for a one-line credential (see RevealLine).
func (s Secret) CheckLine() error {
	if err := s.Check(); err != nil {
		return err
	}
	_, err := s.RevealLine()
	return err
}

// CheckJSON is Check for a credential that is a JSON document (a GCE
// service-account key): a truncated or mistaken file is found when the
// config is checked, not at the first cloud call. The error never quotes
// the content.
func (s Secret) CheckJSON() error {
	if err := s.Check(); err != nil {
		return err
	}
	v, err := s.Reveal()
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(v), &doc); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fmt.Errorf("%s is not a JSON document (invalid at byte %d); give the key file as downloaded", s.Source(), se.Offset)
		}
		return fmt.Errorf("%s is not a JSON object; give the key file as downloaded", s.Source())
	}
	return nil
}

// CheckToken is Check for a one-word credential (see RevealToken).
func (s Secret) CheckToken() error {
	if err := s.Check(); err != nil {
		return err
	}
	_, err := s.RevealToken()
	return err
}

// MaxFileSize bounds a secret file: a token or a key is a few KiB at most,
// and a path to /dev/zero or a log file must fail, not fill memory.
const MaxFileSize = 64 << 10

// readFile reads a secret file: a regular file (a symlink to one is
// fine) of at most MaxFileSize bytes.
func readFile(path string) ([]byte, error) {
	// Non-blocking, so that a named pipe is refused below instead of
	// waiting for a writer forever.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, pathError(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, pathError(err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (it is a %s); point it at a file that holds only the secret", path, fileKind(st.Mode()))
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, pathError(err)
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("%s is larger than %d KiB; a secret file holds only the secret", path, MaxFileSize>>10)
	}
	return b, nil
}

// fileKind names what a non-regular file is, for messages.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}

// pathError keeps the path and the reason, dropping nothing secret (os
// errors never include file contents).
func pathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %v", pe.Path, pe.Err)
	}
	return err
}

// String never prints the value.
func (s Secret) String() string { return "<secret from " + s.Source() + ">" }

// GoString keeps %#v from printing the value.
func (s Secret) GoString() string { return s.String() }

// Redacted is the Secret as `polyccm config show` prints it: references as
// they are, an inline value replaced.
func (s Secret) Redacted() map[string]string {
	m := map[string]string{}
	if s.File != "" {
		m["file"] = s.File
	}
	if s.Env != "" {
		m["env"] = s.Env
	}
	if s.Credential != "" {
		m["credential"] = s.Credential
	}
	if s.Value != "" {
		m["value"] = "<redacted>"
	}
	return m
}

// MarshalJSON keeps JSON dumps (and structured logs) from printing the value.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.Redacted()) }

// MarshalYAML does the same for YAML.
func (s Secret) MarshalYAML() (any, error) { return s.Redacted(), nil }

// FromMap builds a Secret from a decoded config mapping. Errors name the
// offending sub-key but never echo a value. Unknown sub-keys are left to the
// caller's key check, which reports them with their full path.
func FromMap(m map[string]any) (Secret, error) {
	var s Secret
	var errs []error
	for k, v := range m {
		str, ok := v.(string)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: must be a string", k))
			continue
		}
		switch k {
		case "file":
			s.File = str
		case "env":
			s.Env = str
		case "credential":
			s.Credential = str
		case "value":
			s.Value = str
		}
	}
	if len(errs) > 0 {
		return Secret{}, errors.Join(errs...)
	}
	return s, nil
}
