package e2e

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKubectlDeployment: create deploy, get deploy (plain and wide), scale
// through the scale subresource.
func TestKubectlDeployment(t *testing.T) {
	t.Parallel()
	forEachKubectl(t, func(t *testing.T, k *kubectl, srv *apiServer) {
		apps := srv.Client().AppsV1().Deployments("default")

		assert.Equal(t, "deployment.apps/web created\n", k.OK("create", "deploy", "web", "--image=img:1", "--replicas=3"))
		d, err := apps.Get(testContext(t, apiTimeout), "web", metav1.GetOptions{})
		require.NoError(t, err)
		if assert.NotNil(t, d.Spec.Replicas) {
			assert.EqualValues(t, 3, *d.Spec.Replicas)
		}
		assert.Equal(t, map[string]string{"app": "web"}, d.Spec.Selector.MatchLabels)
		assert.Equal(t, "img:1", d.Spec.Template.Spec.Containers[0].Image)
		assert.EqualValues(t, 1, d.Generation)

		out := k.OK("get", "deploy")
		assert.Equal(t, []string{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"}, fields(header(out)))
		row := tableRow(t, out, "web")
		require.Len(t, row, 5, "row %q", row)
		assert.Equal(t, []string{"web", "0/3", "0", "0"}, row[:4])

		out = k.OK("get", "deployments.apps", "web", "-o", "wide")
		assert.Equal(t, []string{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"}, fields(header(out)))
		row = tableRow(t, out, "web")
		require.Len(t, row, 8, "row %q", row)
		assert.Equal(t, []string{"img", "img:1", "app=web"}, row[5:])

		assert.Equal(t, "deployment.apps/web scaled\n", k.OK("scale", "deploy", "web", "--replicas=5"))
		d, err = apps.Get(testContext(t, apiTimeout), "web", metav1.GetOptions{})
		require.NoError(t, err)
		if assert.NotNil(t, d.Spec.Replicas) {
			assert.EqualValues(t, 5, *d.Spec.Replicas)
		}
		assert.EqualValues(t, 2, d.Generation, "a spec change bumps the generation")
		assert.Equal(t, []string{"web", "0/5", "0", "0"}, tableRow(t, k.OK("get", "deploy", "web"), "web")[:4])

		var scale autoscalingv1.Scale
		raw := k.OK("get", "--raw", "/apis/apps/v1/namespaces/default/deployments/web/scale")
		require.NoError(t, json.Unmarshal([]byte(raw), &scale), "scale:\n%s", raw)
		assert.Equal(t, "Scale", scale.Kind)
		assert.EqualValues(t, 5, scale.Spec.Replicas)
		assert.Equal(t, "app=web", scale.Status.Selector)

		r := k.Fail("scale", "deploy", "web", "--current-replicas=3", "--replicas=6")
		assert.Contains(t, r.Stderr, "Expected replicas to be 3, was 5")
	})
}
