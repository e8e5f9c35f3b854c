// Package sandbox is steps 12 and 14 of the birth sequence: the
// CRI-shaped SandboxRunner that creates a pod's namespaces (pinned, or with
// a pause process as PID 1) and forks its containers into them on an
// overlay root filesystem, inside their cgroups.
package sandbox
