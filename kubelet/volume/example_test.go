package volume_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podkit/podkit/kubelet/volume"
)

// A pod with a ConfigMap volume and a scratch emptyDir: Setup prepares both
// under the pod's directory, Mounts turns the container's volumeMounts into
// bind mounts for the runtime, Teardown removes everything.
func Example() {
	stateRoot, _ := os.MkdirTemp("", "podkit-volume-example-")
	defer os.RemoveAll(stateRoot)
	stateRoot, _ = filepath.EvalSymlinks(stateRoot)

	client := fake.NewClientset(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "web-config", Namespace: "default"},
		Data:       map[string]string{"nginx.conf": "worker_processes 1;"},
	})
	m, err := volume.New(volume.Config{PodsDir: filepath.Join(stateRoot, "pods"), Client: client, NodeName: "node-1"})
	if err != nil {
		panic(err)
	}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "6f1c"},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"},
				}}},
				{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
			Containers: []corev1.Container{{
				Name: "nginx",
				VolumeMounts: []corev1.VolumeMount{
					{Name: "config", MountPath: "/etc/nginx"},
					{Name: "cache", MountPath: "/var/cache/nginx"},
				},
			}},
		},
	}

	ctx := context.Background()
	paths, err := m.Setup(ctx, pod) // on every pod sync
	if err != nil {
		panic(err)
	}
	conf, _ := os.ReadFile(filepath.Join(paths["config"], "nginx.conf"))
	fmt.Println(string(conf))

	mounts, err := m.Mounts(pod, &pod.Spec.Containers[0], paths)
	if err != nil {
		panic(err)
	}
	for _, mnt := range mounts {
		rel := strings.TrimPrefix(mnt.HostPath, stateRoot)
		fmt.Printf("%s <- %s ro=%v %s\n", mnt.ContainerPath, rel, mnt.ReadOnly, mnt.Propagation)
	}

	if err := m.Teardown(ctx, pod.UID); err != nil {
		panic(err)
	}
	_, err = os.Stat(paths["cache"])
	fmt.Println("removed:", os.IsNotExist(err))
	// Output:
	// worker_processes 1;
	// /etc/nginx <- /pods/6f1c/volumes/kubernetes.io~configmap/config ro=true None
	// /var/cache/nginx <- /pods/6f1c/volumes/kubernetes.io~empty-dir/cache ro=false None
	// removed: true
}
