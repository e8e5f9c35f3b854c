#!/usr/bin/env bash
# The full test suite: vet, unit, integration and end-to-end tests (real
# kubectl), the race detector on the concurrent packages, and a short run of
# every fuzz target.
set -euo pipefail
cd "$(dirname "$0")/.."
export PODKIT_PRIVILEGED="${PODKIT_PRIVILEGED:-}"
go vet ./...
go test -count=1 -timeout 30m ./...
go test -count=1 -race -timeout 20m ./apiserver/...
./hack/fuzz.sh
