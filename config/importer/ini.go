package importer

// ini.go reads the cloud config files of cloud-provider-aws,
// cloud-provider-gcp and openstack-cloud-controller-manager. All three read
// them with gopkg.in/gcfg.v1, whose syntax
// this follows: [section] and [section "subsection"] headers, name = value
// lines, ';' and '#' comments, double-quoted values with \" \\ \n \t
// escapes, a trailing backslash continuing a line, and a bare name meaning
// true. Section and variable names are matched without regard to case.

import (
	"fmt"
	"sort"
	"strings"
)

// iniEntry is one variable of a cloud config file.
type iniEntry struct {
	Section    string // as written, e.g. "Global"
	Subsection string // e.g. "1" in [ServiceOverride "1"]; "" for none
	Name       string // as written
	Value      string // unquoted; "" for a bare name
	Bare       bool   // no "=": gcfg's implicit true
	Line       int
}

// where names the entry in messages (never its value).
func (e iniEntry) where(file string) string {
	sec := "[" + e.Section
	if e.Subsection != "" {
		sec += fmt.Sprintf(" %q", e.Subsection)
	}
	return fmt.Sprintf("%s line %d: %s] %s", file, e.Line, sec, e.Name)
}

// parseINI returns the variables of a gcfg file in order. A syntax error
// names its line; values are never quoted in errors, since token-body is a
// secret.
func parseINI(text string) ([]iniEntry, error) {
	var out []iniEntry
	var section, sub string
	haveSection := false
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		lineNo := i + 1
		line := lines[i]
		// A backslash at the end joins the next line (outside comments).
		for strings.HasSuffix(line, "\\") && !strings.HasSuffix(line, "\\\\") && i+1 < len(lines) {
			i++
			line = line[:len(line)-1] + lines[i]
		}
		s := strings.TrimSpace(line)
		if s == "" || s[0] == ';' || s[0] == '#' {
			continue
		}
		if s[0] == '[' {
			name, subsection, err := parseHeader(s)
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", lineNo, err)
			}
			section, sub, haveSection = name, subsection, true
			continue
		}
		if !haveSection {
			return nil, fmt.Errorf("line %d: a variable before any [section] header", lineNo)
		}
		name, rest, hasEq := strings.Cut(s, "=")
		name = strings.TrimSpace(name)
		if !hasEq {
			// A bare name, possibly followed by a comment.
			name = strings.TrimSpace(strings.FieldsFunc(name, func(r rune) bool { return r == ';' || r == '#' })[0])
		}
		if !validName(name) {
			return nil, fmt.Errorf("line %d: %q is not a variable name (letters, digits and '-', starting with a letter)", lineNo, name)
		}
		e := iniEntry{Section: section, Subsection: sub, Name: name, Line: lineNo, Bare: !hasEq}
		if hasEq {
			v, err := parseValue(rest)
			if err != nil {
				return nil, fmt.Errorf("line %d: %s: %v", lineNo, name, err)
			}
			e.Value = v
		}
		out = append(out, e)
	}
	return out, nil
}

func parseHeader(s string) (name, sub string, err error) {
	end := strings.LastIndexByte(s, ']')
	if end < 0 {
		return "", "", fmt.Errorf("section header without ']'")
	}
	if rest := strings.TrimSpace(s[end+1:]); rest != "" && rest[0] != ';' && rest[0] != '#' {
		return "", "", fmt.Errorf("text after the section header")
	}
	inner := strings.TrimSpace(s[1:end])
	name, quoted, hasSub := strings.Cut(inner, " ")
	if !validName(name) {
		return "", "", fmt.Errorf("%q is not a section name", name)
	}
	if !hasSub {
		return name, "", nil
	}
	quoted = strings.TrimSpace(quoted)
	if len(quoted) < 2 || quoted[0] != '"' || quoted[len(quoted)-1] != '"' {
		return "", "", fmt.Errorf("the subsection of [%s] must be double-quoted", name)
	}
	var b strings.Builder
	q := quoted[1 : len(quoted)-1]
	for i := 0; i < len(q); i++ {
		if q[i] == '\\' && i+1 < len(q) {
			i++
		}
		b.WriteByte(q[i])
	}
	return name, b.String(), nil
}

func validName(n string) bool {
	if n == "" || !isLetter(n[0]) {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !isLetter(c) && !(c >= '0' && c <= '9') && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// parseValue unquotes a gcfg value: unquoted runs are trimmed and end at a
// comment; quoted runs keep their spaces and comment characters.
func parseValue(s string) (string, error) {
	var b strings.Builder
	s = strings.TrimSpace(s)
	inQuote := false
	pendingSpace := ""
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			inQuote = !inQuote
			b.WriteString(pendingSpace)
			pendingSpace = ""
		case c == '\\':
			if i+1 >= len(s) {
				return "", fmt.Errorf("a backslash ends the value")
			}
			i++
			b.WriteString(pendingSpace)
			pendingSpace = ""
			switch s[i] {
			case '\\', '"':
				b.WriteByte(s[i])
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'b':
				b.WriteByte('\b')
			default:
				return "", fmt.Errorf("unknown escape \\%c", s[i])
			}
		case !inQuote && (c == ';' || c == '#'):
			return b.String(), nil
		case !inQuote && (c == ' ' || c == '\t'):
			// Kept only if more of the value follows.
			pendingSpace += string(c)
		default:
			b.WriteString(pendingSpace)
			pendingSpace = ""
			b.WriteByte(c)
		}
	}
	if inQuote {
		return "", fmt.Errorf("unterminated quote")
	}
	return b.String(), nil
}

// gcfgBool parses a gcfg boolean: true, yes, on, 1 and their opposites,
// any case; a bare name is true.
func gcfgBool(e iniEntry) (bool, bool) {
	if e.Bare {
		return true, true
	}
	switch strings.ToLower(e.Value) {
	case "true", "yes", "on", "1":
		return true, true
	case "false", "no", "off", "0":
		return false, true
	}
	return false, false
}

// gcfgName is how gcfg matches a variable to a Go field without a gcfg tag
// (cloud-provider-aws's): case-insensitively, '-' read as '_'.
func gcfgName(n string) string { return strings.ToLower(strings.ReplaceAll(n, "-", "_")) }

// byLine returns m's keys in the order their entries appear in the file.
func byLine(m map[string]iniEntry) []string {
	keys := sortedKeys(m)
	sort.SliceStable(keys, func(i, j int) bool { return m[keys[i]].Line < m[keys[j]].Line })
	return keys
}
