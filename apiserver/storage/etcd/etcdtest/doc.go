// Package etcdtest runs real etcd servers for tests of the etcd storage
// backend and of a highly available control plane: one member or a
// cluster of several, on 127.0.0.1 with free ports and temporary data
// directories, optionally serving TLS with client-certificate
// authentication. Members can be stopped, killed and restarted on the same
// data directory and ports, which is what failover tests need.
//
// It runs the etcd binary Debian's etcd-server package installs
// (hack/install-deps.sh), or the one named by $PODKIT_ETCD. A missing
// binary skips the test, or fails it when PODKIT_PRIVILEGED=require (CI).
package etcdtest
