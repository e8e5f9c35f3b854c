package crilog

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// entrySize is the size of "2024-03-01T12:00:0NZ stdout F 0123456789\n":
// the fake clock steps by whole seconds, so every entry has this size.
const entrySize = 41

func TestRotation(t *testing.T) {
	for _, tc := range []struct {
		name     string
		maxSize  int64
		maxFiles int
		step     time.Duration
		lines    int
		// want maps file name suffixes ("" for the current file) to the
		// indexes of the lines they hold, oldest file first.
		want []rotatedWant
	}{
		{name: "two entries per file", maxSize: 2*entrySize + 18, maxFiles: 5, step: time.Second, lines: 7,
			want: []rotatedWant{{".20240301-120002", 0, 2}, {".20240301-120004", 2, 4}, {".20240301-120006", 4, 6}, {"", 6, 7}}},
		{name: "exactly full file is not rotated early", maxSize: 2 * entrySize, maxFiles: 5, step: time.Second, lines: 3,
			want: []rotatedWant{{".20240301-120002", 0, 2}, {"", 2, 3}}},
		{name: "oldest files removed beyond max files", maxSize: 2 * entrySize, maxFiles: 3, step: time.Second, lines: 9,
			want: []rotatedWant{{".20240301-120006", 4, 6}, {".20240301-120008", 6, 8}, {"", 8, 9}}},
		{name: "two files", maxSize: 2 * entrySize, maxFiles: 2, step: time.Second, lines: 9,
			want: []rotatedWant{{".20240301-120008", 6, 8}, {"", 8, 9}}},
		{name: "entry larger than max size goes whole into an empty file", maxSize: 10, maxFiles: 10, step: time.Second, lines: 3,
			want: []rotatedWant{{".20240301-120001", 0, 1}, {".20240301-120002", 1, 2}, {"", 2, 3}}},
		{name: "same second gets sequence numbers", maxSize: entrySize, maxFiles: 20, step: time.Millisecond * 0, lines: 13,
			want: []rotatedWant{{".20240301-120000", 0, 1}, {".20240301-120000.1", 1, 2}, {".20240301-120000.2", 2, 3},
				{".20240301-120000.3", 3, 4}, {".20240301-120000.4", 4, 5}, {".20240301-120000.5", 5, 6},
				{".20240301-120000.6", 6, 7}, {".20240301-120000.7", 7, 8}, {".20240301-120000.8", 8, 9},
				{".20240301-120000.9", 9, 10}, {".20240301-120000.10", 10, 11}, {".20240301-120000.11", 11, 12}, {"", 12, 13}}},
		{name: "zero max size never rotates", maxSize: 0, maxFiles: 2, step: time.Second, lines: 50,
			want: []rotatedWant{{"", 0, 50}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "0.log")
			w, err := NewWriter(path, WithMaxSize(tc.maxSize), WithMaxFiles(tc.maxFiles), WithClock(fakeClock(t0, tc.step)))
			require.NoError(t, err)
			s := w.Stream(Stdout)
			for i := range tc.lines {
				_, err := fmt.Fprintf(s, "line-%04d\n", i)
				require.NoError(t, err)
			}
			require.NoError(t, w.Close())

			rotated, err := RotatedFiles(path)
			require.NoError(t, err)
			files := append(rotated, path)
			require.Len(t, files, len(tc.want), "files %v", files)
			for i, want := range tc.want {
				require.Equal(t, path+want.suffix, files[i])
				var got []string
				for _, e := range readEntries(t, files[i]) {
					got = append(got, string(e.Content))
				}
				var exp []string
				for l := want.from; l < want.to; l++ {
					exp = append(exp, fmt.Sprintf("line-%04d", l))
				}
				assert.Equal(t, exp, got, "file %s", files[i])
				if tc.maxSize > entrySize {
					st, err := os.Stat(files[i])
					require.NoError(t, err)
					assert.LessOrEqual(t, st.Size(), tc.maxSize)
				}
			}
		})
	}
}

type rotatedWant struct {
	suffix   string
	from, to int
}

func TestRotationNamesAreUTC(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	zone := time.FixedZone("UTC+5", 5*3600)
	w, err := NewWriter(path, WithMaxSize(1), WithClock(fakeClock(t0.In(zone), time.Second)))
	require.NoError(t, err)
	_, err = w.Stream(Stdout).Write([]byte("a\nb\n"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	rotated, err := RotatedFiles(path)
	require.NoError(t, err)
	assert.Equal(t, []string{path + ".20240301-120001"}, rotated)
}

func TestRotationOfExistingOversizedFile(t *testing.T) {
	path := writeLog(t, "stdout F old-1", "stdout F old-2", "stdout F old-3")
	w, err := NewWriter(path, WithMaxSize(50), WithClock(fakeClock(t0.Add(time.Hour), time.Second)))
	require.NoError(t, err)
	_, err = w.Stream(Stdout).Write([]byte("new\n"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	assert.Equal(t, []string{"stdout F new"}, describe(readEntries(t, path)))
	rotated, err := RotatedFiles(path)
	require.NoError(t, err)
	require.Equal(t, []string{path + ".20240301-130000"}, rotated)
	assert.Len(t, readEntries(t, rotated[0]), 3)
}

func TestRotatedFilesIgnoresOtherFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	for _, name := range []string{
		"0.log", "0.log.20240301-120000", "0.log.20240101-000000.2", "0.log.20240101-000000",
		"0.log.20240301-120000.gz", "0.log.20240301-120000.tmp", "0.log.20240301-1200", "0.log.x",
		"0.log.20240301-120000.0", "0.log.20240301-120000.01", "1.log.20240301-120000", "10.log.20240301-120000",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o640))
	}
	require.NoError(t, os.Mkdir(filepath.Join(dir, "0.log.20240302-120000"), 0o755))
	got, err := RotatedFiles(path)
	require.NoError(t, err)
	assert.Equal(t, []string{path + ".20240101-000000", path + ".20240101-000000.2", path + ".20240301-120000"}, got)

	_, err = RotatedFiles(filepath.Join(dir, "missing", "0.log"))
	require.ErrorIs(t, err, os.ErrNotExist)
}
