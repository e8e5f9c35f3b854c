package encryption

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
)

// ErrDecrypt: a value that no configured provider can read.
var ErrDecrypt = errors.New("cannot decrypt stored value")

// provider encrypts and decrypts values under one key.
type provider interface {
	// prefix marks the provider's values; "" for identity.
	prefix() string
	seal(plain, authData []byte) ([]byte, error)
	// open decrypts a value with the prefix already removed.
	open(sealed, authData []byte) ([]byte, error)
}

// identity stores values unchanged.
type identity struct{}

func (identity) prefix() string                        { return "" }
func (identity) seal(plain, _ []byte) ([]byte, error)  { return plain, nil }
func (identity) open(sealed, _ []byte) ([]byte, error) { return sealed, nil }

// aesGCM is Kubernetes' aesgcm provider with one key.
type aesGCM struct {
	pfx  string
	aead cipher.AEAD
}

func newAESGCM(name string, key []byte) (provider, error) {
	block, err := newBlock(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &aesGCM{pfx: "k8s:enc:aesgcm:v1:" + name + ":", aead: aead}, nil
}

func (p *aesGCM) prefix() string { return p.pfx }

func (p *aesGCM) seal(plain, authData []byte) ([]byte, error) {
	out := make([]byte, len(p.pfx)+p.aead.NonceSize(), len(p.pfx)+p.aead.NonceSize()+len(plain)+p.aead.Overhead())
	copy(out, p.pfx)
	nonce := out[len(p.pfx):]
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("aesgcm nonce: %w", err)
	}
	return p.aead.Seal(out, nonce, plain, authData), nil
}

func (p *aesGCM) open(sealed, authData []byte) ([]byte, error) {
	n := p.aead.NonceSize()
	if len(sealed) < n+p.aead.Overhead() {
		return nil, fmt.Errorf("%w: aesgcm value too short", ErrDecrypt)
	}
	plain, err := p.aead.Open(nil, sealed[:n], sealed[n:], authData)
	if err != nil {
		return nil, fmt.Errorf("%w: aesgcm: %w", ErrDecrypt, err)
	}
	return plain, nil
}

// aesCBC is Kubernetes' aescbc provider with one key: a random IV, then
// the PKCS#7-padded plaintext in CBC mode (no authentication).
type aesCBC struct {
	pfx   string
	block cipher.Block
}

func newAESCBC(name string, key []byte) (provider, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("aescbc keys are 32 bytes, got %d", len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return &aesCBC{pfx: "k8s:enc:aescbc:v1:" + name + ":", block: block}, nil
}

func (p *aesCBC) prefix() string { return p.pfx }

func (p *aesCBC) seal(plain, _ []byte) ([]byte, error) {
	bs := aes.BlockSize
	pad := bs - len(plain)%bs
	out := make([]byte, len(p.pfx)+bs+len(plain)+pad)
	copy(out, p.pfx)
	iv := out[len(p.pfx) : len(p.pfx)+bs]
	if _, err := rand.Read(iv); err != nil {
		return nil, fmt.Errorf("aescbc iv: %w", err)
	}
	body := out[len(p.pfx)+bs:]
	copy(body, plain)
	copy(body[len(plain):], bytes.Repeat([]byte{byte(pad)}, pad))
	cipher.NewCBCEncrypter(p.block, iv).CryptBlocks(body, body)
	return out, nil
}

func (p *aesCBC) open(sealed, _ []byte) ([]byte, error) {
	bs := aes.BlockSize
	if len(sealed) < 2*bs || len(sealed)%bs != 0 {
		return nil, fmt.Errorf("%w: aescbc value has a bad length", ErrDecrypt)
	}
	iv, body := sealed[:bs], append([]byte(nil), sealed[bs:]...)
	cipher.NewCBCDecrypter(p.block, iv).CryptBlocks(body, body)
	pad := int(body[len(body)-1])
	if pad == 0 || pad > bs || pad > len(body) || !bytes.Equal(body[len(body)-pad:], bytes.Repeat([]byte{byte(pad)}, pad)) {
		return nil, fmt.Errorf("%w: aescbc: bad padding", ErrDecrypt)
	}
	return body[:len(body)-pad], nil
}

func newBlock(key []byte) (cipher.Block, error) {
	switch len(key) {
	case 16, 24, 32:
		return aes.NewCipher(key)
	}
	return nil, fmt.Errorf("AES keys are 16, 24 or 32 bytes, got %d", len(key))
}
