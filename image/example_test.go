package image_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/image"
	"github.com/podkit/podkit/image/build"
	"github.com/podkit/podkit/image/registry"
)

// Example pushes a small image to the embedded registry and makes it
// available on the node with a Kubernetes pull policy.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "example-")
	defer os.RemoveAll(dir)

	reg, err := registry.New(registry.Config{DataDir: dir + "/registry"})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(reg.Handler()) // 127.0.0.1
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	small, err := build.Image(nil, build.Config{Cmd: []string{"true"}})
	if err != nil {
		log.Fatal(err)
	}
	ref, _ := name.ParseReference(host + "/demo/app:1")
	if err := remote.Write(ref, small); err != nil {
		log.Fatal(err)
	}

	images, err := image.New(image.Config{Root: dir + "/images"})
	if err != nil {
		log.Fatal(err)
	}
	pulled, err := images.Ensure(ctx, ref.String(), corev1.PullIfNotPresent, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(pulled.RepoTags[0] == ref.String(), len(pulled.Layers))

	_, err = images.Ensure(ctx, host+"/demo/other:1", corev1.PullNever, nil)
	fmt.Println(image.Reason(err))
	// Output:
	// true 0
	// ErrImageNeverPull
}
