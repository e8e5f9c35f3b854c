package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// LoadOrCreateCA reads the CA at certPath and keyPath, or creates one
// there when neither exists. A half-present CA is an error: replacing it
// would silently invalidate every certificate handed out.
func LoadOrCreateCA(certPath, keyPath, commonName string, now func() time.Time) (*CA, error) {
	if now == nil {
		now = time.Now
	}
	certOK, keyOK := exists(certPath), exists(keyPath)
	if certOK && keyOK {
		kp, err := LoadKeyPair(certPath, keyPath)
		if err != nil {
			return nil, err
		}
		if !kp.Cert.IsCA {
			return nil, fmt.Errorf("pki: %s is not a CA certificate", certPath)
		}
		return &CA{Cert: kp.Cert, Key: kp.Key, CertPEM: kp.CertPEM, now: now}, nil
	}
	if certOK || keyOK {
		return nil, fmt.Errorf("pki: only one of %s and %s exists; restore the other or remove both to start a new CA", certPath, keyPath)
	}
	ca, err := NewCA(commonName, now)
	if err != nil {
		return nil, err
	}
	keyPEM, err := EncodeKey(ca.Key)
	if err != nil {
		return nil, err
	}
	if err := WriteFile(keyPath, keyPEM); err != nil {
		return nil, err
	}
	if err := WriteFile(certPath, ca.CertPEM); err != nil {
		return nil, err
	}
	return ca, nil
}

// LoadOrIssue reuses the key pair at certPath and keyPath when the CA
// Covers it for spec, and otherwise issues a new one (keeping an existing
// key) and writes it there.
func (ca *CA) LoadOrIssue(certPath, keyPath string, spec CertSpec) (*KeyPair, error) {
	var key crypto.Signer
	if kp, err := LoadKeyPair(certPath, keyPath); err == nil {
		if ca.Covers(kp.Cert, spec) {
			return kp, nil
		}
		key = kp.Key
	} else if data, err := os.ReadFile(keyPath); err == nil {
		key, _ = ParsePrivateKeyPEM(data)
	}
	if key == nil {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("pki: key for %q: %w", spec.CommonName, err)
		}
		key = k
	}
	kp, err := ca.sign(spec, key)
	if err != nil {
		return nil, err
	}
	if err := WriteFile(keyPath, kp.KeyPEM); err != nil {
		return nil, err
	}
	if err := WriteFile(certPath, kp.CertPEM); err != nil {
		return nil, err
	}
	return kp, nil
}

// LoadOrCreateSigningKey reads the private key at keyPath or creates an
// ECDSA P-256 key there; pubPath, when set, receives its public half.
func LoadOrCreateSigningKey(keyPath, pubPath string) (crypto.Signer, error) {
	var key crypto.Signer
	if data, err := os.ReadFile(keyPath); err == nil {
		if key, err = ParsePrivateKeyPEM(data); err != nil {
			return nil, fmt.Errorf("%s: %w", keyPath, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("pki: %w", err)
	} else {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("pki: signing key: %w", err)
		}
		pemData, err := EncodeKey(k)
		if err != nil {
			return nil, err
		}
		if err := WriteFile(keyPath, pemData); err != nil {
			return nil, err
		}
		key = k
	}
	if pubPath != "" {
		pub, err := EncodePublicKey(key.Public())
		if err != nil {
			return nil, err
		}
		if err := WriteFile(pubPath, pub); err != nil {
			return nil, err
		}
	}
	return key, nil
}

// WriteFile writes data atomically with mode 0600, creating the directory
// with mode 0700.
func WriteFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("pki: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("pki: writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("pki: writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
