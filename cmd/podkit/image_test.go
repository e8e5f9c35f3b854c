package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/image/registry"
)

// run executes the podkit CLI in process and returns its output.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func TestImageCommandsAgainstLocalRegistry(t *testing.T) {
	reg, err := registry.New(registry.Config{DataDir: t.TempDir(), Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	require.NoError(t, reg.Start())
	t.Cleanup(func() { _ = reg.Close() })

	bin := filepath.Join(t.TempDir(), "hello")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/true\n"), 0o755))
	root := t.TempDir()
	ref := reg.Addr() + "/demo/hello:1"

	out, err := run(t, "image", "--root", root, "build", "--binary", bin, "--tag", ref)
	require.NoError(t, err, out)
	assert.Contains(t, out, "sha256:")
	out, err = run(t, "image", "--root", root, "push", ref, ref)
	require.NoError(t, err, out)

	other := t.TempDir()
	out, err = run(t, "image", "--root", other, "pull", ref)
	require.NoError(t, err, out)
	out, err = run(t, "image", "--root", other, "ls")
	require.NoError(t, err, out)
	assert.Contains(t, out, "demo/hello:1")
	out, err = run(t, "image", "--root", other, "rm", ref)
	require.NoError(t, err, out)
	out, err = run(t, "image", "--root", other, "ls", "-o", "json")
	require.NoError(t, err, out)
	assert.NotContains(t, out, "demo/hello")

	_, err = run(t, "image", "--root", other, "pull", reg.Addr()+"/missing:1")
	require.Error(t, err)
}
