package serviceaccount_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podkit/podkit/controller"
	"github.com/podkit/podkit/controller/serviceaccount"
)

func runController(t *testing.T, c *cluster, cfg serviceaccount.Config) {
	c.run(t, map[string]controller.NewFunc{
		serviceaccount.Name: func(ctx *controller.Context) (controller.Controller, error) { return serviceaccount.New(ctx, cfg) },
	})
}

func accountExists(c *cluster, ns, name string) func(ctx context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) {
		_, err := c.client.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	}
}

// TestRecreatesDeletedDefault: the default account of a new namespace and
// of the bootstrap namespaces comes back after deletion, again and again.
func TestRecreatesDeletedDefault(t *testing.T) {
	c := newCluster(t)
	runController(t, c, serviceaccount.Config{})
	ctx := context.Background()
	_, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	eventually(t, "default account in team-a", accountExists(c, "team-a", "default"))

	for _, ns := range []string{"team-a", "team-a", metav1.NamespaceDefault, metav1.NamespaceSystem} {
		old, err := c.client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		require.NoError(t, err)
		require.NoError(t, c.client.CoreV1().ServiceAccounts(ns).Delete(ctx, "default", metav1.DeleteOptions{}))
		eventually(t, "default account recreated in "+ns, func(ctx context.Context) (bool, error) {
			sa, err := c.client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil && sa.UID != old.UID, err
		})
	}
}

// TestConfiguredAccounts: every configured account is created, with its
// labels; an account that already exists is left alone (idempotent).
func TestConfiguredAccounts(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	_, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	existing, err := c.client.CoreV1().ServiceAccounts("apps").Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: "builder", Labels: map[string]string{"mine": "yes"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	runController(t, c, serviceaccount.Config{ServiceAccounts: []corev1.ServiceAccount{
		{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "builder", Labels: map[string]string{"managed": "true"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Labels: map[string]string{"managed": "true"}}},
	}})
	eventually(t, "deployer account", accountExists(c, "apps", "deployer"))
	sa, err := c.client.CoreV1().ServiceAccounts("apps").Get(ctx, "deployer", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "true", sa.Labels["managed"])
	b, err := c.client.CoreV1().ServiceAccounts("apps").Get(ctx, "builder", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, existing.UID, b.UID, "an existing account is not replaced")
	assert.Equal(t, map[string]string{"mine": "yes"}, b.Labels)
}

// TestTerminatingNamespaceIsLeftAlone: once a namespace is being deleted,
// a deleted default account is not recreated.
func TestTerminatingNamespaceIsLeftAlone(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	_, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "going"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	// A second namespace whose account is recreated proves the controller
	// is running and has seen the deletion before we look at "going".
	_, err = c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "staying"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	runController(t, c, serviceaccount.Config{})
	eventually(t, "default account in going", accountExists(c, "going", "default"))

	// No namespace controller runs: the namespace stays Terminating.
	require.NoError(t, c.client.CoreV1().Namespaces().Delete(ctx, "going", metav1.DeleteOptions{}))
	require.NoError(t, c.client.CoreV1().ServiceAccounts("going").Delete(ctx, "default", metav1.DeleteOptions{}))
	require.NoError(t, c.client.CoreV1().ServiceAccounts("staying").Delete(ctx, "default", metav1.DeleteOptions{}))
	eventually(t, "default account recreated in staying", accountExists(c, "staying", "default"))
	_, err = c.client.CoreV1().ServiceAccounts("going").Get(ctx, "default", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "account in a terminating namespace must stay deleted: %v", err)
}

func TestNewRejectsBadConfig(t *testing.T) {
	c := newCluster(t)
	m, err := controller.NewManager(controller.ManagerConfig{Client: c.client})
	require.NoError(t, err)
	for name, cfg := range map[string]serviceaccount.Config{
		"unnamed":   {ServiceAccounts: []corev1.ServiceAccount{{}}},
		"duplicate": {ServiceAccounts: []corev1.ServiceAccount{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "a"}}}},
	} {
		_, err := serviceaccount.New(m.Context(), cfg)
		assert.Error(t, err, name)
	}
	_, err = serviceaccount.New(nil, serviceaccount.Config{})
	assert.Error(t, err)
}
