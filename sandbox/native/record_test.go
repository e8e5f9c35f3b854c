package native_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/internal/testutil"
	"github.com/podkit/podkit/sandbox"
	"github.com/podkit/podkit/sandbox/sandboxtest"
)

// The container record is written once the task exists, not after each
// step of CreateContainer: the cgroup path must still reach it, so that a
// runtime reopened from disk (a restarted kubelet) removes the container's
// cgroup with the container, not only with its pod.
func TestRecordKeepsTheContainerCgroupAcrossRestart(t *testing.T) {
	n := newNode(t)
	ctx := t.Context()
	parent := n.podCgroup(t)
	r := n.runtime(t)
	defer func() { r.Close() }()
	cfg := podConfig("rec")
	cfg.LogDirectory, cfg.CgroupParent = t.TempDir(), parent
	sb, err := r.RunPodSandbox(ctx, cfg)
	require.NoError(t, err)
	defer r.RemovePodSandbox(context.Background(), sb.ID)
	mounts, _ := testutil.TestboxMounts(t)
	id, err := r.CreateContainer(ctx, sb.ID, &sandbox.ContainerConfig{
		Name: "c", Image: "podkit.test/testbox:latest", Command: []string{sandboxtest.Testbox}, Args: []string{"sleep", "inf"},
		LogPath: "c/0.log", Rootfs: mounts,
	})
	require.NoError(t, err)
	var containerDirs []string
	for _, d := range n.tree.Dirs(parent) {
		ents, err := os.ReadDir(d)
		require.NoError(t, err)
		for _, e := range ents {
			if e.IsDir() && strings.Contains(e.Name(), id) {
				containerDirs = append(containerDirs, d+"/"+e.Name())
			}
		}
	}
	require.NotEmpty(t, containerDirs, "the container has cgroups under its pod's")

	r.Close()
	r = n.runtime(t)
	require.NoError(t, r.RemoveContainer(ctx, id))
	for _, d := range containerDirs {
		assert.NoDirExists(t, d, "the reopened runtime removed the container cgroup it read from the record")
	}
	for _, d := range n.tree.Dirs(parent) {
		assert.DirExists(t, d, "the pod cgroup stays")
	}
	require.NoError(t, r.RemovePodSandbox(ctx, sb.ID))
}
