package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMilestones(t *testing.T) {
	start := time.Date(2026, 11, 21, 11, 1, 40, 500_000_000, time.UTC)
	log := `time=2026-11-21T11:01:40.900Z level=INFO msg="created the kubernetes service" clusterIP=10.96.0.1
time=2026-11-21T11:01:41.000Z level=DEBUG msg="demo image seeded" image=demo/web:1 digest=sha256:ab
time=2026-11-21T11:01:41.050Z level=DEBUG msg="reconciled the RBAC bootstrap policy"
time=2026-11-21T11:01:41.060Z level=INFO msg="registered node" node=n-1
time=2026-11-21T11:01:41.070Z level=INFO msg="registered node" node=n-1
time=2026-11-21T11:01:41.080Z level=INFO msg=unrelated
not a log line
`
	path := filepath.Join(t.TempDir(), "up.log")
	require.NoError(t, os.WriteFile(path, []byte(log), 0o600))
	got := milestones(path, start, 700*time.Millisecond)
	assert.Equal(t, []milestone{
		{400 * time.Millisecond, "API server bootstrapped (fresh)"},
		{500 * time.Millisecond, "demo image pushed image=demo/web:1"},
		{550 * time.Millisecond, "RBAC bootstrap policy reconciled"},
		{560 * time.Millisecond, "node registered"},
		{700 * time.Millisecond, "Ready: banner printed, API answering"},
	}, got)
}
