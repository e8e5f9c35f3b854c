// Package scheme builds the runtime.Scheme and codecs podkit serves: every
// built-in group of k8s.io/api (the object model), the meta.k8s.io types
// (Table, PartialObjectMetadata, options) and a storage codec. Nothing here
// is global: every caller builds its own scheme.
package scheme

import (
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// MetaGroupVersion is meta.k8s.io/v1, home of Table and PartialObjectMetadata.
var MetaGroupVersion = schema.GroupVersion{Group: "meta.k8s.io", Version: "v1"}

// New returns a scheme holding every built-in API group of k8s.io/api, the
// meta.k8s.io types and the unversioned Status and options.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		// Static registrations of k8s.io/api: only a programming error fails here.
		panic(fmt.Sprintf("podkit: building scheme: %v", err))
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	s.AddKnownTypes(MetaGroupVersion,
		&metav1.Table{}, &metav1.TableOptions{},
		&metav1.PartialObjectMetadata{}, &metav1.PartialObjectMetadataList{},
		&metav1.DeleteOptions{}, &metav1.ListOptions{}, &metav1.GetOptions{},
		&metav1.CreateOptions{}, &metav1.UpdateOptions{}, &metav1.PatchOptions{},
	)
	return s
}

// Codecs returns the serializers (JSON, YAML, protobuf, CBOR) for s.
func Codecs(s *runtime.Scheme) serializer.CodecFactory {
	return serializer.NewCodecFactory(s)
}

// StorageCodec is the codec the persistent stores use: protobuf, the format
// Kubernetes itself keeps in etcd. Each object is written in the first group
// version registered for its Go type, so decoding yields the same Go type back
// with no conversion. Decoded objects carry an empty TypeMeta, as objects
// inside the server do; encoding leaves the caller's object unchanged.
func StorageCodec(s *runtime.Scheme) runtime.Codec {
	return storageCodec{scheme: s, pb: protobuf.NewSerializer(s, s)}
}

type storageCodec struct {
	scheme *runtime.Scheme
	pb     *protobuf.Serializer
}

func (c storageCodec) Encode(obj runtime.Object, w io.Writer) error {
	gvks, _, err := c.scheme.ObjectKinds(obj)
	if err != nil {
		return fmt.Errorf("storage codec: %w", err)
	}
	kind := obj.GetObjectKind()
	old := kind.GroupVersionKind()
	kind.SetGroupVersionKind(gvks[0])
	defer kind.SetGroupVersionKind(old)
	return c.pb.Encode(obj, w)
}

func (c storageCodec) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	obj, gvk, err := c.pb.Decode(data, defaults, into)
	if err != nil {
		return nil, nil, fmt.Errorf("storage codec: %w", err)
	}
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return obj, gvk, nil
}

func (storageCodec) Identifier() runtime.Identifier { return "podkit-storage-protobuf" }
