package kubelet

import (
	"slices"
	"sync"

	"github.com/podkit/podkit/image"
	"github.com/podkit/podkit/sandbox"
)

// imageMemo remembers what starting a container learns of an image and
// cannot change: how a reference parses (regular expressions, for every
// container start), and an image's runtime configuration by image ID (the
// digest of that very configuration, so it is what any read of the image
// would return). A node runs many pods of few images; each map is cleared
// when it reaches its bound, so an unusual node stays small.
type imageMemo struct {
	mu      sync.Mutex
	refs    map[string]parsedRef
	configs map[string]sandbox.ImageConfig
}

type parsedRef struct {
	ref image.Reference
	err error
}

// Bounds of imageMemo's maps.
const (
	maxMemoRefs    = 1024
	maxMemoConfigs = 256
)

// parse is image.ParseReference, memoised.
func (m *imageMemo) parse(s string) (image.Reference, error) {
	m.mu.Lock()
	r, ok := m.refs[s]
	m.mu.Unlock()
	if ok {
		return r.ref, r.err
	}
	r.ref, r.err = image.ParseReference(s)
	m.mu.Lock()
	if m.refs == nil || len(m.refs) >= maxMemoRefs {
		m.refs = map[string]parsedRef{}
	}
	m.refs[s] = r
	m.mu.Unlock()
	return r.ref, r.err
}

// config returns the configuration of image id, if known, with slices of
// its own (a runtime may keep or change what it is given, as it could a
// configuration read afresh).
func (m *imageMemo) config(id string) (sandbox.ImageConfig, bool) {
	m.mu.Lock()
	c, ok := m.configs[id]
	m.mu.Unlock()
	c.Entrypoint, c.Cmd, c.Env = slices.Clone(c.Entrypoint), slices.Clone(c.Cmd), slices.Clone(c.Env)
	return c, ok
}

// setConfig remembers a copy of the configuration of image id ("" is not
// an ID).
func (m *imageMemo) setConfig(id string, c sandbox.ImageConfig) {
	if id == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.configs == nil || len(m.configs) >= maxMemoConfigs {
		m.configs = map[string]sandbox.ImageConfig{}
	}
	c.Entrypoint, c.Cmd, c.Env = slices.Clone(c.Entrypoint), slices.Clone(c.Cmd), slices.Clone(c.Env)
	m.configs[id] = c
}
