package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/kubernetes"

	"github.com/podkit/podkit"
)

func bufioReader(b []byte) *bufio.Reader { return bufio.NewReader(bytes.NewReader(b)) }

// apply creates the demo's objects (kept when they exist already: a
// resumed cluster), with demo image names pointed at the embedded
// registry. It returns kind/name of each.
func apply(ctx context.Context, c *podkit.Cluster, objs []runtime.Object) ([]string, error) {
	var names []string
	for _, obj := range objs {
		var err error
		var name string
		switch o := obj.(type) {
		case *corev1.Pod:
			name = "pod/" + o.Name
			resolveImages(c, &o.Spec)
			_, err = c.Client().CoreV1().Pods(namespaceOf(o.Namespace)).Create(ctx, o, metav1.CreateOptions{})
		case *appsv1.Deployment:
			name = "deployment/" + o.Name
			resolveImages(c, &o.Spec.Template.Spec)
			_, err = c.Client().AppsV1().Deployments(namespaceOf(o.Namespace)).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Service:
			name = "service/" + o.Name
			_, err = c.Client().CoreV1().Services(namespaceOf(o.Namespace)).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.ConfigMap:
			name = "configmap/" + o.Name
			_, err = c.Client().CoreV1().ConfigMaps(namespaceOf(o.Namespace)).Create(ctx, o, metav1.CreateOptions{})
		default:
			return names, fmt.Errorf("podkit demo applies Pods, Deployments, Services and ConfigMaps, not %T", obj)
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return names, fmt.Errorf("creating %s: %w", name, err)
		}
		names = append(names, name)
	}
	return names, nil
}

func namespaceOf(ns string) string {
	if ns == "" {
		return metav1.NamespaceDefault
	}
	return ns
}

// resolveImages points images named like a demo image at the registry.
func resolveImages(c *podkit.Cluster, spec *corev1.PodSpec) {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			if ref := c.Image(cs[i].Image); ref != "" {
				cs[i].Image = ref
			}
		}
	}
}

// waitPodsReady waits until the demo's pods are Ready: each Pod, and the
// replicas of each Deployment. It returns the pods of the default
// namespace.
func waitPodsReady(ctx context.Context, client kubernetes.Interface, objs []runtime.Object) ([]corev1.Pod, error) {
	for {
		list, err := client.CoreV1().Pods(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
		if err == nil && demoReady(list.Items, objs) {
			return list.Items, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the demo's pods to be Ready: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func demoReady(pods []corev1.Pod, objs []runtime.Object) bool {
	ready := func(p *corev1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status == corev1.ConditionTrue
			}
		}
		return false
	}
	for _, obj := range objs {
		switch o := obj.(type) {
		case *corev1.Pod:
			found := false
			for i := range pods {
				if pods[i].Name == o.Name && ready(&pods[i]) {
					found = true
				}
			}
			if !found {
				return false
			}
		case *appsv1.Deployment:
			sel, err := metav1.LabelSelectorAsSelector(o.Spec.Selector)
			if err != nil {
				return false
			}
			want, n := int32(1), int32(0)
			if o.Spec.Replicas != nil {
				want = *o.Spec.Replicas
			}
			for i := range pods {
				if sel.Matches(labels.Set(pods[i].Labels)) && pods[i].DeletionTimestamp == nil && ready(&pods[i]) {
					n++
				}
			}
			if n < want {
				return false
			}
		}
	}
	return true
}

// printPods prints pods as kubectl get pods -o wide does.
func printPods(w io.Writer, pods []corev1.Pod, now time.Time) {
	sort.Slice(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "NAME\tREADY\tSTATUS\tRESTARTS\tAGE\tIP\tNODE\tNOMINATED NODE\tREADINESS GATES")
	for _, p := range pods {
		ready, restarts := 0, int32(0)
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Ready {
				ready++
			}
			restarts += cs.RestartCount
		}
		status := string(p.Status.Phase)
		if p.Status.Reason != "" {
			status = p.Status.Reason
		}
		if p.DeletionTimestamp != nil {
			status = "Terminating"
		}
		ip, node := p.Status.PodIP, p.Spec.NodeName
		if ip == "" {
			ip = "<none>"
		}
		if node == "" {
			node = "<none>"
		}
		fmt.Fprintf(tw, "%s\t%d/%d\t%s\t%s\t%s\t%s\t%s\t<none>\t<none>\n", p.Name, ready, len(p.Spec.Containers), status,
			strconv.Itoa(int(restarts)), duration.HumanDuration(now.Sub(p.CreationTimestamp.Time)), ip, node)
	}
	tw.Flush()
}
