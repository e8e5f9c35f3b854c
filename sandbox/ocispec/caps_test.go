package ocispec

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/sandbox"
)

func TestDefaultCapabilities(t *testing.T) {
	caps := DefaultCapabilities()
	assert.Len(t, caps, 14)
	for _, c := range []string{"CAP_CHOWN", "CAP_NET_RAW", "CAP_NET_BIND_SERVICE", "CAP_KILL", "CAP_AUDIT_WRITE", "CAP_MKNOD", "CAP_SETFCAP", "CAP_SYS_CHROOT"} {
		assert.Contains(t, caps, c)
	}
	assert.NotContains(t, caps, "CAP_SYS_ADMIN")
	caps[0] = "changed"
	assert.Equal(t, "CAP_CHOWN", DefaultCapabilities()[0], "callers get their own copy")
}

func TestCapabilities(t *testing.T) {
	all := []string{"CAP_CHOWN", "CAP_KILL", "CAP_SYS_ADMIN"}
	def := DefaultCapabilities()
	without := func(drop ...string) []string {
		return slices.DeleteFunc(DefaultCapabilities(), func(c string) bool { return slices.Contains(drop, c) })
	}
	tests := []struct {
		name    string
		sec     sandbox.SecurityConfig
		want    []string
		wantErr string
	}{
		{name: "default", want: def},
		{name: "add with and without prefix, any case", sec: sandbox.SecurityConfig{CapAdd: []string{"SYS_ADMIN", "cap_net_admin", "Sys_Time"}},
			want: append(DefaultCapabilities(), "CAP_SYS_ADMIN", "CAP_NET_ADMIN", "CAP_SYS_TIME")},
		{name: "add one already there", sec: sandbox.SecurityConfig{CapAdd: []string{"CHOWN"}}, want: def},
		{name: "drop", sec: sandbox.SecurityConfig{CapDrop: []string{"NET_RAW", "CAP_MKNOD"}}, want: without("CAP_NET_RAW", "CAP_MKNOD")},
		{name: "drop one not there", sec: sandbox.SecurityConfig{CapDrop: []string{"SYS_ADMIN"}}, want: def},
		{name: "add and drop the same: dropped", sec: sandbox.SecurityConfig{CapAdd: []string{"SYS_ADMIN"}, CapDrop: []string{"SYS_ADMIN"}}, want: def},
		{name: "drop ALL", sec: sandbox.SecurityConfig{CapDrop: []string{"ALL"}}, want: []string{}},
		{name: "drop ALL then add", sec: sandbox.SecurityConfig{CapDrop: []string{"all"}, CapAdd: []string{"NET_BIND_SERVICE"}},
			want: []string{"CAP_NET_BIND_SERVICE"}},
		{name: "add ALL", sec: sandbox.SecurityConfig{CapAdd: []string{"ALL"}}, want: all},
		{name: "add ALL, drop one", sec: sandbox.SecurityConfig{CapAdd: []string{"ALL"}, CapDrop: []string{"CHOWN"}},
			want: []string{"CAP_KILL", "CAP_SYS_ADMIN"}},
		{name: "add ALL and drop ALL: drop wins", sec: sandbox.SecurityConfig{CapAdd: []string{"ALL"}, CapDrop: []string{"ALL"}}, want: []string{}},
		{name: "privileged gets all", sec: sandbox.SecurityConfig{Privileged: true}, want: all},
		{name: "privileged ignores drop", sec: sandbox.SecurityConfig{Privileged: true, CapDrop: []string{"ALL"}}, want: all},
		{name: "unknown add", sec: sandbox.SecurityConfig{CapAdd: []string{"NET_FLY"}}, wantErr: "NET_FLY"},
		{name: "unknown drop", sec: sandbox.SecurityConfig{CapDrop: []string{"CAP_NOPE"}}, wantErr: "CAP_NOPE"},
		{name: "unknown even when privileged", sec: sandbox.SecurityConfig{Privileged: true, CapAdd: []string{"WHAT"}}, wantErr: "WHAT"},
		{name: "empty name", sec: sandbox.SecurityConfig{CapAdd: []string{""}}, wantErr: "unknown capability"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Capabilities(tt.sec, all)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, sandbox.ErrInvalid)
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestCapabilitiesDoesNotAliasAll(t *testing.T) {
	all := []string{"CAP_CHOWN", "CAP_KILL"}
	got, err := Capabilities(sandbox.SecurityConfig{CapAdd: []string{"ALL"}, CapDrop: []string{"CHOWN"}}, all)
	require.NoError(t, err)
	assert.Equal(t, []string{"CAP_KILL"}, got)
	assert.Equal(t, []string{"CAP_CHOWN", "CAP_KILL"}, all)
}

func TestCapsFromMask(t *testing.T) {
	assert.Equal(t, []string{"CAP_CHOWN", "CAP_KILL"}, capsFromMask(1<<0|1<<5))
	// This machine's mask lacks CAP_SYS_RESOURCE (bit 24); bits past the
	// known names are ignored.
	got := capsFromMask(0x000001fffeffffff | 1<<50)
	assert.Len(t, got, len(KnownCapabilities())-1)
	assert.NotContains(t, got, "CAP_SYS_RESOURCE")
	assert.Contains(t, got, "CAP_CHECKPOINT_RESTORE")
	assert.Equal(t, "CAP_SYS_RESOURCE", KnownCapabilities()[24])
}

func TestCurrentCapabilities(t *testing.T) {
	caps, err := CurrentCapabilities()
	require.NoError(t, err)
	for _, c := range caps {
		assert.Contains(t, KnownCapabilities(), c)
	}
	if isRoot() {
		assert.Contains(t, caps, "CAP_SYS_ADMIN")
	}
}
