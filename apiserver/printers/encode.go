package printers

import (
	"bytes"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// EncodeRowObjects serialises every row's Object into its Raw bytes with
// encoder, leaving rows that already have Raw, or carry no object, as they
// are. The REST layer calls it before writing a Table so the row bytes come
// from the server's own serializer: the JSON and CBOR forms of
// runtime.RawExtension fall back to marshalling Object with the standard
// library when Raw is empty, and the protobuf form carries Raw only. kubectl
// decodes each row's Raw on its own, so it must hold the apiVersion and kind
// ConvertToTable gave the row objects: use a serializer that writes objects as
// they are (the JSON serializer of scheme.Codecs), not one that converts them
// to a single group version.
func EncodeRowObjects(table *metav1.Table, encoder runtime.Encoder) error {
	if table == nil {
		return nil
	}
	if encoder == nil {
		return fmt.Errorf("%w: nil encoder", ErrInvalidOption)
	}
	for i := range table.Rows {
		ext := &table.Rows[i].Object
		if ext.Object == nil || ext.Raw != nil {
			continue
		}
		var buf bytes.Buffer
		if err := encoder.Encode(ext.Object, &buf); err != nil {
			return fmt.Errorf("printers: encoding the object of row %d: %w", i, err)
		}
		raw := buf.Bytes()
		if len(raw) > 0 && raw[0] == '{' {
			raw = bytes.TrimRight(raw, "\n") // JSON encoders end with a newline
		}
		ext.Raw = raw
	}
	return nil
}
