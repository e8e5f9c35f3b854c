// Package encryption encrypts objects at rest: part of step 4 of the birth
// sequence, between the encoded object and the bytes a durable backend
// (etcd, bbolt) writes. A Secret's data is then unreadable to whoever
// copies the etcd data directory, a backup or the bbolt file.
//
// It reads kube-apiserver's EncryptionConfiguration
// (apiserver.config.k8s.io/v1, --encryption-provider-config) and writes
// values in Kubernetes' format, so data and configuration carry over:
//
//   - providers aesgcm (required by podkit's scope), aescbc and identity;
//     per resource, the first provider encrypts new writes and every
//     provider listed decrypts, chosen by the value's prefix
//     "k8s:enc:<provider>:v1:<key name>:" — so keys rotate by adding the
//     new key first, rewriting, then removing the old one;
//   - AES-GCM values are prefix + 12-byte random nonce + ciphertext and
//     tag; the storage key is authenticated with the value (kube-apiserver
//     authenticates the etcd key), so a value copied under another key does
//     not decrypt;
//   - data that is not encrypted is only read when identity is listed, as
//     in Kubernetes (list identity last while migrating).
//
// Config implements the etcd store's Transformer; Codec wraps a
// runtime.Codec for backends that only see objects (bbolt), where the
// resource comes from the object's type and no key is authenticated.
package encryption
