package crilog

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseLine(t *testing.T) {
	ts := time.Date(2016, 10, 6, 0, 17, 9, 669794202, time.UTC)
	for _, tc := range []struct {
		name    string
		line    string
		want    Entry
		wantErr string // substring; "" means success
	}{
		{name: "full stdout", line: "2016-10-06T00:17:09.669794202Z stdout F log content 1\n",
			want: Entry{Time: ts, Stream: Stdout, Content: []byte("log content 1")}},
		{name: "partial stderr", line: "2016-10-06T00:17:09.669794202Z stderr P log content 2\n",
			want: Entry{Time: ts, Stream: Stderr, Partial: true, Content: []byte("log content 2")}},
		{name: "without newline", line: "2016-10-06T00:17:09.669794202Z stdout F x",
			want: Entry{Time: ts, Stream: Stdout, Content: []byte("x")}},
		{name: "empty content", line: "2016-10-06T00:17:09.669794202Z stdout F \n",
			want: Entry{Time: ts, Stream: Stdout, Content: []byte{}}},
		{name: "content keeps spaces and CR", line: "2016-10-06T00:17:09.669794202Z stdout F  a  b\r\n",
			want: Entry{Time: ts, Stream: Stdout, Content: []byte(" a  b\r")}},
		{name: "extra tags ignored", line: "2016-10-06T00:17:09.669794202Z stdout P:future:tags x\n",
			want: Entry{Time: ts, Stream: Stdout, Partial: true, Content: []byte("x")}},
		{name: "time without fraction", line: "2016-10-06T00:17:09Z stdout F x",
			want: Entry{Time: ts.Truncate(time.Second), Stream: Stdout, Content: []byte("x")}},
		{name: "time with offset", line: "2016-10-06T02:17:09.669794202+02:00 stdout F x",
			want: Entry{Time: ts, Stream: Stdout, Content: []byte("x")}},
		{name: "empty", line: "", wantErr: "no space after the timestamp"},
		{name: "only newline", line: "\n", wantErr: "no space after the timestamp"},
		{name: "bad time", line: "yesterday stdout F x", wantErr: "timestamp \"yesterday\""},
		{name: "no stream", line: "2016-10-06T00:17:09Z stdout", wantErr: "no space after the stream"},
		{name: "bad stream", line: "2016-10-06T00:17:09Z stdin F x", wantErr: "stream \"stdin\""},
		{name: "no tag delimiter", line: "2016-10-06T00:17:09Z stdout F", wantErr: "no space after the tag"},
		{name: "bad tag", line: "2016-10-06T00:17:09Z stdout X x", wantErr: "tag \"X\""},
		{name: "empty tag", line: "2016-10-06T00:17:09Z stdout  x", wantErr: "tag \"\""},
		{name: "docker json", line: `{"log":"x\n","stream":"stdout","time":"2016-10-20T18:39:20.57606443Z"}`, wantErr: "timestamp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseLine([]byte(tc.line))
			if tc.wantErr != "" {
				require.ErrorIs(t, err, ErrMalformed)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.True(t, tc.want.Time.Equal(got.Time), "time %s, want %s", got.Time, tc.want.Time)
			assert.Equal(t, tc.want.Stream, got.Stream)
			assert.Equal(t, tc.want.Partial, got.Partial)
			assert.Equal(t, string(tc.want.Content), string(got.Content))
		})
	}
}

func TestEntryAppendRoundTrip(t *testing.T) {
	for _, e := range []Entry{
		{Time: time.Date(2024, 1, 2, 3, 4, 5, 600, time.UTC), Stream: Stdout, Content: []byte("hello world")},
		{Time: time.Date(2024, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)), Stream: Stderr, Partial: true, Content: []byte(" \r ")},
		{Time: time.Date(2024, 1, 2, 3, 4, 5, 1, time.UTC), Stream: Stdout, Content: nil},
	} {
		line := e.Append(nil)
		require.Equal(t, byte('\n'), line[len(line)-1])
		got, err := ParseLine(line)
		require.NoError(t, err)
		assert.True(t, e.Time.Equal(got.Time))
		assert.Equal(t, entryOf(e), entryOf(got))
	}
	line := Entry{Time: time.Date(2016, 10, 6, 0, 17, 9, 669794000, time.UTC), Stream: Stdout, Content: []byte("x")}.Append(nil)
	assert.Equal(t, "2016-10-06T00:17:09.669794Z stdout F x\n", string(line), "RFC3339Nano trims trailing zeros like containerd")
}

func FuzzParseLine(f *testing.F) {
	f.Add([]byte("2016-10-06T00:17:09.669794202Z stdout F log content 1\n"))
	f.Add([]byte("2016-10-06T00:17:09Z stderr P:x \n"))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := ParseLine(line)
		if err != nil {
			require.ErrorIs(t, err, ErrMalformed)
			return
		}
		// A parsed entry formats back to a line that parses the same.
		again, err := ParseLine(e.Append(nil))
		require.NoError(t, err)
		require.True(t, e.Time.Equal(again.Time))
		require.Equal(t, entryOf(e), entryOf(again))
	})
}
