// Package all links in the cloud drivers that the build tags select. Each
// other file here is a one-line shim for one driver, built when no tags are
// given (every driver), when the "drivers" tag is given, or when the
// driver's own "drivers.<name>" tag is given together with "custom":
//
//	go build ./cmd/polyccm                                         # every driver
//	go build -tags custom,drivers.aws,drivers.digitalocean ./cmd/polyccm
//
// A distribution is its list of tags; `polyccm drivers` tells what a
// binary has. all_test.go enforces the scheme.
package all
