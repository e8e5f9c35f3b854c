package oci_test

import (
	"context"
	"log"

	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/sandbox/native"
	"github.com/podkit/podkit/sandbox/oci"
)

// ExampleNewRunner runs every pod of a node through runc, and the pods of
// the "crun" runtime class through crun. (The program's main must call
// native.Init first.)
func ExampleNewRunner() {
	ctx := context.Background()
	runc, err := oci.Runc()
	if err != nil {
		log.Fatal(err) // e.g. "oci: runc is not installed (...)"
	}
	handlers := map[string]native.Handler{}
	if crun, err := oci.Crun(); err == nil {
		handlers["crun"] = crun
	} else {
		// With errors.Is(err, oci.ErrHybridCgroups), err says how to fix the node.
		log.Printf("no crun runtime class: %v", err)
	}
	r, err := oci.NewRunner(ctx, native.Config{Handlers: handlers}, "runc", runc)
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()

	// RuntimeHandler "" means runc here; "crun" picks crun.
	sb, err := r.RunPodSandbox(ctx, &sandbox.SandboxConfig{
		Pod: sandbox.PodMeta{Name: "web-0", Namespace: "default", UID: "7d1c"},
	})
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("sandbox %s runs its containers with %s", sb.ID, sb.RuntimeHandler)
}
