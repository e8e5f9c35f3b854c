package main

import (
	"context"
	"fmt"
	"io"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// writeEvents summarises the pods' events by type and reason (a Warning
// here means a start that went wrong and was retried), with one message
// of each.
func writeEvents(ctx context.Context, w io.Writer, cl kubernetes.Interface) {
	l, err := cl.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Fprintln(w, "events:", err)
		return
	}
	type key struct{ typ, reason string }
	count := map[key]int32{}
	sample := map[key]string{}
	for _, e := range l.Items {
		k := key{e.Type, e.Reason}
		count[k] += max(e.Count, 1)
		if _, ok := sample[k]; !ok {
			sample[k] = e.Message
		}
	}
	keys := make([]key, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].typ+keys[i].reason < keys[j].typ+keys[j].reason })
	fmt.Fprintf(w, "\nevents of the benchmark's pods:\n\n| type | reason | count | e.g. |\n|---|---|---|---|\n")
	for _, k := range keys {
		fmt.Fprintf(w, "| %s | %s | %d | %.400s |\n", k.typ, k.reason, count[k], sample[k])
	}
}
