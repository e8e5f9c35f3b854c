package satoken_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"testing"
	"time"

	"github.com/podkit/podkit/apiserver/auth/satoken"
)

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// FuzzVerify: bearer tokens come straight from the network; no token may
// panic the parser or verify without the key's signature.
func FuzzVerify(f *testing.F) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	s, err := satoken.NewSigner(key)
	if err != nil {
		f.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	tok, err := s.Sign(claims(now))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(tok)
	f.Add("eyJhbGciOiJub25lIn0.e30.")
	f.Add("a.b.c")
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	f.Fuzz(func(t *testing.T, token string) {
		satoken.LooksLikeJWT(token)
		if _, err := satoken.Verify(token, []crypto.PublicKey{other.Public()}, now); err == nil {
			t.Fatalf("token verified with a key that never signed anything: %q", token)
		}
		_, _ = satoken.Verify(token, []crypto.PublicKey{key.Public()}, now)
	})
}
