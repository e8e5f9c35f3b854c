package job

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/podkit/podkit/controller"
)

// EnvCompletionIndex is the variable that gives an Indexed Job's
// containers their index.
const EnvCompletionIndex = "JOB_COMPLETION_INDEX"

const unknownIndex = -1

// completionIndex reads a pod's index annotation (unknownIndex if absent
// or invalid).
func completionIndex(p *corev1.Pod) int {
	v, ok := p.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		return unknownIndex
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < 0 {
		return unknownIndex
	}
	return i
}

// indexSet is a set of completion indexes, printed as Kubernetes'
// completedIndexes ("1,3-5,7").
type indexSet map[int]bool

func (s indexSet) String() string {
	idx := make([]int, 0, len(s))
	for i := range s {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	var parts []string
	for k := 0; k < len(idx); {
		j := k
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		if j == k {
			parts = append(parts, strconv.Itoa(idx[k]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", idx[k], idx[j]))
		}
		k = j + 1
	}
	return strings.Join(parts, ",")
}

// parseIndexes reads completedIndexes, keeping indexes below completions.
func parseIndexes(s string, completions int) indexSet {
	out := indexSet{}
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		lo, hi, found := strings.Cut(part, "-")
		first, err1 := strconv.Atoi(lo)
		last := first
		var err2 error
		if found {
			last, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil {
			continue
		}
		for i := first; i <= last && i < completions; i++ {
			out[i] = true
		}
	}
	return out
}

// succeededIndexes returns the indexes already recorded in status and
// those plus the ones of succeeded pods still tracked.
func succeededIndexes(job *batchv1.Job, pods []*corev1.Pod) (prev, all indexSet) {
	completions := int(*job.Spec.Completions)
	prev = parseIndexes(job.Status.CompletedIndexes, completions)
	all = indexSet{}
	for i := range prev {
		all[i] = true
	}
	for _, p := range pods {
		if ix := completionIndex(p); p.Status.Phase == corev1.PodSucceeded && hasTrackingFinalizer(p) && ix != unknownIndex && ix < completions {
			all[ix] = true
		}
	}
	return prev, all
}

// pendingIndexes returns up to count indexes that neither succeeded nor
// have an active pod, lowest first.
func pendingIndexes(jc *syncCtx, count, completions int) []int {
	busy := indexSet{}
	for i := range jc.succeededIx {
		busy[i] = true
	}
	for _, p := range jc.active {
		if ix := completionIndex(p); ix != unknownIndex {
			busy[ix] = true
		}
	}
	var out []int
	for i := 0; i < completions && len(out) < count; i++ {
		if !busy[i] {
			out = append(out, i)
		}
	}
	return out
}

// duplicateIndexPods returns active pods that must go for an Indexed Job:
// without a valid index, beyond completions, or a second pod of an index
// (keeping the one the deletion ranking likes best).
func duplicateIndexPods(pods []*corev1.Pod, completions int) (rm, keep []*corev1.Pod) {
	byIndex := map[int][]*corev1.Pod{}
	for _, p := range pods {
		ix := completionIndex(p)
		if ix == unknownIndex || ix >= completions {
			rm = append(rm, p)
			continue
		}
		byIndex[ix] = append(byIndex[ix], p)
	}
	for _, group := range byIndex {
		if len(group) > 1 {
			controller.RankPodsForDeletion(group, nil, timeZero)
		}
		rm = append(rm, group[:len(group)-1]...)
		keep = append(keep, group[len(group)-1])
	}
	return rm, keep
}

// indexTemplate returns the template of index ix's pod.
func indexTemplate(job *batchv1.Job, base *corev1.PodTemplateSpec, ix int) *corev1.PodTemplateSpec {
	t := base.DeepCopy()
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	t.Annotations[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(ix)
	t.Labels[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(ix)
	t.Spec.Hostname = fmt.Sprintf("%s-%d", job.Name, ix)
	return t
}

// addIndexEnv gives every container JOB_COMPLETION_INDEX from the index
// annotation (downward API) unless it sets the variable itself.
func addIndexEnv(t *corev1.PodTemplateSpec) {
	env := corev1.EnvVar{Name: EnvCompletionIndex, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
		FieldPath: fmt.Sprintf("metadata.annotations['%s']", batchv1.JobCompletionIndexAnnotation)}}}
	add := func(cs []corev1.Container) {
		for i := range cs {
			if !slices.ContainsFunc(cs[i].Env, func(e corev1.EnvVar) bool { return e.Name == EnvCompletionIndex }) {
				cs[i].Env = append(cs[i].Env, env)
			}
		}
	}
	add(t.Spec.InitContainers)
	add(t.Spec.Containers)
}
