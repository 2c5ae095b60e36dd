# polyccm: one static cloud-controller-manager binary for several clouds.
#
#   make demo [DRIVER=gce|aws|hetzner|openstack]  the main job on a local cluster and a simulated cloud
#   make test                   unit tests, the build-tag matrix and the e2e
#   make build                  bin/polyccm with every driver
#   make build DRIVERS=aws,digitalocean   only those drivers
#   make package [DRIVERS=aws,gce]        .deb and .rpm in dist/ (docs/packaging.md)
#   make dist                   reproducible release tarballs and SHA256SUMS in dist/
#   make image [PUSH=registry/name]       reproducible linux/amd64+arm64 OCI image in dist/
#   make bench [BENCH_DRIVER=aws]         polyccm at 100/1000/5000 nodes (docs/performance.md)
#   make fuzz [FUZZTIME=5m]               the config and annotation fuzz targets
#
# Version stamping: VERSION, COMMIT and DATE come from git; DATE is the
# commit's date, not now, so the same commit builds the same bytes.

SHELL    := /bin/bash
MODULE   := github.com/polyccm/polyccm
BIN      ?= bin/polyccm
DRIVERS  ?=
DRIVER   ?= digitalocean
GO       ?= go

VERSION  ?= $(shell git describe --tags --match 'v*' --dirty 2>/dev/null || echo "v0.1.0-dev+$$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$$(test -n "$$(git status --porcelain 2>/dev/null)" && echo .dirty)")
COMMIT   ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
DATE     ?= $(shell git log -1 --format=%cI 2>/dev/null)
TREE     ?= $(shell test -z "$$(git status --porcelain 2>/dev/null)" && echo clean || echo dirty)

# One build configuration for build, vet, test and the e2e binaries, so they
# share one build cache (a cold cache costs minutes per configuration).
export CGO_ENABLED := 0
export GOFLAGS := -trimpath -buildvcs=false

comma := ,
empty :=
space := $(empty) $(empty)
# DRIVERS=aws,digitalocean -> -tags custom,drivers.aws,drivers.digitalocean
TAGS := $(if $(DRIVERS),custom$(comma)$(subst $(space),$(comma),$(addprefix drivers.,$(subst $(comma),$(space),$(DRIVERS)))))

# A misspelt driver must fail the build, not quietly build fewer drivers.
KNOWN_DRIVERS := $(filter-out all,$(notdir $(wildcard drivers/*)))
UNKNOWN_DRIVERS := $(filter-out $(KNOWN_DRIVERS),$(subst $(comma),$(space),$(DRIVERS)))
ifneq ($(UNKNOWN_DRIVERS),)
$(error DRIVERS: no driver named "$(UNKNOWN_DRIVERS)"; drivers in this tree: $(KNOWN_DRIVERS))
endif

# component-base's version is the Kubernetes release of the libraries
# (k8s.io/component-base v0.37.2 is Kubernetes v1.37.2), not polyccm's: it
# is the binary version Kubernetes' feature gates are versioned against, and
# stamped with polyccm's v0.x it turned off every gate introduced since
# (logging.format: json among them).
CBV := k8s.io/component-base/version
KUBE_VERSION := $(shell $(GO) list -m -f '{{.Version}}' k8s.io/component-base 2>/dev/null | sed 's/^v0\./v1./')
LDFLAGS := -s -w \
	-X $(MODULE)/core/version.Version=$(VERSION) \
	-X $(MODULE)/core/version.Commit=$(COMMIT) \
	-X $(MODULE)/core/version.Date=$(DATE) \
	-X $(CBV).gitVersion=$(KUBE_VERSION) \
	-X $(CBV).gitCommit=$(COMMIT) \
	-X $(CBV).gitTreeState=$(TREE) \
	-X $(CBV).buildDate=$(DATE)

GOFLAGS_BUILD := $(if $(TAGS),-tags $(TAGS)) -ldflags '$(LDFLAGS)'

.PHONY: all build tools tools-cluster test test-unit test-e2e lint demo clean help version

all: build

help:
	@sed -n '2,15p' Makefile

build:
	@mkdir -p $(dir $(BIN))
	$(GO) build $(GOFLAGS_BUILD) -o $(BIN) ./cmd/polyccm
	@echo "built $(BIN) $(VERSION) with drivers: $$($(abspath $(BIN)) drivers | paste -sd, -)"

# The real etcd and kube-apiserver the tests and the demo run (and helm and
# the upstream aws-cloud-controller-manager the tests run), built once from
# the Go module proxy and cached outside the repo.
tools:
	bash test/tools/build.sh

# The demo needs etcd and kube-apiserver only, not the chart tests' helm
# nor the drop-in tests' upstream aws-cloud-controller-manager.
tools-cluster:
	NO_HELM=1 NO_UPSTREAM=1 bash test/tools/build.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags e2e ./test/...

test-unit:
	$(GO) test -count=1 ./...

# CCMTEST_REQUIRE_CLUSTER turns "no control plane binaries" into a failure
# instead of a skip, so the e2e can never pass by not running.
# SOAK_DURATION is the soak's churn in make test: 90s keeps the whole run
# within 15 minutes on 2 cores (the soak is the longest e2e test, in a
# shard of its own); a longer soak: make test-e2e SOAK_DURATION=10m.
SOAK_DURATION ?= 90s

# E2E_SHARDS processes run the e2e tests side by side (test/shard), each
# with its own control plane and fakes; E2E_SHARDS=1 runs them one by one.
E2E_SHARDS ?= 6

test-e2e: tools build
	CCMTEST_REQUIRE_CLUSTER=1 CCMTEST_POLYCCM_BIN=$(CURDIR)/$(BIN) CCMTEST_SOAK_DURATION=$(SOAK_DURATION) \
		$(GO) run ./test/shard -n $(E2E_SHARDS) -tags e2e -timeout 30m ./test/e2e
	CCMTEST_REQUIRE_CLUSTER=1 CCMTEST_POLYCCM_BIN=$(CURDIR)/$(BIN) \
		$(GO) run ./test/shard -n 2 -tags e2e -timeout 15m ./test/bench

test: lint tools
	CCMTEST_REQUIRE_CLUSTER=1 $(MAKE) test-unit
	$(MAKE) fuzz-short
	$(MAKE) test-e2e

# make demo DRIVER=NAME runs on one of the simulated clouds of test/demo
# (a file each). DRIVER is checked before anything is built; with DRIVERS
# set, the build must include it.
DEMO_DRIVERS := digitalocean gce aws hetzner openstack
ifneq ($(filter demo,$(MAKECMDGOALS)),)
ifeq ($(filter $(DEMO_DRIVERS),$(DRIVER)),)
$(error DRIVER=$(DRIVER): the demo simulates $(DEMO_DRIVERS): run make demo DRIVER=one of them)
endif
ifneq ($(DRIVERS),)
ifeq ($(filter $(DRIVER),$(subst $(comma),$(space),$(DRIVERS))),)
$(error DRIVER=$(DRIVER) is not among DRIVERS=$(DRIVERS); add it, or leave DRIVERS unset to build every driver)
endif
endif
endif

demo: tools-cluster build
	CCMTEST_POLYCCM_BIN=$(CURDIR)/$(BIN) $(GO) run ./test/demo -driver $(DRIVER)

# Packages and release tarballs (docs/packaging.md). File times are the last
# commit's, or a distribution's SOURCE_DATE_EPOCH, so that the same inputs
# give the same bytes.
DIST              ?= dist
DIST_PLATFORMS    ?= linux/amd64 linux/arm64
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
PACKAGE_MAINTAINER ?=

.PHONY: package dist image

# make package [DRIVERS=...] [GOARCH=arm64]: builds $(BIN) with those
# drivers, then a .deb and an .rpm of it with nfpm (the Go module, run by
# packaging/mkpkg, which itself runs on the build machine).
package: build
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) env -u GOOS -u GOARCH $(GO) run ./packaging/mkpkg -bin '$(BIN)' -version '$(VERSION)' -out '$(DIST)'$(if $(PACKAGE_MAINTAINER), -maintainer '$(PACKAGE_MAINTAINER)')

# make dist [DRIVERS=...] [DIST_PLATFORMS=linux/amd64]: a static binary per
# platform, packed by packaging/mkdist into polyccm-VERSION-OS-ARCH.tar.gz.
dist:
	@test -n "$(SOURCE_DATE_EPOCH)" || { echo "make dist: set SOURCE_DATE_EPOCH (no git history to take it from)" >&2; exit 1; }
	@mkdir -p '$(DIST)' && rm -f '$(DIST)'/polyccm-*.tar.gz '$(DIST)/SHA256SUMS'
	set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; bins=; \
	for p in $(DIST_PLATFORMS); do \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build $(GOFLAGS_BUILD) -o "$$tmp/$${p/\//-}/polyccm" ./cmd/polyccm; \
		bins="$$bins $$tmp/$${p/\//-}/polyccm"; \
	done; \
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) env -u GOOS -u GOARCH $(GO) run ./packaging/mkdist -version '$(VERSION)' -out '$(DIST)' $$bins

# make image [DRIVERS=...] [PUSH=registry/name] [IMAGE_PLATFORMS=linux/amd64]:
# a static binary per platform, packed by packaging/mkimage into one OCI
# image index, $(IMAGE):VERSION ("+" becomes "-"), without a container
# daemon: the layout dist/image/ and the same as dist/polyccm-VERSION-image.tar.
# PUSH also pushes it, with that tag, using the `docker login` credentials.
IMAGE           ?= ghcr.io/polyccm/polyccm
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
PUSH            ?=

image:
	@test -n "$(SOURCE_DATE_EPOCH)" || { echo "make image: set SOURCE_DATE_EPOCH (no git history to take it from)" >&2; exit 1; }
	@mkdir -p '$(DIST)'
	set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; bins=; \
	for p in $(IMAGE_PLATFORMS); do \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build $(GOFLAGS_BUILD) -o "$$tmp/$${p/\//-}/polyccm" ./cmd/polyccm; \
		bins="$$bins $$tmp/$${p/\//-}/polyccm"; \
	done; \
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) env -u GOOS -u GOARCH $(GO) run ./packaging/mkimage -version '$(VERSION)' \
		-revision '$(COMMIT)' -date '$(DATE)' -source 'https://$(MODULE)' -image '$(IMAGE)' -out '$(DIST)' \
		$(if $(PUSH),-push '$(PUSH)') $$bins

# make bench [BENCH_DRIVER=aws|gce|digitalocean] [BENCH_NODES=100,1000,5000]
# [BENCH_REGIMES=joinstorm,coldstart,steady] [BENCH_FLAGS='-latency 50ms -rate 10']:
# polyccm on the local control
# plane and a simulated, rate-limited cloud at each size, written to
# bench/results/<driver>-<date>.json and .svg (docs/performance.md); then
# the Go benchmarks of the core batcher and cache (bench-go).
.PHONY: bench bench-go fuzz
BENCH_DRIVER ?= digitalocean
BENCH_NODES  ?= 100,1000,5000
BENCH_REGIMES ?= joinstorm,coldstart,steady
BENCH_FLAGS  ?=
BENCH ?= .
bench: tools build bench-go
	CCMTEST_POLYCCM_BIN=$(CURDIR)/$(BIN) BENCH_DRIVER=$(BENCH_DRIVER) BENCH_NODES=$(BENCH_NODES) \
		BENCH_REGIMES=$(BENCH_REGIMES) $(GO) run ./test/bench $(BENCH_FLAGS)

bench-go:
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem ./core/...

# make fuzz [FUZZTIME=5m]: the config loader on random files and
# environments, and a driver's annotations on random Services; a failing
# input is saved under the package's testdata/fuzz/. make test runs both
# for FUZZ_SHORT each (fuzz-short).
FUZZTIME   ?= 60s
FUZZ_SHORT ?= 10s
.PHONY: fuzz-short
fuzz:
	$(GO) test ./config -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(FUZZTIME)
	$(GO) test ./core/annotations -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)

fuzz-short:
	$(MAKE) fuzz FUZZTIME=$(FUZZ_SHORT)

version:
	@echo $(VERSION)

clean:
	rm -rf bin dist
