// Package manifests holds the example manifests `podkit demo` applies: a
// web server pod with an init container and probes (web-pod.yaml) and a
// Deployment of three replicas (deployment.yaml). They are plain
// Kubernetes YAML; images named like podkit's demo images (demo/web:1)
// are served by the cluster's embedded registry.
package manifests

import "embed"

// FS holds the manifests (*.yaml).
//
//go:embed *.yaml
var FS embed.FS
