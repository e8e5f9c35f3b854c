package native

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/podkit/podkit/sandbox"
)

// sandboxRecord is what the runtime keeps on disk about a sandbox, so a
// restarted runtime knows it again.
type sandboxRecord struct {
	ID        string                `json:"id"`
	Config    sandbox.SandboxConfig `json:"config"`
	State     sandbox.SandboxState  `json:"state"`
	CreatedAt time.Time             `json:"createdAt"`
	IPs       []string              `json:"ips,omitempty"`
	NetNS     string                `json:"netns,omitempty"`
	IPCNS     string                `json:"ipcns,omitempty"`
	UTSNS     string                `json:"utsns,omitempty"`
	Shm       string                `json:"shm,omitempty"`
	// PauseTask is the supervisor task of the pause process.
	PauseTask string `json:"pauseTask,omitempty"`
	PausePID  int    `json:"pausePid,omitempty"`
	// NetworkUp is true between a successful Networker.Setup and Teardown.
	NetworkUp bool `json:"networkUp,omitempty"`
}

// containerRecord is what the runtime keeps on disk about a container.
type containerRecord struct {
	ID          string            `json:"id"`
	SandboxID   string            `json:"sandboxId"`
	Name        string            `json:"name"`
	Attempt     uint32            `json:"attempt"`
	Image       string            `json:"image,omitempty"`
	ImageID     string            `json:"imageId,omitempty"`
	Handler     string            `json:"handler,omitempty"`
	CreatedAt   time.Time         `json:"createdAt"`
	StartedAt   time.Time         `json:"startedAt,omitzero"`
	LogPath     string            `json:"logPath,omitempty"`
	Rootfs      string            `json:"rootfs"`
	RootfsMount bool              `json:"rootfsMounted"`
	Cgroup      string            `json:"cgroup,omitempty"`
	StopSignal  int               `json:"stopSignal"`
	Process     *specs.Process    `json:"process,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// writeJSON writes v to path atomically: a temporary file renamed over it,
// so a crash of the process leaves the old or the new record, never half of
// one. There is no fsync: the records describe namespaces, mounts and
// processes that a power loss or reboot removes anyway (the root is under
// /run), and flushing each of the several writes of a pod's start cost
// milliseconds apiece on a disk-backed /run.
func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode %s: %w", path, err)
	}
	return nil
}

// loadRecords reads every record of kind ("sandboxes" or "containers")
// under root; directories without a complete record (a crash mid-create)
// are returned in partial so the caller can clean them up.
func loadRecords[T any](root, kind, file string) (recs []*T, partial []string, err error) {
	dir := filepath.Join(root, kind)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", dir, err)
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		var r T
		if err := readJSON(filepath.Join(dir, e.Name(), file), &r); err != nil {
			partial = append(partial, filepath.Join(dir, e.Name()))
			continue
		}
		recs = append(recs, &r)
	}
	return recs, partial, nil
}
