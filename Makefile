# podkit — make targets. `make test` is the test command CI runs.
GO ?= go
BIN := bin/podkit

.PHONY: all build run demo test test-short deps vet fmt fuzz bench clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/podkit
	$(GO) build -o bin/podkit-init ./sandbox/cmd/podkit-init
	CGO_ENABLED=0 $(GO) build -o bin/demo-web ./examples/demo-web

# The main job on its embedded defaults: a whole cluster (podkit up) with
# its state in ./.podkit, the API server on 127.0.0.1:6443 and a kubeconfig
# at ./.podkit/kubeconfig. Needs root (namespaces, mounts, cgroups).
run: build
	./$(BIN) up --data-dir .podkit

# The main job on a fresh machine: installs what podkit needs (as make test
# does), builds it, starts a cluster with its state in ./.podkit, applies
# examples/manifests, prints the pods and the birth timeline of one, and
# serves until Ctrl-C (kubeconfig: ./.podkit/kubeconfig). Needs root.
demo: deps build
	./$(BIN) demo --data-dir .podkit

# Installs what the tests need (Debian packages, host cgroup setup;
# idempotent).
deps:
	./hack/install-deps.sh
	./hack/host-setup.sh

vet:
	$(GO) vet ./...

fmt:
	gofmt -l -w $$(git ls-files '*.go')

# The full test suite, privileged tests included. It runs as root with
# PODKIT_PRIVILEGED=require (a root-only test that would skip fails
# instead), exactly as .ci/run does; `PODKIT_PRIVILEGED= make test` allows
# the skips.
test: deps
	PODKIT_PRIVILEGED=$${PODKIT_PRIVILEGED-require} ./hack/test.sh

test-short:
	$(GO) test -short ./...

bench:
	$(GO) test -run '^$$' -bench . -benchtime 2s ./apiserver/...

clean:
	rm -rf bin
