package apiserver

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podkit/podkit/apiserver/storage"
)

// rootCAConfigMap is the ConfigMap every namespace gets with the cluster
// CA (kube-controller-manager's root-ca-cert-publisher; podkit's API
// server publishes it itself, like the default service account, so a pod's
// token volume can be filled with no controller manager running).
const rootCAConfigMap = "kube-root-ca.crt"

var (
	configMapsGR = schema.GroupResource{Resource: "configmaps"}
	namespacesGR = schema.GroupResource{Resource: "namespaces"}
)

// publishRootCA ensures kube-root-ca.crt in every namespace.
func (s *Server) publishRootCA(ctx context.Context) error {
	if len(s.cfg.RootCA) == 0 {
		return nil
	}
	res, err := s.store.List(ctx, storage.Key(namespacesGR, "", ""), storage.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing namespaces to publish the root CA: %w", err)
	}
	for _, obj := range res.Items {
		ns, ok := obj.(*corev1.Namespace)
		if !ok || ns.DeletionTimestamp != nil {
			continue
		}
		if err := s.ensureRootCA(ctx, ns.Name); err != nil {
			return err
		}
	}
	return nil
}

// ensureRootCA creates namespace's kube-root-ca.crt, or updates it when
// it holds another CA.
func (s *Server) ensureRootCA(ctx context.Context, namespace string) error {
	if len(s.cfg.RootCA) == 0 {
		return nil
	}
	ca := string(s.cfg.RootCA)
	k := storage.Key(configMapsGR, namespace, rootCAConfigMap)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: rootCAConfigMap, Namespace: namespace,
			Annotations: map[string]string{"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}},
		Data: map[string]string{"ca.crt": ca},
	}
	s.prepareForCreate(&Resource{GroupVersion: gvCore, Resource: "configmaps"}, cm)
	_, err := s.store.Create(ctx, k, cm)
	if err == nil {
		return nil
	}
	if !errors.Is(err, storage.ErrExists) {
		return fmt.Errorf("configmap %s/%s: %w", namespace, rootCAConfigMap, err)
	}
	_, err = s.store.Update(ctx, k, func(cur runtime.Object) (runtime.Object, error) {
		c, ok := cur.(*corev1.ConfigMap)
		if !ok {
			return nil, fmt.Errorf("unexpected %T", cur)
		}
		if c.Data["ca.crt"] == ca {
			return nil, errUnchanged
		}
		c = c.DeepCopy()
		if c.Data == nil {
			c.Data = map[string]string{}
		}
		c.Data["ca.crt"] = ca
		return c, nil
	})
	if err != nil && !errors.Is(err, errUnchanged) {
		return fmt.Errorf("configmap %s/%s: %w", namespace, rootCAConfigMap, err)
	}
	return nil
}

var errUnchanged = errors.New("unchanged")
