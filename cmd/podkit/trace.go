package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/podkit/podkit/trace"
)

func newTraceCommand() *cobra.Command {
	var kubeconfig, namespace, svg string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "trace POD",
		Short: "Draw a pod's birth: every step from admission to Ready, with durations in ms",
		Long: `Draw the birth trace of a pod (the podkit.io/birth-trace annotation) as a waterfall: admitted
and stored by the API server, scheduled and bound, then seen by the kubelet, cgroups, volumes,
sandbox, network, each image, init container and container, and ready. --svg writes the same
waterfall as an SVG picture. The API server records the trace when it runs with the birth trace
on (podkit up, podkit apiserver); the kubelet adds its steps once the pod is Ready.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			rules.ExplicitPath = kubeconfig
			cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{Context: clientcmdapi.Context{Namespace: namespace}})
			rc, err := cc.ClientConfig()
			if err != nil {
				return fmt.Errorf("loading kubeconfig: %w", err)
			}
			ns, _, err := cc.Namespace()
			if err != nil {
				return fmt.Errorf("namespace: %w", err)
			}
			client, err := kubernetes.NewForConfig(rc)
			if err != nil {
				return err
			}
			pod, err := getTracedPod(cmd.Context(), client, ns, args[0], wait)
			if err != nil {
				return err
			}
			return printTrace(cmd.OutOrStdout(), pod, svg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	f.StringVarP(&namespace, "namespace", "n", "", "the pod's namespace (default: the kubeconfig context's, else default)")
	f.StringVar(&svg, "svg", "", "also write the waterfall as an SVG picture to this file")
	f.DurationVar(&wait, "wait", 0, "wait up to this long for the pod's trace to be complete (Ready)")
	return cmd
}

// getTracedPod reads the pod, waiting up to wait for its trace to reach
// Ready.
func getTracedPod(ctx context.Context, client kubernetes.Interface, ns, name string, wait time.Duration) (*corev1.Pod, error) {
	deadline := time.Now().Add(wait)
	for {
		pod, err := client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		t, ok := trace.FromAnnotations(pod.Annotations)
		if (ok && t.Has(trace.StepReady)) || !time.Now().Before(deadline) {
			return pod, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// printTrace draws pod's birth trace on w, and as SVG into svgPath when
// set.
func printTrace(w io.Writer, pod *corev1.Pod, svgPath string) error {
	t, ok := trace.FromAnnotations(pod.Annotations)
	if !ok {
		if _, has := pod.Annotations[trace.Annotation]; has {
			return fmt.Errorf("pod %s/%s: its %s annotation does not decode", pod.Namespace, pod.Name, trace.Annotation)
		}
		return fmt.Errorf("pod %s/%s has no birth trace: it was created by an API server without the birth trace (podkit up and podkit apiserver record one)",
			pod.Namespace, pod.Name)
	}
	title := fmt.Sprintf("birth of pod %s/%s", pod.Namespace, pod.Name)
	if pod.Spec.NodeName != "" {
		title += " on " + pod.Spec.NodeName
	}
	if t.Has(trace.StepReady) {
		title += fmt.Sprintf(": %.1f ms from admitted to ready", float64(t.Total().Microseconds())/1000)
	} else {
		title += " (not Ready yet: the kubelet adds its steps once the pod is Ready)"
	}
	if err := trace.WriteText(w, t, trace.TextOptions{Title: title}); err != nil {
		return err
	}
	if svgPath == "" {
		return nil
	}
	f, err := os.Create(svgPath)
	if err != nil {
		return fmt.Errorf("--svg: %w", err)
	}
	err = trace.WriteSVG(f, t, title)
	return errors.Join(err, f.Close())
}
