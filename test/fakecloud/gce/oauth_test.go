package gce

import (
	"context"
	"strings"
	"testing"

	"golang.org/x/oauth2/google"
)

// A key from ServiceAccountKey works with the real Google auth library:
// the signed JWT is accepted and exchanged for the API's token; a key the
// fake did not issue is refused.
func TestServiceAccountKeyExchange(t *testing.T) {
	s := New("p1", "tok-1")
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key, err := s.ServiceAccountKey("ccm@p1.iam.gserviceaccount.com")
	if err != nil {
		t.Fatal(err)
	}
	creds, err := google.CredentialsFromJSONWithType(context.Background(), key, google.ServiceAccount, "https://www.googleapis.com/auth/compute")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := creds.TokenSource.Token()
	if err != nil {
		t.Fatalf("exchanging the JWT: %v", err)
	}
	if tok.AccessToken != "tok-1" {
		t.Errorf("access token %q, want the API's token", tok.AccessToken)
	}

	other := New("p1", "tok-1")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	foreign, err := other.ServiceAccountKey("x@p1.iam.gserviceaccount.com")
	if err != nil {
		t.Fatal(err)
	}
	// Same token_uri host swap: a key the first fake never issued.
	creds2, err := google.CredentialsFromJSONWithType(context.Background(), []byte(replaceTokenURI(string(foreign), other.URL(), s.URL())), google.ServiceAccount, "https://www.googleapis.com/auth/compute")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := creds2.TokenSource.Token(); err == nil {
		t.Error("a JWT signed by a key the fake did not issue was accepted")
	}
}

func replaceTokenURI(js, from, to string) string {
	return strings.ReplaceAll(js, from+TokenPath, to+TokenPath)
}
