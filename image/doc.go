// Package image is step 10 of the birth sequence: it resolves an image
// reference, authenticates, downloads and verifies the manifest, config and
// layers into a content-addressed store, and records the image so the
// kubelet can start containers from it (package overlay unpacks the layers).
//
// The pieces: ParseReference normalises names like Docker and containerd;
// package content is the blob store (blobs/sha256/<hex>, written through an
// ingest area and renamed only once verified); Puller fetches from
// registries with go-containerregistry, honouring mirrors and plain-HTTP or
// self-signed hosts (RegistryConfig, shaped like k3s' registries.yaml) and
// Kubernetes pull secrets (Keyring); Service adds pull policies with the
// kubelet's error reasons, deduplicates concurrent pulls, lists images with
// their sizes for node.status.images, removes them and collects garbage by
// last use. Package registry is an embedded OCI registry for tests and
// demos; package build makes small images without a network.
package image
