//go:build tools

// Package tools records the commands the e2e harness builds, so `go mod tidy`
// keeps their dependencies.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
