// Package memory is the in-memory storage.Store: step 4 of the birth
// sequence for tests, demos and clusters that need no persistence.
//
// It keeps the etcd-shaped contract of package storage exactly as the
// durable backends do (it shares their engine): one revision counter
// stamped as resourceVersion on every write, compare-and-swap updates,
// keys ordered in a copy-on-write B-tree so that List by prefix with
// Limit/Continue stays cheap at tens of thousands of objects and pages are
// consistent snapshots, and a watch cache replaying recent history. Objects
// are deep-copied on the way in and on the way out; nothing survives the
// process.
package memory
