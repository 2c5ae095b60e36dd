//go:build tools

// Package tools records the upstream AWS cloud-controller-manager that the
// drop-in tests run side by side with polyccm (test/upstream), so `go mod
// tidy` keeps its dependencies.
package tools

import (
	_ "k8s.io/cloud-provider-aws/cmd/aws-cloud-controller-manager"
)
