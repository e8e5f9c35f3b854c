package printers

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Placeholders Kubernetes prints for missing values.
const (
	none    = "<none>"
	unknown = "<unknown>"
	unset   = "<unset>"
	pending = "<pending>"
)

// cellContext carries what every row of one table is computed against: the
// instant "now", read once per table so all ages agree.
type cellContext struct {
	now time.Time
}

// since formats the time elapsed since t the way Kubernetes prints AGE:
// Kubernetes' HumanDuration, or "<unknown>" for a zero time.
func (c *cellContext) since(t metav1.Time) string {
	if t.IsZero() {
		return unknown
	}
	return duration.HumanDuration(c.now.Sub(t.Time))
}

// sinceMicro is since for a MicroTime.
func (c *cellContext) sinceMicro(t metav1.MicroTime) string {
	if t.IsZero() {
		return unknown
	}
	return duration.HumanDuration(c.now.Sub(t.Time))
}

// containerCells joins the names and the images of containers with commas,
// for the wide CONTAINERS and IMAGES columns.
func containerCells(containers []corev1.Container) (names, images string) {
	n := make([]string, len(containers))
	i := make([]string, len(containers))
	for k := range containers {
		n[k] = containers[k].Name
		i[k] = containers[k].Image
	}
	return strings.Join(n, ","), strings.Join(i, ",")
}

// listWithMore joins at most max items of list with commas and tells how
// many more there were: "a,b,c + 2 more...". An empty list is "<unset>".
func listWithMore(list []string, count, max int) string {
	ret := strings.Join(list, ",")
	if count > max {
		return fmt.Sprintf("%s + %d more...", ret, count-max)
	}
	if ret == "" {
		return unset
	}
	return ret
}

// boolPtrCell formats an optional bool as "True", "False" or "<unset>".
func boolPtrCell(b *bool) string {
	switch {
	case b == nil:
		return unset
	case *b:
		return "True"
	default:
		return "False"
	}
}

// int32Value dereferences an optional int32, 0 when unset (the internal
// Kubernetes types hold these fields as plain values).
func int32Value(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// orPlaceholder returns s, or placeholder when s is empty.
func orPlaceholder(s, placeholder string) string {
	if s == "" {
		return placeholder
	}
	return s
}
