package validation

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// FuzzValidatePod decodes arbitrary JSON into Pods and runs every pod entry
// point: validation must never panic, whatever the object holds.
func FuzzValidatePod(f *testing.F) {
	valid, err := json.Marshal(validPod())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid, valid)
	f.Add([]byte(`{}`), valid)
	f.Add([]byte(`{"metadata":{"name":"x","namespace":"y","resourceVersion":"1"},"spec":{"containers":[{"name":"a","ports":[{"containerPort":99999,"hostPort":-1}],"env":[{"name":"=","valueFrom":{}}]}],"volumes":[{"name":"v","hostPath":{"path":".."},"emptyDir":{}}]}}`), []byte(`{"spec":{"containers":[{}]}}`))
	f.Add([]byte(`{"spec":{"initContainers":[{"name":"i","restartPolicy":"Always","lifecycle":{"preStop":{"sleep":{"seconds":-5}}}}],"terminationGracePeriodSeconds":-1,"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"k","operator":"Gt","values":["x","y"]}]}]}}}}}`), valid)
	f.Add([]byte(`{"spec":{"containers":[{"name":"a","resources":{"limits":{"hugepages-bogus":"1","cpu":"1"},"requests":{"cpu":"2","example.com/x":"1"}}}],"ephemeralContainers":[{"name":"d","targetContainerName":"zz"}],"topologySpreadConstraints":[{"maxSkew":0},{"maxSkew":0}]},"status":{"phase":"Succeeded","podIPs":[{"ip":"::1"},{"ip":"::1"},{"ip":"x"}],"hostIPs":[{"ip":""}]}}`), valid)
	v := Default()
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var pod, old corev1.Pod
		if json.Unmarshal(a, &pod) != nil || json.Unmarshal(b, &old) != nil {
			return
		}
		_ = v.NewInvalid(&pod, v.ValidateCreate(&pod))
		_ = v.ValidateUpdate(&pod, &old)
		_ = v.ValidateUpdate(&old, &pod)
		_ = v.ValidateStatusUpdate(&pod, &old)
		_ = v.ValidateEphemeralContainersUpdate(&pod, &old)
		tmpl := &corev1.PodTemplate{ObjectMeta: pod.ObjectMeta, Template: corev1.PodTemplateSpec{ObjectMeta: pod.ObjectMeta, Spec: pod.Spec}}
		_ = v.ValidateCreate(tmpl)
	})
}
