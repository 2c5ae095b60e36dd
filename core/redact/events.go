package redact

import (
	"fmt"
	"regexp"
	"unicode/utf8"
)

// MaxEvent bounds an event message. An event repeats on every retry, and a
// message built from a Service's values or a cloud's error can be as long
// as they are (a 100 KB annotation value); nobody reads past the first
// lines, and the log holds the rest.
const MaxEvent = 1024

// errorRoom is what the upstream controllers may put before an error in
// their events ("Error syncing load balancer: failed to ensure load
// balancer: "), kept free so that their events stay within MaxEvent too.
const errorRoom = 256

// requestIDs are the ways the clouds' SDKs put a request's ID into an
// error's text. Every request has its own, so events carrying one never
// repeat and are never folded into one with a count: a credential outage
// makes a new event per retry per Service. The ID is for the cloud's
// support, so it stays in polyccm's log and goes from events.
var requestIDs = []rule{
	// godo: `GET https://…/v2/droplets: 401 (request "9c1e…") Unable to
	// authenticate you`.
	{regexp.MustCompile(` ?\(request "[^"]*"\)`), nil},
	// hcloud-go: `unable to authenticate (unauthorized, d5064a1f0bb9de4b)`,
	// the error code and the X-Correlation-Id.
	{regexp.MustCompile(`\(([a-z][a-z0-9_]*), [0-9a-fA-F-]{12,}\)`), []byte("($1)")},
	// aws-sdk-go-v2: `https response error StatusCode: 401, RequestID:
	// 5c0e…, api error AuthFailure: …`; S3's HostID alike.
	{regexp.MustCompile(`\b(?:RequestID|Request ID|HostID): ?[^\s,;)]*[,;]? ?`), nil},
	// gax (GCE's REST clients): `error details: name = RequestInfo id = …
	// data = …`.
	{regexp.MustCompile(`(name = RequestInfo) id = \S* data = [^\n]*`), []byte("$1")},
	// Error bodies and details in JSON (GCE's RequestInfo, DigitalOcean's
	// body), quoted or not.
	{regexp.MustCompile(`((?:\\*)"(?:request_id|requestId|correlation_id|correlationId)(?:\\*)"\s*:\s*(?:\\*)")(?:[^"\\]|\\[^"])*`), []byte("${1}")},
	// Response headers, however they are printed: X-Request-Id,
	// X-Amz-Request-Id, X-Amzn-RequestId, X-Correlation-Id.
	{regexp.MustCompile(`(?i)(\bx-(?:amzn?-)?(?:request-?id|correlation-?id)\\*"?\s*[:=]\s*\[?\s*\\*"?)[^\s"\\,;\]]+`), []byte("${1}")},
	// A GCE change's own request ID in a URL: new for every attempt.
	{regexp.MustCompile(`([?&]requestId=)[^&\s"\\#:]+`), []byte("${1}")},
}

// Event returns msg as an event may carry it: credentials masked as in the
// log, the clouds' request IDs left out, and cut to MaxEvent bytes with a
// tail saying how much more the log has. The caller logs msg whole when
// Event changed it.
func Event(msg string) string { return clip(withoutRequestIDs(String(msg)), MaxEvent) }

// EventError returns err with its text as Event makes it, and room left
// for the words a controller puts before an error in an event: for errors
// that a controller outside polyccm (the upstream service controller)
// turns into events. The result unwraps to err, so errors.Is and errors.As
// see what err is; err itself comes back when its text needs no change
// (the upstream controllers compare some errors with ==).
func EventError(err error) error {
	if err == nil {
		return nil
	}
	full := err.Error()
	msg := clip(withoutRequestIDs(String(full)), MaxEvent-errorRoom)
	if msg == full {
		return err
	}
	return &eventError{msg: msg, err: err}
}

type eventError struct {
	msg string
	err error
}

func (e *eventError) Error() string { return e.msg }
func (e *eventError) Unwrap() error { return e.err }

func withoutRequestIDs(s string) string {
	b := []byte(s)
	for _, r := range requestIDs {
		if r.re.Match(b) {
			b = r.re.ReplaceAll(b, r.repl)
		}
	}
	return string(b)
}

// clip cuts s to at most limit bytes, on a rune boundary, ending in a tail
// that says how many bytes were left out.
func clip(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	// The tail's length depends on the count it shows, which is less
	// than len(s): a tail sized for len(s) always fits.
	tail := func(n int) string { return fmt.Sprintf("… (%d bytes more; see polyccm's log)", n) }
	cut := limit - len(tail(len(s)))
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + tail(len(s)-cut)
}
