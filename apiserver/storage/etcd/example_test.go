package etcd_test

import (
	"context"
	"fmt"
	"log"

	"github.com/podkit/podkit/apiserver/scheme"
	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/etcd"
)

// Example opens a store on a three-member etcd cluster over TLS, as
// `podkit apiserver --store etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379
// --etcd-cafile ... --etcd-certfile ... --etcd-keyfile ...` does, and reads
// the revision every resourceVersion comes from.
func Example() {
	ctx := context.Background()
	tlsCfg, err := etcd.LoadTLS("/etc/podkit/etcd/ca.crt", "/etc/podkit/etcd/client.crt", "/etc/podkit/etcd/client.key")
	if err != nil {
		log.Fatal(err)
	}
	endpoints, err := etcd.ParseEndpoints("10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379", true)
	if err != nil {
		log.Fatal(err)
	}
	st, err := etcd.New(ctx, etcd.Config{Endpoints: endpoints, TLS: tlsCfg, Codec: scheme.StorageCodec(scheme.New())})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	var _ storage.Store = st // any storage.Store user works on it
	rev, err := st.CurrentRevision(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("etcd revision", rev)
}
