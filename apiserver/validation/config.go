package validation

import (
	"encoding/json"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxConfigSize is the limit on the total size of a ConfigMap's or Secret's
// values (1 MiB).
const maxConfigSize = corev1.MaxSecretSize

const immutableWhenSetMsg = "field is immutable when `immutable` is set"

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func validateConfigKey(key string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsConfigMapKey(key) {
		errs = append(errs, field.Invalid(p, key, msg))
	}
	return errs
}

// validateConfigMap: valid keys, no key in both data and binaryData, at most
// 1 MiB of values.
func validateConfigMap(cm *corev1.ConfigMap) field.ErrorList {
	errs := validateObjectMeta(&cm.ObjectMeta, true, nameIsDNSSubdomain, field.NewPath("metadata"))
	total := 0
	for _, k := range sortedKeys(cm.Data) {
		p := field.NewPath("data").Key(k)
		errs = append(errs, validateConfigKey(k, p)...)
		if _, dup := cm.BinaryData[k]; dup {
			errs = append(errs, field.Invalid(p, k, "duplicate of key present in binaryData"))
		}
		total += len(cm.Data[k])
	}
	for _, k := range sortedKeys(cm.BinaryData) {
		errs = append(errs, validateConfigKey(k, field.NewPath("binaryData").Key(k))...)
		total += len(cm.BinaryData[k])
	}
	if total > maxConfigSize {
		errs = append(errs, field.TooLong(field.NewPath(""), "", maxConfigSize))
	}
	return errs
}

// validateConfigMapUpdate: once immutable is true, it stays true and the data
// does not change.
func validateConfigMapUpdate(cm, old *corev1.ConfigMap) field.ErrorList {
	errs := validateObjectMetaUpdate(&cm.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	if old.Immutable != nil && *old.Immutable {
		if cm.Immutable == nil || !*cm.Immutable {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableWhenSetMsg))
		}
		if !reflect.DeepEqual(cm.Data, old.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), immutableWhenSetMsg))
		}
		if !reflect.DeepEqual(cm.BinaryData, old.BinaryData) {
			errs = append(errs, field.Forbidden(field.NewPath("binaryData"), immutableWhenSetMsg))
		}
	}
	return append(errs, validateConfigMap(cm)...)
}

// validateSecret: valid keys, at most 1 MiB, and the keys each type requires.
// stringData is expected to have been merged into data already.
func validateSecret(s *corev1.Secret) field.ErrorList {
	errs := validateObjectMeta(&s.ObjectMeta, true, nameIsDNSSubdomain, field.NewPath("metadata"))
	dataPath := field.NewPath("data")
	total := 0
	for _, k := range sortedKeys(s.Data) {
		errs = append(errs, validateConfigKey(k, dataPath.Key(k))...)
		total += len(s.Data[k])
	}
	for _, k := range sortedKeys(s.StringData) {
		if _, inData := s.Data[k]; !inData {
			errs = append(errs, validateConfigKey(k, field.NewPath("stringData").Key(k))...)
			total += len(s.StringData[k])
		}
	}
	if total > maxConfigSize {
		errs = append(errs, field.TooLong(dataPath, "", maxConfigSize))
	}
	has := func(key string) bool {
		_, ok := s.Data[key]
		if !ok {
			_, ok = s.StringData[key]
		}
		return ok
	}
	value := func(key string) []byte {
		if v, ok := s.Data[key]; ok {
			return v
		}
		return []byte(s.StringData[key])
	}
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg:
		errs = append(errs, validateJSONKey(has, value, corev1.DockerConfigKey, dataPath)...)
	case corev1.SecretTypeDockerConfigJson:
		errs = append(errs, validateJSONKey(has, value, corev1.DockerConfigJsonKey, dataPath)...)
	case corev1.SecretTypeBasicAuth:
		if !has(corev1.BasicAuthUsernameKey) && !has(corev1.BasicAuthPasswordKey) {
			errs = append(errs, field.Required(dataPath.Key(corev1.BasicAuthUsernameKey), ""),
				field.Required(dataPath.Key(corev1.BasicAuthPasswordKey), ""))
		}
	case corev1.SecretTypeSSHAuth:
		if len(value(corev1.SSHAuthPrivateKey)) == 0 {
			errs = append(errs, field.Required(dataPath.Key(corev1.SSHAuthPrivateKey), ""))
		}
	case corev1.SecretTypeTLS:
		if !has(corev1.TLSCertKey) {
			errs = append(errs, field.Required(dataPath.Key(corev1.TLSCertKey), ""))
		}
		if !has(corev1.TLSPrivateKeyKey) {
			errs = append(errs, field.Required(dataPath.Key(corev1.TLSPrivateKeyKey), ""))
		}
	}
	return errs
}

// validateJSONKey requires key to be present and hold a JSON object.
func validateJSONKey(has func(string) bool, value func(string) []byte, key string, dataPath *field.Path) field.ErrorList {
	if !has(key) {
		return field.ErrorList{field.Required(dataPath.Key(key), "")}
	}
	if err := json.Unmarshal(value(key), &map[string]any{}); err != nil {
		return field.ErrorList{field.Invalid(dataPath.Key(key), "<secret contents redacted>", err.Error())}
	}
	return nil
}

// validateSecretUpdate: the type never changes; once immutable is true, it
// stays true and the data does not change.
func validateSecretUpdate(s, old *corev1.Secret) field.ErrorList {
	errs := validateObjectMetaUpdate(&s.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, validateImmutable(s.Type, old.Type, field.NewPath("type"))...)
	if old.Immutable != nil && *old.Immutable {
		if s.Immutable == nil || !*s.Immutable {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableWhenSetMsg))
		}
		if !reflect.DeepEqual(s.Data, old.Data) || len(s.StringData) > 0 {
			errs = append(errs, field.Forbidden(field.NewPath("data"), immutableWhenSetMsg))
		}
	}
	return append(errs, validateSecret(s)...)
}

func validateServiceAccount(sa *corev1.ServiceAccount) field.ErrorList {
	return validateObjectMeta(&sa.ObjectMeta, true, nameIsDNSSubdomain, field.NewPath("metadata"))
}

func validateServiceAccountUpdate(sa, old *corev1.ServiceAccount) field.ErrorList {
	errs := validateObjectMetaUpdate(&sa.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, validateServiceAccount(sa)...)
}
