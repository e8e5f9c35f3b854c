package procstat

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Memory is a process's resident memory from /proc/<pid>/smaps_rollup,
// in bytes.
type Memory struct {
	// RSS is all of it; PSS its proportional share (each page shared with
	// other processes divided among them).
	RSS, PSS uint64
	// Anon is the anonymous part (heap, stacks); the rest is file pages,
	// the executable's among them.
	Anon uint64
	// PrivateClean and PrivateDirty are pages only this process maps;
	// SharedClean unmodified pages it shares with others.
	PrivateClean, PrivateDirty, SharedClean uint64
}

// Private is the process's own pages (private clean + dirty): what it adds
// to the host beyond what it shares, for example a re-executed binary's
// code pages shared with its parent.
func (m Memory) Private() uint64 { return m.PrivateClean + m.PrivateDirty }

// Add is the sum of two processes' memory.
func (m Memory) Add(o Memory) Memory {
	return Memory{
		RSS: m.RSS + o.RSS, PSS: m.PSS + o.PSS, Anon: m.Anon + o.Anon,
		PrivateClean: m.PrivateClean + o.PrivateClean, PrivateDirty: m.PrivateDirty + o.PrivateDirty,
		SharedClean: m.SharedClean + o.SharedClean,
	}
}

// ReadMemory reads /proc/<pid>/smaps_rollup. A process without resident
// memory (a kernel thread, a zombie) is an error.
func ReadMemory(pid int) (Memory, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return Memory{}, fmt.Errorf("memory of process %d: %w", pid, err)
	}
	defer f.Close()
	m, err := parseMemory(f)
	if err != nil {
		return m, fmt.Errorf("memory of process %d: %w", pid, err)
	}
	return m, nil
}

func parseMemory(r io.Reader) (Memory, error) {
	var m Memory
	fields := map[string]*uint64{
		"Rss:": &m.RSS, "Pss:": &m.PSS, "Anonymous:": &m.Anon,
		"Private_Clean:": &m.PrivateClean, "Private_Dirty:": &m.PrivateDirty, "Shared_Clean:": &m.SharedClean,
	}
	s := bufio.NewScanner(r)
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) < 2 {
			continue
		}
		if dst, ok := fields[f[0]]; ok {
			kb, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return m, fmt.Errorf("%q: %w", s.Text(), err)
			}
			*dst = kb * 1024
		}
	}
	if err := s.Err(); err != nil {
		return m, err
	}
	if m.RSS == 0 {
		return m, fmt.Errorf("no resident memory in smaps_rollup")
	}
	return m, nil
}
