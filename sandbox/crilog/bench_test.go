package crilog

import (
	"bytes"
	"context"
	"io"
	"testing"
)

// BenchmarkWriter measures the throughput of one stream: output arrives in
// 32 KiB reads from the container's pipe, as the supervisor copies it.
// Rotation (10 MiB, 5 files) is included.
func BenchmarkWriter(b *testing.B) {
	for _, bc := range []struct {
		name string
		line int
	}{
		{"lines-80B", 80},
		{"lines-1KiB", 1 << 10},
		{"lines-64KiB-split", 64 << 10},
	} {
		b.Run(bc.name, func(b *testing.B) {
			line := append(bytes.Repeat([]byte("x"), bc.line-1), '\n')
			chunk := bytes.Repeat(line, max(1, (32<<10)/len(line)))
			w, err := NewWriter(b.TempDir() + "/0.log")
			if err != nil {
				b.Fatal(err)
			}
			s := w.Stream(Stdout)
			b.SetBytes(int64(len(chunk)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.Write(chunk); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkReadLogs measures a full read of a 4 MiB log of 80-byte lines.
func BenchmarkReadLogs(b *testing.B) {
	path := b.TempDir() + "/0.log"
	w, err := NewWriter(path, WithMaxSize(0))
	if err != nil {
		b.Fatal(err)
	}
	chunk := bytes.Repeat(append(bytes.Repeat([]byte("x"), 79), '\n'), 4096)
	s := w.Stream(Stdout)
	for range 12 {
		if _, err := s.Write(chunk); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(chunk) * 12))
	b.ReportAllocs()
	for b.Loop() {
		if err := ReadLogs(context.Background(), path, ReadOptions{TailLines: -1}, io.Discard, io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
