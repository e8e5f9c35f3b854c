package printers

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/podkit/podkit/apiserver/scheme"
)

// tableCodecs returns the scheme, the plain JSON serializer row objects are
// written with, and the encoder that writes a Table as meta.k8s.io/v1.
func tableCodecs(t *testing.T) (*runtime.Scheme, runtime.Serializer, runtime.Encoder) {
	t.Helper()
	s := scheme.New()
	codecs := scheme.Codecs(s)
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	require.True(t, ok)
	return s, info.Serializer, codecs.EncoderForVersion(info.Serializer, scheme.MetaGroupVersion)
}

// encodeTable converts the pod list and encodes it the way the REST layer
// is expected to: rows first, then the Table as meta.k8s.io/v1 JSON.
func encodeTable(t *testing.T, include metav1.IncludeObjectPolicy) []byte {
	t.Helper()
	_, rowSerializer, tableEncoder := tableCodecs(t)
	table, err := newTestPrinter(t).ConvertToTable(context.Background(), podList(), &metav1.TableOptions{IncludeObject: include})
	require.NoError(t, err)
	require.NoError(t, EncodeRowObjects(table, rowSerializer))
	var buf bytes.Buffer
	require.NoError(t, tableEncoder.Encode(table, &buf))
	return buf.Bytes()
}

func TestTableJSONCarriesPartialObjectMetadata(t *testing.T) {
	var doc struct {
		APIVersion        string `json:"apiVersion"`
		Kind              string `json:"kind"`
		Metadata          metav1.ListMeta
		ColumnDefinitions []metav1.TableColumnDefinition
		Rows              []struct {
			Cells  []any           `json:"cells"`
			Object json.RawMessage `json:"object"`
		}
	}
	require.NoError(t, json.Unmarshal(encodeTable(t, ""), &doc))
	assert.Equal(t, "meta.k8s.io/v1", doc.APIVersion)
	assert.Equal(t, "Table", doc.Kind)
	assert.Equal(t, "42", doc.Metadata.ResourceVersion)
	assert.Equal(t, "token", doc.Metadata.Continue)
	require.Len(t, doc.ColumnDefinitions, 9)
	require.Len(t, doc.Rows, 2)
	assert.Equal(t, []any{"a", "0/1", "Pending", "0", "60s", "<none>", "<none>", "<none>", "<none>"}, doc.Rows[0].Cells)

	var obj map[string]any
	require.NoError(t, json.Unmarshal(doc.Rows[1].Object, &obj))
	assert.Equal(t, "meta.k8s.io/v1", obj["apiVersion"])
	assert.Equal(t, "PartialObjectMetadata", obj["kind"])
	md := obj["metadata"].(map[string]any)
	assert.Equal(t, "b", md["name"])
	assert.Equal(t, "kube-system", md["namespace"])
	assert.Equal(t, "uid-b", md["uid"])
}

// kubectl decodes a Table response as unstructured, converts it to a
// metav1.Table and decodes every row's Raw on its own as unstructured: that
// needs apiVersion and kind inside each row object.
func TestTableDecodesLikeKubectl(t *testing.T) {
	for _, include := range []metav1.IncludeObjectPolicy{metav1.IncludeMetadata, metav1.IncludeObject} {
		t.Run(string(include), func(t *testing.T) {
			decoded, _, err := unstructured.UnstructuredJSONScheme.Decode(encodeTable(t, include), nil, nil)
			require.NoError(t, err)
			u := decoded.(*unstructured.Unstructured)
			assert.Equal(t, schema.GroupVersionKind{Group: "meta.k8s.io", Version: "v1", Kind: "Table"}, u.GroupVersionKind())

			table := &metav1.Table{}
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, table))
			require.Len(t, table.Rows, 2)
			for i, row := range table.Rows {
				require.NotNil(t, row.Object.Raw)
				obj, err := runtime.Decode(unstructured.UnstructuredJSONScheme, row.Object.Raw)
				require.NoError(t, err, "row %d", i)
				item := obj.(*unstructured.Unstructured)
				assert.Equal(t, podList().Items[i].Name, item.GetName())
				assert.Equal(t, podList().Items[i].Namespace, item.GetNamespace(), "kubectl -A reads the namespace here")
				if include == metav1.IncludeObject {
					assert.Equal(t, "Pod", item.GetKind())
					assert.Equal(t, "v1", item.GetAPIVersion())
				} else {
					assert.Equal(t, "PartialObjectMetadata", item.GetKind())
					assert.Equal(t, "meta.k8s.io/v1", item.GetAPIVersion())
				}
			}
		})
	}
}

// client-go asks for a Table with the Accept header kubectl sends and gets a
// typed *metav1.Table whose row objects decode with the same scheme.
func TestClientGoReadsTable(t *testing.T) {
	s, _, _ := tableCodecs(t)
	body := encodeTable(t, metav1.IncludeMetadata)
	var accept string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		accept = r.Header.Get("Accept")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)

	codecs := scheme.Codecs(s)
	client, err := rest.RESTClientFor(&rest.Config{
		Host:    srv.URL,
		APIPath: "/api",
		ContentConfig: rest.ContentConfig{
			GroupVersion:         &schema.GroupVersion{Version: "v1"},
			NegotiatedSerializer: codecs.WithoutConversion(),
		},
	})
	require.NoError(t, err)
	const tableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
	obj, err := client.Get().Resource("pods").Namespace("default").SetHeader("Accept", tableAccept).Do(context.Background()).Get()
	require.NoError(t, err)
	assert.Equal(t, tableAccept, accept)

	table, ok := obj.(*metav1.Table)
	require.True(t, ok, "got %T", obj)
	require.Len(t, table.Rows, 2)
	assert.Equal(t, "Pending", table.Rows[0].Cells[2])
	row, err := runtime.Decode(codecs.UniversalDeserializer(), table.Rows[0].Object.Raw)
	require.NoError(t, err)
	partial, ok := row.(*metav1.PartialObjectMetadata)
	require.True(t, ok, "got %T", row)
	assert.Equal(t, "a", partial.Name)
	assert.Equal(t, map[string]string{"app": "a"}, partial.Labels)
}

// Encoding the rows first changes nothing on the JSON wire: RawExtension
// falls back to marshalling Object, which carries its TypeMeta. It makes the
// row bytes the server serializer's and lets forms that carry only Raw (the
// protobuf form of RawExtension) keep them.
func TestEncodedRowsMatchPlainJSON(t *testing.T) {
	_, rowSerializer, tableEncoder := tableCodecs(t)
	p := newTestPrinter(t)
	for _, include := range []metav1.IncludeObjectPolicy{metav1.IncludeNone, metav1.IncludeMetadata, metav1.IncludeObject} {
		table, err := p.ConvertToTable(context.Background(), podList(), &metav1.TableOptions{IncludeObject: include})
		require.NoError(t, err)
		var plain, encoded bytes.Buffer
		require.NoError(t, tableEncoder.Encode(table, &plain))
		require.NoError(t, EncodeRowObjects(table, rowSerializer))
		require.NoError(t, tableEncoder.Encode(table, &encoded))
		assert.JSONEq(t, plain.String(), encoded.String(), string(include))
	}

	var pb metav1.TableRow
	pb.Object.Object = &corev1.Pod{}
	data, err := pb.Object.Marshal()
	require.NoError(t, err)
	assert.Empty(t, data, "the protobuf form of an unencoded row object is empty")
}

func TestEncodeRowObjects(t *testing.T) {
	_, rowSerializer, _ := tableCodecs(t)
	table := &metav1.Table{Rows: []metav1.TableRow{
		{Object: runtime.RawExtension{}},
		{Object: runtime.RawExtension{Raw: []byte(`{"kept":true}`), Object: &corev1.Pod{}}},
		{Object: runtime.RawExtension{Object: &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"},
			ObjectMeta: metav1.ObjectMeta{Name: "x"},
		}}},
	}}
	require.NoError(t, EncodeRowObjects(table, rowSerializer))
	assert.Nil(t, table.Rows[0].Object.Raw, "rows without objects stay empty")
	assert.JSONEq(t, `{"kept":true}`, string(table.Rows[1].Object.Raw), "existing Raw is kept")
	assert.JSONEq(t, `{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadata","metadata":{"name":"x"}}`, string(table.Rows[2].Object.Raw))
	assert.NotEqual(t, byte('\n'), table.Rows[2].Object.Raw[len(table.Rows[2].Object.Raw)-1])

	assert.NoError(t, EncodeRowObjects(nil, rowSerializer))
	assert.ErrorIs(t, EncodeRowObjects(table, nil), ErrInvalidOption)

	failing := &metav1.Table{Rows: []metav1.TableRow{{Object: runtime.RawExtension{Object: &corev1.Pod{}}}}}
	err := EncodeRowObjects(failing, scheme.Codecs(scheme.New()).EncoderForVersion(rowSerializer, schema.GroupVersion{Group: "nowhere", Version: "v9"}))
	assert.ErrorContains(t, err, "row 0")
}
