package apiserver_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/apiserver"
	"github.com/podkit/podkit/apiserver/admission"
	"github.com/podkit/podkit/apiserver/auth/satoken"
)

// Token requests pass through admission as creates of
// serviceaccounts/token: NodeRestriction lets a kubelet have only tokens
// bound to pods on its own node.
func TestTokenRequestNodeRestriction(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	signer, err := satoken.NewSigner(key)
	require.NoError(t, err)
	ts := newTestServer(t, func(cfg *apiserver.Config) {
		cfg.Authenticator = tokenAuthenticator()
		cfg.ServiceAccountIssuer = &apiserver.ServiceAccountIssuer{Signer: signer, Issuer: testIssuer}
		nr, err := admission.NewNodeRestriction(admission.NodeRestrictionConfig{Pods: cfg.Store})
		require.NoError(t, err)
		chain, err := admission.NewChain(nil, []admission.Validator{nr})
		require.NoError(t, err)
		cfg.Admission = chain
	})
	ctx := t.Context()
	admin, nodeA := ts.clientFor(t, "admin-token"), ts.clientFor(t, "node-a-token")
	for _, p := range []struct{ name, node string }{{"on-a", "node-a"}, {"on-b", "node-b"}} {
		mustCreate(t, admin.CoreV1().Pods("default").Create, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.name},
			Spec: corev1.PodSpec{NodeName: p.node, ServiceAccountName: "default", Containers: []corev1.Container{{Name: "c", Image: "i"}}}})
	}
	request := func(pod string) error {
		var ref *authenticationv1.BoundObjectReference
		if pod != "" {
			ref = &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod}
		}
		_, err := nodeA.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default",
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref}}, metav1.CreateOptions{})
		return err
	}
	tests := []struct {
		name, pod, forbidden string
	}{
		{"its own pod", "on-a", ""},
		{"another node's pod", "on-b", "node requested token bound to a pod scheduled on a different node"},
		{"no bound pod", "", "node requested token not bound to a pod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := request(tt.pod)
			if tt.forbidden == "" {
				require.NoError(t, err)
				return
			}
			require.True(t, apierrors.IsForbidden(err), "%v", err)
			assert.ErrorContains(t, err, tt.forbidden)
		})
	}
	// An administrator is not a node: NodeRestriction leaves it alone.
	_, err = admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	require.NoError(t, err)
}
