package nsinit

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// mountOpts is a spec mount's options split the way mount(2) wants them.
type mountOpts struct {
	flags uintptr   // MS_* flags for the mount (and the bind remount)
	prop  []uintptr // propagation changes, applied one by one afterwards
	data  string    // filesystem data (comma-separated)
	// recursiveRO ("rro") makes a bind mount and all mounts below it
	// read-only (mount_setattr with AT_RECURSIVE, Linux 5.12).
	recursiveRO bool
}

func (o mountOpts) bind() bool { return o.flags&unix.MS_BIND != 0 }

// remountFlags are the flags a bind mount needs a second, MS_REMOUNT call
// for (a bind mount ignores everything but MS_BIND and MS_REC).
func (o mountOpts) remountFlags() uintptr {
	return o.flags &^ (unix.MS_BIND | unix.MS_REC | unix.MS_REMOUNT)
}

var mountFlagOpts = map[string]struct {
	clear bool
	flag  uintptr
}{
	"defaults":      {false, 0},
	"ro":            {false, unix.MS_RDONLY},
	"rw":            {true, unix.MS_RDONLY},
	"nosuid":        {false, unix.MS_NOSUID},
	"suid":          {true, unix.MS_NOSUID},
	"nodev":         {false, unix.MS_NODEV},
	"dev":           {true, unix.MS_NODEV},
	"noexec":        {false, unix.MS_NOEXEC},
	"exec":          {true, unix.MS_NOEXEC},
	"sync":          {false, unix.MS_SYNCHRONOUS},
	"async":         {true, unix.MS_SYNCHRONOUS},
	"dirsync":       {false, unix.MS_DIRSYNC},
	"mand":          {false, unix.MS_MANDLOCK},
	"nomand":        {true, unix.MS_MANDLOCK},
	"atime":         {true, unix.MS_NOATIME},
	"noatime":       {false, unix.MS_NOATIME},
	"diratime":      {true, unix.MS_NODIRATIME},
	"nodiratime":    {false, unix.MS_NODIRATIME},
	"relatime":      {false, unix.MS_RELATIME},
	"norelatime":    {true, unix.MS_RELATIME},
	"strictatime":   {false, unix.MS_STRICTATIME},
	"nostrictatime": {true, unix.MS_STRICTATIME},
	"lazytime":      {false, unix.MS_LAZYTIME},
	"nolazytime":    {true, unix.MS_LAZYTIME},
	"silent":        {false, unix.MS_SILENT},
	"loud":          {true, unix.MS_SILENT},
	"bind":          {false, unix.MS_BIND},
	"rbind":         {false, unix.MS_BIND | unix.MS_REC},
	"remount":       {false, unix.MS_REMOUNT},
}

var propagationOpts = map[string]uintptr{
	"private":     unix.MS_PRIVATE,
	"rprivate":    unix.MS_PRIVATE | unix.MS_REC,
	"shared":      unix.MS_SHARED,
	"rshared":     unix.MS_SHARED | unix.MS_REC,
	"slave":       unix.MS_SLAVE,
	"rslave":      unix.MS_SLAVE | unix.MS_REC,
	"unbindable":  unix.MS_UNBINDABLE,
	"runbindable": unix.MS_UNBINDABLE | unix.MS_REC,
}

// parseMountOptions splits spec mount options into flags, propagation and
// data. A mount of type "bind" is a bind mount even without the option.
// Options that are neither flags nor propagation are filesystem data.
func parseMountOptions(typ string, options []string) mountOpts {
	var o mountOpts
	var data []string
	for _, opt := range options {
		if f, ok := mountFlagOpts[opt]; ok {
			if f.clear {
				o.flags &^= f.flag
			} else {
				o.flags |= f.flag
			}
			continue
		}
		if opt == "rro" {
			o.recursiveRO = true
			continue
		}
		if p, ok := propagationOpts[opt]; ok {
			o.prop = append(o.prop, p)
			continue
		}
		data = append(data, opt)
	}
	if typ == "bind" {
		o.flags |= unix.MS_BIND
	}
	o.data = strings.Join(data, ",")
	return o
}

// rootPropagation parses spec.Linux.RootfsPropagation; the default is
// rslave, so host mounts keep propagating in and nothing leaks out.
func rootPropagation(s string) (uintptr, error) {
	if s == "" {
		return unix.MS_SLAVE | unix.MS_REC, nil
	}
	p, ok := propagationOpts[s]
	if !ok {
		return 0, fmt.Errorf("%w: rootfsPropagation %q", ErrInvalidSpec, s)
	}
	return p, nil
}

// statfsMountFlags converts statfs f_flags (ST_*) into the MS_* flags a
// remount must repeat to keep them.
func statfsMountFlags(stflags int64) uintptr {
	pairs := []struct {
		st int64
		ms uintptr
	}{
		{unix.ST_RDONLY, unix.MS_RDONLY},
		{unix.ST_NOSUID, unix.MS_NOSUID},
		{unix.ST_NODEV, unix.MS_NODEV},
		{unix.ST_NOEXEC, unix.MS_NOEXEC},
		{unix.ST_SYNCHRONOUS, unix.MS_SYNCHRONOUS},
		{unix.ST_MANDLOCK, unix.MS_MANDLOCK},
		{unix.ST_NOATIME, unix.MS_NOATIME},
		{unix.ST_NODIRATIME, unix.MS_NODIRATIME},
		{unix.ST_RELATIME, unix.MS_RELATIME},
	}
	var f uintptr
	for _, p := range pairs {
		if stflags&p.st != 0 {
			f |= p.ms
		}
	}
	return f
}
