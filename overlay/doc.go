// Package overlay is step 11 of the birth sequence: it turns the image
// layers stored by package image into read-only snapshots and gives every
// container a writable rootfs over them.
//
// The Snapshotter contract follows containerd's: committed snapshots are
// immutable layers keyed by their chain ID and shared by every container
// that uses them; active snapshots (Prepare) are writable upper directories
// over the stack of committed parents; views (View) are read-only. The
// contract returns mounts as plain data ([]Mount); MountAll and Unmount turn
// them into mount system calls, so the runtime decides where a rootfs is
// mounted.
//
// Layers are applied straight into a snapshot's upper directory with
// overlayfs-native whiteouts (a 0:0 character device) and opaque directories
// (the trusted.overlay.opaque xattr). Every archive entry is resolved with
// file descriptors, never through a symbolic link, and entries that would
// land outside the snapshot are rejected with ErrUnsafePath.
//
// Driver is the overlayfs implementation; package overlaytest holds the
// conformance suite any Snapshotter can run.
package overlay
