// Package e2e is podkit's end-to-end test suite for the API server: it
// builds the real `podkit` binary, runs `podkit apiserver` as a separate
// process (one per test, on its own data directory and a free port on
// 127.0.0.1) and drives it with the real, unmodified kubectl binaries
// (1.32 and 1.27) and with client-go, the way users, controllers and
// kube-scheduler do.
//
// In the birth sequence this suite covers step 1 (a client POSTs the
// manifest) through step 4 (the pod is persisted Pending with no node,
// 201 Created, watch events), plus the API server's durability across
// crashes and restarts.
//
// Set PODKIT_E2E_BINARY to test a prebuilt podkit binary instead of
// building one.
package e2e
