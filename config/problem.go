package config

import (
	"errors"
	"fmt"
	"github.com/polyccm/polyccm/core/redact"
	"net/url"
	"sort"
	"strings"
)

// Problem is one thing wrong with the config, at one key path. Drivers
// return Problems from their config's Validate with paths relative to their
// subtree; the loader prefixes drivers.<name>.
type Problem struct {
	Key string
	Msg string
}

func (p Problem) Error() string {
	if p.Key == "" {
		return p.Msg
	}
	return p.Key + ": " + p.Msg
}

// Problems is every problem found, reported together.
type Problems struct {
	File string
	List []Problem
	keys map[string]bool // the keys of List, so has is not a scan
}

func (ps *Problems) add(key, format string, args ...any) {
	ps.push(Problem{Key: key, Msg: fmt.Sprintf(format, args...)})
}

func (ps *Problems) addErr(key string, err error) {
	ps.push(Problem{Key: key, Msg: err.Error()})
}

func (ps *Problems) push(p Problem) {
	if ps.keys == nil {
		ps.keys = map[string]bool{}
	}
	ps.keys[p.Key] = true
	ps.List = append(ps.List, p)
}

// addTree adds errors from a driver's Validate, under prefix.
func (ps *Problems) addTree(prefix string, err error) {
	for _, e := range flatten(err) {
		var p Problem
		if errors.As(e, &p) {
			key := joinKey(prefix, p.Key)
			if !ps.has(key) { // a decoding problem at the same key says it better
				ps.push(Problem{Key: key, Msg: p.Msg})
			}
			continue
		}
		ps.addErr(prefix, e)
	}
}

func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

func (ps *Problems) has(key string) bool { return ps.keys[key] }

// maxShown is how many problems an error lists; past it, a count. Nobody
// reads 100 000 lines, and the first few say what went wrong.
const maxShown = 50

func (ps *Problems) Error() string {
	sort.SliceStable(ps.List, func(i, j int) bool { return ps.List[i].Key < ps.List[j].Key })
	var b strings.Builder
	where := "the config"
	if ps.File != "" {
		where = ps.File
	}
	if len(ps.List) == 1 {
		fmt.Fprintf(&b, "%s: %s", where, ps.List[0].Error())
		return b.String()
	}
	fmt.Fprintf(&b, "%s has %d problems:", where, len(ps.List))
	for _, p := range ps.List[:min(len(ps.List), maxShown)] {
		b.WriteString("\n  - ")
		b.WriteString(p.Error())
	}
	if n := len(ps.List) - maxShown; n > 0 {
		fmt.Fprintf(&b, "\n  … and %d more problems", n)
	}
	return b.String()
}

func (ps *Problems) err() error {
	if len(ps.List) == 0 {
		return nil
	}
	return ps
}

func joinKey(prefix, key string) string {
	switch {
	case prefix == "":
		return key
	case key == "":
		return prefix
	}
	return prefix + "." + key
}

// CheckURL returns a Problem under key unless v is an absolute http(s)
// URL, as every endpoint override must be; like, if set, is an example
// for the message. A URL may not carry credentials (user:password@): the
// cloud's token or keys authenticate, so polyccm would never send them,
// but SDKs print request URLs whole in their errors, and from there they
// would reach logs and events.
func CheckURL(key, v, like string) error {
	u, err := url.Parse(v)
	if err == nil && u.User != nil {
		return Problem{Key: key, Msg: fmt.Sprintf("%q holds credentials before the host; polyccm never sends them (the cloud credentials authenticate) and they would show in error messages: remove them", redactUserinfo(v, true))}
	}
	if err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" {
		return nil
	}
	msg := fmt.Sprintf("%q must be an absolute http(s) URL", redactUserinfo(v, true))
	if err != nil {
		msg = fmt.Sprintf("%q is not a URL: it must be an absolute http(s) URL", redactUserinfo(v, true))
	}
	if like != "" {
		msg += " like " + like
	}
	return Problem{Key: key, Msg: msg}
}

// RedactURL replaces the credentials of a URL (user:password@, or a token
// as the user) with REDACTED, for anything that prints a config value. A
// string with no "//" before its '@' (an e-mail address, a path) is not a
// URL and stays as it is.
func RedactURL(s string) string { return redactUserinfo(s, false) }

// redactUserinfo hides what may be a URL's credentials. Only a URL that
// parses with a host and has no '@' outside its query is left as it is.
// Otherwise it may be a mistyped URL (one slash, a stray space, a scheme
// url.Parse refuses, an unescaped '/' or '?' in the password), so
// everything up to its last '@' goes, after the "//" if there is one, or,
// with bare, from the start (a URL missing its scheme): a hidden host costs
// less than a shown password.
func redactUserinfo(s string, bare bool) string {
	// A token in the query (?token=…) goes as the logs hide it.
	return redact.String(hideUserinfo(s, bare))
}

func hideUserinfo(s string, bare bool) string {
	if !strings.Contains(s, "@") {
		return s
	}
	end := len(s)
	if u, err := url.Parse(s); err == nil {
		// An '@' in a query is common (an e-mail address); one in a
		// fragment, which no client sends, is more likely a password's.
		if i := strings.IndexByte(s, '?'); i >= 0 {
			end = i
		}
		if u.User == nil && u.Host != "" && !strings.Contains(s[:end], "@") {
			return s
		}
	}
	at := strings.LastIndex(s[:end], "@")
	if at < 0 {
		return s
	}
	start := 0
	if i := strings.Index(s[:at], "//"); i >= 0 {
		start = i + 2
	} else if !bare {
		return s
	}
	return s[:start] + "REDACTED" + s[at:]
}
