package deployment

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/dump"
)

// HashLabel is the label that ties a ReplicaSet and its pods to one pod
// template of their Deployment ("pod-template-hash").
const HashLabel = appsv1.DefaultDeploymentUniqueLabelKey

// ComputeHash is the pod-template-hash of template as Kubernetes computes
// it: FNV-32a over the spew dump of the template (k8s.io/utils/dump.ForHash,
// the same printer configuration), followed by the collision count as 8
// little-endian bytes when set, the decimal sum rendered with
// rand.SafeEncodeString (no vowels, so no words). Adding the collision count
// lets a Deployment escape a name taken by a ReplicaSet with another
// template.
func ComputeHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	fmt.Fprintf(h, "%v", dump.ForHash(*template))
	if collisionCount != nil {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, uint32(*collisionCount))
		h.Write(b)
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// EqualIgnoreHash reports whether two pod templates are semantically equal
// once the pod-template-hash label is removed from both: how a Deployment
// recognises the ReplicaSet of its current template.
func EqualIgnoreHash(a, b *corev1.PodTemplateSpec) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	delete(a.Labels, HashLabel)
	delete(b.Labels, HashLabel)
	return equality.Semantic.DeepEqual(a, b)
}

// withLabel returns a copy of m with key=value.
func withLabel(m map[string]string, key, value string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	out[key] = value
	return out
}

// withoutLabel returns a copy of m without key.
func withoutLabel(m map[string]string, key string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}
