package memory_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/memory"
)

func Example() {
	ctx := context.Background()
	s := memory.New()
	defer s.Close()

	pods := schema.GroupResource{Resource: "pods"}
	key := storage.Key(pods, "default", "web")

	// A watcher of the namespace, started before the write.
	w, _ := s.Watch(ctx, storage.Key(pods, "default", ""), storage.WatchOptions{})
	defer w.Stop()

	created, _ := s.Create(ctx, key, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}})
	fmt.Println("created at resourceVersion", created.(*corev1.Pod).ResourceVersion)

	updated, _ := s.Update(ctx, key, func(cur runtime.Object) (runtime.Object, error) {
		p := cur.(*corev1.Pod)
		p.Spec.NodeName = "node-1" // what a scheduler's binding does
		return p, nil
	})
	fmt.Println("bound at resourceVersion", updated.(*corev1.Pod).ResourceVersion)

	for range 2 {
		ev := <-w.ResultChan()
		p := ev.Object.(*corev1.Pod) // shared with other watchers: read only
		fmt.Printf("%s %s node=%q rv=%s\n", ev.Type, p.Name, p.Spec.NodeName, p.ResourceVersion)
	}
	// Output:
	// created at resourceVersion 1
	// bound at resourceVersion 2
	// ADDED web node="" rv=1
	// MODIFIED web node="node-1" rv=2
}
