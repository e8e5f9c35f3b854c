# podkit — make targets. `make test` is the test command CI runs.
GO ?= go
BIN := bin/podkit

.PHONY: all build run test test-short deps vet fmt fuzz bench clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/podkit
	$(GO) build -o bin/podkit-init ./sandbox/cmd/podkit-init

# The main job on its embedded defaults: the API server over bbolt in
# ./.podkit on 127.0.0.1:6443, with a kubeconfig at ./.podkit/kubeconfig.
run: build
	./$(BIN) apiserver --data-dir .podkit --port 6443 --write-kubeconfig .podkit/kubeconfig

# Installs what the tests need (Debian packages, host cgroup setup;
# idempotent).
deps:
	./hack/install-deps.sh
	./hack/host-setup.sh

vet:
	$(GO) vet ./...

fmt:
	gofmt -l -w $$(git ls-files '*.go')

# The full test suite, privileged tests included (run as root; CI sets
# PODKIT_PRIVILEGED=require so a root-only test that skips fails instead).
test: deps
	./hack/test.sh

test-short:
	$(GO) test -short ./...

bench:
	$(GO) test -run '^$$' -bench . -benchtime 2s ./apiserver/...

clean:
	rm -rf bin
