package validation

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// want describes one expected field error: its type, its field path and,
// optionally, a substring of its detail.
type want struct {
	typ    field.ErrorType
	field  string
	detail string
}

func req(f string) want         { return want{typ: field.ErrorTypeRequired, field: f} }
func inv(f, detail string) want { return want{typ: field.ErrorTypeInvalid, field: f, detail: detail} }
func notSup(f string) want      { return want{typ: field.ErrorTypeNotSupported, field: f} }
func forb(f, detail string) want {
	return want{typ: field.ErrorTypeForbidden, field: f, detail: detail}
}
func dup(f string) want      { return want{typ: field.ErrorTypeDuplicate, field: f} }
func notFound(f string) want { return want{typ: field.ErrorTypeNotFound, field: f} }
func tooLong(f string) want  { return want{typ: field.ErrorTypeTooLong, field: f} }
func tooMany(f string) want  { return want{typ: field.ErrorTypeTooMany, field: f} }
func internal(f string) want { return want{typ: field.ErrorTypeInternal, field: f} }

// expectErrors asserts that errs holds exactly the wanted errors, in any
// order.
func expectErrors(t *testing.T, errs field.ErrorList, wants ...want) {
	t.Helper()
	remaining := append(field.ErrorList(nil), errs...)
	var missing []string
	for _, w := range wants {
		found := -1
		for i, e := range remaining {
			if e.Type == w.typ && e.Field == w.field && strings.Contains(e.Detail, w.detail) {
				found = i
				break
			}
		}
		if found < 0 {
			missing = append(missing, fmt.Sprintf("%s %s %q", w.typ, w.field, w.detail))
			continue
		}
		remaining = append(remaining[:found], remaining[found+1:]...)
	}
	if len(missing) == 0 && len(remaining) == 0 {
		return
	}
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	sort.Strings(got)
	t.Fatalf("errors mismatch\nmissing: %v\nunexpected: %v\ngot all:\n  %s", missing, remaining, strings.Join(got, "\n  "))
}

func ptr[T any](v T) *T { return &v }

func validContainer(name string) corev1.Container {
	return corev1.Container{
		Name:                     name,
		Image:                    "registry.local/app:1.0",
		ImagePullPolicy:          corev1.PullIfNotPresent,
		TerminationMessagePath:   corev1.TerminationMessagePathDefault,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
	}
}

func validPodSpec() corev1.PodSpec {
	return corev1.PodSpec{
		Containers:                    []corev1.Container{validContainer("app")},
		RestartPolicy:                 corev1.RestartPolicyAlways,
		DNSPolicy:                     corev1.DNSClusterFirst,
		TerminationGracePeriodSeconds: ptr(int64(30)),
		SchedulerName:                 corev1.DefaultSchedulerName,
	}
}

func validPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec:       validPodSpec(),
	}
}

// stored returns a copy of obj's metadata as the server stores it, for
// update tests.
func storedMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	m.ResourceVersion = "7"
	m.UID = "0b0f1b8e-7f2e-4f59-9c2a-9a1d1f0d0001"
	m.CreationTimestamp = metav1.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	return m
}
