package cni

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// genWidth is the fixed width of the generation number at the start of the
// lock file, so it is rewritten in place.
const genWidth = 16

// ipamCache mirrors the allocation files as of generation gen.
type ipamCache struct {
	valid bool
	gen   uint64
	byIP  map[netip.Addr]Allocation
}

// ipamTx is one locked operation on the directory.
type ipamTx struct {
	p      *IPAM
	lock   *os.File
	bumped bool
}

// locked runs fn holding the in-process mutex and the directory's flock,
// with the cache brought up to date.
func (p *IPAM) locked(ctx context.Context, fn func(*ipamTx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	f, err := os.OpenFile(filepath.Join(p.dir, ipamLockFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open lock: %w", err)
	}
	defer f.Close()
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("lock %s: %w", p.dir, err)
	}
	defer unix.Flock(int(f.Fd()), unix.LOCK_UN) //nolint:errcheck // closing releases it anyway
	gen, err := readGen(f)
	if err != nil {
		return err
	}
	if !p.cache.valid || p.cache.gen != gen {
		allocs, err := p.scan()
		if err != nil {
			p.cache.valid = false
			return err
		}
		p.cache = ipamCache{valid: true, gen: gen, byIP: make(map[netip.Addr]Allocation, len(allocs))}
		for _, a := range allocs {
			p.cache.byIP[a.IP] = a
		}
	}
	return fn(&ipamTx{p: p, lock: f})
}

func readGen(f *os.File) (uint64, error) {
	buf := make([]byte, genWidth)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("read lock file: %w", err)
	}
	if n < genWidth {
		return 0, nil // empty (new, or host-local's): generation 0
	}
	g, err := strconv.ParseUint(string(buf), 16, 64)
	if err != nil {
		return 0, nil // foreign content: treat as generation 0
	}
	return g, nil
}

// bump advances the generation before the first change, so a writer that
// dies half way still makes every other process re-read the directory.
func (tx *ipamTx) bump() error {
	if tx.bumped {
		return nil
	}
	next := tx.p.cache.gen + 1
	if _, err := tx.lock.WriteAt(fmt.Appendf(nil, "%0*x", genWidth, next), 0); err != nil {
		return fmt.Errorf("write lock file: %w", err)
	}
	tx.p.cache.gen = next
	tx.bumped = true
	return nil
}

// owned returns the lowest address held by the owner.
func (tx *ipamTx) owned(containerID, ifName string) (netip.Addr, bool) {
	var best netip.Addr
	for ip, a := range tx.p.cache.byIP {
		if a.owns(containerID, ifName) && (!best.IsValid() || ip.Less(best)) {
			best = ip
		}
	}
	return best, best.IsValid()
}

func (tx *ipamTx) used(ip netip.Addr) bool {
	_, ok := tx.p.cache.byIP[ip]
	return ok
}

func (tx *ipamTx) all() []Allocation {
	out := make([]Allocation, 0, len(tx.p.cache.byIP))
	for _, a := range tx.p.cache.byIP {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b Allocation) int { return a.IP.Compare(b.IP) })
	return out
}

// reserve creates ip's file exclusively; false means somebody holds it.
func (tx *ipamTx) reserve(ip netip.Addr, containerID, ifName string) (bool, error) {
	if err := tx.bump(); err != nil {
		return false, err
	}
	name := filepath.Join(tx.p.dir, ip.String())
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		// The cache missed it: record the holder and move on.
		if a, err := readAllocation(tx.p.dir, ip); err == nil {
			tx.p.cache.byIP[ip] = a
		} else {
			tx.p.cache.byIP[ip] = Allocation{IP: ip}
		}
		return false, nil
	}
	if err != nil {
		return false, err
	}
	_, werr := f.WriteString(containerID + ipamLineSep + ifName)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(name)
		return false, werr
	}
	tx.p.cache.byIP[ip] = Allocation{IP: ip, ContainerID: containerID, IfName: ifName}
	return true, nil
}

// free removes ip's file.
func (tx *ipamTx) free(ip netip.Addr) error {
	if err := tx.bump(); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(tx.p.dir, ip.String())); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	delete(tx.p.cache.byIP, ip)
	return nil
}

// scan reads every allocation file; other files are ignored.
func (p *IPAM) scan() ([]Allocation, error) {
	entries, err := os.ReadDir(p.dir)
	if err != nil {
		return nil, err
	}
	var out []Allocation
	for _, e := range entries {
		ip, err := netip.ParseAddr(e.Name())
		if err != nil || !e.Type().IsRegular() {
			continue
		}
		a, err := readAllocation(p.dir, ip)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

func readAllocation(dir string, ip netip.Addr) (Allocation, error) {
	data, err := os.ReadFile(filepath.Join(dir, ip.String()))
	if err != nil {
		return Allocation{}, err
	}
	id, ifName, _ := strings.Cut(strings.TrimSpace(string(data)), ipamLineSep)
	return Allocation{IP: ip, ContainerID: strings.TrimSpace(id), IfName: strings.TrimSpace(ifName)}, nil
}
