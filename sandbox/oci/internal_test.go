package oci

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckHybrid(t *testing.T) {
	tests := map[string]struct {
		v2          map[string]bool // which dirs are cgroup2 roots; absent: no such dir
		controllers string
		wantErr     bool
	}{
		"pure v2":               {v2: map[string]bool{"": true}},
		"pure v1":               {v2: map[string]bool{"": false}},
		"v1 with a plain dir":   {v2: map[string]bool{"": false, "unified": false}},
		"hybrid, no controller": {v2: map[string]bool{"": false, "unified": true}, controllers: "\n"},
		"hybrid with hugetlb":   {v2: map[string]bool{"": false, "unified": true}, controllers: "hugetlb\n", wantErr: true},
		"no cgroups at all":     {v2: map[string]bool{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			require.NoError(t, os.Mkdir(filepath.Join(root, "unified"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(root, "unified", "cgroup.controllers"), []byte(tc.controllers), 0o644))
			fake := func(dir string) (bool, error) {
				rel, _ := filepath.Rel(root, dir)
				if rel == "." {
					rel = ""
				}
				v2, ok := tc.v2[rel]
				if !ok {
					return false, &os.PathError{Op: "statfs", Path: dir, Err: os.ErrNotExist}
				}
				return v2, nil
			}
			err := checkHybrid(root, fake)
			if !tc.wantErr {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrHybridCgroups)
			hugetlb := filepath.Join(root, "hugetlb")
			assert.Contains(t, err.Error(), "mkdir "+hugetlb+" && mount -t cgroup -o hugetlb cgroup "+hugetlb)
			assert.Contains(t, err.Error(), "[hugetlb]")
		})
	}
}

func TestCheckHybridStatfsError(t *testing.T) {
	boom := errors.New("boom")
	err := checkHybrid("/x", func(string) (bool, error) { return false, boom })
	require.ErrorIs(t, err, boom)
}

func TestLogErrors(t *testing.T) {
	log := filepath.Join(t.TempDir(), "log.json")
	require.NoError(t, os.WriteFile(log, []byte(`{"level":"info","msg":"hello"}
not json at all
{"level":"warning","msg":"careful"}
{"level":"error","msg":"runc create failed: unable to start container process: exec: \"nope\": executable file not found in $PATH","time":"2026-01-01T00:00:00Z"}
{"msg":"second","level":"error","time":"2026-01-01T00:00:00.1Z"}
{"level":"error","msg":"second"}

{"level":"fatal","msg":"  third  "}
`), 0o644))
	assert.Equal(t, []string{
		`runc create failed: unable to start container process: exec: "nope": executable file not found in $PATH`,
		"second", "third",
	}, logErrors(log))
	assert.Empty(t, logErrors(filepath.Join(t.TempDir(), "missing")))
}

func TestIsNotExist(t *testing.T) {
	for msg, want := range map[string]bool{
		"container does not exist": true,
		"error opening file `/run/crun/abc/status`: No such file or directory": true,
		"open /etc/x: No such file or directory":                               false,
		"cannot start a container that has stopped":                            false,
		"": false,
	} {
		assert.Equal(t, want, isNotExist(msg), msg)
	}
}

func TestTail(t *testing.T) {
	tl := &tail{max: 5}
	for _, s := range []string{"ab", "cdef", "g"} {
		n, err := tl.Write([]byte(s))
		require.NoError(t, err)
		assert.Equal(t, len(s), n)
	}
	assert.Equal(t, "cdefg", string(tl.Bytes()))
}

func TestFlavorOf(t *testing.T) {
	for v, want := range map[string]Flavor{
		"runc version 1.1.5+ds1": FlavorRunc,
		"crun version 1.8.1":     FlavorCrun,
		"youki version 0.3.0":    FlavorOther,
		"":                       FlavorOther,
	} {
		assert.Equal(t, want, flavorOf(v), v)
	}
	assert.Equal(t, "crun version 1.8.1", firstLine("\ncrun version 1.8.1\ncommit: f8a0\n"))
}
