package crilog

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// rotatedTimeFormat is the suffix of a rotated file, as the kubelet's
// container log manager names them (timestampFormat "20060102-150405").
// podkit formats it in UTC; a second rotation within the same second gets
// ".1", ".2", … appended.
const rotatedTimeFormat = "20060102-150405"

// rotate renames the current file to its rotated name, opens a fresh one
// and removes the oldest rotated files beyond MaxFiles-1. Failures are
// logged and leave the Writer on a usable file; a failed rotation is
// retried once the file has grown by another MaxSize. now is the time of
// the entry that does not fit. Callers hold w.mu.
func (w *Writer) rotate(now time.Time) {
	if err := w.rotateFile(now); err != nil {
		w.retryRotateAt = w.size + w.opts.maxSize
		w.record(err)
		w.opts.logger.Error("cannot rotate container log", "path", w.path, "err", err)
		return
	}
	w.retryRotateAt = 0
}

func (w *Writer) rotateFile(now time.Time) error {
	name, err := w.rotatedName(now)
	if err != nil {
		return err
	}
	if err := os.Rename(w.path, name); err != nil {
		return fmt.Errorf("crilog: rotate %s to %s: %w", w.path, name, err)
	}
	old := w.f
	if err := w.open(); err != nil {
		// Put the file back so that path keeps naming the live log.
		if rerr := os.Rename(name, w.path); rerr != nil {
			w.opts.logger.Error("cannot restore rotated container log", "path", w.path, "rotated", name, "err", rerr)
		}
		w.f = old
		return err
	}
	if err := old.Close(); err != nil {
		w.opts.logger.Warn("closing rotated container log", "path", name, "err", err)
	}
	if err := w.prune(); err != nil {
		// The new file is in place: only the clean-up failed.
		w.record(err)
		w.opts.logger.Error("cannot remove old container logs", "path", w.path, "err", err)
	}
	return nil
}

// rotatedName returns a free name for the current file rotated at now.
func (w *Writer) rotatedName(now time.Time) (string, error) {
	base := w.path + "." + now.UTC().Format(rotatedTimeFormat)
	for n := 0; n < 1_000_000; n++ {
		name := base
		if n > 0 {
			name = base + "." + strconv.Itoa(n)
		}
		_, err := os.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) {
			return name, nil
		}
		if err != nil {
			return "", fmt.Errorf("crilog: check rotated name %s: %w", name, err)
		}
	}
	return "", fmt.Errorf("crilog: no free rotated name for %s", base)
}

// prune removes the oldest rotated files so that MaxFiles-1 remain.
func (w *Writer) prune() error {
	rotated, err := RotatedFiles(w.path)
	if err != nil {
		return err
	}
	keep := w.opts.maxFiles - 1
	var errs []error
	for len(rotated) > keep {
		if err := os.Remove(rotated[0]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("crilog: remove old log %s: %w", rotated[0], err))
		}
		rotated = rotated[1:]
	}
	return errors.Join(errs...)
}

// RotatedFiles returns the rotated files of the log at path
// (path.YYYYMMDD-HHMMSS[.n]), oldest first. Other files in the directory,
// such as compressed (.gz) ones, are not listed.
func RotatedFiles(path string) ([]string, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("crilog: list rotated files of %s: %w", path, err)
	}
	type rotated struct {
		name string
		t    time.Time
		n    int
	}
	var found []rotated
	for _, e := range ents {
		suffix, ok := strings.CutPrefix(e.Name(), base+".")
		if !ok || e.IsDir() {
			continue
		}
		t, n, ok := parseRotatedSuffix(suffix)
		if !ok {
			continue
		}
		found = append(found, rotated{name: filepath.Join(dir, e.Name()), t: t, n: n})
	}
	slices.SortFunc(found, func(a, b rotated) int {
		if c := a.t.Compare(b.t); c != 0 {
			return c
		}
		return cmp.Compare(a.n, b.n)
	})
	names := make([]string, len(found))
	for i, r := range found {
		names[i] = r.name
	}
	return names, nil
}

// parseRotatedSuffix parses "YYYYMMDD-HHMMSS" or "YYYYMMDD-HHMMSS.n".
func parseRotatedSuffix(s string) (time.Time, int, bool) {
	stamp, seq, hasSeq := strings.Cut(s, ".")
	if len(stamp) != len(rotatedTimeFormat) {
		return time.Time{}, 0, false
	}
	t, err := time.Parse(rotatedTimeFormat, stamp)
	if err != nil {
		return time.Time{}, 0, false
	}
	n := 0
	if hasSeq {
		n, err = strconv.Atoi(seq)
		if err != nil || n <= 0 || strconv.Itoa(n) != seq {
			return time.Time{}, 0, false
		}
	}
	return t, n, true
}
