// Package redact keeps credentials out of polyccm's logs. At high
// verbosity client-go logs whole request and response bodies, and the
// secure port's delegated authentication sends every caller's bearer token
// to the API server in a TokenReview body; libraries may log headers or
// keys in ways polyccm does not control. Writer scrubs what looks like a
// credential from every log line on its way out, whatever logged it.
package redact

import (
	"bytes"
	"io"
	"regexp"
)

// Mask replaces a credential.
const Mask = "REDACTED"

// rule replaces what re matches with repl (which may use re's groups).
type rule struct {
	re   *regexp.Regexp
	repl []byte
}

// rules, in order. Values are matched as they appear in a log line: plain,
// quoted, or quoted again inside a quoted body (\"token\":\"...\").
var rules = []rule{
	// PEM private keys (a GCE service-account key's private_key), with
	// their line breaks raw or escaped.
	{regexp.MustCompile(`-----BEGIN ([A-Z ]*)PRIVATE KEY-----(?s:.*?)-----END [A-Z ]*PRIVATE KEY-----`), []byte("-----BEGIN ${1}PRIVATE KEY-----" + Mask + "-----END ${1}PRIVATE KEY-----")},
	// JSON Web Tokens: service account tokens, OIDC ID tokens.
	{regexp.MustCompile(`eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*`), []byte(Mask)},
	// Credential fields of JSON bodies: a TokenReview's spec.token, OAuth
	// tokens, passwords, private keys, secret keys.
	{regexp.MustCompile(`((?:\\*)"(?:token|access_token|refresh_token|id_token|password|client_secret|private_key|secret|secretAccessKey|SecretAccessKey)(?:\\*)"\s*:\s*(?:\\*)")(?:[^"\\]|\\[^"])*`), []byte("${1}" + Mask)},
	// Authorization headers, however they are printed.
	{regexp.MustCompile(`(?i)((?:authorization|proxy-authorization)\\*"?\s*[:=]\s*\[?\s*\\*"?\s*(?:bearer|basic|token)\s+)[^\s"\\,\]]+`), []byte("${1}" + Mask)},
	// Credentials in URLs: query parameters (an OAuth access_token, a
	// presigned AWS URL's signature and session token, API keys) and
	// userinfo passwords (https://user:password@host).
	{regexp.MustCompile(`(?i)([?&](?:access_token|token|api_key|apikey|key|client_secret|password|signature|x-amz-signature|x-amz-security-token|x-amz-credential)=)[^&\s"\\#]+`), []byte("${1}" + Mask)},
	{regexp.MustCompile(`(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@"\\]+:)[^@/\s"\\]+@`), []byte("${1}" + Mask + "@")},
	// Kubernetes bootstrap tokens.
	{regexp.MustCompile(`\b[a-z0-9]{6}\.[a-z0-9]{16}\b`), []byte(Mask)},
}

// Bytes returns b with every credential it finds replaced by Mask.
func Bytes(b []byte) []byte {
	for _, r := range rules {
		if r.re.Match(b) {
			b = r.re.ReplaceAll(b, r.repl)
		}
	}
	return b
}

// String is Bytes for a string.
func String(s string) string { return string(Bytes([]byte(s))) }

// Writer returns w behind a scrubber. The log writers write one entry per
// Write, so a credential is never split across two. It is as safe for
// concurrent use as w.
func Writer(w io.Writer) io.Writer { return &writer{w: w} }

type writer struct{ w io.Writer }

func (x *writer) Write(p []byte) (int, error) {
	out := Bytes(bytes.Clone(p))
	if _, err := x.w.Write(out); err != nil {
		return 0, err
	}
	// The caller wrote all of p, whatever the scrubbing made of it.
	return len(p), nil
}
