package overlay_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/podkit/podkit/overlay"
)

// Example unpacks a one-layer image and prepares two containers' rootfs
// over it. Mounting (overlay.MountAll) needs root, so this example only
// shows the mounts.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "overlay-example-")
	defer os.RemoveAll(dir)

	sn, err := overlay.New(filepath.Join(dir, "snapshots"))
	if err != nil {
		log.Fatal(err)
	}
	defer sn.Close()

	// Unpack a layer into a committed snapshot named by its chain ID.
	mounts, err := sn.Prepare(ctx, "extract", "")
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mounts[0].Source, "hello"), []byte("hi"), 0o644); err != nil {
		log.Fatal(err)
	}
	if err := sn.Commit(ctx, "layer", "extract"); err != nil {
		log.Fatal(err)
	}

	// Each container gets a writable upper directory over the shared layer.
	for _, c := range []string{"c1", "c2"} {
		m, err := sn.Prepare(ctx, c, "layer")
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(c, m[0].Type, strings.Contains(strings.Join(m[0].Options, ","), "upperdir="))
	}
	// Output:
	// c1 overlay true
	// c2 overlay true
}
