// Package app assembles a complete podkit API server from plain options:
// it opens the chosen store (bbolt in the data dir by default, or memory),
// builds the default admission chain, validation, kubectl tables and the
// OpenAPI documents, and serves them. It is what `podkit apiserver` runs and
// what the reference composition (podkit up) embeds; library users who want
// a different stage build apiserver.Config themselves.
package app
