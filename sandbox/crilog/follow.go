package crilog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
)

// reader is one ReadLogs call: the open file, where it is in it, and the
// renderer that writes what it finds.
type reader struct {
	path string
	f    *os.File
	lr   *lineReader
	out  *renderer
	opts *ReadOptions
}

// drain writes every complete line available in the current file.
func (rd *reader) drain() error {
	for {
		line, off, err := rd.lr.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := rd.out.line(rd.f.Name(), line, off); err != nil {
			return err
		}
	}
}

// follow drains the file, then polls for more, following rotations and
// truncations, until ctx is done or Done is closed.
func (rd *reader) follow(ctx context.Context) error {
	tick := time.NewTicker(rd.opts.PollInterval)
	defer tick.Stop()
	finishing := false
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := rd.drain(); err != nil {
			return err
		}
		moved, err := rd.checkFile()
		if err != nil {
			return err
		}
		if moved {
			continue
		}
		if finishing {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-rd.opts.Done:
			// Everything has been written: one more pass picks up the
			// rest, including a rotation we have not seen yet.
			finishing = true
		case <-tick.C:
		}
	}
}

// checkFile looks for a rotation (path names another file) or a
// truncation (the file shrank below what was read). It reports whether it
// moved to a new file or offset, so that the caller drains again.
func (rd *reader) checkFile() (bool, error) {
	cur, err := rd.f.Stat()
	if err != nil {
		return false, fmt.Errorf("crilog: stat log file %s: %w", rd.f.Name(), err)
	}
	st, err := os.Stat(rd.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Between the rename and the new file, or the log was removed:
		// wait for the writer or for Done.
		return false, nil
	case err != nil:
		return false, fmt.Errorf("crilog: stat log file %s: %w", rd.path, err)
	case os.SameFile(st, cur):
		if cur.Size() < rd.lr.end() {
			rd.opts.Logger.Info("container log truncated, reading from its start", "path", rd.path)
			rd.lr.reset(rd.f, 0)
			rd.out.newFile()
			rd.out.st = [2]lineState{}
			return true, nil
		}
		return false, nil
	}
	return rd.rotated(cur)
}

// rotated moves to the new file at path after the current one (cur) was
// rotated away. The writer renames a file only once it has finished
// writing it, so the old file is complete: it is drained first, then any
// file rotated after it while we were not looking, then the new one is
// followed from its start. A line split across the rotation stays joined.
func (rd *reader) rotated(cur os.FileInfo) (bool, error) {
	next, err := os.Open(rd.path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("crilog: open log file %s: %w", rd.path, err)
	}
	nextSt, err := next.Stat()
	if err != nil {
		next.Close()
		return false, fmt.Errorf("crilog: stat log file %s: %w", rd.path, err)
	}
	if os.SameFile(nextSt, cur) {
		// Renamed back (a rotation that failed half-way): same file.
		next.Close()
		return false, nil
	}
	if err := rd.drain(); err != nil {
		next.Close()
		return false, err
	}
	rd.dropRest()
	rd.out.newFile()
	for _, name := range rd.between(cur, nextSt) {
		if err := rd.readWhole(name); err != nil {
			next.Close()
			return false, err
		}
	}
	rd.f.Close()
	rd.f = next
	rd.lr.reset(next, 0)
	return true, nil
}

// between returns the rotated files newer than old and older than next,
// oldest first: rotations that happened within one poll interval. When
// old is no longer among the rotated files (removed already) nothing
// can be placed and nothing is returned.
func (rd *reader) between(old, next os.FileInfo) []string {
	names, err := RotatedFiles(rd.path)
	if err != nil {
		rd.opts.Logger.Warn("cannot list rotated container logs", "path", rd.path, "err", err)
		return nil
	}
	var out []string
	found := false
	for _, name := range names {
		st, err := os.Stat(name)
		if err != nil {
			continue
		}
		switch {
		case os.SameFile(st, old):
			found = true
		case os.SameFile(st, next):
			return out
		case found:
			out = append(out, name)
		}
	}
	return out
}

// readWhole writes a complete rotated file. One removed meanwhile is
// skipped.
func (rd *reader) readWhole(name string) error {
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		rd.opts.Logger.Warn("rotated container log removed before it was read", "path", name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("crilog: open rotated log file %s: %w", name, err)
	}
	defer f.Close()
	prev, prevLR := rd.f, rd.lr
	rd.f, rd.lr = f, newLineReader(f, 0)
	defer func() { rd.f, rd.lr = prev, prevLR }()
	if err := rd.drain(); err != nil {
		return err
	}
	rd.dropRest()
	return nil
}

// dropRest reports an incomplete last line of a finished file.
func (rd *reader) dropRest() {
	if rest := rd.lr.rest(); len(rest) > 0 {
		rd.opts.Logger.Warn("skipping incomplete last line of rotated container log", "path", rd.f.Name(), "bytes", len(rest))
	}
}
