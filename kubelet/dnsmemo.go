package kubelet

import (
	"bytes"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/cni"
)

// resolvMemo remembers the resolv.conf of pods without a dnsConfig, by the
// only things it then depends on besides the node's fixed DNS settings:
// namespace, DNS policy and host networking. Every pod of a namespace
// gets the same file, and rendering it costs a couple of dozen
// allocations per sandbox. The map is cleared when it reaches its bound.
type resolvMemo struct {
	mu    sync.Mutex
	files map[resolvKey]resolvFile
}

type resolvKey struct {
	namespace   string
	policy      corev1.DNSPolicy
	hostNetwork bool
}

type resolvFile struct {
	content  []byte
	warnings []string
	err      error
}

const maxMemoResolv = 1024

// resolvConf is cni.ResolvConf(pod, node), memoised; the content and
// warnings returned are the caller's.
func (m *resolvMemo) resolvConf(pod *corev1.Pod, node cni.NodeDNS) ([]byte, []string, error) {
	if pod.Spec.DNSConfig != nil {
		return cni.ResolvConf(pod, node)
	}
	key := resolvKey{pod.Namespace, pod.Spec.DNSPolicy, pod.Spec.HostNetwork}
	m.mu.Lock()
	f, ok := m.files[key]
	m.mu.Unlock()
	if !ok {
		f.content, f.warnings, f.err = cni.ResolvConf(pod, node)
		m.mu.Lock()
		if m.files == nil || len(m.files) >= maxMemoResolv {
			m.files = map[resolvKey]resolvFile{}
		}
		m.files[key] = f
		m.mu.Unlock()
	}
	return bytes.Clone(f.content), slices.Clone(f.warnings), f.err
}
