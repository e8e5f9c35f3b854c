package satoken

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"
)

// Errors Verify wraps.
var (
	ErrMalformed = errors.New("malformed token")
	ErrSignature = errors.New("invalid signature")
	ErrExpired   = errors.New("token has expired")
	ErrNotYet    = errors.New("token is not valid yet")
)

// Leeway tolerates clock skew on exp and nbf, as kube-apiserver does.
const Leeway = time.Minute

// MaxTokenBytes bounds what Parse looks at; real tokens are ~1 KiB.
const MaxTokenBytes = 16 * 1024

// Claims are a service-account token's claims.
type Claims struct {
	Issuer    string   `json:"iss,omitempty"`
	Subject   string   `json:"sub,omitempty"`
	Audience  Audience `json:"aud,omitempty"`
	Expiry    int64    `json:"exp,omitempty"`
	NotBefore int64    `json:"nbf,omitempty"`
	IssuedAt  int64    `json:"iat,omitempty"`
	ID        string   `json:"jti,omitempty"`
	// Kubernetes is the private claim naming what the token is for.
	Kubernetes *PrivateClaims `json:"kubernetes.io,omitempty"`
}

// PrivateClaims is Kubernetes' "kubernetes.io" claim.
type PrivateClaims struct {
	Namespace      string `json:"namespace,omitempty"`
	ServiceAccount Ref    `json:"serviceaccount"`
	Pod            *Ref   `json:"pod,omitempty"`
	Secret         *Ref   `json:"secret,omitempty"`
	Node           *Ref   `json:"node,omitempty"`
	WarnAfter      int64  `json:"warnafter,omitempty"`
}

// Ref names an object by name and UID.
type Ref struct {
	Name string `json:"name"`
	UID  string `json:"uid"`
}

// Audience is "aud": one string or a list in JSON, a list here.
type Audience []string

// UnmarshalJSON accepts a string or an array of strings.
func (a *Audience) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*a = Audience{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("aud: %w", err)
	}
	*a = many
	return nil
}

type header struct {
	Alg string `json:"alg"`
	Kid string `json:"kid,omitempty"`
	Typ string `json:"typ,omitempty"`
}

// Signer signs tokens with one key.
type Signer struct {
	key crypto.Signer
	alg string
	kid string
}

// NewSigner returns a Signer for an ECDSA P-256 (ES256) or RSA (RS256)
// key.
func NewSigner(key crypto.Signer) (*Signer, error) {
	alg, err := algFor(key.Public())
	if err != nil {
		return nil, err
	}
	kid, err := KeyID(key.Public())
	if err != nil {
		return nil, err
	}
	return &Signer{key: key, alg: alg, kid: kid}, nil
}

// PublicKey is the key Verify needs.
func (s *Signer) PublicKey() crypto.PublicKey { return s.key.Public() }

// KeyID is the "kid" of a key: the unpadded base64url SHA-256 of its PKIX
// encoding, as kube-apiserver derives it.
func KeyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("satoken: %w", err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

func algFor(pub crypto.PublicKey) (string, error) {
	switch k := pub.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return "", fmt.Errorf("satoken: ECDSA keys must use P-256, not %s", k.Curve.Params().Name)
		}
		return "ES256", nil
	case *rsa.PublicKey:
		return "RS256", nil
	}
	return "", fmt.Errorf("satoken: unsupported key type %T", pub)
}

// Sign encodes and signs c.
func (s *Signer) Sign(c *Claims) (string, error) {
	h, err := json.Marshal(header{Alg: s.alg, Kid: s.kid})
	if err != nil {
		return "", err
	}
	p, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("satoken: encoding claims: %w", err)
	}
	input := b64(h) + "." + b64(p)
	digest := sha256.Sum256([]byte(input))
	var sig []byte
	switch k := s.key.(type) {
	case *ecdsa.PrivateKey:
		r, ss, err := ecdsa.Sign(rand.Reader, k, digest[:])
		if err != nil {
			return "", fmt.Errorf("satoken: signing: %w", err)
		}
		sig = make([]byte, 64)
		r.FillBytes(sig[:32])
		ss.FillBytes(sig[32:])
	default:
		if sig, err = s.key.Sign(rand.Reader, digest[:], crypto.SHA256); err != nil {
			return "", fmt.Errorf("satoken: signing: %w", err)
		}
	}
	return input + "." + b64(sig), nil
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// LooksLikeJWT reports whether token has the shape of a compact JWS with
// an "iss" claim — cheap enough to decide whether a token is for this
// authenticator before verifying it.
func LooksLikeJWT(token string) bool {
	c, _, _, err := parse(token)
	return err == nil && c.Issuer != ""
}

// parse splits and decodes token without verifying it.
func parse(token string) (*Claims, *header, [][]byte, error) {
	if len(token) > MaxTokenBytes {
		return nil, nil, nil, fmt.Errorf("%w: longer than %d bytes", ErrMalformed, MaxTokenBytes)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, nil, nil, fmt.Errorf("%w: want 3 parts, got %d", ErrMalformed, len(parts))
	}
	raw := make([][]byte, 3)
	for i, p := range parts {
		b, err := base64.RawURLEncoding.DecodeString(p)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%w: part %d: %w", ErrMalformed, i+1, err)
		}
		raw[i] = b
	}
	var h header
	if err := json.Unmarshal(raw[0], &h); err != nil {
		return nil, nil, nil, fmt.Errorf("%w: header: %w", ErrMalformed, err)
	}
	var c Claims
	if err := json.Unmarshal(raw[1], &c); err != nil {
		return nil, nil, nil, fmt.Errorf("%w: claims: %w", ErrMalformed, err)
	}
	return &c, &h, raw, nil
}

// Verify checks token's signature against keys and its time claims
// against now (with Leeway), and returns its claims.
func Verify(token string, keys []crypto.PublicKey, now time.Time) (*Claims, error) {
	c, h, raw, err := parse(token)
	if err != nil {
		return nil, err
	}
	input := token[:strings.LastIndexByte(token, '.')]
	digest := sha256.Sum256([]byte(input))
	verified := false
	for _, k := range keys {
		if verifyOne(h.Alg, k, digest[:], raw[2]) {
			verified = true
			break
		}
	}
	if !verified {
		return nil, ErrSignature
	}
	if c.Expiry == 0 {
		return nil, fmt.Errorf("%w: no exp claim", ErrMalformed)
	}
	if now.After(time.Unix(c.Expiry, 0).Add(Leeway)) {
		return nil, ErrExpired
	}
	if c.NotBefore != 0 && now.Add(Leeway).Before(time.Unix(c.NotBefore, 0)) {
		return nil, ErrNotYet
	}
	return c, nil
}

func verifyOne(alg string, key crypto.PublicKey, digest, sig []byte) bool {
	switch k := key.(type) {
	case *ecdsa.PublicKey:
		if alg != "ES256" || len(sig) != 64 || k.Curve != elliptic.P256() {
			return false
		}
		r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
		return ecdsa.Verify(k, digest, r, s)
	case *rsa.PublicKey:
		return alg == "RS256" && rsa.VerifyPKCS1v15(k, crypto.SHA256, digest, sig) == nil
	}
	return false
}
