package satoken_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/podkit/podkit/apiserver/auth/satoken"
)

func claims(now time.Time) *satoken.Claims {
	return &satoken.Claims{
		Issuer: "https://kubernetes.default.svc.cluster.local", Subject: "system:serviceaccount:default:default",
		Audience: satoken.Audience{"api"}, IssuedAt: now.Unix(), NotBefore: now.Unix(), Expiry: now.Add(time.Hour).Unix(), ID: "j1",
		Kubernetes: &satoken.PrivateClaims{Namespace: "default", ServiceAccount: satoken.Ref{Name: "default", UID: "sa-uid"},
			Pod: &satoken.Ref{Name: "p", UID: "pod-uid"}},
	}
}

func TestSignAndVerify(t *testing.T) {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	rs, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	now := time.Unix(1_800_000_000, 0)
	for name, key := range map[string]crypto.Signer{"ES256": ec, "RS256": rs} {
		t.Run(name, func(t *testing.T) {
			s, err := satoken.NewSigner(key)
			require.NoError(t, err)
			tok, err := s.Sign(claims(now))
			require.NoError(t, err)
			assert.True(t, satoken.LooksLikeJWT(tok))
			c, err := satoken.Verify(tok, []crypto.PublicKey{other.Public(), key.Public()}, now)
			require.NoError(t, err)
			assert.Equal(t, "pod-uid", c.Kubernetes.Pod.UID)
			assert.Equal(t, satoken.Audience{"api"}, c.Audience)

			_, err = satoken.Verify(tok, []crypto.PublicKey{other.Public()}, now)
			assert.ErrorIs(t, err, satoken.ErrSignature, "a key that did not sign it")
			_, err = satoken.Verify(tok, []crypto.PublicKey{key.Public()}, now.Add(2*time.Hour))
			assert.ErrorIs(t, err, satoken.ErrExpired)
			_, err = satoken.Verify(tok, []crypto.PublicKey{key.Public()}, now.Add(-time.Hour))
			assert.ErrorIs(t, err, satoken.ErrNotYet)

			// Forged: claims changed after signing.
			parts := strings.Split(tok, ".")
			forged := claims(now)
			forged.Subject = "system:serviceaccount:kube-system:admin"
			other, _ := satoken.NewSigner(other)
			ft, _ := other.Sign(forged)
			_, err = satoken.Verify(parts[0]+"."+strings.Split(ft, ".")[1]+"."+parts[2], []crypto.PublicKey{key.Public()}, now)
			assert.ErrorIs(t, err, satoken.ErrSignature)
		})
	}
}

func TestAlgorithmConfusionIsRejected(t *testing.T) {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	now := time.Now()
	s, err := satoken.NewSigner(ec)
	require.NoError(t, err)
	tok, err := s.Sign(claims(now))
	require.NoError(t, err)
	parts := strings.Split(tok, ".")
	for _, alg := range []string{"none", "HS256", "RS256"} {
		h := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"` + alg + `"}`))
		_, err := satoken.Verify(h+"."+parts[1]+"."+parts[2], []crypto.PublicKey{ec.Public()}, now)
		assert.ErrorIs(t, err, satoken.ErrSignature, alg)
		_, err = satoken.Verify(h+"."+parts[1]+".", []crypto.PublicKey{ec.Public()}, now)
		assert.ErrorIs(t, err, satoken.ErrSignature, alg)
	}
}

func TestMalformed(t *testing.T) {
	for _, tok := range []string{"", "a.b", "a.b.c.d", "!!.e30.", strings.Repeat("a", satoken.MaxTokenBytes+1)} {
		_, err := satoken.Verify(tok, nil, time.Now())
		assert.ErrorIs(t, err, satoken.ErrMalformed, tok)
		assert.False(t, satoken.LooksLikeJWT(tok))
	}
}

func TestAudienceAsString(t *testing.T) {
	var c satoken.Claims
	require.NoError(t, jsonUnmarshal(`{"aud":"one"}`, &c))
	assert.Equal(t, satoken.Audience{"one"}, c.Audience)
	require.NoError(t, jsonUnmarshal(`{"aud":["a","b"]}`, &c))
	assert.Equal(t, satoken.Audience{"a", "b"}, c.Audience)
}
