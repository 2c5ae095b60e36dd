// Package wiretest holds what the fakes' own tests share to look at the
// wire directly, without any cloud's client: a raw request with a bearer
// token, and a JSON body decoded into generic maps.
package wiretest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Do sends method to base+path with body as JSON and the bearer token,
// and returns the response with its body read.
func Do(t testing.TB, base, token, method, path, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, strings.TrimSuffix(base, "/")+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// Decode parses a JSON document into generic maps, to check the wire
// shape independently of any client's struct tags.
func Decode(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
	return m
}
