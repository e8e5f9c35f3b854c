// Package bolt is the durable, embedded storage.Store podkit uses by
// default: step 4 of the birth sequence ("persist, 201 Created, watch
// events") in a single bbolt file, with the etcd-shaped contract of
// package storage.
//
// Layout: bucket "objects" maps each storage key to its object encoded with
// the codec given to Open (scheme.StorageCodec: protobuf, as Kubernetes
// keeps in etcd); bucket "meta" holds the store's revision, written in the
// same transaction as every batch of writes.
//
// Durability and throughput: a write is acknowledged only after the bbolt
// transaction holding it committed, and bbolt fsyncs every commit (NoSync
// is never set). Throughput comes from group commit: concurrent writers
// queue their writes and one loop commits everything queued in a single
// transaction, with one fsync, assigning revisions in commit order; the new
// state and its watch events are published only after the commit, in
// revision order.
//
// Reads (Get, List) are served from an in-memory copy of every object,
// loaded at Open and kept in sync after each commit, so List of 10,000
// objects costs copies, not decoding. Watch history lives in memory and
// starts at the revision found at Open: a client may resume from that
// revision or later after a restart. Open fails with ErrLocked when another
// process holds the file.
package bolt
