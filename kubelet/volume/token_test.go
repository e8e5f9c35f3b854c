package volume

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// tokenAPI answers serviceaccounts/<name>/token on a fake clientset with
// numbered tokens, recording the requests.
type tokenAPI struct {
	mu       sync.Mutex
	clock    *fixedClock
	requests []*authenticationv1.TokenRequest
	sa       []string
	fail     error
}

func (a *tokenAPI) install(c *fake.Clientset) {
	c.PrependReactor("create", "serviceaccounts", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "token" {
			return false, nil, nil
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.fail != nil {
			return true, nil, a.fail
		}
		req := action.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		a.requests = append(a.requests, req)
		a.sa = append(a.sa, action.(k8stesting.CreateActionImpl).Name)
		req.Status.Token = fmt.Sprintf("token-%d", len(a.requests))
		req.Status.ExpirationTimestamp = metav1.NewTime(a.clock.now().Add(time.Duration(*req.Spec.ExpirationSeconds) * time.Second))
		return true, req, nil
	})
}

func (a *tokenAPI) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.requests)
}

func TestTokenRequester(t *testing.T) {
	ctx := context.Background()
	clock := &fixedClock{t: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	client := fake.NewClientset()
	api := &tokenAPI{clock: clock}
	api.install(client)
	r := NewTokenRequester(client, clock.now)

	pod := testPod()
	pod.Spec.ServiceAccountName = "builder"
	proj := &corev1.ServiceAccountTokenProjection{Path: "token", Audience: "vault", ExpirationSeconds: ptr.To[int64](1000)}

	tok, exp, err := r.Token(ctx, pod, proj)
	require.NoError(t, err)
	assert.Equal(t, "token-1", tok)
	assert.Equal(t, clock.now().Add(1000*time.Second), exp)
	require.Equal(t, 1, api.count())
	req := api.requests[0]
	assert.Equal(t, "builder", api.sa[0])
	assert.Equal(t, []string{"vault"}, req.Spec.Audiences)
	assert.Equal(t, int64(1000), *req.Spec.ExpirationSeconds)
	assert.Equal(t, &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "web", UID: "uid-1234"}, req.Spec.BoundObjectRef)

	// Cached until 80% of the lifetime has passed.
	clock.advance(799 * time.Second)
	tok, _, err = r.Token(ctx, pod, proj)
	require.NoError(t, err)
	assert.Equal(t, "token-1", tok)
	clock.advance(time.Second)
	tok, _, err = r.Token(ctx, pod, proj)
	require.NoError(t, err)
	assert.Equal(t, "token-2", tok)

	// A failed renewal keeps the still valid token.
	clock.advance(850 * time.Second)
	api.fail = errors.New("apiserver down")
	tok, _, err = r.Token(ctx, pod, proj)
	require.NoError(t, err)
	assert.Equal(t, "token-2", tok)
	// ...but not an expired one.
	clock.advance(200 * time.Second)
	_, _, err = r.Token(ctx, pod, proj)
	require.ErrorContains(t, err, "failed to fetch token for service account default/builder: apiserver down")
	api.fail = nil

	// Another audience is another token; Forget drops the pod's tokens.
	other := &corev1.ServiceAccountTokenProjection{Path: "t2"}
	tok, _, err = r.Token(ctx, pod, other)
	require.NoError(t, err)
	assert.Equal(t, "token-3", tok)
	assert.Nil(t, api.requests[2].Spec.Audiences, "no audience: the API server's default")
	assert.Equal(t, int64(3600), *api.requests[2].Spec.ExpirationSeconds, "expirationSeconds defaults to an hour")
	r.Forget(pod.UID)
	tok, _, err = r.Token(ctx, pod, other)
	require.NoError(t, err)
	assert.Equal(t, "token-4", tok)
}

func TestTokenRequesterDefaults(t *testing.T) {
	clock := &fixedClock{t: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}
	client := fake.NewClientset()
	api := &tokenAPI{clock: clock}
	api.install(client)
	r := NewTokenRequester(client, clock.now)
	_, _, err := r.Token(context.Background(), testPod(), &corev1.ServiceAccountTokenProjection{Path: "t", ExpirationSeconds: ptr.To[int64](7 * 24 * 3600)})
	require.NoError(t, err)
	assert.Equal(t, "default", api.sa[0], "the default service account")

	// Long-lived tokens are renewed after a day anyway.
	clock.advance(24 * time.Hour)
	tok, _, err := r.Token(context.Background(), testPod(), &corev1.ServiceAccountTokenProjection{Path: "t", ExpirationSeconds: ptr.To[int64](7 * 24 * 3600)})
	require.NoError(t, err)
	assert.Equal(t, "token-2", tok)

	_, _, err = NewTokenRequester(nil, nil).Token(context.Background(), testPod(), &corev1.ServiceAccountTokenProjection{})
	require.ErrorIs(t, err, ErrNoClient)
}
