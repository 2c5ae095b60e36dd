package importer

// words.go turns what an operator can copy from a running CCM into
// arguments and variables: a command line (from ps, a unit's ExecStart=, a
// manifest's command and args) and an environment file.

import (
	"fmt"
	"strings"
)

// SplitCommandLine splits a command line into words as a POSIX shell
// would without expanding anything: single quotes, double quotes (with \"
// \\ \$ \` escapes), backslash escapes, and backslash-newline joining.
func SplitCommandLine(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 < len(s) && s[i+1] == '\n' {
				i++ // a continued line
				continue
			}
			if i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
				inWord = true
			}
		case c == '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("unterminated single quote")
			}
			cur.WriteString(s[i+1 : i+1+end])
			i += end + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
					i++
				}
				cur.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated double quote")
			}
			inWord = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words, nil
}

// SplitFlagsFile reads a file holding a command line. Besides plain shell
// words it takes the command and args lists of a Kubernetes manifest as
// they are copied from one: "- --flag=value" items (a quoted item is
// unquoted) and "command:" / "args:" lines, which are skipped. '#' starts a
// comment line.
func SplitFlagsFile(text string) ([]string, error) {
	var words []string
	var shell strings.Builder
	for n, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case t == "" || strings.HasPrefix(t, "#"):
			continue
		case t == "command:" || t == "args:" || t == "- command:" || t == "- args:":
			continue
		case strings.HasPrefix(t, "- "):
			item := strings.TrimSpace(t[2:])
			if len(item) >= 2 && (item[0] == '"' || item[0] == '\'') && item[len(item)-1] == item[0] {
				w, err := SplitCommandLine(item)
				if err != nil || len(w) != 1 {
					return nil, fmt.Errorf("line %d: cannot unquote the list item", n+1)
				}
				item = w[0]
			}
			words = append(words, item)
			continue
		}
		shell.WriteString(line)
		shell.WriteByte('\n')
	}
	rest, err := SplitCommandLine(shell.String())
	if err != nil {
		return nil, err
	}
	return append(words, rest...), nil
}

// ParseEnvFile reads NAME=VALUE lines as systemd's EnvironmentFile= and
// docker's --env-file take them: '#' and ';' comment lines, an optional
// "export ", single- or double-quoted values. Errors name the line and
// never quote a value (it may be a token).
func ParseEnvFile(text string) (map[string]string, error) {
	env := map[string]string{}
	for n, line := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n") {
		t := strings.TrimSpace(line)
		if t == "" || t[0] == '#' || t[0] == ';' {
			continue
		}
		t = strings.TrimPrefix(t, "export ")
		name, value, ok := strings.Cut(t, "=")
		name = strings.TrimSpace(name)
		if !ok || !envNameOK(name) {
			return nil, fmt.Errorf("line %d: not NAME=VALUE", n+1)
		}
		value = strings.TrimSpace(value)
		if len(value) >= 2 && (value[0] == '"' || value[0] == '\'') && value[len(value)-1] == value[0] {
			w, err := SplitCommandLine(value)
			if err != nil || len(w) > 1 {
				return nil, fmt.Errorf("line %d: %s: cannot unquote the value", n+1, name)
			}
			value = ""
			if len(w) == 1 {
				value = w[0]
			}
		}
		env[name] = value
	}
	return env, nil
}

func envNameOK(n string) bool {
	if n == "" || n[0] >= '0' && n[0] <= '9' {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !isLetter(c) && !(c >= '0' && c <= '9') && c != '_' {
			return false
		}
	}
	return true
}
