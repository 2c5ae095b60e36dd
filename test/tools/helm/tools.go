//go:build tools

// Package tools records the helm command the chart tests run
// (test/deploy/helm_test.go), so `go mod tidy` keeps its dependencies.
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
