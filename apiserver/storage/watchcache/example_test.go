package watchcache_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podkit/podkit/apiserver/storage"
	"github.com/podkit/podkit/apiserver/storage/watchcache"
)

func Example() {
	// A store opened at revision 10 appends one event per committed write.
	c, _ := watchcache.New(10, watchcache.WithCapacity(1000))
	defer c.Close()
	for i, name := range []string{"a", "b"} {
		rv := uint64(11 + i)
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		_ = storage.SetRevision(p, rv)
		_ = c.Append(watchcache.Event{Type: watch.Added, Key: "/registry/pods/ns/" + name, Object: p, Revision: rv})
	}
	// A client resuming from revision 11 gets what it missed, then live events.
	w, _ := c.Watch(context.Background(), "/registry/pods/ns/", storage.WatchOptions{ResourceVersion: 11})
	defer w.Stop()
	ev := <-w.ResultChan()
	fmt.Println(ev.Type, ev.Object.(*corev1.Pod).Name, ev.Object.(*corev1.Pod).ResourceVersion)

	_, err := c.Watch(context.Background(), "/registry/pods/ns/", storage.WatchOptions{ResourceVersion: 9})
	fmt.Println(err)
	// Output:
	// ADDED b 12
	// too old resource version: 9 (10)
}
