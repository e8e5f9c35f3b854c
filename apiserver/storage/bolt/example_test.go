package bolt_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/scheme"
	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/bolt"
)

func Example() {
	dir, err := os.MkdirTemp("", "podkit-bolt-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "podkit.db")
	ctx := context.Background()
	key := storage.Key(schema.GroupResource{Resource: "configmaps"}, "default", "settings")

	s, err := bolt.Open(path, scheme.StorageCodec(scheme.New()))
	if err != nil {
		log.Fatal(err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"},
		Data:       map[string]string{"mode": "fast"},
	}
	if _, err := s.Create(ctx, key, cm); err != nil { // durable when it returns
		log.Fatal(err)
	}
	_ = s.Close()

	// After a restart everything is there, revision included.
	s, err = bolt.Open(path, scheme.StorageCodec(scheme.New()))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	got, _ := s.Get(ctx, key)
	rv, _ := s.CurrentRevision(ctx)
	fmt.Println(got.(*corev1.ConfigMap).Data["mode"], got.(*corev1.ConfigMap).ResourceVersion, rv)
	// Output: fast 1 1
}
