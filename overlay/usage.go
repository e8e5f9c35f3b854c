package overlay

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"
)

// diskUsage measures the tree at dir: allocated bytes (st_blocks, so sparse
// files count what they use) and inodes, each hard-linked inode once.
func diskUsage(ctx context.Context, dir string) (Usage, error) {
	type inode struct{ dev, ino uint64 }
	seen := map[inode]struct{}{}
	var u Usage
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return fmt.Errorf("stat %s: %w", p, err)
		}
		k := inode{dev: st.Dev, ino: st.Ino}
		if _, ok := seen[k]; ok {
			return nil
		}
		seen[k] = struct{}{}
		u.Inodes++
		u.Size += st.Blocks * 512
		return nil
	})
	if err != nil {
		return Usage{}, err
	}
	return u, nil
}
