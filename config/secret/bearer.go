package secret

import "net/http"

// Bearer is an http.RoundTripper that sends Token as a bearer token. It
// reads the token for every request, so a rotated token file or systemd
// credential is used without a restart. Cloud names the API in errors.
type Bearer struct {
	Token Secret
	Cloud string
	Base  http.RoundTripper
}

// RoundTrip adds the Authorization header to a clone of r.
func (b *Bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, err := b.Token.RevealToken()
	if err != nil {
		return nil, &TokenError{Cloud: b.Cloud, Err: err}
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return b.Base.RoundTrip(r)
}

// TokenError is a token polyccm could not read: a credentials problem on
// our side, which drivers classify like a token the cloud rejected.
type TokenError struct {
	Cloud string
	Err   error
}

func (e *TokenError) Error() string { return e.Cloud + " API token: " + e.Err.Error() }
func (e *TokenError) Unwrap() error { return e.Err }
