package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestKubectlErrors: API errors reach the user formatted as Kubernetes
// formats them (kubectl prints the server's Status).
func TestKubectlErrors(t *testing.T) {
	t.Parallel()
	forEachKubectl(t, func(t *testing.T, k *kubectl, srv *apiServer) {
		c := srv.Client()

		t.Run("NotFound", func(t *testing.T) {
			k := k.In(t)
			r := k.Fail("get", "pod", "missing")
			assert.Equal(t, "Error from server (NotFound): pods \"missing\" not found\n", r.Stderr)
		})

		t.Run("AlreadyExists", func(t *testing.T) {
			k := k.In(t)
			createPod(t, c, "nginx")
			r := k.Fail("run", "nginx", "--image=nginx:1.27")
			assert.Equal(t, "Error from server (AlreadyExists): pods \"nginx\" already exists\n", r.Stderr)
			k.OK("create", "deploy", "web", "--image=img:1")
			r = k.Fail("create", "deploy", "web", "--image=img:1")
			assert.Equal(t, "error: failed to create deployment: deployments.apps \"web\" already exists\n", r.Stderr)
		})

		t.Run("AlreadyExistsFromFile", func(t *testing.T) {
			k := k.In(t)
			createPod(t, c, "nginx-file")
			r := k.Fail("create", "-f", podManifest)
			assert.Equal(t, `Error from server (AlreadyExists): error when creating "`+podManifest+`": pods "nginx" already exists`+"\n", r.Stderr)
		})

		t.Run("Invalid", func(t *testing.T) {
			k := k.In(t)
			r := k.Fail("run", "Bad_Name", "--image=nginx:1.27")
			assert.Contains(t, r.Stderr, `The Pod "Bad_Name" is invalid: `)
			assert.Contains(t, r.Stderr, `* metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain`)
			assert.Contains(t, r.Stderr, `* spec.containers[0].name: Invalid value: "Bad_Name": a lowercase RFC 1123 label`)

			r = k.Fail("apply", "-f", "testdata/pod-invalid.yaml")
			assert.Contains(t, r.Stderr, `The Pod "Bad_Name" is invalid: `)
			assert.Contains(t, r.Stderr, `metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters`)
			assert.Contains(t, r.Stderr, `spec.containers[0].image: Required value`)
		})

		t.Run("MissingNamespace", func(t *testing.T) {
			k := k.In(t)
			r := k.Fail("run", "lost", "--image=nginx:1.27", "-n", "nope")
			assert.Equal(t, "Error from server (NotFound): namespaces \"nope\" not found\n", r.Stderr)
			r = k.Fail("apply", "-f", podManifest, "-n", "nope")
			assert.Equal(t, `Error from server (NotFound): error when creating "`+podManifest+`": namespaces "nope" not found`+"\n", r.Stderr)
		})

		t.Run("UnknownField", func(t *testing.T) {
			k := k.In(t)
			// kubectl validates strictly by default: it asks the server to
			// reject unknown fields (fieldValidation=Strict).
			r := k.Fail("apply", "-f", "testdata/pod-unknown-field.yaml")
			assert.Contains(t, r.Stderr, `unknown field "spec.bogusField"`)
			// kube-apiserver names the kind it could not decode the body into.
			assert.Equal(t, `Error from server (BadRequest): error when creating "testdata/pod-unknown-field.yaml": `+
				`Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "spec.bogusField"`+"\n", r.Stderr)
			requirePodGone(t, c, "strict")
		})

		t.Run("WrongType", func(t *testing.T) {
			k := k.In(t)
			r := k.Fail("apply", "-f", "testdata/pod-wrong-type.yaml")
			assert.True(t, strings.HasPrefix(r.Stderr, `Error from server (BadRequest): error when creating "testdata/pod-wrong-type.yaml": `+
				`Pod in version "v1" cannot be handled as a Pod: `), "stderr: %s", r.Stderr)
			assert.Contains(t, r.Stderr, "cannot unmarshal string into Go struct field PodSpec.spec.containers")
			requirePodGone(t, c, "wrongtype")
		})
	})
}
