package app_test

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podkit/podkit/apiserver/app"
	"github.com/podkit/podkit/apiserver/auth/pki"
)

// runSecure starts app.New with the secure defaults on dir.
func runSecure(t *testing.T, dir string, mutate func(*app.Options)) (*app.APIServer, string) {
	t.Helper()
	opts := app.DefaultOptions()
	opts.Store, opts.Port, opts.Logger, opts.DataDir = app.StoreMemory, 0, slog.New(slog.DiscardHandler), dir
	opts.KubeconfigPath = filepath.Join(dir, "kubeconfig")
	if mutate != nil {
		mutate(&opts)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := app.New(ctx, opts)
	if err != nil {
		cancel()
		require.NoError(t, err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() { cancel(); assert.NoError(t, <-done) })
	return srv, opts.KubeconfigPath
}

func TestSecureByDefault(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	require.NoError(t, os.WriteFile(tokens, []byte("t0ken,jane,42,\"dev,ops\"\n"), 0o600))
	srv, kubeconfig := runSecure(t, dir, func(o *app.Options) { o.Secure.TokenAuthFile = tokens })
	require.True(t, strings.HasPrefix(srv.URL, "https://"), srv.URL)
	require.NotNil(t, srv.PKI)
	ctx := t.Context()

	// The written kubeconfig: https, the CA embedded, the admin
	// certificate (kubernetes-admin in system:masters).
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	assert.Equal(t, srv.URL, rc.Host)
	assert.NotEmpty(t, rc.CAData)
	admin, err := kubernetes.NewForConfig(rc)
	require.NoError(t, err)
	who, err := admin.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "kubernetes-admin", who.Status.UserInfo.Username)
	assert.Equal(t, []string{"system:masters", "system:authenticated"}, who.Status.UserInfo.Groups)

	// Every namespace has the CA for pods' token volumes.
	cm, err := admin.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, string(srv.PKI.CA.CertPEM), cm.Data["ca.crt"])
	_, err = admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.CoreV1().ConfigMaps("team").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
	assert.NoError(t, err, "a new namespace gets it at once")

	// Without credentials, or with the wrong CA's certificate: 401.
	status := func(rc *rest.Config) int {
		hc, err := rest.HTTPClientFor(rc)
		require.NoError(t, err)
		resp, err := hc.Get(srv.URL + "/api/v1/namespaces")
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	anon := rest.AnonymousClientConfig(rc)
	assert.Equal(t, http.StatusUnauthorized, status(anon))
	rogueCA, err := pki.NewCA("rogue", nil)
	require.NoError(t, err)
	rogue, err := rogueCA.Issue(pki.CertSpec{CommonName: "kubernetes-admin", Organization: []string{"system:masters"}, Client: true})
	require.NoError(t, err)
	forged := rest.AnonymousClientConfig(rc)
	forged.CertData, forged.KeyData = rogue.CertPEM, rogue.KeyPEM
	assert.Equal(t, http.StatusUnauthorized, status(forged))
	withToken := rest.AnonymousClientConfig(rc)
	withToken.BearerToken = "t0ken"
	c, err := kubernetes.NewForConfig(withToken)
	require.NoError(t, err)
	who, err = c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	require.NoError(t, err)
	assert.Equal(t, "jane", who.Status.UserInfo.Username)

	// A client that does not trust the cluster CA cannot talk to it.
	_, err = (&http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{}}}).Get(srv.URL + "/version")
	assert.ErrorContains(t, err, "certificate")
}

func TestPKIReusedOnRestart(t *testing.T) {
	dir := t.TempDir()
	first := func() []byte {
		srv, _ := runSecure(t, dir, nil)
		return srv.PKI.CA.CertPEM
	}()
	srv, kubeconfig := runSecure(t, dir, func(o *app.Options) { o.KubeconfigPath = filepath.Join(dir, "again") })
	assert.Equal(t, first, srv.PKI.CA.CertPEM, "the same CA after a restart")
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	assert.Equal(t, first, rc.CAData)
	fi, err := os.Stat(filepath.Join(dir, "pki", "ca.key"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
}

func TestInsecureServing(t *testing.T) {
	srv, _ := runSecure(t, t.TempDir(), func(o *app.Options) { o.Secure.Insecure = true })
	assert.True(t, strings.HasPrefix(srv.URL, "http://"))
	assert.Nil(t, srv.PKI)
	resp, err := http.Get(srv.URL + "/api/v1/namespaces")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}
