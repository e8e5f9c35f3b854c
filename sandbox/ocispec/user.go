package ocispec

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/podkit/podkit/sandbox"
)

// maxID is the largest uid or gid accepted: runc (and so containerd)
// requires ids to fit in an int32.
const maxID = math.MaxInt32

// ResolveUser computes a container process's user the way containerd's
// CRI plugin does.
//
// The user is sec.RunAsUser when set (the image's group is then ignored),
// else the image's User ("uid", "uid:gid", "name", "name:group", or any
// mix), else root. sec.RunAsGroup, when set, replaces the group. A numeric
// uid takes its primary gid from the rootfs's /etc/passwd (0 when the uid
// is not listed or there is no passwd file); a user or group name must be
// listed in /etc/passwd or /etc/group. The additional groups are, sorted
// and without duplicates: the primary gid, every group of /etc/group
// whose member list names the user (apart from a group named after the
// user, which is its own primary group), and sec.SupplementalGroups.
//
// The files are read from inside rootfs without ever leaving it (see
// the package doc). Bad input (unknown names, ids out of range) is an
// error wrapping sandbox.ErrInvalid.
func ResolveUser(rootfs string, imageUser string, sec sandbox.SecurityConfig) (specs.User, error) {
	userPart, groupPart, _ := strings.Cut(imageUser, ":")
	if sec.RunAsUser != nil {
		if err := checkID("runAsUser", *sec.RunAsUser); err != nil {
			return specs.User{}, err
		}
		userPart, groupPart = strconv.FormatInt(*sec.RunAsUser, 10), ""
	}
	if sec.RunAsGroup != nil {
		if err := checkID("runAsGroup", *sec.RunAsGroup); err != nil {
			return specs.User{}, err
		}
		groupPart = strconv.FormatInt(*sec.RunAsGroup, 10)
	}
	if userPart == "" {
		userPart = "0"
	}
	db := &userDB{root: rootfs}

	var u specs.User
	var name string
	if n, numeric, err := parseID("user", userPart); err != nil {
		return specs.User{}, err
	} else if numeric {
		u.UID = n
		pw, found, err := db.userBy(func(p passwdEntry) bool { return p.uid == n })
		if err != nil {
			return specs.User{}, err
		}
		if found {
			u.GID, name = pw.gid, pw.name
		}
	} else {
		pw, found, err := db.userBy(func(p passwdEntry) bool { return p.name == userPart })
		if err != nil {
			return specs.User{}, err
		}
		if !found {
			return specs.User{}, fmt.Errorf("user %q: no matching entry in %s/etc/passwd: %w", userPart, rootfs, sandbox.ErrInvalid)
		}
		u.UID, u.GID, name = pw.uid, pw.gid, pw.name
	}

	if groupPart != "" {
		if n, numeric, err := parseID("group", groupPart); err != nil {
			return specs.User{}, err
		} else if numeric {
			u.GID = n
		} else {
			gr, found, err := db.groupBy(func(g groupEntry) bool { return g.name == groupPart })
			if err != nil {
				return specs.User{}, err
			}
			if !found {
				return specs.User{}, fmt.Errorf("group %q: no matching entry in %s/etc/group: %w", groupPart, rootfs, sandbox.ErrInvalid)
			}
			u.GID = gr.gid
		}
	}

	gids := []uint32{u.GID}
	if name != "" {
		groups, err := db.groups()
		if err != nil {
			return specs.User{}, err
		}
		for _, g := range groups {
			if g.name != name && slices.Contains(g.members, name) {
				gids = append(gids, g.gid)
			}
		}
	}
	for _, g := range sec.SupplementalGroups {
		if err := checkID("supplementalGroups", g); err != nil {
			return specs.User{}, err
		}
		gids = append(gids, uint32(g))
	}
	slices.Sort(gids)
	u.AdditionalGids = slices.Compact(gids)
	return u, nil
}

// checkID rejects ids outside 0..maxID.
func checkID(field string, id int64) error {
	if id < 0 || id > maxID {
		return fmt.Errorf("%s %d out of range 0-%d: %w", field, id, maxID, sandbox.ErrInvalid)
	}
	return nil
}

// parseID parses s as a numeric id; numeric is false for a name.
func parseID(kind, s string) (id uint32, numeric bool, err error) {
	n, perr := strconv.ParseInt(s, 10, 64)
	if perr != nil {
		if errors.Is(perr, strconv.ErrRange) {
			return 0, false, fmt.Errorf("%s %q out of range: %w", kind, s, sandbox.ErrInvalid)
		}
		return 0, false, nil
	}
	if err := checkID(kind, n); err != nil {
		return 0, false, err
	}
	return uint32(n), true, nil
}

// passwdEntry is one line of /etc/passwd.
type passwdEntry struct {
	name     string
	uid, gid uint32
}

// groupEntry is one line of /etc/group.
type groupEntry struct {
	name    string
	gid     uint32
	members []string
}

// userDB reads a rootfs's passwd and group files at most once each.
type userDB struct {
	root         string
	passwd       []passwdEntry
	group        []groupEntry
	readP, readG bool
}

func (db *userDB) userBy(match func(passwdEntry) bool) (passwdEntry, bool, error) {
	if !db.readP {
		b, err := readRootFile(db.root, "etc/passwd")
		if err != nil {
			return passwdEntry{}, false, err
		}
		db.passwd, db.readP = parsePasswd(b), true
	}
	for _, p := range db.passwd {
		if match(p) {
			return p, true, nil
		}
	}
	return passwdEntry{}, false, nil
}

func (db *userDB) groups() ([]groupEntry, error) {
	if !db.readG {
		b, err := readRootFile(db.root, "etc/group")
		if err != nil {
			return nil, err
		}
		db.group, db.readG = parseGroup(b), true
	}
	return db.group, nil
}

func (db *userDB) groupBy(match func(groupEntry) bool) (groupEntry, bool, error) {
	groups, err := db.groups()
	if err != nil {
		return groupEntry{}, false, err
	}
	for _, g := range groups {
		if match(g) {
			return g, true, nil
		}
	}
	return groupEntry{}, false, nil
}

// parsePasswd parses name:password:uid:gid:gecos:home:shell lines,
// skipping blank, comment and malformed ones.
func parsePasswd(b []byte) []passwdEntry {
	var out []passwdEntry
	for _, line := range fileLines(b) {
		f := strings.Split(line, ":")
		if len(f) < 4 || f[0] == "" {
			continue
		}
		uid, err1 := strconv.ParseUint(f[2], 10, 31)
		gid, err2 := strconv.ParseUint(f[3], 10, 31)
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, passwdEntry{name: f[0], uid: uint32(uid), gid: uint32(gid)})
	}
	return out
}

// parseGroup parses name:password:gid:member,member lines, skipping
// blank, comment and malformed ones.
func parseGroup(b []byte) []groupEntry {
	var out []groupEntry
	for _, line := range fileLines(b) {
		f := strings.Split(line, ":")
		if len(f) < 3 || f[0] == "" {
			continue
		}
		gid, err := strconv.ParseUint(f[2], 10, 31)
		if err != nil {
			continue
		}
		g := groupEntry{name: f[0], gid: uint32(gid)}
		if len(f) > 3 {
			for _, m := range strings.Split(f[3], ",") {
				if m = strings.TrimSpace(m); m != "" {
					g.members = append(g.members, m)
				}
			}
		}
		out = append(out, g)
	}
	return out
}

// fileLines splits b into trimmed, non-blank, non-comment lines.
func fileLines(b []byte) []string {
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, line)
	}
	return out
}
