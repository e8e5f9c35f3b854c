package overlay

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

const (
	whiteoutPrefix = ".wh."
	// whiteoutMeta prefixes AUFS bookkeeping entries (".wh..wh.plnk", ...),
	// which carry no meaning for overlayfs.
	whiteoutMeta   = ".wh..wh."
	whiteoutOpaque = ".wh..wh..opq"
	opaqueXattr    = "trusted.overlay.opaque"
)

// ApplyOption configures Apply and ApplyLayer.
type ApplyOption func(*applyOptions)

type applyOptions struct {
	log *slog.Logger
}

// WithApplyLogger sets the logger for entries that are skipped (device
// nodes the kernel refuses, xattrs the filesystem does not support).
func WithApplyLogger(l *slog.Logger) ApplyOption {
	return func(o *applyOptions) { o.log = l }
}

// ApplyLayer applies the uncompressed layer tar r to the writable snapshot
// whose mounts Prepare returned, without mounting it: entries go straight
// into the upper directory, whiteouts become overlayfs whiteouts. It
// returns the bytes of file content written.
func ApplyLayer(ctx context.Context, mounts []Mount, r io.Reader, opts ...ApplyOption) (int64, error) {
	upper, lowers, err := layerDirs(mounts)
	if err != nil {
		return 0, err
	}
	return Apply(ctx, upper, lowers, r, opts...)
}

// layerDirs finds the upper directory and lower directories (top first) of
// a writable snapshot's mounts.
func layerDirs(mounts []Mount) (string, []string, error) {
	if len(mounts) != 1 {
		return "", nil, fmt.Errorf("applying a layer needs exactly one mount, got %d: %w", len(mounts), ErrInvalidArgument)
	}
	m := mounts[0]
	switch m.Type {
	case "bind":
		for _, o := range m.Options {
			if o == "ro" {
				return "", nil, fmt.Errorf("applying a layer to a read-only mount: %w", ErrInvalidArgument)
			}
		}
		return m.Source, nil, nil
	case "overlay":
		var upper string
		var lowers []string
		for _, o := range m.Options {
			if v, ok := strings.CutPrefix(o, "upperdir="); ok {
				upper = v
			}
			if v, ok := strings.CutPrefix(o, "lowerdir="); ok {
				lowers = strings.Split(v, ":")
			}
		}
		if upper == "" {
			return "", nil, fmt.Errorf("applying a layer to an overlay without upperdir: %w", ErrInvalidArgument)
		}
		return upper, lowers, nil
	}
	return "", nil, fmt.Errorf("applying a layer to a %q mount: %w", m.Type, ErrInvalidArgument)
}

// Apply applies the uncompressed layer tar r into the directory upper,
// which sits over the read-only layers lowers (top first; none for a base
// layer). Lower layers are only read: for the metadata of parent
// directories the layer does not list, for hard links to files they hold,
// and to decide whether a whiteout hides anything.
//
// An entry whose path is absolute, climbs out with "..", or passes through
// a symbolic link fails the whole apply with ErrUnsafePath; nothing is ever
// written outside upper.
func Apply(ctx context.Context, upper string, lowers []string, r io.Reader, opts ...ApplyOption) (int64, error) {
	o := applyOptions{log: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	rootFD, err := unix.Open(upper, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("opening layer directory %s: %w", upper, err)
	}
	defer unix.Close(rootFD)
	a := &applier{
		ctx:        ctx,
		root:       rootFD,
		rootPath:   upper,
		lowers:     lowers,
		log:        o.log,
		privileged: os.Geteuid() == 0,
		buf:        make([]byte, 128<<10),
	}
	tr := tar.NewReader(&ctxReader{ctx: ctx, r: r})
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return a.written, fmt.Errorf("reading layer: %w", err)
		}
		if err := ctx.Err(); err != nil {
			return a.written, err
		}
		if err := a.entry(hdr, tr); err != nil {
			return a.written, fmt.Errorf("layer entry %q: %w", hdr.Name, err)
		}
	}
	if err := a.finishDirs(); err != nil {
		return a.written, err
	}
	return a.written, nil
}

// applier holds the state of one Apply.
type applier struct {
	ctx        context.Context
	root       int // O_PATH descriptor of the upper directory
	rootPath   string
	lowers     []string
	log        *slog.Logger
	privileged bool
	buf        []byte
	written    int64
	dirTimes   []dirTime
}

type dirTime struct {
	rel string
	ts  []unix.Timespec
}

// cleanName validates an archive path and returns it relative to the layer
// root ("" for the root itself).
func cleanName(name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("empty path: %w", ErrUnsafePath)
	}
	if strings.HasPrefix(name, "/") {
		return "", fmt.Errorf("absolute path: %w", ErrUnsafePath)
	}
	if strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("path contains NUL: %w", ErrUnsafePath)
	}
	c := path.Clean(name)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("path escapes the layer root: %w", ErrUnsafePath)
	}
	if c == "." {
		return "", nil
	}
	return c, nil
}

func splitRel(rel string) (dir, base string) {
	dir, base = path.Split(rel)
	return strings.TrimSuffix(dir, "/"), base
}

// entry applies one archive entry.
func (a *applier) entry(hdr *tar.Header, r io.Reader) error {
	rel, err := cleanName(hdr.Name)
	if err != nil {
		return err
	}
	if rel == "" {
		if hdr.Typeflag != tar.TypeDir {
			return fmt.Errorf("the layer root must be a directory: %w", ErrUnsafePath)
		}
		return a.rootMeta(hdr)
	}
	dir, base := splitRel(rel)
	if strings.HasPrefix(base, whiteoutPrefix) {
		return a.whiteout(dir, base)
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		return a.mkdir(hdr, rel)
	case tar.TypeReg, tar.TypeRegA: //nolint:staticcheck // TypeRegA appears in old layers
		return a.file(hdr, rel, r)
	case tar.TypeSymlink:
		return a.symlink(hdr, rel)
	case tar.TypeLink:
		return a.hardlink(hdr, rel)
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		return a.node(hdr, rel)
	case tar.TypeXGlobalHeader:
		return nil
	}
	a.log.DebugContext(a.ctx, "skipping layer entry of unsupported type", "path", rel, "type", hdr.Typeflag)
	return nil
}

// ctxReader stops reading once ctx is done, so a large entry does not hold
// up cancellation.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
