package redact_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/polyccm/polyccm/core/redact"
)

const jwt = "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEyMyJ9.eyJpc3MiOiJrdWJlcm5ldGVzL3NlcnZpY2VhY2NvdW50In0.c2lnbmF0dXJlLWJ5dGVz_-0"

func TestRedact(t *testing.T) {
	for _, tc := range []struct {
		name, in, secret string
	}{
		{"TokenReview body, text format", `I1125 10:00:00.000 request.go:1212] "Request Body" body="{\"kind\":\"TokenReview\",\"apiVersion\":\"authentication.k8s.io/v1\",\"spec\":{\"token\":\"opaque-not-a-jwt-123\"}}"`, "opaque-not-a-jwt-123"},
		{"TokenReview body, JSON format", `{"msg":"Request Body","body":"{\"spec\":{\"token\":\"opaque-not-a-jwt-123\"}}"}`, "opaque-not-a-jwt-123"},
		{"plain JSON", `{"token": "opaque-not-a-jwt-123"}`, "opaque-not-a-jwt-123"},
		{"a JWT anywhere", `user token ` + jwt + ` expired`, jwt},
		{"bearer header", `curl -H "Authorization: Bearer dop_v1_0123456789abcdef"`, "dop_v1_0123456789abcdef"},
		{"header map", `headers=map[Authorization:[Bearer dop_v1_0123456789abcdef]]`, "dop_v1_0123456789abcdef"},
		{"bootstrap token", `joining with abcdef.0123456789abcdef now`, "abcdef.0123456789abcdef"},
		{"private key", `"private_key":"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY-----\n"`, "MIIEvQIBADANBg"},
		{"query token", `GET https://api.example.com/v2/droplets?page=2&access_token=dop_v1_0123456789abcdef&per_page=200: 500`, "dop_v1_0123456789abcdef"},
		{"presigned AWS URL", `url="https://sts.amazonaws.com/?Action=GetCallerIdentity&X-Amz-Security-Token=FQoGZXIvYXdzEXAMPLE&X-Amz-Signature=abc123def"`, "FQoGZXIvYXdzEXAMPLE"},
		{"API key", `GET http://127.0.0.1:8080/compute/v1/projects/p/zones?key=AIzaSyEXAMPLEKEY0123 failed`, "AIzaSyEXAMPLEKEY0123"},
		{"URL userinfo", `dial proxy http://polyccm:s3cr3t-pass@proxy.internal:3128 failed`, "s3cr3t-pass"},
		{"AWS secret key", `{"SecretAccessKey":"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}`, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := redact.String(tc.in)
			if strings.Contains(got, tc.secret) || !strings.Contains(got, redact.Mask) {
				t.Errorf("redact(%s)\n = %s", tc.in, got)
			}
		})
	}
	// Lines without credentials pass unchanged.
	for _, keep := range []string{
		`I1125 "Ensured load balancer" service="shop/web" loadBalancer="4de7ac8b-495b-4884-9a69-1050c6793cd6"`,
		`{"msg":"Synced","node":"ip-10-0-0-1.ec2.internal","tokens":3}`,
		`"Event occurred" object="default/web" reason="EnsuringLoadBalancer"`,
		`GET http://127.0.0.1:44165/v2/droplets?page=1&per_page=200: 401`,
		`endpoint="http://127.0.0.1:8080/compute/v1/" operation="instances.aggregatedList"`,
	} {
		if got := redact.String(keep); got != keep {
			t.Errorf("changed a clean line:\n  %s\n= %s", keep, got)
		}
	}
}

func TestWriter(t *testing.T) {
	var buf bytes.Buffer
	w := redact.Writer(&buf)
	line := []byte(`body="{\"spec\":{\"token\":\"` + jwt + `\"}}"` + "\n")
	n, err := w.Write(line)
	if err != nil || n != len(line) {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(line))
	}
	if strings.Contains(buf.String(), jwt) || strings.Contains(string(line), redact.Mask) {
		t.Errorf("written %q (and the caller's buffer %q)", buf.String(), line)
	}
}
