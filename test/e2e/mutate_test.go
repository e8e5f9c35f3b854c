package e2e

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// conflictMessage is how the API server words an optimistic-concurrency
// failure on pod nginx.
const conflictMessage = `Operation cannot be fulfilled on pods "nginx": the object has been modified; please apply your changes to the latest version and try again`

// TestKubectlLabelAnnotate: label and annotate add, overwrite and remove
// keys; --resource-version makes the server check a precondition.
func TestKubectlLabelAnnotate(t *testing.T) {
	t.Parallel()
	forEachKubectl(t, func(t *testing.T, k *kubectl, srv *apiServer) {
		c := srv.Client()
		created := createPod(t, c, "nginx")

		assert.Equal(t, "pod/nginx labeled\n", k.OK("label", "pod", "nginx", "env=prod"))
		assert.Equal(t, "prod", getPod(t, c, "nginx").Labels["env"])
		r := k.Fail("label", "pod", "nginx", "env=dev")
		assert.Contains(t, r.Stderr, "'env' already has a value (prod), and --overwrite is false")
		assert.Equal(t, "pod/nginx labeled\n", k.OK("label", "pod", "nginx", "env=dev", "--overwrite"))
		assert.Equal(t, "dev", getPod(t, c, "nginx").Labels["env"])
		assert.Equal(t, "pod/nginx unlabeled\n", k.OK("label", "pod", "nginx", "env-"))
		assert.Equal(t, map[string]string{"app": "nginx", "tier": "web"}, getPod(t, c, "nginx").Labels)
		assert.Equal(t, "pod/nginx labeled\n", k.OK("label", "pods", "-l", "app=nginx", "selected=yes"))
		assert.Equal(t, "yes", getPod(t, c, "nginx").Labels["selected"])

		r = k.Fail("label", "pod", "nginx", "stale=yes", "--resource-version", created.ResourceVersion)
		assert.Equal(t, "Error from server (Conflict): "+conflictMessage+"\n", r.Stderr)
		assert.NotContains(t, getPod(t, c, "nginx").Labels, "stale")

		// kubectl 1.27 prints "annotate", later versions "annotated".
		assert.Regexp(t, `^pod/nginx annotated?\n$`, k.OK("annotate", "pod", "nginx", "description=hello world"))
		pod := getPod(t, c, "nginx")
		assert.Equal(t, "hello world", pod.Annotations["description"])
		assert.Equal(t, "e2e", pod.Annotations["podkit.dev/owner"], "other annotations kept")
		assert.Regexp(t, `^pod/nginx annotated?\n$`, k.OK("annotate", "pod", "nginx", "description-"))
		assert.NotContains(t, getPod(t, c, "nginx").Annotations, "description")
	})
}

// TestKubectlPatch: strategic merge patch (kubectl's default) merges the
// containers list by name, a JSON merge patch replaces lists, a JSON patch
// applies operations; no-op patches do not write; the status subresource.
func TestKubectlPatch(t *testing.T) {
	t.Parallel()
	forEachKubectl(t, func(t *testing.T, k *kubectl, srv *apiServer) {
		c := srv.Client()
		createPod(t, c, "nginx")
		image := `{"spec":{"containers":[{"name":"nginx","image":"nginx:1.28"}]}}`

		assert.Equal(t, "pod/nginx patched\n", k.OK("patch", "pod", "nginx", "-p", image))
		pod := getPod(t, c, "nginx")
		require.Len(t, pod.Spec.Containers, 1)
		assert.Equal(t, "nginx:1.28", pod.Spec.Containers[0].Image)
		assert.Len(t, pod.Spec.Containers[0].Env, 2, "strategic merge keeps the container's other fields")
		assert.Equal(t, "200m", pod.Spec.Containers[0].Resources.Limits.Cpu().String())

		assert.Equal(t, "pod/nginx patched (no change)\n", k.OK("patch", "pod", "nginx", "--type=strategic", "-p", image))
		assert.Equal(t, pod.ResourceVersion, getPod(t, c, "nginx").ResourceVersion, "a no-op patch must not write")

		assert.Equal(t, "pod/nginx patched\n", k.OK("patch", "pod", "nginx", "--type=merge", "-p", `{"metadata":{"labels":{"tier":null,"track":"stable"}}}`))
		assert.Equal(t, map[string]string{"app": "nginx", "track": "stable"}, getPod(t, c, "nginx").Labels)

		// A merge patch replaces the whole list: the container loses its
		// ports, env, resources and mounts, which a pod update may not do.
		r := k.Fail("patch", "pod", "nginx", "--type=merge", "-p", `{"spec":{"containers":[{"name":"nginx","image":"nginx:1.29"}]}}`)
		assert.Contains(t, r.Stderr, `The Pod "nginx" is invalid: spec: Forbidden: pod updates may not change fields other than`)
		assert.Equal(t, "nginx:1.28", getPod(t, c, "nginx").Spec.Containers[0].Image)

		assert.Equal(t, "pod/nginx patched\n", k.OK("patch", "pod", "nginx", "--type=json", "-p",
			`[{"op":"replace","path":"/spec/containers/0/image","value":"nginx:1.29"},{"op":"add","path":"/metadata/labels/patched","value":"json"}]`))
		pod = getPod(t, c, "nginx")
		assert.Equal(t, "nginx:1.29", pod.Spec.Containers[0].Image)
		assert.Equal(t, "json", pod.Labels["patched"])

		r = k.Fail("patch", "pod", "nginx", "--type=json", "-p", `[{"op":"test","path":"/metadata/labels/app","value":"other"},{"op":"remove","path":"/metadata/labels/app"}]`)
		assert.Contains(t, r.Stderr, "The request is invalid: ")
		assert.Contains(t, r.Stderr, "/metadata/labels/app")
		assert.Equal(t, pod.ResourceVersion, getPod(t, c, "nginx").ResourceVersion, "a failed JSON patch test must not write")

		r = k.Fail("patch", "pod", "missing", "-p", `{"metadata":{"labels":{"a":"b"}}}`)
		assert.Equal(t, "Error from server (NotFound): pods \"missing\" not found\n", r.Stderr)

		assert.Equal(t, "pod/nginx patched\n", k.OK("patch", "pod", "nginx", "--subresource=status", "--type=merge", "-p", `{"status":{"phase":"Running","podIP":"10.88.0.7"}}`))
		pod = getPod(t, c, "nginx")
		assert.Equal(t, corev1.PodRunning, pod.Status.Phase)
		assert.Equal(t, "10.88.0.7", pod.Status.PodIP)
		assert.Equal(t, "json", pod.Labels["patched"], "a status patch leaves the rest alone")
	})
}

// TestKubectlReplace: the edit cycle (get -o yaml, change, replace -f),
// and a replace from a stale copy is a Conflict.
func TestKubectlReplace(t *testing.T) {
	t.Parallel()
	forEachKubectl(t, func(t *testing.T, k *kubectl, srv *apiServer) {
		c := srv.Client()
		createPod(t, c, "nginx")

		var obj map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(k.OK("get", "pod", "nginx", "-o", "yaml")), &obj))
		meta := obj["metadata"].(map[string]any)
		meta["labels"].(map[string]any)["edited"] = "yes"
		containers := obj["spec"].(map[string]any)["containers"].([]any)
		containers[0].(map[string]any)["image"] = "nginx:1.28"
		edited, err := yaml.Marshal(obj)
		require.NoError(t, err)

		assert.Equal(t, "pod/nginx replaced\n", k.OK("replace", "-f", writeFile(t, "edited.yaml", string(edited))))
		pod := getPod(t, c, "nginx")
		assert.Equal(t, "yes", pod.Labels["edited"])
		assert.Equal(t, "nginx:1.28", pod.Spec.Containers[0].Image)

		// The same file again carries the old resourceVersion.
		stale := writeFile(t, "stale.yaml", string(edited))
		r := k.Fail("replace", "-f", stale)
		assert.Equal(t, `Error from server (Conflict): error when replacing "`+stale+`": `+conflictMessage+"\n", r.Stderr)

		// Through stdin, as `kubectl get -o yaml | sed | kubectl replace -f -`.
		current := k.OK("get", "pod", "nginx", "-o", "yaml")
		r = k.RunStdin(current, "replace", "-f", "-")
		require.Equal(t, 0, r.Code, "%s", r)
		assert.Equal(t, "pod/nginx replaced\n", r.Stdout)
	})
}
