// Package volume is the kubelet's volume stage, step 9 of the birth
// sequence: "volumes are mounted". After the pod's cgroup exists and before
// the sandbox and the containers start, the kubelet calls Manager.Setup to
// prepare every volume of the pod on the host, then Manager.Mounts per
// container to turn its volumeMounts into bind mounts (sandbox.Mount) for the
// runtime. When the pod is gone, Manager.Teardown unmounts and removes it all.
// When the pod only stops, because its node shuts down, Manager.Unmount
// (UnmountAll for every pod of the node) unmounts without removing, as a
// reboot would: what lived in memory (secrets, tokens, memory emptyDirs) is
// gone, what is on disk stays, and Setup mounts again when the pod runs.
//
// # Layout
//
// A pod's volumes live where the kubelet keeps them, so tools that know the
// kubelet's layout find them:
//
//	<PodsDir>/<uid>/volumes/kubernetes.io~empty-dir/<name>
//	<PodsDir>/<uid>/volumes/kubernetes.io~configmap/<name>
//	<PodsDir>/<uid>/volumes/kubernetes.io~secret/<name>        (tmpfs)
//	<PodsDir>/<uid>/volumes/kubernetes.io~downward-api/<name>
//	<PodsDir>/<uid>/volumes/kubernetes.io~projected/<name>     (tmpfs)
//	<PodsDir>/<uid>/volume-subpaths/<volume>/<container>/<index>
//
// hostPath volumes are the host path itself.
//
// # Atomic updates
//
// configMap, secret, downwardAPI and projected volumes are written the way the
// kubelet's AtomicWriter writes them: the files go into a fresh hidden
// directory named after the time (..2006_01_02_15_04_05.NNNN), the ..data
// symlink is swapped to it with rename(2), and every top-level entry the user
// sees is a symlink through ..data. A container that has the volume mounted
// (without subPath) therefore sees a complete old or a complete new version,
// never a mix; the previous directory is removed after the swap. Setup is
// idempotent and cheap when nothing changed (contents and modes are compared
// first), so the kubelet calls it on every pod sync and that is how updates of
// ConfigMaps, Secrets, labels, annotations and tokens propagate. As in
// Kubernetes, these volumes are always mounted read-only into containers, and
// a subPath mount of them is a snapshot that is not updated.
//
// # Memory and secrets
//
// secret and projected volumes (which carry tokens and secrets) are always on
// a tmpfs mounted at the volume directory, so secrets never touch the disk;
// emptyDir with medium Memory is a tmpfs of size sizeLimit (the kernel
// default, half of RAM, when unset). The tmpfs gets "noswap" when the kernel
// supports it (Linux 6.4+), as the kubelet does. sizeLimit of an emptyDir on
// disk is not enforced by the filesystem: Kubernetes enforces it by eviction,
// and Manager.Usage reports each emptyDir's usage for that purpose.
//
// # subPath safety
//
// subPath and subPathExpr mounts are resolved with openat2(RESOLVE_BENEATH)
// from the volume root, so a symlink planted by a container cannot lead the
// mount out of the volume (CVE-2017-1002101, CVE-2021-25741). The resolved
// file descriptor is bind mounted into volume-subpaths/ right away, and that
// bind mount, not a path that a container could swap afterwards, is what the
// runtime receives. Missing subPath directories are created one component at
// a time the same way, with the mode of the volume root, for every volume
// type as the kubelet does.
//
// # Ownership
//
// The pod's fsGroup is applied as Kubernetes' SetVolumeOwnership does (group
// ownership, g+r or g+rw, setgid on directories) to emptyDir when it is created
// and to every new version of the atomically written volumes; a projected
// service account token is owned by the pod's single runAsUser when all its
// containers share one (mode 0600 then, 0640 with an fsGroup).
//
// # Differences from Kubernetes
//
//   - ConfigMaps and Secrets are read with a GET through the client on each
//     Setup, not from a watch-based cache. Pass a client backed by an informer
//     cache to reduce load.
//   - resourceFieldRef values use the container's own requests and limits (a
//     missing request defaults to the limit, as API defaulting does); unset
//     limits fall back to Config.Allocatable only when it is given.
//   - A projected serviceAccountToken without defaultMode gets mode 0600 (the
//     API server normally defaults defaultMode to 0644, which then applies).
//   - subPathExpr sees the container's env entries with a value or a
//     fieldRef/resourceFieldRef (in order, with $(VAR) references expanded);
//     configMapKeyRef, secretKeyRef and envFrom need the API and are not
//     available there.
//   - emptyDir medium HugePages, image volumes, clusterTrustBundle and
//     podCertificate projections and all network or persistent volume types
//     are reported as unsupported.
package volume
